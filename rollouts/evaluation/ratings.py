"""An arena's ratings from its records: per game, the fit, the tables, the docs.

Reads records only (``gamebridge arena``'s JSONL): each finished game's seats
and the result core settled; the fit is core's (``core.stats.fit_ratings``,
Bradley-Terry on the Elo scale, the random player at 0, 95% intervals from the
Hessian). Failed games (an endpoint that did not answer) are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.arena import SCORES
from core.stats import ANCHOR_ELO, RatingTable, fit_ratings
from rollouts.record import RolloutRecord

ANCHOR = "random"
"""The player whose rating is fixed at ``ANCHOR_ELO`` (0), when it plays."""


@dataclass
class GameRatings:
    """One game's ratings and the head-to-head scores they come from."""

    game: str
    table: RatingTable
    head_to_head: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    """``(a, b) -> (a's points against b, games)``, for every ordered pair that met."""
    players: list[str] = field(default_factory=list)


def game_results(records: Iterable[RolloutRecord]) -> dict[str, list[tuple[str, str, float]]]:
    """Per game, ``(seat 0, seat 1, seat 0's score)`` of every finished game, by index."""
    out: dict[str, list[tuple[str, str, float]]] = {}
    for r in sorted(records, key=lambda r: (r.index is None, r.index or 0)):
        arena = r.trajectory.get("arena")
        result = r.trajectory.get("result")
        if r.error is not None or not arena or result not in SCORES:
            continue
        seat0, seat1 = arena["seats"]
        mine = SCORES[result]
        score = mine if arena["outside"] == 0 else 1.0 - mine
        out.setdefault(r.task["game"], []).append((seat0, seat1, score))
    return out


def arena_ratings(
    records: Iterable[RolloutRecord], players: Sequence[str], *, anchor: str | None = None
) -> dict[str, GameRatings]:
    """Each game's :class:`GameRatings`, anchored on ``anchor`` (default: ``random``
    when it plays, else the first player)."""
    if anchor is None:
        anchor = ANCHOR if ANCHOR in players else players[0]
    out = {}
    for game, results in game_results(records).items():
        h2h: dict[tuple[str, str], tuple[float, int]] = {}
        for a, b, s in results:
            for x, y, sx in ((a, b, s), (b, a, 1.0 - s)):
                points, n = h2h.get((x, y), (0.0, 0))
                h2h[(x, y)] = (points + sx, n + 1)
        seen = [p for p in players if any(p in (a, b) for a, b, _ in results)]
        table = fit_ratings(results, anchor=anchor, players=seen)
        out[game] = GameRatings(game, table, h2h, seen)
    return out


def _num(x: float) -> str:
    return f"{x:+.0f}" if round(x) != 0 else "0"


def rating_rows(g: GameRatings) -> tuple[list[str], list[list[str]]]:
    """The ratings table: header and rows (best first)."""
    header = ["player", "Elo", "95% interval", "games", "score"]
    rows = []
    for r in g.table.ratings:
        interval = "anchor" if r.player == g.table.anchor else f"[{_num(r.low)}, {_num(r.high)}]"
        rows.append(
            [r.player, _num(r.elo), interval, str(r.games), f"{r.score / max(r.games, 1):.2f}"]
        )
    return header, rows


def format_ratings(ratings: Mapping[str, GameRatings]) -> str:
    """Plain-text tables, one per game."""
    lines = []
    for game, g in ratings.items():
        header, rows = rating_rows(g)
        widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=True)]
        lines.append(
            f"{game}: {g.table.games} games, Bradley-Terry Elo, {g.table.anchor} = "
            f"{ANCHOR_ELO:g}, 95% intervals (Hessian)"
        )
        for row in (header, *rows):
            lines.append(
                "  "
                + "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )
    return "\n".join(lines)


def ratings_markdown(g: GameRatings) -> str:
    """One game's ratings as a Markdown table, and its head-to-head scores."""
    header, rows = rating_rows(g)
    out = [
        f"{g.table.games} games; Elo relative to `{g.table.anchor}` (= {ANCHOR_ELO:g}), "
        "95% intervals from the Hessian.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    out += ["| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |" for row in rows]
    names = [r.player for r in g.table.ratings]
    out += ["", "Score of the row against the column (points / games):", ""]
    out.append("| | " + " | ".join(f"`{n}`" for n in names) + " |")
    out.append("|---|" + "---|" * len(names))
    for a in names:
        cells = []
        for b in names:
            points, n = g.head_to_head.get((a, b), (0.0, 0))
            cells.append("" if a == b or not n else f"{points:g}/{n}")
        out.append(f"| `{a}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def ratings_json(ratings: Mapping[str, GameRatings]) -> dict[str, Any]:
    return {
        game: {
            **g.table.to_dict(),
            "head_to_head": [
                {"player": a, "against": b, "points": p, "games": n}
                for (a, b), (p, n) in sorted(g.head_to_head.items())
            ],
        }
        for game, g in ratings.items()
    }


def docs_marker(game: str, end: bool = False) -> str:
    return f"<!-- arena-ratings: {game} {'end' if end else 'start'} -->"


def write_docs(path: str | Path, game: str, text: str) -> bool:
    """Replace the text between ``game``'s arena markers in ``path``; False if it has none."""
    from rollouts.markers import write_between

    return write_between(path, docs_marker(game), docs_marker(game, end=True), "\n" + text)


__all__ = [
    "ANCHOR",
    "GameRatings",
    "arena_ratings",
    "docs_marker",
    "format_ratings",
    "game_results",
    "rating_rows",
    "ratings_json",
    "ratings_markdown",
    "write_docs",
]
