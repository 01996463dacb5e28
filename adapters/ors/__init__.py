"""The ORS (OpenReward Standard) adapter (adapters/ors/env.py, server.py; docs/ors.md).

``openreward`` is imported on first use of a name below;
``python -m adapters.ors --port N`` serves every game as the ``gamebridge`` environment.
"""

from adapters._lazy import lazy_names

_MODULES = {
    "ENV_NAME": "env",
    "GameBridge": "env",
    "MoveArguments": "env",
    "environment_class": "env",
    "split_names": "env",
    "create_app": "server",
    "openreward_spec": "client",  # client imports no openreward: it sets environment variables
    "use_local_server": "client",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_names(__name__, _MODULES)
