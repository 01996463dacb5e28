"""The GEM adapter: registration, seeding, the 5-tuple, the trajectory in info."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("gem", reason="gem-llm is not installed: pip install -e '.[gem]'")

from adapters.gem import ID_PREFIX, GameEnv, register
from core.episode import Episode, EpisodeFinishedError, EpisodeNotStartedError
from core.games import list_games
from core.players import ScriptedPlayer
from core.tasks import Task


def play(env: Any, policy: str = "noisy:0.3/minimax:1") -> tuple[list[str], tuple[Any, ...]]:
    """A whole game through ``env``; the replies and the last step's 5-tuple."""
    player = ScriptedPlayer(policy, 0)
    _, info = env.reset()
    messages = [
        {"role": "system", "content": info["system_prompt"]},
        {"role": "user", "content": info["observation"]},
    ]
    replies: list[str] = []
    while True:
        reply = player.reply(messages)
        replies.append(reply)
        out = env.step(reply)
        if out[2] or out[3]:
            return replies, out
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": out[0]}]


def test_register_is_idempotent_and_covers_every_game() -> None:
    import gem
    from gem.envs.registration import ENV_REGISTRY

    register()
    register()
    for game in list_games():
        assert ENV_REGISTRY[ID_PREFIX + game].kwargs == {"game": game}
        env = gem.make(ID_PREFIX + game, seed=4)
        assert env.task == Task(game=game, seed=4)


def test_import_leaves_the_root_logger_alone() -> None:
    code = "import logging, adapters.gem; r = logging.getLogger(); print(len(r.handlers), r.level)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", str(30)]  # no handler added, WARNING kept


@pytest.mark.parametrize("game", ["tictactoe", "othello", "wordle"])
def test_trajectory_in_final_info_equals_core_replay(game: str) -> None:
    task = Task(game=game, seed=9)
    replies, (obs, reward, terminated, truncated, info) = play(GameEnv(task=task.to_dict()))
    reference = Episode.replay(task, replies)
    assert terminated and not truncated
    assert info["trajectory"] == reference.to_dict()
    assert info["reward"] == reference.reward().to_dict()
    assert reward == reference.reward().total
    assert obs == reference.observation


def test_reset_never_seeds_global_random() -> None:
    np = pytest.importorskip("numpy")
    env = GameEnv(game="wordle")
    random.seed(123)
    np.random.seed(123)
    expected = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    env.reset(seed=5)
    env.step("<move>crane</move>")
    assert (random.random(), np.random.random()) == expected


def test_seed_kwarg_and_reset_seed_pick_the_game() -> None:
    env = GameEnv(game="wordle", seed=1)
    first, _ = env.reset()
    again, _ = env.reset()  # same task, same game
    assert first == again
    _, info = env.reset(seed=2)
    assert info["task"]["seed"] == 2 and env.task.seed == 2
    a = play(GameEnv(game="wordle", seed=2), "minimax:1")[0]
    b = play(GameEnv(game="wordle", seed=3), "minimax:1")[0]
    assert a != b  # different hidden words


def test_turn_cap_is_truncated_and_settled() -> None:
    env = GameEnv(task={"game": "tictactoe", "max_turns": 1, "turn_cap_result": "draw"})
    env.reset()
    _, reward, terminated, truncated, info = env.step("<move>4</move>")
    assert terminated and truncated
    assert info["termination"] == "turn_cap" and info["result"] == "draw"
    assert reward == info["reward"]["total"]


def test_out_of_order_steps_raise_core_errors() -> None:
    env = GameEnv(task={"game": "tictactoe", "max_turns": 1})
    with pytest.raises(EpisodeNotStartedError):
        env.step("<move>4</move>")
    env.reset()
    env.step("<move>4</move>")
    with pytest.raises(EpisodeFinishedError):
        env.step("<move>0</move>")


def test_vector_env_builds_distinct_seeds() -> None:
    import gem

    register()
    vec = gem.make_vec([ID_PREFIX + "tictactoe"] * 2, seed=10)
    _, infos = vec.reset()
    assert [i["task"]["seed"] for i in infos] == [10, 11]


@pytest.mark.parametrize("game", list_games())
def test_sample_random_action_plays_whole_games_legally(game: str) -> None:
    import gem

    register()
    env = gem.make(ID_PREFIX + game, seed=6)
    env.reset()
    terminated = truncated = False
    while not (terminated or truncated):
        action = env.sample_random_action()
        _, reward, terminated, truncated, info = env.step(action)
        assert info["valid"] and info["format_ok"], (action, info)
    assert info["termination"] == "game_over" and env.episode.invalid_moves == 0
    assert reward == Episode.replay(env.task, env.episode.replies).reward().total


def test_sample_random_action_is_seeded_by_the_task_not_global_random() -> None:
    def actions(seed: int) -> list[str]:
        env = GameEnv(game="connect_four", seed=seed)
        env.reset()
        random.seed(0)  # the global generator is not what picks them
        return [env.sample_random_action() for _ in range(12)]

    assert actions(1) == actions(1) and actions(1) != actions(2)
    assert len(set(actions(1))) > 1


def test_spawn_same_task_new_seed_and_same_state() -> None:
    env = GameEnv(task={"game": "connect_four", "seed": 4})
    obs, _ = env.reset()
    env.step(env.sample_random_action())
    env.step(env.sample_random_action())

    fresh = env.spawn()
    assert fresh.task == env.task and fresh.reset()[0] == obs
    assert env.spawn(seed=9).task.seed == 9
    with pytest.raises(ValueError, match="unknown task fields"):
        env.spawn(colour="red")

    twin = env.spawn(same_state=True)
    assert twin.episode.replies == env.episode.replies
    action = env.sample_random_action()
    assert twin.step(action)[:4] == env.step(action)[:4]  # the same game, continued


def test_make_vec_with_gem_observation_wrappers_end_to_end() -> None:
    """GEM's own wrappers (``concat_with_action`` then ``episode_tracking``, from its
    wrapper factory) over a vector of two games with autoreset: the concatenated
    observation starts with core's system prompt (the reset observation), holds the
    history and ends with the reply format (``info["suffix"]``); each finished game's reward is core's, as the tracking wrapper saw it."""
    import gem
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    register()
    wrappers = get_wrapper_fns("concat_with_action,episode_tracking")
    ids = [ID_PREFIX + "tictactoe", ID_PREFIX + "connect_four"]
    vec = gem.make_vec(ids, wrappers=wrappers, seed=20)
    observations, infos = vec.reset()
    games = [env.unwrapped for env in vec.envs]
    for obs, game_env in zip(observations, games, strict=True):
        assert obs.startswith(game_env.episode.system_prompt + "\n")
        assert game_env.episode.observation in obs and obs.endswith(game_env._suffix())
    finished: list[tuple[Task, list[str], float, float]] = []
    replies: list[list[str]] = [[], []]
    for _ in range(40):
        actions = [g.sample_random_action() for g in games]
        for i, action in enumerate(actions):
            replies[i].append(action)
        tasks = [g.task for g in games]
        observations, rewards, terminated, truncated, infos = vec.step(actions)
        for i in range(2):
            if terminated[i] or truncated[i]:  # autoreset: infos[i] is the next game's reset
                finished.append(
                    (
                        tasks[i],
                        replies[i],
                        float(rewards[i]),
                        infos[i]["prev_ep_cumulative_rewards"],
                    )
                )
                replies[i] = []
            else:
                assert replies[i][-1] in observations[i]  # the history holds the actions
                assert observations[i].startswith(games[i].episode.system_prompt)
    assert {t.game for t, *_ in finished} == {"tictactoe", "connect_four"}
    for task, played, reward, tracked in finished:
        assert reward == tracked == Episode.replay(task, played).reward().total


@pytest.mark.parametrize("game", list_games())
def test_gems_own_wrappers_show_the_rules_the_format_and_the_board(game: str) -> None:
    """GEM's games put the instructions in the reset observation and the answer
    format in ``info["suffix"]``; GEM's observation wrappers read only those. So a
    standard GEM pipeline (gem.make + a wrapper) shows the model everything."""
    import gem
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    register()
    task = Task(game=game, seed=3)
    reference = Episode(task)
    first = reference.reset()
    for wrapper_name in ("concat", "concat_with_action"):
        env = gem.make(ID_PREFIX + game, task=task.to_dict())
        for wrap in get_wrapper_fns(wrapper_name):
            env = wrap(env)
        obs, info = env.reset()
        assert reference.system_prompt in obs and first in obs  # rules, notation, board
        assert obs.endswith(info["suffix"]) and "<move>" in info["suffix"]
        move = reference.game.legal_moves_text(reference.state)[0]
        obs, _, terminated, _, info = env.step(f"<move>{move}</move>")
        if not terminated:
            assert reference.system_prompt in obs  # the history keeps the rules
            assert obs.endswith(info["suffix"])


def test_max_episode_steps_settles_the_game_in_core() -> None:
    import gem

    register()
    task = Task(game="connect_four", seed=2)
    env = gem.make(ID_PREFIX + "connect_four", task=task.to_dict(), max_episode_steps=2)
    env.reset()
    assert env.step("<move>4</move>")[2:4] == (False, False)
    _, reward, terminated, truncated, info = env.step("<move>zz</move>")
    reference = Episode.replay(task, ["<move>4</move>", "<move>zz</move>"])
    reference.settle()
    assert (terminated, truncated) == (False, True)
    assert info["trajectory"] == reference.to_dict() and reward == reference.reward().total
    assert reference.reward().components["margin"] == -1.0
