"""``make bench-scale``: one worker against two, measured in one run, written to
the generated section of docs/scaling.md.

* eval: Connect Four tasks (core driver, the scripted policy server in this
  process, a depth-4 minimax opponent inside each episode) on the thread
  executor with 1 and 2 threads, and on a local Ray cluster of 2 CPUs with
  1 and 2 episodes at a time (one Ray task per episode, asking for 2 CPUs or 1).
* TRL: ``rollouts.training.ddp`` GRPO steps (``rollout_func``, the tiny model, 4
  games per update, 16 steps: a ``train()`` of 7-11 s here; 4 took 3-7 s)
  under ``accelerate launch --cpu`` with 1 and 2 processes,
  the same global batch; the time is ``trainer.train()`` alone (imports and
  model loading left out), the games checked against core as in
  ``make train-ddp``.

How the figures hold still (a single cold-vs-warm pair once gave 3.37x on 2
cores, another run 1.44x):

* **Turns, not back-to-back windows.** In an eval round 1 and 2 workers take
  turns batch by batch (ABBA order: :func:`interleaved`) until each has played at
  least ``--window`` seconds (default 10) of whole batches of fresh tasks (seeds
  no other batch uses); a worker count's rate is its episodes over its own play
  time. An episode here is ~15 ms of CPU (the opponent's searches are mostly
  cached), so a rate is set by how much of a core the other jobs leave, which
  moved threefold between minutes: two 10-s windows run one after the other
  (the earlier method) compared two different machines, and two runs of it gave
  thread speed-ups of 1.27x and 0.68x.
* **Rounds, alternating order.** Even rounds start with 1 worker, odd rounds
  with 2. The speed-up of a round is its 2-worker rate over its 1-worker rate;
  the table gives the median over rounds and their range.
* **Same starting state.** Every round starts from a cleared opponent search
  cache (the thread executor's process-wide one; a fresh Ray cluster a round),
  then a warm-up batch per worker count (untimed: cluster and worker start-up,
  imports, the first searches), whose records must be identical everywhere.
* **TRL** cannot take turns (one ``accelerate launch`` a run): its rounds
  alternate the order and each ``train()`` is timed whole.
* **A ratio above the worker count is refused.** Two workers cannot do more
  than twice one worker's work; a ratio above 2 means the two runs did different
  work (a warm cache against a cold one, another process's load ending), so
  nothing is written and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rollouts.markers import replace_between, section_body

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "scaling.md"
BEGIN = "<!-- scale:begin (written by `make bench-scale`; edits between these markers are lost) -->"
END = "<!-- scale:end -->"
WORKERS = (1, 2)


def round_orders(rounds: int) -> list[tuple[int, ...]]:
    """The order of the worker counts in each round: 1 then 2, then 2 then 1, ..."""
    return [WORKERS if r % 2 == 0 else WORKERS[::-1] for r in range(rounds)]


def summarise(rates: list[dict[int, float]]) -> dict[str, Any]:
    """Per round ``{workers: rate}`` -> medians of the rates and of the per-round
    speed-ups (2 workers over 1), with the speed-ups' range."""
    ratios = [r[2] / r[1] for r in rates]
    return {
        "one": statistics.median(r[1] for r in rates),
        "two": statistics.median(r[2] for r in rates),
        "ratio": statistics.median(ratios),
        "low": min(ratios),
        "high": max(ratios),
        "rounds": len(rates),
    }


def impossible(rows: list[dict[str, Any]]) -> list[str]:
    """Rows whose median speed-up is above the worker count (see the module doc)."""
    return [r["path"] for r in rows if r["ratio"] > max(WORKERS)]


def _clear_search_cache() -> None:
    # The process-wide minimax caches (core.opponents.shared_minimax) make a
    # round that follows another one on the same positions faster: each eval
    # round starts without them, as a fresh Ray cluster's workers do.
    from core import opponents

    with opponents._SHARED_LOCK:
        opponents._SHARED.clear()


def interleaved(
    plays: dict[int, Callable[[list[Any]], list[Any]]],
    batches: Iterator[list[Any]],
    seconds: float,
    first: int,
) -> tuple[dict[int, float], dict[int, list[Any]]]:
    """The worker counts take turns, one whole batch of fresh tasks each, in ABBA
    order (``first``, the other, the other, ``first``, ...) until every count has
    played for at least ``seconds``: ({workers: episodes per second of its own play
    time}, {workers: records}). Taking turns batch by batch, both counts meet the
    same machine: a change in the other jobs' load lands on both, not on whichever
    window happened to run during it."""
    pair = [first, *(n for n in plays if n != first)]
    spent = dict.fromkeys(plays, 0.0)
    records: dict[int, list[Any]] = {n: [] for n in plays}
    turn = 0
    while min(spent.values()) < seconds:
        for n in pair if turn % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            records[n] += plays[n](next(batches))
            spent[n] += time.perf_counter() - t0
        turn += 1
    return {n: len(records[n]) / spent[n] for n in plays}, records


def eval_rows(
    batch: int,
    game: str,
    depth: int,
    rounds: int,
    seconds: float,
    kinds: tuple[str, ...] = ("thread", "ray"),
) -> list[dict[str, Any]]:
    from core.tasks import make_tasks
    from rollouts.drivers.core import CoreDriver
    from rollouts.drivers.executors import local_cluster, run_on_ray
    from rollouts.model.policy_server import serve_in_thread

    seeds = iter(range(1000, 10**9))

    def fresh() -> Iterator[list[Any]]:
        while True:
            yield make_tasks(batch, seed=next(seeds), game=game, num_groups=4, depth=depth)

    check = make_tasks(batch, seed=0, game=game, num_groups=4, depth=depth)
    reference: dict[str, list[Any]] = {}
    rates: dict[str, list[dict[int, float]]] = {"thread": [], "ray": []}
    steps = dict.fromkeys(kinds, 0)
    episodes = dict.fromkeys(kinds, 0)
    with serve_in_thread("minimax:1", 0) as url:

        def on_threads(n: int) -> Callable[[list[Any]], list[Any]]:
            return lambda tasks: CoreDriver().run(
                tasks, base_url=url, model="scripted", concurrency=n
            )

        def on_ray(n: int) -> Callable[[list[Any]], list[Any]]:
            # One cluster of max(WORKERS) CPUs for both counts, so they can take
            # turns: a task asking for all its CPUs runs alone (1 worker at a time).
            return lambda tasks: run_on_ray(
                CoreDriver(),
                tasks,
                base_url=url,
                model="scripted",
                cpus_per_task=max(WORKERS) // n,
            )

        def measure(
            kind: str, play: Callable[[int], Callable[[list[Any]], list[Any]]], order: Any
        ) -> dict[int, float]:
            for n in order:  # untimed warm-up: the same tasks everywhere
                warm = play(n)(check)
                reference.setdefault("check", warm)
                if _played(warm) != _played(reference["check"]):
                    raise RuntimeError(f"bench-scale: {kind}-{n} played different episodes")
            got, recs = interleaved({n: play(n) for n in order}, fresh(), seconds, order[0])
            for n in order:
                steps[kind] += sum(rec.steps for rec in recs[n])
                episodes[kind] += len(recs[n])
            return got

        for r, order in enumerate(round_orders(rounds)):
            for kind in kinds:
                _clear_search_cache()
                if kind == "thread":
                    got = measure(kind, on_threads, order)
                else:
                    with local_cluster(max(WORKERS)):  # a fresh cluster (cold caches) a round
                        got = measure(kind, on_ray, order)
                rates[kind].append(got)
                print(
                    f"bench-scale: round {r + 1}: "
                    + ", ".join(f"{kind}-{n}: {got[n]:.2f} episodes/s" for n in WORKERS),
                    flush=True,
                )
    rows = []
    labels = {"thread": "eval, thread executor", "ray": "eval, Ray executor"}
    for kind in kinds:
        label = labels[kind]
        rows.append(
            {
                "path": label,
                **summarise(rates[kind]),
                "unit": "episodes/s",
                "work": f"{game} episodes against a depth-{depth} minimax opponent, batches of "
                f"{batch} taken in turn by 1 and 2 workers until each has played {seconds:g}s "
                f"a round ({episodes[kind]} episodes and {steps[kind]} model replies timed); "
                "the warm-up's records identical in every run",
            }
        )
    return rows


def _played(records: list[Any]) -> list[Any]:
    return [(r.task, r.trajectory, r.reward) for r in records]


def trl_rows(out: Path, steps: int, tiny: Path, rounds: int) -> list[dict[str, Any]]:
    from rollouts.training import ddp as train_ddp
    from rollouts.training.tiny import TINY_MARKER

    if not (tiny / TINY_MARKER).exists():
        train_ddp.build_tiny(str(tiny), 80, 0)
    rates: list[dict[int, float]] = []
    spent: list[float] = []
    games = 0
    for r, order in enumerate(round_orders(rounds)):
        got = {}
        for processes in order:
            record = out / f"bench-{processes}proc-{r}"
            flags = train_ddp.train_flags(str(tiny), record, "rollout_func", steps, 0, greedy=False)
            train_ddp.run_launch(processes, flags, out / f"bench-{processes}proc-{r}.log")
            figures = train_ddp.check_run(record)
            games = figures["games"]
            settings = json.loads((record / train_ddp.SETTINGS_FILE).read_text())
            seconds = float(settings["train_seconds"])
            got[processes] = games / seconds
            spent.append(seconds)
            print(
                f"bench-scale: round {r + 1}: trl {processes} process(es): {seconds:.1f}s",
                flush=True,
            )
        rates.append(got)
    return [
        {
            "path": "TRL GRPO, accelerate launch (gloo on CPU)",
            **summarise(rates),
            "unit": "games/s",
            "work": f"{steps} GRPO steps x 4 games (rollout_func, tiny model), same global batch, "
            f"one whole train() per window ({min(spent):.1f}-{max(spent):.1f}s); logged rewards "
            "checked against core",
        }
    ]


def section(rows: list[dict[str, Any]], loads: tuple[Any, Any], seconds: float) -> str:
    lines = [
        BEGIN,
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `make bench-scale` "
        f"in {seconds:.0f}s on {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"Python {platform.python_version()}; load average before {loads[0]}, after {loads[1]} "
        "(the machine is shared: other engineers' work competes for the same two cores).",
        "",
        "| path | 1 worker | 2 workers | speed-up (2 vs 1), median | range over rounds | work |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['path']} | {r['one']:.2f} {r['unit']} | {r['two']:.2f} {r['unit']} "
            f"| {r['ratio']:.2f}x | {r['low']:.2f}x-{r['high']:.2f}x ({r['rounds']} rounds) "
            f"| {r['work']} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = replace_between(DOC.read_text(), BEGIN, END, section_body(text, BEGIN, END))
    if doc is None:
        raise RuntimeError(f"{DOC} has no {BEGIN!r} ... {END!r} section")
    DOC.write_text(doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--batch", type=int, default=8, help="eval episodes per batch")
    parser.add_argument("--game", default="connect_four")
    parser.add_argument(
        "--depth",
        type=int,
        default=4,
        help="the opponent's search depth: the work inside each episode",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians over them)")
    parser.add_argument(
        "--window",
        type=float,
        default=10.0,
        help="least seconds each worker count plays in an eval round",
    )
    parser.add_argument(
        "--trl-steps", type=int, default=16, help="GRPO steps a run (16: a train() of 7-11 s here)"
    )
    parser.add_argument("--skip-trl", action="store_true")
    parser.add_argument(
        "--tiny",
        default="runs/ddp/tiny",
        help="tiny model folder (built if missing; make train-ddp's)",
    )
    parser.add_argument("--out", default="runs/bench-scale")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    before = tuple(round(x, 2) for x in os.getloadavg())
    t0 = time.perf_counter()
    rows = eval_rows(args.batch, args.game, args.depth, args.rounds, args.window)
    if not args.skip_trl:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows += trl_rows(out, args.trl_steps, Path(args.tiny), args.rounds)
    after = tuple(round(x, 2) for x in os.getloadavg())
    text = section(rows, (before, after), time.perf_counter() - t0)
    print(text)
    bad = impossible(rows)
    if bad:
        print(
            f"bench-scale: speed-up above {max(WORKERS)}x with {max(WORKERS)} workers in {bad}: "
            "the runs did different work (see bench/scale.py); nothing written"
        )
        return 1
    if not args.no_doc:
        write_doc(text)
        print(f"bench-scale: wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
