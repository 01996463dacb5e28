"""The OpenSpiel bridge (core/games/openspiel.py): the Game contract over every
bridged game, the twins of the native games, the MCTS opponent, task rows.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from pathlib import Path

import pytest

from core import make_game
from core.episode import Episode
from core.games.base import GameError, IllegalMoveError, InvalidMoveError
from core.opponents import make_opponent, opponent_rng
from core.players import identify_game
from core.tasks import Task, TaskError, make_tasks

pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (pip install -e '.[openspiel]')")

from core.games.openspiel import (  # after the skip: needs pyspiel at call time
    OpenSpielState,
    left_out,
    openspiel_games,
)

ROOT = Path(__file__).resolve().parents[2]
BRIDGED = openspiel_games()
CONTRACT_PLIES = 40
"""Plies of each random game in the contract test (long games are cut there)."""


def test_the_registry_bridges_the_issue_games_and_says_why_others_are_out() -> None:
    for name in ("chess", "checkers", "breakthrough", "hex", "go", "clobber", "amazons"):
        assert f"openspiel:{name}" in BRIDGED
    assert len(BRIDGED) >= 30
    out = left_out()
    assert out["liars_dice"] == "has chance events"  # not yet checked as a seat game
    assert out["phantom_go"] == "imperfect information"
    for name in ("backgammon", "kuhn_poker", "leduc_poker", "phantom_ttt", "dark_hex"):
        assert f"openspiel:{name}" in BRIDGED  # the seat games (test_openspiel_seats.py)
    assert out["oshi_zumo"] == "not sequential (simultaneous moves)"
    assert "efg_game" in out
    assert not {f"openspiel:{n}" for n in out} & set(BRIDGED)


@pytest.mark.parametrize("name", BRIDGED)
def test_contract_over_a_random_game(name: str) -> None:
    game = make_game(name)
    spec = game.spec
    assert spec.name == name and spec.num_players in (1, 2)
    assert spec.max_plies >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.max_plies = 1  # type: ignore[misc]
    rng = random.Random(name)
    state = game.initial_state()
    for _ply in range(CONTRACT_PLIES):
        if game.is_terminal(state):
            break
        moves = game.legal_moves(state)
        assert list(moves) == sorted(moves) and moves, name
        texts = game.legal_moves_text(state)
        assert len(set(texts)) == len(texts), f"{name}: two legal moves read alike"
        for move, text in zip(moves, texts, strict=True):
            assert game.parse_move(state, text) == move
        assert game.parse_board(game.render(state)) == state
        assert hash(state) == hash(OpenSpielState(tuple(state.history)))
        with pytest.raises(InvalidMoveError):
            game.parse_move(state, "zz not a move")
        move = rng.choice(moves)
        state = game.play(state, game.move_to_text(state, move))
        assert 0 <= game.to_play(state) < spec.num_players
    if game.is_terminal(state):
        assert game.legal_moves(state) == ()
        outcome = game.outcome(state)
        assert outcome is not None
        assert -1.0 <= game.margin(state, 0) <= 1.0
        with pytest.raises(IllegalMoveError):
            game.parse_move(state, spec.move_examples[0])  # the game is over
    else:
        assert game.outcome(state) is None and game.margin(state, 0) == 0.0


def test_parsing_is_strict_about_case_and_notation() -> None:
    chess = make_game("openspiel:chess")
    start = chess.initial_state()
    assert chess.move_to_text(start, chess.parse_move(start, "e4")) == "e4"
    assert chess.parse_move(start, " Nf3 ") == chess.parse_move(start, "Nf3")
    for text in ("E4", "nf3", "e2e4", "e4!"):
        with pytest.raises(GameError):
            chess.parse_move(start, text)
    # A move of this game that is no longer legal is illegal, not malformed.
    after = chess.play(chess.play(start, "e4"), "e5")
    with pytest.raises(IllegalMoveError):
        chess.parse_move(after, "e4")  # the pawn is already there
    with pytest.raises(InvalidMoveError):
        chess.parse_move(after, "e9")
    ttt = make_game("openspiel:tic_tac_toe")
    with pytest.raises(IllegalMoveError):
        ttt.parse_move(ttt.play(ttt.initial_state(), "x(1,1)"), "x(1,1)")


def test_parameters_pass_through_and_bad_names_are_typed_errors() -> None:
    hex7 = make_game("openspiel:hex(board_size=7)")
    assert hex7.spec.board_shape == (7, 7) and hex7.spec.max_plies == 49
    go9 = make_game("openspiel:go(board_size=9)")
    assert go9.spec.board_shape == (9, 9) and len(go9.legal_moves(go9.initial_state())) == 82
    for bad in (
        "openspiel:nope",
        "openspiel:liars_dice",
        "openspiel:hex(board_size=x)",
        "openspiel:",
    ):
        with pytest.raises(GameError):
            make_game(bad)
    twixt = make_game("openspiel:twixt")
    assert "\x1b[" not in twixt.render(twixt.initial_state())  # colour turned off


# --- the native games and their OpenSpiel twins ------------------------------------------

TWINS = [
    ("tictactoe", "openspiel:tic_tac_toe"),
    ("connect_four", "openspiel:connect_four"),
    ("othello", "openspiel:othello"),
]


@pytest.mark.parametrize(("native_name", "twin_name"), TWINS, ids=[t[0] for t in TWINS])
def test_native_games_play_like_their_openspiel_twins(native_name: str, twin_name: str) -> None:
    """Same moves (OpenSpiel's action ids are the native move ids for these three):
    same legal moves, side to move, end and outcome at every ply."""
    native, twin = make_game(native_name), make_game(twin_name)
    rng = random.Random(f"twins-{native_name}")
    for game_index in range(40):
        a, b = native.initial_state(), twin.initial_state()
        for ply in range(native.spec.max_plies + 1):
            where = f"{native_name} game {game_index} ply {ply}"
            assert list(native.legal_moves(a)) == list(twin.legal_moves(b)), where
            assert native.is_terminal(a) == twin.is_terminal(b), where
            ours, theirs = native.outcome(a), twin.outcome(b)
            assert (ours is None) == (theirs is None), where
            if ours is not None and theirs is not None:
                assert (ours.termination, ours.winner) == (theirs.termination, theirs.winner), where
                assert native.margin(a, 0) * twin.margin(b, 0) >= 0, where
                break
            assert native.to_play(a) == twin.to_play(b), where
            move = rng.choice(list(native.legal_moves(a)))
            a, b = native.apply(a, move), twin.apply(b, move)
        else:
            pytest.fail(f"{native_name} game {game_index} did not end")


# --- opponents ---------------------------------------------------------------------------


def test_mcts_replies_depend_only_on_the_seed_and_the_position() -> None:
    game = make_game("openspiel:breakthrough")
    opponent = make_opponent("mcts", 3)
    state = game.apply(game.initial_state(), game.legal_moves(game.initial_state())[5])
    picks = {opponent.choose(game, state, opponent_rng(7, game.spec.name, state)) for _ in range(3)}
    assert len(picks) == 1
    others = {
        opponent.choose(game, state, opponent_rng(s, game.spec.name, state)) for s in range(8)
    }
    assert len(others) > 1  # the seed matters: not always the same move
    assert picks <= set(game.legal_moves(state))


def test_mcts_beats_random_at_tic_tac_toe() -> None:
    """A real search: at 160 simulations MCTS wins most of 20 games against random
    play (random against random wins 44% of games, as first and second player)."""
    game = make_game("openspiel:tic_tac_toe")
    mcts, rand = make_opponent("mcts", 5), make_opponent("random")
    results = []
    for seed in range(20):
        state = game.initial_state()
        side = seed % 2
        while not game.is_terminal(state):
            player = mcts if game.to_play(state) == side else rand
            state = game.apply(state, player.choose(game, state, opponent_rng(seed, "t", state)))
        outcome = game.outcome(state)
        assert outcome is not None
        results.append(outcome.result_for(side))
    assert results.count("win") >= 15 and results.count("loss") <= 2, results


def test_tasks_accept_bridged_games_and_pick_an_offered_opponent() -> None:
    task = make_tasks(1, game="openspiel:hex(board_size=7)")[0]
    assert task.opponent == "mcts" and task.game == "openspiel:hex(board_size=7)"
    assert Task.from_dict(task.to_dict()) == task
    assert make_tasks(1, game="openspiel:chess", opponent="random")[0].opponent == "random"
    with pytest.raises(TaskError, match="offers the opponents"):
        Task(game="openspiel:chess")  # minimax needs an evaluation the bridge lacks
    with pytest.raises(TaskError, match="openspiel:NAME"):
        Task(game="chess")
    with pytest.raises(TaskError, match="unknown OpenSpiel game"):
        Task(game="openspiel:nope", opponent="random")
    solo = make_tasks(1, game="openspiel:cliff_walking")[0]
    assert solo.model_player == 0


def test_episodes_replay_identically_and_the_scripted_player_reads_the_game() -> None:
    task = make_tasks(2, seed=5, game="openspiel:clobber")[1]
    first = Episode(task)
    observation = first.reset()
    assert identify_game(first.system_prompt).spec.name == "openspiel:clobber"
    assert "Legal moves: " in observation and "History (OpenSpiel action ids):" in observation
    game = first.game
    while not first.done:
        first.step(f"<move>{game.legal_moves_text(first.state)[0]}</move>")
    again = Episode.replay(task, first.replies)
    assert again.to_dict() == first.to_dict()
    assert first.result in ("win", "loss", "draw")


# --- without OpenSpiel -------------------------------------------------------------------

WITHOUT_PYSPIEL = """
import sys
sys.modules["pyspiel"] = None  # an import of it now fails as if it were not installed
import core
from core.tasks import Task, TaskError
assert "tictactoe" in core.list_games()
try:
    core.make_game("openspiel:chess")
except ImportError as exc:
    print("make_game:", exc)
try:
    Task(game="openspiel:chess", opponent="mcts")
except TaskError as exc:
    print("task:", exc)
"""


def test_without_openspiel_the_error_names_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYSPIEL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr
    for line in lines:
        assert "pip install -e '.[openspiel]'" in line, line


@pytest.mark.parametrize("name", ["openspiel:nim", "openspiel:amazons", "openspiel:clobber"])
def test_the_legal_moves_line_splits_back_into_the_legal_moves(name: str) -> None:
    """A move may contain ", " (nim's ``pile:1, take:1;``, amazons' ``X From (7, 1)``):
    the observation's list is joined by a separator no move contains, so a reader
    that splits the line on it gets exactly the legal moves back."""
    from core.prompts import MOVE_SEPARATORS

    episode = Episode(Task(game=name, opponent="random", seed=3))
    observation = episode.reset()
    legal = list(episode.game.legal_moves_text(episode.state))
    line = observation.split("Legal moves: ", 1)[1].split("\nYour move.")[0]
    sep = next(s for s in MOVE_SEPARATORS if all(s.strip() not in m for m in legal))
    assert line.split(sep) == legal
    assert (sep == ", ") == (not any("," in m for m in legal))
