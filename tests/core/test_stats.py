"""core.stats: the one place results are counted (and the one Wilson interval)."""

from __future__ import annotations

import re
from pathlib import Path

from core import Episode, Task
from core.metrics import outcome_rates
from core.stats import (
    Rate,
    ReplyCounts,
    ResultCounts,
    by_difficulty,
    share,
    wilson_interval,
)

ROOT = Path(__file__).resolve().parents[2]


def _played(seed: int, opponent: str = "random") -> dict:
    episode = Episode(Task(game="tictactoe", seed=seed, opponent=opponent))
    episode.reset()
    episode.step("not a move")
    while not episode.done:
        episode.step(episode.sample_reply())
    return episode.to_dict()


def test_reply_counts_judge_each_event() -> None:
    events = [{"error": None}, {"error": "format"}, {"error": "illegal_move"}, {"error": "x"}]
    counts = ReplyCounts.of(events)
    assert counts == ReplyCounts(replies=4, invalid=3, format_errors=1, illegal=1)
    assert (counts.invalid_rate, counts.format_error_rate, counts.illegal_rate) == (
        0.75,
        0.25,
        0.25,
    )
    assert counts + counts == ReplyCounts(8, 6, 2, 2)
    assert ReplyCounts.of([]).invalid_rate == 0.0


def test_result_counts_skip_unsettled_games() -> None:
    rows = [
        {"result": "win"},
        {"result": "loss", "termination": "forfeit"},
        {"result": "draw"},
        {"result": None},
    ]
    counts = ResultCounts.of(rows)
    assert counts == ResultCounts(games=3, wins=1, draws=1, losses=1, forfeits=1)
    rates = counts.rates()
    assert list(rates) == ["win", "draw", "loss"]
    assert rates["win"] == Rate.of(1, 3)


def test_counts_agree_with_outcome_rates() -> None:
    games = [_played(seed) for seed in range(6)]
    rates = outcome_rates(games)
    counts = ResultCounts.of(games)
    replies = ReplyCounts.of(e for g in games for e in g["events"])
    assert rates["win_rate"] == share(counts.wins, counts.games)
    assert rates["invalid_move_rate"] == replies.invalid_rate > 0
    assert rates["replies"] == replies.replies


def test_by_difficulty_groups_in_bucket_order() -> None:
    tasks = [{"random_move_prob": p} for p in (0.9, 0.1, 0.3, 0.0, 1.0)]
    groups = by_difficulty(tasks, lambda t: t)
    assert list(groups) == ["0.00-0.25", "0.25-0.50", "0.75-1.00"]
    assert [t["random_move_prob"] for t in groups["0.75-1.00"]] == [0.9, 1.0]
    assert list(by_difficulty(tasks, lambda t: t, (0.0, 0.5, 1.0))) == ["0.00-0.50", "0.50-1.00"]


def test_rate_and_interval() -> None:
    rate = Rate.of(5, 10)
    assert (rate.low, rate.high) == wilson_interval(5, 10)
    assert str(rate) == "0.500 [0.237, 0.763]"
    assert Rate.of(0, 0).rate == 0.0


# Every other place imports it (the recipe switched in issue 30).
KNOWN_COPIES: set[str] = set()


def test_one_wilson_interval_in_the_tree() -> None:
    """Only core/stats.py computes a Wilson interval (a ``def wilson...`` anywhere
    else is a second copy); everything else imports it."""
    defining = set()
    for folder in ("core", "adapters", "rollouts", "bench", "docs", "server"):
        for path in (ROOT / folder).rglob("*.py"):
            if re.search(r"^\s*def \w*wilson\w*\(", path.read_text(), re.M | re.I):
                defining.add(path.relative_to(ROOT).as_posix())
    assert "core/stats.py" in defining
    assert defining - {"core/stats.py"} <= KNOWN_COPIES, defining
