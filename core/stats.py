"""Counts, rates and their intervals over finished games: the one place results
are counted. Everything else (core's framework metrics, the trainer's batch means,
rollouts' summaries and reports, the training recipe) reads these and formats them.

The counts read trajectories (``Episode.to_dict()``) or their events, never the
model's words: the result each game was settled with and each reply's judgement.

* :func:`wilson_interval`: the 95% Wilson score interval of a proportion;
* :class:`Rate`: a count over a total with its interval;
* :func:`share`: ``count / total``, 0.0 over nothing;
* :class:`ReplyCounts`: replies, invalid ones, badly formatted ones, illegal ones;
* :class:`ResultCounts`: games, wins, draws, losses, forfeits;
* :func:`bucket_label` and :func:`by_difficulty`: the per-difficulty breakdown by
  a task's ``random_move_prob``.

>>> from core import Episode, Task
>>> ep = Episode(Task(game="tictactoe", seed=1, max_turns=1))
>>> _ = ep.reset(); _ = ep.step("4")
>>> ReplyCounts.of(ep.to_dict()["events"]).format_errors
1
>>> str(Rate.of(5, 10))
'0.500 [0.237, 0.763]'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, TypeVar

T = TypeVar("T")

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""
RESULTS = ("win", "draw", "loss")
"""The results a game is settled with, from the model's side."""
DEFAULT_BUCKETS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""Edges of the ``random_move_prob`` difficulty buckets (last bucket closed)."""


def share(count: float, total: float) -> float:
    """``count / total``; 0.0 when there is nothing to share.

    >>> share(1, 4), share(0, 0)
    (0.25, 0.0)
    """
    return count / total if total else 0.0


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` in ``n`` (95% by default).
    No trials: ``(0.0, 1.0)``; the edges are exact (0.0 with no success, 1.0 with
    all successes).

    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    >>> lo, hi = wilson_interval(5, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.2366, 0.7634)
    """
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)  # exact at the edges (no 0.999..)
    return (low, high)


@dataclass(frozen=True)
class Rate:
    """A proportion with its 95% Wilson interval."""

    count: int
    n: int
    rate: float
    low: float
    high: float

    @classmethod
    def of(cls, count: int, n: int) -> Rate:
        low, high = wilson_interval(count, n)
        return cls(count, n, share(count, n), low, high)

    def __str__(self) -> str:
        return f"{self.rate:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class ReplyCounts:
    """How a set of replies (trajectory events) were judged."""

    replies: int = 0
    invalid: int = 0
    """Rejected for any reason (badly formatted, not a move, illegal)."""
    format_errors: int = 0
    """Broke the ``<move>`` format."""
    illegal: int = 0
    """A well-formed move the rules do not allow."""

    @classmethod
    def of(cls, events: Iterable[Mapping[str, Any]]) -> ReplyCounts:
        replies = invalid = format_errors = illegal = 0
        for event in events:
            error = event.get("error")
            replies += 1
            invalid += error is not None
            format_errors += error == "format"
            illegal += error == "illegal_move"
        return cls(replies, invalid, format_errors, illegal)

    def __add__(self, other: ReplyCounts) -> ReplyCounts:
        return ReplyCounts(
            self.replies + other.replies,
            self.invalid + other.invalid,
            self.format_errors + other.format_errors,
            self.illegal + other.illegal,
        )

    @property
    def invalid_rate(self) -> float:
        return share(self.invalid, self.replies)

    @property
    def format_error_rate(self) -> float:
        return share(self.format_errors, self.replies)

    @property
    def illegal_rate(self) -> float:
        return share(self.illegal, self.replies)


@dataclass(frozen=True)
class ResultCounts:
    """The results of a set of settled games (a game with no result is not
    counted)."""

    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    forfeits: int = 0
    """Games lost by too many invalid replies (counted among the losses too)."""

    @classmethod
    def of(cls, trajectories: Iterable[Mapping[str, Any]]) -> ResultCounts:
        games = wins = draws = losses = forfeits = 0
        for trajectory in trajectories:
            result = trajectory.get("result")
            if result is None:
                continue
            games += 1
            wins += result == "win"
            draws += result == "draw"
            losses += result == "loss"
            forfeits += trajectory.get("termination") == "forfeit"
        return cls(games, wins, draws, losses, forfeits)

    def count(self, result: str) -> int:
        """The games settled as ``result`` (one of :data:`RESULTS`)."""
        return {"win": self.wins, "draw": self.draws, "loss": self.losses}[result]

    def rates(self) -> dict[str, Rate]:
        """Each of :data:`RESULTS` as a :class:`Rate` over the games."""
        return {r: Rate.of(self.count(r), self.games) for r in RESULTS}


def bucket_label(prob: float, edges: Sequence[float] = DEFAULT_BUCKETS) -> str:
    """The difficulty bucket of a ``random_move_prob``, e.g. ``"0.25-0.50"``.

    >>> bucket_label(0.0), bucket_label(0.3), bucket_label(1.0)
    ('0.00-0.25', '0.25-0.50', '0.75-1.00')
    """
    for lo, hi in pairwise(edges):
        if lo <= prob < hi:
            return f"{lo:.2f}-{hi:.2f}"
    return f"{edges[-2]:.2f}-{edges[-1]:.2f}"


def by_difficulty(
    items: Iterable[T],
    task_of: Callable[[T], Mapping[str, Any]],
    edges: Sequence[float] = DEFAULT_BUCKETS,
) -> dict[str, list[T]]:
    """``items`` grouped by the difficulty bucket of their task's
    ``random_move_prob`` (0.0 when the task has none), buckets in order.

    >>> by_difficulty([{"random_move_prob": 0.9}, {}], lambda t: t)
    {'0.00-0.25': [{}], '0.75-1.00': [{'random_move_prob': 0.9}]}
    """
    groups: dict[str, list[T]] = {}
    for item in items:
        label = bucket_label(float(task_of(item).get("random_move_prob", 0.0)), edges)
        groups.setdefault(label, []).append(item)
    return dict(sorted(groups.items()))


__all__ = [
    "DEFAULT_BUCKETS",
    "RESULTS",
    "Z95",
    "Rate",
    "ReplyCounts",
    "ResultCounts",
    "bucket_label",
    "by_difficulty",
    "share",
    "wilson_interval",
]
