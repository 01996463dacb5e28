"""The sessions of ``make load`` (``rollouts.evaluation.load``): what one client
session does against a server under load, and what it counts.

Each server's session runner (OpenEnv over its WebSocket client, NeMo Gym's two
styles and ORS over HTTP) plays its episodes with the scripted player through the
framework's own client session (``rollouts.drivers``), times every step and the gaps
between responses (:class:`LoadReport`), counts 5xx and errors, and checks each
finished episode against core's replay of the replies it sent (cross-talk).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.episode import Episode
from core.games import list_games
from core.players import ScriptedPlayer
from core.tasks import Task
from rollouts.drivers.base import TOOLS, ClientSession
from rollouts.drivers.http import HTTPSession
from rollouts.drivers.nemo_gym import NemoGymSession, NemoGymToolsSession
from rollouts.drivers.openenv import OpenEnvSession
from rollouts.drivers.ors import ORSWireSession

DEFAULT_POLICY = "noisy:0.2"
"""Random legal moves, with one malformed or illegal reply in five."""


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
