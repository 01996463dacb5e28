"""Summary statistics and the cross-framework identity check."""

from __future__ import annotations

import copy
import dataclasses
import math

import pytest

from core.stats import bucket_label, wilson_interval
from rollouts.drivers.base import RolloutRecord
from rollouts.evaluation.summary import (
    check_identity,
    first_difference,
    format_comparison,
    format_summary,
    summarize,
)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [  # reference values: Wilson score interval, z = 1.96 (e.g. R's binom::binom.wilson)
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (1, 20, 0.0089, 0.2361),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_reference_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    for k in range(0, 31):
        lo, hi = wilson_interval(k, 30)
        assert 0.0 <= lo <= k / 30 <= hi <= 1.0


def test_bucket_labels() -> None:
    assert bucket_label(0.0) == "0.00-0.25"
    assert bucket_label(0.2499) == "0.00-0.25"
    assert bucket_label(0.25) == "0.25-0.50"
    assert bucket_label(1.0) == "0.75-1.00"
    assert bucket_label(0.5, (0.0, 0.5, 1.0)) == "0.50-1.00"


def test_summarize_counts_from_trajectories(offline_records: list[RolloutRecord]) -> None:
    s = summarize(offline_records, elapsed=2.0)
    results = [r.trajectory["result"] for r in offline_records]
    assert s.episodes == 12
    for name in ("win", "draw", "loss"):
        assert s.results[name].count == results.count(name)
        assert s.results[name].rate == pytest.approx(results.count(name) / 12)
    assert sum(r.count for r in s.results.values()) == 12
    events = [e for r in offline_records for e in r.trajectory["events"]]
    assert s.replies == len(events) == sum(r.steps for r in offline_records)
    assert s.invalid_rate == pytest.approx(
        sum(e["error"] is not None for e in events) / len(events)
    )
    assert s.format_error_rate == pytest.approx(
        sum(e["error"] == "format" for e in events) / len(events)
    )
    assert s.invalid_rate > 0  # the noisy player did send bad replies
    totals = [r.reward["total"] for r in offline_records]
    assert s.reward_mean == pytest.approx(sum(totals) / 12)
    assert set(s.components) == {"win", "margin", "format", "invalid"}
    assert s.components["win"] == pytest.approx(
        sum(r.reward["components"]["win"] for r in offline_records) / 12
    )
    assert s.episodes_per_second == pytest.approx(6.0)
    assert s.env_ms_per_step == pytest.approx(
        1000 * sum(r.env_seconds for r in offline_records) / s.replies
    )
    assert sum(s.terminations.values()) == 12


def test_difficulty_breakdown_partitions_the_records(offline_records: list[RolloutRecord]) -> None:
    s = summarize(offline_records)
    assert len(s.by_difficulty) == 4  # make_tasks(num_groups=4) covers every bucket
    assert sum(b.episodes for b in s.by_difficulty.values()) == s.episodes
    for label, sub in s.by_difficulty.items():
        members = [r for r in offline_records if bucket_label(r.task["random_move_prob"]) == label]
        assert sub.episodes == len(members)
        assert sub.results["win"].count == sum(r.trajectory["result"] == "win" for r in members)
        assert not sub.by_difficulty
    text = format_summary(s, title="t")
    assert "win rate [95% CI]" in text and "rmp 0.75-1.00" in text
    assert "offline" in format_comparison({"offline": s, "again": s})


def test_summarize_empty_and_dicts(offline_records: list[RolloutRecord]) -> None:
    empty = summarize([])
    assert empty.episodes == 0 and empty.results["win"].high == 1.0
    assert not math.isnan(empty.reward_mean)
    as_dicts = summarize([r.to_dict() for r in offline_records])
    assert as_dicts.to_dict()["results"] == summarize(offline_records).to_dict()["results"]


# --- identity --------------------------------------------------------------------------


def _renamed(records: list[RolloutRecord], name: str) -> list[RolloutRecord]:
    return [
        dataclasses.replace(
            r,
            framework=name,
            trajectory=copy.deepcopy(r.trajectory),
            reward=copy.deepcopy(r.reward),
        )
        for r in records
    ]


def test_identical_runs_pass(offline_records: list[RolloutRecord]) -> None:
    runs = {
        "core": offline_records,
        "a": _renamed(offline_records, "a"),
        "b": _renamed(offline_records, "b"),
    }
    assert check_identity(runs) == []


def test_first_divergent_task_and_step_are_named(offline_records: list[RolloutRecord]) -> None:
    bad = _renamed(offline_records, "bad")
    bad[7].trajectory["events"][1]["board"] = "tampered"
    bad[9].trajectory["result"] = "win" if bad[9].trajectory["result"] != "win" else "loss"
    (div,) = check_identity(
        {"core": offline_records, "ok": _renamed(offline_records, "ok"), "bad": bad}
    )
    assert (div.framework, div.task_index, div.step, div.field) == ("bad", 7, 2, "board")
    assert div.task_id == offline_records[7].trajectory["task_id"]
    assert "task #7" in div.describe() and "step 2" in div.describe()


def test_reward_task_and_count_divergences(offline_records: list[RolloutRecord]) -> None:
    reward = _renamed(offline_records, "r")
    reward[0].reward["total"] += 1.0
    (d,) = check_identity({"core": offline_records, "r": reward})
    assert (d.task_index, d.field, d.step) == (0, "reward", None)

    short = _renamed(offline_records, "s")[:5]
    (d,) = check_identity({"core": offline_records, "s": short})
    assert d.field == "task count" and d.task_index == 5

    shifted = _renamed(offline_records, "x")[1:] + _renamed(offline_records, "x")[:1]
    (d,) = check_identity({"core": offline_records, "x": shifted})
    assert d.field == "task" and d.task_index == 0


def test_extra_and_missing_events(offline_records: list[RolloutRecord]) -> None:
    longer = _renamed(offline_records, "l")
    extra = dict(longer[2].trajectory["events"][-1])
    longer[2].trajectory["events"].append(extra)
    n = len(offline_records[2].trajectory["events"])
    (d,) = check_identity({"core": offline_records, "l": longer})
    assert (d.task_index, d.step, d.field) == (2, n + 1, "events (count)")


def test_tool_mode_is_checked_against_its_own_reference(
    offline_records: list[RolloutRecord],
) -> None:
    tools = _renamed(offline_records, "tools-fw")
    for r in tools:
        for e in r.trajectory["events"]:
            e["kind"] = "tool"
    # against the text reference, only tool-neutral keys count: still identical
    assert check_identity({"core": offline_records, "t": tools}) == []
    # with a tools reference, a tool-mode run is compared in full against it
    ref = _renamed(tools, "core")
    ref[4].trajectory["events"][0]["reply"] = "something else"
    (d,) = check_identity({"t": tools}, {"text": offline_records, "tools": ref})
    assert (d.task_index, d.step, d.field, d.reference) == (4, 1, "reply", "core[tools]")


def test_first_difference_none_for_equal() -> None:
    traj = {"events": [{"kind": "text", "reply": "a", "board": "b"}], "result": "win"}
    assert first_difference(traj, copy.deepcopy(traj)) is None
    other = copy.deepcopy(traj)
    other["result"] = "loss"
    assert first_difference(traj, other) == (None, "result", "win", "loss")


def test_one_player_games_have_no_difficulty_breakdown(play) -> None:  # type: ignore[no-untyped-def]
    from core.tasks import make_tasks

    records = [
        play(t, policy="minimax:1") for t in make_tasks(4, seed=1, game="wordle", num_groups=4)
    ]
    s = summarize(records)
    assert s.episodes == 4 and s.by_difficulty == {}
    assert s.results["win"].count == sum(r.trajectory["result"] == "win" for r in records)
