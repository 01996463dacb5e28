"""Run the same tasks through several frameworks, each into its records file.

``gamebridge eval`` calls :func:`run_into_file`; ``gamebridge compare`` and
``gamebridge demo`` call ``rollouts.cli.comparison.compare_games``, which runs
:func:`run_compare` per game, then summarises, checks identity and writes the report
(the analysis wing, above this running one). Every framework is labelled with its
mode (``text``: replies with ``<move>`` tags; ``tools``: ``make_move`` tool calls)
and its records come with the core driver's in the same mode, the identity reference
(``core [tools]`` is run here as the tool-mode reference).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rollouts.drivers.base import RunRequest
from rollouts.record import RolloutRecord, trajectory_mode


def _out(text: str = "") -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(f"gamebridge: {text}", file=sys.stderr, flush=True)


@contextmanager
def endpoint(base_url: str | None, policy: str, seed: int) -> Iterator[str]:
    """``base_url`` if given, else an embedded policy server for the block."""
    if base_url:
        yield base_url
        return
    from rollouts.model.policy_server import serve_in_thread

    _out(f"starting the embedded policy server ({policy}, seed {seed})")
    with serve_in_thread(policy, seed) as url:
        yield url


def make_tasks(
    game: str,
    n: int,
    seed: int,
    lo: float,
    hi: float,
    *,
    opponent: str | None = None,
    depth: int | None = None,
    seats: str | None = None,
) -> list[Any]:
    """``n`` tasks of ``game`` in four difficulty groups; ``opponent``/``depth``
    (``None``: the task defaults, as ``core.tasks.make_tasks`` chooses them);
    ``seats`` (``Task.seats``), the model's seat then the first outside one."""
    from core.tasks import OUTSIDE
    from core.tasks import make_tasks as make

    overrides: dict[str, Any] = {}
    if seats is not None:
        roles = [r.strip() for r in seats.split(",")]
        overrides["seats"] = seats
        overrides["model_player"] = roles.index(OUTSIDE) if OUTSIDE in roles else 0
    if opponent is not None:
        overrides["opponent"] = opponent
    if depth is not None:
        overrides["depth"] = depth
    return make(
        n=n,
        seed=seed,
        game=game,
        min_random_move_prob=lo,
        max_random_move_prob=hi,
        num_groups=4,
        **overrides,
    )


def choose_frameworks(names: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """``(frameworks to run, {skipped framework: why})``: ``names`` as given, or
    (``None``) every registered driver that can run here."""
    from rollouts.drivers import DRIVERS, driver_status

    if names:
        return list(names), {}
    chosen, skipped = [], {}
    for name in DRIVERS:
        ok, why = driver_status(name)
        if ok:
            chosen.append(name)
        else:
            skipped[name] = why.splitlines()[0] if why else "not available here"
    return chosen, skipped


@dataclass
class FileRun:
    """One framework's run into one records file."""

    records: list[RolloutRecord]
    """Every task's record by index: earlier finished ones (resume) + this run's."""
    elapsed: float
    ran: int
    stopped: bool


class _Bar:
    """A tqdm bar shown from the start (before a framework's servers are up), fed
    by the records as they finish; nothing when tqdm is missing or not wanted."""

    def __init__(self, show: bool, total: int, done: int, desc: str) -> None:
        self.bar: Any = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:  # progress bars are a nicety, not a requirement
                return
            self.bar = tqdm(total=total, initial=done, desc=desc, unit="ep")
            self.bar.set_postfix_str("starting", refresh=True)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str("", refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_into_file(
    driver: Any,
    tasks: Sequence[Any],
    out: Path,
    header: dict[str, Any],
    request: RunRequest,
    *,
    resume: bool,
) -> FileRun:
    """Run the tasks the file lacks as ``request`` says (on its ``executor``:
    ``rollouts.drivers.executors``), appending each record as it finishes.

    Raises ``rollouts.evaluation.records.RecordFileError`` when ``resume`` finds
    another run's file."""
    from rollouts.evaluation.records import RecordWriter, check_unlocked, read_run

    check_unlocked(out)
    done: dict[int, RolloutRecord] = {}
    if resume and out.exists() and out.stat().st_size:
        run = read_run(out)
        check_header(out, run.header, header)
        done = run.finished()
    elif not resume and out.exists() and out.stat().st_size:
        keep = out.with_name(out.name + ".prev")
        out.replace(keep)
        _err(f"{out} existed: kept as {keep}")
    todo = [i for i in range(len(tasks)) if i not in done]
    new: dict[int, RolloutRecord] = {}

    appending = resume and out.exists() and bool(out.stat().st_size)
    stop = request.stop or threading.Event()
    bar = _Bar(request.progress and bool(todo), len(tasks), len(done), driver.name or "rollouts")
    with RecordWriter(out, header, resume=appending) as writer:

        def on_record(i: int, rec: RolloutRecord) -> None:
            rec.index = todo[i]
            writer.write(rec)
            new[rec.index] = rec
            bar.update()
            if rec.error is not None:
                from rollouts.record import failure_line

                _err(f"{driver.name}: task #{rec.index} failed: {failure_line(rec.error)}")

        t0 = time.perf_counter()
        try:
            if todo:
                from rollouts.drivers.executors import run_tasks

                run_tasks(
                    driver,
                    [tasks[i] for i in todo],
                    request,
                    progress=False,  # the bar above, shown before the first episode
                    on_record=on_record,
                    stop=stop,
                )
        finally:
            bar.close()
        elapsed = time.perf_counter() - t0
    merged = {**done, **new}
    return FileRun([merged[i] for i in sorted(merged)], elapsed, len(new), stop.is_set())


def check_header(out: Path, found: dict[str, Any] | None, want: dict[str, Any]) -> None:
    """Refuse (``RecordFileError``) to resume a file another run made."""
    from rollouts.evaluation.records import RecordFileError

    if found is None:
        raise RecordFileError(f"cannot resume {out}: it has no gamebridge run header")
    for key, what in (
        ("framework", "framework"),
        ("policy", "policy"),
        ("tasks_sha256", "tasks"),
    ):
        if found.get(key) != want.get(key):
            detail = (
                f"{found.get('tasks')} tasks, not {want.get('tasks')} of these"
                if key == "tasks_sha256"
                else f"{found.get(key)!r}, not {want.get(key)!r}"
            )
            raise RecordFileError(f"cannot resume {out}: it was made with other {what} ({detail})")


@dataclass
class GameComparison:
    """One game's run through the frameworks (what the analysis reads)."""

    records: dict[str, list[RolloutRecord]]
    failures: dict[str, str]
    """A framework that raised, or whose tasks failed -> its error."""
    modes: dict[str, str] = field(default_factory=dict)
    """Framework -> ``text`` or ``tools`` (how its model replied)."""
    references: dict[str, list[RolloutRecord]] = field(default_factory=dict)
    """Mode -> the core driver's records in that mode (the identity reference)."""
    elapsed: dict[str, float] = field(default_factory=dict)
    """Framework (and :data:`REFERENCE_TOOLS` when it ran) -> the run's seconds."""


def run_compare(
    game: str,
    tasks: Sequence[Any],
    frameworks: Sequence[str],
    request: RunRequest,
    *,
    out_dir: Path,
    resume: bool = False,
    policy_name: str = "",
) -> GameComparison:
    """Run ``tasks`` through each framework (each into ``out_dir/GAME-FW.jsonl`` as
    episodes finish; ``resume`` completes those files), and the core driver in each
    mode the frameworks replied in (text or tool calls), on threads: the identity
    reference (``rollouts.evaluation.summary.check_identity`` compares them).
    ``request``: the run (its ``executor``/``ray_address``: where the frameworks'
    episodes run, ``rollouts.drivers.executors``)."""
    from rollouts.drivers import get_driver
    from rollouts.evaluation.records import RecordFileError, run_header
    from rollouts.record import describe_failure, failure_line

    stop = request.stop or threading.Event()
    request = replace(request, stop=stop)
    result = GameComparison({}, {})
    for name in frameworks:
        if stop.is_set():
            break
        out = out_dir / f"{game}-{name}.jsonl"
        try:
            driver = get_driver(name)
            header = run_header(name, tasks, policy=policy_name)
            header.update(game=game)
            run = run_into_file(driver, tasks, out, header, request, resume=resume)
        except RecordFileError:
            raise
        except Exception as e:  # one framework's failure is reported, not fatal
            result.failures[name] = failure_line(describe_failure(e))
            _out(f"  {name:16s} FAILED: {result.failures[name][:300]}")
            continue
        result.records[name] = run.records
        result.elapsed[name] = run.elapsed
        ok = [r for r in run.records if r.error is None]
        mode = trajectory_mode(ok[0].trajectory) if ok else "?"
        result.modes[name] = mode
        failed = [r for r in run.records if r.error is not None]
        if failed:
            result.failures[name] = (
                f"{len(failed)} of {len(tasks)} tasks failed; first: "
                f"task #{failed[0].index}: {failure_line(failed[0].error or {})}"
            )
        _out(
            f"  {label(name, mode):16s} {len(run.records)} episodes ({run.ran} run now) "
            f"in {run.elapsed:.2f}s"
        )
    run_references(result, tasks, request)
    return result


def run_references(result: GameComparison, tasks: Sequence[Any], request: RunRequest) -> None:
    """The identity references of ``result``: the core driver's records in each mode
    the frameworks replied in (the ``core`` framework's own when it ran in text mode
    without a failure), run here on threads."""
    from rollouts.drivers.core import CoreDriver

    modes = {
        trajectory_mode(r.trajectory)
        for recs in result.records.values()
        for r in recs
        if r.error is None
    }
    for mode in sorted(modes):
        core = result.records.get("core")
        if mode == "text" and core is not None and not any(r.error for r in core):
            result.references[mode] = core
            continue
        t0 = time.perf_counter()
        r = request  # the endpoint only: on threads, no hooks, the client's own call policy
        refs = CoreDriver(use_tools=mode == "tools").run(
            tasks, base_url=r.base_url, model=r.model, api_key=r.api_key, concurrency=r.concurrency
        )
        result.references[mode] = refs
        if mode == "tools":
            result.elapsed[REFERENCE_TOOLS] = time.perf_counter() - t0
            result.modes[REFERENCE_TOOLS] = "tools"
            _out(f"  {REFERENCE_TOOLS:16s} {len(refs)} episodes (the tool-mode reference)")


REFERENCE_TOOLS = "core [tools]"
"""The label of the tool-mode reference run (the core driver offering ``make_move``)."""


def label(name: str, mode: str) -> str:
    """``name [mode]``: how the comparison names a framework."""
    return name if name == REFERENCE_TOOLS else f"{name} [{mode}]"


@dataclass
class CompareSettings:
    """What ``compare`` and ``demo`` run: the run request plus compare's own fields (the
    tasks, the model side's policy, resuming)."""

    n: int
    seed: int
    policy: str
    request: RunRequest = field(
        default_factory=lambda: RunRequest("", "scripted", stop=threading.Event())
    )
    """The run (its ``base_url`` empty: the embedded policy server playing ``policy``)."""
    min_rmp: float = 0.0
    max_rmp: float = 1.0
    resume: bool = False
    policy_name: str = ""
    opponent: str | None = None
    """The built-in opponent of every task (``None``: the game's default)."""
    depth: int | None = None
    """Its search depth or MCTS level (``None``: the task default, 2)."""
