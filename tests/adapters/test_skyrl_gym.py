"""The SkyRL Gym adapter: registration, init/step/metrics, SkyRL's max_turns cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed: pip install -e '.[skyrl]'")

import skyrl_gym

from adapters.skyrl_gym import ENV_ID, GameTextEnv, make_row, register
from core.episode import Episode
from core.players import ScriptedPlayer
from core.tasks import Task


def make(extras: dict[str, Any]) -> Any:
    register()
    return skyrl_gym.make(ENV_ID, env_config={}, extras=extras)


def test_register_twice_is_harmless() -> None:
    register()
    register()
    assert isinstance(make({"task": {"game": "tictactoe"}}), GameTextEnv)


@pytest.mark.parametrize("game", ["connect_four", "othello", "wordle"])
def test_whole_game_matches_core_replay(game: str) -> None:
    task = Task(game=game, seed=21)
    env = make({"task": task.to_dict(), "max_turns": task.turn_limit()})
    messages, info = env.init(make_row(task)["prompt"])
    episode = Episode(task)
    assert messages == [
        {"role": "system", "content": episode.system_prompt},
        {"role": "user", "content": episode.reset()},
    ]
    assert info["task"] == task.to_dict()
    player = ScriptedPlayer("noisy:0.3/minimax:1", 0)
    replies: list[str] = []
    while True:
        reply = player.reply(messages)
        replies.append(reply)
        out = env.step(reply)
        if out["done"]:
            break
        assert out["reward"] == 0.0 and len(out["observations"]) == 1
        messages += [{"role": "assistant", "content": reply}, *out["observations"]]
    reference = Episode.replay(task, replies)
    assert out["observations"] == []
    assert out["metadata"]["trajectory"] == reference.to_dict()
    assert out["reward"] == reference.reward().total
    metrics = env.get_metrics()
    assert metrics["reward"] == reference.reward().total
    assert metrics["turns"] == len(replies)
    assert metrics["win"] == float(reference.result == "win")
    for name, value in reference.reward().components.items():
        assert metrics[f"reward/{name}"] == value
    from core.metrics import RATE_KEYS, outcome_rates

    rates = outcome_rates([reference.to_dict()])
    assert {k: metrics[k] for k in RATE_KEYS} == {k: rates[k] for k in RATE_KEYS}


def test_skyrl_max_turns_settles_the_game_in_core() -> None:
    """SkyRL's generator cap ends the game on the capped step: core settles it
    (as core's own Episode.settle after the same replies), the reward is in the
    step's reward slot, and the task is left as the row gave it."""
    task = Task(game="othello", seed=2)
    env = make({"task": task.to_dict(), "max_turns": 2})
    assert env.episode.task == task and env.max_turns == 2
    env.init([])
    assert not env.step("<move>nonsense</move>")["done"]
    out = env.step("<move>d3</move>")
    assert out["done"]
    assert out["metadata"]["termination"] == "stopped"
    assert out["metadata"]["result"] == "loss"  # the task's turn_cap_result
    reference = Episode.replay(task, ["<move>nonsense</move>", "<move>d3</move>"])
    reference.settle()
    assert out["metadata"]["trajectory"] == reference.to_dict()
    assert out["reward"] == reference.reward().total
    assert reference.reward().components["margin"] == -1.0


def test_a_generous_cap_leaves_the_task_alone() -> None:
    task = Task(game="tictactoe", seed=1)
    env = make({"task": task.to_dict(), "max_turns": 1000})
    assert env.episode.task == task


def test_flat_row_fields_are_a_task() -> None:
    env = make({"game": "wordle", "seed": 8, "reward_spec": {}, "max_turns": 100})
    assert env.episode.task == Task(game="wordle", seed=8)


def test_metrics_before_the_end_hold_no_reward() -> None:
    env = make({"task": {"game": "tictactoe"}})
    env.init([])
    env.step("<move>4</move>")
    assert env.get_metrics() == {"turns": 1}


def _skyrl_env_config(path: str = "adapters/skyrl_gym/gamebridge.yaml") -> Any:
    """``env_config`` as SkyRL's generator builds it from the YAML (OmegaConf, as
    skyrl-train loads it): ``environment.skyrl_gym.get(env_class)``."""
    from omegaconf import DictConfig, OmegaConf

    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / path)
    return cfg.environment.env_class, cfg.environment.skyrl_gym.get(
        cfg.environment.env_class, DictConfig({})
    )


def test_env_config_from_skyrl_yaml_sets_the_task_defaults() -> None:
    env_class, env_config = _skyrl_env_config()
    register()
    env = skyrl_gym.make(env_class, env_config=env_config, extras={"task": {"seed": 5}})
    task = env.episode.task
    assert task == Task(
        game="connect_four",
        seed=5,
        depth=3,
        random_move_prob=0.1,
        max_invalid_moves=2,
        turn_cap_result="draw",
    )
    messages, _ = env.init([])
    assert "Connect Four" in messages[0]["content"]
    # a row's own fields win over the config; flat rows get the defaults too
    row = {"task": {"game": "tictactoe", "depth": 1}}
    assert skyrl_gym.make(env_class, env_config=env_config, extras=row).episode.task.depth == 1
    flat = skyrl_gym.make(env_class, env_config=env_config, extras={"seed": 2, "max_turns": 30})
    assert flat.episode.task.game == "connect_four" and flat.episode.task.seed == 2


def test_make_row_of_a_partial_task_leaves_the_rest_to_env_config() -> None:
    _, env_config = _skyrl_env_config()
    row = make_row({"seed": 8}, env_config=env_config)
    assert row["task"] == {"seed": 8}
    env = make({**{k: v for k, v in row.items() if k != "prompt"}})
    assert env.episode.task.game == "tictactoe"  # no env_config: core's defaults
    register()
    env = skyrl_gym.make(ENV_ID, env_config=env_config, extras={"task": row["task"]})
    assert env.init(row["prompt"])[0] == row["prompt"]  # the row's prompt is that game's


def test_an_unknown_env_config_key_is_a_task_error() -> None:
    register()
    with pytest.raises(ValueError, match="unknown task fields \\['colour'\\] in the defaults"):
        skyrl_gym.make(ENV_ID, env_config={"colour": "red"}, extras={"task": {}})
