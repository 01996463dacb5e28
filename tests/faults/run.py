"""``make faults``: every endpoint fault and every kill, over every framework.

For each framework (``--frameworks``, default every available driver) and each
scenario, a small Tic-Tac-Toe eval runs as its own process behind a fault proxy:

* endpoint faults on every 4th model request: ``500``, ``429``, ``truncated``,
  ``huge`` (a 20 MB reply), ``hang`` (no answer; the call times out), ``drop``;
* kills at a random moment: the environment server (frameworks that start one), the
  policy server (restarted for the resume), the eval process itself (SIGKILL).

Each faulted run is then completed with ``--resume`` (fault cleared). Printed:
episodes attempted, finished, failed, lost (a finished episode missing or changed
later, or a task with no record after a run that ended: must be 0), orphans
(processes of the eval alive after it ended: must be 0), and whether every resumed
file equals the uninterrupted run (core's records for the same tasks; ``huge``
changes the replies themselves, so it is checked for loss and orphans only).
Exit status 1 if any of the three must-holds fails.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from faultkit import (
    FAULTS,
    FaultProxy,
    children,
    count_lines,
    eval_argv,
    kill_all,
    policy_server,
    start_eval,
    wait_gone,
)

from core.tasks import make_tasks
from rollouts.drivers import available_drivers, get_driver
from rollouts.drivers.base import TEXT, TOOLS
from rollouts.drivers.core import CoreDriver
from rollouts.evaluation.records import read_run

POLICY = "noisy:0.3/minimax:1"
CALL = ["--model-timeout", "3", "--model-retries", "3", "--model-backoff", "0.1"]
ENV_SERVER = {
    "openenv": "adapters.openenv",
    "openenv_tools": "adapters.openenv",
    "nemo_gym": "adapters.nemo_gym --style",
    "nemo_gym_tools": "adapters.nemo_gym --style",
    "ors": "adapters.ors",
}


@dataclass
class Tally:
    attempted: int = 0
    finished: int = 0
    failed: int = 0
    lost: int = 0
    orphans: int = 0
    equal: bool = True
    rows: list[str] = field(default_factory=list)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _essence(rec: Any) -> tuple[Any, ...]:
    return (rec.index, rec.task, rec.trajectory, rec.reward)


def _watch(proc: subprocess.Popen[bytes], out: Path, seen: dict[int, Any]) -> list[int]:
    """Wait for the eval to end, remembering every finished record and its processes."""
    kids: set[int] = set()
    while proc.poll() is None:
        kids.update(children(proc.pid))
        _remember(out, seen)
        time.sleep(0.1)
    _remember(out, seen)
    return sorted(kids)


def _remember(out: Path, seen: dict[int, Any]) -> None:
    if out.exists():
        for i, rec in read_run(out, warn=False).finished().items():
            seen.setdefault(i, _essence(rec))


def scenario(
    framework: str, kind: str, n: int, work: Path, rng: random.Random, reference: dict[int, Any]
) -> tuple[int, int, int, int, bool]:
    """(finished, failed, lost, orphans, equal) of one faulted run + its resume."""
    out = work / f"{framework}-{kind}.jsonl"
    seen: dict[int, Any] = {}
    orphans = 0
    failed = 0
    with policy_server(POLICY) as srv:
        port = srv.port
        with FaultProxy(srv.base_url + "/v1", delay=0.05) as proxy:
            if kind in FAULTS:
                proxy.set_fault(kind, every=4)
            argv = eval_argv(framework, n, out, proxy.url, "--concurrency", "2", *CALL)
            proc = start_eval(argv, work / f"{framework}-{kind}.log")
            killed = False
            kids: set[int] = set()
            if kind in ("kill-env", "kill-policy", "kill-eval"):
                target = rng.randint(1, max(1, n - 2))
                deadline = time.monotonic() + 600
                while proc.poll() is None and count_lines(out) < target:
                    kids.update(children(proc.pid))
                    _remember(out, seen)
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 0.5))
                kids.update(children(proc.pid))
                if proc.poll() is None:
                    if kind == "kill-env":
                        victims = [p for p in kids if ENV_SERVER[framework] in _cmdline(p)]
                        kill_all(victims[:1])
                    elif kind == "kill-policy":
                        os.kill(srv.process.pid, signal.SIGKILL)
                    else:
                        proc.send_signal(signal.SIGKILL)
                        killed = True
            kids.update(_watch(proc, out, seen))
            orphans += len(wait_gone(sorted(kids), 30))
            kill_all(sorted(kids))
    run = read_run(out, warn=False)
    failed = sum(1 for r in run.records.values() if r.error)
    lost = sum(1 for i, e in seen.items() if i not in run.records or _essence(run.records[i]) != e)
    if not killed:
        lost += sum(1 for i in range(n) if i not in run.records)
    # Complete it: --resume with the fault cleared, the policy server back on its port.
    with policy_server(POLICY, port=port) as srv, FaultProxy(srv.base_url + "/v1") as proxy:
        argv = eval_argv(framework, n, out, proxy.url, "--concurrency", "2", *CALL, "--resume")
        proc = start_eval(argv, work / f"{framework}-{kind}-resume.log")
        kids2 = _watch(proc, out, seen)
        orphans += len(wait_gone(kids2, 30))
    final = read_run(out, warn=False)
    lost += sum(
        1 for i, e in seen.items() if i not in final.records or _essence(final.records[i]) != e
    )
    finished = {i: _essence(r) for i, r in final.finished().items()}
    equal = kind == "huge" or finished == reference
    return len(seen), failed, lost, orphans, equal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default=None, help="comma-separated (default: all)")
    parser.add_argument("--scenarios", default=None, help="comma-separated (default: all)")
    parser.add_argument("-n", type=int, default=6, help="tasks per run (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="of the random kill moments")
    args = parser.parse_args(argv)
    frameworks = args.frameworks.split(",") if args.frameworks else available_drivers()
    all_scenarios = [*FAULTS, "kill-env", "kill-policy", "kill-eval"]
    scenarios = args.scenarios.split(",") if args.scenarios else all_scenarios
    rng = random.Random(args.seed)
    tally = Tally()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gamebridge-faults-") as tmp:
        work = Path(tmp)
        with policy_server(POLICY) as srv:
            tasks = make_tasks(n=args.n, seed=0, game="tictactoe", num_groups=4)
            # core in each mode: a tool-mode framework (ORS, *_tools) equals core's tool mode
            references = {
                mode: {
                    r.index: _essence(r)
                    for r in CoreDriver(use_tools=mode == TOOLS).run(
                        tasks, base_url=srv.base_url + "/v1", model="scripted"
                    )
                }
                for mode in (TEXT, TOOLS)
            }
        for fw in frameworks:
            for kind in scenarios:
                if kind == "kill-env" and fw not in ENV_SERVER:
                    continue
                started = time.monotonic()
                reference = references[get_driver(fw).mode]
                fin, failed, lost, orphans, equal = scenario(fw, kind, args.n, work, rng, reference)
                tally.attempted += args.n
                tally.finished += fin
                tally.failed += failed
                tally.lost += lost
                tally.orphans += orphans
                tally.equal &= equal
                row = (
                    f"{fw:15s} {kind:12s} finished {fin:2d}  failed {failed:2d}  lost {lost}  "
                    f"orphans {orphans}  resumed==uninterrupted "
                    f"{'n/a' if kind == 'huge' else 'yes' if equal else 'NO'}  "
                    f"({time.monotonic() - started:.0f} s)"
                )
                tally.rows.append(row)
                print(row, flush=True)
    print()
    print(f"frameworks: {', '.join(frameworks)}; scenarios: {', '.join(scenarios)}")
    print(f"episodes attempted {tally.attempted}")
    print(f"finished (faulted run + resume) {tally.finished}")
    print(f"failed (failure records) {tally.failed}")
    print(f"lost {tally.lost} (must be 0)")
    print(f"orphans {tally.orphans} (must be 0)")
    print(f"resumed equals uninterrupted: {'yes' if tally.equal else 'NO'} (must hold)")
    print(f"wall time {time.monotonic() - t0:.0f} s")
    ok = tally.lost == 0 and tally.orphans == 0 and tally.equal
    print("FAULTS OK" if ok else "FAULTS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
