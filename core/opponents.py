"""Scripted opponents the model plays against.

Every random choice an opponent makes comes from the ``rng`` it is handed.
The episode builds it with ``opponent_rng(task.seed, game name, state)``, so a
reply depends only on the task seed and the position: the same in any
process, under any ``PYTHONHASHSEED``, whatever happened before.

``MinimaxOpponent`` picks uniformly among *all* equally good moves, never the
first of them: a deterministic opponent is one a model can memorise.
"""

from __future__ import annotations

import math
import random
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from core.games.base import Game
from core.rng import derive_rng
from core.search import SearchResult, mcts, mcts_simulations, search

OPPONENT_KINDS: tuple[str, ...] = ("minimax", "random", "mcts")
"""The ``kind`` values ``make_opponent`` accepts."""


def _legal_moves(game: Game[Any, Any], state: Hashable) -> list[Any]:
    moves = list(game.legal_moves(state))
    if not moves:
        raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
    return moves


class Opponent(ABC):
    """A scripted player: given a position, choose a legal move."""

    name: str
    """A short description, e.g. ``"minimax:2"``, for logs and reports."""
    searches: bool = True
    """Whether a move may take a search (seconds at a high depth): servers then run the
    opponent's turn off their event loop. ``False`` for opponents that look nothing up."""

    @abstractmethod
    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """A legal move for the player to move in ``state``, drawing any
        randomness from ``rng`` only. Raises ``ValueError`` when the game is over."""

    def distribution(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """Every move :meth:`choose` may play at ``state`` and its probability (the
        policy itself, for exact evaluation: each branch weighted, nothing sampled).
        Raises ``NotImplementedError`` for an opponent whose policy has no closed form
        (MCTS), ``ValueError`` when the game is over."""
        raise NotImplementedError(f"{self.name} has no closed-form move distribution")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class RandomOpponent(Opponent):
    """Plays a uniformly random legal move."""

    searches = False

    def __init__(self) -> None:
        self.name = "random"

    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """``rng.choice`` of the legal moves."""
        return rng.choice(_legal_moves(game, state))

    def distribution(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """Each legal move, equally likely."""
        moves = _legal_moves(game, state)
        return {m: 1.0 / len(moves) for m in moves}


class MinimaxOpponent(Opponent):
    """Searches ``depth`` plies and plays one of the best moves, chosen
    uniformly at random.

    Search results depend only on (game, position, depth), so the last
    ``cache_size`` of them are kept (thread-safe LRU); the random tie-break is
    drawn afresh on every call.
    """

    def __init__(self, depth: int, cache_size: int = 4096) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"minimax depth must be an int >= 1, got {depth!r}")
        self.depth = depth
        self.name = f"minimax:{depth}"
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, Hashable], SearchResult[Any]] = OrderedDict()
        self._lock = threading.Lock()

    def search(self, game: Game[Any, Any], state: Any) -> SearchResult[Any]:
        """The (cached) search result at ``state``."""
        key = (game.spec.name, state)
        with self._lock:
            result = self._cache.get(key)
            if result is not None:
                self._cache.move_to_end(key)
                return result
        result = search(game, state, self.depth)
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result

    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """``rng.choice`` of every move of the best value."""
        best_moves = self.search(game, state).best_moves
        if not best_moves:
            raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
        return rng.choice(best_moves)

    def distribution(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """Each move of the best value, equally likely."""
        best_moves = self.search(game, state).best_moves
        if not best_moves:
            raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
        return {m: 1.0 / len(best_moves) for m in best_moves}


class MctsOpponent(Opponent):
    """Monte Carlo tree search at difficulty ``level``: 10 * 2 ** (level - 1)
    simulations with random rollouts, run by the game itself where it has its own
    (``Game.mcts``: the OpenSpiel bridge runs pyspiel's ``MCTSBot``), else by
    ``core.search.mcts`` (plain UCT, the native games). Every random choice comes
    from the ``rng`` it is handed, so the reply depends only on the task seed and
    the position."""

    def __init__(self, level: int) -> None:
        if isinstance(level, bool) or not isinstance(level, int) or level < 1:
            raise ValueError(f"mcts level must be an int >= 1, got {level!r}")
        self.level = level
        self.name = f"mcts:{level}"

    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """``game.mcts(state, level, rng)``, or ``core.search.mcts`` for a game
        without its own."""
        _legal_moves(game, state)
        if type(game).mcts is Game.mcts:
            return mcts(game, state, mcts_simulations(self.level), rng)
        return game.mcts(state, self.level, rng)


class MixedOpponent(Opponent):
    """With probability ``random_move_prob`` a random legal move, else ``base``'s.

    For 0 < p < 1 one ``rng.random()`` draw decides, then the chosen policy
    draws from the same ``rng``. At p = 0 and p = 1 no deciding draw is made,
    so the opponent is move-for-move the base or the random opponent.
    """

    def __init__(self, base: Opponent, random_move_prob: float) -> None:
        if not isinstance(random_move_prob, (int, float)) or isinstance(random_move_prob, bool):
            raise ValueError(f"random_move_prob must be a number, got {random_move_prob!r}")
        if math.isnan(random_move_prob) or not 0.0 <= random_move_prob <= 1.0:
            raise ValueError(f"random_move_prob must lie in [0, 1], got {random_move_prob!r}")
        self.base = base
        self.random_move_prob = float(random_move_prob)
        self.name = f"{base.name}+random:{self.random_move_prob:g}"
        self._random = RandomOpponent()

    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """A random move with probability ``random_move_prob``, else the base's."""
        p = self.random_move_prob
        if p >= 1.0 or (p > 0.0 and rng.random() < p):
            return self._random.choose(game, state, rng)
        return self.base.choose(game, state, rng)

    def distribution(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """``random_move_prob`` spread over the legal moves, the rest as the base plays."""
        p = self.random_move_prob
        out = {m: p * q for m, q in self._random.distribution(game, state).items()}
        if p < 1.0:
            for m, q in self.base.distribution(game, state).items():
                out[m] = out.get(m, 0.0) + (1.0 - p) * q
        return out


class NoMoveLeftError(LookupError):
    """A :class:`MoveListOpponent` was asked for a move beyond its list.

    ``state`` is the position it was asked about: where a person (the play
    page) has to choose the next move."""

    def __init__(self, state: Any, message: str) -> None:
        super().__init__(message)
        self.state = state
        self.move: str | None = None
        """The move the episode's seat had just played (set by ``Episode.step``;
        ``None`` when it was asked at ``reset``)."""


class MoveListOpponent(Opponent):
    """Plays the given move texts in order, each through the checked path
    (``parse_move``): a person at the play page is this opponent, and so is
    a replay of that person's game.

    Asked for a move past the end of its list, it raises
    :class:`NoMoveLeftError` with the position (the episode is then
    mid-step: throw it away, add the move, replay). A text that is not a
    legal move there raises the game's ``InvalidMoveError`` or
    ``IllegalMoveError``.
    """

    searches = False

    def __init__(self, moves: Sequence[str] = ()) -> None:
        self.moves = list(moves)
        self.played = 0
        self.name = "moves"

    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """The next listed move, parsed in ``state`` (``rng`` is not used)."""
        if game.is_terminal(state):
            raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
        if self.played >= len(self.moves):
            raise NoMoveLeftError(state, f"no move {self.played + 1} in the list")
        move = game.parse_move(state, self.moves[self.played])
        self.played += 1
        return move


_SHARED: dict[int, MinimaxOpponent] = {}
_SHARED_LOCK = threading.Lock()
SHARED_CACHE_SIZE = 65_536
"""Search results one shared ``MinimaxOpponent`` per depth keeps (all of
Tic-Tac-Toe's 5,478 positions fit)."""


def shared_minimax(depth: int) -> MinimaxOpponent:
    """The process-wide ``MinimaxOpponent`` of ``depth``: search results depend
    only on (game, position, depth), so every episode may share one cache (a
    fresh opponent per episode searched the opening again in every game). The
    random tie-break still comes from each call's ``rng``."""
    if type(depth) is not int:  # True == 1 would find depth 1's opponent in the table
        return MinimaxOpponent(depth)  # raises the usual ValueError
    with _SHARED_LOCK:
        opponent = _SHARED.get(depth)
        if opponent is None:
            opponent = _SHARED[depth] = MinimaxOpponent(depth, cache_size=SHARED_CACHE_SIZE)
        return opponent


def make_opponent(kind: str = "minimax", depth: int = 2, random_move_prob: float = 0.0) -> Opponent:
    """The opponent a task describes.

    ``kind`` is ``"minimax"`` (search ``depth`` plies), ``"mcts"`` (the game's
    tree search at level ``depth``) or ``"random"`` (``depth`` is then
    ignored); a ``random_move_prob`` above 0 mixes in random moves. Raises
    ``ValueError`` for an unknown kind, a depth below 1 or a probability
    outside [0, 1].
    """
    if kind == "random":
        base: Opponent = RandomOpponent()
    elif kind == "minimax":
        base = shared_minimax(depth)
    elif kind == "mcts":
        base = MctsOpponent(depth)
    else:
        raise ValueError(f"unknown opponent kind {kind!r}; expected one of {OPPONENT_KINDS}")
    mixed = MixedOpponent(base, random_move_prob)  # validates the probability
    if kind == "random" or mixed.random_move_prob == 0.0:
        return base
    return mixed


def opponent_rng(seed: int, game_name: str, state: Hashable) -> random.Random:
    """The generator for the opponent's reply at ``state`` in a task of ``seed``."""
    return derive_rng(seed, "opponent", game_name, state)
