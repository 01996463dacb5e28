"""The ``gamebridge`` command line.

Subcommands: ``serve-policy``, ``eval``, ``compare``, ``export``, ``demo``,
plus any listed in :data:`PLUGINS`. Adding one is one line there:
``"train": "rollouts.training.cli:add_parser"``, where ``add_parser(parser)`` adds
its arguments to the given ``argparse`` parser and calls
``parser.set_defaults(func=run)`` with ``run(args) -> int``. Heavy imports
belong inside ``run``, so ``gamebridge --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rollouts.drivers.base import RolloutRecord

if TYPE_CHECKING:
    from rollouts.evaluation.summary import Divergence

PLUGINS: dict[str, str] = {
    # "name": "module:add_parser"  (one line per extra subcommand)
    "train": "rollouts.training.cli:add_parser",
    "play": "rollouts.play:add_parser",
}

DEFAULT_EVAL_POLICY = "minimax:2"
DEFAULT_COMPARE_POLICY = "noisy:0.3/minimax:1"
"""Compare and demo use a noisy player so malformed and illegal replies are
exercised too (the conformance suite's policy)."""
DEMO_GAMES = ("tictactoe", "othello")
DEMO_POLICY = "noisy:0.1/minimax:1"
"""Less noise than compare's default, so that Othello games are played out
rather than forfeited after four bad replies."""


GAME_HELP = "a game of core.list_games(), or openspiel:NAME (e.g. openspiel:hex(board_size=7))"


def _game(text: str) -> str:
    """``--game``: a name ``make_game`` can make (else exit 2 with one line)."""
    from core.games import game_arg

    return game_arg(text)


def _games(text: str) -> list[str]:
    """``--games``: comma-separated names (commas inside brackets belong to an
    OpenSpiel name's parameters), each checked like ``--game``."""
    names, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += ch
    names.append(current)
    return [_game(n.strip()) for n in names if n.strip()]


def _out(text: str = "") -> None:
    print(text, flush=True)


@contextlib.contextmanager
def _endpoint(base_url: str | None, policy: str, seed: int) -> Iterator[str]:
    """``base_url`` if given, else an embedded policy server for the block."""
    if base_url:
        yield base_url
        return
    from rollouts.model.policy_server import serve_in_thread

    with serve_in_thread(policy, seed) as url:
        yield url


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _err(text: str) -> None:
    print(f"gamebridge: {text}", file=sys.stderr, flush=True)


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (how ``timeout``, Slurm and Kubernetes stop a job): stop now."""


class Interrupts:
    """Ctrl-C and SIGTERM for a run. First Ctrl-C: :attr:`stop` is set (no new
    episodes; the running ones finish and are written). Second Ctrl-C, or SIGTERM:
    ``KeyboardInterrupt`` now (every line already written stays whole)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._old: dict[int, Any] = {}

    def _sigint(self, signum: int, frame: Any) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()
        _err(
            "interrupted: no new episodes; the running ones finish and are written (Ctrl-C again to stop now)"
        )

    def _sigterm(self, signum: int, frame: Any) -> None:
        self.stop.set()
        raise Terminated

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._old[signal.SIGINT] = signal.signal(signal.SIGINT, self._sigint)
            self._old[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _unique_dir(stem: str) -> Path:
    from rollouts.evaluation.records import unique_path

    return unique_path("runs", stem, suffix="")


def _call_policy(args: argparse.Namespace) -> Any:
    from rollouts.model.client import CallPolicy

    return CallPolicy(
        timeout=args.model_timeout, retries=args.model_retries, backoff=args.model_backoff
    )


def _policy_name(args: argparse.Namespace) -> str:
    """What the records' header names as the model side (``--resume`` checks it): the
    model, for an endpoint (whose URL may change between runs), or the embedded
    server's scripted policy."""
    return f"model:{args.model}" if args.base_url else f"scripted:{args.policy}"


def _resume_command(args: argparse.Namespace, out: Path) -> str:
    argv = list(getattr(args, "argv", None) or [])
    cleaned: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--out":
            skip = True
            continue
        if a.startswith("--out=") or a == "--resume":
            continue
        cleaned.append(a)
    return shlex.join(["gamebridge", *cleaned, "--resume", "--out", str(out)])


@dataclass
class FileRun:
    """One framework's run into one records file."""

    records: list[RolloutRecord]
    """Every task's record by index: earlier finished ones (resume) + this run's."""
    elapsed: float
    ran: int
    stopped: bool


def run_into_file(
    driver: Any,
    tasks: Sequence[Any],
    out: Path,
    header: dict[str, Any],
    *,
    resume: bool,
    stop: threading.Event,
    base_url: str,
    model: str,
    api_key: str | None,
    concurrency: int,
    progress: bool,
    executor: str = "thread",
    ray_address: str | None = None,
) -> FileRun:
    """Run the tasks the file lacks on ``executor`` (``rollouts.drivers.executors``),
    appending each record as it finishes.

    Raises :class:`UsageError` when ``resume`` finds another run's file."""
    from rollouts.evaluation.records import RecordWriter, check_unlocked, read_run

    check_unlocked(out)
    done: dict[int, RolloutRecord] = {}
    if resume and out.exists() and out.stat().st_size:
        run = read_run(out)
        _check_header(out, run.header, header)
        done = run.finished()
    elif not resume and out.exists() and out.stat().st_size:
        keep = out.with_name(out.name + ".prev")
        out.replace(keep)
        _err(f"{out} existed: kept as {keep}")
    todo = [i for i in range(len(tasks)) if i not in done]
    new: dict[int, RolloutRecord] = {}

    appending = resume and out.exists() and bool(out.stat().st_size)
    with RecordWriter(out, header, resume=appending) as writer:

        def on_record(i: int, rec: RolloutRecord) -> None:
            rec.index = todo[i]
            writer.write(rec)
            new[rec.index] = rec
            if rec.error is not None:
                from rollouts.drivers.base import failure_line

                _err(f"{driver.name}: task #{rec.index} failed: {failure_line(rec.error)}")

        t0 = time.perf_counter()
        if todo:
            from rollouts.drivers.executors import run_tasks

            run_tasks(
                driver,
                [tasks[i] for i in todo],
                base_url=base_url,
                model=model,
                api_key=api_key,
                concurrency=concurrency,
                progress=progress,
                executor=executor,
                ray_address=ray_address,
                on_record=on_record,
                stop=stop,
            )
        elapsed = time.perf_counter() - t0
    merged = {**done, **new}
    return FileRun([merged[i] for i in sorted(merged)], elapsed, len(new), stop.is_set())


def _check_header(out: Path, found: dict[str, Any] | None, want: dict[str, Any]) -> None:
    if found is None:
        raise UsageError(f"cannot resume {out}: it has no gamebridge run header")
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
            raise UsageError(f"cannot resume {out}: it was made with other {what} ({detail})")


# --- serve-policy ---------------------------------------------------------------------


def _add_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        default=DEFAULT_EVAL_POLICY,
        help="random | minimax:D | noisy:P[/minimax:D] (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model-name", default=None, help="the id /v1/models reports")
    p.add_argument(
        "--model-path",
        default=None,
        help="serve a trained checkpoint (transformers backend) instead of the scripted player",
    )
    p.add_argument(
        "--context",
        choices=("observation", "chat"),
        default="observation",
        help="model backend: the last observation alone (recipe models) or the whole chat",
    )
    p.add_argument(
        "--temperature", type=float, default=0.0, help="model backend: 0 is greedy (default)"
    )
    p.set_defaults(func=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    from adapters._lifeline import watch
    from rollouts.model.policy_server import serve

    watch()  # started by rollouts.model.servers (a test, make faults): stop when the parent ends

    backend = None
    if args.model_path:
        from rollouts.model.transformers_backend import ModelPathError, TransformersModel

        try:
            backend = TransformersModel(
                args.model_path,
                model_name=args.model_name,
                context=args.context,
                temperature=args.temperature,
            )
        except (ModelPathError, ValueError) as e:
            print(f"gamebridge serve-policy: {e}", file=sys.stderr)
            return 2
    serve(
        args.policy,
        args.seed,
        host=args.host,
        port=args.port,
        model_name=args.model_name or "scripted",
        backend=backend,
    )
    return 0


# --- eval -------------------------------------------------------------------------------


def _add_common(p: argparse.ArgumentParser, policy_default: str) -> None:
    p.add_argument("-n", type=int, default=16, help="number of tasks (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="task and policy seed")
    p.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible endpoint; default: start the embedded policy server",
    )
    p.add_argument("--model", default="scripted")
    p.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument(
        "--policy",
        default=policy_default,
        help="scripted policy of the embedded server (default %(default)s)",
    )
    p.add_argument("--min-rmp", type=float, default=0.0, help="min opponent random_move_prob")
    p.add_argument("--max-rmp", type=float, default=1.0, help="max opponent random_move_prob")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.add_argument(
        "--executor",
        default="thread",
        choices=("thread", "ray"),
        help="thread: a pool in this process; ray: one Ray task per episode (default %(default)s)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="join this Ray cluster (auto, ray://HOST:10001); default: a local one of --concurrency CPUs",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="complete the run in --out: refused unless it was made with the same tasks, "
        "policy and framework; runs only the missing (and failed) tasks",
    )
    p.add_argument(
        "--model-timeout",
        type=float,
        default=120.0,
        help="seconds per model call attempt, every framework (default %(default)s)",
    )
    p.add_argument(
        "--model-retries",
        type=int,
        default=4,
        help="retries of a model call after a connection error, timeout, 408/425/429/5xx or "
        "malformed body (default %(default)s)",
    )
    p.add_argument(
        "--model-backoff",
        type=float,
        default=0.5,
        help="seconds before the first retry, doubling each time, at most 8 s (default "
        "%(default)s: waits 0.5, 1, 2, 4 s; a call then fails for good after at most "
        "5 x timeout + 7.5 s, and its task gets a failure record)",
    )


def _executor_error(args: argparse.Namespace) -> str | None:
    """Why ``--executor``/``--ray-address`` cannot run here, or ``None``."""
    if args.executor != "ray":
        return "--ray-address needs --executor ray" if args.ray_address else None
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return "--executor ray needs Ray; install with: pip install -e '.[ray]'"
    return None


def _make_tasks(game: str, n: int, seed: int, lo: float, hi: float) -> list[Any]:
    from core.tasks import make_tasks

    return make_tasks(
        n=n, seed=seed, game=game, min_random_move_prob=lo, max_random_move_prob=hi, num_groups=4
    )


def _add_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--framework", default="core", help="driver name (see rollouts.drivers)")
    p.add_argument("--game", default="tictactoe", type=_game, help=GAME_HELP)
    _add_common(p, DEFAULT_EVAL_POLICY)
    p.add_argument(
        "--out",
        default=None,
        help="JSONL path, written as episodes finish (default runs/eval-FW-GAME-TIME-PID-N.jsonl, "
        "named at the start)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON too")
    p.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from rollouts.drivers import get_driver
    from rollouts.evaluation.records import RecordFileError, run_header, unique_path
    from rollouts.evaluation.summary import format_summary, summarize

    problem = _executor_error(args)
    if problem:
        raise UsageError(problem)
    if args.resume and not args.out:
        raise UsageError("--resume needs --out FILE (the records file to complete)")
    try:
        driver = get_driver(args.framework)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    driver.call_policy = _call_policy(args)
    tasks = _make_tasks(args.game, args.n, args.seed, args.min_rmp, args.max_rmp)
    header = run_header(args.framework, tasks, policy=_policy_name(args))
    header.update(game=args.game, seed=args.seed, base_url=args.base_url)
    out = Path(args.out) if args.out else unique_path("runs", f"eval-{args.framework}-{args.game}")
    _out(f"writing records to {out} as episodes finish")
    try:
        with Interrupts() as interrupts, _endpoint(args.base_url, args.policy, args.seed) as url:
            run = run_into_file(
                driver,
                tasks,
                out,
                header,
                resume=args.resume,
                stop=interrupts.stop,
                base_url=url,
                model=args.model,
                api_key=args.api_key,
                concurrency=args.concurrency,
                progress=args.progress,
                executor=args.executor,
                ray_address=args.ray_address,
            )
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    except UsageError:
        raise
    except KeyboardInterrupt as e:
        _err(
            f"{'terminated' if isinstance(e, Terminated) else 'stopped'}: every finished episode is in {out}"
        )
        _err(f"resume with: {_resume_command(args, out)}")
        args.hard_exit = 143 if isinstance(e, Terminated) else 130
        return args.hard_exit
    except Exception as e:  # the framework could not run at all
        from rollouts.drivers.base import describe_failure, failure_line

        _err(f"{args.framework}: {failure_line(describe_failure(e))}")
        _err(f"records so far: {out}; resume with: {_resume_command(args, out)}")
        return 1
    records = run.records
    summary = summarize(records, elapsed=run.elapsed)
    _out(
        format_summary(
            summary,
            title=f"{args.framework} / {args.game}: {len(records)} of {len(tasks)} tasks "
            f"({run.ran} run now) in {run.elapsed:.2f}s",
        )
    )
    if args.json:
        _out(json.dumps(summary.to_dict(), indent=1))
    _out(f"records: {out}")
    if run.stopped or len(records) < len(tasks):
        _err(f"stopped before the end: {len(tasks) - len(records)} tasks not run")
        _err(f"resume with: {_resume_command(args, out)}")
        return 130
    if summary.failed:
        _err(
            f"{summary.failed} of {len(tasks)} tasks failed; resume with: "
            f"{_resume_command(args, out)}"
        )
        return 1
    return 0


# --- compare ----------------------------------------------------------------------------


def run_compare(
    game: str,
    tasks: Sequence[Any],
    frameworks: Sequence[str],
    *,
    base_url: str,
    model: str,
    api_key: str | None,
    concurrency: int,
    progress: bool,
    out_dir: Path,
    resume: bool = False,
    stop: threading.Event | None = None,
    policy_name: str = "",
    call_policy: Any = None,
    executor: str = "thread",
    ray_address: str | None = None,
) -> tuple[dict[str, list[RolloutRecord]], dict[str, Any], list[Divergence], dict[str, str]]:
    """Run ``tasks`` through each framework (each into ``out_dir/GAME-FW.jsonl`` as
    episodes finish; ``resume`` completes those files); check identity against the
    core driver in the matching mode (text or tool calls), which runs here on threads.
    ``executor``/``ray_address``: where the frameworks' episodes run (``rollouts.drivers.executors``).

    Returns (records by framework, summaries, divergences, failures) where
    ``failures`` maps a framework that raised, or whose tasks failed, to its error.
    """
    from rollouts.drivers import get_driver
    from rollouts.drivers.base import describe_failure, failure_line
    from rollouts.drivers.core import CoreDriver
    from rollouts.evaluation.records import run_header
    from rollouts.evaluation.summary import check_identity, summarize, trajectory_mode

    stop = stop or threading.Event()
    records: dict[str, list[RolloutRecord]] = {}
    summaries: dict[str, Any] = {}
    failures: dict[str, str] = {}
    for name in frameworks:
        if stop.is_set():
            break
        out = out_dir / f"{game}-{name}.jsonl"
        try:
            driver = get_driver(name)
            if call_policy is not None:
                driver.call_policy = call_policy
            header = run_header(name, tasks, policy=policy_name)
            header.update(game=game)
            run = run_into_file(
                driver,
                tasks,
                out,
                header,
                resume=resume,
                stop=stop,
                base_url=base_url,
                model=model,
                api_key=api_key,
                concurrency=concurrency,
                progress=progress,
                executor=executor,
                ray_address=ray_address,
            )
        except UsageError:
            raise
        except Exception as e:  # one framework's failure is reported, not fatal
            failures[name] = failure_line(describe_failure(e))
            _out(f"  {name:10s} FAILED: {failures[name][:300]}")
            continue
        records[name] = run.records
        summaries[name] = summarize(run.records, elapsed=run.elapsed)
        failed = [r for r in run.records if r.error is not None]
        if failed:
            failures[name] = (
                f"{len(failed)} of {len(tasks)} tasks failed; first: "
                f"task #{failed[0].index}: {failure_line(failed[0].error or {})}"
            )
        _out(f"  {name:10s} {len(run.records)} episodes ({run.ran} run now) in {run.elapsed:.2f}s")
    references: dict[str, list[RolloutRecord]] = {}
    modes = {
        trajectory_mode(r.trajectory) for recs in records.values() for r in recs if r.error is None
    }
    for mode in sorted(modes):
        if mode == "text" and "core" in records and not any(r.error for r in records["core"]):
            references[mode] = records["core"]
            continue
        references[mode] = CoreDriver(use_tools=mode == "tools").run(
            tasks, base_url=base_url, model=model, api_key=api_key, concurrency=concurrency
        )
    divergences = check_identity(records, references) if records else []
    return records, summaries, divergences, failures


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("--game", default="tictactoe", type=_game, help=GAME_HELP)
    p.add_argument(
        "--frameworks",
        default=None,
        help="comma-separated driver names (default: every available driver)",
    )
    _add_common(p, DEFAULT_COMPARE_POLICY)
    p.add_argument("--out", default=None, help="output directory (default runs/compare-TIME-PID-N)")
    p.set_defaults(func=_run_compare)


def _frameworks(arg: str | None) -> list[str]:
    from rollouts.drivers import DRIVERS, available_drivers

    if arg:
        names = [x.strip() for x in arg.split(",") if x.strip()]
        unknown = [x for x in names if x not in DRIVERS]
        if unknown:
            raise SystemExit(f"unknown frameworks {unknown}; known: {', '.join(DRIVERS)}")
        return names
    return available_drivers()


def compare_games(
    games: Sequence[str],
    frameworks: Sequence[str],
    args: argparse.Namespace,
    out_dir: Path,
    *,
    title: str,
) -> tuple[int, list[str]]:
    """Compare over several games; write the report. Returns (exit code, verdict lines)."""
    from rollouts.evaluation.report import GameSection, write_report
    from rollouts.evaluation.summary import format_comparison

    sections = []
    problems: list[str] = []
    stop = getattr(args, "stop", None) or threading.Event()
    with _endpoint(args.base_url, args.policy, args.seed) as url:
        for game in games:
            tasks = _make_tasks(game, args.n, args.seed, args.min_rmp, args.max_rmp)
            _out(f"{game}: {len(tasks)} tasks x {len(frameworks)} frameworks")
            records, summaries, divergences, failures = run_compare(
                game,
                tasks,
                frameworks,
                base_url=url,
                model=args.model,
                api_key=args.api_key,
                concurrency=args.concurrency,
                progress=args.progress,
                out_dir=out_dir,
                executor=getattr(args, "executor", "thread"),
                ray_address=getattr(args, "ray_address", None),
                resume=getattr(args, "resume", False),
                stop=stop,
                policy_name=_policy_name(args),
                call_policy=_call_policy(args) if hasattr(args, "model_timeout") else None,
            )
            if stop.is_set():
                break
            if summaries:
                _out(format_comparison(summaries))
            for d in divergences:
                problems.append(f"DIVERGENT: {game}: {d.describe()}")
            for name, err in failures.items():
                problems.append(f"FAILED: {game}: {name}: {err[:300]}")
            finished = {k: [r for r in v if r.error is None] for k, v in records.items()}
            sections.append(GameSection(game, finished, summaries, divergences))
    ran = sorted({n for s in sections for n in s.records})
    if problems:
        verdict = (
            problems[0] if len(problems) == 1 else f"{problems[0]} (+{len(problems) - 1} more)"
        )
    else:
        verdict = f"IDENTICAL across {len(ran)} frameworks ({', '.join(ran)})"
    report = write_report(
        out_dir / "report.html",
        sections,
        title=title,
        verdict=verdict,
        verdict_ok=not problems,
        meta={
            "games": ", ".join(games),
            "tasks per game": args.n,
            "policy": args.policy if not args.base_url else args.model,
            "seed": args.seed,
        },
    )
    for line in problems:
        _out(line)
    _out(f"report: {report.resolve()}")
    _out(verdict)
    return (1 if problems else 0), [verdict, *problems]


def _run_compare(args: argparse.Namespace) -> int:
    from rollouts.evaluation.records import RecordFileError, unique_path

    problem = _executor_error(args)
    if problem:
        raise UsageError(problem)

    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR (the compare directory to complete)")
    frameworks = _frameworks(args.frameworks)
    out_dir = Path(args.out) if args.out else unique_path("runs", "compare", suffix="")
    try:
        with Interrupts() as interrupts:
            args.stop = interrupts.stop
            code, _ = compare_games(
                [args.game], frameworks, args, out_dir, title=f"gamebridge compare: {args.game}"
            )
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt as e:
        _err(
            f"{'terminated' if isinstance(e, Terminated) else 'stopped'}: every finished episode is in {out_dir}"
        )
        _err(f"resume with: {_resume_command(args, out_dir)}")
        args.hard_exit = 143 if isinstance(e, Terminated) else 130
        return args.hard_exit
    if args.stop.is_set():
        _err(f"stopped before the end; resume with: {_resume_command(args, out_dir)}")
        return 130
    return code


# --- export -----------------------------------------------------------------------------


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("--in", dest="inp", required=True, help="records JSONL (eval/compare output)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--keep", default="wins,draws", help="wins,draws,losses or all")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from rollouts.evaluation.export import export_dataset, parse_keep, read_records

    try:
        keep = parse_keep(args.keep)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    records = read_records(args.inp)
    out, rows, saved = export_dataset(records, args.out, keep)
    _out(f"kept {rows} of {len(records)} episodes ({', '.join(sorted(keep))})")
    _out(
        f"wrote {out / 'data.jsonl'}"
        + (f" and a datasets folder {out}" if saved else " (datasets not installed: JSONL only)")
    )
    return 0


# --- demo -------------------------------------------------------------------------------


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, default=8, help="tasks per game (default %(default)s)")
    p.add_argument("--games", default=",".join(DEMO_GAMES), type=_games, help=GAME_HELP)
    p.add_argument("--frameworks", default=None, help="default: every available driver")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default=DEMO_POLICY, help="default %(default)s")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--out", default=None, help="output directory (default runs/demo-TIME)")
    p.set_defaults(
        func=_run_demo,
        base_url=None,
        model="scripted",
        api_key=None,
        min_rmp=0.0,
        max_rmp=1.0,
        progress=False,
        executor="thread",
        ray_address=None,
    )


def _run_demo(args: argparse.Namespace) -> int:
    from rollouts.drivers import DRIVERS, driver_status

    if args.frameworks:
        frameworks = _frameworks(args.frameworks)
    else:
        frameworks = []
        for name in DRIVERS:
            ok, why = driver_status(name)
            if ok:
                frameworks.append(name)
            else:
                _out(f"skipping {name}: {why[:200]}")
    games: list[str] = args.games
    out_dir = Path(args.out) if args.out else _unique_dir("demo")
    _out(
        f"demo: {', '.join(games)} x {args.n} tasks over {', '.join(frameworks)} "
        f"(embedded policy server, {args.policy})"
    )
    code, _ = compare_games(games, frameworks, args, out_dir, title="gamebridge demo")
    return code


# --- main -------------------------------------------------------------------------------

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "serve-policy": ("run the scripted OpenAI-compatible policy server", _add_serve),
    "eval": ("run tasks through one framework and summarise", _add_eval),
    "compare": ("run the same tasks through several frameworks; check identity", _add_compare),
    "export": ("turn rollout records into an SFT chat dataset", _add_export),
    "demo": ("compare tictactoe and othello over every available framework", _add_demo),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gamebridge",
        description="gamebridge: board-game rollouts through every RL environment framework.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    for name, target in PLUGINS.items():
        module, _, attr = target.partition(":")
        try:
            add_parser = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            broken = sub.add_parser(name, help=f"(unavailable: {e})")
            broken.set_defaults(func=lambda _a, e=e: _unavailable(e))
            continue
        doc = (getattr(add_parser, "__doc__", None) or name).strip().splitlines()[0]
        add_parser(sub.add_parser(name, help=doc, description=doc))
    return parser


def _unavailable(e: Exception) -> int:
    print(f"gamebridge: this command is unavailable here: {e}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gamebridge`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    args.hard_exit = None
    try:
        code: int = args.func(args)
    except UsageError as e:
        _err(str(e))
        return 2
    if args.hard_exit is not None and threading.active_count() > 1 and _is_console():
        # Stopped now: episodes still running in worker threads are abandoned (their
        # servers are already stopped); do not wait for them at interpreter exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _is_console() -> bool:
    """True when running as the ``gamebridge`` script or ``python -m rollouts.cli``."""
    return Path(sys.argv[0]).name in ("gamebridge", "cli.py", "__main__.py")


if __name__ == "__main__":
    sys.exit(main())
