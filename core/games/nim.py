"""Nim: the add-a-game tutorial's game (docs/add-a-game.md).

Overview
--------
Three piles of 3, 4 and 5 stones. Two players take turns removing one or
more stones from a single pile; whoever takes the last stone wins (normal
play). The whole game is this one file plus one line in the registry:
every adapter and driver plays it unchanged.

Moves
-----
A move ``(pile, count)``: take ``count`` stones from pile ``pile`` (1-based),
written ``"2:3"`` (take 3 from pile 2).

State
-----
``NimState(piles, to_play)``: a tuple of pile sizes and the player to move.

Scoring
-------
``margin`` is +1 / -1 for the winner / loser at the end, 0 before;
``evaluate`` uses the nim-sum: a position with nim-sum 0 is lost for the
player to move under perfect play.
"""

from __future__ import annotations

import random
import re
from typing import NamedTuple

from core.games.base import (
    BoardView,
    Game,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
)

START = (3, 4, 5)
PLAYERS = ("First", "Second")
_MOVE = re.compile(r"^\s*(\d{1,2})\s*:\s*(\d{1,2})\s*$")
_PILE_LINE = re.compile(r"^Pile (\d+): (\d+)\b", re.MULTILINE)
_TURN_LINE = re.compile(r"^(First|Second) to move\.$", re.MULTILINE)


class NimState(NamedTuple):
    piles: tuple[int, ...]
    to_play: int


class Nim(Game[NimState, tuple[int, int]]):
    spec = GameSpec(
        name="nim",
        title="Nim",
        num_players=2,
        player_names=PLAYERS,
        board_shape=(len(START), max(START)),
        max_plies=sum(START),
        move_syntax="Write PILE:COUNT to take COUNT stones from pile PILE, for example 2:3.",
        move_examples=("1:1", "2:3", "3:5"),
        rules=(
            "Players take turns removing one or more stones from a single pile. "
            "Whoever takes the last stone wins."
        ),
    )

    def initial_state(self, rng: random.Random | None = None) -> NimState:
        return NimState(START, 0)

    def to_play(self, state: NimState) -> int:
        return state.to_play

    def legal_moves(self, state: NimState) -> list[tuple[int, int]]:
        return [(p, c) for p, size in enumerate(state.piles, 1) for c in range(1, size + 1)]

    def apply(self, state: NimState, move: tuple[int, int]) -> NimState:
        pile, count = move
        piles = list(state.piles)
        piles[pile - 1] -= count
        return NimState(tuple(piles), 1 - state.to_play)

    def is_terminal(self, state: NimState) -> bool:
        return not any(state.piles)

    def outcome(self, state: NimState) -> Outcome | None:
        if any(state.piles):
            return None
        winner = 1 - state.to_play  # the player who took the last stone
        return Outcome(Termination.WIN, winner, (1.0, 0.0) if winner == 0 else (0.0, 1.0))

    def move_to_text(self, state: NimState, move: tuple[int, int]) -> str:
        return f"{move[0]}:{move[1]}"

    def parse_move(self, state: NimState, text: str) -> tuple[int, int]:
        match = _MOVE.match(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidMoveError(f"{text!r} is not PILE:COUNT\n{self.render(state)}")
        move = (int(match[1]), int(match[2]))
        if not (1 <= move[0] <= len(state.piles) and 1 <= move[1] <= state.piles[move[0] - 1]):
            raise IllegalMoveError(
                f"cannot take {move[1]} from pile {move[0]}\n{self.render(state)}"
            )
        return move

    def render(self, state: NimState) -> str:
        lines = [f"Pile {i}: {n} {'|' * n}".rstrip() for i, n in enumerate(state.piles, 1)]
        lines.append(f"{PLAYERS[state.to_play]} to move.")
        if self.is_terminal(state):
            lines.append(f"The game is over: {PLAYERS[1 - state.to_play]} took the last stone.")
        return "\n".join(lines)

    def board_view(self, state: NimState) -> BoardView:
        width = max(START)
        cells = tuple(("|",) * n + ("",) * (width - n) for n in state.piles)
        marks = tuple(("stone",) * n + ("",) * (width - n) for n in state.piles)
        # A click on a stone takes it and every stone to its right.
        moves = tuple(
            (self.move_to_text(state, (p, c)), ((p - 1, state.piles[p - 1] - c),))
            for p, c in self.legal_moves(state)
        )
        return BoardView(
            cells=cells,
            marks=marks,
            moves=moves,
            to_play=None if self.is_terminal(state) else state.to_play,
            row_labels=tuple(f"Pile {i}" for i in range(1, len(state.piles) + 1)),
        )

    def parse_board(self, text: str) -> NimState:
        piles = tuple(int(n) for _, n in _PILE_LINE.findall(text))
        turn = _TURN_LINE.findall(text)
        if len(piles) != len(START) or len(turn) != 1:
            raise InvalidMoveError("no Nim board in the text")
        return NimState(piles, PLAYERS.index(turn[0]))

    def margin(self, state: NimState, player: int) -> float:
        result = self.outcome(state)
        if result is None:
            return 0.0
        return 1.0 if result.winner == player else -1.0

    def evaluate(self, state: NimState, player: int) -> float:
        nim_sum = 0
        for size in state.piles:
            nim_sum ^= size
        to_move_wins = nim_sum != 0
        return 0.5 if to_move_wins == (state.to_play == player) else -0.5
