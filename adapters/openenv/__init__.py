"""The OpenEnv adapter (adapters/openenv/env.py; docs/openenv.md).

Importing openenv takes 5-15 s, so the names below load on first use;
``python -m adapters.openenv --game othello --port N`` serves every game.
"""

from adapters._lazy import lazy_names

_MODULES = {
    "GameAction": "models",
    "GameObservation": "models",
    "GameState": "models",
    "GameEnvClient": "client",
    "GameEnvironment": "env",
    "create_game_app": "env",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_names(__name__, _MODULES)
