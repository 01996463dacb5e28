"""Shared by the reliability tests: which servers, and how they are started.

Servers start together, the way ``rollouts/load.py`` starts them (as their drivers
do), with a short idle timeout and a small session cap so that expiry and the cap
can be tested. The session-scoped fixture lives in ``conftest.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollouts.drivers.nemo_gym import nemo_python
from rollouts.load import SERVERS

IDLE_TIMEOUT = {"openenv": 3.0, "nemo_gym": 5.0, "nemo_gym_tools": 5.0}
"""Seconds. OpenEnv's reaper wakes every ``max(timeout / 4, 5)`` s. NeMo Gym's is
longer: its storm test must open ``MAX_SESSIONS`` games before the first expires
(about 15 requests/s on a loaded 2-core machine)."""
MAX_SESSIONS = {"openenv": 32, "nemo_gym": 20, "nemo_gym_tools": 20}
"""Room for the small load (8 sessions, their abandoned or idle games), small enough
for the storm tests to reach."""
HAVE_NEMO = nemo_python().exists()
NEMO_MARKS = [
    pytest.mark.nemo,
    pytest.mark.skipif(not HAVE_NEMO, reason=f"{nemo_python()} is missing: make setup-nemo"),
]


def server_params() -> list[Any]:
    """``SERVERS`` as pytest params, NeMo Gym ones marked (and skipped without .venv-nemo)."""
    return [pytest.param(s, marks=NEMO_MARKS if s.startswith("nemo") else []) for s in SERVERS]
