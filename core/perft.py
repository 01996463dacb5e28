"""Perft: count the leaves of a game tree to a fixed depth.

The standard correctness test of a move generator (python-chess and every
chess engine run it; Aart Bik published the Othello counts). Works on any
``Game`` through its public methods only, so a benchmark timing it measures
``legal_moves`` and ``apply`` as search code calls them.

Counting rules: a move is a ply (Othello's pass included); a finished game
(no legal move) before ``depth`` counts nothing, so ``perft(d)`` is the
number of move sequences of exactly ``d`` plies.

A game may count the last plies itself with ``perft2(state, bulk)`` (two
plies) and ``perft3(state, bulk)`` (three) methods (Othello does: it
generates the moves of all the children of a position in one packed pass,
and with ``bulk=False`` still plays every last move with ``apply``);
``use_perft2=False`` turns them off, so every count comes from
``legal_moves`` and ``apply`` as listed above.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

from core.games.base import Game

S = TypeVar("S", bound=Hashable)


def perft(
    game: Game[S, Any], state: S, depth: int, bulk: bool = True, *, use_perft2: bool = True
) -> int:
    """The number of ``depth``-ply move sequences from ``state``.

    ``bulk=True`` counts the moves at the last ply without applying them
    (``len(legal_moves)``: "bulk counting"); ``bulk=False`` applies every
    last move too ("every leaf"), which exercises ``apply`` on each leaf.
    Either way the game's ``perft3`` / ``perft2`` do the last three / two
    plies when it has them (unless ``use_perft2=False``). All return the same
    number. Raises ``ValueError`` for a negative depth.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be an int >= 0, got {depth!r}")
    legal_moves = game.legal_moves
    apply = game.apply
    perft2 = getattr(game, "perft2", None) if use_perft2 else None
    perft3 = getattr(game, "perft3", None) if use_perft2 else None

    def count(state: Any, depth: int) -> int:
        if depth == 3 and perft3 is not None:
            return int(perft3(state, bulk))
        if depth == 2 and perft2 is not None:
            return int(perft2(state, bulk))
        moves = legal_moves(state)
        if depth == 1:
            if bulk:
                return len(moves)
            for move in moves:
                apply(state, move)
            return len(moves)
        total = 0
        child_depth = depth - 1
        for move in moves:
            total += count(apply(state, move), child_depth)
        return total

    return 1 if depth == 0 else count(state, depth)


def perft_divide(game: Game[S, Any], state: S, depth: int) -> dict[str, int]:
    """``perft(depth - 1)`` below each legal move, keyed by the move's text
    (for finding which branch of a wrong count is wrong)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    return {
        game.move_to_text(state, move): perft(game, game.apply(state, move), depth - 1)
        for move in game.legal_moves(state)
    }
