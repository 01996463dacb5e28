"""Two outside seats, scripted players in both, through core and through GEM's
multi-agent env (``adapters.gem.GameMultiAgentEnv``): the same trajectories,
per-seat results and rewards included, in a game of chance (backgammon), a game of
chance and hidden cards (Kuhn Poker), a hidden board (Phantom Tic-Tac-Toe),
simultaneous bids (Goofspiel, OpenSpiel's turn-based form) and a
native game (Tic-Tac-Toe, with noisy players so invalid replies and per-seat
budgets are exercised).

Each seat's player keeps its own conversation (its system prompt, its own
observations, its replies), as two models would; neither reads the other's."""

from __future__ import annotations

from typing import Any

import pytest

from core.episode import Episode
from core.players import ScriptedPlayer
from core.tasks import Task

GAMES = [
    ("openspiel:kuhn_poker", "random", 6),
    ("openspiel:backgammon", "random", 2),
    ("openspiel:phantom_ttt", "random", 4),
    ("openspiel:goofspiel(num_cards=5)", "random", 3),
    ("tictactoe", "noisy:0.3", 4),
]


class _Seat:
    """One seat's player and its own conversation."""

    def __init__(self, policy: str, seat: int, system: str) -> None:
        self.player = ScriptedPlayer(policy, seed=100 + seat)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

    def reply(self, observation: str) -> str:
        self.messages.append({"role": "user", "content": observation})
        text = self.player.reply(self.messages)
        self.messages.append({"role": "assistant", "content": text})
        return text


def _core(task: Task, policy: str) -> tuple[dict[str, Any], dict[int, list[Any]]]:
    episode = Episode(task)
    episode.reset()
    seats = {s: _Seat(policy, s, episode.system_prompt_for(s)) for s in episode.outside}
    while not episode.done:
        seat = episode.to_move
        assert seat is not None
        episode.step(seats[seat].reply(episode.observation_for(seat)))
    rewards = {s: episode.reward_for(s).total for s in episode.outside}
    return {**episode.to_dict(), "per_seat_rewards": rewards}, {s: seats[s].messages for s in seats}


def _gem(task: Task, policy: str) -> tuple[dict[str, Any], dict[int, list[Any]]]:
    gem_adapter = pytest.importorskip("adapters.gem")
    env = gem_adapter.GameMultiAgentEnv(task)
    _, infos = env.reset()
    seats = {
        int(a.split("_")[1]): _Seat(policy, int(a.split("_")[1]), infos[a]["system_prompt"])
        for a in env.possible_agents
    }
    totals: dict[int, float] = {}
    trajectory: dict[str, Any] = {}
    while env.agents:
        (agent,) = env.agent_selector.get_active_agents()
        seat = int(agent.split("_")[1])
        _, rewards, terminations, _, infos = env.step(
            {agent: seats[seat].reply(env.observe(agent))}
        )
        if all(terminations.values()):
            totals = {int(a.split("_")[1]): r for a, r in rewards.items()}
            trajectory = infos[agent]["trajectory"]
    return {**trajectory, "per_seat_rewards": totals}, {s: seats[s].messages for s in seats}


@pytest.mark.parametrize(("game", "policy", "n"), GAMES, ids=[g for g, _, _ in GAMES])
def test_gem_multi_agent_plays_as_core(game: str, policy: str, n: int) -> None:
    for seed in range(n):
        task = Task(game=game, seed=seed, seats="outside,outside")
        core_run, core_chats = _core(task, policy)
        gem_run, gem_chats = _gem(task, policy)
        assert gem_run == core_run
        assert gem_chats == core_chats
        assert core_run["done"] and set(core_run["seats"]["results"]) == {"0", "1"}
        rewards = core_run["per_seat_rewards"]
        results = core_run["seats"]["results"]
        if results["0"] != results["1"]:  # zero-sum: the winner's reward is the higher
            winner = 0 if results["0"] == "win" else 1
            assert rewards[winner] > rewards[1 - winner]


def test_single_conversation_envs_refuse_several_outside_seats() -> None:
    """GEM's single-agent env sends to GameMultiAgentEnv; the frameworks that keep one
    conversation per rollout (SkyRL Gym, TRL, NeMo Gym's rows) play several outside
    seats in it, but not where the game hides information: one conversation for
    two would show each seat the other's cards."""
    from core.episode import SharedConversationError

    gem_adapter = pytest.importorskip("adapters.gem")
    task = {"game": "tictactoe", "seats": "outside,outside"}
    kuhn = {"game": "openspiel:kuhn_poker", "seats": "outside,outside"}
    with pytest.raises(ValueError, match="GameMultiAgentEnv"):
        gem_adapter.GameEnv(task=task)
    skyrl = pytest.importorskip("adapters.skyrl_gym")
    with pytest.raises(SharedConversationError, match="hides information"):
        skyrl.GameTextEnv({}, {"task": kuhn})
    messages, _ = skyrl.GameTextEnv({}, {"task": task}).init([])
    assert "as both sides, X and O" in messages[0]["content"]
    skyrl.GameTextEnv(
        {}, {"task": {"game": "tictactoe", "seats": "random,outside", "model_player": 1}}
    )
    from adapters.trl import GameEnvironment

    with pytest.raises(SharedConversationError, match="hides information"):
        GameEnvironment().reset(**kuhn)
    assert GameEnvironment().reset(**task).endswith("Your move.")
