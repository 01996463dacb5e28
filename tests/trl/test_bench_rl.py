"""``bench.rl`` (the RL update throughput of ``make bench``) runs end to end on tiny
settings and makes well-formed rows; its figures mean nothing here (speed is never
asserted in tests: ``make bench`` measures and judges the 2x target)."""

from __future__ import annotations

import math


def test_rl_bench_rows_are_well_formed() -> None:
    from bench.rl import NEW, TODAY, Setting, rl_rows

    today = Setting(TODAY.name, 2, 2, 2, False)
    new = Setting(NEW.name, 2, 2, 1, True, "position")  # the other grouping too
    rows, notes = rl_rows(runs=2, updates=1, sft_steps=20, settings=(today, new))
    assert [r.name for r in rows] == [TODAY.name, NEW.name]
    assert rows[1].target is not None and rows[0].target is None
    for row in rows:
        assert row.unit == "x" and len(row.values) == 2
        assert all(math.isfinite(v) and v > 0 for v in row.values)
        assert "games/CPU-s" in row.ours and "rollouts" in row.note
    assert "alternating" in notes[0]
