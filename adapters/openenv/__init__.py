"""The OpenEnv adapter (adapters/openenv/env.py; docs/openenv.md).

Importing openenv takes 5-15 s, so the names below load on first use;
``python -m adapters.openenv --game othello --port N`` serves every game.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "GameAction",
    "GameEnvClient",
    "GameEnvironment",
    "GameObservation",
    "GameState",
    "create_game_app",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'adapters.openenv' has no attribute {name!r}")
    from adapters.openenv import env

    return getattr(env, name)
