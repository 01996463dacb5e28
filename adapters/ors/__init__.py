"""The ORS (OpenReward Standard) adapter (adapters/ors/env.py, server.py; docs/ors.md).

``openreward`` is imported on first use of a name below;
``python -m adapters.ors --port N`` serves every game as the ``gamebridge`` environment.
"""

from __future__ import annotations

from typing import Any

_NAMES = {
    "ENV_NAME": "env",
    "GameBridge": "env",
    "MoveArguments": "env",
    "environment_class": "env",
    "split_names": "env",
    "create_app": "server",
    "openreward_spec": "client",
    "use_local_server": "client",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'adapters.ors' has no attribute {name!r}")
    if module == "client":  # no openreward import: it only sets environment variables
        from adapters.ors import client

        return getattr(client, name)
    from adapters.ors import env, server

    return getattr(env if module == "env" else server, name)
