"""Connect Four: perft and distinct-position counts, table-driven games (each
kind of line, a draw), a naive reference, hypothesis properties and the typed
errors."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import GameError, IllegalMoveError, InvalidMoveError, Termination, make_game
from core.games.connect_four import ConnectFour, ConnectFourState
from core.perft import perft

GAME = make_game("connect_four")
assert isinstance(GAME, ConnectFour)

# Move sequences of exactly d plies, a won game not continued (FACTS.md's
# "positions exactly at ply d"; 823536 = 7^7 - 7: only the seven one-column
# sequences are cut, by a full column, before a first win is possible).
PERFT = [1, 7, 49, 343, 2401, 16807, 117649, 823536, 5673234]
# Distinct positions after d plies (OEIS A212693, John Tromp's counts).
DISTINCT = [1, 7, 49, 238, 1120, 4263, 16422, 54859]


def _play(moves: str) -> ConnectFourState:
    """The position after the column numbers in ``moves`` (e.g. "4453")."""
    state = GAME.initial_state()
    for column in moves:
        state = GAME.play(state, column)
    return state


# --- an independent, slow reference: a grid of rows --------------------------
def _grid(state: ConnectFourState) -> list[list[str]]:
    """Rows bottom first, from the rendered text (``.``, ``X``, ``O``)."""
    rows = GAME.render(state).splitlines()[:6]
    return [row.split() for row in reversed(rows)]


def _ref_winner(grid: list[list[str]]) -> str | None:
    for r in range(6):
        for c in range(7):
            mark = grid[r][c]
            if mark == ".":
                continue
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(4)]
                if all(0 <= rr < 6 and 0 <= cc < 7 and grid[rr][cc] == mark for rr, cc in cells):
                    return mark
    return None


def _ref_moves(state: ConnectFourState) -> list[int]:
    grid = _grid(state)
    if _ref_winner(grid) is not None:
        return []
    return [c for c in range(7) if grid[5][c] == "."]


def _random_game(seed: int) -> list[ConnectFourState]:
    rng = random.Random(seed)
    state = GAME.initial_state()
    states = [state]
    while moves := GAME.legal_moves(state):
        state = GAME.apply(state, rng.choice(moves))
        states.append(state)
    return states


def test_registered() -> None:
    assert GAME.spec.name == "connect_four"
    assert GAME.spec.num_players == 2
    assert GAME.spec.player_names == ("X", "O")
    assert GAME.spec.board_shape == (6, 7)
    assert GAME.spec.max_plies == 42
    for example in GAME.spec.move_examples:
        assert GAME.parse_move(GAME.initial_state(), example) == int(example) - 1


# --- counts -------------------------------------------------------------------
@pytest.mark.parametrize("depth", range(8))
def test_perft(depth: int) -> None:
    assert perft(GAME, GAME.initial_state(), depth) == PERFT[depth]


def test_perft_every_leaf() -> None:
    assert perft(GAME, GAME.initial_state(), 6, bulk=False) == PERFT[6]


@pytest.mark.slow
def test_perft_deep() -> None:
    assert perft(GAME, GAME.initial_state(), 8) == PERFT[8]


def test_distinct_positions() -> None:
    level = {GAME.initial_state()}
    for depth in range(1, len(DISTINCT)):
        level = {GAME.apply(s, m) for s in level for m in GAME.legal_moves(s)}
        assert len(level) == DISTINCT[depth], depth


# --- table-driven games --------------------------------------------------------------
@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ("1212121", 0),  # vertical, column 1
        ("1122334", 0),  # horizontal, bottom row
        ("71122334", 1),  # horizontal for O (X wasted a move in column 7)
        ("12234334644", 0),  # diagonal up-right: columns 1-4, rows 1-4
        ("76654554244", 0),  # diagonal up-left: columns 7-4, rows 1-4
        ("4455667", 0),  # horizontal in the middle: 4,5,6,7
    ],
)
def test_wins(moves: str, winner: int) -> None:
    state = _play(moves[:-1])
    assert not GAME.is_terminal(state)
    assert GAME.is_terminal(GAME.apply(state, GAME.ordered_moves(state)[0]))  # a win first
    state = GAME.play(state, moves[-1])
    assert GAME.is_terminal(state)
    assert GAME.legal_moves(state) == ()
    assert GAME.ordered_moves(state) == ()
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.WIN
    assert outcome.winner == winner
    assert outcome.scores[winner] == 1.0 and outcome.scores[1 - winner] == 0.0
    assert GAME.margin(state, winner) == 1.0
    assert GAME.margin(state, 1 - winner) == -1.0
    assert f"Game over: {'XO'[winner]} wins." in GAME.render(state)
    with pytest.raises(IllegalMoveError, match="game is over"):
        GAME.parse_move(state, "1")


def test_draw() -> None:
    # A full board without four in a row (found by random play, checked with OpenSpiel).
    moves = "442761225377252342545563474175371666631311"
    state = _play(moves[:-1])
    assert GAME.legal_moves(state) == (0,)
    state = GAME.play(state, moves[-1])
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.DRAW and outcome.winner is None
    assert GAME.margin(state, 0) == GAME.margin(state, 1) == 0.0
    assert GAME.render(state).splitlines()[0] == "O O O X O X O"
    assert GAME.render(state).endswith("Game over: draw.")


def test_render_and_turns() -> None:
    state = _play("443")
    assert GAME.render(state) == (
        ". . . . . . .\n"
        ". . . . . . .\n"
        ". . . . . . .\n"
        ". . . . . . .\n"
        ". . . O . . .\n"
        ". . X X . . .\n"
        "1 2 3 4 5 6 7\n"
        "O to move."
    )
    assert GAME.to_play(state) == 1
    assert eval(repr(state)) == state


def test_full_column() -> None:
    state = _play("444444")
    assert GAME.legal_moves(state) == (0, 1, 2, 4, 5, 6)
    with pytest.raises(IllegalMoveError, match="column 4 is full") as info:
        GAME.parse_move(state, "4")
    assert GAME.render(state) in str(info.value)


@pytest.mark.parametrize("text", ["8", "0", "a", "", " ", "11", "4 5", "-1", "four", "4."])
def test_invalid_text(text: str) -> None:
    with pytest.raises(InvalidMoveError) as info:
        GAME.parse_move(GAME.initial_state(), text)
    assert GAME.render(GAME.initial_state()) in str(info.value)


def test_ordering_prefers_wins_then_blocks_then_centre() -> None:
    assert GAME.ordered_moves(GAME.initial_state()) == (3, 2, 4, 1, 5, 0, 6)
    # X threatens column 1 vertically; O to move blocks first.
    state = _play("12121")
    assert GAME.ordered_moves(state)[0] == 0
    # X to move with its own win (column 4) and O's threat (column 6): the win first.
    state = _play("162636")
    assert GAME.ordered_moves(state)[0] == 3


def test_evaluate() -> None:
    assert GAME.evaluate(GAME.initial_state(), 0) == 0.0
    # X with an open three on the bottom row (O has two stacked) is ahead.
    state = _play("17273")
    assert GAME.evaluate(state, 0) > 0 > GAME.evaluate(state, 1)
    # Two stacked discs against one: still ahead, by less.
    assert 0 < GAME.evaluate(_play("171"), 0) < GAME.evaluate(state, 0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1 2 3 4 5 6 7",
        # a floating disc
        ". . . . . . .\n" * 4 + ". . . X . . .\n. . . . . . .\n1 2 3 4 5 6 7",
        # O ahead of X
        ". . . . . . .\n" * 5 + ". . . O . . .\n1 2 3 4 5 6 7",
    ],
)
def test_parse_board_errors(text: str) -> None:
    with pytest.raises(GameError):
        GAME.parse_board(text)


def test_parse_board_among_other_lines() -> None:
    state = _play("4435")
    text = f"Your move, X.\n\n{GAME.render(state)}\nLegal moves: 1 2 3 4 5 6 7\n"
    assert GAME.parse_board(text) == state


# --- properties ------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_random_game_invariants(seed: int) -> None:
    states = _random_game(seed)
    for ply, state in enumerate(states):
        moves = GAME.legal_moves(state)
        assert list(moves) == _ref_moves(state)
        assert GAME.to_play(state) == ply % 2
        assert GAME.is_terminal(state) == (not moves) == (GAME.outcome(state) is not None)
        assert sorted(GAME.ordered_moves(state)) == list(moves)
        assert GAME.parse_board(GAME.render(state)) == state
        assert -1.0 <= GAME.evaluate(state, 0) <= 1.0
        assert GAME.evaluate(state, 0) == -GAME.evaluate(state, 1)
        x, o = GAME.discs(state)
        assert x & o == 0 and x.bit_count() - o.bit_count() == ply % 2
        for move in moves:
            text = GAME.move_to_text(state, move)
            assert GAME.parse_move(state, f" {text} ") == move
            child = GAME.play(state, text)
            assert child == GAME.apply(state, move)
            assert (child[1] ^ state[1]).bit_count() == 1  # exactly one new disc
        for column in range(7):
            if column not in moves:
                with pytest.raises(IllegalMoveError):
                    GAME.play(state, str(column + 1))
    final = GAME.outcome(states[-1])
    assert final is not None
    winner = _ref_winner(_grid(states[-1]))
    assert final.winner == (None if winner is None else "XO".index(winner))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.text(max_size=6))
def test_parse_move_raises_only_typed_errors(seed: int, text: str) -> None:
    states = _random_game(seed)
    state = states[random.Random(seed).randrange(len(states))]
    try:
        move = GAME.parse_move(state, text)
    except (InvalidMoveError, IllegalMoveError):
        return
    assert move in GAME.legal_moves(state)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="XO.1234567 \n", max_size=200))
def test_parse_board_raises_only_game_errors(text: str) -> None:
    try:
        state = GAME.parse_board(text)
    except GameError:
        return
    assert GAME.parse_board(GAME.render(state)) == state
