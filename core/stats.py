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
  a task's ``random_move_prob``;
* :func:`fit_ratings`: Bradley-Terry ratings of players from their games (the
  arena's), Elo points above an anchor with 95% intervals (section below).

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


# --- ratings -------------------------------------------------------------------------------
# Bradley-Terry ratings with 95% intervals, on the Elo scale.
#
# ``fit_ratings(games, anchor=...)`` reads finished games as ``(a, b, score_a)``
# (``score_a``: 1 a won, 0.5 a draw, 0 b won) and fits one strength per player by
# maximum likelihood of the Bradley-Terry model
#
#     P(a beats b) = 1 / (1 + 10 ** ((elo_b - elo_a) / 400)),
#
# a draw counting as half a win for each side (the Elo convention). Ratings are
# Elo points relative to the ``anchor`` player, whose rating is fixed at 0 (the
# arena anchors on the random player). Two players that met ``n`` times get
# ``prior_draws`` virtual draws added to those games, so that a player that won
# every game has a finite rating (about ``400 * log10(2n + 1)`` above its
# opponent for ``prior_draws=1``) instead of an infinite one.
#
# The fit is Newton's method on the concave log-likelihood; the intervals are
# ``rating +- 1.96`` standard errors from the inverse of its Hessian at the
# optimum (the observed information, the anchor held fixed), so a rating's
# interval says how well it is known *relative to the anchor*. Everything is
# deterministic: the same games give the same figures, in any order.

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per unit of the natural-log strength."""
ANCHOR_ELO = 0.0
"""The anchor's rating."""


@dataclass(frozen=True)
class Rating:
    """One player's rating in a :class:`RatingTable`."""

    player: str
    elo: float
    """Elo points above the anchor (the anchor: exactly ``ANCHOR_ELO``)."""
    low: float
    high: float
    """The 95% interval (the anchor's is its rating: it is fixed)."""
    games: int
    """Games it played (virtual draws not counted)."""
    score: float
    """Its points in those games (win 1, draw 1/2)."""


@dataclass(frozen=True)
class RatingTable:
    """A fit: the ratings, best first, and what they rest on."""

    ratings: tuple[Rating, ...]
    anchor: str
    games: int
    prior_draws: float

    def by_player(self) -> dict[str, Rating]:
        return {r.player: r for r in self.ratings}

    def to_dict(self) -> dict[str, object]:
        return {
            "anchor": self.anchor,
            "anchor_elo": ANCHOR_ELO,
            "games": self.games,
            "prior_draws": self.prior_draws,
            "ratings": [
                {
                    "player": r.player,
                    "elo": r.elo,
                    "low": r.low,
                    "high": r.high,
                    "games": r.games,
                    "score": r.score,
                }
                for r in self.ratings
            ],
        }


def expected_score(elo_a: float, elo_b: float) -> float:
    """The Bradley-Terry expected score of ``a`` against ``b``.

    >>> expected_score(400.0, 0.0)  # 10 to 1
    0.9090909090909091
    """
    return 1.0 / (1.0 + math.pow(10.0, (elo_b - elo_a) / 400.0))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """``matrix^-1 rhs`` by Gaussian elimination with partial pivoting."""
    n = len(rhs)
    a = [row[:] + [rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-300:
            raise ValueError("the ratings are not identified (a singular information matrix)")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            if f:
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def _tally(
    rows: list[tuple[str, str, float]], index: dict[str, int]
) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], float]]:
    """Games played and points won per ordered pair of player indices; a score other
    than 1, 0.5 or 0, or a player against itself, is a ``ValueError``."""
    played: dict[tuple[int, int], float] = {}
    won: dict[tuple[int, int], float] = {}
    for a, b, score in rows:
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"a score is 1, 0.5 or 0, got {score!r} ({a} vs {b})")
        if a == b:
            raise ValueError(f"{a} played itself")
        i, j = index[a], index[b]
        played[(i, j)] = played.get((i, j), 0.0) + 1.0
        won[(i, j)] = won.get((i, j), 0.0) + score
        won[(j, i)] = won.get((j, i), 0.0) + 1.0 - score
    return played, won


def _with_prior_draws(
    n: int,
    played: dict[tuple[int, int], float],
    won: dict[tuple[int, int], float],
    prior_draws: float,
) -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    """Symmetric game counts and scores with ``prior_draws`` virtual draws added to every
    pair that met, and the real game counts."""
    games_n = [[0.0] * n for _ in range(n)]
    for (i, j), k in played.items():
        games_n[i][j] += k
        games_n[j][i] += k
    score_n = [[won.get((i, j), 0.0) for j in range(n)] for i in range(n)]
    real = [[games_n[i][j] for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and real[i][j] > 0:
                games_n[i][j] += prior_draws
                score_n[i][j] += prior_draws / 2.0
    return games_n, score_n, real


def _newton(
    games_n: list[list[float]], score_n: list[list[float]], free: list[int]
) -> tuple[list[float], list[list[float]]]:
    """The Bradley-Terry log-likelihood's maximum over the ``free`` players' ratings (the
    others stay 0), by Newton's method with a halving line search; the ratings (natural
    units) and the information matrix over ``free`` there."""
    n = len(games_n)
    theta = [0.0] * n

    def loglik(t: list[float]) -> float:
        return sum(
            score_n[i][j] * math.log(max(_sigmoid(t[i] - t[j]), 1e-300))
            for i in range(n)
            for j in range(n)
            if i != j and games_n[i][j] > 0
        )

    def grad_info(t: list[float]) -> tuple[list[float], list[list[float]]]:
        g = [0.0] * n
        info = [[0.0] * n for _ in range(n)]
        for i in range(n):
            for j in range(n):
                if i == j or games_n[i][j] == 0:
                    continue
                p = _sigmoid(t[i] - t[j])
                g[i] += score_n[i][j] - games_n[i][j] * p
                w = games_n[i][j] * p * (1.0 - p)
                info[i][i] += w
                info[i][j] -= w
        return [g[i] for i in free], [[info[i][j] for j in free] for i in free]

    current = loglik(theta)
    for _ in range(200):
        g, info = grad_info(theta)
        step = _solve(info, g) if free else []
        scale = 1.0
        while True:
            trial = theta[:]
            for k, i in enumerate(free):
                trial[i] += scale * step[k]
            value = loglik(trial)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale /= 2.0
        theta, current = trial, value
        if max((abs(scale * s) for s in step), default=0.0) < 1e-10:
            break
    _, info = grad_info(theta)
    return theta, info


def fit_ratings(
    games: Iterable[tuple[str, str, float]],
    *,
    anchor: str,
    players: Sequence[str] | None = None,
    prior_draws: float = 1.0,
) -> RatingTable:
    """Bradley-Terry ratings of every player in ``games`` (and ``players``, in
    that order for ties), anchored on ``anchor`` (rating 0). Raises ``ValueError``
    when the anchor is missing, a score is not 0, 0.5 or 1, or a player is not
    connected to the anchor by games (its rating would be undefined).

    >>> games = [("a", "r", 1.0)] * 9 + [("r", "a", 1.0)] * 3
    >>> table = fit_ratings(games, anchor="r")
    >>> [(r.player, round(r.elo)) for r in table.ratings]
    [('a', 173), ('r', 0)]
    """
    if not isinstance(prior_draws, (int, float)) or not prior_draws > 0:
        raise ValueError(f"prior_draws must be > 0, got {prior_draws!r}")
    rows = list(games)
    names: list[str] = list(players or [])
    others = {x for a, b, _ in rows for x in (a, b)} - set(names)
    names += sorted(others)  # one order whatever the games' order: the same figures
    index = {name: i for i, name in enumerate(names)}
    played, won = _tally(rows, index)
    if anchor not in index:
        raise ValueError(f"the anchor {anchor!r} played no game")
    n = len(names)
    games_n, score_n, real = _with_prior_draws(n, played, won, prior_draws)
    _check_connected(names, games_n, index[anchor])
    a_idx = index[anchor]
    free = [i for i in range(n) if i != a_idx]
    theta, info = _newton(games_n, score_n, free)
    variance = {}
    for k, i in enumerate(free):
        unit = [1.0 if m == k else 0.0 for m in range(len(free))]
        variance[i] = _solve(info, unit)[k]
    ratings = []
    for i, name in enumerate(names):
        elo = ANCHOR_ELO + ELO_PER_NAT * (theta[i] - theta[a_idx])
        half = Z95 * ELO_PER_NAT * math.sqrt(max(variance.get(i, 0.0), 0.0))
        played_i = sum(real[i])
        points = sum(won.get((i, j), 0.0) for j in range(n) if j != i)
        ratings.append(Rating(name, elo, elo - half, elo + half, int(played_i), points))
    order = sorted(range(n), key=lambda i: (-ratings[i].elo, i))
    return RatingTable(tuple(ratings[i] for i in order), anchor, len(rows), float(prior_draws))


def _check_connected(names: list[str], games_n: list[list[float]], anchor: int) -> None:
    seen, todo = {anchor}, [anchor]
    while todo:
        i = todo.pop()
        for j, k in enumerate(games_n[i]):
            if k > 0 and j not in seen:
                seen.add(j)
                todo.append(j)
    lost = [names[i] for i in range(len(names)) if i not in seen]
    if lost:
        raise ValueError(f"no chain of games links {lost} to the anchor {names[anchor]!r}")


__all__ = [
    "ANCHOR_ELO",
    "DEFAULT_BUCKETS",
    "ELO_PER_NAT",
    "RESULTS",
    "Z95",
    "Rate",
    "Rating",
    "RatingTable",
    "ReplyCounts",
    "ResultCounts",
    "bucket_label",
    "by_difficulty",
    "expected_score",
    "fit_ratings",
    "share",
    "wilson_interval",
]
