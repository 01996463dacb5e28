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
    in nothing but their replies). No games: every rate is 0.0."""
    games = wins = draws = losses = forfeits = 0
    replies = invalid = format_errors = 0
    for trajectory in trajectories:
        events = trajectory.get("events") or []
        replies += len(events)
        invalid += sum(1 for e in events if e.get("error") is not None)
        format_errors += sum(1 for e in events if e.get("error") == "format")
        result = trajectory.get("result")
        if result is None:
            continue
        games += 1
        wins += result == "win"
        draws += result == "draw"
        losses += result == "loss"
        forfeits += trajectory.get("termination") == "forfeit"
    return {
        "win_rate": wins / games if games else 0.0,
        "draw_rate": draws / games if games else 0.0,
        "loss_rate": losses / games if games else 0.0,
        "invalid_move_rate": invalid / replies if replies else 0.0,
        "format_error_rate": format_errors / replies if replies else 0.0,
        "forfeit_rate": forfeits / games if games else 0.0,
        "games": float(games),
        "replies": float(replies),
    }


__all__ = ["RATE_KEYS", "outcome_rates"]
