"""The OpenEnv server's session lifecycle under abandonment, capacity and oversize.

2,000 clients (300 in ``make test``) open a WebSocket session, reset a game and go
silent without closing. With a short idle timeout the server closes every one of
them (OpenEnv's reaper used to free the game but keep the socket: 1,994 descriptors
and +183 MB held). Its file descriptors come back to the baseline exactly, and its
resident memory gives back all but :data:`RSS_KEPT_SHARE` of what the sessions took
(``adapters._reclaim.Reclaimer`` says what held it: FastMCP's caches, CPython's thread
shutdown locks, reference cycles, glibc; what stays is pymalloc arenas that a few
live objects allocated during the burst keep, which is why the server is started with
the system allocator, ``adapters._reclaim.SERVER_ENV``).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv")
websockets = pytest.importorskip("websockets")

from faultkit import wait_for  # noqa: E402 (after the skips)

from adapters._reclaim import RECLAIM_QUIET_S, SERVER_ENV  # noqa: E402
from rollouts.model.servers import start_server  # noqa: E402

pytestmark = pytest.mark.server

SESSIONS = int(os.environ.get("GAMEBRIDGE_ABANDONED_SESSIONS", "300"))
"""``make test`` holds 300; ``make faults`` sets 2,000 (the issue's figure)."""
IDLE_TIMEOUT_S = max(5.0, SESSIONS / 20)
"""Long enough that the sessions are all open before the first is idle (35-150
sessions a second measured on this loaded 2-core machine)."""
RSS_KEPT_SHARE = 0.25
"""At most this share of the RSS the sessions took may stay after they are closed
and reclaimed. Measured with the fixes and the server started as the driver starts
it (``adapters._reclaim.SERVER_ENV``, the system allocator): 12% with 300 sessions,
11% with 2,000 (+31 MB); under pymalloc 33-35% and 28% (arenas pinned by a few live
objects); before the fixes 78% and 83%. Losing any of them fails this."""
ROOT = Path(__file__).resolve().parents[2]


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _reset_message() -> str:
    return json.dumps({"type": "reset", "data": {"task": {"game": "tictactoe", "seed": 1}}})


async def _open(url: str, n: int, batch: int = 100, peak: list[int] | None = None) -> list[object]:
    conns: list[object] = []
    for start in range(0, n, batch):
        if peak is not None:
            peak.append(_fds(peak[0]))

        async def one() -> object:
            ws = await websockets.connect(url, open_timeout=60, max_size=None)
            await ws.send(_reset_message())
            reply = json.loads(await ws.recv())
            assert reply.get("type") == "observation", reply
            return ws

        conns += await asyncio.gather(*[one() for _ in range(min(batch, n - start))])
    return conns


def _server(extra: list[str]) -> object:
    argv = [
        sys.executable,
        "-m",
        "adapters.openenv",
        "--host",
        "127.0.0.1",
        "--port",
        "{port}",
        *extra,
    ]
    return start_server(argv, "/health", SERVER_ENV, cwd=ROOT)  # as the OpenEnv driver does


def test_abandoned_sessions_give_back_fds_and_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 3 * SESSIONS + 1000)
    if want < 2 * SESSIONS + 200:
        pytest.skip(f"needs {2 * SESSIONS + 200} file descriptors, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    args = ["--max-sessions", str(SESSIONS + 100), "--session-timeout", str(IDLE_TIMEOUT_S)]
    with _server(args) as srv:  # type: ignore[attr-defined]
        pid = srv.process.pid
        url = f"ws://127.0.0.1:{srv.port}/ws"

        async def scenario() -> tuple[int, float, int, float, int, float]:
            warm = await _open(url, 100)  # warm every code path first
            for ws in warm:
                await ws.close()  # type: ignore[attr-defined]
            await asyncio.sleep(RECLAIM_QUIET_S + 5)  # and let the server reclaim them
            base_fds, base_rss = _fds(pid), _rss_mb(pid)
            samples = [pid]
            conns = await _open(url, SESSIONS, peak=samples)
            held_fds, held_rss = max([_fds(pid), *samples[1:]]), _rss_mb(pid)
            # Abandoned: never another message. The server must close them all.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2 * IDLE_TIMEOUT_S + 60
            while _fds(pid) > base_fds and loop.time() < deadline:
                await asyncio.sleep(0.5)
            closed = sum(ws.close_code == 4408 for ws in conns)  # type: ignore[attr-defined]
            # Reclaimed once no session has ended for RECLAIM_QUIET_S (then a margin
            # for the collection and the trim to finish on a loaded machine).
            await asyncio.sleep(RECLAIM_QUIET_S + 5)
            allowed = base_rss + RSS_KEPT_SHARE * (held_rss - base_rss)
            deadline = loop.time() + 60
            while _rss_mb(pid) > allowed and loop.time() < deadline:
                await asyncio.sleep(0.5)
            after_rss = _rss_mb(pid)
            for ws in conns:
                await ws.close()  # type: ignore[attr-defined]
            return base_fds, base_rss, held_fds, held_rss, closed, after_rss

        base_fds, base_rss, held_fds, held_rss, closed, after_rss = asyncio.run(scenario())
        after_fds = _fds(pid)
        kept = (after_rss - base_rss) / (held_rss - base_rss)
        print(
            f"fds {base_fds} -> {held_fds} -> {after_fds}; RSS {base_rss:.1f} -> "
            f"{held_rss:.1f} -> {after_rss:.1f} MB ({kept:.0%} of the growth kept); "
            f"{closed} closed with 4408"
        )
        assert held_fds >= base_fds + SESSIONS  # the sessions really were held
        assert held_rss > base_rss + SESSIONS * 0.05  # and took memory (> 50 KB each)
        assert after_fds == base_fds
        assert closed == SESSIONS
        assert kept <= RSS_KEPT_SHARE


def test_full_server_answers_capacity_and_oversize_is_a_step_error() -> None:
    args = ["--max-sessions", "1", "--max-body-bytes", "100000"]
    with _server(args) as srv:  # type: ignore[attr-defined]
        url = f"ws://127.0.0.1:{srv.port}/ws"

        async def scenario() -> None:
            (first,) = await _open(url, 1)
            second = await websockets.connect(url, open_timeout=30)
            error = json.loads(await asyncio.wait_for(second.recv(), 30))
            assert error["data"]["code"] == "CAPACITY_REACHED"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(second.recv(), 30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            assert "capacity" in closed.value.rcvd.reason.lower()
            # Oversize: that step's error, the session goes on.
            big = json.dumps({"type": "step", "data": {"reply": "x" * 200_000}})
            await first.send(big)  # type: ignore[attr-defined]
            reply = json.loads(await asyncio.wait_for(first.recv(), 30))  # type: ignore[attr-defined]
            assert reply["data"]["code"] == "MESSAGE_TOO_LARGE", reply
            ok = json.dumps({"type": "step", "data": {"reply": "<move>4</move>"}})
            await first.send(ok)  # type: ignore[attr-defined]
            reply = json.loads(await asyncio.wait_for(first.recv(), 30))  # type: ignore[attr-defined]
            assert reply["type"] == "observation", reply
            await first.close()  # type: ignore[attr-defined]

        asyncio.run(scenario())
        wait_for(lambda: "Traceback" not in srv.log_tail(), 1, "a clean log")
        assert "Traceback" not in srv.log_tail(), srv.log_tail()
