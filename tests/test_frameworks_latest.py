"""docs/tools/frameworks_latest.py (`make frameworks-latest`, not run here: minutes a
row): its rows read the pins from pyproject.toml, its table is the one on the page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "frameworks_latest", ROOT / "docs" / "tools" / "frameworks_latest.py"
)
assert _spec is not None and _spec.loader is not None
tool = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tool  # dataclasses look their module up there
_spec.loader.exec_module(tool)


def test_every_row_names_pinned_packages_and_existing_tests() -> None:
    for row in tool.ROWS:
        pinned = tool.pins(row.extra)
        assert set(row.packages) <= set(pinned), row.name
        for path in row.tests:
            assert (ROOT / path).is_file(), path
    assert tool.pins("openenv") == {"openenv": "0.10.0"}


def test_counts_reads_pytest_summaries() -> None:
    assert tool.counts("== 3 failed, 70 passed, 2 skipped in 9.1s ==") == {
        "failed": 3,
        "passed": 70,
        "skipped": 2,
    }


def test_the_table_replaces_the_pages_section() -> None:
    row = {
        "row": "trl",
        "python": "3.11",
        "pinned": {"trl": "1.16.0", "transformers": "5.24.0"},
        "newest": {"trl": "1.16.0", "transformers": "5.25.0"},
        "newest_any_python": {"trl": "1.16.0", "transformers": None},
        "outcome": "pass (36 passed)",
    }
    text = tool.table([row])
    assert text.startswith(tool.BEGIN) and text.endswith(tool.END)
    assert (
        "| trl | 3.11 | trl 1.16.0, transformers 5.24.0 | trl 1.16.0, transformers 5.25.0 " in text
    )
    assert "transformers -" in text
    page = tool.PAGE.read_text(encoding="utf-8")
    assert page.count(tool.BEGIN) == 1 and page.count(tool.END) == 1
