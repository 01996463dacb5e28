"""Every game x every driver: the same trajectory and reward as core (docs/drivers.md).

For each game a few tasks run through each registered driver against one
embedded policy server (a noisy scripted player that also sends malformed and
illegal replies). Each record's trajectory must equal the reference driver's
(``rollouts.drivers.core``: ``core.Episode`` with no framework; its tool mode
for tool-calling drivers) event by event, and so must the reward breakdown.

Each driver runs all games' tasks in one ``run`` (one server start for the
server-based drivers); the per-game tests read their slice.

Bridged OpenSpiel games (``BRIDGED``, when OpenSpiel is installed) run too,
against the MCTS opponent, with a low turn cap so they stay cheap; they have no
golden transcripts (their trajectories depend on OpenSpiel's version). Among them
the two-seat games of chance and hidden information (``SEAT_GAMES``); two outside
seats through every framework: ``SEATED``, in each driver's same run
(``test_driver_plays_both_seats_as_core``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from core.games import list_games, make_game
from core.tasks import Task, make_tasks
from rollouts.drivers import DRIVERS, RolloutRecord, driver_status, get_driver
from rollouts.drivers.base import TOOLS
from rollouts.drivers.core import CoreDriver

POLICY = "noisy:0.3/minimax:1"
SEAT_GAMES = ["openspiel:kuhn_poker", "openspiel:backgammon", "openspiel:phantom_ttt"]
"""Two-seat games of chance (backgammon's dice, Kuhn's deal) and hidden information
(Kuhn's cards, Phantom Tic-Tac-Toe's board): one outside seat against the bridge's
bot (information-set MCTS, MCTS, random), each chance outcome drawn by core."""
TASKS_PER_GAME = 2
BRIDGED = (
    [
        "openspiel:breakthrough",
        "openspiel:chess",
        "openspiel:clobber",
        "openspiel:dots_and_boxes",
        "openspiel:go(board_size=5)",
        "openspiel:hex(board_size=5)",
        *SEAT_GAMES,
    ]
    if importlib.util.find_spec("pyspiel") is not None
    else []
)
BRIDGED_MAX_TURNS = 6
"""Model turns per bridged game: enough for replies, rejections and MCTS answers."""
NATIVE = list_games()
GAMES = NATIVE + BRIDGED
TOOL_DRIVERS = frozenset(name for name in DRIVERS if get_driver(name).mode == TOOLS)
"""Drivers whose model moves by ``make_move`` tool call (reference: core's tool mode),
as each driver declares it."""
NEMO_DRIVERS = frozenset({"nemo_gym", "nemo_gym_tools"})
UNDER_TEST = [name for name in DRIVERS if name != "core"]


TWO_OUTSIDE = " (both seats outside)"
"""The suffix of a game's key among the records when the endpoint plays both seats."""
SEATED = [*(SEAT_GAMES if BRIDGED else []), "tictactoe"]
"""Games played with the endpoint in both seats (``seats="outside,outside"``) in every
driver's same run: chance and hidden cards, chance, a hidden board, and a native game
with noisy replies (per-seat invalid-move budgets)."""


def _tasks(*, seated_only: bool = False) -> list[Task]:
    native = [t for game in NATIVE for t in make_tasks(TASKS_PER_GAME, seed=11, game=game)]
    bridged = [
        t
        for game in BRIDGED
        for t in make_tasks(TASKS_PER_GAME, seed=11, game=game, max_turns=BRIDGED_MAX_TURNS)
    ]
    seated = [
        t
        for game in SEATED
        for t in make_tasks(
            TASKS_PER_GAME, seed=11, game=game, max_turns=BRIDGED_MAX_TURNS, seats="outside,outside"
        )
    ]
    return seated if seated_only else native + bridged + seated


def _key(record: RolloutRecord) -> str:
    return record.task["game"] + (TWO_OUTSIDE if record.task.get("seats") else "")


@pytest.fixture(scope="module")
def policy_url() -> Iterator[str]:
    from rollouts.model.policy_server import serve_in_thread

    with serve_in_thread(POLICY, seed=0) as url:
        yield url


@pytest.fixture(scope="module")
def records(policy_url: str) -> Callable[[str], dict[str, list[RolloutRecord]]]:
    """``records(driver)`` -> game -> records, run once per driver and module."""

    @cache
    def run(name: str) -> dict[str, list[RolloutRecord]]:
        tasks = _tasks(seated_only=name.startswith("core_one"))
        if name.startswith("core"):  # core_one*: several seats in one conversation
            driver: Any = CoreDriver(use_tools=name.endswith("tools"), one_chat="one" in name)
        else:
            driver = get_driver(name)
        out = driver.run(tasks, base_url=policy_url, model="scripted", concurrency=2)
        by_game: dict[str, list[RolloutRecord]] = {}
        for record in out:
            by_game.setdefault(_key(record), []).append(record)
        return by_game

    return run


def _params() -> list[Any]:
    params = []
    for name in UNDER_TEST:
        marks = [pytest.mark.nemo, pytest.mark.server] if name in NEMO_DRIVERS else []
        params += [pytest.param(game, name, id=f"{game}-{name}", marks=marks) for game in GAMES]
    return params


@pytest.mark.parametrize(("game", "driver"), _params())
def test_driver_matches_core(
    game: str, driver: str, records: Callable[[str], dict[str, list[RolloutRecord]]]
) -> None:
    ok, why = driver_status(driver)
    if not ok:
        pytest.skip(f"driver {driver} is not usable here: {why}")
    reference = records("core_tools" if driver in TOOL_DRIVERS else "core")[game]
    got = records(driver)[game]
    assert len(got) == len(reference) == TASKS_PER_GAME
    for rec, ref in zip(got, reference, strict=True):
        assert rec.framework == driver
        assert rec.task == ref.task
        events, ref_events = rec.trajectory["events"], ref.trajectory["events"]
        assert len(events) == len(ref_events), f"{ref.trajectory['task_id']}: event count"
        for i, (event, ref_event) in enumerate(zip(events, ref_events, strict=True)):
            assert event == ref_event, f"{ref.trajectory['task_id']}: event {i} differs"
        assert rec.trajectory == ref.trajectory
        assert rec.reward == ref.reward
        assert rec.steps == ref.steps


@pytest.mark.parametrize(
    ("game", "driver"),
    [
        pytest.param(g, p.values[1], id=f"{g}-seats-{p.values[1]}", marks=p.marks)
        for p in _params()
        if p.values[0] == GAMES[0]
        for g in SEATED
    ],
)
def test_driver_plays_both_seats_as_core(
    game: str, driver: str, records: Callable[[str], dict[str, list[RolloutRecord]]]
) -> None:
    """The endpoint in both seats, in each framework's own terms (docs/two-seats.md):
    the same trajectories (per-seat results and rewards in their ``seats`` entry) as
    core's reference in the driver's conversation shape, one per seat or, where the
    framework keeps one per rollout, one for both; that shape is refused where the
    game hides information (one conversation would show each seat the other's)."""
    from rollouts.drivers.seats import ONE_CHAT

    ok, why = driver_status(driver)
    if not ok:
        pytest.skip(f"driver {driver} is not usable here: {why}")
    shape = get_driver(driver).seats
    assert shape is not None, f"{driver} plays one outside seat"
    reference = ("core_one" if shape == ONE_CHAT else "core") + (
        "_tools" if driver in TOOL_DRIVERS else ""
    )
    got, expected = records(driver)[game + TWO_OUTSIDE], records(reference)[game + TWO_OUTSIDE]
    assert len(got) == len(expected) == TASKS_PER_GAME
    hidden = make_game(game).spec.hidden_information
    for rec, ref in zip(got, expected, strict=True):
        if shape == ONE_CHAT and hidden:
            assert rec.failed and ref.failed and "hides information" in str(rec.error)
            continue
        assert not ref.failed and not rec.failed, rec.error
        assert rec.trajectory == ref.trajectory, rec.task["task_id"]
        assert rec.reward == ref.reward and rec.steps == ref.steps
        assert set(rec.trajectory["seats"]["results"]) == {"0", "1"}


# --- golden transcripts (tests/golden/<game>.json, `python -m tests.golden.regen`) ----------

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize(
    ("game", "driver"),
    [pytest.param(g, d, id=f"{g}-{d}") for d in ("core", "core_tools") for g in NATIVE]
    + [p for p in _params() if p.values[0] in NATIVE],
)
def test_driver_matches_golden(
    game: str, driver: str, records: Callable[[str], dict[str, list[RolloutRecord]]]
) -> None:
    """The recorded trajectories and rewards, reproduced by every driver (same tasks,
    same policy: the records above are reused, so this costs no extra run)."""
    if driver not in ("core", "core_tools"):
        ok, why = driver_status(driver)
        if not ok:
            pytest.skip(f"driver {driver} is not usable here: {why}")
    golden = json.loads((GOLDEN / f"{game}.json").read_text(encoding="utf-8"))
    assert golden["policy"] == POLICY and golden["task_seed"] == 11
    mode = "tools" if driver in TOOL_DRIVERS or driver == "core_tools" else "text"
    expected = [e for e in golden["episodes"] if e["mode"] == mode]
    got = records(driver)[game]
    assert [r.task for r in got] == [e["trajectory"]["task"] for e in expected]
    for rec, gold in zip(got, expected, strict=True):
        assert json.loads(json.dumps(rec.trajectory)) == gold["trajectory"], gold["task_id"]
        assert json.loads(json.dumps(rec.reward)) == gold["reward"], gold["task_id"]
