"""The game registry. Games are imported on first use, so ``import core`` stays
instant; a new game is one file here plus one line in ``_BUILTIN``.

A *family* is a prefix whose names a factory builds on demand:
``make_game("openspiel:chess")`` calls the OpenSpiel bridge with ``"chess"``
(``core.games.openspiel``, which imports pyspiel only then). Family games are
not in ``list_games()`` (there is one per parameter setting);
``core.games.openspiel.openspiel_games()`` lists the bridged OpenSpiel games."""

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
_FAMILIES: dict[str, str] = {
    "openspiel": "core.games.openspiel:make_openspiel_game",  # pip install -e '.[openspiel]'
}
"""prefix -> "module:function"; ``make_game("prefix:rest")`` calls it with ``rest``."""
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


def family_of(name: str) -> str | None:
    """The family prefix of ``name`` (``"openspiel"`` for ``"openspiel:chess"``),
    or ``None`` for a registered game or an unknown name."""
    if not isinstance(name, str):
        return None
    prefix, sep, _ = name.partition(":")
    return prefix if sep and prefix in _FAMILIES and name not in _BUILTIN else None


def game_arg(text: str) -> str:
    """``text`` if it names a game ``make_game`` can make, for command lines
    (``argparse``'s ``type=``): otherwise ``argparse.ArgumentTypeError`` with
    one line saying why (an unknown name, a refused parameter, a missing
    engine and its install hint), so the command exits 2 with no traceback."""
    import argparse

    try:
        make_game(text)
    except KeyError as exc:
        raise argparse.ArgumentTypeError(str(exc.args[0])) from None
    except (GameError, ImportError) as exc:
        raise argparse.ArgumentTypeError(str(exc).splitlines()[0]) from None
    return text


def make_game(name: str) -> Game[Any, Any]:
    """The (stateless, shared) rules object of game ``name``.

    Raises ``KeyError`` for an unknown name; a family game may also raise
    ``GameError`` (a name its factory refuses) or ``ImportError`` (its engine
    is not installed; the message names the extra).
    """
    game = _CACHE.get(name)
    if game is not None:
        return game
    family = family_of(name)
    if family is not None:
        module, _, func = _FAMILIES[family].partition(":")
        game = getattr(importlib.import_module(module), func)(name[len(family) + 1 :])
    elif name in _FACTORIES:
        game = _FACTORIES[name]()
    elif name in _BUILTIN:
        module, _, cls = _BUILTIN[name].partition(":")
        game = getattr(importlib.import_module(module), cls)()
    else:
        families = ", ".join(f"{prefix}:NAME" for prefix in _FAMILIES)
        raise KeyError(
            f"unknown game {name!r}; known games: {', '.join(list_games())} (and {families})"
        )
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
    "family_of",
    "game_arg",
    "list_games",
    "make_game",
    "register_game",
]
