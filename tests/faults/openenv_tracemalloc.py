"""What the OpenEnv server still holds after abandoned sessions, by tracemalloc.

    python tests/faults/openenv_tracemalloc.py --sessions 2000

Starts the OpenEnv server as the driver does (``SERVER_ENV``) but under tracemalloc
(a wrapper that dumps a snapshot on SIGUSR1), warms it with 100 sessions, snapshots
(*before*), opens ``--sessions`` WebSocket sessions that are then abandoned (the idle
timeout closes them), waits for the reclaim, snapshots (*after*), and prints the traced
Python memory and RSS at each point and the 15 source lines whose allocations grew most
between the snapshots. Python-level growth that stays is memory the sessions left
referenced; RSS growth beyond it is the allocator's (``adapters/_reclaim.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from test_openenv_sessions import _fds, _open, _rss_mb  # noqa: E402

from adapters._reclaim import RECLAIM_QUIET_S, SERVER_ENV  # noqa: E402
from rollouts.model.servers import start_server  # noqa: E402

WRAPPER = """
import os, runpy, signal, sys, tracemalloc
tracemalloc.start(1)
def dump(*_):
    tracemalloc.take_snapshot().dump(os.environ["SNAPSHOT_PATH"] + str(dump.n))
    dump.n += 1
dump.n = 0
signal.signal(signal.SIGUSR1, dump)
sys.argv = ["adapters.openenv", *sys.argv[1:]]
runpy.run_module("adapters.openenv", run_name="__main__")
"""


def _snapshot(pid: int, base: str, n: int) -> tracemalloc.Snapshot:
    path = Path(f"{base}{n}")
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if path.exists():
            size = path.stat().st_size
            time.sleep(1.0)
            if path.stat().st_size == size and size:
                return tracemalloc.Snapshot.load(str(path))
        time.sleep(0.5)
    raise TimeoutError(f"no snapshot at {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    args = parser.parse_args()
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 3 * args.sessions + 1000), hard))
    tmp = tempfile.mkdtemp(prefix="gamebridge-tracemalloc-")
    base = os.path.join(tmp, "snap")
    argv = [
        sys.executable, "-c", WRAPPER, "--host", "127.0.0.1", "--port", "{port}",
        "--max-sessions", str(args.sessions + 200),
        "--session-timeout", str(args.idle_timeout),
    ]  # fmt: skip
    env = {**SERVER_ENV, "SNAPSHOT_PATH": base}
    with start_server(argv, "/health", env, cwd=ROOT, timeout=300) as srv:
        pid = srv.process.pid
        url = f"ws://127.0.0.1:{srv.port}/ws"

        async def scenario() -> tuple[list[float], list[int]]:
            rss, fds = [], []
            rss.append(_rss_mb(pid))
            fds.append(_fds(pid))
            conns = await _open(url, args.sessions)
            rss.append(_rss_mb(pid))
            fds.append(_fds(pid))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2 * args.idle_timeout + 120
            while _fds(pid) > fds[0] and loop.time() < deadline:
                await asyncio.sleep(1.0)
            await asyncio.sleep(RECLAIM_QUIET_S + 10)
            rss.append(_rss_mb(pid))
            fds.append(_fds(pid))
            for ws in conns:
                await ws.close()  # type: ignore[attr-defined]
            return rss, fds

        before = None

        async def run() -> tuple[list[float], list[int]]:
            nonlocal before
            warm = await _open(url, 100)
            for ws in warm:
                await ws.close()  # type: ignore[attr-defined]
            await asyncio.sleep(RECLAIM_QUIET_S + 5)
            before = await asyncio.to_thread(_snapshot, pid, base, 0)
            return await scenario()

        rss, fds = asyncio.run(run())
        after = _snapshot(pid, base, 1)
    assert before is not None
    traced = [sum(s.size for s in snap.statistics("filename")) / 2**20 for snap in (before, after)]
    print(f"sessions {args.sessions}, idle timeout {args.idle_timeout:g} s, tracemalloc on")
    print(f"fds {fds[0]} -> {fds[1]} -> {fds[2]}")
    print(f"RSS {rss[0]:.1f} -> {rss[1]:.1f} -> {rss[2]:.1f} MB")
    print(f"traced Python memory before {traced[0]:.1f} MB, after {traced[1]:.1f} MB")
    print("largest growth by line (after - before):")
    for stat in after.compare_to(before, "lineno")[:15]:
        print(f"  {stat.size_diff / 1024:9.1f} KiB {stat.count_diff:+7d} blocks  {stat.traceback}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
