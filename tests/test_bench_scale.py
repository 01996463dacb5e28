"""bench/scale.py (`make bench-scale`): rounds alternate the order of 1 and 2 workers,
speed-ups are medians of per-round pairs, a speed-up above the worker count is refused,
and a short thread-executor run goes through every step (the full run: minutes)."""

from __future__ import annotations

import time

import pytest

from bench import scale


def test_rounds_alternate_which_worker_count_goes_first() -> None:
    assert scale.round_orders(4) == [(1, 2), (2, 1), (1, 2), (2, 1)]


def test_the_speed_up_is_the_median_of_paired_rounds() -> None:
    rates = [{1: 1.0, 2: 1.5}, {1: 2.0, 2: 2.2}, {1: 1.0, 2: 1.9}]
    got = scale.summarise(rates)
    assert got["ratio"] == pytest.approx(1.5)  # 1.5, 1.1, 1.9: the median pair, not 5.6/4.0
    assert (got["low"], got["high"]) == (pytest.approx(1.1), pytest.approx(1.9))
    assert got["one"] == 1.0 and got["two"] == 1.9 and got["rounds"] == 3


def test_a_speed_up_above_the_worker_count_is_refused() -> None:
    rows = [
        {"path": "fine", **scale.summarise([{1: 1.0, 2: 1.9}])},
        {"path": "cold vs warm", **scale.summarise([{1: 1.0, 2: 3.37}])},
    ]
    assert scale.impossible(rows) == ["cold vs warm"]


def test_worker_counts_take_turns_until_each_has_played_its_seconds() -> None:
    """ABBA turns of whole batches; each count's rate is over its own play time, so a
    count that is slower (or met a busier machine) still gets its full window."""
    turns: list[int] = []
    slept = {1: 0.0, 2: 0.0}

    def play(n: int, pause: float) -> object:
        def go(batch: list[int]) -> list[int]:
            turns.append(n)
            t0 = time.perf_counter()
            time.sleep(pause)
            slept[n] += time.perf_counter() - t0
            return batch

        return go

    rates, records = scale.interleaved(
        {1: play(1, 0.04), 2: play(2, 0.01)}, iter(lambda: [0, 0], None), 0.05, first=2
    )
    assert turns[:6] == [2, 1, 1, 2, 2, 1]  # ABBA, starting with `first`
    for n in (1, 2):  # each count's window, as measured (a loaded machine's sleeps overrun)
        spent = len(records[n]) / rates[n]
        assert spent >= 0.05 and spent >= slept[n]
    assert len(records[1]) == 2 * turns.count(1) and len(records[2]) == 2 * turns.count(2)
    # over its own play time: a batch takes at least its pause, never less
    assert 0 < rates[1] <= 2 / 0.04 and rates[1] < rates[2] <= 2 / 0.01


def test_a_short_thread_run_measures_every_round() -> None:
    rows = scale.eval_rows(2, "tictactoe", 1, rounds=2, seconds=0.2, kinds=("thread",))
    (row,) = rows
    assert row["path"] == "eval, thread executor" and row["rounds"] == 2
    assert 0 < row["low"] <= row["ratio"] <= row["high"]
    text = scale.section(rows, ((0.0,), (0.0,)), 1.0)
    assert text.startswith(scale.BEGIN) and text.endswith(scale.END)
    assert "(2 rounds)" in text
