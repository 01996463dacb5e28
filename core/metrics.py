"""Rates over many finished games, for a framework's metrics hook.

``outcome_rates`` reads trajectories (``Episode.to_dict()``), never the model's
words: the result each game was settled with and each reply's judgement.

* ``win_rate``, ``draw_rate``, ``loss_rate``: shares of the games (a forfeit or a
  turn cap counts as the result the game was settled with);
* ``invalid_move_rate``: the share of replies rejected for any reason
  (badly formatted, not a move, illegal);
* ``format_error_rate``: the share of replies that were badly formatted;
* ``forfeit_rate``: the share of games lost by too many invalid replies;
* ``games``, ``replies``: the counts the rates are over.

>>> from core import Episode, Task
>>> ep = Episode(Task(game="tictactoe", seed=1, max_turns=1))
>>> _ = ep.reset(); _ = ep.step("4")
>>> outcome_rates([ep.to_dict()])["format_error_rate"]
1.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.stats import ReplyCounts, ResultCounts, share

RATE_KEYS = (
    "win_rate",
    "draw_rate",
    "loss_rate",
    "invalid_move_rate",
    "format_error_rate",
    "forfeit_rate",
)


def outcome_rates(trajectories: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The rates above over finished trajectories (unfinished ones are counted
    in nothing but their replies). No games: every rate is 0.0. The counting is
    :mod:`core.stats`'s."""
    rows = list(trajectories)
    replies = ReplyCounts.of(e for t in rows for e in t.get("events") or [])
    games = ResultCounts.of(rows)
    return {
        "win_rate": share(games.wins, games.games),
        "draw_rate": share(games.draws, games.games),
        "loss_rate": share(games.losses, games.games),
        "invalid_move_rate": replies.invalid_rate,
        "format_error_rate": replies.format_error_rate,
        "forfeit_rate": share(games.forfeits, games.games),
        "games": float(games.games),
        "replies": float(replies.replies),
    }


__all__ = ["RATE_KEYS", "outcome_rates"]
