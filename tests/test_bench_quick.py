"""`python -m bench.run --quick` runs end to end and produces well-formed rows.

Only the shape is checked (which rows, units, targets, the doc section): the
figures of a quick run on a shared machine mean nothing, and speed is never
asserted in tests.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspiel", reason="the benchmarks compare against OpenSpiel (open-spiel)")

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = {
    "perft(4) bulk": ("x", 3.0),
    "perft(4) every leaf": ("x", 4.0),
    "Tic-Tac-Toe random vs random": ("x", 1.0),
    "Othello random vs random": ("x", 1.0),
    "Connect Four random vs random": ("x", None),
    "depth 2, start": ("x", None),
    "depth 2, all four positions": ("x", None),
    "Episode step (text replies, `step`)": ("µs", None),
    "Episode step (tool moves, `step_move`)": ("µs", None),
    "GEM overhead over the Episode": ("%", 10.0),
    "SkyRL Gym overhead over the Episode": ("%", 10.0),
    "TRL overhead over the Episode": ("%", 10.0),
    "`import core` (fresh interpreter)": ("ms", 50.0),
    **{
        f"{game}: {phase}": ("µs", None)
        for game in ("tictactoe", "connect_four", "othello")
        for phase in ("whole step", "parse", "apply", "opponent", "render", "record")
    },
    "core Episode: text replies, `step`": ("share %", None),
    "GEM: step": ("share %", None),
    "TRL: step": ("share %", None),
}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    tmp = tmp_path_factory.mktemp("bench")
    doc = tmp / "performance.md"
    doc.write_text(
        "# Performance\n\nHand-written intro.\n\n"
        "<!-- bench:begin (written by `make bench`; edits between these markers are lost) -->\n"
        "stale figures\n<!-- bench:end -->\n\nHand-written end.\n"
    )
    out = tmp / "rows.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--doc", str(doc), "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "perft(4) bulk" in proc.stdout  # the table is printed
    return json.loads(out.read_text()), doc.read_text()


def test_rows_have_the_expected_names_units_and_targets(quick_run: tuple[dict, str]) -> None:
    data, _ = quick_run
    rows = {r["name"]: r for r in data["rows"]}
    for name, (unit, target) in EXPECTED.items():
        assert name in rows, f"missing row {name!r}; got {sorted(rows)}"
        row = rows[name]
        assert row["unit"] == unit, name
        assert (row["target"] or {}).get("value") == target, name
    # One alpha-beta row per position and a total.
    assert sum(1 for n in rows if n.startswith("depth 2, ")) == 5
    assert "HTTP adapters not measured" in " ".join(data["notes"])
    assert "Verifiers" in " ".join(data["notes"])
    # the breakdown's five phases share out the whole step (record is the rest)
    for game in ("tictactoe", "connect_four", "othello"):
        whole = rows[f"{game}: whole step"]["values"]
        parts = [rows[f"{game}: {p}"]["values"] for p in ("parse", "apply", "opponent", "render")]
        for i, total in enumerate(whole):
            assert sum(p[i] for p in parts) + rows[f"{game}: record"]["values"][i] >= total * 0.999
    assert "20 ms model call" in " ".join(data["notes"])


def test_every_row_has_finite_values_per_run(quick_run: tuple[dict, str]) -> None:
    data, _ = quick_run
    for row in data["rows"]:
        values = row["values"]
        assert values, row["name"]
        assert all(isinstance(v, float) and math.isfinite(v) for v in values), row["name"]
        if row["section"].startswith("The step itself"):
            # a phase of the breakdown may round to nothing; "record" is a difference
            assert all(v >= 0 for v in values), row["name"]
        elif row["unit"] in ("x", "µs", "ms"):
            assert all(v > 0 for v in values), row["name"]
        if row["unit"] == "x" or row["name"].startswith("Episode"):
            assert len(values) == 2, row["name"]  # --quick: two runs
        assert row["ours"], row["name"]


def test_doc_section_is_rewritten_between_the_markers(quick_run: tuple[dict, str]) -> None:
    data, doc = quick_run
    assert doc.startswith("# Performance\n\nHand-written intro.\n")
    assert doc.rstrip().endswith("Hand-written end.")
    assert "stale figures" not in doc
    assert doc.count("<!-- bench:begin") == 1 and doc.count("<!-- bench:end -->") == 1
    section = doc.split("<!-- bench:begin", 1)[1].split("<!-- bench:end -->", 1)[0]
    assert "<!-- docs-test: skip" in section  # the command block is skipped by tests/docs
    assert ".venv/bin/python -m bench.run --quick" in section
    assert "| open-spiel (pyspiel) | " in section and "| CPU | " in section
    table = [line for line in section.splitlines() if line.startswith("| ") and " | " in line]
    for row in data["rows"]:
        assert any(line.startswith(f"| {row['name']} |") for line in table), row["name"]
