"""``make eval-ray``: every game through both executors, their JSONL files compared.

    python -m rollouts.evaluation.ray_check [-n 6] [--concurrency 2] [--out runs/eval-ray]

Every game's tasks run through the core driver on threads and on a local Ray cluster
(``rollouts.drivers.executors``); both record files are written and read back
(``rollouts.evaluation.records``) and must hold the same trajectories, rewards and
order. A run (running layer): it sits above the drivers it runs and the records file
it writes, so the executors import nothing above them.
"""

from __future__ import annotations


def check_every_game(n: int = 6, concurrency: int = 2, out_dir: str = "runs/eval-ray") -> int:
    """``make eval-ray``: every game's tasks through the core driver on threads and
    on a local Ray cluster of ``concurrency`` CPUs, both JSONL files written and
    compared (trajectories, rewards and order). Returns an exit status."""
    from pathlib import Path

    from core import list_games
    from core.tasks import make_tasks
    from rollouts.drivers.core import CoreDriver
    from rollouts.drivers.executors import EXECUTORS, local_cluster, run_tasks
    from rollouts.evaluation.records import read_run, write_records
    from rollouts.model.policy_server import serve_in_thread

    out = Path(out_dir)
    status = 0
    with local_cluster(concurrency), serve_in_thread("noisy:0.3/minimax:1", 0) as url:
        for game in list_games():
            tasks = make_tasks(n, seed=0, game=game, num_groups=min(4, n))
            files = {}
            for executor in EXECUTORS:
                records = run_tasks(
                    CoreDriver(),
                    tasks,
                    base_url=url,
                    model="scripted",
                    concurrency=concurrency,
                    executor=executor,
                )
                files[executor] = out / f"{game}-{executor}.jsonl"
                write_records(files[executor], records)
            thread, on_ray = (read_run(files[e]).ordered() for e in EXECUTORS)
            same = [(r.task, r.trajectory, r.reward) for r in thread] == [
                (r.task, r.trajectory, r.reward) for r in on_ray
            ]
            status |= 0 if same else 1
            print(
                f"eval-ray: {game}: {len(on_ray)} episodes, "
                f"{'IDENTICAL' if same else 'DIFFERENT'} ({files['thread']} vs {files['ray']})",
                flush=True,
            )
    return status


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m rollouts.evaluation.ray_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("-n", type=int, default=6, help="tasks per game (default %(default)s)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--out", default="runs/eval-ray")
    parsed = parser.parse_args(argv)
    return check_every_game(parsed.n, parsed.concurrency, parsed.out)


if __name__ == "__main__":
    raise SystemExit(main())
