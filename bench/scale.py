"""``make bench-scale``: one worker against two, measured in one run, written to
the generated section of docs/scaling.md.

* eval: Connect Four tasks (core driver, the scripted policy server in this
  process, a depth-4 minimax opponent inside each episode) on the thread
  executor with 1 and 2 threads, and on a local Ray cluster of 1 and of 2 CPUs
  (one Ray task per episode).
* TRL: ``rollouts.training.ddp`` GRPO steps (``rollout_func``, the tiny model, 4
  games per update) under ``accelerate launch --cpu`` with 1 and 2 processes,
  the same global batch; the time is ``trainer.train()`` alone (imports and
  model loading left out), the games checked against core as in
  ``make train-ddp``.

How the figures hold still (a single cold-vs-warm pair once gave 3.37x on 2
cores, another run 1.44x):

* **Rounds, alternating order.** Each round measures 1 worker and 2 workers
  back to back; even rounds start with 1, odd rounds with 2, so a drift in the
  machine's load or a cache that warms over the run favours neither. The speed-up
  of a round is its 2-worker rate over its 1-worker rate; the table gives the
  median over rounds and their range.
* **Same starting state.** Every eval window starts from a cleared opponent
  search cache (the thread executor's process-wide one; each Ray window gets a
  fresh cluster), then a warm-up batch (untimed: cluster and worker start-up,
  imports, the first searches), then the timed window.
* **Windows of at least ``--window`` seconds** (default 10): whole batches of
  fresh tasks (seeds no other window uses) until the window is full; the rate
  is episodes over the window's seconds.
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
    # window that follows another one on the same positions faster: each eval
    # window starts without them, as a fresh Ray cluster's workers do.
    from core import opponents

    with opponents._SHARED_LOCK:
        opponents._SHARED.clear()


def window(
    play: Callable[[list[Any]], list[Any]], batches: Iterator[list[Any]], seconds: float
) -> tuple[float, list[Any]]:
    """Whole batches until ``seconds`` have passed: (episodes per second, records)."""
    records: list[Any] = []
    t0 = time.perf_counter()
    while True:
        records += play(next(batches))
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return len(records) / elapsed, records


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

        def on_ray(tasks: list[Any]) -> list[Any]:
            return run_on_ray(CoreDriver(), tasks, base_url=url, model="scripted")

        for r, order in enumerate(round_orders(rounds)):
            for kind in kinds:
                got: dict[int, float] = {}
                for n in order:
                    _clear_search_cache()
                    if kind == "thread":
                        warm = on_threads(n)(check)  # untimed warm-up: the same tasks everywhere
                        rate, recs = window(on_threads(n), fresh(), seconds)
                    else:
                        with local_cluster(n):
                            warm = on_ray(check)
                            rate, recs = window(on_ray, fresh(), seconds)
                    reference.setdefault("check", warm)
                    if _played(warm) != _played(reference["check"]):
                        raise RuntimeError(f"bench-scale: {kind}-{n} played different episodes")
                    got[n] = rate
                    steps[kind] += sum(rec.steps for rec in recs)
                    episodes[kind] += len(recs)
                    print(
                        f"bench-scale: round {r + 1}: {kind}-{n}: {rate:.2f} episodes/s", flush=True
                    )
                rates[kind].append(got)
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
                f"{batch}, windows of at least {seconds:g}s ({episodes[kind]} episodes and "
                f"{steps[kind]} model replies timed); the warm-up's records identical in every run",
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
            "one whole train() per window; logged rewards checked against core",
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
        "--window", type=float, default=10.0, help="least seconds of each timed eval window"
    )
    parser.add_argument("--trl-steps", type=int, default=4)
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
