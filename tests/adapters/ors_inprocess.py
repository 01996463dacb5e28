"""In-process checks of the ORS adapter: run in .venv-ors by tests/adapters/test_ors.py
(``python -m pytest tests/adapters/ors_inprocess.py``); skipped without openreward."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("openreward")

from openreward.api.environments.client import convert_tool_response
from openreward.environments import server as ors_server

from adapters.ors import client
from adapters.ors.env import (
    ENV_NAME,
    GameBridge,
    MoveArguments,
    environment_class,
)
from adapters.ors.server import create_app
from core import Episode, Task, list_games, make_tasks
from core.episode import ToolCall
from core.inputs import RAW_ARGUMENTS, unwrap_arguments, wrap_arguments
from core.players import ScriptedPlayer
from rollouts.drivers import ors as driver


def _started(task: Task) -> GameBridge:
    env = GameBridge(task_spec=task.to_dict())
    env.setup()
    return env


def test_names_agree() -> None:
    assert ENV_NAME == driver.ENV_NAME == client.ENV_NAME == GameBridge.name().lower()


def test_tools_listed_per_task_with_cores_schema() -> None:
    listed = GameBridge.list_tools()
    assert listed.tools == []  # make_move is per task (its examples differ per game)
    assert listed.terminal_tool is not None and listed.terminal_tool.name == "final_reply"
    for game in list_games():
        env = _started(Task(game=game, seed=1))
        tools = env.list_task_tools()
        specs = convert_tool_response(tools.model_dump())  # what the client's list_tools() gives
        assert [driver.chat_tool(spec) for spec in specs] == [env.episode.tool_schema]


def test_splits_are_make_tasks_rows_and_copies_keep_their_own() -> None:
    names = [s.name for s in GameBridge.list_splits()]
    assert names[:2] == ["train", "test"] and "nim-test" in names
    rows = GameBridge.list_tasks("nim-train")
    assert rows == [t.to_dict() for t in make_tasks(32, seed=0, game="nim")]
    assert GameBridge.list_tasks("nim-test") == [
        t.to_dict() for t in make_tasks(32, seed=1, game="nim")
    ]
    assert len(GameBridge.list_tasks("train")) == 32 * len(list_games())
    small = environment_class(["tictactoe"], tasks_per_game=3, seed=5)
    assert [s.name for s in small._list_splits_cached()] == [
        "train",
        "test",
        "tictactoe-train",
        "tictactoe-test",
    ]
    assert [s.name for s in GameBridge._list_splits_cached()] == names
    with pytest.raises(ValueError):
        environment_class(["chess"])


def test_prompt_is_cores_tool_prompt_then_first_observation() -> None:
    task = Task(game="connect_four", seed=4, model_player=1)
    env = _started(task)
    reference = Episode(task)
    messages = env.get_messages()
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].blocks[0].text == reference.tool_system_prompt
    assert messages[1].blocks[0].text == reference.reset()
    assert [b.text for b in env.get_prompt()] == [m.blocks[0].text for m in messages]


def test_arguments_reach_core_unchanged_and_reward_comes_only_at_the_end() -> None:
    # Passed through as they came: no str coercion, no default filled in.
    assert MoveArguments(move=4).model_dump(exclude_unset=True) == {"move": 4}
    assert MoveArguments(square="4").model_dump(exclude_unset=True) == {"square": "4"}
    task = Task(game="tictactoe", seed=3)
    env = _started(task)
    out = asyncio.run(env.make_move(MoveArguments(move=4)))  # the tools are async
    assert out.reward is None and not out.finished
    assert out.metadata["info"]["error"] == "format"
    assert env.episode.events[0]["reply"] == {"move": 4}  # recorded as it came
    player = ScriptedPlayer("minimax:9", seed=0)
    messages = [{"role": "system", "content": env.episode.tool_system_prompt}]
    messages.append({"role": "user", "content": out.blocks[0].text})
    moves = [4]
    while not out.finished:
        move = player.move(messages)
        moves.append(move)
        out = asyncio.run(env.make_move(MoveArguments(move=move)))
        assert (out.reward is None) != out.finished
        messages.append({"role": "tool", "content": out.blocks[0].text})
    replayed = Episode.replay(task, [ToolCall({"move": m}) for m in moves])
    assert out.metadata["trajectory"] == replayed.to_dict()
    assert out.reward == replayed.reward().total == out.metadata["reward"]["total"]


def test_terminal_reply_settles_the_game() -> None:
    task = Task(game="othello", seed=2, opening_plies=2)
    env = _started(task)
    assert GameBridge.list_tools().terminal_tool.arg is None  # the text is not a move
    out = asyncio.run(env.final_reply())
    assert out.finished and out.metadata["trajectory"]["termination"] == "stopped"
    replayed = Episode.replay(task, [])
    replayed.settle()
    assert (
        out.metadata["trajectory"] == replayed.to_dict() and out.reward == replayed.reward().total
    )


def test_the_private_server_fields_the_limits_use_exist() -> None:
    """adapters/ors/server.py reads openreward 0.1.167's session table."""
    app = create_app(session_timeout_s=30)
    server = app.state.ors_server
    for name in (
        "_active_envs",
        "_active_toolsets",
        "_last_ping",
        "_setup_tasks",
        "_ready",
        "_setup_errors",
    ):
        assert isinstance(getattr(server, name), dict), name
    assert callable(ors_server._delete_session)
    with pytest.raises(ValueError):
        create_app(session_timeout_s=901)


def test_a_tool_call_that_is_not_an_object_is_judged_by_core_and_play_goes_on() -> None:
    """Arguments that are not a JSON object (text that is not JSON, a list) travel
    wrapped (``core.inputs.wrap_arguments``: ORS carries objects only; openreward refused
    the call, ``bad_input_shape``, and the task failed); core judges the value as it
    came, an invalid reply, and the game goes on, as on OpenEnv."""
    for raw in ("{move: 4", [4], 4, {RAW_ARGUMENTS: 1}):
        carried = wrap_arguments(raw)
        assert isinstance(carried, dict) and unwrap_arguments(carried) == raw
    assert wrap_arguments(None) == {} and wrap_arguments({"move": 4}) == {"move": 4}
    task = Task(game="tictactoe", seed=3)
    env = _started(task)
    out = asyncio.run(env.make_move(MoveArguments(**wrap_arguments("{move: 4"))))
    assert not out.finished and out.metadata["info"]["error"] == "format"
    assert env.episode.events[0]["reply"] == "{move: 4"  # recorded as it came
    out = asyncio.run(env.make_move(MoveArguments(move="4")))
    assert out.metadata["info"].get("error") is None and len(env.episode.events) == 2


def test_the_driver_session_plays_on_after_a_non_json_tool_call() -> None:
    """The same through the driver's session, openreward's client and the server."""
    from rollouts.drivers.ors import ORSSession

    drv = driver.ORSDriver()
    with drv.session(base_url="http://127.0.0.1:9/v1", model="none", api_key=None) as ctx:
        session = ORSSession(ctx.extra["env"])
        with session:
            session.open(Task(game="tictactoe", seed=3))
            turn = session.call("{move: 4")  # the task failed here (bad_input_shape)
            assert not turn.done and turn.observation
            turn = session.call({"move": "4"})
            assert not turn.done
