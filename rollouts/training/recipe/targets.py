"""The targets of the games played by the ladder or by held-out answers (Connect Four,
Othello, Wordle: issue 37), and the run read against them in words the command writes.

Tic-Tac-Toe's exact targets live beside its verdict (``report.TARGETS``). These are
greedy, held-out, both sides, after the run's last stage; the legal-move rate is also
read after SFT, where it must already stand before RL. A miss is written as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rollouts.training.recipe.ladder import pooled_rate


@dataclass(frozen=True)
class Target:
    """One figure of the last stage and the least it must reach."""

    label: str
    """How the verdict names it: ``wins against random``."""
    held_out: str
    """The held-out set (a ladder rung, or ``solve``); empty: every set's replies pooled."""
    key: str
    """The summary's rate: ``win_rate`` or ``legal_move_rate``."""
    least: float
    strictly: bool = False
    """More than ``least`` (the issue's "more than 50%"), not at least."""

    def met(self, value: float) -> bool:
        return value > self.least if self.strictly else value >= self.least

    def words(self) -> str:
        return f"{'more than' if self.strictly else 'at least'} {100 * self.least:g}%"


LEGAL_BEFORE_RL = 0.995
"""The legal-move rate the student must reach before RL (after SFT)."""

MAX_MINUTES = 60
"""The whole command's budget on 2 cores, in minutes."""

GAME_TARGETS: dict[str, tuple[Target, ...]] = {
    "connect_four": (
        Target("wins against random", "random", "win_rate", 0.98),
        Target("wins against minimax:2", "minimax:2", "win_rate", 0.50, strictly=True),
    ),
    "othello": (
        Target("legal moves", "", "legal_move_rate", 0.995),
        Target("wins against random", "random", "win_rate", 0.95),
        Target("wins against minimax:1", "minimax:1", "win_rate", 0.50, strictly=True),
    ),
    "wordle": (
        Target("solved within six guesses", "solve", "win_rate", 0.60),
        Target("legal guesses", "", "legal_move_rate", 0.99),
    ),
}
"""Each game's targets after the last stage (greedy, held-out, both sides)."""

FIGURES: dict[str, tuple[str, ...]] = {
    "connect_four": ("minimax:3", "minimax:4"),
    "othello": ("minimax:3+random:0-0.25",),
}
"""Rungs each game reports a figure against, with no target."""


def rate(per_set: dict[str, Any], target: Target) -> float:
    """``target``'s figure from one decoding's per-set summaries (pooled over every set's
    replies when the target names none, as the table's legal-moves column)."""
    if target.held_out:
        return float(per_set[target.held_out][target.key])
    return pooled_rate(per_set, target.key)


def _verdict(target: Target, value: float, constrained: bool) -> str:
    """Met or missed; a legal-move rate under constrained decoding is the constraint's."""
    if constrained and target.key == "legal_move_rate":
        return f"{_met(target.met(value))} only by constrained decoding, an option"
    return _met(target.met(value))


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def _win(e: dict[str, Any]) -> str:
    lo, hi = e["win_ci"]
    return f"{100 * e['win_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def rl_gain(stages: dict[str, Any], last: str) -> str:
    """Whether RL raised the first rung the SFT student wins under half of (Wordle: the
    solved rate), with 95% intervals that do not overlap (the issue's test of RL that
    adds)."""
    sft, end = stages["sft"]["greedy"], stages[last]["greedy"]
    if "solve" in sft:
        rung, where = "solve", "the solved rate"
    else:
        rung = next((name for name, e in sft.items() if e["win_rate"] < 0.5), None)
        where = f"the first rung SFT wins under half of ({rung})"
    if rung is None:
        return "- RL: the SFT student wins half its games or more on every rung."
    before, after = sft[rung], end[rung]
    if after["win_ci"][0] > before["win_ci"][1]:
        word = "raised, the 95% intervals apart"
    elif after["win_rate"] > before["win_rate"]:
        word = "**not shown** to rise: the 95% intervals overlap"
    else:
        word = "**not raised**"
    return (
        f"- RL on {where}: {_win(before)} after SFT, "
        f"{_win(after)} after {stages[last]['label']}: {word}."
    )


def game_verdict(results: dict[str, Any]) -> list[str]:
    """The run of a game in :data:`GAME_TARGETS` read against its targets (empty for any
    other game, or before SFT has finished)."""
    game = results["settings"]["game"]
    stages = results["stages"]
    if game not in GAME_TARGETS or "sft" not in stages:
        return []
    last = list(stages)[-1]
    end = stages[last]["greedy"]
    constrained = bool(results["settings"].get("constrained_decoding"))
    legal = Target("legal moves", "", "legal_move_rate", LEGAL_BEFORE_RL)
    sft_legal = rate(stages["sft"]["greedy"], legal)
    decoding = "greedy, constrained to legal moves" if constrained else "greedy"
    out = [
        f"**Read against the targets** ({decoding}, held-out, both sides; written by the command):",
        "",
        f"- SFT: {100 * sft_legal:.1f}% legal moves before RL "
        f"({legal.words()}: {_verdict(legal, sft_legal, constrained)}).",
    ]
    for target in GAME_TARGETS[game]:
        if target.held_out and target.held_out not in end:
            out.append(f"- {target.label}: not played (`--ladder-rungs`): **missed**.")
            continue
        value = rate(end, target)
        out.append(
            f"- after {stages[last]['label']}: {100 * value:.1f}% {target.label} "
            f"({target.words()}: {_verdict(target, value, constrained)})."
        )
    played = [n for n in FIGURES.get(game, ()) if n in end]  # ``ladder_rungs`` may drop some
    figures = [f"{100 * end[n]['win_rate']:.1f}% against {n}" for n in played]
    if game == "wordle":
        figures.append(f"{end['solve'].get('mean_guesses') or '-'} mean guesses of solved games")
    if figures:
        out.append(f"- figures with no target: {', '.join(figures)}.")
    out.append(rl_gain(stages, last) if last != "sft" else "- no RL stage ran.")
    minutes = results["timing"]["total_wall_seconds"] / 60
    out += [
        f"- the whole command: {minutes:.1f} minutes wall "
        f"(at most {MAX_MINUTES}: {_met(minutes <= MAX_MINUTES)}).",
        "",
    ]
    return out
