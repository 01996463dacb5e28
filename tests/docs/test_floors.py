"""docs/code.md's floor table is what docs/tools/floors.py counts now."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("floors", ROOT / "docs" / "tools" / "floors.py")
assert _spec is not None and _spec.loader is not None
floors = importlib.util.module_from_spec(_spec)
sys.modules["floors"] = floors
_spec.loader.exec_module(floors)


def test_floor_table_is_current() -> None:
    """Fails after a change moved code between floors: run docs/tools/floors.py --write."""
    assert floors.main(["--check"]) == 0, "docs/code.md is stale: run docs/tools/floors.py --write"


def test_every_project_module_has_a_floor() -> None:
    for top in ("core", "adapters", "rollouts", "bench"):
        for path in (ROOT / top).rglob("*.py"):
            module = floors._module(ROOT, path)
            assert floors.floor_of(module) is not None, module


def test_floor_of_takes_the_longest_prefix() -> None:
    assert floors.floor_of("core.games.othello") == "core/games"
    assert floors.floor_of("core.episode") == "core"
    assert floors.floor_of("adapters._asgi") == "adapters (shared: _*.py)"
    assert floors.floor_of("rollouts.cli") == "rollouts (cli, the rest)"
    assert floors.floor_of("corex") is None
