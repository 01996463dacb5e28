"""``make load``: the environment servers under concurrent sessions.

    python -m rollouts.evaluation.load                                   # 64 sessions x 50 episodes
    python -m rollouts.evaluation.load --sessions 8 --episodes 3 --servers openenv

Each server (``openenv``: the OpenEnv WebSocket server; ``nemo_gym``: the NeMo Gym
gymnasium-style server; ``nemo_gym_tools``: its tool-style server; ``ors``: the
ORS server, from ``.venv-ors``, driven over ORS's HTTP API: ``/create_session``,
``/create``, ``/{env}/call`` as server-sent events, ``/delete``) starts as a real
process on 127.0.0.1 (``rollouts.model.servers.start_server``, as the drivers start it).
``--sessions`` concurrent clients each play ``--episodes`` episodes through the
framework's own client / HTTP API, with ``core.players.ScriptedPlayer`` answering
in this process (no model server). Games cycle through ``core.list_games()``.

Per server it prints:

* cross-talk: episodes whose server trajectory differs from core's replay of the
  replies this client sent (``Episode.replay``), or does not replay from itself
  (``Episode.from_trajectory``): must be 0;
* 5xx responses (HTTP) and other errors (WebSocket error replies, exceptions): 0;
* step latency p50/p99 (client-measured, one reply -> observation) and throughput;
* live sessions on the server (``GET /sessions``) once every client is done, and
  again after the idle timeout. Besides its episodes, each OpenEnv session drops
  one game mid-way (its socket closes without a close message), and once all are
  done each session leaves one idle game (OpenEnv: an open, silent socket; NeMo
  Gym and ORS: a game stepped once, then left, no ``/ping``). Finished games and dropped sockets must be
  freed at once (the first figure equals the idle games), idle ones after the
  timeout (``--idle-timeout``, default ``idle_timeout_for(sessions)``): the last
  figure must be 0;
* the longest gap between two responses of a game in play (``gap s``): it must stay
  under the idle timeout (a line says so when it did not: the machine starved the
  clients or the server, and games in play may have expired).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

from rollouts.drivers.nemo_gym import nemo_response  # noqa: F401 (tests/reliability read it here)
from rollouts.drivers.ors import sse_events  # noqa: F401 (tests/reliability read it here)
from rollouts.evaluation.load_sessions import (
    DEFAULT_POLICY,  # noqa: F401 (re-exported, as before the split)
    HEADER,
    LoadReport,
    _count,
    _counter,  # noqa: F401 (tests/reliability and bench.servers read it here)
    _nemo_session,
    _nemo_tools_session,
    _openenv_idle,
    _openenv_session,
    _ors_session,
    _play,  # noqa: F401 (bench.servers reads it here)
)

IDLE_S_PER_SESSION = 0.25
"""The default idle timeout's share per concurrent session (``idle_timeout_for``)."""


def chosen_servers(parser: argparse.ArgumentParser, text: str, known: Sequence[str]) -> list[str]:
    """The comma-separated ``--servers`` names; one not in ``known`` is a usage error
    (one line, exit 2: ``parser.error``)."""
    servers = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(servers) - set(known))
    if unknown:
        parser.error(f"unknown servers {unknown}; known: {', '.join(known)}")
    return servers


def idle_timeout_for(sessions: int) -> float:
    """The servers' idle timeout for ``sessions`` concurrent clients: 5 s, or 0.25 s a
    session if longer (64 sessions: 16 s). A game in play is idle on the server from
    one response to its next request's turn: the client's pause (every client is a
    thread of this one process) plus that request's wait behind the other sessions'
    requests, so the gap grows with the sessions and with the load. With 64 sessions
    the longest gap (``LoadReport.longest_gap``) was 0.6-1.9 s at a load average of
    9-12 (155-285 steps/s; 2026-12-02, 10 episodes each); at a load average of 24
    (trainings on the same 2 cores) 5 s was too short and games in play expired
    (NeMo Gym tools 89, ORS 12 of 3,200 episodes). 16 s is 8 times the longest gap
    measured."""
    return max(5.0, sessions * IDLE_S_PER_SESSION)


# --- running ------------------------------------------------------------------------------


def live_sessions(url: str, report: LoadReport) -> int:
    """``GET /sessions`` -> ``active`` (the adapters' read-only count)."""
    import httpx

    response = httpx.get(url + "/sessions", timeout=30)
    return int(_count(report, response, "/sessions")["active"])


def wait_live(url: str, report: LoadReport, target: int, seconds: float) -> int:
    """Poll ``/sessions`` until it reads ``target`` or ``seconds`` pass; the last reading."""
    deadline = time.monotonic() + seconds
    while True:
        live = live_sessions(url, report)
        if live <= target or time.monotonic() > deadline:
            return live
        time.sleep(0.25)


def server_manager(
    server: str,
    sessions: int,
    idle_timeout: float,
    max_sessions: int | None = None,
    system_malloc: bool = True,
) -> AbstractContextManager[Any]:
    """``start_server`` for ``server``, started the way its driver starts it; room for
    ``sessions`` clients plus their idle and abandoned games unless ``max_sessions``.
    ``system_malloc=False`` starts OpenEnv without ``SERVER_ENV`` (pymalloc: what that
    costs is a row of ``bench.servers``)."""
    from rollouts.model.servers import start_server

    cap = str(max_sessions or 3 * sessions + 8)
    # No --host: the servers' default (127.0.0.1) is what tests/reliability checks.
    if server == "openenv":
        argv = [
            sys.executable, "-m", "adapters.openenv", "--port", "{port}",
            "--max-sessions", cap, "--session-timeout", str(idle_timeout),
        ]  # fmt: skip
        from adapters._reclaim import SERVER_ENV

        env = SERVER_ENV if system_malloc else None
        return start_server(argv, "/health", env)  # as the OpenEnv driver starts it
    if server == "ors":
        from rollouts.drivers.ors import ROOT, server_python

        argv = [
            "python", "-m", "adapters.ors", "--port", "{port}",
            "--max-sessions", cap, "--session-timeout", str(idle_timeout),
        ]  # fmt: skip
        return start_server(argv, "/health", {"PYTHONUNBUFFERED": "1"}, server_python(), cwd=ROOT)
    from rollouts.drivers.nemo_gym import ROOT, nemo_python

    style = "tools" if server == "nemo_gym_tools" else "gymnasium"
    argv = [
        "python", "-m", "adapters.nemo_gym", "--style", style, "--port", "{port}",
        "--session-timeout", str(idle_timeout), "--max-sessions", cap,
    ]  # fmt: skip
    return start_server(argv, "/", {"PYTHONUNBUFFERED": "1"}, str(nemo_python()), cwd=ROOT)


SESSION_RUNNERS: dict[str, Callable[..., Awaitable[None]]] = {
    "openenv": _openenv_session,
    "nemo_gym": _nemo_session,
    "nemo_gym_tools": _nemo_tools_session,
    "ors": _ors_session,
}
SERVERS = tuple(SESSION_RUNNERS)
"""The servers the load test drives: a session runner each (their names are the
framework manifest's driver names, ``rollouts.frameworks``)."""


def run_load(
    server: str, url: str, sessions: int, episodes: int, idle_timeout: float
) -> LoadReport:
    """Drive a started server; the report (see the module docstring)."""
    report = LoadReport(server, sessions)
    runner = SESSION_RUNNERS[server]

    async def main() -> list[Any]:
        # Each client is a thread (the sessions are synchronous): room for all at once.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=sessions + 1, thread_name_prefix="load")
        )
        start = time.perf_counter()
        await asyncio.gather(*(runner(url, i, episodes, report) for i in range(sessions)))
        report.seconds = time.perf_counter() - start
        # Then one idle game per session, opened at the end so none has timed out yet:
        # OpenEnv: a silent open socket; NeMo Gym: a game stepped once, then left.
        if server == "openenv":
            return [_openenv_idle(url, i) for i in range(sessions)]
        idle = LoadReport(server, sessions)
        await asyncio.gather(*(runner(url, i, 0, idle, True) for i in range(sessions)))
        report.errors += idle.errors
        report.status_5xx += idle.status_5xx
        return []

    idle_clients = asyncio.run(main())
    report.idle_games = sessions
    # Finished games and dropped sockets are freed at once: only the idle games remain.
    report.live_after = wait_live(url, report, report.idle_games, 10.0)
    # OpenEnv's reaper wakes every max(timeout / 4, 5) s.
    report.live_after_timeout = wait_live(url, report, 0, idle_timeout + 15.0)
    for client in idle_clients:
        client.close()
    return report


def load(
    servers: list[str],
    sessions: int,
    episodes: int,
    idle_timeout: float,
    done: Callable[[LoadReport], None] | None = None,
) -> list[LoadReport]:
    """Start ``servers`` together, load them one after the other (``done`` is called
    with each report as it completes), stop them."""
    from rollouts.drivers.nemo_gym import _start_together

    managers = [server_manager(s, sessions, idle_timeout) for s in servers]
    running = _start_together(managers)  # each waits seconds for its framework's imports
    reports = []
    try:
        for server, srv in zip(servers, running, strict=True):
            reports.append(run_load(server, srv.base_url, sessions, episodes, idle_timeout))
            if done is not None:
                done(reports[-1])
        return reports
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rollouts.evaluation.load", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sessions", type=int, default=64, help="concurrent clients")
    parser.add_argument("--episodes", type=int, default=50, help="episodes per client")
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"comma-separated, of {', '.join(SERVERS)}"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        help="the servers' idle session timeout (s; default: 5, or 0.25 a session if longer)",
    )
    parser.add_argument("--json", action="store_true", help="print the reports as JSON too")
    args = parser.parse_args(argv)
    servers = chosen_servers(parser, args.servers, SERVERS)
    if "ors" in servers:
        from rollouts.drivers.ors import ORSDriver

        ok, why = ORSDriver().available()
        if not ok:
            print(f"skipping ORS: {why}")
            servers = [s for s in servers if s != "ors"]
    if any(s.startswith("nemo") for s in servers):
        from rollouts.drivers.nemo_gym import nemo_python

        if not nemo_python().exists():
            print("skipping NeMo Gym: .venv-nemo is missing (make setup-nemo)")
            servers = [s for s in servers if not s.startswith("nemo")]
    print(HEADER, flush=True)

    def show(report: LoadReport) -> None:
        print(report.line(), flush=True)
        for error in report.errors[:5]:
            print(f"    error: {error}", flush=True)

    idle_timeout = args.idle_timeout or idle_timeout_for(args.sessions)
    reports = load(servers, args.sessions, args.episodes, idle_timeout, show)
    for r in reports:
        if r.longest_gap >= idle_timeout:  # a game in play may have expired: say why
            print(
                f"{r.server}: a game in play went {r.longest_gap:.1f} s between responses,"
                f" longer than the {idle_timeout:g} s idle timeout: its client or the server"
                " was starved (load average now"
                f" {' / '.join(f'{x:.1f}' for x in os.getloadavg())})",
                flush=True,
            )
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "server": r.server,
                        "sessions": r.sessions,
                        "episodes": r.episodes,
                        "steps": r.steps,
                        "seconds": round(r.seconds, 3),
                        "p50_ms": round(r.percentile(0.5), 2),
                        "p99_ms": round(r.percentile(0.99), 2),
                        "mean_ms": round(statistics.fmean(r.latencies) * 1000, 2)
                        if r.latencies
                        else None,
                        "cross_talk": r.cross_talk,
                        "status_5xx": r.status_5xx,
                        "errors": len(r.errors),
                        "live_after": r.live_after,
                        "live_after_timeout": r.live_after_timeout,
                    }
                    for r in reports
                ]
            )
        )
    return 0 if reports and all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
