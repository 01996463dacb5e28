"""One TRL reward function per core rubric component, so each logs as its own
column (``rewards/reward_win/mean`` ...).

They read the finished episodes: in ``environment_factory`` mode from the
``environments`` TRL passes, in ``rollout_func`` mode from the extra keys the
rollout function returned (``component_key(name)``). The values are core's
(``Episode.reward().components``); nothing is recomputed here.

Weights: :func:`reward_weights` gives ``core.rewards.DEFAULT_WEIGHTS`` in
rollout-function mode. In environment mode the environment's ``get_reward``
(the rubric total, weight 1, added by TRL itself) already carries the signal,
so the component columns get weight 0 there: logged, not counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.batch_stats import batch_means, episode_stats, stats_from_columns
from core.rewards import DEFAULT_WEIGHTS

COMPONENTS: tuple[str, ...] = tuple(DEFAULT_WEIGHTS)
"""The rubric's components in core's order (win, margin, format, invalid)."""


def component_key(name: str) -> str:
    """The rollout-function output key carrying component ``name``."""
    return f"{name}_reward"


def _values(name: str, environments: Sequence[Any] | None, kwargs: dict[str, Any]) -> list[float]:
    if environments is not None:
        return [
            float(env.episode.finish().reward().components.get(name, 0.0)) for env in environments
        ]
    key = component_key(name)
    if key not in kwargs:
        raise KeyError(f"no {key!r} column: use the gamebridge rollout_func or environment_factory")
    return [float(v) for v in kwargs[key]]


# rosetta: metrics: `game/win_rate`, `game/loss_rate`, `game/valid_rate`, `game/turns` through TRL's `log_metric` (per batch)
def log_game_metrics(environments: Sequence[Any] | None, kwargs: dict[str, Any]) -> None:
    """Batch means of the games (``game/turns``, ``game/valid_rate``,
    ``game/win_rate``, ``game/loss_rate``) through TRL's ``log_metric``."""
    log = kwargs.get("log_metric")
    if log is None:
        return
    if environments is not None:
        stats = [episode_stats(env.episode.finish()) for env in environments]
    elif (stats := stats_from_columns(kwargs)) is None:  # not this project's rollout_func
        return
    for key, value in batch_means(stats).items():
        log(f"game/{key}", value)


def _reward_function(name: str) -> Callable[..., list[float]]:
    """TRL's reward function for core component ``name`` (named ``reward_<name>``, its
    column); the first component's also logs the game metrics, once per batch."""

    def reward(
        completions: list[Any], environments: Sequence[Any] | None = None, **kwargs: Any
    ) -> list[float]:
        if name == COMPONENTS[0]:
            log_game_metrics(environments, kwargs)
        return _values(name, environments, kwargs)

    reward.__name__ = reward.__qualname__ = f"reward_{name}"
    reward.__doc__ = f"Core's ``{name}`` component (``Episode.reward().components``)."
    return reward


REWARD_FUNCTIONS: dict[str, Callable[..., list[float]]] = {
    name: _reward_function(name) for name in COMPONENTS
}
"""One per core rubric component, generated from core's (as the Verifiers adapter does)."""
reward_win = REWARD_FUNCTIONS["win"]
reward_margin = REWARD_FUNCTIONS["margin"]
reward_format = REWARD_FUNCTIONS["format"]
reward_invalid = REWARD_FUNCTIONS["invalid"]


# rosetta: reward: `reward_functions()`: one TRL column per component; `reward_weights(mode)`
def reward_functions() -> list[Callable[..., list[float]]]:
    """The four reward functions, in :data:`COMPONENTS` order."""
    return [REWARD_FUNCTIONS[name] for name in COMPONENTS]


def reward_weights(mode: str, weights: Mapping[str, float] | None = None) -> list[float]:
    """``GRPOConfig.reward_weights`` for :func:`reward_functions` in ``mode``
    (``"rollout_func"``: ``weights``, the run's tasks' ``task.weights()``, else core's
    defaults, a component they leave out at 0; ``"env_factory"``: zeros, because the
    environment's ``get_reward`` column is the rubric total)."""
    if mode == "rollout_func":
        weights = DEFAULT_WEIGHTS if weights is None else weights
        return [float(weights.get(name, 0.0)) for name in COMPONENTS]
    if mode == "env_factory":
        return [0.0 for _ in COMPONENTS]
    raise ValueError(f"mode must be 'env_factory' or 'rollout_func', not {mode!r}")


__all__ = [
    "COMPONENTS",
    "REWARD_FUNCTIONS",
    "component_key",
    "log_game_metrics",
    "reward_format",
    "reward_functions",
    "reward_invalid",
    "reward_margin",
    "reward_weights",
    "reward_win",
]
