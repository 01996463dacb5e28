"""The one turn loop: order of play, invalid moves, caps, records, replay."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import (
    Episode,
    EpisodeFinishedError,
    EpisodeNotStartedError,
    ScriptedPlayer,
    Task,
    make_tasks,
)
from core.rewards import DEFAULT_WEIGHTS

ROOT = Path(__file__).resolve().parents[2]
GAMES = ["tictactoe", "connect_four", "othello", "wordle"]


def play(task: Task, policy: str = "noisy:0.3/minimax:1", seed: int = 0) -> Episode:
    """Play ``task`` to the end with a scripted player reading the conversation."""
    episode = Episode(task)
    player = ScriptedPlayer(policy, seed)
    messages = [
        {"role": "system", "content": episode.system_prompt},
        {"role": "user", "content": episode.reset()},
    ]
    while not episode.done:
        reply = player.reply(messages)
        result = episode.step(reply)
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": result.observation},
        ]
    return episode


def test_model_second_sees_the_opponents_first_move() -> None:
    episode = Episode(Task(game="tictactoe", seed=1, model_player=1))
    observation = episode.reset()
    assert len(episode.opponent_first) == 1
    assert observation.startswith(f"Opponent played: {episode.opponent_first[0]}.")
    assert episode.game.to_play(episode.state) == 1


def test_model_first_sees_an_empty_board() -> None:
    episode = Episode(Task(game="connect_four", seed=1))
    observation = episode.reset()
    assert episode.opponent_first == []
    assert "Legal moves: 1, 2, 3, 4, 5, 6, 7" in observation


def test_a_valid_move_is_answered_by_the_opponent() -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    episode.reset()
    result = episode.step("<move>4</move>")
    assert result.info["valid"] and result.info["move"] == "4"
    assert result.info["opponent_move"] is not None and result.reward == 0.0 and not result.done
    assert episode.game.to_play(episode.state) == 0


@pytest.mark.parametrize(
    ("reply", "error"),
    [("4", "format"), ("<move>x9</move>", "invalid_move"), ("<move>4</move>", "illegal_move")],
)
def test_a_rejected_reply_changes_nothing_but_the_count(reply: str, error: str) -> None:
    episode = Episode(Task(game="tictactoe", seed=2))
    episode.reset()
    episode.step("<move>4</move>")
    before = episode.state
    result = episode.step(reply)
    assert result.info["error"] == error and not result.info["valid"]
    assert episode.state == before and episode.invalid_moves == 1 and not result.done
    assert result.info["format_ok"] == (error != "format")
    assert "Invalid replies left before you forfeit: 2." in result.observation


def test_too_many_invalid_replies_forfeit_with_a_capped_penalty() -> None:
    task = Task(
        game="othello", seed=4, max_invalid_moves=2, invalid_penalty=0.3, invalid_penalty_cap=0.5
    )
    episode = Episode(task)
    episode.reset()
    results = [episode.step("no move here") for _ in range(3)]
    assert [r.done for r in results] == [False, False, True]
    assert episode.termination == "forfeit" and episode.result == "loss"
    breakdown = episode.reward()
    assert breakdown.components == {"win": 0.0, "margin": -1.0, "format": 0.0, "invalid": -0.5}
    assert results[-1].reward == breakdown.total == pytest.approx(-1.0 - 0.5)
    assert results[-1].info["reward"] == breakdown.to_dict()
    assert "forfeited" in results[-1].observation


@pytest.mark.parametrize("settled", ["loss", "draw"])
def test_the_turn_cap_settles_the_game(settled: str) -> None:
    episode = Episode(Task(game="connect_four", seed=0, max_turns=2, turn_cap_result=settled))
    episode.reset()
    assert not episode.step("<move>4</move>").done
    last = episode.step("<move>4</move>")
    assert last.done and episode.termination == "turn_cap" and episode.result == settled
    components = episode.reward().components
    assert components["win"] == {"loss": 0.0, "draw": 0.5}[settled]
    assert components["margin"] == {"loss": -1.0, "draw": 0.0}[settled]


def test_step_after_done_raises_and_changes_nothing() -> None:
    episode = play(Task(game="tictactoe", seed=5))
    snapshot = json.dumps(episode.to_dict())
    with pytest.raises(EpisodeFinishedError):
        episode.step("<move>0</move>")
    with pytest.raises(EpisodeFinishedError):
        episode.step_move("0")
    assert json.dumps(episode.to_dict()) == snapshot


def test_step_before_reset_raises() -> None:
    with pytest.raises(EpisodeNotStartedError):
        Episode(Task()).step("<move>0</move>")


def test_tool_moves_take_the_same_path() -> None:
    text, tool = Episode(Task(seed=9)), Episode(Task(seed=9))
    text.reset(), tool.reset()
    for move in ["4", "4", "0"]:
        a, b = text.step(f"<move>{move}</move>"), tool.step_move(move)
        assert (a.observation, a.info["error"], a.info["move"]) == (
            b.observation,
            b.info["error"],
            b.info["move"],
        )
    assert text.state == tool.state
    assert tool.step_move(7).info["error"] == "format"


@pytest.mark.parametrize("game", GAMES)
def test_games_finish_with_a_consistent_reward(game: str) -> None:
    for task in make_tasks(3, seed=1, game=game):
        episode = play(task)
        breakdown = episode.reward()
        total = sum(DEFAULT_WEIGHTS[k] * v for k, v in breakdown.components.items())
        assert breakdown.total == pytest.approx(total)
        assert -1.0 <= breakdown.components["margin"] <= 1.0
        assert episode.result in ("win", "draw", "loss")
        invalid = sum(1 for e in episode.events if e["error"])
        assert episode.invalid_moves == invalid


def test_wordle_has_no_opponent() -> None:
    episode = play(Task(game="wordle", seed=3))
    assert episode.opponent is None
    assert all(e["opponent_moves"] == [] for e in episode.events)


@pytest.mark.parametrize("game", GAMES)
def test_replay_gives_the_identical_trajectory(game: str) -> None:
    task = make_tasks(1, seed=11, game=game, model_player=1 if game != "wordle" else 0)[0]
    original = play(task).to_dict()
    assert Episode.replay(task, [e["reply"] for e in original["events"]]).to_dict() == original
    assert Episode.from_trajectory(json.loads(json.dumps(original))).to_dict() == original


def test_replay_in_another_process_under_another_hash_seed() -> None:
    tasks = [make_tasks(1, seed=5, game=g)[0] for g in GAMES]
    expected = [play(t).to_dict() for t in tasks]
    script = (
        "import json, sys\n"
        "from core import Episode\n"
        "for t in json.load(sys.stdin):\n"
        "    print(json.dumps(Episode.from_trajectory(t).to_dict(), sort_keys=True))\n"
    )
    for hash_seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(expected),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert [json.loads(line) for line in out.splitlines()] == json.loads(json.dumps(expected))


def test_reset_restarts_the_same_game() -> None:
    episode = Episode(Task(game="othello", seed=8, opening_plies=3, model_player=1))
    first = episode.reset()
    episode.step("<move>pass</move>")
    assert episode.reset() == first and episode.events == [] and episode.invalid_moves == 0
    assert len(episode.opening) == 3


@pytest.mark.parametrize("settled", ["loss", "draw"])
def test_settle_scores_a_stopped_game_like_a_turn_cap(settled: str) -> None:
    episode = Episode(Task(game="othello", seed=3, turn_cap_result=settled))
    episode.reset()
    episode.step("<move>d3</move>")
    result = episode.settle()
    assert result.done and episode.termination == "stopped" and episode.result == settled
    assert result.reward == episode.reward().total
    assert episode.reward().components["margin"] == {"loss": -1.0, "draw": 0.0}[settled]
    with pytest.raises(EpisodeFinishedError):
        episode.settle()
    assert Episode.from_trajectory(episode.to_dict()).to_dict() == episode.to_dict()


def test_a_frameworks_cap_settles_the_game_on_the_step_that_reaches_it() -> None:
    episode = Episode(Task(game="othello", seed=3))
    episode.reset()
    first = episode.step(episode.sample_reply())
    assert episode.cap(first, None) == (first, False)
    assert episode.cap(first, 2) == (first, False) and not episode.done  # 1 reply < 2
    second = episode.step(episode.sample_reply())
    settled, capped = episode.cap(second, 2)
    assert capped and settled.done and episode.termination == "stopped"
    assert settled.reward == episode.reward().total
    assert episode.cap(settled, 2) == (settled, False)  # a finished game: as it was


def test_finish_settles_an_unfinished_game_and_leaves_a_finished_one() -> None:
    stopped = Episode(Task(game="tictactoe", seed=1))
    stopped.reset()
    stopped.step("<move>4</move>")
    assert stopped.finish() is stopped and stopped.termination == "stopped"
    record = stopped.to_dict()
    assert stopped.finish().to_dict() == record  # no second ending
    played = Episode(Task(game="tictactoe", seed=1, max_invalid_moves=0))
    played.reset()
    played.step("no move here")  # a forfeit: the game ended in core
    assert played.done and played.termination == "forfeit"
    assert played.finish().termination == "forfeit" and played.result == "loss"
    with pytest.raises(EpisodeNotStartedError):
        Episode(Task(game="tictactoe", seed=1)).finish()


@pytest.mark.parametrize("bad", [None, 7, 2.5, True, b"<move>4</move>", ["4"]])
def test_non_text_replies_are_rejected_recorded_and_replayed(bad: object) -> None:
    """A framework handing over something that is not text (bytes, None, a number)
    gets a recorded format rejection; the trajectory stays JSON and replays identically."""
    episode = Episode(Task(game="tictactoe", seed=1))
    episode.reset()
    before = episode.state
    result = episode.step(bad)  # type: ignore[arg-type]
    assert not result.info["valid"] and not result.done and episode.state == before
    assert result.info["error"] == "format"
    episode.step("<move>4</move>")
    trajectory = json.loads(json.dumps(episode.to_dict()))
    if isinstance(bad, (bytes, list)):
        return  # recorded as repr: JSON-safe, not replayable as the original object
    assert Episode.from_trajectory(trajectory).to_dict() == trajectory


# Every JSON type a tool call's arguments can take, and the shapes that are not {"move": text}.
RAW_ARGUMENTS = [
    4,
    2.5,
    None,
    True,
    "4",
    ["4"],
    {},
    {"move": 4},
    {"move": 4.0},
    {"move": None},
    {"move": ["4"]},
    {"move": {"square": "4"}},
    {"square": "4"},
    {"move": "4", "why": "the centre"},
]


@pytest.mark.parametrize("arguments", RAW_ARGUMENTS, ids=repr)
def test_tool_arguments_are_judged_in_core(arguments: object) -> None:
    """Anything but exactly {"move": <text>} is a format failure, charged like a bad
    text reply, recorded as it came (JSON), and replayed to the same rejection."""
    tool, text = Episode(Task(game="tictactoe", seed=1)), Episode(Task(game="tictactoe", seed=1))
    tool.reset(), text.reset()
    before = tool.state
    result = tool.step_tool(arguments)
    bad_text = text.step("I'll take the centre")
    assert bad_text.info["error"] == "format"
    assert not result.done and tool.state == before
    assert (result.info["error"], result.info["format_ok"]) == ("format", False)
    assert result.info["message"].startswith(("the arguments", 'the "move"', "unexpected"))
    assert tool.invalid_moves == text.invalid_moves == 1
    event = tool.events[-1]
    assert event["kind"] == "tool" and event["reply"] == ({} if arguments is None else arguments)
    tool.step_tool({"move": "4"})
    text.step("<move>4</move>")
    assert tool.state == text.state
    for episode in (tool, text):
        while not episode.done:
            episode.step_tool({"move": episode.game.legal_moves_text(episode.state)[0]})
    assert tool.reward().components == text.reward().components
    trajectory = json.loads(json.dumps(tool.to_dict()))
    assert trajectory == tool.to_dict()
    assert Episode.from_trajectory(trajectory).to_dict() == trajectory


def test_tool_arguments_that_are_not_json_are_recorded_as_repr() -> None:
    for arguments in [b"4", ("4",), {"move": float("nan")}, {1: "4"}, {"move": object}]:
        episode = Episode(Task(game="tictactoe", seed=1))
        episode.reset()
        result = episode.step_tool(arguments)
        assert result.info["error"] == "format"
        json.dumps(episode.events[-1]["reply"], allow_nan=False)  # JSON, always


def test_a_well_formed_tool_call_records_its_move_text() -> None:
    episode = Episode(Task(game="tictactoe", seed=1))
    episode.reset()
    episode.step_tool({"move": "zz"})
    episode.step_tool({"move": " 4 "})
    assert [(e["reply"], e["error"]) for e in episode.events] == [
        ("zz", "invalid_move"),
        (" 4 ", None),
    ]


def test_searches_says_whether_the_opponent_looks_anything_up() -> None:
    from core.episode import Episode
    from core.tasks import Task

    assert not Episode(Task(game="tictactoe", opponent="random")).searches
    assert Episode(Task(game="tictactoe", opponent="minimax", depth=1)).searches
    from core.opponents import MctsOpponent, MoveListOpponent

    assert MctsOpponent.searches  # OpenSpiel games' MCTS
    assert not Episode(Task(game="tictactoe"), opponent=MoveListOpponent(["4"])).searches
    assert Episode(Task(game="tictactoe", opponent="minimax", random_move_prob=0.5)).searches
    assert not Episode(Task(game="wordle")).searches  # one player: no opponent at all


def test_answer_tool_plays_a_call_and_answers_one_after_the_end_unplayed() -> None:
    episode = Episode(Task(game="tictactoe", seed=1))
    episode.reset()
    assert episode.answer_tool({"move": "4"}) == episode.observation
    assert len(episode.events) == 1 and not episode.events[0].error
    episode.settle()
    final = episode.observation
    assert episode.answer_tool({"move": "0"}) == final and len(episode.events) == 1


def test_listed_moves_are_the_observations_list() -> None:
    episode = Episode(Task(game="tictactoe", seed=1, model_player=0))
    episode.reset()
    assert episode.listed_moves == [str(i) for i in range(9)]
    assert "Legal moves: " + ", ".join(episode.listed_moves) in episode.observation
    episode.settle()
    assert episode.listed_moves is None  # over
    wordle = Episode(Task(game="wordle"))
    wordle.reset()
    assert wordle.listed_moves is None and "Legal moves" not in wordle.observation


@pytest.mark.parametrize("game", GAMES)
def test_a_step_renders_its_position_once(game: str) -> None:
    # the event's board and the observation share one rendering (half a step's cost)
    episode = Episode(Task(game=game, seed=5))
    render = episode.game.render
    calls: list[object] = []

    def counted(state: object) -> str:
        calls.append(state)
        return render(state)

    episode.game.render = counted  # type: ignore[method-assign]
    episode.reset()
    assert len(calls) == 1  # the model moves first: the initial board is the observation's
    turn = 0
    while not episode.done:
        calls.clear()
        turn += 1
        reply = "no move here" if turn == 2 else episode.sample_reply()
        result = episode.step(reply)
        assert len(calls) == 1, (turn, reply)
        assert episode.events[-1].board in result.observation
        assert episode.events[-1].board == render(episode.state)
    assert turn > 2
