"""The episode's vocabulary (core.events), the conversation (core.conversation), the
rubric on an Ending, and reward weights on the Task (issue 13, items 1 and 5)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from core import conversation
from core.episode import Episode
from core.events import Ending, EpisodeTermination, Event, Result
from core.games import list_games
from core.players import ScriptedPlayer
from core.rewards import DEFAULT_WEIGHTS, Rubric, parse_weights
from core.tasks import Task, TaskError, make_tasks

POLICY = "noisy:0.4/minimax:1"


def _live(task: Task, tools: bool) -> tuple[Episode, list[dict[str, Any]], list[str]]:
    """Play ``task`` as a chat loop does, keeping the messages the model was sent
    and every observation it was shown."""
    player = ScriptedPlayer(POLICY, 3)
    episode = Episode(task)
    system = episode.tool_system_prompt if tools else episode.system_prompt
    shown = [episode.reset()]
    messages = conversation.opening(system, shown[0])
    while not episode.done:
        turn = len(episode.events) + 1
        if tools:
            move = player.move(messages)
            ident = conversation.call_id(turn)
            messages.append(conversation.assistant_tool_call({"move": move}, ident))
            result = episode.step_move(move)
        else:
            ident = None
            reply = player.reply(messages)
            messages.append(conversation.assistant_text(reply))
            result = episode.step(reply)
        shown.append(result.observation)
        if not result.done:
            messages.append(conversation.observation(result.observation, tool_call_id=ident))
    return episode, messages, shown


@pytest.mark.parametrize("tools", [False, True], ids=["text", "tools"])
@pytest.mark.parametrize("game", list_games())
def test_the_record_alone_gives_the_conversation_the_model_had(game: str, tools: bool) -> None:
    for task in make_tasks(2, seed=5, game=game):
        episode, live, shown = _live(task, tools)
        trajectory = json.loads(json.dumps(episode.to_dict()))
        assert conversation.observations(trajectory) == shown
        assert conversation.messages(trajectory) == live
        closing = conversation.messages(trajectory, closing=True)
        assert closing[:-1] == live and closing[-1]["content"] == shown[-1]
        assert closing[-1]["role"] == ("tool" if tools else "user")


def test_an_unfinished_trajectory_ends_with_the_observation_to_answer() -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    episode.reset()
    episode.step("no tag")
    messages = conversation.messages(episode.to_dict())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"] == episode.observation


def test_a_rejected_tool_call_keeps_its_raw_arguments() -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    episode.reset()
    episode.step_tool({"square": 4})
    call = conversation.messages(episode.to_dict())[2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"square": 4}
    assert call["function"]["name"] == "make_move"


def test_a_record_without_observations_is_refused_not_guessed() -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    episode.reset()
    episode.step("<move>4</move>")
    old = copy.deepcopy(episode.to_dict())
    for event in old["events"]:
        del event["observation"]
    del old["observation"]
    with pytest.raises(conversation.ConversationError, match="records no observations"):
        conversation.messages(old)


def test_an_event_is_frozen_and_reads_as_its_json() -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    first = episode.reset()
    episode.step("<move>4</move>")
    event = episode.events[0]
    assert isinstance(event, Event) and event.observation == first
    assert event["move"] == event.move == "4" and dict(event) == event.to_dict()
    assert list(event) == list(event.to_dict()) and event == event.to_dict()
    assert isinstance(event["opponent_moves"], list) and isinstance(event.opponent_moves, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.move = "5"  # type: ignore[misc]
    with pytest.raises(KeyError):
        event["nope"]


def test_terminations_and_results_are_their_text() -> None:
    episode = Episode.replay(Task(game="tictactoe", seed=7), ["x"] * 4)
    assert episode.termination is EpisodeTermination.FORFEIT and episode.result is Result.LOSS
    assert episode.termination == "forfeit" and episode.result == "loss"
    trajectory = episode.to_dict()
    assert type(trajectory["termination"]) is str and type(trajectory["result"]) is str
    assert json.dumps([episode.termination, episode.result]) == '["forfeit", "loss"]'


def test_the_rubric_scores_an_ending_without_an_episode() -> None:
    ending = Ending(
        termination=EpisodeTermination.TURN_CAP,
        result=Result.DRAW,
        margin=None,
        replies=4,
        well_formed=3,
        invalid_moves=2,
        invalid_penalty=0.1,
        invalid_penalty_cap=0.5,
    )
    breakdown = Rubric().score(ending)
    assert breakdown.components == {"win": 0.5, "margin": 0.0, "format": 0.75, "invalid": -0.2}
    assert breakdown.total == round(0.5 + 0.0 + 0.2 * 0.75 - 0.2, 12)


def test_an_episode_s_ending_is_what_its_reward_was_scored_from() -> None:
    player = ScriptedPlayer("minimax:1", 0)
    episode = Episode(Task(game="othello", seed=3))
    messages = conversation.opening(episode.system_prompt, episode.reset())
    while not episode.done:
        reply = player.reply(messages)
        result = episode.step(reply)
        messages += [
            conversation.assistant_text(reply),
            conversation.observation(result.observation),
        ]
    ending = episode.ending()
    assert ending.termination is EpisodeTermination.GAME_OVER and ending.margin is not None
    assert Rubric().score(ending) == episode.reward()


def test_reward_weights_travel_on_the_task() -> None:
    plain = Task(game="tictactoe", seed=7)
    weighted = Task(game="tictactoe", seed=7, reward_weights={"win": 2, "invalid": 1})
    assert "reward_weights" not in plain.to_dict() and plain.weights() == dict(DEFAULT_WEIGHTS)
    assert weighted.reward_weights == "win=2.0,invalid=1.0"
    assert weighted.weights() == {"win": 2.0, "invalid": 1.0}
    assert weighted.task_id != plain.task_id
    assert Task.from_dict(weighted.to_dict()) == weighted
    assert Task.from_dict({**plain.to_dict(), "reward_weights": "win=2, invalid=1"}) == weighted
    replies = ["no tag", "<move>0</move>", "<move>1</move>", "<move>3</move>"]
    episode = Episode.replay(weighted, replies)
    assert episode.reward().weights == {"win": 2.0, "invalid": 1.0}
    assert episode.reward().total == -0.1
    rescored = Episode.from_trajectory(json.loads(json.dumps(episode.to_dict())))
    assert rescored.reward() == episode.reward()


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ("win=1,speed=2", "unknown reward components"),
        ("win", "not name=number"),
        ("win=abc", "not name=number"),
        ("win=inf", "not name=number"),
        ("win=1,win=2", "given twice"),
        ("", "no reward component"),
        ({"win": "1"}, "must be a number"),
        (3, "must be text"),
    ],
)
def test_bad_reward_weights_are_a_task_error(weights: Any, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        Task(reward_weights=weights)


def test_parse_weights_keeps_the_order_given() -> None:
    assert list(parse_weights("format=0.2,win=1")) == ["format", "win"]


def test_answer_tool_calls_plays_in_order_and_settles_a_reply_without_one() -> None:
    episode = Episode({"game": "tictactoe", "seed": 1})
    episode.reset()
    answers = conversation.answer_tool_calls(episode, [("a", '{"move": "4"}'), ("b", "{bad")])
    assert [a["tool_call_id"] for a in answers] == ["a", "b"]
    assert [a["role"] for a in answers] == ["tool", "tool"]
    assert len(episode.events) == 2 and not episode.events[0].error  # "4" played, "{bad" judged
    assert episode.events[1].error and answers[1]["content"] == episode.observation
    assert not episode.done
    assert conversation.answer_tool_calls(episode, []) == [] and episode.done  # settled
    assert episode.termination == "stopped"
    after = conversation.answer_tool_calls(episode, [("c", '{"move": "0"}')])
    assert len(episode.events) == 2 and after[0]["content"] == episode.observation
