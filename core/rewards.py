"""Reward components: pure functions of a finished episode's ``Ending``.

Every component reads the engine's verdict and the episode's counts
(``core.events.Ending``), never the model's words:

* ``win``: 1 for a win, 0.5 for a draw, 0 for a loss (forfeits and turn caps
  are settled as the task says).
* ``margin``: how far ahead the model finished, in [-1, 1] (the game's own
  ``margin``: Othello's disc difference / 64, Wordle's guesses saved or partial
  credit); -1 for a forfeit (+1 for the seat whose opponent forfeited, in a
  game of several outside seats: zero-sum, as the results are) and for a game
  settled as a loss (a turn cap or a stop, ``settle``), 0 for one settled as a
  draw. A settled loss is the worst
  loss there is, so stopping or stalling never scores above playing a lost game
  out (in Tic-Tac-Toe the margin is 0 until the game ends: ``min(margin, 0)``
  paid a model for stopping one move before it lost).
* ``format``: the share of replies that were well formed.
* ``invalid``: minus ``invalid_penalty`` per invalid reply, capped at
  ``invalid_penalty_cap``: a flat, bounded penalty, so one bad game cannot
  outweigh everything else in a GRPO group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from core.events import SETTLED, Ending, EpisodeTermination, Result

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"win": 1.0, "margin": 1.0, "format": 0.2, "invalid": 1.0}
)
"""The source walkthrough's weights."""

RESULT_VALUE: Mapping[str, float] = MappingProxyType(
    {Result.WIN: 1.0, Result.DRAW: 0.5, Result.LOSS: 0.0}
)
"""``win``'s value per result (the keys equal their text: ``RESULT_VALUE["win"]``)."""


def win_reward(ending: Ending) -> float:
    return RESULT_VALUE[ending.result]


def margin_reward(ending: Ending) -> float:
    """A settled game (``SETTLED``: turn cap, stop) has its result's worst margin
    (-1) or a draw's 0; a forfeit -1 for the seat that forfeited and +1 for the one it
    forfeited to (two outside seats: the mirror, as their results are); otherwise the
    game's own margin."""
    if ending.termination is EpisodeTermination.FORFEIT:
        return 1.0 if ending.result is Result.WIN else -1.0
    if ending.termination in SETTLED or ending.margin is None:
        return 0.0 if ending.result is Result.DRAW else -1.0
    return float(ending.margin)


def format_reward(ending: Ending) -> float:
    if not ending.replies:
        return 0.0
    return ending.well_formed / ending.replies


def invalid_reward(ending: Ending) -> float:
    penalty = ending.invalid_penalty * ending.invalid_moves
    return -round(min(ending.invalid_penalty_cap, penalty), 12)


COMPONENTS: Mapping[str, Callable[[Ending], float]] = MappingProxyType(
    {
        "win": win_reward,
        "margin": margin_reward,
        "format": format_reward,
        "invalid": invalid_reward,
    }
)


def parse_weights(text: str) -> dict[str, float]:
    """``"win=1,format=0.2"`` -> ``{"win": 1.0, "format": 0.2}`` (a ``Task``'s
    ``reward_weights``); an unknown component or a bad number is a ``ValueError``.

    >>> parse_weights("win=1, format=0.2")
    {'win': 1.0, 'format': 0.2}
    """
    if not isinstance(text, str):
        raise TypeError(f"weights must be text like 'win=1,format=0.2', not {text!r}")
    weights: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not math.isfinite(number):
            raise ValueError(f"{part!r} is not name=number")
        if name in weights:
            raise ValueError(f"{name!r} is given twice")
        weights[name] = number
    return dict(_checked(weights))


def format_weights(weights: Mapping[str, float]) -> str:
    """The written form of ``weights``: ``"win=1.0,format=0.2"``."""
    return ",".join(f"{name}={float(value)!r}" for name, value in _checked(weights).items())


def _checked(weights: Mapping[str, float]) -> Mapping[str, float]:
    if not weights:
        raise ValueError("no reward component given")
    unknown = sorted(set(weights) - set(COMPONENTS))
    if unknown:
        raise ValueError(f"unknown reward components {unknown}; known: {sorted(COMPONENTS)}")
    for name, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"the weight of {name!r} must be a number, not {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"the weight of {name!r} must be finite, not {value!r}")
    return weights


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

    def score(self, ending: Ending) -> RewardBreakdown:
        """Score a finished episode's ``Ending`` (``Episode.ending()``)."""
        components = {name: COMPONENTS[name](ending) for name in self.weights}
        total = sum(self.weights[name] * value for name, value in components.items())
        return RewardBreakdown(round(total, 12), components, dict(self.weights))
