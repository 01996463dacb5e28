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
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from core.episode import Episode
from core.games import list_games
from core.players import ScriptedPlayer
from core.tasks import Task
from rollouts.drivers.base import TOOLS, ClientSession
from rollouts.drivers.http import HTTPSession
from rollouts.drivers.nemo_gym import (
    NemoGymSession,
    NemoGymToolsSession,
    nemo_response,  # noqa: F401 (tests/reliability read it here)
)
from rollouts.drivers.openenv import OpenEnvSession
from rollouts.drivers.ors import (
    ORSWireSession,
    sse_events,  # noqa: F401 (tests/reliability read it here)
)

DEFAULT_POLICY = "noisy:0.2"
"""Random legal moves, with one malformed or illegal reply in five."""
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


@dataclass
class LoadReport:
    """What one server did under load."""

    server: str
    sessions: int
    episodes: int = 0
    steps: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cross_talk: int = 0
    status_5xx: int = 0
    errors: list[str] = field(default_factory=list)
    live_after: int = -1
    """Live sessions right after every client finished (idle games still count)."""
    live_after_timeout: int = -1
    """Live sessions after the idle timeout: must be 0."""
    idle_games: int = 0
    longest_gap: float = 0.0
    """The longest time between two responses of one game being played (seconds: the
    open, each step, the closing ``/verify``): the client's pause plus the next
    request's wait and work, the most the server can have counted that game idle.
    It must stay under the idle timeout, or a game in play expires."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Counts are kept from many client threads."""

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        data = sorted(self.latencies)
        return data[min(len(data) - 1, int(q * len(data)))] * 1000

    @property
    def ok(self) -> bool:
        return (
            self.cross_talk == 0
            and self.status_5xx == 0
            and not self.errors
            and self.live_after_timeout == 0
        )

    def line(self) -> str:
        rate = self.steps / self.seconds if self.seconds else 0.0
        return (
            f"{self.server:<15} {self.sessions:>4} x {self.episodes // max(1, self.sessions):<4}"
            f" {self.episodes:>6} {self.steps:>7} {rate:>8.0f} {self.percentile(0.5):>7.1f}"
            f" {self.percentile(0.99):>7.1f} {self.cross_talk:>5} {self.status_5xx:>4}"
            f" {len(self.errors):>6} {self.live_after:>6} {self.live_after_timeout:>6}"
            f" {self.longest_gap:>6.2f}"
        )


HEADER = (
    f"{'server':<15} {'sessions x eps':<11} {'episodes':>6} {'steps':>7} {'steps/s':>8}"
    f" {'p50 ms':>7} {'p99 ms':>7} {'xtalk':>5} {'5xx':>4} {'errors':>6} {'live':>6}"
    f" {'live@TTL':>6} {'gap s':>6}"
)


def task_for(session: int, episode: int) -> Task:
    """The task of a session's episode: games in turn, a random opponent (server CPU
    goes to the framework, not to search)."""
    games = list_games()
    return Task(
        game=games[(session + episode) % len(games)],
        seed=session * 1000 + episode,
        opponent="random",
        model_player=0,
    )


def check_trajectory(report: LoadReport, task: Task, replies: list[Any], traj: Any) -> None:
    """Cross-talk check: the server's trajectory is core's replay of *these* replies."""
    if not isinstance(traj, dict):
        report.cross_talk += 1
        report.errors.append(f"{task.task_id}: no trajectory came back")
        return
    replayed = Episode.replay(task, replies).to_dict()
    if traj != replayed or Episode.from_trajectory(traj).to_dict() != traj:
        report.cross_talk += 1


class _Timer:
    """Times a session's steps and the gaps between its responses (``longest_gap``)."""

    def __init__(self, report: LoadReport) -> None:
        self.report = report
        self.last = time.perf_counter()
        """When the session's last response came (or its game was opened)."""

    def untimed(self, call: Callable[..., Any], *args: Any) -> Any:
        """A request that is not a step (``/verify``): only its gap is noted."""
        result = call(*args)
        now = time.perf_counter()
        with self.report.lock:
            self.report.longest_gap = max(self.report.longest_gap, now - self.last)
        self.last = now
        return result

    def __call__(self, step: Callable[..., Any], *args: Any) -> Any:
        start = time.perf_counter()
        result = self.untimed(step, *args)
        self.report.latencies.append(self.last - start)
        with self.report.lock:
            self.report.steps += 1
        return result


def _counter(report: LoadReport) -> Callable[[Any, str], None]:
    """A session's ``on_response``: counts 5xx and refuses anything but 200."""
    return lambda response, what: _count(report, response, what, body=False)


def _play(
    report: LoadReport,
    session: ClientSession,
    task: Task,
    player: ScriptedPlayer,
    abandon: bool = False,
    timed: _Timer | None = None,
) -> list[Any] | None:
    """One episode of ``session`` with the scripted player (replies in text mode, moves
    in tool mode); the actions sent, or ``None`` when ``abandon`` (one step, then
    silence: the server must drop the game at its idle timeout)."""
    timed = timed or _Timer(report)
    messages = session.open(task)
    timed.last = time.perf_counter()
    actions: list[Any] = []
    done = False
    while not done:
        if session.mode == TOOLS:
            move = player.move(messages)
            actions.append({"move": move})
            turn = timed(session.call, {"move": move})
            messages += [
                {"role": "assistant", "content": f"make_move({move})"},
                {"role": "tool", "content": turn.observation},
            ]
        else:
            reply = player.reply(messages)
            actions.append(reply)
            turn = timed(session.send, reply)
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": turn.observation},
            ]
        if abandon:
            return None
        done = turn.done
    return actions


def _finish(
    report: LoadReport, session: ClientSession, task: Task, actions: list[Any], timed: _Timer
) -> None:
    """Cross-talk check of a finished episode, counted."""
    trajectory, _ = timed.untimed(session.result)
    with report.lock:
        check_trajectory(report, task, actions, trajectory)
        report.episodes += 1


def _error(report: LoadReport, server: str, task: Task, exc: Exception) -> None:
    report.errors.append(f"{server} {task.task_id}: {type(exc).__name__}: {exc}")


# --- OpenEnv ------------------------------------------------------------------------------


def _openenv_episodes(url: str, index: int, episodes: int, report: LoadReport) -> None:
    player = ScriptedPlayer(DEFAULT_POLICY, seed=index)
    for j in range(episodes):
        task = task_for(index, j)
        try:
            with OpenEnvSession(url) as session:
                timed = _Timer(report)
                actions = _play(report, session, task, player, timed=timed)
                _finish(report, session, task, actions or [], timed)
        except Exception as exc:  # counted, the session goes on
            _error(report, "openenv", task, exc)
    try:
        drop_openenv_game(url, task_for(index, episodes))
    except Exception as exc:
        report.errors.append(f"openenv abandon: {type(exc).__name__}: {exc}")


def drop_openenv_game(url: str, task: Task) -> None:
    """An abandoned game: reset, one step, then the socket drops without a close.

    OpenEnv's client has no public way to drop its connection without the closing
    handshake (``disconnect``/``close`` send it; the socket is private), so this one
    game speaks OpenEnv's WebSocket messages itself, through ``websockets``' public
    API, and shuts the TCP socket."""
    import socket

    from websockets.sync.client import connect

    with connect(url.replace("http://", "ws://", 1) + "/ws", max_size=None) as ws:
        try:
            for message in (
                {"type": "reset", "data": {"task": task.to_dict()}},
                {"type": "step", "data": {"reply": "<move>?</move>"}},
            ):
                ws.send(json.dumps(message))
                answer = json.loads(ws.recv(timeout=60))
                if answer.get("type") != "observation":
                    raise RuntimeError(f"{message['type']} answered {answer}")
        finally:
            # Cut the TCP connection: the closing handshake on exit has nowhere to go.
            ws.socket.shutdown(socket.SHUT_RDWR)


async def _openenv_session(url: str, index: int, episodes: int, report: LoadReport) -> None:
    await asyncio.to_thread(_openenv_episodes, url, index, episodes, report)


def _openenv_idle(url: str, index: int) -> OpenEnvSession:
    """A socket that starts a game and then says nothing (closed by the caller)."""
    session = OpenEnvSession(url)
    session.open(task_for(index, 0))
    return session


# --- NeMo Gym -----------------------------------------------------------------------------


def _count(report: LoadReport, response: Any, what: str, body: bool = True) -> Any:
    if response.status_code >= 500:
        with report.lock:
            report.status_5xx += 1
    if response.status_code != 200:
        raise RuntimeError(f"{what} answered {response.status_code}: {response.text[:300]}")
    return response.json() if body else None


def _http_episodes(
    server: str, url: str, index: int, episodes: int, report: LoadReport, abandon: bool
) -> None:
    """``episodes`` (+ one abandoned) of a NeMo Gym or ORS session, each checked.

    NeMo Gym gymnasium: one httpx client per load session, whose cookie jar holds NeMo
    Gym's session cookie, so each reset reuses the session, which the server frees at
    the end of every game. The tool server: one client (one NeMo Gym session) per
    episode, as the driver does. ORS: one client, a session per episode, deleted once
    the game is over (an abandoned one is not)."""
    import httpx

    make: type[HTTPSession] = {
        "nemo_gym": NemoGymSession,
        "nemo_gym_tools": NemoGymToolsSession,
        "ors": ORSWireSession,
    }[server]
    player = ScriptedPlayer(DEFAULT_POLICY, seed=index)
    shared = httpx.Client(base_url=url, timeout=120) if server != "nemo_gym_tools" else None
    try:
        for j in range(episodes + int(abandon)):
            task = task_for(index, j)
            http = shared or httpx.Client(base_url=url, timeout=120)
            session = make(url, http=http, on_response=_counter(report))
            try:
                timed = _Timer(report)
                actions = _play(report, session, task, player, j == episodes, timed)
                if actions is not None:
                    _finish(report, session, task, actions, timed)
                    if isinstance(session, ORSWireSession):
                        session.delete()
            except Exception as exc:  # counted, the session goes on
                _error(report, server, task, exc)
            finally:
                if shared is None:
                    http.close()
    finally:
        if shared is not None:
            shared.close()


async def _nemo_session(
    url: str, index: int, episodes: int, report: LoadReport, abandon: bool = False
) -> None:
    await asyncio.to_thread(_http_episodes, "nemo_gym", url, index, episodes, report, abandon)


async def _nemo_tools_session(
    url: str, index: int, episodes: int, report: LoadReport, abandon: bool = False
) -> None:
    await asyncio.to_thread(_http_episodes, "nemo_gym_tools", url, index, episodes, report, abandon)


async def _ors_session(
    url: str, index: int, episodes: int, report: LoadReport, abandon: bool = False
) -> None:
    await asyncio.to_thread(_http_episodes, "ors", url, index, episodes, report, abandon)


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
