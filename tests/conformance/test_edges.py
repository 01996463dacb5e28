"""The edge block: every framework x every game at the edges (docs/frameworks.md, "Edges").

Four cases, each run through every registered driver and compared with core's
reference driver (``core.Episode`` with no framework; its tool mode for the
tool-calling drivers), event by event and reward breakdown by breakdown:

* ``arguments``: the model's first ``make_move`` calls carry raw arguments of
  every JSON type, a missing ``move`` and an extra key (``core.players.EDGE_ARGUMENTS``):
  core judges each one, the same way, in every tool framework.
* ``cap``: the framework's own cap on model turns (Verifiers ``max_turns``,
  NeMo Gym's agent ``max_steps``, SkyRL's generator ``max_turns``, TRL's
  ``max_tool_calling_iterations``, GEM's ``max_episode_steps``, an OpenEnv
  client's ``stop``) set below the game's length: core settles the game there.
* ``stop``: in tool mode the model stops calling the tool after two calls: core
  settles the game (text-mode frameworks play the game out, as core does).
* ``settled_loss``: the task's own turn cap (``max_turns=2``), settled as a loss.

Every settled game scores margin -1 (a loss) in every framework.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from core.episode import Episode
from core.games import list_games
from core.tasks import Task, make_tasks
from rollouts.drivers import DRIVERS, RolloutRecord, driver_status, get_driver
from rollouts.drivers.base import TOOLS
from rollouts.drivers.core import CoreDriver

GAMES = list_games()
TOOL_DRIVERS = frozenset(name for name in DRIVERS if get_driver(name).mode == TOOLS)
"""Drivers whose model moves by ``make_move`` tool call, as each driver declares it."""
NEMO_DRIVERS = frozenset({"nemo_gym", "nemo_gym_tools"})
UNDER_TEST = [name for name in DRIVERS if name != "core"]
CAP = 2

CASES: dict[str, dict[str, Any]] = {
    "arguments": {"policy": "args/minimax:1", "overrides": {"max_invalid_moves": 12}},
    "cap": {"policy": "noisy:0.3/minimax:1", "framework_cap": CAP},
    "stop": {"policy": "stop:2/minimax:1"},
    "settled_loss": {"policy": "noisy:0.3/minimax:1", "overrides": {"max_turns": CAP}},
}


def _tasks(case: str) -> list[Task]:
    overrides = CASES[case].get("overrides", {})
    return [t for game in GAMES for t in make_tasks(1, seed=23, game=game, **overrides)]


@cache
def _run(case: str, name: str) -> dict[str, RolloutRecord]:
    """``case`` through driver ``name`` (one run for every game): game -> record."""
    from rollouts.model.policy_server import serve_in_thread

    spec = CASES[case]
    if name in ("core", "core_tools"):
        driver: Any = CoreDriver(use_tools=name == "core_tools")
    else:
        driver = get_driver(name)
    driver.framework_cap = spec.get("framework_cap")
    with serve_in_thread(spec["policy"], seed=0) as url:
        records = driver.run(_tasks(case), base_url=url, model="scripted", concurrency=2)
    return {record.task["game"]: record for record in records}


def _params() -> list[Any]:
    params = []
    for case in CASES:
        for name in UNDER_TEST:
            if case == "arguments" and name not in TOOL_DRIVERS:
                continue  # text-mode frameworks make no tool calls
            marks = [pytest.mark.nemo, pytest.mark.server] if name in NEMO_DRIVERS else []
            params += [
                pytest.param(case, game, name, id=f"{case}-{game}-{name}", marks=marks)
                for game in GAMES
            ]
    return params


@pytest.fixture(scope="module")
def run() -> Callable[[str, str], dict[str, RolloutRecord]]:
    return _run


@pytest.mark.parametrize(("case", "game", "driver"), _params())
def test_edge_matches_core(
    case: str, game: str, driver: str, run: Callable[[str, str], dict[str, RolloutRecord]]
) -> None:
    ok, why = driver_status(driver)
    if not ok:
        pytest.skip(f"driver {driver} is not usable here: {why}")
    reference = run(case, "core_tools" if driver in TOOL_DRIVERS else "core")[game]
    got = run(case, driver)[game]
    assert got.task == reference.task
    events, ref_events = got.trajectory["events"], reference.trajectory["events"]
    for i, (event, ref_event) in enumerate(zip(events, ref_events, strict=False)):
        assert event == ref_event, f"{case}/{game}/{driver}: event {i} differs"
    assert len(events) == len(ref_events)
    assert got.trajectory == reference.trajectory
    assert got.reward == reference.reward


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("mode", ["core", "core_tools"])
def test_the_reference_is_core_and_its_edges_happen(case: str, mode: str) -> None:
    """The reference trajectories replay in core exactly, and each case really
    reaches its edge (a test whose edge never happens could not fail)."""
    records = _run(case, mode)
    for game, record in records.items():
        trajectory = record.trajectory
        assert Episode.from_trajectory(trajectory).to_dict() == trajectory, game
        events = trajectory["events"]
        tools = mode == "core_tools"
        if case == "arguments" and tools:
            assert [e["error"] for e in events[:8]] == ["format"] * 8, game
        capped = case == "cap" or (case == "stop" and tools)
        if capped and trajectory["termination"] != "game_over":  # a game may end first
            assert trajectory["termination"] == "stopped" and len(events) == CAP, game
        if case == "settled_loss":
            assert trajectory["termination"] in ("turn_cap", "game_over"), game
        if trajectory["termination"] in ("stopped", "turn_cap"):
            assert trajectory["result"] == "loss"
            assert record.reward["components"]["margin"] == -1.0
    settled = [
        r for r in records.values() if r.trajectory["termination"] in ("stopped", "turn_cap")
    ]
    if case != "arguments" and (case != "stop" or mode == "core_tools"):
        assert len(settled) >= len(GAMES) - 1, f"{case}: too few games reached the edge"
