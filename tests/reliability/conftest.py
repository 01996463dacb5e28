"""The environment servers of the reliability tests, started once for the directory.

``reliability_servers`` maps ``openenv``, ``nemo_gym``, ``nemo_gym_tools`` and ``ors``
(NeMo Gym only with ``.venv-nemo``, ORS only with ``.venv-ors``) to running servers
(see reliability_servers.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from reliability_servers import IDLE_TIMEOUT, MAX_SESSIONS, can_start

from rollouts.evaluation.load import SERVERS, server_manager


@pytest.fixture(scope="session")
def reliability_servers() -> Iterator[dict[str, Any]]:
    from rollouts.drivers.nemo_gym import _start_together

    names = [s for s in SERVERS if can_start(s)]
    managers = [server_manager(n, 8, IDLE_TIMEOUT[n], MAX_SESSIONS[n]) for n in names]
    running = _start_together(managers)
    try:
        yield dict(zip(names, running, strict=True))
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)
