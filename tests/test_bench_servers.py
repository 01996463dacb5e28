"""bench.servers' smoke: each framework's floor starts, plays one game through the same
client session as its adapter, and the ratio code turns runs into rows.

No figure is asserted (speed is never judged in tests): ``make load`` and
``make bench`` run the real comparison.
"""

from __future__ import annotations

import ast

import pytest

from bench import servers
from bench.report import ROOT
from rollouts.drivers.nemo_gym import _start_together
from rollouts.frameworks import FRAMEWORKS

FLOOR_FILES = tuple(f.id for f in FRAMEWORKS.values() if f.floor)
"""Every floor of the framework manifest (``bench/floors/<id>.py``)."""
OURS = ("core", "adapters", "rollouts", "bench", "gamebridge_verifiers")


@pytest.mark.parametrize("name", FLOOR_FILES)
def test_floor_imports_nothing_of_gamebridge(name: str) -> None:
    tree = ast.parse((ROOT / "bench" / "floors" / f"{name}.py").read_text())
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    ours = [m for m in imported if m.split(".")[0] in OURS or m == ""]
    assert not ours, f"bench/floors/{name}.py imports {ours}"
    assert ast.get_docstring(tree), "each floor names the doc or example it follows"


@pytest.fixture(scope="module")
def floors() -> dict[str, str]:
    chosen, _ = servers.available(servers.SERVERS)
    if not chosen:
        pytest.skip("no server framework can run here")
    managers = [servers.sides(s, 8)["floor"]() for s in chosen]
    running = _start_together(managers)  # each waits seconds for its framework's imports
    try:
        yield {s: r.base_url for s, r in zip(chosen, running, strict=True)}
    finally:
        for manager in reversed(managers):
            manager.__exit__(None, None, None)


@pytest.mark.server
@pytest.mark.parametrize("server", servers.SERVERS)
def test_floor_plays_one_game_through_the_client_session(
    floors: dict[str, str], server: str
) -> None:
    if server not in floors:
        pytest.skip(f"{server} cannot run here")
    run = servers.measure(server, "floor", floors[server], 1, 1)
    assert run.errors == []
    # X moves first against a random opponent: a game is 3 to 5 of the model's moves,
    # each a legal one read back from the floor's board by the scripted player.
    assert 3 <= run.steps <= 5
    # Verifiers: the gaps between model calls (the last move starts no call).
    assert len(run.latencies) == run.steps - (server == "verifiers")

    # The ratio code: the same runs on both sides are ratios of exactly 1.
    result = servers.Result(
        server, {"adapter": [run], "floor": [run]}, {"adapter": [run], "floor": [run]}
    )
    rows = servers.rows(result, servers.QUICK)
    names = [r.name for r in rows]
    label = servers.LABELS[server]
    assert names == [
        f"{label}: p50 step latency, 1 client",
        f"{label}: p99 step latency, 1 client",
        f"{label}: steps/s, {servers.QUICK.sessions} sessions",
        f"{label}: server CPU per step, {servers.QUICK.sessions} sessions",
    ]
    for row in rows[:3]:
        assert row.values == (1.0,) and row.unit == "x"
    assert rows[0].target == servers.P50_TARGET and rows[2].target == servers.RATE_TARGET
    text = servers.section_text(rows, {"machine": "test"}, ["a note"], "cmd", "today")
    assert text.startswith(servers.BEGIN) and text.endswith(servers.END)
    assert f"| {label}: p50 step latency, 1 client |" in text


def test_ratio_rows_divide_adapter_by_floor() -> None:
    fast, slow = servers.Run([0.001] * 4, 4, 2.0), servers.Run([0.003] * 4, 4, 1.0)
    result = servers.Result(
        "openenv", {"adapter": [slow], "floor": [fast]}, {"adapter": [slow], "floor": [fast]}
    )
    p50, _, rate, _ = servers.rows(result, servers.QUICK)
    assert p50.values == pytest.approx((3.0,)) and p50.status == "MISSED"
    assert rate.values == pytest.approx((2.0,)) and rate.status == "met"
    assert "bench:begin" not in servers.section_text([p50], {}, [], "cmd", "today")


def test_doc_has_the_servers_section() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    assert text.count(servers.BEGIN) == 1 and text.count(servers.END) == 1
