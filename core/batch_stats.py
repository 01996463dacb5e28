"""Per-game figures and their batch means, for a trainer's per-batch log (TRL logs
them as ``game/turns``, ``game/valid_rate``, ``game/win_rate``, ``game/loss_rate``).

``episode_stats`` reads a finished (or settled) episode; ``batch_means`` averages
such rows (a rollout function may carry them as columns, one key each:
``STAT_KEYS``).

>>> from core import Episode, Task
>>> ep = Episode(Task(game="tictactoe", seed=1, max_turns=1))
>>> _ = ep.reset(); _ = ep.step("4")
>>> batch_means([episode_stats(ep)])["valid_rate"]
0.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.episode import Episode

STAT_KEYS = ("game_turns", "game_invalid", "game_result")
"""The per-game figures: replies, invalid replies, result."""


def episode_stats(episode: Episode) -> dict[str, Any]:
    """Per-episode figures for logging: replies, invalid replies, result."""
    return {
        "game_turns": len(episode.events),
        "game_invalid": episode.invalid_moves,
        "game_result": episode.result,
    }


def batch_means(stats: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean replies per game (``turns``), the share of valid replies (``valid_rate``),
    the shares of games won and lost. No games: an empty dict."""
    if not stats:
        return {}
    turns = sum(s["game_turns"] for s in stats)
    return {
        "turns": turns / len(stats),
        "valid_rate": 1.0 - sum(s["game_invalid"] for s in stats) / max(turns, 1),
        "win_rate": sum(s["game_result"] == "win" for s in stats) / len(stats),
        "loss_rate": sum(s["game_result"] == "loss" for s in stats) / len(stats),
    }


__all__ = ["STAT_KEYS", "batch_means", "episode_stats"]
