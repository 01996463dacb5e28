"""Per-game figures and their batch means, for a trainer's per-batch log (TRL logs
them as ``game/turns``, ``game/valid_rate``, ``game/win_rate``, ``game/loss_rate``).

``episode_stats`` reads a finished (or settled) episode; ``batch_means`` averages
such rows (a rollout function may carry them as columns, one key each:
``STAT_KEYS``: ``stat_columns`` and back, ``stats_from_columns``). ``training_decisions`` picks which of a game's decisions a trainer
that trains on single decisions takes from it (seeded by the task).

>>> from core import Episode, Task
>>> ep = Episode(Task(game="tictactoe", seed=1, max_turns=1))
>>> _ = ep.reset(); _ = ep.step("4")
>>> batch_means([episode_stats(ep)])["valid_rate"]
0.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from core.rng import derive_rng
from core.stats import share

if TYPE_CHECKING:
    from core.episode import Episode

T = TypeVar("T")

STAT_KEYS = ("game_turns", "game_invalid", "game_result")
"""The per-game figures: replies, invalid replies, result."""


def episode_stats(episode: Episode) -> dict[str, Any]:
    """Per-episode figures for logging: replies, invalid replies, result."""
    return {
        "game_turns": len(episode.events),
        "game_invalid": episode.invalid_moves,
        "game_result": episode.result,
    }


def stat_columns(episodes: Sequence[Episode]) -> dict[str, list[Any]]:
    """The episodes' figures as columns, one per ``STAT_KEYS`` key (what a rollout
    function returns beside its samples)."""
    stats = [episode_stats(ep) for ep in episodes]
    return {key: [s[key] for s in stats] for key in STAT_KEYS}


def stats_from_columns(columns: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]] | None:
    """The per-game rows back from such columns (``None`` when a key is missing)."""
    if not all(key in columns for key in STAT_KEYS):
        return None
    rows = zip(*(columns[key] for key in STAT_KEYS), strict=True)
    return [dict(zip(STAT_KEYS, values, strict=True)) for values in rows]


def batch_means(stats: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean replies per game (``turns``), the share of valid replies (``valid_rate``),
    the shares of games won and lost. No games: an empty dict."""
    if not stats:
        return {}
    turns = sum(s["game_turns"] for s in stats)
    return {
        "turns": share(turns, len(stats)),
        "valid_rate": 1.0 - share(sum(s["game_invalid"] for s in stats), turns),
        "win_rate": share(sum(s["game_result"] == "win" for s in stats), len(stats)),
        "loss_rate": share(sum(s["game_result"] == "loss" for s in stats), len(stats)),
    }


def training_decisions(seed: int, index: int, decisions: Sequence[T], k: int = 1) -> list[T]:
    """The ``k`` decisions of one game a trainer takes as its samples (the game's
    reward scores each): ``k == 1``: one, uniformly drawn; more: all of them when the
    game has exactly ``k``, ``k`` drawn without repeats when it has more, every one
    and then repeats drawn when fewer. Seeded by the task seed and the game's place
    in the batch (``index``), so a batch draws the same samples every time.

    >>> training_decisions(1, 0, ["a", "b"], k=3)[:2]
    ['a', 'b']
    """
    rng = derive_rng(seed, "decision", index)
    if k == 1:
        return [rng.choice(decisions)]
    if len(decisions) >= k:
        return rng.sample(list(decisions), k)
    return list(decisions) + [rng.choice(decisions) for _ in range(k - len(decisions))]


def exploration_move(
    seed: int, index: int, turn: int, legal: Sequence[str], epsilon: float
) -> str | None:
    """Epsilon-greedy exploration's draw for one decision of a trainer's game: with
    chance ``epsilon`` one of the ``legal`` moves, uniformly drawn, which the trainer
    plays in place of the model's sampled reply; else None (the model's reply stands).
    Seeded by the task seed, the game's place in the batch (``index``) and the ``turn``,
    so a batch explores the same way every time.

    >>> exploration_move(1, 0, 0, ["a", "b"], 0.0) is None
    True
    >>> exploration_move(1, 0, 0, ["a", "b"], 1.0) in ("a", "b")
    True
    """
    if epsilon <= 0 or not legal:
        return None
    rng = derive_rng(seed, "explore", index, turn)
    if rng.random() >= epsilon:
        return None
    return rng.choice(list(legal))


__all__ = [
    "STAT_KEYS",
    "batch_means",
    "episode_stats",
    "exploration_move",
    "stat_columns",
    "stats_from_columns",
    "training_decisions",
]
