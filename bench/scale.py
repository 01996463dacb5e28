"""``make bench-scale``: one worker against two, measured in one run, written to
the generated section of docs/scaling.md.

* eval: the same Connect Four tasks (core driver, the scripted policy server in
  this process, the default minimax opponent inside each episode) on the thread
  executor with 1 and 2 threads, and on a local Ray cluster of 1 and of 2 CPUs
  (one Ray task per episode). Cluster start-up and worker start-up are left out
  (a warm-up episode per worker first); the records of all four runs must be
  identical or nothing is written.
* TRL: ``rollouts.training.ddp`` GRPO steps (``rollout_func``, the tiny model, 4
  games per update) under ``accelerate launch --cpu`` with 1 and 2 processes,
  the same global batch; the time is ``trainer.train()`` alone (imports and
  model loading left out), the games checked against core as in
  ``make train-ddp``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "scaling.md"
BEGIN = "<!-- scale:begin (written by `make bench-scale`; edits between these markers are lost) -->"
END = "<!-- scale:end -->"


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def eval_rows(n: int, game: str, depth: int) -> list[dict[str, Any]]:
    import ray

    from core.tasks import make_tasks
    from rollouts.drivers.core import CoreDriver
    from rollouts.drivers.executors import run_on_ray
    from rollouts.model.policy_server import serve_in_thread

    tasks = make_tasks(n, seed=0, game=game, num_groups=4, depth=depth)
    warm = make_tasks(2, seed=99, game=game, num_groups=1, depth=depth)
    seconds: dict[str, float] = {}
    results: dict[str, list[Any]] = {}
    with serve_in_thread("minimax:1", 0) as url:
        for threads in (1, 2):
            key = f"thread-{threads}"
            seconds[key], results[key] = _timed(
                lambda t=threads: CoreDriver().run(
                    tasks, base_url=url, model="scripted", concurrency=t
                )
            )
            print(f"bench-scale: {key}: {seconds[key]:.1f}s", flush=True)
        for cpus in (1, 2):
            ray.init(
                num_cpus=cpus,
                include_dashboard=False,
                log_to_driver=False,
                _node_ip_address="127.0.0.1",
            )
            try:
                run_on_ray(CoreDriver(), warm[:cpus], base_url=url, model="scripted")
                key = f"ray-{cpus}"
                seconds[key], results[key] = _timed(
                    lambda: run_on_ray(CoreDriver(), tasks, base_url=url, model="scripted")
                )
            finally:
                ray.shutdown()
            print(f"bench-scale: {key}: {seconds[key]:.1f}s", flush=True)
    reference = [(r.task, r.trajectory, r.reward) for r in results["thread-1"]]
    for key, recs in results.items():
        if [(r.task, r.trajectory, r.reward) for r in recs] != reference:
            raise RuntimeError(f"bench-scale: {key} played different episodes from thread-1")
    steps = sum(r.steps for r in results["thread-1"])
    rows = []
    for kind, label in (("thread", "eval, thread executor"), ("ray", "eval, Ray executor")):
        one, two = seconds[f"{kind}-1"], seconds[f"{kind}-2"]
        rows.append(
            {
                "path": label,
                "one": f"{n / one:.2f} episodes/s",
                "two": f"{n / two:.2f} episodes/s",
                "ratio": one / two,
                "work": f"{n} {game} episodes against a depth-{depth} minimax opponent "
                f"({steps} model replies), identical records in all runs",
            }
        )
    return rows


def trl_rows(out: Path, steps: int, tiny: Path) -> list[dict[str, Any]]:
    from rollouts.training import ddp as train_ddp
    from rollouts.training.tiny import TINY_MARKER

    if not (tiny / TINY_MARKER).exists():
        train_ddp.build_tiny(str(tiny), 80, 0)
    seconds = {}
    games = 0
    for processes in (1, 2):
        record = out / f"bench-{processes}proc"
        flags = train_ddp.train_flags(str(tiny), record, "rollout_func", steps, 0, greedy=False)
        train_ddp.run_launch(processes, flags, out / f"bench-{processes}proc.log")
        figures = train_ddp.check_run(record)
        games = figures["games"]
        settings = json.loads((record / train_ddp.SETTINGS_FILE).read_text())
        seconds[processes] = float(settings["train_seconds"])
        print(f"bench-scale: trl {processes} process(es): {seconds[processes]:.1f}s", flush=True)
    return [
        {
            "path": "TRL GRPO, accelerate launch (gloo on CPU)",
            "one": f"{games / seconds[1]:.2f} games/s",
            "two": f"{games / seconds[2]:.2f} games/s",
            "ratio": seconds[1] / seconds[2],
            "work": f"{steps} GRPO steps x 4 games (rollout_func, tiny model), same global batch; "
            "logged rewards checked against core",
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
        "| path | 1 worker | 2 workers | speed-up (2 vs 1) | work |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['path']} | {r['one']} | {r['two']} | {r['ratio']:.2f}x | {r['work']} |")
    lines += ["", END]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(doc):
        raise RuntimeError(f"{DOC} has no {BEGIN!r} ... {END!r} section")
    DOC.write_text(pattern.sub(lambda _: text, doc, count=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("-n", type=int, default=16, help="eval episodes per run")
    parser.add_argument("--game", default="connect_four")
    parser.add_argument(
        "--depth",
        type=int,
        default=4,
        help="the opponent's search depth: the work inside each episode",
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
    rows = eval_rows(args.n, args.game, args.depth)
    if not args.skip_trl:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows += trl_rows(out, args.trl_steps, Path(args.tiny))
    after = tuple(round(x, 2) for x in os.getloadavg())
    text = section(rows, (before, after), time.perf_counter() - t0)
    print(text)
    if not args.no_doc:
        write_doc(text)
        print(f"bench-scale: wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
