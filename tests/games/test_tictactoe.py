"""Tic-Tac-Toe: known counts over the whole game tree, table-driven sequences,
render/parse round trips and the typed errors."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import GameError, IllegalMoveError, InvalidMoveError, Termination, make_game
from core.games.tictactoe import TicTacToe, TicTacToeState

GAME = make_game("tictactoe")


def _walk() -> tuple[Counter[str], set[TicTacToeState]]:
    """Every game (counted by result) and every reachable position."""
    games: Counter[str] = Counter()
    seen: set[TicTacToeState] = set()

    def visit(state: TicTacToeState) -> None:
        seen.add(state)
        moves = GAME.legal_moves(state)
        if not moves:
            outcome = GAME.outcome(state)
            assert outcome is not None
            games["draw" if outcome.winner is None else "XO"[outcome.winner]] += 1
            return
        for move in moves:
            visit(GAME.apply(state, move))

    visit(GAME.initial_state())
    return games, seen


@pytest.fixture(scope="module")
def tree() -> tuple[Counter[str], set[TicTacToeState]]:
    return _walk()


def test_registered() -> None:
    assert isinstance(GAME, TicTacToe)
    assert GAME.spec.name == "tictactoe"
    assert GAME.spec.num_players == 2
    assert GAME.spec.max_plies == 9


def test_game_count(tree: tuple[Counter[str], set[TicTacToeState]]) -> None:
    games, _ = tree
    assert sum(games.values()) == 255_168
    # Known split: X wins 131,184, O wins 77,904, draws 46,080.
    assert games == Counter({"X": 131_184, "O": 77_904, "draw": 46_080})


def test_position_counts(tree: tuple[Counter[str], set[TicTacToeState]]) -> None:
    _, seen = tree
    assert len(seen) == 5_478
    terminal = [s for s in seen if GAME.is_terminal(s)]
    assert len(terminal) == 958
    # 626 won by X, 316 by O, 16 full boards drawn.
    results = Counter(
        "draw" if (o := GAME.outcome(s)) is None or o.winner is None else "XO"[o.winner]
        for s in terminal
    )
    assert results == Counter({"X": 626, "O": 316, "draw": 16})


def test_every_position_is_consistent(tree: tuple[Counter[str], set[TicTacToeState]]) -> None:
    _, seen = tree
    for state in seen:
        moves = GAME.legal_moves(state)
        terminal = GAME.is_terminal(state)
        outcome = GAME.outcome(state)
        assert (not moves) == terminal == (outcome is not None)
        assert list(moves) == sorted(moves)
        assert sorted(GAME.ordered_moves(state)) == list(moves)
        assert GAME.parse_board(GAME.render(state)) == state
        assert eval(repr(state)) == state  # the repr seeds derive from is the full state
        for player in (0, 1):
            assert -1.0 <= GAME.evaluate(state, player) <= 1.0
            margin = GAME.margin(state, player)
            if outcome is None or outcome.winner is None:
                assert margin == 0.0
            else:
                assert margin == (1.0 if outcome.winner == player else -1.0)
                assert outcome.result_for(player) == ("win" if margin > 0 else "loss")
        for move in moves:
            child = GAME.apply(state, move)
            assert GAME.to_play(child) == 1 - GAME.to_play(state)
            assert GAME.play(state, GAME.move_to_text(state, move)) == child


# moves played, board after (row-major, "." free), result ("X", "O", "draw" or None)
SEQUENCES = [
    ("", ".........", None),
    ("4", "....X....", None),
    ("4 0", "O...X....", None),
    ("0 3 1 4 2", "XXXOO....", "X"),  # top row
    ("0 1 3 2 6", "XOOX..X..", "X"),  # left column
    ("0 1 4 2 8", "XOO.X...X", "X"),  # diagonal
    ("2 0 4 1 6", "OOX.X.X..", "X"),  # anti-diagonal
    ("0 2 1 5 3 8", "XXOX.O..O", "O"),  # O takes the right column
    ("0 6 1 7 5 8", "XX...XOOO", "O"),  # O takes the bottom row
    ("0 1 2 4 3 5 7 6 8", "XOXXOOOXX", "draw"),
    ("4 0 8 2 1 7 6 3 5", "OXOOXXXOX", "draw"),
    ("0 4 8 2 6 3 7", "X.OOO.XXX", "X"),  # X completes the bottom row
]


def _board(state: TicTacToeState) -> str:
    return "".join("X" if state.x >> i & 1 else "O" if state.o >> i & 1 else "." for i in range(9))


@pytest.mark.parametrize(
    ("moves", "board", "result"), SEQUENCES, ids=[s[0] or "empty" for s in SEQUENCES]
)
def test_sequences(moves: str, board: str, result: str | None) -> None:
    state = GAME.initial_state()
    for text in moves.split():
        state = GAME.play(state, text)
    assert _board(state) == board
    outcome = GAME.outcome(state)
    if result is None:
        assert outcome is None
        assert GAME.to_play(state) == len(moves.split()) % 2
        assert f"{'XO'[GAME.to_play(state)]} to move." in GAME.render(state)
    elif result == "draw":
        assert outcome is not None and outcome.termination is Termination.DRAW
        assert outcome.winner is None
        assert "Game over: draw." in GAME.render(state)
    else:
        assert outcome is not None and outcome.termination is Termination.WIN
        assert outcome.winner == "XO".index(result)
        assert f"Game over: {result} wins." in GAME.render(state)
    assert GAME.legal_moves(state) == tuple(
        i for i, c in enumerate(board) if c == "." and result is None
    )


def test_render_shows_free_cell_numbers() -> None:
    state = GAME.play(GAME.play(GAME.initial_state(), "4"), "0")
    assert GAME.render(state).splitlines() == [
        " O | 1 | 2",
        "---+---+---",
        " 3 | X | 5",
        "---+---+---",
        " 6 | 7 | 8",
        "X to move.",
    ]


# --- hypothesis round trips ---------------------------------------------------


@st.composite
def positions(draw: st.DrawFn) -> TicTacToeState:
    """A reachable position: a random order of cells, played until it ends or stops."""
    order = draw(st.permutations(range(9)))
    plies = draw(st.integers(0, 9))
    state = GAME.initial_state()
    for cell in order[:plies]:
        if GAME.is_terminal(state):
            break
        state = GAME.apply(state, cell)
    return state


# Text around the board that cannot look like a board row.
_noise = st.lists(st.text(alphabet="abc XYZ:.!-\t0123456789", max_size=30), max_size=4)


@given(positions(), _noise, _noise)
def test_parse_board_inverts_render(
    state: TicTacToeState, before: list[str], after: list[str]
) -> None:
    text = "\n".join([*before, GAME.render(state), *after])
    assert GAME.parse_board(text) == state


@given(positions())
def test_move_text_round_trip(state: TicTacToeState) -> None:
    for move in GAME.legal_moves(state):
        text = GAME.move_to_text(state, move)
        assert GAME.parse_move(state, text) == move
        assert GAME.parse_move(state, f"  {text}\n") == move
        assert GAME.play(state, text) == GAME.apply(state, move)


@given(positions())
def test_occupied_cells_are_illegal(state: TicTacToeState) -> None:
    for cell in range(9):
        if (state.x | state.o) >> cell & 1:
            with pytest.raises(IllegalMoveError) as info:
                GAME.play(state, str(cell))
            assert GAME.render(state) in str(info.value)


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", " ", "9", "10", "04", "-1", "a", "X", "4 5", "4.", "４", "four"]
)
def test_invalid_text(text: str) -> None:
    state = GAME.initial_state()
    with pytest.raises(InvalidMoveError) as info:
        GAME.play(state, text)
    assert GAME.render(state) in str(info.value)
    assert isinstance(info.value, GameError) and isinstance(info.value, ValueError)


def test_occupied_cell() -> None:
    state = GAME.play(GAME.initial_state(), "4")
    with pytest.raises(IllegalMoveError, match="cell 4 is already taken by X") as info:
        GAME.play(state, "4")
    assert GAME.render(state) in str(info.value)


def test_no_move_after_the_game_ends() -> None:
    state = GAME.initial_state()
    for text in ["0", "3", "1", "4", "2"]:
        state = GAME.play(state, text)
    for text in ("5", "8"):
        with pytest.raises(IllegalMoveError, match="game is over"):
            GAME.play(state, text)
        with pytest.raises(IllegalMoveError, match="game is over"):
            GAME.parse_move(state, text)


@pytest.mark.parametrize(
    "text",
    [
        "no board here",
        " X | 1 | 2\n---+---+---\n 3 | 4 | 5",  # two rows only
        " X | 1 | 2\nsomething else\n 3 | 4 | 5\n 6 | 7 | 8",  # interrupted
        " X | X | 2\n 3 | 4 | 5\n 6 | 7 | 8",  # X two ahead
        " O | 1 | 2\n 3 | 4 | 5\n 6 | 7 | 8",  # O ahead
        " 0 | 2 | 1\n 3 | 4 | 5\n 6 | 7 | 8",  # cells numbered wrongly
    ],
)
def test_parse_board_rejects(text: str) -> None:
    with pytest.raises(GameError):
        GAME.parse_board(text)
