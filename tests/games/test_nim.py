"""Nim, the tutorial game: rules, notation, board round trip, perfect play."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import IllegalMoveError, InvalidMoveError, make_game
from core.games.nim import NimState
from core.search import search

GAME = make_game("nim")


def test_start_and_moves() -> None:
    state = GAME.initial_state()
    assert state == NimState((3, 4, 5), 0)
    assert len(GAME.legal_moves(state)) == 3 + 4 + 5
    after = GAME.play(state, " 2 : 3 ")
    assert after == NimState((3, 1, 5), 1)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("2-3", InvalidMoveError),
        ("", InvalidMoveError),
        ("4:1", IllegalMoveError),
        ("1:4", IllegalMoveError),
        ("1:0", IllegalMoveError),
    ],
)
def test_bad_moves_get_typed_errors(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        GAME.play(GAME.initial_state(), text)


def test_taking_the_last_stone_wins() -> None:
    state = NimState((0, 0, 2), 1)
    end = GAME.play(state, "3:2")
    assert GAME.is_terminal(end)
    assert GAME.outcome(end).winner == 1  # type: ignore[union-attr]
    assert GAME.margin(end, 1) == 1.0 and GAME.margin(end, 0) == -1.0


@given(st.lists(st.integers(0, 100), max_size=12))
def test_render_round_trips(choices: list[int]) -> None:
    state = GAME.initial_state()
    for c in choices:
        moves = GAME.legal_moves(state)
        if not moves:
            break
        state = GAME.apply(state, moves[c % len(moves)])
    assert GAME.parse_board("Your move.\n" + GAME.render(state) + "\nLegal moves: ...") == state


def test_search_finds_the_winning_nim_sum_move() -> None:
    # (3, 4, 5) has nim-sum 2: the only winning moves leave nim-sum 0.
    result = search(GAME, GAME.initial_state(), 12)
    assert result.value > 0
    for move in result.best_moves:
        piles = GAME.apply(GAME.initial_state(), move).piles
        assert piles[0] ^ piles[1] ^ piles[2] == 0
