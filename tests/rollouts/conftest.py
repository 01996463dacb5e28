"""Shared helpers for the rollouts tests: records played offline (no server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.episode import Episode
from core.players import ScriptedPlayer
from core.tasks import Task, make_tasks
from rollouts.drivers.base import RolloutRecord, StepClock, make_record


def play_offline(
    task: Task, policy: str = "noisy:0.3/minimax:1", seed: int = 0, framework: str = "offline"
) -> RolloutRecord:
    """One episode played by ScriptedPlayer directly through core.Episode."""
    player = ScriptedPlayer(policy, seed)
    clock = StepClock()
    episode = Episode(task)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": episode.system_prompt},
        {"role": "user", "content": episode.reset()},
    ]
    steps = 0
    while not episode.done:
        reply = player.reply(messages)
        steps += 1
        messages.append({"role": "assistant", "content": reply})
        result = episode.step(reply)
        if not result.done:
            messages.append({"role": "user", "content": result.observation})
    return make_record(
        framework,
        task,
        episode.to_dict(),
        episode.reward(),
        clock,
        steps,
        sum(len(m["content"].split()) for m in messages if m["role"] == "assistant"),
    )


@pytest.fixture(scope="session")
def play() -> Callable[..., RolloutRecord]:
    """``play_offline`` as a fixture (test modules do not import conftest)."""
    return play_offline


@pytest.fixture(scope="session")
def offline_records() -> list[RolloutRecord]:
    """Twelve Tic-Tac-Toe episodes of a noisy scripted player."""
    return [play_offline(t) for t in make_tasks(12, seed=3, game="tictactoe", num_groups=4)]
