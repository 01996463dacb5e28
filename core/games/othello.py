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
Move generation is a Kogge-Stone style occluded fill over all eight
directions (each direction a shift with a wrap mask). Several boards can
ride side by side in one int through the same shifts (SIMD within a
register): ``dual_move_mask`` gets both sides' moves for about 1.3 times
the cost of one side's, and ``perft2`` / ``perft3`` generate the moves of
all the children of a position in one call. ``apply`` finds flips along the
per-square rays that start on an opponent disc, with a first-blocker bit
scan. Legal moves and both sides' move masks are memoised per state in
bounded tables, so the ``is_terminal`` / ``evaluate`` / ``ordered_moves``
calls a search makes on one position share the work.
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

Bitboard = int
"""A 64-bit mask of squares, bit ``row * 8 + col`` (a1 = bit 0, h8 = bit 63)."""

OthelloState = tuple[int, int, int]
"""``(mover discs, other discs, player to move)``; see the module docstring."""

PASS = 64
"""The pass move (written ``pass``), legal only when it is the only move."""

PLAYER_NAMES: tuple[str, str] = ("Black", "White")
GLYPHS: tuple[str, str] = ("B", "W")
"""How the board shows a Black and a White disc (``.`` = empty)."""
EMPTY_GLYPH = "."
COLUMNS = "abcdefgh"

# --- named masks (python-chess style: a bitboard is an int) -----------------
BB_ALL: Bitboard = 0xFFFF_FFFF_FFFF_FFFF
BB_FILE_A: Bitboard = 0x0101_0101_0101_0101
"""Column ``a`` (the left edge)."""
BB_FILE_H: Bitboard = 0x8080_8080_8080_8080
"""Column ``h`` (the right edge)."""
BB_NOT_EDGE_FILES: Bitboard = BB_ALL ^ BB_FILE_A ^ BB_FILE_H
"""Columns b-g. A run of discs that wraps round a row edge must pass through
column a or h, so masking the flippable discs with this stops every
horizontal and diagonal shift from wrapping (Chess Programming Wiki,
"General Setwise Operations: Shifting Bitboards" / "Dumb7Fill")."""
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

_CACHE_LIMIT = 1 << 15
"""Positions whose legal moves are memoised before the memo is cleared."""


# --- move generation ------------------------------------------------------
_REVERSE_BYTE = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))
"""Each byte value with its 8 bits in reverse order (``bytes.translate``
table): reversing the bytes of a board and the bits of each byte turns it
180 degrees (square ``i`` goes to ``63 - i``)."""
_TURN_LANE = 96
"""Where ``move_mask`` puts the turned board (see ``_LANE``)."""
_TURNED_ALL: Bitboard = BB_ALL | BB_ALL << _TURN_LANE
_TURNED_NOT_EDGE_FILES: Bitboard = BB_NOT_EDGE_FILES | BB_NOT_EDGE_FILES << _TURN_LANE
_from_bytes = int.from_bytes


def move_mask(mover: Bitboard, other: Bitboard) -> Bitboard:
    """Every square where ``mover`` may place a disc, as a mask.

    The board rides in one int next to itself turned 180 degrees (its bits
    reversed, three C calls each way), so every direction toward lower bits
    is a direction toward higher bits in the turned copy: four directions
    (east, south, south-east, south-west) do the work of eight, with left
    shifts only. East is one addition: adding the run starts (``other``
    discs just east of a ``mover`` disc) to the ``other`` discs of columns
    b-g carries through each run onto the square after it, so the carry bits
    that land on empty squares are placements. The other three are occluded
    fills as in ``_lanes_move_mask``. About 25% cheaper than
    ``_lanes_move_mask`` on one board.
    """
    rev = _REVERSE_BYTE
    from_bytes = _from_bytes
    m = mover | from_bytes(mover.to_bytes(8, "big").translate(rev), "little") << _TURN_LANE
    o = other | from_bytes(other.to_bytes(8, "big").translate(rev), "little") << _TURN_LANE
    inner = o & _TURNED_NOT_EDGE_FILES
    # east (and west, in the turned lane): carry through the runs
    moves = inner + (inner & (m << 1))
    # south (north): vertical runs cannot wrap, so no mask
    pair = o & (o << 8)
    run = o & (m << 8)
    run |= o & (run << 8)
    run |= pair & (run << 16)
    run |= pair & (run << 16)
    moves |= run << 8
    # south-east (north-west)
    pair = inner & (inner << 9)
    run = inner & (m << 9)
    run |= inner & (run << 9)
    run |= pair & (run << 18)
    run |= pair & (run << 18)
    moves |= run << 9
    # south-west (north-east)
    pair = inner & (inner << 7)
    run = inner & (m << 7)
    run |= inner & (run << 7)
    run |= pair & (run << 14)
    run |= pair & (run << 14)
    moves |= run << 7
    moves &= ~(m | o) & _TURNED_ALL
    return moves & BB_ALL | from_bytes(
        (moves >> _TURN_LANE).to_bytes(8, "little").translate(rev), "big"
    )


def _lanes_move_mask(
    mover: Bitboard,
    other: Bitboard,
    board: Bitboard = BB_ALL,
    not_edge_files: Bitboard = BB_NOT_EDGE_FILES,
) -> Bitboard:
    """``move_mask`` for several boards packed ``_LANE`` bits apart in one int
    (SIMD within a register); ``board`` and ``not_edge_files`` hold the masks
    of every lane.

    For each direction the runs of ``other`` discs starting next to a mover
    disc are grown with an occluded fill: first one step at a time, then two
    steps through ``pair`` (squares holding an ``other`` disc with another
    one behind), which reaches the six-disc runs an 8x8 board allows in four
    steps instead of six (Kogge-Stone parallel prefix; Chess Programming
    Wiki, "Kogge-Stone Algorithm"). One more step from the run's end onto an
    empty square is a legal placement. East is one addition instead (see
    ``move_mask``). Left shifts run past bit 63, which the final ``& empty``
    drops; right shifts drop bits at bit 0.
    """
    empty = ~(mover | other) & board
    inner = other & not_edge_files

    # east (+1): carry through the runs; west (-1)
    moves = inner + (inner & (mover << 1))
    pair = inner & (inner >> 1)
    run = inner & (mover >> 1)
    run |= inner & (run >> 1)
    run |= pair & (run >> 2)
    run |= pair & (run >> 2)
    moves |= run >> 1

    # south (+8) and north (-8): vertical runs cannot wrap, so no mask
    pair = other & (other << 8)
    run = other & (mover << 8)
    run |= other & (run << 8)
    run |= pair & (run << 16)
    run |= pair & (run << 16)
    moves |= run << 8
    pair >>= 8
    run = other & (mover >> 8)
    run |= other & (run >> 8)
    run |= pair & (run >> 16)
    run |= pair & (run >> 16)
    moves |= run >> 8

    # south-east (+9) and north-west (-9)
    pair = inner & (inner << 9)
    run = inner & (mover << 9)
    run |= inner & (run << 9)
    run |= pair & (run << 18)
    run |= pair & (run << 18)
    moves |= run << 9
    pair >>= 9
    run = inner & (mover >> 9)
    run |= inner & (run >> 9)
    run |= pair & (run >> 18)
    run |= pair & (run >> 18)
    moves |= run >> 9

    # south-west (+7) and north-east (-7)
    pair = inner & (inner << 7)
    run = inner & (mover << 7)
    run |= inner & (run << 7)
    run |= pair & (run << 14)
    run |= pair & (run << 14)
    moves |= run << 7
    pair >>= 7
    run = inner & (mover >> 7)
    run |= inner & (run >> 7)
    run |= pair & (run >> 14)
    run |= pair & (run >> 14)
    moves |= run >> 7

    return moves & empty


_LANE = 96
"""Bit distance between boards packed side by side in one int (SIMD within
a register): the 32 zero bits above each board's bit 63 absorb every shift
``move_mask`` makes (at most 18 bits), so packed boards never mix, and a
fold of 63 bits (``_lanes_nonzero``) stays inside its own lane."""
_LANES_ALL: tuple[Bitboard, ...] = tuple(
    sum(BB_ALL << (_LANE * i) for i in range(k)) for k in range(65)
)
_LANES_NOT_EDGE_FILES: tuple[Bitboard, ...] = tuple(
    sum(BB_NOT_EDGE_FILES << (_LANE * i) for i in range(k)) for k in range(65)
)
_LANES_BIT0: tuple[Bitboard, ...] = tuple(
    sum(1 << (_LANE * i) for i in range(k)) for k in range(65)
)


def _turned_fill(m: Bitboard, o: Bitboard, board: Bitboard, not_edge_files: Bitboard) -> Bitboard:
    """``move_mask``'s four left-shift directions over packed lanes (boards
    and their turned copies, ``_LANE`` bits apart; ``board`` and
    ``not_edge_files`` hold every lane's masks)."""
    inner = o & not_edge_files
    moves = inner + (inner & (m << 1))
    pair = o & (o << 8)
    run = o & (m << 8)
    run |= o & (run << 8)
    run |= pair & (run << 16)
    run |= pair & (run << 16)
    moves |= run << 8
    pair = inner & (inner << 9)
    run = inner & (m << 9)
    run |= inner & (run << 9)
    run |= pair & (run << 18)
    run |= pair & (run << 18)
    moves |= run << 9
    pair = inner & (inner << 7)
    run = inner & (m << 7)
    run |= inner & (run << 7)
    run |= pair & (run << 14)
    run |= pair & (run << 14)
    moves |= run << 7
    return moves & ~(m | o) & board


def dual_move_mask(mover: Bitboard, other: Bitboard) -> tuple[Bitboard, Bitboard]:
    """``(move_mask(mover, other), move_mask(other, mover))`` in one pass: four
    lanes (mover, mover turned, other, other turned), ``_LANE`` bits apart,
    through ``move_mask``'s four directions (about 1.3 times the cost of one
    ``move_mask``)."""
    rev = _REVERSE_BYTE
    from_bytes = _from_bytes
    turned_mover = from_bytes(mover.to_bytes(8, "big").translate(rev), "little")
    turned_other = from_bytes(other.to_bytes(8, "big").translate(rev), "little")
    ours = mover | turned_mover << _LANE
    theirs = other | turned_other << _LANE
    both = _turned_fill(
        ours | theirs << 2 * _LANE,
        theirs | ours << 2 * _LANE,
        _LANES_ALL[4],
        _LANES_NOT_EDGE_FILES[4],
    )
    return (
        both & BB_ALL
        | from_bytes((both >> _LANE & BB_ALL).to_bytes(8, "little").translate(rev), "big"),
        both >> 2 * _LANE & BB_ALL
        | from_bytes((both >> 3 * _LANE).to_bytes(8, "little").translate(rev), "big"),
    )


def _lanes_nonzero(packed: Bitboard, lanes: int) -> int:
    """How many of the first ``lanes`` packed boards have a bit set: fold each
    lane's 64 bits onto its bit 0 (shifts of 32+16+8+4+2+1 never carry a bit
    from the next lane down to bit 0), then count the bit-0s."""
    packed |= packed >> 32
    packed |= packed >> 16
    packed |= packed >> 8
    packed |= packed >> 4
    packed |= packed >> 2
    packed |= packed >> 1
    return (packed & _LANES_BIT0[lanes]).bit_count()


_Rays = tuple[tuple[Bitboard, ...], tuple[Bitboard, ...]]
"""Rays toward higher bits and rays toward lower bits."""


def _build_rays() -> tuple[tuple[Bitboard, ...], tuple[dict[Bitboard, _Rays], ...]]:
    """Per square: the mask of its neighbours in every direction where a flip
    is possible (two or more squares to the edge), and for each subset of
    those neighbours the rays through them, split by direction of bits.

    ``apply`` looks up the subset holding an opponent disc, so it walks only
    the rays that can flip (two or three on average) and tests no others.
    """
    neighbours_of: list[Bitboard] = []
    rays_of: list[dict[Bitboard, _Rays]] = []
    for sq in range(64):
        row, col = divmod(sq, 8)
        directions: list[tuple[Bitboard, Bitboard]] = []
        for d_row, d_col in ((0, 1), (1, -1), (1, 0), (1, 1), (0, -1), (-1, 1), (-1, 0), (-1, -1)):
            ray = 0
            r, c = row + d_row, col + d_col
            while 0 <= r < 8 and 0 <= c < 8:
                ray |= 1 << (r * 8 + c)
                r, c = r + d_row, c + d_col
            if ray.bit_count() >= 2:
                directions.append((1 << ((row + d_row) * 8 + col + d_col), ray))
        # Every subset of the directions, each built from a smaller one.
        keys: list[Bitboard] = [0]
        ups: list[tuple[Bitboard, ...]] = [()]
        downs: list[tuple[Bitboard, ...]] = [()]
        for neighbour, ray in directions:
            toward_higher = neighbour > 1 << sq
            for i in range(len(keys)):
                keys.append(keys[i] | neighbour)
                ups.append(ups[i] + (ray,) if toward_higher else ups[i])
                downs.append(downs[i] if toward_higher else downs[i] + (ray,))
        neighbours_of.append(keys[-1])
        rays_of.append(dict(zip(keys, zip(ups, downs, strict=True), strict=True)))
    return tuple(neighbours_of), tuple(rays_of)


_NEIGHBOURS, _RAYS = _build_rays()


def flip_mask(mover: Bitboard, other: Bitboard, square: int) -> Bitboard:
    """The ``other`` discs a ``mover`` disc on ``square`` flips (0 if none).

    Along each ray from the square that starts on an ``other`` disc, the
    first square not holding one (the "blocker") is found with a bit scan:
    the lowest set bit (``x & -x``) for rays toward higher bits, the highest
    (``bit_length``) for rays toward lower bits. If the blocker is a mover
    disc, the ray squares between it and ``square`` flip (Chess Programming
    Wiki, "BitScan" and "On an empty Board: Rays"). ``Othello.apply`` runs
    the same code inline.
    """
    flips = 0
    not_other = ~other
    up, down = _RAYS[square][other & _NEIGHBOURS[square]]
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
    return flips


class _ChunkSquares(dict[int, tuple[int, ...]]):
    """Square indices of the set bits of a 16-bit chunk (two rows) of a mask,
    filled on first use from two 256-entry row tables (at most 65,536
    entries): four look-ups and three tuple joins list a move mask, in place
    of a bit-scan loop."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.low = tuple(tuple(offset + i for i in range(8) if b >> i & 1) for b in range(256))
        self.high = tuple(tuple(offset + 8 + i for i in range(8) if b >> i & 1) for b in range(256))

    def __missing__(self, chunk: int) -> tuple[int, ...]:
        squares = self.low[chunk & 0xFF] + self.high[chunk >> 8]
        self[chunk] = squares
        return squares


_SQ0, _SQ1, _SQ2, _SQ3 = (_ChunkSquares(offset) for offset in (0, 16, 32, 48))


def mask_squares(mask: Bitboard) -> tuple[int, ...]:
    """The squares of ``mask`` in increasing order."""
    return (
        _SQ0[mask & 0xFFFF]
        + _SQ1[mask >> 16 & 0xFFFF]
        + _SQ2[mask >> 32 & 0xFFFF]
        + _SQ3[mask >> 48]
    )


# Memos keyed by state, each cleared when it reaches ``_CACHE_LIMIT`` entries.
_LEGAL: dict[OthelloState, tuple[int, ...]] = {}
"""``legal_moves``."""
_ORDERED: dict[OthelloState, tuple[int, ...]] = {}
"""``ordered_moves``."""
_MASKS: dict[OthelloState, tuple[Bitboard, Bitboard]] = {}
"""Both sides' placement masks (``dual_move_mask``), for ``is_terminal`` and
``evaluate``: a search asks both of every leaf."""
_NO_MOVES: tuple[int, ...] = ()
_ONLY_PASS: tuple[int, ...] = (PASS,)


def _masks(state: OthelloState) -> tuple[Bitboard, Bitboard]:
    """The mover's and the other side's placement masks, computed and
    memoised (callers have looked in ``_MASKS`` already)."""
    masks = dual_move_mask(state[0], state[1])
    if len(_MASKS) >= _CACHE_LIMIT:
        _MASKS.clear()
    _MASKS[state] = masks
    return masks


_TURN_RE = re.compile(r"\b(Black|White)\b[^\n]*\bto move\b")
_HEADER_RE = re.compile(r"^\s*a\s+b\s+c\s+d\s+e\s+f\s+g\s+h\s*$")
_ROW_RE = re.compile(r"^\s*([1-8])((?:\s+[BW.]){8})\s*(?:[1-8])?\s*$")
_SQUARE_RE = re.compile(r"^([a-h])([1-8])$")


def _pack_children(
    mover: Bitboard, other: Bitboard, player: int, moves: tuple[int, ...], keep: bool
) -> tuple[list[OthelloState], Bitboard]:
    """The children after each of ``moves`` (placements, not the pass), packed
    ``_LANE`` bits apart, and their placements from one ``move_mask`` call
    (lane ``i`` for ``moves[i]``). The child states are listed only when
    ``keep``."""
    children: list[OthelloState] = []
    packed_mover = packed_other = 0
    shift = 0
    not_other = ~other
    next_player = player ^ 1
    for move in moves:
        # Othello.apply, inline: the child's mover is this position's other side.
        flips = 0
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
        child_mover = other ^ flips
        child_other = mover | flips | 1 << move
        if keep:
            children.append((child_mover, child_other, next_player))
        packed_mover |= child_mover << shift
        packed_other |= child_other << shift
        shift += _LANE
    lanes = len(moves)
    placements = _lanes_move_mask(
        packed_mover, packed_other, _LANES_ALL[lanes], _LANES_NOT_EDGE_FILES[lanes]
    )
    return children, placements


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
        none but the opponent has one; ``()`` once neither side can place."""
        moves = _LEGAL.get(state)
        if moves is None:
            mover, other, _ = state
            masks = _MASKS.get(state)
            mask = move_mask(mover, other) if masks is None else masks[0]
            if mask:  # mask_squares, inline
                moves = (
                    _SQ0[mask & 0xFFFF]
                    + _SQ1[mask >> 16 & 0xFFFF]
                    + _SQ2[mask >> 32 & 0xFFFF]
                    + _SQ3[mask >> 48]
                )
            elif move_mask(other, mover) if masks is None else masks[1]:
                moves = _ONLY_PASS
            else:
                moves = _NO_MOVES
            if len(_LEGAL) >= _CACHE_LIMIT:
                _LEGAL.clear()
            _LEGAL[state] = moves
        return moves

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
        """``[self.apply(state, move) for move in moves]`` in one call: the
        work shared by every child (unpacking the state, the complement of the
        other side's discs) is done once, and ``apply``'s code runs inline.
        ``perft2`` makes the leaves with it."""
        mover, other, player = state
        not_other = ~other
        next_player = player ^ 1
        rays_of = _RAYS
        neighbours_of = _NEIGHBOURS
        out: list[OthelloState] = []
        append = out.append
        for move in moves:
            if move == PASS:
                append((other, mover, next_player))
                continue
            flips = 0
            up, down = rays_of[move][other & neighbours_of[move]]
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
            append((other ^ flips, mover | flips | 1 << move, next_player))
        return out

    def perft2(
        self, state: OthelloState, bulk: bool = True, moves: tuple[int, ...] | None = None
    ) -> int:
        """The number of two-ply move sequences from ``state`` (``perft`` at
        depth 2, which ``core.perft`` asks the game for).

        All the children are packed side by side in one int, ``_LANE`` bits
        apart, and their placements generated by one ``move_mask`` call
        (SIMD within a register): about five times cheaper per child than one
        call each. A child with no placement has one move, the pass, if its
        opponent can place, else none (the game is over). ``bulk=True``
        counts the replies; ``bulk=False`` also makes every reply's position
        (``children``: ``apply``'s code, one call per child; "every leaf"). ``moves`` are the legal moves of ``state``
        when the caller knows them already.
        """
        if moves is None:
            moves = self.legal_moves(state)
        if not moves:
            return 0
        mover, other, player = state
        apply = self.apply
        if moves == _ONLY_PASS:
            child = (other, mover, player ^ 1)
            replies = self.legal_moves(child)
            if not bulk:
                self.children(child, replies)
            return len(replies)
        children, placements = _pack_children(mover, other, player, moves, not bulk)
        if bulk:
            total = placements.bit_count()
            if _lanes_nonzero(placements, len(moves)) != len(moves):
                for move in moves:
                    if not placements & BB_ALL:
                        child_mover, child_other, _ = apply(state, move)
                        if move_mask(child_other, child_mover):
                            total += 1  # this child must pass
                    placements >>= _LANE
            return total
        total = 0
        children_of = self.children
        for child in children:
            mask = placements & BB_ALL
            placements >>= _LANE
            if mask:
                replies = mask_squares(mask)
            elif move_mask(child[1], child[0]):
                replies = _ONLY_PASS
            else:
                continue
            children_of(child, replies)
            total += len(replies)
        return total

    def perft3(self, state: OthelloState, bulk: bool = True) -> int:
        """``perft`` at depth 3: the children's moves come from one packed
        ``move_mask`` call (as in ``perft2``), then ``perft2`` counts below
        each child."""
        moves = self.legal_moves(state)
        if not moves:
            return 0
        mover, other, player = state
        if moves == _ONLY_PASS:
            return self.perft2((other, mover, player ^ 1), bulk)
        children, placements = _pack_children(mover, other, player, moves, True)
        perft2 = self.perft2
        total = 0
        for child in children:
            mask = placements & BB_ALL
            placements >>= _LANE
            if mask:
                total += perft2(child, bulk, mask_squares(mask))
            elif move_mask(child[1], child[0]):
                total += perft2(child, bulk, _ONLY_PASS)
        return total

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
