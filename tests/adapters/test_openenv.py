"""The OpenEnv adapter: the Environment over core.Episode (typed actions, errors, the
reward breakdown, State), and the documented server with concurrent WebSocket sessions."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv", reason="openenv-core is not installed")

from adapters.openenv import (
    GameAction,
    GameEnvClient,
    GameEnvironment,
    GameObservation,
    create_game_app,
)
from core import (
    Episode,
    EpisodeFinishedError,
    EpisodeNotStartedError,
    Task,
    TaskError,
    make_tasks,
)
from core.players import ScriptedPlayer

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "openenv.md").read_text(encoding="utf-8")


# --- the Environment, in process ----------------------------------------------------------


def test_reset_takes_a_task_row_or_task_fields() -> None:
    env = GameEnvironment(game="tictactoe")
    row = Task(game="othello", seed=4, model_player=1).to_dict()
    obs = env.reset(task=row)
    assert obs.text == Episode(row).reset() and not obs.done
    assert obs.system_prompt == Episode(row).system_prompt
    assert env.state.task == row and env.state.step_count == 0
    env.reset(seed=9, model_player=1, episode_id="ep-1")
    assert env.state.task == Task(game="tictactoe", seed=9, model_player=1).to_dict()
    assert env.state.episode_id == "ep-1"
    with pytest.raises(TypeError, match="not both"):
        env.reset(task=row, depth=3)
    with pytest.raises(TaskError, match="unknown task fields"):
        env.reset(colour="blue")


def test_reset_with_tools_gives_core_s_tool_prompt_and_schema() -> None:
    row = Task(game="connect_four", seed=1).to_dict()
    episode = Episode(row)
    obs = GameEnvironment().reset(task=row, tools=True)
    assert obs.system_prompt == episode.tool_system_prompt != episode.system_prompt
    assert obs.tools == [episode.tool_schema]
    assert GameEnvironment().reset(task=row).tools is None


def test_an_action_is_a_reply_or_a_move_never_both_nor_neither() -> None:
    from pydantic import ValidationError

    GameAction(reply="<move>4</move>")
    GameAction(move="4")
    for bad in ({}, {"reply": "x", "move": "4"}):
        with pytest.raises(ValidationError, match="exactly one"):
            GameAction(**bad)


def test_step_before_reset_is_an_error() -> None:
    with pytest.raises(EpisodeNotStartedError):
        GameEnvironment().step(GameAction(move="4"))


def test_replies_and_moves_take_core_s_path_and_the_state_is_the_trajectory() -> None:
    row = Task(game="tictactoe", seed=2).to_dict()
    env = GameEnvironment()
    obs = env.reset(task=row)
    assert obs.legal_moves == [str(c) for c in range(9)]
    actions: list[str | dict[str, str]] = []
    player = ScriptedPlayer("minimax:2", seed=0)
    messages = [
        {"role": "system", "content": obs.system_prompt},
        {"role": "user", "content": obs.text},
    ]
    bad = iter(["I pass.", {"move": "9"}])  # a format error, then an illegal structured move
    while not obs.done:
        action: str | dict[str, str] = next(bad, None) or player.reply(messages)
        actions.append(action)
        obs = env.step(
            GameAction(**action) if isinstance(action, dict) else GameAction(reply=action)
        )
        assert isinstance(obs, GameObservation)
        if not isinstance(action, dict):
            messages += [
                {"role": "assistant", "content": action},
                {"role": "user", "content": obs.text},
            ]
    replay = Episode.replay(row, actions)
    assert env.state.trajectory == replay.to_dict()
    assert env.state.step_count == len(actions)
    assert [e["error"] for e in replay.events[:2]] == ["format", "invalid_move"]
    assert obs.reward == pytest.approx(replay.reward().total)
    assert obs.reward_breakdown == replay.reward().to_dict()
    assert obs.legal_moves is None and obs.info["result"] == replay.result
    with pytest.raises(EpisodeFinishedError):
        env.step(GameAction(move="4"))


def test_wordle_lists_no_legal_moves() -> None:
    obs = GameEnvironment(game="wordle").reset(seed=1)
    assert obs.legal_moves is None and not obs.done


def test_the_app_allows_concurrent_sessions() -> None:
    assert GameEnvironment.SUPPORTS_CONCURRENT_SESSIONS is True
    app = create_game_app("othello", max_sessions=8)
    assert any(getattr(r, "path", "") == "/ws" for r in app.routes)


# --- the documented server ------------------------------------------------------------------


def _documented(prefix: str, lang: str = "bash") -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", DOC, flags=re.S)
    found = [  # a command as the docs type it (.venv/bin/python ...), as argv from this venv
        b if lang == "python" else line.removeprefix(".venv/bin/")
        for b in blocks
        for line in ([b] if lang == "python" else b.splitlines())
        if line.removeprefix(".venv/bin/").startswith(prefix)
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    from rollouts.model.servers import start_server

    argv = shlex.split(_documented("python -m adapters.openenv"))
    argv[argv.index("--port") + 1] = "{port}"
    argv[argv.index("--max-sessions") + 1] = "8"
    with start_server(argv, "/health") as server:
        yield server.base_url


@pytest.mark.server
def test_health(server_url: str) -> None:
    with urllib.request.urlopen(f"{server_url}/health", timeout=10) as response:
        assert json.load(response) == {"status": "healthy"}


@pytest.mark.server
def test_concurrent_sessions_play_independent_games(server_url: str) -> None:
    """Six sessions open at once, stepped round-robin: each ends as core replays it."""
    tasks = make_tasks(3, seed=1, game="tictactoe") + make_tasks(3, seed=1, game="othello")

    async def play() -> list[tuple[list[str], Any, Any]]:
        clients = [GameEnvClient(base_url=server_url) for _ in tasks]
        try:
            results = [await c.reset(task=t.to_dict()) for c, t in zip(clients, tasks, strict=True)]
            convs = [
                [
                    {"role": "system", "content": r.observation.system_prompt},
                    {"role": "user", "content": r.observation.text},
                ]
                for r in results
            ]
            players = [ScriptedPlayer("noisy:0.3/minimax:1", seed=i) for i in range(len(tasks))]
            replies: list[list[str]] = [[] for _ in tasks]
            while not all(r.done for r in results):
                live = [i for i, r in enumerate(results) if not r.done]
                for i in live:
                    replies[i].append(players[i].reply(convs[i]))
                stepped = await asyncio.gather(
                    *(clients[i].step(GameAction(reply=replies[i][-1])) for i in live)
                )
                for i, r in zip(live, stepped, strict=True):
                    results[i] = r
                    convs[i] += [
                        {"role": "assistant", "content": replies[i][-1]},
                        {"role": "user", "content": r.observation.text},
                    ]
            states = [await c.state() for c in clients]
            return list(zip(replies, results, states, strict=True))
        finally:
            for c in clients:
                await c.disconnect()

    for task, (replies, result, state) in zip(tasks, asyncio.run(play()), strict=True):
        replay = Episode.replay(task, replies)
        assert state.trajectory == replay.to_dict()
        assert state.step_count == len(replies)
        assert result.observation.reward_breakdown == replay.reward().to_dict()
        assert result.reward == pytest.approx(replay.reward().total)


@pytest.mark.server
def test_errors_reach_the_client(server_url: str) -> None:
    with GameEnvClient(base_url=server_url).sync() as env:
        with pytest.raises(RuntimeError, match="call reset"):
            env.step(GameAction(move="4"))
        with pytest.raises(RuntimeError, match="game must be one of"):
            env.reset(task={"game": "chess"})
        assert not env.reset(seed=3).done  # the session survives its errors


@pytest.mark.server
def test_the_documented_client_snippet(server_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = _documented("from adapters.openenv", lang="python")
    argv = shlex.split(_documented("python -m adapters.openenv"))
    port = argv[argv.index("--port") + 1]
    exec(code.replace(f"http://127.0.0.1:{port}", server_url), {})
    breakdown, result = capsys.readouterr().out.splitlines()[-2:]
    assert "'total'" in breakdown and result in ("win", "draw", "loss")
