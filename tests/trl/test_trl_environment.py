"""The TRL environment_factory adapter: its public surface, its game, its rewards.

No training here (fast): the environment is a plain class, driven as
``GRPOTrainer`` drives it.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from adapters.trl import (
    COMPONENTS,
    EnvironmentNotResetError,
    GameEnvironment,
    component_key,
    dataset_rows,
    environment_class,
    prompt_messages,
    reward_functions,
    reward_weights,
    task_of,
)
from core.episode import Episode
from core.games import list_games, make_game
from core.prompts import tool_schema
from core.rewards import DEFAULT_WEIGHTS
from core.tasks import Task, make_tasks


def _public_functions(cls: type) -> set[str]:
    # Exactly what GRPOTrainer inspects: functions on the class, minus private ones.
    return {
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize("game", list_games())
def test_public_methods_are_reset_one_tool_and_get_reward(game: str) -> None:
    # Every other public function would become a tool the model can call: a
    # tool that changes anything but the board (the result, the reward) is a
    # reward hack.
    for cls in (GameEnvironment, environment_class(game)):
        assert _public_functions(cls) == {"reset", "make_move", "get_reward"}
        tools = _public_functions(cls) - {"reset", "get_reward"}
        assert tools == {"make_move"}
        # The read-only episode view is a property, not a tool, and cannot be set.
        assert isinstance(inspect.getattr_static(cls, "episode"), property)
        assert inspect.getattr_static(cls, "episode").fset is None


@pytest.mark.parametrize("game", list_games())
def test_tool_schema_is_cores(game: str) -> None:
    from transformers.utils import get_json_schema

    env = environment_class(game)()
    assert get_json_schema(env.make_move) == tool_schema(make_game(game))
    assert environment_class(game) is environment_class(game)


def test_plays_the_same_game_as_core() -> None:
    task = Task(game="tictactoe", seed=5, opponent="random")
    row = dataset_rows([task], tools=True)[0]
    env = GameEnvironment()
    first = env.reset(**row)  # every column, prompt included, as TRL passes it
    reference = Episode(task)
    assert first == reference.reset()
    for move in ["4", "4", "zz", "0", "8", "2", "6", "1", "3", "5", "7"]:
        if reference.done:
            break
        assert env.make_move(move=move) == reference.step_move(move).observation
    assert env.episode.to_dict() == reference.to_dict()
    assert env.get_reward() == reference.reward().total


def test_bad_moves_are_episode_events_not_exceptions() -> None:
    env = environment_class("tictactoe")()
    env.reset(game="tictactoe", seed=1, max_invalid_moves=1)
    reply = env.make_move(move="not a cell")
    assert "rejected" in reply
    event = env.episode.events[-1]
    assert event["error"] == "invalid_move"


@pytest.mark.parametrize(
    "arguments",
    [{"move": 4}, {"move": None}, {"move": ["4"]}, {"square": "4"}, {"move": "4", "why": "x"}, {}],
    ids=repr,
)
def test_tool_arguments_reach_core_as_trl_passes_them(arguments: dict[str, Any]) -> None:
    """TRL calls ``make_move(**arguments)``: a number, a missing ``move`` or an extra
    key is core's format rejection (an event, a penalty), never a TypeError that TRL
    would turn into a free tool error, and never str()-ed into a move."""
    env = environment_class("tictactoe")()
    env.reset(game="tictactoe", seed=1)
    reference = Episode(Task(game="tictactoe", seed=1))
    reference.reset()
    assert env.make_move(**arguments) == reference.step_tool(arguments).observation
    assert env.episode.to_dict() == reference.to_dict()
    assert env.episode.events[-1]["error"] == "format"


def test_finished_game_answers_with_its_final_observation() -> None:
    env = GameEnvironment()
    env.reset(game="tictactoe", seed=2, max_invalid_moves=0)
    final = env.make_move(move="x")  # one invalid reply over a budget of 0: forfeit
    assert env.episode.done and env.episode.termination == "forfeit"
    assert env.make_move(move="4") == final == env.episode.observation
    assert len(env.episode.events) == 1


def test_unfinished_game_is_settled_by_core() -> None:
    env = GameEnvironment()
    env.reset(game="tictactoe", seed=3)
    env.make_move(move="4")
    assert not env.episode.done
    total = env.get_reward()  # the model stopped calling the tool
    # Core's Episode.settle: scored like a turn cap, a loss by default.
    assert env.episode.done and env.episode.termination == "stopped"
    assert env.episode.result == env.episode.task.turn_cap_result == "loss"
    assert len(env.episode.events) == 1
    assert total == env.episode.reward().total == env.get_reward()
    assert env.episode.finish() is env.episode  # settled once: finish() changes nothing
    reference = Episode(env.episode.task)
    reference.reset()
    reference.step_move("4")
    reference.settle()
    assert reference.to_dict() == env.episode.to_dict()


def test_use_before_reset_raises() -> None:
    env = GameEnvironment()
    with pytest.raises(EnvironmentNotResetError):
        env.make_move(move="4")
    with pytest.raises(EnvironmentNotResetError):
        env.get_reward()


def test_dataset_rows_carry_the_task_and_the_right_system_prompt() -> None:
    tasks = make_tasks(4, seed=0, num_groups=2)
    tool_rows = dataset_rows(tasks, tools=True)
    text_rows = dataset_rows(tasks, tools=False)
    for task, tool_row, text_row in zip(tasks, tool_rows, text_rows, strict=True):
        episode = Episode(task)
        assert Task.from_dict(tool_row, strict=False) == task
        assert tool_row["prompt"][0]["content"] == episode.tool_system_prompt
        assert tool_row["prompt"][-1] == {"role": "user", "content": ""}
        assert text_row["prompt"][0]["content"] == episode.system_prompt
        assert text_row["prompt"][1]["content"] == episode.reset()
        assert task_of(text_row["prompt"]) == task
    assert prompt_messages(tasks[0], tools=True) == tool_rows[0]["prompt"]


def test_make_dataset_builds_an_arrow_table() -> None:
    from adapters.trl import make_dataset

    ds = make_dataset(make_tasks(3, seed=1), tools=False)
    assert len(ds) == 3 and "prompt" in ds.column_names and "seed" in ds.column_names
    assert task_of(ds[0]["prompt"]) == make_tasks(3, seed=1)[0]


def test_reward_functions_read_environments_and_rollout_keys() -> None:
    envs = []
    for seed in range(3):
        env = GameEnvironment()
        env.reset(game="tictactoe", seed=seed, opponent="random")
        env.make_move(move="4")
        envs.append(env)
    funcs = reward_functions()
    assert [f.__name__ for f in funcs] == [f"reward_{name}" for name in COMPONENTS]
    logged: dict[str, float] = {}
    by_env = {
        f.__name__: f([None] * 3, environments=envs, log_metric=logged.__setitem__) for f in funcs
    }
    for i, env in enumerate(envs):  # the first call settled every game
        components = env.episode.reward().components
        for name in COMPONENTS:
            assert by_env[f"reward_{name}"][i] == components[name]
    assert set(logged) == {"game/turns", "game/valid_rate", "game/win_rate", "game/loss_rate"}
    keys = {component_key(n): [e.episode.reward().components[n] for e in envs] for n in COMPONENTS}
    by_keys = {f.__name__: f([None] * 3, **keys) for f in funcs}
    assert by_keys == by_env
    with pytest.raises(KeyError):
        funcs[0]([None])


def test_reward_weights() -> None:
    assert reward_weights("rollout_func") == [DEFAULT_WEIGHTS[n] for n in COMPONENTS]
    # env_factory: get_reward (weight 1, added by TRL) is the rubric total already.
    assert reward_weights("env_factory") == [0.0] * len(COMPONENTS)
    with pytest.raises(ValueError):
        reward_weights("vllm")
