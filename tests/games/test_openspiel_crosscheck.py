"""Cross-check the board games against OpenSpiel, an independent implementation.

For 200 seeded random games per game, at every ply: the same legal moves
(OpenSpiel's action ids are our move ids for all three games: Tic-Tac-Toe
cells 0-8, Connect Four columns 0-6, Othello squares row * 8 + col and the
pass 64), the same side to move, the same board, the same terminal flag, and
at the end the same result.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from core import make_game

pyspiel = pytest.importorskip(
    "pyspiel", reason="OpenSpiel is not installed (pip install -e '.[dev]' adds open-spiel)"
)

GAMES = 200


def _othello_board(game: Any, state: Any, spiel_state: Any) -> tuple[object, object]:
    """(black, white) masks from both engines (OpenSpiel's observation planes for
    player 0 are empty, player 0's discs, player 1's discs)."""
    planes = spiel_state.observation_tensor(0)
    black = sum(1 << i for i in range(64) if planes[64 + i])
    white = sum(1 << i for i in range(64) if planes[128 + i])
    return game.discs(state), (black, white)


def _grid_board(rows: int) -> Callable[[Any, Any, Any], tuple[object, object]]:
    """The marks in the first ``rows`` lines of our rendering (free cells as
    ``.``) and OpenSpiel's text board (``x``/``o``/``.``, top row first)."""

    def board(game: Any, state: Any, spiel_state: Any) -> tuple[object, object]:
        ours = []
        for line in game.render(state).splitlines()[:rows]:
            marks = "".join(
                "x" if ch == "X" else "o" if ch == "O" else "." for ch in line if ch not in " |-+"
            )
            if marks:  # Tic-Tac-Toe's separator lines leave nothing
                ours.append(marks)
        theirs = str(spiel_state).strip().splitlines()
        return ours, theirs[-len(ours) :]

    return board


CASES = [
    ("othello", "othello", _othello_board),
    ("connect_four", "connect_four", _grid_board(6)),
    ("tictactoe", "tic_tac_toe", _grid_board(5)),
]


@pytest.mark.parametrize(("name", "spiel_name", "board"), CASES, ids=[c[0] for c in CASES])
def test_random_games_match_openspiel(
    name: str, spiel_name: str, board: Callable[[Any, Any, Any], tuple[object, object]]
) -> None:
    game = make_game(name)
    spiel_game = pyspiel.load_game(spiel_name)
    rng = random.Random(f"openspiel-crosscheck-{name}")
    for game_index in range(GAMES):
        state = game.initial_state()
        spiel_state = spiel_game.new_initial_state()
        ply = 0
        while True:
            where = f"{name} game {game_index} ply {ply}"
            moves = list(game.legal_moves(state))
            assert game.is_terminal(state) == spiel_state.is_terminal(), where
            ours, theirs = board(game, state, spiel_state)
            assert ours == theirs, where
            if spiel_state.is_terminal():
                assert moves == [], where
                outcome = game.outcome(state)
                assert outcome is not None, where
                returns = spiel_state.returns()
                for player in (0, 1):
                    expected = (
                        0.0
                        if outcome.winner is None
                        else (1.0 if outcome.winner == player else -1.0)
                    )
                    assert returns[player] == expected, where
                break
            assert moves == spiel_state.legal_actions(), where
            assert game.to_play(state) == spiel_state.current_player(), where
            move = rng.choice(moves)
            state = game.apply(state, move)
            spiel_state.apply_action(move)
            ply += 1
        assert ply <= game.spec.max_plies
