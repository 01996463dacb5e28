"""Tic-Tac-Toe on a 3x3 board.

Overview
--------
Two players, X (player 0, moves first) and O (player 1), take turns writing
their mark in a free cell; three in a row, column or diagonal wins, a full
board without a line is a draw.

Moves
-----
A move is the cell index, an ``int`` 0-8 in row-major order (0 top-left,
8 bottom-right), written as the single digit ``"0"`` .. ``"8"``. ``render``
shows the number of every free cell, so the model reads the notation off
the board::

     X | 1 | 2
    ---+---+---
     3 | O | 5
    ---+---+---
     6 | 7 | 8
    X to move.

State
-----
``TicTacToeState(x, o)``: two 9-bit masks (bit ``i`` set = cell ``i`` holds
that mark). The player to move follows from the counts (X when they are
equal). Its ``repr`` is stable across processes, so seeds may derive from it.

Scoring
-------
``margin`` is +1 / -1 for the winner / loser of a finished game and 0
otherwise; ``evaluate`` counts the lines each side can still complete.
"""

from __future__ import annotations

import random
import re
from typing import NamedTuple

from core.games.base import (
    BoardView,
    Game,
    GameError,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
)

Bitboard = int
"""A 9-bit mask of cells, bit ``i`` = cell ``i`` (row-major)."""

FULL_BOARD: Bitboard = 0b111_111_111

LINES: tuple[Bitboard, ...] = (
    0b000_000_111,  # row 0: cells 0 1 2
    0b000_111_000,  # row 1: cells 3 4 5
    0b111_000_000,  # row 2: cells 6 7 8
    0b001_001_001,  # column 0: cells 0 3 6
    0b010_010_010,  # column 1: cells 1 4 7
    0b100_100_100,  # column 2: cells 2 5 8
    0b100_010_001,  # diagonal: cells 0 4 8
    0b001_010_100,  # anti-diagonal: cells 2 4 6
)
"""The eight winning lines."""

SEARCH_ORDER: tuple[int, ...] = (4, 0, 2, 6, 8, 1, 3, 5, 7)
"""Centre, then corners, then edges: the cells in the most lines first."""

MARKS: tuple[str, str] = ("X", "O")

# Tables indexed by a 9-bit mask, built once at import (512 entries each).
_HAS_LINE: tuple[bool, ...] = tuple(
    any(mask & line == line for line in LINES) for mask in range(FULL_BOARD + 1)
)
_FREE: tuple[tuple[int, ...], ...] = tuple(
    tuple(c for c in range(9) if not occupied >> c & 1) for occupied in range(FULL_BOARD + 1)
)
_FREE_ORDERED: tuple[tuple[int, ...], ...] = tuple(
    tuple(c for c in SEARCH_ORDER if not occupied >> c & 1) for occupied in range(FULL_BOARD + 1)
)

_ROW_RE = re.compile(r"^\s*([XOxo0-8])\s*\|\s*([XOxo0-8])\s*\|\s*([XOxo0-8])\s*$")
_SEPARATOR_RE = re.compile(r"^\s*-+\+-+\+-+\s*$")


class TicTacToeState(NamedTuple):
    """A position: the cells holding X and the cells holding O."""

    x: Bitboard
    o: Bitboard


_new_state = tuple.__new__
"""``TicTacToeState`` without its generated ``__new__`` (a Python function):
``_new_state(TicTacToeState, (x, o))`` builds the same NamedTuple about twice as
fast, and ``apply`` builds one per move."""


class TicTacToe(Game[TicTacToeState, int]):
    """The rules of Tic-Tac-Toe (see the module docstring)."""

    spec = GameSpec(
        name="tictactoe",
        title="Tic-Tac-Toe",
        num_players=2,
        player_names=MARKS,
        board_shape=(3, 3),
        max_plies=9,
        move_syntax=(
            "Write the number of a free cell, 0-8 (cells are numbered left to right, "
            "top to bottom; the board shows the number of every free cell)."
        ),
        move_examples=("4", "0", "8"),
        rules=(
            "Two players, X and O, take turns marking a free cell of a 3x3 grid; "
            "X moves first. The first to get three marks in a row, column or "
            "diagonal wins. If the board fills with no line, the game is a draw."
        ),
    )

    # --- positions -------------------------------------------------------
    def initial_state(self, rng: random.Random | None = None) -> TicTacToeState:
        """The empty board, X to move (``rng`` is ignored)."""
        return TicTacToeState(0, 0)

    def to_play(self, state: TicTacToeState) -> int:
        """0 (X) when both sides have as many marks, else 1 (O)."""
        return 0 if state.x.bit_count() == state.o.bit_count() else 1

    def legal_moves(self, state: TicTacToeState) -> tuple[int, ...]:
        """The free cells in increasing order; empty once the game is over."""
        x, o = state
        if _HAS_LINE[x] or _HAS_LINE[o]:
            return ()
        return _FREE[x | o]

    def ordered_moves(self, state: TicTacToeState) -> tuple[int, ...]:
        """The legal moves, centre first, then corners, then edges."""
        x, o = state
        if _HAS_LINE[x] or _HAS_LINE[o]:
            return ()
        return _FREE_ORDERED[x | o]

    def apply(self, state: TicTacToeState, move: int) -> TicTacToeState:
        """The position after the side to move marks cell ``move`` (unchecked)."""
        x, o = state
        if x.bit_count() == o.bit_count():
            return _new_state(TicTacToeState, (x | 1 << move, o))
        return _new_state(TicTacToeState, (x, o | 1 << move))

    def is_terminal(self, state: TicTacToeState) -> bool:
        """True once a side has a line or the board is full."""
        x, o = state
        return _HAS_LINE[x] or _HAS_LINE[o] or (x | o) == FULL_BOARD

    def outcome(self, state: TicTacToeState) -> Outcome | None:
        """Win for the side with a line, a draw on a full board, else ``None``."""
        x, o = state
        if _HAS_LINE[x]:
            return Outcome(Termination.WIN, 0, (1.0, 0.0))
        if _HAS_LINE[o]:
            return Outcome(Termination.WIN, 1, (0.0, 1.0))
        if (x | o) == FULL_BOARD:
            return Outcome(Termination.DRAW, None, (0.0, 0.0))
        return None

    # --- notation --------------------------------------------------------
    def move_to_text(self, state: TicTacToeState, move: int) -> str:
        """The cell index as one digit, e.g. ``"4"``."""
        return str(move)

    def parse_move(self, state: TicTacToeState, text: str) -> int:
        """A single digit 0-8 (surrounding whitespace ignored).

        Raises ``InvalidMoveError`` for anything else and ``IllegalMoveError``
        when the cell is taken or the game is over.
        """
        cell_text = text.strip()
        if len(cell_text) != 1 or cell_text not in "012345678":
            raise InvalidMoveError(
                f"{text!r} is not a Tic-Tac-Toe move: write one cell number 0-8\n"
                f"{self.render(state)}"
            )
        cell = int(cell_text)
        x, o = state
        if (x | o) >> cell & 1:
            raise IllegalMoveError(
                f"cell {cell} is already taken by {MARKS[0] if x >> cell & 1 else MARKS[1]}\n"
                f"{self.render(state)}"
            )
        if self.is_terminal(state):
            raise IllegalMoveError(f"the game is over; no move is legal\n{self.render(state)}")
        return cell

    def render(self, state: TicTacToeState) -> str:
        """The 3x3 grid (X, O, or the number of a free cell) and a status line."""
        x, o = state

        def cell(i: int) -> str:
            if x >> i & 1:
                return MARKS[0]
            if o >> i & 1:
                return MARKS[1]
            return str(i)

        rows = [" " + " | ".join(cell(r * 3 + c) for c in range(3)) for r in range(3)]
        board = "\n---+---+---\n".join(rows)
        result = self.outcome(state)
        if result is None:
            status = f"{MARKS[self.to_play(state)]} to move."
        elif result.winner is None:
            status = "Game over: draw."
        else:
            status = f"Game over: {MARKS[result.winner]} wins."
        return f"{board}\n{status}"

    def board_view(self, state: TicTacToeState) -> BoardView:
        """The 3x3 grid; a click on a free cell plays it."""
        x, o = state
        glyphs = [MARKS[0] if x >> i & 1 else MARKS[1] if o >> i & 1 else "" for i in range(9)]
        marks = ["p0" if x >> i & 1 else "p1" if o >> i & 1 else "" for i in range(9)]
        over = self.is_terminal(state)
        return BoardView(
            cells=tuple(tuple(glyphs[r * 3 : r * 3 + 3]) for r in range(3)),
            marks=tuple(tuple(marks[r * 3 : r * 3 + 3]) for r in range(3)),
            moves=tuple((str(m), ((m // 3, m % 3),)) for m in self.legal_moves(state)),
            to_play=None if over else self.to_play(state),
            highlight=next(
                (
                    tuple((i // 3, i % 3) for i in range(9) if line >> i & 1)
                    for line in LINES
                    for side in (x, o)
                    if side & line == line
                ),
                (),
            ),
        )

    def parse_board(self, text: str) -> TicTacToeState:
        """The position in the first rendered grid found in ``text``.

        Other lines may surround the grid; separator lines between its rows are
        optional. Raises ``GameError`` when there is no grid or the mark counts
        cannot occur in a game (O ahead of X, or X two ahead).
        """
        rows: list[tuple[str, ...]] = []
        for line in text.splitlines():
            match = _ROW_RE.match(line)
            if match is not None:
                rows.append(match.groups())
                if len(rows) == 3:
                    break
            elif not (rows and _SEPARATOR_RE.match(line)):
                rows = []
        if len(rows) != 3:
            raise GameError(f"no Tic-Tac-Toe board found in:\n{text}")
        x = o = 0
        for index, symbol in enumerate(s for row in rows for s in row):
            upper = symbol.upper()
            if upper == MARKS[0]:
                x |= 1 << index
            elif upper == MARKS[1]:
                o |= 1 << index
            elif symbol != str(index):
                raise GameError(f"cell {index} is shown as {symbol!r} in:\n{text}")
        if not 0 <= x.bit_count() - o.bit_count() <= 1:
            raise GameError(
                f"{x.bit_count()} X and {o.bit_count()} O cannot occur in a game:\n{text}"
            )
        return TicTacToeState(x, o)

    # --- scoring ---------------------------------------------------------
    def margin(self, state: TicTacToeState, player: int) -> float:
        """+1 if ``player`` has won, -1 if they have lost, else 0."""
        x, o = state
        mine, theirs = (x, o) if player == 0 else (o, x)
        if _HAS_LINE[mine]:
            return 1.0
        if _HAS_LINE[theirs]:
            return -1.0
        return 0.0

    def evaluate(self, state: TicTacToeState, player: int) -> float:
        """Lines still open to ``player`` weighted by their marks, minus the
        opponent's, over 16 (so within [-1, 1]); ``margin`` once finished."""
        x, o = state
        if _HAS_LINE[x] or _HAS_LINE[o]:
            return self.margin(state, player)
        mine, theirs = (x, o) if player == 0 else (o, x)
        score = 0
        for line in LINES:
            if not theirs & line:
                score += (mine & line).bit_count()
            elif not mine & line:
                score -= (theirs & line).bit_count()
        return max(-1.0, min(1.0, score / 16))
