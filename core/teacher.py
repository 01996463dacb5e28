"""The teacher: the policy whose games a model is trained on.

An opponent and a teacher want different things from their ties.
``MinimaxOpponent`` picks uniformly among all moves of the best minimax value,
which is right for an opponent (a model must not be able to memorise it) but
poor for a teacher: against an imperfect player, most "equally good" moves are
not equally good. In Tic-Tac-Toe the uniform-tie minimax wins about 0.87 of
its games against a random opponent (both sides averaged); this teacher wins
about 0.96.

``Teacher`` keeps minimax's guarantee (it only ever plays a move of the best
minimax value, so it never loses a game minimax would not lose) and breaks
ties by its *chance against imperfect play*: the expected score (win 1, draw
1/2, loss 0) of each best move when the other side plays uniformly random
legal moves and the teacher keeps playing this way. The expectation looks
``lookahead`` of the teacher's own decisions ahead (``None``: to the end of
the game; Tic-Tac-Toe is small enough); at the horizon a position scores
``(1 + game.evaluate) / 2``. Moves whose chances tie exactly are chosen
uniformly with the ``rng`` handed in, so teacher games still differ.

One-player games (Wordle) have no opponent to exploit: the teacher is the
game's own solver (``Game.solve``).

Every value depends only on (game, position, depth, lookahead): they are
cached (thread-safe, bounded); the random tie-break is drawn on every call.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Hashable
from typing import Any

from core.games import make_game
from core.games.base import Game
from core.opponents import MinimaxOpponent, MixedOpponent, Opponent

TEACHER_DEPTHS: dict[str, int] = {"tictactoe": 9, "connect_four": 8, "nim": 12, "othello": 4}
"""The teacher's search depth per game (Tic-Tac-Toe: the whole game, so optimal).

Connect Four and Othello were chosen on the recipe's ladder (``rollouts.training.recipe.
ladder``: 100 games a rung, sides alternating, the recipe's openings; wins/draws/losses):

- Connect Four, depth 8 with lookahead 0: 72/6/22 against ``minimax:2`` and 67/9/24
  against ``minimax:4`` (win 0.67 [0.57, 0.75]), 12 ms a move; the depth-4 teacher it
  replaces (lookahead 1) played 48/14/38 and 45/10/45 (win 0.45 [0.36, 0.55]) at 2.5 ms,
  depth 8 with lookahead 1 52/18/30 against ``minimax:4`` at 45 ms (its tie-break
  searches every random reply of each tied move; no stronger).
- Othello, depth 4: 77/0/23 against ``minimax:3`` and 84/1/15 against the seed's depth-3
  opponent with 0-0.25 random moves, 2.8 ms a move; depth 2, the one it replaces, played
  28/2/70 and 40/4/56 at 0.2 ms; depth 5 93/0/7 and 96/0/4 at 12 ms (kept for later: four
  times the cost)."""
TEACHER_LOOKAHEAD: dict[str, int | None] = {"tictactoe": None, "connect_four": 0}
"""The tie-break's horizon in teacher decisions per game (default 1; 0: the random
replies to each tied move, then the game's evaluation)."""
_TIE = 1e-9


class Teacher(Opponent):
    """Minimax to ``depth`` with ties broken toward the best chance against a
    random player (see the module docstring). Usable wherever an
    ``Opponent`` is: ``choose(game, state, rng)`` for the player to move."""

    def __init__(self, depth: int, lookahead: int | None = 1, cache_size: int = 200_000) -> None:
        if lookahead is not None and (
            isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 0
        ):
            raise ValueError(f"lookahead must be an int >= 0 or None, got {lookahead!r}")
        self.minimax = MinimaxOpponent(depth, cache_size=cache_size)
        self.depth = depth
        self.lookahead = lookahead
        self.name = f"teacher:{depth}" + ("" if lookahead is None else f"/{lookahead}")
        self._cache_size = cache_size
        self._chances: dict[tuple[str, Hashable, int, int], float] = {}
        self._lock = threading.Lock()

    # --- the policy ---------------------------------------------------------------
    def choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> Any:
        """A best minimax move of the best chance; exact ties chosen with ``rng``."""
        if game.spec.num_players == 1:
            return game.solve(state, rng)
        tied = self.minimax.search(game, state).best_moves
        if len(tied) == 1:  # nothing to break: its chance would not change the choice
            return tied[0]
        scored = self.move_chances(game, state)
        if not scored:
            raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
        top = max(scored.values())
        return rng.choice([m for m, v in scored.items() if v >= top - _TIE])

    def distribution(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """Each move of the best chance, equally likely (two-player games; the
        solver of a one-player game has none)."""
        if game.spec.num_players == 1:
            raise NotImplementedError(f"{self.name}: a solver has no move distribution")
        tied = self.minimax.search(game, state).best_moves
        if len(tied) == 1:
            return {tied[0]: 1.0}
        scored = self.move_chances(game, state)
        if not scored:
            raise ValueError(f"no legal move: the game is over\n{game.render(state)}")
        top = max(scored.values())
        best = [m for m, v in scored.items() if v >= top - _TIE]
        return {m: 1.0 / len(best) for m in best}

    def move_chances(self, game: Game[Any, Any], state: Any) -> dict[Any, float]:
        """Each best minimax move at ``state`` and its chance (expected score
        in [0, 1] for the player to move) against random play."""
        player = game.to_play(state)
        budget = -1 if self.lookahead is None else self.lookahead
        return {
            m: self._after(game, game.apply(state, m), player, budget)
            for m in self.minimax.search(game, state).best_moves
        }

    # --- the expectation ---------------------------------------------------------
    def _after(self, game: Game[Any, Any], state: Any, player: int, budget: int) -> float:
        """Chance of ``player`` at ``state``: random moves for the other side,
        the teacher's best for ``player``; ``budget`` teacher decisions left
        (negative: unbounded)."""
        if game.is_terminal(state):
            outcome = game.outcome(state)
            if outcome is None or outcome.winner is None:
                return 0.5
            return 1.0 if outcome.winner == player else 0.0
        key = (game.spec.name, state, player, budget)
        with self._lock:
            cached = self._chances.get(key)
        if cached is not None:
            return cached
        if game.to_play(state) == player:
            if budget == 0:
                value = (1.0 + game.evaluate(state, player)) / 2.0
            else:
                value = max(
                    self._after(game, game.apply(state, m), player, budget - 1)
                    for m in self.minimax.search(game, state).best_moves
                )
        else:
            moves = list(game.legal_moves(state))
            value = sum(
                self._after(game, game.apply(state, m), player, budget) for m in moves
            ) / len(moves)
        with self._lock:
            if len(self._chances) >= self._cache_size:
                self._chances.clear()
            self._chances[key] = value
        return value


WEAK_TEACHER_DEPTH = 1
WEAK_TEACHER_RANDOM_MOVE_PROB = 0.05
"""The weak teacher: minimax to depth 1 (its own move, scored by the game's evaluation;
ties uniform) with 5% random moves. Its exact Tic-Tac-Toe W/D/L (both sides averaged,
every branch enumerated) is 91.8/5.6/2.6 against random play and 0/76.0/24.0 against
the optimal opponent: the seed course's teacher (GPT-5 mini, 100 games) played 90/9/1
and 0/76/24. Without the random moves depth 1 plays 93.5/5.0/1.5 and 0/80.9/19.1;
depth 2 with 15% random moves 85.7/9.7/4.7 and 0/75.6/24.4."""


def weak_teacher(game: str) -> Opponent:
    """The seed's imperfect teacher profile (:data:`WEAK_TEACHER_DEPTH`,
    :data:`WEAK_TEACHER_RANDOM_MOVE_PROB`): a player RL can beat, from games a
    student can imitate. Two-player games only (``ValueError`` otherwise)."""
    if make_game(game).spec.num_players != 2:
        raise ValueError(f"the weak teacher needs a two-player game, not {game!r}")
    teacher = MixedOpponent(MinimaxOpponent(WEAK_TEACHER_DEPTH), WEAK_TEACHER_RANDOM_MOVE_PROB)
    teacher.name = f"weak:minimax:{WEAK_TEACHER_DEPTH}+random:{WEAK_TEACHER_RANDOM_MOVE_PROB:g}"
    return teacher


def make_teacher(
    game: str, depth: int | None = None, lookahead: int | str | None = "default"
) -> Teacher:
    """The teacher for ``game`` (depth and lookahead from :data:`TEACHER_DEPTHS`
    and :data:`TEACHER_LOOKAHEAD` unless given). Raises ``KeyError`` for an
    unknown game (as ``make_game`` does)."""
    make_game(game)  # validates the name
    d = TEACHER_DEPTHS.get(game, 2) if depth is None else depth
    look = TEACHER_LOOKAHEAD.get(game, 1) if lookahead == "default" else lookahead
    if isinstance(look, str):
        raise ValueError(f"lookahead must be an int >= 0 or None, got {look!r}")
    teacher = Teacher(d, look)
    if make_game(game).spec.num_players == 1:
        teacher.name = f"solver:{game}"
    return teacher
