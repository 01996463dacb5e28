"""docs/openspiel.md's table is what docs/tools/openspiel_table.py generates now."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel", reason="OpenSpiel is not installed (pip install -e '.[openspiel]')")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "openspiel_table", ROOT / "docs" / "tools" / "openspiel_table.py"
)
assert _spec is not None and _spec.loader is not None
openspiel_table = importlib.util.module_from_spec(_spec)
sys.modules["openspiel_table"] = openspiel_table
_spec.loader.exec_module(openspiel_table)

STALE = "docs/openspiel.md is stale: run python docs/tools/openspiel_table.py --write"
QUICK = ("openspiel:tic_tac_toe", "openspiel:clobber", "openspiel:nim", "openspiel:cliff_walking")
"""Rows cheap enough to regenerate in every run (a second or so together)."""


def test_the_table_lists_every_bridged_game() -> None:
    from core.games.openspiel import openspiel_games

    assert list(openspiel_table.committed_rows()) == openspiel_games(), STALE


@pytest.mark.parametrize("name", QUICK)
def test_quick_rows_are_current(name: str) -> None:
    assert openspiel_table.committed_rows()[name] == openspiel_table.row(name).line(), STALE


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_the_whole_table_is_current() -> None:
    """Every row regenerated (about 2 CPU minutes, MCTS playing chess, shogi and Go;
    20-30 minutes of wall time on a loaded 2-core machine)."""
    assert openspiel_table.main(["--check"]) == 0, STALE
