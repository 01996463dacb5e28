"""The ladder: a two-player game's player against a rising line of opponents.

The rungs are core's opponents (``core.opponents.make_opponent`` through each task):
the random player, then alpha-beta (``minimax``) at each depth of :data:`LADDER_DEPTHS`,
and for Othello the seed course's opponent (:data:`SEED_RUNGS`). Every rung plays the
same tasks but for the opponent: task ``i`` of each rung has one seed, so one opening
(core's ``opening_plies``, drawn from the task seed) and one side (sides alternate,
the player first in even tasks), and rungs compare like for like. Every game goes
through ``core.Episode``, which judges each reply and the ending; the counts and their
95% Wilson intervals are ``evaluation.summarize``'s (``core.stats``).

The recipe uses the ladder as its held-out evaluation for every two-player game it
cannot evaluate exactly (Connect Four, Othello): the teacher climbs it (the ceiling)
and so does the student after every stage; Tic-Tac-Toe keeps its exact evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

LADDER_DEPTHS = (1, 2, 3, 4)
"""The alpha-beta depths of the ladder's rungs, after the random player."""


@dataclass(frozen=True)
class Rung:
    """One opponent of the ladder, as task fields."""

    name: str
    """Its column in the table (``random``, ``minimax:2``, ...)."""
    opponent: str
    """``Task.opponent``: ``random`` or ``minimax``."""
    depth: int = 1
    min_random_move_prob: float = 0.0
    max_random_move_prob: float = 0.0
    """Each task's random-move probability is drawn uniformly from this range."""


SEED_RUNGS: dict[str, Rung] = {
    "othello": Rung("minimax:3+random:0-0.25", "minimax", 3, 0.0, 0.25),
}
"""A game's extra rung: the opponent of the seed course. Its Othello player (Black)
met a depth-3 minimax with a random-move probability; core has no named profile for
it, so the rung takes the seed's last RL stage's range, 0-0.25, one draw per task."""


def rungs(game: str) -> list[Rung]:
    """The ladder of ``game``: random, minimax at :data:`LADDER_DEPTHS`, its seed rung."""
    out = [Rung("random", "random")]
    out += [Rung(f"minimax:{d}", "minimax", d) for d in LADDER_DEPTHS]
    if game in SEED_RUNGS:
        out.append(SEED_RUNGS[game])
    return out


def ladder_sets(
    game: str,
    games: int,
    seed: int,
    opening_plies: int,
    names: Sequence[str] | None = None,
) -> dict[str, list[Any]]:
    """Each rung's tasks (of the rungs ``names``, default all): ``games`` each from one
    ``seed`` (task ``i`` of every rung has one seed, opening and side), sides alternating,
    ``opening_plies`` random plies first."""
    from core.tasks import make_tasks

    return {
        rung.name: make_tasks(
            games,
            seed=seed,
            game=game,
            opponent=rung.opponent,
            depth=rung.depth,
            min_random_move_prob=rung.min_random_move_prob,
            max_random_move_prob=rung.max_random_move_prob,
            opening_plies=opening_plies,
        )
        for rung in rungs(game)
        if names is None or rung.name in names
    }


# --- the report ---------------------------------------------------------------------------------
def _cell(e: dict[str, Any]) -> str:
    n = max(e["games"], 1)
    wdl = "/".join(f"{100 * e[k] / n:.1f}" for k in ("wins", "draws", "losses"))
    lo, hi = e["win_ci"]
    return f"{wdl}, win {e['win_rate']:.3f} [{lo:.3f}, {hi:.3f}]"


def _sides(e: dict[str, Any]) -> str:
    sides = e.get("sides") or []
    return " / ".join(f"{100 * x['wins'] / max(x['games'], 1):.1f}" for x in sides) or "-"


def ladder_rows(results: dict[str, Any], decoding: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, per-rung summaries) of the teacher (greedy only) and each stage."""
    rows = []
    if decoding == "greedy" and "teacher" in results:
        label = f"teacher ({results['teacher']['name']}), ceiling"
        rows.append((label, results["teacher"]["held_out"]))
    for entry in results["stages"].values():
        if decoding in entry:
            rows.append((entry["label"], entry[decoding]))
    return rows


def pooled_rate(per_set: dict[str, Any], key: str) -> float:
    """``key`` (a share of replies: ``legal_move_rate``, ``format_rate``) over every
    held-out set's replies together: the ladder's rungs, or Wordle's one set."""
    replies = sum(e["replies"] for e in per_set.values())
    count = sum(round(e[key] * e["replies"]) for e in per_set.values())
    return count / max(replies, 1)


def ladder_table(results: dict[str, Any], decoding: str) -> list[str]:
    """The ladder as Markdown: a row per player, a column per rung (W/D/L % and the win
    rate with its 95% interval), legal moves; then the wins of each side."""
    rows = ladder_rows(results, decoding)
    if not rows:
        return []
    names = list(rows[0][1])
    legal_head = "legal moves" + (
        " (constrained)" if results.get("settings", {}).get("constrained_decoding") else ""
    )
    head = ["player", *(f"vs {n} W/D/L %, win [95% CI]" for n in names), legal_head]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, per in rows:
        legal = pooled_rate({n: per[n] for n in names}, "legal_move_rate")
        cells = [label, *(_cell(per[n]) for n in names), f"{legal:.3f}"]
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        "Wins % by side (the player first / second; sides alternate, each half the games):",
        "",
        "| player | " + " | ".join(f"vs {n}" for n in names) + " |",
        "|" + "---|" * (len(names) + 1),
        *(
            f"| {label} | " + " | ".join(_sides(per[n]) for n in names) + " |"
            for label, per in rows
        ),
    ]
    return out


_COLOURS = ("#000000", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def ladder_svg(results: dict[str, Any]) -> str:
    """The ladder plotted: a column per rung, the win rate of the teacher and each greedy
    stage after the untrained one (a line each) with its 95% interval."""
    rows = [(label, per) for label, per in ladder_rows(results, "greedy") if label != "base"]
    names = list(rows[0][1]) if rows else []
    left, bottom, step = 60, 260, 110
    width = left + 40 + step * max(len(names), 1)
    height = bottom + 30 + 16 * len(rows)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<line x1="{left}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="20" x2="{left}" y2="{bottom}" stroke="black"/>',
        '<text x="4" y="14">win rate (greedy, 95% CI)</text>',
    ]
    for tick in range(0, 11, 2):
        y = bottom - tick * 24
        parts.append(f'<text x="{left - 30}" y="{y + 4}">{tick / 10:.1f}</text>')
        parts.append(f'<line x1="{left}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#eee"/>')
    for i, name in enumerate(names):
        x = left + step // 2 + step * i
        parts.append(f'<text x="{x - 40}" y="{bottom + 16}">{escape(name)}</text>')
    for j, (label, per) in enumerate(rows):
        colour = _COLOURS[j % len(_COLOURS)]
        points = []
        for i, name in enumerate(names):
            x = left + step // 2 + step * i + 4 * j
            lo, hi = per[name]["win_ci"]
            y = bottom - 240 * per[name]["win_rate"]
            points.append(f"{x},{y:.1f}")
            parts.append(
                f'<line x1="{x}" y1="{bottom - 240 * lo:.1f}" x2="{x}" '
                f'y2="{bottom - 240 * hi:.1f}" stroke="{colour}"/>'
            )
            parts.append(f'<circle cx="{x}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        parts.append(
            f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" '
            'stroke-opacity="0.5"/>'
        )
        parts.append(
            f'<text x="{left}" y="{bottom + 34 + 16 * j}" fill="{colour}">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
