"""Shared by the reliability tests: which servers, and how they are started.

Servers start together, the way ``rollouts/evaluation/load.py`` starts them (as their drivers
do), with a short idle timeout and a small session cap so that expiry and the cap
can be tested. The session-scoped fixture lives in ``conftest.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from rollouts.drivers.nemo_gym import nemo_python
from rollouts.drivers.ors import ORSDriver, ors_python
from rollouts.evaluation.load import SERVERS

IDLE_TIMEOUT = {"openenv": 3.0, "nemo_gym": 5.0, "nemo_gym_tools": 5.0, "ors": 5.0}
"""Seconds. OpenEnv's reaper wakes every ``max(timeout / 4, 5)`` s. NeMo Gym's is
longer: its storm test must open ``MAX_SESSIONS`` games before the first expires
(about 15 requests/s on a loaded 2-core machine). ORS's reaper here wakes every second."""
MAX_SESSIONS = {"openenv": 32, "nemo_gym": 20, "nemo_gym_tools": 20, "ors": 20}
"""Room for the small load (8 sessions, their abandoned or idle games), small enough
for the storm tests to reach."""
HAVE_NEMO = nemo_python().exists()
NEMO_MARKS = [
    pytest.mark.nemo,
    pytest.mark.skipif(not HAVE_NEMO, reason=f"{nemo_python()} is missing: make setup-nemo"),
]
HAVE_ORS = ORSDriver().available()[0]
ORS_MARKS = [pytest.mark.skipif(not HAVE_ORS, reason=f"{ors_python()} is missing: make setup-ors")]


def can_start(name: str) -> bool:
    """Whether the server ``name`` can start here (its venv exists)."""
    return (HAVE_NEMO or not name.startswith("nemo")) and (HAVE_ORS or name != "ors")


def marks(name: str) -> list[Any]:
    return NEMO_MARKS if name.startswith("nemo") else ORS_MARKS if name == "ors" else []


def server_params() -> list[Any]:
    """``SERVERS`` as pytest params, NeMo Gym and ORS ones marked (skipped without their venv)."""
    return [pytest.param(s, marks=marks(s)) for s in SERVERS]
