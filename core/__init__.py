"""gamebridge core: games, opponents, parsing, the one turn loop, rewards, tasks.

Standard library only; no framework is imported here or below.
"""

from core.games import (
    Game,
    GameError,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
    list_games,
    make_game,
    register_game,
)

__all__ = [
    "Game",
    "GameError",
    "GameSpec",
    "IllegalMoveError",
    "InvalidMoveError",
    "Outcome",
    "Termination",
    "list_games",
    "make_game",
    "register_game",
]
