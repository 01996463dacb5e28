"""Seats: an episode whose seats are each a built-in bot or an outside player
(``Task.seats``). Today's one-seat episode is the case ``seats=None`` (the
golden transcripts and test_episode.py cover it byte for byte)."""

from __future__ import annotations

import pytest

from core.episode import Episode, EpisodeError
from core.players import ScriptedPlayer
from core.tasks import Task, TaskError


def _reply(episode: Episode, player: ScriptedPlayer) -> str:
    seat = episode.to_move
    assert seat is not None
    return player.reply(
        [
            {"role": "system", "content": episode.system_prompt_for(seat)},
            {"role": "user", "content": episode.observation_for(seat)},
        ]
    )


def test_a_bot_seat_plays_as_the_tasks_opponent_did() -> None:
    """``seats="outside,minimax:2"`` is the one-seat episode against minimax:2:
    the same moves, observations and rewards (only the seat is recorded too)."""
    old = Episode(Task(game="connect_four", seed=4, opponent="minimax", depth=2))
    new = Episode(Task(game="connect_four", seed=4, seats="outside,minimax:2"))
    player = ScriptedPlayer("random", seed=9)
    old.reset()
    new.reset()
    assert new.observation == old.observation
    while not old.done:
        reply = _reply(old, player)
        a, b = old.step(reply), new.step(reply)
        assert (a.observation, a.done, a.reward) == (b.observation, b.done, b.reward)
    assert new.done and new.result == old.result
    assert [e.move for e in new.events] == [e.move for e in old.events]
    assert {e.seat for e in new.events} == {0} and {e.seat for e in old.events} == {None}
    assert "seat" not in old.to_dict()["events"][0] and "seats" not in old.to_dict()


def test_two_outside_seats_take_turns_and_each_sees_its_own_view() -> None:
    episode = Episode(Task(game="tictactoe", seed=1, seats="outside,outside"))
    episode.reset()
    assert episode.outside == (0, 1) and episode.bots == {}
    assert "as X" in episode.system_prompt_for(0) and "as O" in episode.system_prompt_for(1)
    assert episode.to_move == 0
    assert episode.observation_for(1).endswith("Waiting for the opponent.")
    episode.step("<move>4</move>")
    assert episode.to_move == 1
    assert episode.observation_for(1).startswith("Opponent played: 4.")
    assert episode.observation == episode.observation_for(1)
    episode.step("<move>0</move>")
    assert episode.observation_for(0).startswith("Opponent played: 0.")
    for reply in ("<move>3</move>", "<move>1</move>", "<move>5</move>"):  # X wins 3-4-5
        episode.step(reply)
    assert episode.done and episode.to_move is None
    assert episode.results == {0: "win", 1: "loss"}
    assert episode.reward_for(0).total > 0 > episode.reward_for(1).total
    assert "you won" in episode.observation_for(0) and "you lost" in episode.observation_for(1)
    assert [e.seat for e in episode.events] == [0, 1, 0, 1, 0]
    data = episode.to_dict()
    assert data["seats"]["results"] == {"0": "win", "1": "loss"}
    again = Episode.from_trajectory(data)
    assert again.to_dict() == data


def test_each_seat_has_its_own_invalid_budget_and_a_forfeit_loses() -> None:
    task = Task(game="tictactoe", seed=2, seats="outside,outside", max_invalid_moves=1)
    episode = Episode(task)
    episode.reset()
    episode.step("<move>4</move>")
    episode.step("no tags")  # seat 1: one invalid reply allowed
    assert episode.to_move == 1 and episode.invalid_moves_of(1) == 1
    assert episode.invalid_moves_of(0) == 0 and episode.invalid_moves == 0
    episode.step("<move>0</move>")
    episode.step("<move>99</move>")  # seat 0's first invalid reply: still in
    assert not episode.done and episode.invalid_moves_of(0) == 1
    episode.step("<move>8</move>")
    episode.step("<move>4</move>")  # seat 1's second: it forfeits
    assert episode.done and episode.termination == "forfeit"
    assert episode.results == {0: "win", 1: "loss"}
    assert "Your opponent forfeited" in episode.observation_for(0)
    assert "You forfeited" in episode.observation_for(1)
    assert episode.reward_for(1).total < episode.reward_for(0).total
    margins = [episode.reward_for(s).components["margin"] for s in (0, 1)]
    assert margins == [1.0, -1.0]  # zero-sum: the forfeit's winner does not lose margin


def test_a_turn_cap_and_a_stop_settle_every_seat() -> None:
    task = Task(game="tictactoe", seed=0, seats="outside,outside", max_turns=1)
    episode = Episode(task)
    episode.reset()
    episode.step("<move>4</move>")  # the first seat to reach its cap ends the game
    assert episode.done and episode.termination == "turn_cap"
    assert episode.results == {0: "loss", 1: "loss"}
    stopped = Episode(Task(game="tictactoe", seed=0, seats="outside,outside"))
    stopped.reset()
    stopped.step("<move>4</move>")
    result = stopped.settle()
    assert result.done and stopped.results == {0: "loss", 1: "loss"}
    assert result.info["rewards"] == {
        "0": stopped.reward_for(0).total,
        "1": stopped.reward_for(1).total,
    }


def test_the_model_may_sit_second_and_bots_fill_the_rest() -> None:
    episode = Episode(Task(game="tictactoe", seed=3, model_player=1, seats="random,outside"))
    episode.reset()
    assert episode.to_move == 1 and len(episode.opponent_first) == 1
    player = ScriptedPlayer("random", seed=0)
    while not episode.done:
        episode.step(_reply(episode, player))
    assert set(episode.results) == {1}
    with pytest.raises(EpisodeError):
        episode.observation_for(0)  # a bot seat has no observation


@pytest.mark.parametrize(
    "seats",
    [
        "outside",
        "outside,outside,outside",
        "outside,minimax",
        "outside,random:2",
        "random,random",
        "outside,mcts:0",
        "outside,chess",
    ],
)
def test_bad_seats_are_task_errors(seats: str) -> None:
    with pytest.raises(TaskError):
        Task(game="tictactoe", seats=seats)


def test_seats_reach_the_task_id_only_when_set() -> None:
    plain = Task(game="tictactoe", seed=5)
    assert "seats" not in plain.to_dict()
    seated = Task(game="tictactoe", seed=5, seats=" outside , outside ")
    assert seated.seats == "outside,outside" and seated.task_id != plain.task_id
    assert Task.from_dict(seated.to_dict()) == seated
    assert plain.seat_roles() == ("outside", "minimax:2")


def test_each_seat_has_its_own_recorded_conversation() -> None:
    from core import conversation

    pytest.importorskip("pyspiel")
    episode = Episode(Task(game="openspiel:kuhn_poker", seed=2, seats="outside,outside"))
    episode.reset()
    chats: dict[int, list[dict[str, str]]] = {
        s: [{"role": "system", "content": episode.system_prompt_for(s)}] for s in (0, 1)
    }
    player = ScriptedPlayer("random", seed=4)
    while not episode.done:
        seat = episode.to_move
        assert seat is not None
        chats[seat].append({"role": "user", "content": episode.observation_for(seat)})
        reply = player.reply(chats[seat])
        chats[seat].append({"role": "assistant", "content": reply})
        episode.step(reply)
    trajectory = episode.to_dict()
    for seat in (0, 1):
        recorded = conversation.messages(trajectory, seat=seat)
        assert [(m["role"], m["content"]) for m in recorded] == [
            (m["role"], m["content"]) for m in chats[seat]
        ]
    assert conversation.messages(trajectory) == conversation.messages(trajectory, seat=0)
    assert "you" in conversation.final_observation(trajectory)
