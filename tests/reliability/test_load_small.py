"""A small ``make load`` (rollouts/load.py): 8 sessions x 3 episodes against each
environment server as a real process, with the scripted player in this process.

Every episode's server trajectory must be core's replay of the replies its own
client sent (no cross-talk), no 5xx and no error may occur, and once every client
is done only the idle/abandoned games (one per session) may be live; after the
idle timeout, none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rollouts.drivers.nemo_gym import nemo_python
from rollouts.load import SERVERS, LoadReport, run_load, server_manager

SESSIONS, EPISODES, IDLE_TIMEOUT = 8, 3, 2.0
HAVE_NEMO = nemo_python().exists()
pytestmark = pytest.mark.server


def _wanted() -> list[str]:
    return [s for s in SERVERS if HAVE_NEMO or not s.startswith("nemo")]


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    from rollouts.drivers.nemo_gym import _start_together

    names = _wanted()
    managers = [server_manager(name, SESSIONS, IDLE_TIMEOUT) for name in names]
    running = _start_together(managers)
    try:
        yield dict(zip(names, running, strict=True))
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


def _params() -> list[Any]:
    nemo = [
        pytest.mark.nemo,
        pytest.mark.skipif(not HAVE_NEMO, reason=f"{nemo_python()} is missing: make setup-nemo"),
    ]
    return [pytest.param(s, marks=nemo if s.startswith("nemo") else []) for s in SERVERS]


@pytest.mark.parametrize("server", _params())
def test_concurrent_sessions_no_cross_talk_no_5xx_no_leftovers(
    server: str, servers: dict[str, Any]
) -> None:
    report: LoadReport = run_load(
        server, servers[server].base_url, SESSIONS, EPISODES, IDLE_TIMEOUT
    )
    assert report.errors == []
    assert report.episodes == SESSIONS * EPISODES
    assert report.cross_talk == 0
    assert report.status_5xx == 0
    assert report.steps >= report.episodes
    # Finished games and dropped sockets are freed at once; the idle ones remain...
    assert report.live_after == report.idle_games == SESSIONS
    # ...until the idle timeout.
    assert report.live_after_timeout == 0
