"""Othello's bitboard kernels: move generation, flips, the per-position memos
and the perft helpers, apart from the rules (``core.games.othello``), as
python-chess keeps its bitboard tables and helpers apart from ``Board``.

Everything here works on plain ints (a :data:`Bitboard` per side) and on the
``(mover, other, to_play)`` tuple that is an :data:`OthelloState`; nothing
knows notation, rendering or scoring. ``Othello`` reads the memos
(``_LEGAL``, ``_ORDERED``, ``_MASKS``) directly on its hot paths and runs
``flip_mask``'s code inline in ``apply``; ``Othello.children``,
``Othello.perft2`` and ``Othello.perft3`` are :func:`children`,
:func:`perft2` and :func:`perft3`.

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

from collections.abc import Callable, Iterable

Bitboard = int
"""A 64-bit mask of squares, bit ``row * 8 + col`` (a1 = bit 0, h8 = bit 63)."""

OthelloState = tuple[int, int, int]
"""``(mover discs, other discs, player to move)``; see the module docstring."""

PASS = 64
"""The pass move (written ``pass``), legal only when it is the only move."""

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


def legal_moves(state: OthelloState) -> tuple[int, ...]:
    """The legal moves of ``state``, memoised in ``_LEGAL``: the placements in
    increasing square order; ``(PASS,)`` when there is
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


def _play(state: OthelloState, move: int) -> OthelloState:
    """``Othello.apply`` through ``flip_mask`` (for the rare paths here)."""
    mover, other, player = state
    if move == PASS:
        return (other, mover, player ^ 1)
    flips = flip_mask(mover, other, move)
    return (other ^ flips, mover | flips | 1 << move, player ^ 1)


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


def children(state: OthelloState, moves: Iterable[int]) -> list[OthelloState]:
    """``[Othello.apply(state, move) for move in moves]`` in one call: the
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
    state: OthelloState,
    bulk: bool = True,
    moves: tuple[int, ...] | None = None,
    make_children: Callable[[OthelloState, Iterable[int]], list[OthelloState]] = children,
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
    when the caller knows them already; ``make_children`` makes the leaves
    (``Othello.children``, so a subclass's override is honoured).
    """
    if moves is None:
        moves = legal_moves(state)
    if not moves:
        return 0
    mover, other, player = state
    if moves == _ONLY_PASS:
        child = (other, mover, player ^ 1)
        replies = legal_moves(child)
        if not bulk:
            make_children(child, replies)
        return len(replies)
    kids, placements = _pack_children(mover, other, player, moves, not bulk)
    if bulk:
        total = placements.bit_count()
        if _lanes_nonzero(placements, len(moves)) != len(moves):
            for move in moves:
                if not placements & BB_ALL:
                    child_mover, child_other, _ = _play(state, move)
                    if move_mask(child_other, child_mover):
                        total += 1  # this child must pass
                placements >>= _LANE
        return total
    total = 0
    children_of = make_children
    for child in kids:
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


def perft3(
    state: OthelloState,
    bulk: bool = True,
    count2: Callable[[OthelloState, bool, tuple[int, ...] | None], int] = perft2,
) -> int:
    """``perft`` at depth 3: the children's moves come from one packed
    ``move_mask`` call (as in ``perft2``), then ``count2`` (``perft2``, or
    ``Othello.perft2``) counts below each child."""
    moves = legal_moves(state)
    if not moves:
        return 0
    mover, other, player = state
    if moves == _ONLY_PASS:
        return count2((other, mover, player ^ 1), bulk, None)
    kids, placements = _pack_children(mover, other, player, moves, True)
    total = 0
    for child in kids:
        mask = placements & BB_ALL
        placements >>= _LANE
        if mask:
            total += count2(child, bulk, mask_squares(mask))
        elif move_mask(child[1], child[0]):
            total += count2(child, bulk, _ONLY_PASS)
    return total
