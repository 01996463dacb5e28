"""The game registry. Games are imported on first use, so ``import core`` stays
instant; a new game is one file here plus one line in ``_BUILTIN``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

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

# name -> "module:Class"; imported lazily by make_game.
_BUILTIN: dict[str, str] = {
    "tictactoe": "core.games.tictactoe:TicTacToe",
    "connect_four": "core.games.connect_four:ConnectFour",
    "othello": "core.games.othello:Othello",
    "wordle": "core.games.wordle:Wordle",
    "nim": "core.games.nim:Nim",  # the add-a-game tutorial's game
}
_FACTORIES: dict[str, Callable[..., Game[Any, Any]]] = {}
_CACHE: dict[str, Game[Any, Any]] = {}


def register_game(name: str, factory: Callable[..., Game[Any, Any]] | str) -> None:
    """Register a game under ``name`` (a class, factory or "module:Class").

    Registering the same name again replaces the entry, so re-importing a
    module that registers itself is harmless.
    """
    if isinstance(factory, str):
        _BUILTIN[name] = factory
        _FACTORIES.pop(name, None)
    else:
        _FACTORIES[name] = factory
    _CACHE.pop(name, None)


def list_games() -> list[str]:
    """Every registered game id, sorted."""
    return sorted(set(_BUILTIN) | set(_FACTORIES))


def make_game(name: str) -> Game[Any, Any]:
    """The (stateless, shared) rules object of game ``name``."""
    game = _CACHE.get(name)
    if game is not None:
        return game
    if name in _FACTORIES:
        game = _FACTORIES[name]()
    elif name in _BUILTIN:
        module, _, cls = _BUILTIN[name].partition(":")
        game = getattr(importlib.import_module(module), cls)()
    else:
        raise KeyError(f"unknown game {name!r}; known games: {', '.join(list_games())}")
    _CACHE[name] = game
    return game


__all__ = [
    "BoardView",
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
