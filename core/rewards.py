"""Reward components: pure functions of a finished episode.

Every component reads the engine's state and the episode's record of events,
never the model's words:

* ``win``: 1 for a win, 0.5 for a draw, 0 for a loss (forfeits and turn caps
  are settled as the task says).
* ``margin``: how far ahead the model finished, in [-1, 1] (the game's own
  ``margin``: Othello's disc difference / 64, Wordle's guesses saved or partial
  credit); -1 for a forfeit and for a game settled as a loss (a turn cap or a
  stop, ``settle``), 0 for one settled as a draw. A settled loss is the worst
  loss there is, so stopping or stalling never scores above playing a lost game
  out (in Tic-Tac-Toe the margin is 0 until the game ends: ``min(margin, 0)``
  paid a model for stopping one move before it lost).
* ``format``: the share of replies that were well formed.
* ``invalid``: minus ``invalid_penalty`` per invalid reply, capped at
  ``invalid_penalty_cap``: a flat, bounded penalty, so one bad game cannot
  outweigh everything else in a GRPO group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.episode import Episode

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"win": 1.0, "margin": 1.0, "format": 0.2, "invalid": 1.0}
)
"""The source walkthrough's weights."""

RESULT_VALUE = {"win": 1.0, "draw": 0.5, "loss": 0.0}

SETTLED = frozenset({"turn_cap", "stopped"})
"""Terminations that end a game before the rules do; the result is the task's
``turn_cap_result``, and the margin is that result's worst (-1) or a draw's 0."""


def win_reward(episode: Episode) -> float:
    return RESULT_VALUE[episode.require_result()]


def margin_reward(episode: Episode) -> float:
    termination = episode.termination
    if termination == "forfeit":
        return -1.0
    if termination in SETTLED:
        return 0.0 if episode.require_result() == "draw" else -1.0
    return float(episode.game.margin(episode.state, episode.task.model_player))


def format_reward(episode: Episode) -> float:
    replies = episode.events
    if not replies:
        return 0.0
    return sum(1 for e in replies if e["format_ok"]) / len(replies)


def invalid_reward(episode: Episode) -> float:
    task = episode.task
    return -round(min(task.invalid_penalty_cap, task.invalid_penalty * episode.invalid_moves), 12)


COMPONENTS: Mapping[str, Callable[[Episode], float]] = MappingProxyType(
    {
        "win": win_reward,
        "margin": margin_reward,
        "format": format_reward,
        "invalid": invalid_reward,
    }
)


@dataclass(frozen=True)
class RewardBreakdown:
    """The weighted total and each component's raw value."""

    total: float
    components: Mapping[str, float]
    weights: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "components": dict(self.components),
            "weights": dict(self.weights),
        }


@dataclass(frozen=True)
class Rubric:
    """Weights over the reward components (default: ``DEFAULT_WEIGHTS``)."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"unknown reward components {unknown}; known: {sorted(COMPONENTS)}")

    def score(self, episode: Episode) -> RewardBreakdown:
        """Score a finished episode."""
        components = {name: COMPONENTS[name](episode) for name in self.weights}
        total = sum(self.weights[name] * value for name, value in components.items())
        return RewardBreakdown(round(total, 12), components, dict(self.weights))
