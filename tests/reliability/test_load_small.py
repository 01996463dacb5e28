"""A small ``make load`` (rollouts/evaluation/load.py): 8 sessions x 3 episodes against each
environment server as a real process, with the scripted player in this process.

Every episode's server trajectory must be core's replay of the replies its own
client sent (no cross-talk), no 5xx and no error may occur, and once every client
is done only the idle/abandoned games (one per session) may be live; after the
idle timeout, none.
"""

from __future__ import annotations

from typing import Any

import pytest
from reliability_servers import IDLE_TIMEOUT, server_params

from rollouts.evaluation.load import LoadReport, idle_timeout_for, run_load

SESSIONS, EPISODES = 8, 3
pytestmark = pytest.mark.server


@pytest.mark.parametrize("server", server_params())
def test_concurrent_sessions_no_cross_talk_no_5xx_no_leftovers(
    server: str, reliability_servers: dict[str, Any]
) -> None:
    url = reliability_servers[server].base_url
    report: LoadReport = run_load(server, url, SESSIONS, EPISODES, IDLE_TIMEOUT[server])
    assert report.errors == []
    assert report.episodes == SESSIONS * EPISODES
    assert report.cross_talk == 0
    assert report.status_5xx == 0
    assert report.steps >= report.episodes
    assert report.longest_gap > 0  # every game's gaps between responses were measured
    # Finished games and dropped sockets are freed at once; the idle ones remain...
    assert report.live_after == report.idle_games == SESSIONS
    # ...until the idle timeout.
    assert report.live_after_timeout == 0


def test_the_default_idle_timeout_grows_with_the_sessions() -> None:
    # A game in play waits behind the other sessions' requests: ``make load``'s 64
    # sessions get 16 s, not the 5 s that 8 do (games in play expired at 5 s under load).
    assert idle_timeout_for(SESSIONS) == 5.0
    assert idle_timeout_for(64) == 16.0
    assert idle_timeout_for(128) == 2 * idle_timeout_for(64)
