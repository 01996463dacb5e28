"""The turn loop and the adapters around it: Episode step cost, each in-process
adapter's overhead over a bare Episode, the HTTP adapters' step latency, and
``import core``.

Every path plays the same games: the replies are computed once, by core's
``ScriptedPlayer`` (random policy), against a random opponent (a minimax
opponent's search would dwarf, and so hide, the loop's own cost), and each
adapter replays them. The adapter overhead is (adapter time - Episode time) /
Episode time over the same steps, timed back to back in each run; object
construction and ``reset`` are outside the timed part.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.engine import clear_memos
from bench.report import ROOT, MismatchError, Row, Target
from core.episode import Episode
from core.parsing import format_reply
from core.players import ScriptedPlayer
from core.tasks import Task
from rollouts.drivers.base import ClientSession
from rollouts.drivers.core import CoreSession
from rollouts.drivers.gem import GemSession
from rollouts.drivers.nemo_gym import NemoGymSession
from rollouts.drivers.openenv import OpenEnvSession
from rollouts.drivers.skyrl_gym import SkyRLSession
from rollouts.drivers.trl import TRLSession
from rollouts.frameworks import FRAMEWORKS, TEXT

STEP_GAMES = ("tictactoe", "connect_four", "othello")
PASSES = 3
"""Plays of each game per run and path; the fastest counts."""


@dataclass(frozen=True)
class Game:
    """One task and the model's moves in it (as move texts)."""

    task: Task
    moves: tuple[str, ...]

    @property
    def replies(self) -> list[str]:
        return [format_reply(m) for m in self.moves]


def scripted_games(per_game: int, opponent: str = "random") -> list[Game]:
    """``per_game`` tasks of each game against ``opponent`` (``"random"``, or
    ``"default"``: the task's default, minimax at depth 2), and a scripted
    model's moves."""
    games = []
    for name in STEP_GAMES:
        for seed in range(per_game):
            task = (
                Task(game=name, seed=seed)
                if opponent == "default"
                else Task(game=name, seed=seed, opponent=opponent)
            )
            episode = Episode(task)
            player = ScriptedPlayer("random", seed)
            messages = [
                {"role": "system", "content": episode.system_prompt},
                {"role": "user", "content": episode.reset()},
            ]
            moves = []
            while not episode.done:
                move = player.move(messages)
                moves.append(move)
                result = episode.step(format_reply(move))
                messages += [
                    {"role": "assistant", "content": format_reply(move)},
                    {"role": "user", "content": result.observation},
                ]
            if episode.invalid_moves:
                raise MismatchError(f"{task.task_id}: the scripted moves were not all legal")
            games.append(Game(task, tuple(moves)))
    return games


# --- in process ----------------------------------------------------------------
Stepper = Callable[[Game], tuple[Callable[[str], Any], list[str]]]
"""Given a game: a ready (reset) object's step function and the actions to send."""


def _episode_text(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    episode = Episode(game.task)
    episode.reset()
    return episode.step, game.replies


def _episode_tool(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    episode = Episode(game.task)
    episode.reset()
    return episode.step_move, list(game.moves)


def _session(session: ClientSession, game: Game) -> tuple[Callable[[str], Any], list[str]]:
    """A framework's client session, opened on the game (``rollouts.drivers.<framework>``):
    its ``send`` and the replies."""
    session.open(game.task)
    return session.send, game.replies


def _core_text(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    return _session(CoreSession(), game)


def _steps_gem(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    return _session(GemSession(), game)


def _steps_skyrl_gym(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    return _session(SkyRLSession(), game)


def _steps_trl(game: Game) -> tuple[Callable[[str], Any], list[str]]:
    session = TRLSession()
    session.open(game.task)
    return session.move, list(game.moves)


def _time_game(stepper: Stepper, game: Game) -> float:
    """CPU seconds of the step calls of one game (a fresh, reset object, and
    Othello's move memos emptied, as in a fresh game)."""
    step, actions = stepper(game)
    clear_memos()
    clock = time.process_time
    start = clock()
    for action in actions:
        step(action)
    return clock() - start


def _time_steps(stepper: Stepper, games: Sequence[Game], passes: int = 1) -> tuple[float, int]:
    """CPU seconds spent in the step calls only (per game, the fastest of
    ``passes`` plays), and the number of steps."""
    total = sum(min(_time_game(stepper, g) for _ in range(passes)) for g in games)
    return total, sum(len(g.moves) for g in games)


def _time_pair(
    adapter: Stepper, bare: Stepper, games: Sequence[Game], passes: int, flip: bool
) -> tuple[float, float]:
    """(adapter seconds, bare seconds) over ``games``: each game is played
    ``passes`` times each way, the two alternating, and its fastest play of
    each counts (the least disturbed by other processes)."""
    a_total = b_total = 0.0
    for game in games:
        a_best = b_best = float("inf")
        for p in range(passes):
            if (p + flip) % 2:
                a_best = min(a_best, _time_game(adapter, game))
                b_best = min(b_best, _time_game(bare, game))
            else:
                b_best = min(b_best, _time_game(bare, game))
                a_best = min(a_best, _time_game(adapter, game))
        a_total += a_best
        b_total += b_best
    return a_total, b_total


ADAPTERS: tuple[tuple[str, str, Stepper, Stepper], ...] = tuple(
    (
        f.title,
        f.step_call,
        globals()[f"_steps_{f.id}"],
        _core_text if TEXT in f.modes else _episode_tool,
    )
    for f in FRAMEWORKS.values()
    if f.step_call
)
"""The in-process adapters timed against the bare Episode: every framework of the
manifest with a ``step_call`` (``rollouts.frameworks``), stepped by ``_steps_<id>``,
against core's text session or the Episode's ``step_move`` by its mode."""


def episode_rows(runs: int, games: Sequence[Game], default_games: Sequence[Game] = ()) -> list[Row]:
    """The bare Episode's step cost (against a random opponent, and against
    the default one when ``default_games`` are given), and each in-process
    adapter's overhead."""
    rows = []
    for stepper in (_episode_text, _episode_tool):  # untimed: lazily built tables, caches
        _time_steps(stepper, games)
    for label, stepper in (
        ("text replies, `step`", _episode_text),
        ("tool moves, `step_move`", _episode_tool),
    ):
        per_step = []
        for _ in range(runs):
            seconds, steps = _time_steps(stepper, games, PASSES)
            per_step.append(seconds / steps * 1e6)
        rows.append(
            Row(
                "Turn loop and in-process adapters",
                f"Episode step ({label})",
                f"{statistics.median(per_step):.1f} µs/step",
                "",
                tuple(per_step),
                "µs",
                None,
                f"{steps} steps a run: {len(games) // len(STEP_GAMES)} games each of "
                + ", ".join(STEP_GAMES)
                + ", random opponent",
            )
        )
    if default_games:
        _time_steps(_episode_text, default_games)
        per_step = []
        for _ in range(runs):
            seconds, steps = _time_steps(_episode_text, default_games, PASSES)
            per_step.append(seconds / steps * 1e6)
        rows.append(
            Row(
                "Turn loop and in-process adapters",
                "Episode step (text replies, default opponent)",
                f"{statistics.median(per_step):.0f} µs/step",
                "",
                tuple(per_step),
                "µs",
                None,
                f"{steps} steps a run, the same games against the default opponent "
                "(minimax, depth 2): its search is most of the step",
            )
        )
    for name, call, adapter, bare in ADAPTERS:
        _time_steps(adapter, games[:1])  # first use imports the framework: not timed
        overheads = []
        mine = []
        base = []
        for i in range(runs):
            a, b = _time_pair(adapter, bare, games, PASSES, bool(i % 2))
            mine.append(a)
            base.append(b)
            overheads.append((a - b) / b * 100)
        steps = sum(len(g.moves) for g in games)
        rows.append(
            Row(
                "Turn loop and in-process adapters",
                f"{name} overhead over the Episode",
                f"{statistics.median(mine) / steps * 1e6:.1f} µs/step",
                f"{statistics.median(base) / steps * 1e6:.1f} µs/step",
                tuple(overheads),
                "%",
                Target(10.0, at_least=False),
                call + f" against the bare Episode on the same steps (fastest of {PASSES} plays "
                "of each game, the two alternating)",
            )
        )
    return rows


# --- over HTTP -------------------------------------------------------------------
def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _latency_row(name: str, latencies_ms: Sequence[float], note: str) -> list[Row]:
    p50 = _percentile(latencies_ms, 50)
    p99 = _percentile(latencies_ms, 99)
    return [
        Row(
            "HTTP adapters (wall clock, server in its own process)",
            f"{name} step latency p50",
            f"{p50:.2f} ms",
            "",
            (p50,),
            "ms",
            None,
            note,
        ),
        Row(
            "HTTP adapters (wall clock, server in its own process)",
            f"{name} step latency p99",
            f"{p99:.2f} ms",
            "",
            (p99,),
            "ms",
            None,
            f"{len(latencies_ms)} steps",
        ),
    ]


def _session_latencies(make: Callable[[], ClientSession], games: Sequence[Game]) -> list[float]:
    """Milliseconds of each ``send`` (one reply -> observation) of the games, a fresh
    session (``rollouts.drivers.<framework>``) per game."""
    latencies = []
    for game in games:
        with make() as session:
            session.open(game.task)
            for reply in game.replies:
                start = time.perf_counter()
                turn = session.send(reply)
                latencies.append((time.perf_counter() - start) * 1e3)
            if not turn.done:
                raise MismatchError(f"{game.task.task_id}: {type(session).__name__} did not finish")
    return latencies


def _openenv_latencies(games: Sequence[Game]) -> list[float]:
    from rollouts.model.servers import start_server

    argv = [sys.executable, "-m", "adapters.openenv", "--host", "127.0.0.1", "--port", "{port}"]
    with start_server(argv, "/health", cwd=ROOT) as server:
        return _session_latencies(lambda: OpenEnvSession(server.base_url), games)


def _nemo_latencies(games: Sequence[Game]) -> list[float]:
    from rollouts.drivers.nemo_gym import nemo_python
    from rollouts.model.servers import start_server

    argv = ["python", "-m", "adapters.nemo_gym", "--style", "gymnasium", "--port", "{port}"]
    with start_server(argv, "/", {"PYTHONUNBUFFERED": "1"}, str(nemo_python()), cwd=ROOT) as srv:
        return _session_latencies(lambda: NemoGymSession(srv.base_url, timeout=60), games)


def http_rows(games: Sequence[Game]) -> tuple[list[Row], list[str]]:
    """p50/p99 step latency of the OpenEnv WebSocket client and the NeMo Gym
    gymnasium server; a framework that cannot run here is reported, not faked."""
    rows: list[Row] = []
    skipped: list[str] = []
    steps_note = "scripted replies, no model; one WebSocket session per game"
    try:
        rows += _latency_row("OpenEnv (WebSocket client)", _openenv_latencies(games), steps_note)
    except ImportError as e:
        skipped.append(f"OpenEnv latency not measured: {e}")
    from rollouts.drivers.nemo_gym import nemo_python

    if nemo_python().exists():
        rows += _latency_row(
            "NeMo Gym (gymnasium /step, HTTP)",
            _nemo_latencies(games),
            "scripted replies, no model; httpx keep-alive client, one session per game",
        )
    else:
        from rollouts.drivers.nemo_gym import ROOT

        where = nemo_python()
        shown = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
        skipped.append(f"NeMo Gym latency not measured: {shown} is missing (make setup-nemo)")
    return rows, skipped


# --- import core ---------------------------------------------------------------------
_IMPORT_PROBE = (
    "import time; w = time.perf_counter(); c = time.process_time(); import core; "
    "print(time.perf_counter() - w, time.process_time() - c)"
)


def import_rows(n: int) -> list[Row]:
    """``import core`` in ``n`` fresh interpreters (the import alone, not start-up)."""
    wall = []
    cpu = []
    for _ in range(n):
        out = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        w, c = out.stdout.split()
        wall.append(float(w) * 1e3)
        cpu.append(float(c) * 1e3)
    return [
        Row(
            "Start-up",
            "`import core` (fresh interpreter)",
            f"{statistics.median(wall):.1f} ms",
            "",
            tuple(wall),
            "ms",
            Target(50.0, at_least=False),
            f"wall clock, median of {n} subprocesses; CPU {statistics.median(cpu):.1f} ms",
        )
    ]
