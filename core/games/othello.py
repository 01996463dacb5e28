"""Othello (Reversi) on an 8x8 board, with int bitboards.

Overview
--------
Black (player 0, moves first) and White (player 1) place discs in turn. A
placement must bracket one or more straight lines (rows, columns, diagonals)
of the opponent's discs between the new disc and another disc of the mover;
every bracketed disc flips. A player with no placement passes; the game ends
when neither side can place, and more discs wins.

Moves
-----
A move is a square index ``row * 8 + col`` (0-63) written ``a1`` .. ``h8``:
the letter is the column (``a`` the left), the number the row (``1`` the
top), so ``a1`` = 0, ``h1`` = 7, ``a2`` = 8. ``PASS`` = 64, written ``pass``,
is legal exactly when the side to move has no placement but the opponent has
one; it is then the only legal move. The first legal moves are c4, d3, e6, f5
(the same numbering and notation as OpenSpiel's ``othello``)::

      a b c d e f g h
    1 . . . . . . . .
    2 . . . . . . . .
    3 . . . . . . . .
    4 . . . W B . . .
    5 . . . B W . . .
    6 . . . . . . . .
    7 . . . . . . . .
    8 . . . . . . . .
    Black (B) to move. Discs: Black 2, White 2.

State
-----
``OthelloState`` is a plain ``tuple`` ``(mover, other, to_play)``: the discs
of the side to move, the discs of the other side (64-bit masks, bit ``i`` =
square ``i``) and the index of the side to move. Storing the mover's discs
first means ``apply`` never branches on colour; a plain tuple (not a
``NamedTuple``) because building one is several times cheaper and ``apply``
is the hot path of every search. Its ``repr`` is a tuple of ints, stable
across processes, so seeds may derive from it. Two states with the same discs
and the same side to move are equal, however they were reached.

Scoring
-------
``outcome`` scores are disc counts; the side with more discs wins (empty
squares are not awarded). ``margin`` is the disc difference over 64.
``evaluate`` mixes disc parity, mobility, corners and a positional weight
table (see ``evaluate``).

Speed
-----
Move generation, flips, the per-position memos and the perft helpers are
bitboard kernels in ``core.games.othello_kernels`` (its docstring says how
they are fast); this module holds the rules, the notation and the scoring.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

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
from core.games.othello_kernels import (
    _CACHE_LIMIT,
    _LEGAL,
    _MASKS,
    _NEIGHBOURS,
    _ONLY_PASS,
    _ORDERED,
    _RAYS,
    BB_ALL,
    BB_FILE_A,
    BB_FILE_H,
    BB_NOT_EDGE_FILES,
    PASS,
    Bitboard,
    OthelloState,
    _masks,
)
from core.games.othello_kernels import children as _children
from core.games.othello_kernels import legal_moves as _legal_moves
from core.games.othello_kernels import perft2 as _perft2
from core.games.othello_kernels import perft3 as _perft3

PLAYER_NAMES: tuple[str, str] = ("Black", "White")
GLYPHS: tuple[str, str] = ("B", "W")
"""How the board shows a Black and a White disc (``.`` = empty)."""
EMPTY_GLYPH = "."
COLUMNS = "abcdefgh"

# --- named masks (python-chess style: a bitboard is an int) -----------------
BB_CORNERS: Bitboard = 1 << 0 | 1 << 7 | 1 << 56 | 1 << 63
"""a1, h1, a8, h8."""
BB_X_SQUARES: Bitboard = 1 << 9 | 1 << 14 | 1 << 49 | 1 << 54
"""b2, g2, b7, g7: diagonally next to a corner (giving the corner away)."""
BB_C_SQUARES: Bitboard = 1 << 1 | 1 << 8 | 1 << 6 | 1 << 15 | 1 << 48 | 1 << 57 | 1 << 55 | 1 << 62
"""b1, a2, g1, h2, a7, b8, h7, g8: on an edge next to a corner."""

BLACK_START: Bitboard = 1 << 28 | 1 << 35
"""e4 and d5."""
WHITE_START: Bitboard = 1 << 27 | 1 << 36
"""d4 and e5."""

WEIGHTS: tuple[int, ...] = (
    120, -20, 20, 5, 5, 20, -20, 120,
    -20, -40, -5, -5, -5, -5, -40, -20,
    20, -5, 15, 3, 3, 15, -5, 20,
    5, -5, 3, 3, 3, 3, -5, 5,
    5, -5, 3, 3, 3, 3, -5, 5,
    20, -5, 15, 3, 3, 15, -5, 20,
    -20, -40, -5, -5, -5, -5, -40, -20,
    120, -20, 20, 5, 5, 20, -20, 120,
)  # fmt: skip
"""Static square values, Norvig's weighted-squares table (Paradigms of AI
Programming, ch. 18): corners high, the X and C squares beside them low."""
_WEIGHT_SCALE = sum(abs(w) for w in WEIGHTS)
"""A bound on the difference of the table's sums over two disjoint disc sets."""

SQUARE_NAMES: tuple[str, ...] = tuple(f"{COLUMNS[i % 8]}{i // 8 + 1}" for i in range(64))

_SEARCH_ORDER: list[int] = sorted(range(64), key=lambda sq: (-WEIGHTS[sq], sq))
_SEARCH_RANK: tuple[int, ...] = tuple(_SEARCH_ORDER.index(sq) for sq in range(64)) + (64,)
"""Order in which search tries moves: by ``WEIGHTS``, best first (corners
first, X squares last), ties by square index; the pass last."""


_TURN_RE = re.compile(r"\b(Black|White)\b[^\n]*\bto move\b")
_HEADER_RE = re.compile(r"^\s*a\s+b\s+c\s+d\s+e\s+f\s+g\s+h\s*$")
_ROW_RE = re.compile(r"^\s*([1-8])((?:\s+[BW.]){8})\s*(?:[1-8])?\s*$")
_SQUARE_RE = re.compile(r"^([a-h])([1-8])$")


class Othello(Game[OthelloState, int]):
    """The rules of Othello (see the module docstring)."""

    spec = GameSpec(
        name="othello",
        title="Othello",
        num_players=2,
        player_names=PLAYER_NAMES,
        board_shape=(8, 8),
        # 60 placements at most, and a pass is always followed by a placement.
        max_plies=120,
        move_syntax=(
            "Write a square as its column letter a-h and row number 1-8 (a1 is the "
            "top-left corner), e.g. c4; write pass only when it is your only legal move."
        ),
        move_examples=("c4", "d3", "f5", "pass"),
        rules=(
            "Black and White take turns placing a disc so that it traps one or more "
            "straight lines (across, down or diagonal) of the opponent's discs between "
            "it and another of the mover's discs; every trapped disc flips to the mover's "
            "colour. A player with no such placement passes, and when neither can place "
            "the game ends: the side with more discs wins. Black moves first."
        ),
    )

    # --- positions -------------------------------------------------------
    def initial_state(self, rng: random.Random | None = None) -> OthelloState:
        """d4, e5 White; d5, e4 Black; Black to move (``rng`` is ignored)."""
        return (BLACK_START, WHITE_START, 0)

    def to_play(self, state: OthelloState) -> int:
        """0 (Black) or 1 (White)."""
        return state[2]

    def legal_moves(self, state: OthelloState) -> tuple[int, ...]:
        """The placements in increasing square order; ``(PASS,)`` when there is
        none but the opponent has one; ``()`` once neither side can place
        (memoised: ``othello_kernels.legal_moves``)."""
        moves = _LEGAL.get(state)
        return _legal_moves(state) if moves is None else moves

    def ordered_moves(self, state: OthelloState) -> tuple[int, ...]:
        """The legal moves by static square value (``WEIGHTS``): corners first,
        the X squares diagonally next to the corners last."""
        moves = _ORDERED.get(state)
        if moves is None:
            moves = tuple(sorted(self.legal_moves(state), key=_SEARCH_RANK.__getitem__))
            if len(_ORDERED) >= _CACHE_LIMIT:
                _ORDERED.clear()
            _ORDERED[state] = moves
        return moves

    def apply(self, state: OthelloState, move: int) -> OthelloState:
        """The position after ``move`` by the side to move (unchecked)."""
        mover, other, player = state
        if move == PASS:
            return (other, mover, player ^ 1)
        # flip_mask, inline: this is the hottest path of every search.
        flips = 0
        not_other = ~other
        up, down = _RAYS[move][other & _NEIGHBOURS[move]]
        for ray in up:
            blockers = ray & not_other
            first = blockers & -blockers
            if first & mover:
                flips |= ray & (first - 1)
        for ray in down:
            blockers = ray & not_other
            if blockers:
                first = 1 << (blockers.bit_length() - 1)
                if first & mover:
                    flips |= ray & -(first << 1)
        return (other ^ flips, mover | flips | 1 << move, player ^ 1)

    def is_terminal(self, state: OthelloState) -> bool:
        """True once neither side has a placement. (Through the ``_MASKS``
        memo: a search asks this of each leaf, then ``evaluate``, which needs
        both masks too.)"""
        masks = _MASKS.get(state)
        mine, theirs = _masks(state) if masks is None else masks
        return not (mine or theirs)

    def children(self, state: OthelloState, moves: Iterable[int]) -> list[OthelloState]:
        """``[self.apply(state, move) for move in moves]`` in one call
        (``othello_kernels.children``); ``perft2`` makes the leaves with it."""
        return _children(state, moves)

    def perft2(
        self, state: OthelloState, bulk: bool = True, moves: tuple[int, ...] | None = None
    ) -> int:
        """The number of two-ply move sequences from ``state`` (``perft`` at
        depth 2, which ``core.perft`` asks the game for): all the children's
        moves from one packed ``move_mask`` call (``othello_kernels.perft2``)."""
        return _perft2(state, bulk, moves, self.children)

    def perft3(self, state: OthelloState, bulk: bool = True) -> int:
        """``perft`` at depth 3 (``othello_kernels.perft3``)."""
        return _perft3(state, bulk, self.perft2)

    def outcome(self, state: OthelloState) -> Outcome | None:
        """More discs wins (equal is a draw); ``None`` while the game goes on.
        ``scores`` are the disc counts (Black, White)."""
        if not self.is_terminal(state):
            return None
        black, white = self.discs(state)
        scores = (float(black.bit_count()), float(white.bit_count()))
        if scores[0] == scores[1]:
            return Outcome(Termination.DRAW, None, scores)
        return Outcome(Termination.WIN, 0 if scores[0] > scores[1] else 1, scores)

    def discs(self, state: OthelloState) -> tuple[Bitboard, Bitboard]:
        """``(black discs, white discs)``."""
        mover, other, player = state
        return (other, mover) if player else (mover, other)

    def from_discs(self, black: Bitboard, white: Bitboard, to_play: int) -> OthelloState:
        """The state with these discs and ``to_play`` to move."""
        return (white, black, 1) if to_play else (black, white, 0)

    # --- notation --------------------------------------------------------
    def move_to_text(self, state: OthelloState, move: int) -> str:
        """``"c4"`` style, or ``"pass"``."""
        return "pass" if move == PASS else SQUARE_NAMES[move]

    def parse_move(self, state: OthelloState, text: str) -> int:
        """One square such as ``c4`` (any case, surrounding spaces ignored) or
        ``pass``. Raises ``InvalidMoveError`` for anything else and
        ``IllegalMoveError`` for a move that is not legal here."""
        token = text.strip().lower()
        if token == "pass":
            move = PASS
        else:
            match = _SQUARE_RE.match(token)
            if match is None:
                raise InvalidMoveError(
                    f"{text!r} is not an Othello move: write a square as column a-h and "
                    f"row 1-8, e.g. c4, or pass\n{self.render(state)}"
                )
            move = (int(match.group(2)) - 1) * 8 + COLUMNS.index(match.group(1))
        moves = self.legal_moves(state)
        if move in moves:
            return move
        if not moves:
            reason = "the game is over; no move is legal"
        elif move == PASS:
            reason = "you cannot pass while you have a legal placement"
        elif moves == _ONLY_PASS:
            reason = f"{SQUARE_NAMES[move]} is not legal: you have no placement and must pass"
        elif (state[0] | state[1]) >> move & 1:
            reason = f"{SQUARE_NAMES[move]} is already occupied"
        else:
            reason = f"{SQUARE_NAMES[move]} does not trap any of the opponent's discs"
        legal = ", ".join(SQUARE_NAMES[m] if m != PASS else "pass" for m in moves)
        suffix = f" (legal: {legal})" if moves else ""
        raise IllegalMoveError(f"{reason}{suffix}\n{self.render(state)}")

    def render(self, state: OthelloState) -> str:
        """Column letters, eight numbered rows of ``B``/``W``/``.``, and a line
        with whose turn it is (or the result) and the disc counts."""
        black, white = self.discs(state)
        lines = ["  " + " ".join(COLUMNS)]
        for row in range(8):
            cells = []
            for col in range(8):
                bit = 1 << (row * 8 + col)
                cells.append(
                    GLYPHS[0] if black & bit else GLYPHS[1] if white & bit else EMPTY_GLYPH
                )
            lines.append(f"{row + 1} " + " ".join(cells))
        counts = f"Discs: Black {black.bit_count()}, White {white.bit_count()}."
        moves = self.legal_moves(state)
        player = state[2]
        name = f"{PLAYER_NAMES[player]} ({GLYPHS[player]})"
        if not moves:
            result = self.outcome(state)
            if result is None or result.winner is None:
                status = "Game over: draw."
            else:
                status = f"Game over: {PLAYER_NAMES[result.winner]} wins."
            lines.append(f"{status} {counts}")
        elif moves == _ONLY_PASS:
            lines.append(f"{name} to move, and has no placement: must pass. {counts}")
        else:
            lines.append(f"{name} to move. {counts}")
        return "\n".join(lines)

    def board_view(self, state: OthelloState) -> BoardView:
        """Rows 1-8 top to bottom, columns a-h; a click on a square where a
        disc may be placed plays it; ``pass`` has no square."""
        black, white = self.discs(state)
        bits = [[1 << (row * 8 + col) for col in range(8)] for row in range(8)]
        moves = self.legal_moves(state)
        return BoardView(
            cells=tuple(
                tuple(GLYPHS[0] if black & b else GLYPHS[1] if white & b else "" for b in row)
                for row in bits
            ),
            marks=tuple(
                tuple("p0" if black & b else "p1" if white & b else "" for b in row) for row in bits
            ),
            moves=tuple((SQUARE_NAMES[m], ((m // 8, m % 8),)) for m in moves if m != PASS),
            other_moves=("pass",) if PASS in moves else (),
            to_play=state[2] if moves else None,
            row_labels=tuple(str(r + 1) for r in range(8)),
            col_labels=tuple(COLUMNS),
        )

    def parse_board(self, text: str) -> OthelloState:
        """The position in the first rendered board found in ``text``.

        The board is the ``a b c d e f g h`` header followed by rows 1-8; other
        lines may surround it. The side to move comes from a ``Black ... to
        move`` / ``White ... to move`` line; a finished game needs none (its
        state is given Black to move). Raises ``GameError`` when no board is
        found or a game in progress names no side to move.
        """
        lines = text.splitlines()
        for start, line in enumerate(lines):
            if not _HEADER_RE.match(line):
                continue
            rows: list[str] = []
            for number, row in enumerate(lines[start + 1 : start + 9], start=1):
                match = _ROW_RE.match(row)
                if match is None or int(match.group(1)) != number:
                    break
                rows.append(match.group(2))
            if len(rows) != 8:
                continue
            black = white = 0
            for r, cells in enumerate(rows):
                for c, glyph in enumerate(cells.split()):
                    if glyph == GLYPHS[0]:
                        black |= 1 << (r * 8 + c)
                    elif glyph == GLYPHS[1]:
                        white |= 1 << (r * 8 + c)
            rest = "\n".join(lines[start + 9 :])
            turn = _TURN_RE.search(rest)
            if turn is not None:
                return self.from_discs(black, white, PLAYER_NAMES.index(turn.group(1)))
            state = self.from_discs(black, white, 0)
            if not self.legal_moves(state):
                return state
            raise GameError(f"the board does not say whose turn it is:\n{text}")
        raise GameError(f"no Othello board found in:\n{text}")

    # --- scoring ---------------------------------------------------------
    def margin(self, state: OthelloState, player: int) -> float:
        """(``player``'s discs - the opponent's) / 64."""
        mover, other, to_play = state
        diff = mover.bit_count() - other.bit_count()
        return (diff if player == to_play else -diff) / 64

    def evaluate(self, state: OthelloState, player: int) -> float:
        """A heuristic value for ``player`` in [-1, 1].

        The weighted sum of four terms, each in [-1, 1], as Othello tutorials
        describe them (Sannidhanam and Annamalai, "An Analysis of Heuristics
        in Othello"): corners held (weight 0.35), mobility (legal placements,
        0.3), Norvig's positional weights (0.25) and disc parity (0.1) —
        parity matters least until the end, corners and mobility most.
        Corners, weights and parity are linear in the discs, so one table of
        ``SQUARE_VALUES`` read a 16-bit chunk at a time scores them together.
        """
        mover, other, to_play = state
        masks = _MASKS.get(state)
        mine_mask, theirs_mask = _masks(state) if masks is None else masks
        mine = mine_mask.bit_count()
        theirs = theirs_mask.bit_count()
        value = (
            _V0[mover & 0xFFFF]
            + _V1[mover >> 16 & 0xFFFF]
            + _V2[mover >> 32 & 0xFFFF]
            + _V3[mover >> 48]
            - _V0[other & 0xFFFF]
            - _V1[other >> 16 & 0xFFFF]
            - _V2[other >> 32 & 0xFFFF]
            - _V3[other >> 48]
        )
        if mine + theirs:
            value += 0.3 * (mine - theirs) / (mine + theirs)
        return value if player == to_play else -value


SQUARE_VALUES: tuple[float, ...] = tuple(
    0.35 * (BB_CORNERS >> sq & 1) / 4 + 0.25 * WEIGHTS[sq] / _WEIGHT_SCALE + 0.1 / 64
    for sq in range(64)
)
"""One disc's share of ``evaluate``: corners (0.35 over the four), Norvig's
weight (0.25 over the table's total) and parity (0.1 over 64 discs)."""


class _ChunkValues(dict[int, float]):
    """Sum of ``SQUARE_VALUES`` over the set bits of a 16-bit chunk, filled on
    first use from two 256-entry row tables, like ``_ChunkSquares``."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.low = tuple(
            sum(SQUARE_VALUES[offset + i] for i in range(8) if b >> i & 1) for b in range(256)
        )
        self.high = tuple(
            sum(SQUARE_VALUES[offset + 8 + i] for i in range(8) if b >> i & 1) for b in range(256)
        )

    def __missing__(self, chunk: int) -> float:
        total = self.low[chunk & 0xFF] + self.high[chunk >> 8]
        self[chunk] = total
        return total


_V0, _V1, _V2, _V3 = (_ChunkValues(offset) for offset in (0, 16, 32, 48))


__all__ = [
    "BB_ALL",
    "BB_CORNERS",
    "BB_C_SQUARES",
    "BB_FILE_A",
    "BB_FILE_H",
    "BB_NOT_EDGE_FILES",
    "BB_X_SQUARES",
    "PASS",
    "Bitboard",
    "Othello",
    "OthelloState",
]
