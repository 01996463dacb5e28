"""Connect Four: 7 columns, 6 rows, four in a row wins.

Overview
--------
X (player 0, moves first) and O (player 1) take turns dropping a disc into a
column that is not full; it falls to the lowest free cell. Four of one's
discs in a line (across, down or diagonal) wins; a full board without a line
is a draw.

Moves
-----
A move is the column index, an ``int`` 0-6 (left to right), written as the
column number ``"1"`` .. ``"7"`` shown under the board (as in OpenSpiel's
``connect_four``, whose action ids are the same 0-6)::

    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . . . . .
    . . . O . . .
    . . X X . . .
    1 2 3 4 5 6 7
    O to move.

State
-----
``ConnectFourState`` is a plain ``tuple`` ``(mover, occupied)`` of bitboards
in Pascal Pons's layout (bit ``col * 7 + row``, row 0 at the bottom, one
always-empty sentinel bit on top of each column): the discs of the side to
move, and every disc. The side to move follows from the disc count (X when
it is even). A move is two integer operations: the new mover is the old
opponent (``mover ^ occupied``) and ``occupied + bottom_of_column`` lands
the disc (Pons, "Solving Connect 4: how to build a perfect AI", part 6,
bitboard). Its ``repr`` is a tuple of ints, stable across processes.

Scoring
-------
``margin`` is +1 / -1 for the winner / loser of a finished game and 0
otherwise (draws and unfinished games alike). ``evaluate`` counts open
windows of four (three and two discs with the rest empty) for each side.
"""

from __future__ import annotations

import random
import re

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
"""A 49-bit mask, bit ``col * 7 + row`` (row 0 the bottom, row 6 a sentinel)."""

ConnectFourState = tuple[int, int]
"""``(mover discs, all discs)``; see the module docstring."""

WIDTH = 7
HEIGHT = 6
_H1 = HEIGHT + 1
"""Bits per column: six cells and a sentinel that stays empty, so no line
test wraps from one column into the next."""

MARKS: tuple[str, str] = ("X", "O")
EMPTY_GLYPH = "."

BB_BOTTOM: Bitboard = sum(1 << (col * _H1) for col in range(WIDTH))
"""The bottom cell of every column."""
BB_BOARD: Bitboard = BB_BOTTOM * ((1 << HEIGHT) - 1)
"""Every playable cell (no sentinels)."""
BB_TOP: Bitboard = BB_BOTTOM << (HEIGHT - 1)
"""The top cell of every column: a column is full when it is occupied."""
BB_COLUMN: tuple[Bitboard, ...] = tuple(((1 << HEIGHT) - 1) << (col * _H1) for col in range(WIDTH))
BB_CENTRE: Bitboard = BB_COLUMN[3]

SEARCH_ORDER: tuple[int, ...] = (3, 2, 4, 1, 5, 0, 6)
"""Centre column first, then outward: central discs lie in the most lines."""

# Line directions as shifts: 1 up a column, 7 along a row, 6 and 8 diagonal.
_DIRECTIONS = (1, _H1, _H1 - 1, _H1 + 1)


_PAIR_LANE = 80
"""Bit distance of a second board packed above the first (49 bits): the gap
absorbs every shift the line tests make (at most 24 bits), so the boards
never mix."""
_BB_BOARD_PAIR: Bitboard = BB_BOARD | BB_BOARD << _PAIR_LANE
_LOW_LANE: Bitboard = (1 << _PAIR_LANE) - 1


def has_four(discs: Bitboard) -> bool:
    """True when ``discs`` holds four in a line (Pons: ``alignment``): for each
    direction ``d``, ``pairs = discs & discs >> d`` marks two in a row and
    ``pairs & pairs >> 2d`` four."""
    pairs = discs & (discs >> _H1)
    if pairs & (pairs >> 2 * _H1):
        return True
    pairs = discs & (discs >> (_H1 - 1))
    if pairs & (pairs >> 2 * (_H1 - 1)):
        return True
    pairs = discs & (discs >> (_H1 + 1))
    if pairs & (pairs >> 2 * (_H1 + 1)):
        return True
    pairs = discs & (discs >> 1)
    return bool(pairs & (pairs >> 2))


def winning_cells(discs: Bitboard, occupied: Bitboard, board: Bitboard = BB_BOARD) -> Bitboard:
    """Empty cells that would complete a four for ``discs`` (Pons,
    ``compute_winning_position``), playable now or not. Two boards may be
    packed ``_PAIR_LANE`` bits apart, with ``board`` = ``_BB_BOARD_PAIR``."""
    # vertical: three below the cell
    found = (discs << 1) & (discs << 2) & (discs << 3)
    # horizontal (7) and both diagonals (6, 8): the cell at either end of
    # three, or inside a line of two and one
    for shift in (_H1, _H1 - 1, _H1 + 1):
        pair = (discs << shift) & (discs << 2 * shift)
        found |= pair & ((discs << 3 * shift) | (discs >> shift))
        pair = (discs >> shift) & (discs >> 2 * shift)
        found |= pair & ((discs << shift) | (discs >> 3 * shift))
    return found & board & ~occupied


def _columns_of(cells: Bitboard) -> tuple[int, ...]:
    """The columns holding a cell of ``cells``, in increasing order."""
    return tuple(col for col in range(WIDTH) if cells & BB_COLUMN[col])


# Legal columns by which columns are full (keyed by ``occupied & BB_TOP``).
_OPEN: dict[Bitboard, tuple[int, ...]] = {}
_OPEN_ORDERED: dict[Bitboard, tuple[int, ...]] = {}
for _full in range(1 << WIDTH):
    _top = sum(BB_TOP & BB_COLUMN[c] for c in range(WIDTH) if _full >> c & 1)
    _OPEN[_top] = tuple(c for c in range(WIDTH) if not _full >> c & 1)
    _OPEN_ORDERED[_top] = tuple(c for c in SEARCH_ORDER if not _full >> c & 1)
del _full, _top

_ROW_RE = re.compile(r"^\s*([XO.](?:\s+[XO.]){6})\s*$")
_FOOTER_RE = re.compile(r"^\s*1\s+2\s+3\s+4\s+5\s+6\s+7\s*$")
_NO_MOVES: tuple[int, ...] = ()


def _count_windows(mine: Bitboard, theirs: Bitboard) -> tuple[int, int, int, int]:
    """``(my threes, my twos, their threes, their twos)``: windows of four
    cells holding exactly three (or exactly two) discs of one side and none
    of the other, over all four directions.

    Both sides are counted in one pass, the other side's board packed
    ``_PAIR_LANE`` bits above, with bit-sliced adders over the four shifted
    copies of the discs (SWAR: SIMD within a register)."""
    discs = mine | theirs << _PAIR_LANE
    free = _BB_BOARD_PAIR & ~(theirs | mine << _PAIR_LANE)
    my_threes = my_twos = their_threes = their_twos = 0
    for d in _DIRECTIONS:
        window = free & (free >> d) & (free >> 2 * d) & (free >> 3 * d)
        x1, x2, x3 = discs >> d, discs >> 2 * d, discs >> 3 * d
        both_low, both_high = discs & x1, x2 & x3
        any_low, any_high = discs | x1, x2 | x3
        at_least_3 = (both_low & any_high) | (both_high & any_low)
        three = window & at_least_3
        two = window & (both_low | both_high | (any_low & any_high)) & ~at_least_3
        my_threes += (three & _LOW_LANE).bit_count()
        their_threes += (three >> _PAIR_LANE).bit_count()
        my_twos += (two & _LOW_LANE).bit_count()
        their_twos += (two >> _PAIR_LANE).bit_count()
    return my_threes, my_twos, their_threes, their_twos


class ConnectFour(Game[ConnectFourState, int]):
    """The rules of Connect Four (see the module docstring)."""

    spec = GameSpec(
        name="connect_four",
        title="Connect Four",
        num_players=2,
        player_names=MARKS,
        board_shape=(HEIGHT, WIDTH),
        max_plies=WIDTH * HEIGHT,
        move_syntax=(
            "Write the number of a column that is not full, 1-7 (numbered left to "
            "right under the board)."
        ),
        move_examples=("4", "1", "7"),
        rules=(
            "Two players, X and O, take turns dropping a disc into one of seven "
            "columns; it falls to the lowest free cell of a 6-row grid. X moves first. "
            "The first to get four discs in a row across, down or diagonally wins; "
            "a full board without four in a row is a draw."
        ),
    )

    # --- positions -------------------------------------------------------
    def initial_state(self, rng: random.Random | None = None) -> ConnectFourState:
        """The empty board, X to move (``rng`` is ignored)."""
        return (0, 0)

    def to_play(self, state: ConnectFourState) -> int:
        """0 (X) when the disc count is even, else 1 (O)."""
        return state[1].bit_count() & 1

    def legal_moves(self, state: ConnectFourState) -> tuple[int, ...]:
        """The columns that are not full, in increasing order; empty once the
        game is over."""
        mover, occupied = state
        if has_four(mover ^ occupied):
            return _NO_MOVES
        return _OPEN[occupied & BB_TOP]

    def ordered_moves(self, state: ConnectFourState) -> tuple[int, ...]:
        """Winning columns first (or, when there is none, the columns that
        block an opponent's win), then the rest centre first."""
        mover, occupied = state
        opponent = mover ^ occupied
        if has_four(opponent):
            return _NO_MOVES
        moves = _OPEN_ORDERED[occupied & BB_TOP]
        playable = (occupied + BB_BOTTOM) & BB_BOARD
        # Both sides' winning cells in one pass: the opponent's board rides
        # _PAIR_LANE bits above the mover's.
        wins = winning_cells(
            mover | opponent << _PAIR_LANE, occupied | occupied << _PAIR_LANE, _BB_BOARD_PAIR
        )
        urgent = wins & playable
        if not urgent:
            urgent = wins >> _PAIR_LANE & playable
            if not urgent:
                return moves
        first = _columns_of(urgent)
        return first + tuple(col for col in moves if col not in first)

    def apply(self, state: ConnectFourState, move: int) -> ConnectFourState:
        """The position after the side to move drops a disc in column ``move``
        (unchecked)."""
        mover, occupied = state
        return (mover ^ occupied, occupied | (occupied + (1 << move * _H1)))

    def is_terminal(self, state: ConnectFourState) -> bool:
        """True once the last mover has four in a row or the board is full."""
        mover, occupied = state
        return occupied == BB_BOARD or has_four(mover ^ occupied)

    def outcome(self, state: ConnectFourState) -> Outcome | None:
        """A win for the side with four in a row, a draw on a full board, else
        ``None``. Scores are 1 for the winner, 0 otherwise."""
        mover, occupied = state
        if has_four(mover ^ occupied):
            winner = 1 - (occupied.bit_count() & 1)
            return Outcome(Termination.WIN, winner, (1.0, 0.0) if winner == 0 else (0.0, 1.0))
        if occupied == BB_BOARD:
            return Outcome(Termination.DRAW, None, (0.0, 0.0))
        return None

    def discs(self, state: ConnectFourState) -> tuple[Bitboard, Bitboard]:
        """``(X discs, O discs)``."""
        mover, occupied = state
        if occupied.bit_count() & 1:
            return mover ^ occupied, mover
        return mover, mover ^ occupied

    # --- notation --------------------------------------------------------
    def move_to_text(self, state: ConnectFourState, move: int) -> str:
        """The column number 1-7."""
        return str(move + 1)

    def parse_move(self, state: ConnectFourState, text: str) -> int:
        """One column number 1-7 (surrounding whitespace ignored). Raises
        ``InvalidMoveError`` for anything else and ``IllegalMoveError`` for a
        full column or a finished game."""
        token = text.strip()
        if len(token) != 1 or token not in "1234567":
            raise InvalidMoveError(
                f"{text!r} is not a Connect Four move: write one column number 1-7\n"
                f"{self.render(state)}"
            )
        move = int(token) - 1
        if self.is_terminal(state):
            raise IllegalMoveError(f"the game is over; no move is legal\n{self.render(state)}")
        if state[1] & BB_TOP & BB_COLUMN[move]:
            raise IllegalMoveError(f"column {token} is full\n{self.render(state)}")
        return move

    def render(self, state: ConnectFourState) -> str:
        """Six rows, top first (``X``, ``O``, ``.``), the column numbers and a
        status line."""
        x, o = self.discs(state)
        lines = []
        for row in range(HEIGHT - 1, -1, -1):
            cells = []
            for col in range(WIDTH):
                bit = 1 << (col * _H1 + row)
                cells.append(MARKS[0] if x & bit else MARKS[1] if o & bit else EMPTY_GLYPH)
            lines.append(" ".join(cells))
        lines.append(" ".join(str(col + 1) for col in range(WIDTH)))
        result = self.outcome(state)
        if result is None:
            lines.append(f"{MARKS[self.to_play(state)]} to move.")
        elif result.winner is None:
            lines.append("Game over: draw.")
        else:
            lines.append(f"Game over: {MARKS[result.winner]} wins.")
        return "\n".join(lines)

    def board_view(self, state: ConnectFourState) -> BoardView:
        """Six rows, top first; a click anywhere in a column that is not full
        drops a disc there."""
        x, o = self.discs(state)
        cells, marks = [], []
        for row in range(HEIGHT - 1, -1, -1):
            bits = [1 << (col * _H1 + row) for col in range(WIDTH)]
            cells.append(tuple(MARKS[0] if x & b else MARKS[1] if o & b else "" for b in bits))
            marks.append(tuple("p0" if x & b else "p1" if o & b else "" for b in bits))
        moves = tuple(
            (str(m + 1), tuple((r, m) for r in range(HEIGHT))) for m in self.legal_moves(state)
        )
        return BoardView(
            cells=tuple(cells),
            marks=tuple(marks),
            moves=moves,
            to_play=None if self.is_terminal(state) else self.to_play(state),
            col_labels=tuple(str(c + 1) for c in range(WIDTH)),
            highlight=_four_cells(x) or _four_cells(o),
        )

    def parse_board(self, text: str) -> ConnectFourState:
        """The position in the first rendered board found in ``text``: six
        rows of ``X``/``O``/``.`` followed by the ``1 2 3 4 5 6 7`` line; other
        lines may surround it. Raises ``GameError`` when there is no board or
        it cannot occur in a game (a floating disc, O ahead of X or X two
        ahead)."""
        lines = text.splitlines()
        for end, line in enumerate(lines):
            if end < HEIGHT or not _FOOTER_RE.match(line):
                continue
            rows = lines[end - HEIGHT : end]
            if not all(_ROW_RE.match(row) for row in rows):
                continue
            x = o = 0
            for index, row_text in enumerate(rows):
                row = HEIGHT - 1 - index
                for col, glyph in enumerate(row_text.split()):
                    if glyph == MARKS[0]:
                        x |= 1 << (col * _H1 + row)
                    elif glyph == MARKS[1]:
                        o |= 1 << (col * _H1 + row)
            occupied = x | o
            # Gravity: every disc above the bottom row sits on another disc.
            if (occupied & ~BB_BOTTOM) & ~(occupied << 1):
                raise GameError(f"a disc floats above an empty cell in:\n{text}")
            if not 0 <= x.bit_count() - o.bit_count() <= 1:
                raise GameError(
                    f"{x.bit_count()} X and {o.bit_count()} O cannot occur in a game:\n{text}"
                )
            return (x if x.bit_count() == o.bit_count() else o, occupied)
        raise GameError(f"no Connect Four board found in:\n{text}")

    # --- scoring ---------------------------------------------------------
    def margin(self, state: ConnectFourState, player: int) -> float:
        """+1 if ``player`` has won, -1 if they have lost, else 0 (a draw or a
        game in progress)."""
        result = self.outcome(state)
        if result is None or result.winner is None:
            return 0.0
        return 1.0 if result.winner == player else -1.0

    def evaluate(self, state: ConnectFourState, player: int) -> float:
        """Open windows for ``player`` minus the opponent's, in (-1, 1).

        Each window of four cells holding no enemy disc scores 5 with three of
        one's discs (a threat) and 1 with two; a centre-column disc scores 1.
        The difference ``s`` is squashed as ``s / (|s| + 20)``. A finished
        game scores ``margin``.
        """
        if self.is_terminal(state):
            return self.margin(state, player)
        x, o = self.discs(state)
        mine, theirs = (x, o) if player == 0 else (o, x)
        my_threes, my_twos, their_threes, their_twos = _count_windows(mine, theirs)
        score = (
            5 * (my_threes - their_threes)
            + (my_twos - their_twos)
            + (mine & BB_CENTRE).bit_count()
            - (theirs & BB_CENTRE).bit_count()
        )
        return score / (abs(score) + 20)


def _four_cells(discs: Bitboard) -> tuple[tuple[int, int], ...]:
    """The cells (display row, column; row 0 the top) of one four-in-a-row in
    ``discs``, or ``()``. Shifts 1, 7, 6, 8 are vertical, horizontal and the two
    diagonals in the ``col * 7 + row`` layout (the sentinel row breaks wraps)."""
    for d in (1, _H1, _H1 - 1, _H1 + 1):
        starts = discs & (discs >> d) & (discs >> 2 * d) & (discs >> 3 * d)
        if starts:
            bit = (starts & -starts).bit_length() - 1
            return tuple(
                (HEIGHT - 1 - (b % _H1), b // _H1) for b in (bit + k * d for k in range(4))
            )
    return ()
