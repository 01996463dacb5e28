"""The contract every game in gamebridge meets.

A game is a stateless rules object (OpenSpiel's ``Game``) over immutable,
hashable states (OpenSpiel's ``State``). Two ways to move, as in python-chess:

* ``apply(state, move)`` — the fast path, no validation; search code uses it.
* ``play(state, text)`` — the checked path: parse the text, check legality,
  raise a typed error. Anything that touches model text uses it.

Moves are small hashable values (an ``int`` for the board games, a ``str`` for
Wordle); ``move_to_text`` and ``parse_move`` convert them to and from the
notation the model reads and writes.
"""

from __future__ import annotations

import enum
import random
from abc import ABC, abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

State = TypeVar("State", bound=Hashable)
Move = TypeVar("Move", bound=Hashable)


class GameError(ValueError):
    """Base of the errors a game raises on bad input; always a ``ValueError``."""


class InvalidMoveError(GameError):
    """The text is not a move in this game's notation (a format failure)."""


class IllegalMoveError(GameError):
    """The text names a real move that is not legal in this position."""


class Termination(enum.Enum):
    """Why a game ended."""

    WIN = "win"
    """A player met the game's winning condition (a line, more discs, the word)."""
    DRAW = "draw"
    """The board filled or the game ended with equal scores."""
    LOSS = "loss"
    """Single-player games only: the player ran out of attempts."""


@dataclass(frozen=True)
class Outcome:
    """The result of a finished game.

    ``winner`` is the winning player's index, or ``None`` for a draw (and for a
    lost single-player game). ``scores`` holds one number per player: discs for
    Othello, guesses left for Wordle, 1/0 for line games.
    """

    termination: Termination
    winner: int | None
    scores: tuple[float, ...]

    def result_for(self, player: int) -> str:
        """``"win"``, ``"draw"`` or ``"loss"`` from ``player``'s point of view."""
        if self.winner is None:
            return "loss" if self.termination is Termination.LOSS else "draw"
        return "win" if self.winner == player else "loss"


@dataclass(frozen=True)
class GameSpec:
    """One declarative description of a game (OpenSpiel's ``_GAME_INFO``).

    Adapters, prompts and docs read it instead of hard-coding facts.
    """

    name: str
    """Registry id, e.g. ``"othello"``."""
    title: str
    """Human name, e.g. ``"Othello"``."""
    num_players: int
    """1 (Wordle) or 2 (the board games)."""
    player_names: tuple[str, ...]
    """How the prompt names each side, e.g. ``("Black", "White")``."""
    board_shape: tuple[int, int]
    """Rows and columns of the board (Wordle: guesses x letters)."""
    max_plies: int
    """An upper bound on the length of any game, passes included."""
    move_syntax: str
    """One sentence telling the model how to write a move."""
    move_examples: tuple[str, ...]
    """A few well-formed moves, shown in prompts and docs."""
    rules: str
    """A short statement of the rules for the system prompt."""
    list_legal_moves: bool = True
    """Whether observations list the legal moves (False where there are
    thousands, as in Wordle)."""
    opponents: tuple[str, ...] = ("minimax", "random", "mcts")
    """The opponent kinds a task of this two-player game may ask for
    (``core.opponents.make_opponent``): alpha-beta needs an evaluation; MCTS runs
    the game's own ``Game.mcts`` or else core's UCT (``core.search.mcts``), which
    needs only the rules."""
    hidden_information: bool = False
    """Whether a player's view hides part of the position (cards, an unseen
    board): each seat then reads ``Game.observation(state, seat)``, and the
    observation cannot be read back into a position (scripted players pick
    from the listed legal moves)."""
    public_moves: bool = True
    """Whether a player sees the moves the others make (Kuhn Poker's bets yes,
    Phantom Tic-Tac-Toe's marks no): where not, an observation says a move was
    made without naming it."""
    chance: bool = False
    """Whether the game has chance nodes (dice, dealt cards): ``chance_outcomes``
    lists them and the episode draws each from the task's derived RNG."""


Cell = tuple[int, int]
"""``(row, column)`` of a board view, both from 0, row 0 at the top."""


@dataclass(frozen=True)
class BoardView:
    """A position as a grid of cells, for a user interface (the play page).

    The view is the game's own statement of what each cell shows and which
    legal move a click on a cell plays, so an interface draws it and maps
    clicks to moves without knowing any rule.

    ``cells[r][c]`` is the cell's text (a piece glyph such as ``"X"`` or
    ``"B"``, a letter, or ``""`` when empty); ``marks[r][c]`` names its style
    (``""``, ``"p0"``/``"p1"`` for a player's piece, ``"stone"``,
    ``"green"``/``"yellow"``/``"gray"`` for Wordle feedback). ``moves`` pairs
    each legal move's text with the cells a click on which plays it (every
    cell belongs to at most one move); ``other_moves`` are the legal moves no
    cell stands for (Othello's ``pass``). ``typed`` games take their moves as
    typed text instead (Wordle: ``moves`` is empty). ``to_play`` is the
    player to move, ``None`` once the game is over. ``highlight`` names the
    cells to emphasise, such as a finished game's winning line (empty when
    there is none to show).
    """

    cells: tuple[tuple[str, ...], ...]
    marks: tuple[tuple[str, ...], ...]
    moves: tuple[tuple[str, tuple[Cell, ...]], ...] = ()
    other_moves: tuple[str, ...] = ()
    typed: bool = False
    to_play: int | None = None
    row_labels: tuple[str, ...] = ()
    col_labels: tuple[str, ...] = ()
    highlight: tuple[Cell, ...] = ()

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``."""
        return len(self.cells), len(self.cells[0]) if self.cells else 0

    def move_at(self, row: int, col: int) -> str | None:
        """The move a click on ``(row, col)`` plays, or ``None``."""
        for text, cells in self.moves:
            if (row, col) in cells:
                return text
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form: lists for tuples, ``click`` maps ``"r,c"`` to a move."""
        return {
            "rows": self.shape[0],
            "cols": self.shape[1],
            "cells": [list(row) for row in self.cells],
            "marks": [list(row) for row in self.marks],
            "moves": {text: [list(c) for c in cells] for text, cells in self.moves},
            "click": {f"{r},{c}": text for text, cells in self.moves for r, c in cells},
            "other_moves": list(self.other_moves),
            "typed": self.typed,
            "to_play": self.to_play,
            "row_labels": list(self.row_labels),
            "col_labels": list(self.col_labels),
            "highlight": [list(c) for c in self.highlight],
        }


class Game(ABC, Generic[State, Move]):
    """Rules of one game. Subclasses set ``spec`` and implement the methods."""

    spec: GameSpec

    # --- positions -------------------------------------------------------
    @abstractmethod
    def initial_state(self, rng: random.Random | None = None) -> State:
        """The start position. Games with hidden or random set-up (Wordle's
        answer) draw it from ``rng``; deterministic games ignore it."""

    @abstractmethod
    def to_play(self, state: State) -> int:
        """Index of the player to move (0 moves first)."""

    @abstractmethod
    def legal_moves(self, state: State) -> Sequence[Move]:
        """Every legal move, in one fixed sorted order; empty when terminal."""

    @abstractmethod
    def apply(self, state: State, move: Move) -> State:
        """Fast path: the position after ``move``. No validation."""

    @abstractmethod
    def is_terminal(self, state: State) -> bool:
        """True when the game is over."""

    @abstractmethod
    def outcome(self, state: State) -> Outcome | None:
        """The result, or ``None`` while the game goes on."""

    # --- notation --------------------------------------------------------
    @abstractmethod
    def move_to_text(self, state: State, move: Move) -> str:
        """The move in the notation the model uses."""

    @abstractmethod
    def parse_move(self, state: State, text: str) -> Move:
        """Parse notation into a move. Raises ``InvalidMoveError`` for text that
        is not a move of this game, ``IllegalMoveError`` for a move that is not
        legal in ``state``."""

    @abstractmethod
    def render(self, state: State) -> str:
        """The position as the model sees it: the board and whose turn it is,
        never hidden information (Wordle's answer)."""

    def parse_board(self, text: str) -> State:
        """Inverse of ``render``: the position a rendered board shows (for
        Wordle, the guesses and feedback, with the answer unknown). Scripted
        players use it to play from the observation text alone, as a model
        would. ``text`` may contain other lines around the board."""
        raise NotImplementedError(f"{self.spec.name} cannot read its board back")

    def chance_outcomes(self, state: State) -> Sequence[tuple[Move, float]]:
        """At a chance node (a die roll, a card dealt) every outcome with its
        probability, in one fixed order; empty at a player's turn. The episode
        resolves chance nodes itself, drawing from an RNG derived from the task
        seed and the position (``core.episode``), so every rollout of a task
        meets the same dice. Default: no chance nodes."""
        return ()

    def observation(self, state: State, player: int) -> str:
        """The position as ``player`` sees it. A game with hidden information
        (``spec.hidden_information``) shows only that player's view; the
        default is ``render(state)``, the same for every player."""
        return self.render(state)

    def mcts(self, state: State, level: int, rng: random.Random) -> Move:
        """A game's own Monte Carlo tree search at difficulty ``level``, drawing
        its seed from ``rng`` (the OpenSpiel bridge runs pyspiel's ``MCTSBot``).
        A game that does not override this gets core's UCT from the MCTS
        opponent (``core.search.mcts``, the same simulation counts)."""
        raise NotImplementedError(f"{self.spec.name} offers no MCTS opponent")

    def board_view(self, state: State) -> BoardView:
        """The position as a grid of cells and the move each cell plays
        (:class:`BoardView`), for interfaces such as the play page."""
        raise NotImplementedError(f"{self.spec.name} has no board view")

    def solve(self, state: State, rng: random.Random) -> Move:
        """One-player games only: a good move for a scripted player (Wordle:
        the guess that best splits the remaining candidates)."""
        raise NotImplementedError(f"{self.spec.name} has no solver")

    # --- scoring (read by opponents and rewards) --------------------------
    @abstractmethod
    def margin(self, state: State, player: int) -> float:
        """How far ahead ``player`` is, scaled to [-1, 1] (0 where the game has
        no natural margin)."""

    def evaluate(self, state: State, player: int) -> float:
        """Heuristic value of a non-terminal position for ``player`` in
        [-1, 1]; search scores terminal positions itself. Default: margin."""
        return self.margin(state, player)

    def ordered_moves(self, state: State) -> Sequence[Move]:
        """Legal moves in the order search should try them (best guess first).
        Default: ``legal_moves``."""
        return self.legal_moves(state)

    # --- derived, shared by every game ----------------------------------
    def play(self, state: State, text: str) -> State:
        """Checked path: parse ``text``, check legality, apply."""
        if self.is_terminal(state):
            raise IllegalMoveError(f"the game is over; no move is legal\n{self.render(state)}")
        return self.apply(state, self.parse_move(state, text))

    def legal_moves_text(self, state: State) -> list[str]:
        """The legal moves in notation, in ``legal_moves`` order."""
        return [self.move_to_text(state, m) for m in self.legal_moves(state)]

    def state_to_json(self, state: State) -> Any:
        """A JSON-able form of the state (for trajectories). Default: render."""
        return self.render(state)
