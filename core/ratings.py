"""Bradley-Terry ratings with 95% intervals, on the Elo scale.

``fit_ratings(games, anchor=...)`` reads finished games as ``(a, b, score_a)``
(``score_a``: 1 a won, 0.5 a draw, 0 b won) and fits one strength per player by
maximum likelihood of the Bradley-Terry model

    P(a beats b) = 1 / (1 + 10 ** ((elo_b - elo_a) / 400)),

a draw counting as half a win for each side (the Elo convention). Ratings are
Elo points relative to the ``anchor`` player, whose rating is fixed at 0 (the
arena anchors on the random player). Two players that met ``n`` times get
``prior_draws`` virtual draws added to those games, so that a player that won
every game has a finite rating (about ``400 * log10(2n + 1)`` above its
opponent for ``prior_draws=1``) instead of an infinite one.

The fit is Newton's method on the concave log-likelihood; the intervals are
``rating +- 1.96`` standard errors from the inverse of its Hessian at the
optimum (the observed information, the anchor held fixed), so a rating's
interval says how well it is known *relative to the anchor*. Everything is
deterministic: the same games give the same figures, in any order.

>>> games = [("a", "r", 1.0)] * 9 + [("r", "a", 1.0)] * 3
>>> table = fit_ratings(games, anchor="r")
>>> [(r.player, round(r.elo)) for r in table.ratings]
[('a', 173), ('r', 0)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per unit of the natural-log strength."""
Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""
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
    connected to the anchor by games (its rating would be undefined)."""
    if not isinstance(prior_draws, (int, float)) or not prior_draws > 0:
        raise ValueError(f"prior_draws must be > 0, got {prior_draws!r}")
    rows = list(games)
    names: list[str] = list(players or [])
    others = {x for a, b, _ in rows for x in (a, b)} - set(names)
    names += sorted(others)  # one order whatever the games' order: the same figures
    index = {name: i for i, name in enumerate(names)}
    played: dict[tuple[int, int], float] = {}
    won: dict[tuple[int, int], float] = {}
    count = 0
    for a, b, score in rows:
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"a score is 1, 0.5 or 0, got {score!r} ({a} vs {b})")
        if a == b:
            raise ValueError(f"{a} played itself")
        i, j = index[a], index[b]
        played[(i, j)] = played.get((i, j), 0.0) + 1.0
        won[(i, j)] = won.get((i, j), 0.0) + score
        won[(j, i)] = won.get((j, i), 0.0) + 1.0 - score
        count += 1
    if anchor not in index:
        raise ValueError(f"the anchor {anchor!r} played no game")
    n = len(names)
    # symmetric game counts and scores, with the virtual draws
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
    _check_connected(names, games_n, index[anchor])
    a_idx = index[anchor]
    free = [i for i in range(n) if i != a_idx]
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
    return RatingTable(tuple(ratings[i] for i in order), anchor, count, float(prior_draws))


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


__all__ = ["ANCHOR_ELO", "Rating", "RatingTable", "expected_score", "fit_ratings"]
