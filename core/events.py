"""The episode's vocabulary: what a turn records and how a game ends.

Small frozen values, shared by the turn loop (``core.episode``), the rubric
(``core.rewards``) and the conversation (``core.conversation``), so none of
them needs the others' internals:

* :class:`Result` and :class:`EpisodeTermination`: string-valued enums, so a
  trajectory's JSON holds the same text as before (``"win"``, ``"turn_cap"``)
  and a member equals its text (``Result.WIN == "win"``).
* :class:`Event`: one model reply as the trajectory records it, with the
  observation the model read before it. A read-only mapping too
  (``event["move"]``, ``dict(event)``), the form trajectories carry it in.
* :class:`Ending`: what the rubric needs from a finished episode, and no more.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any


class Result(enum.StrEnum):
    """A finished game from the model's side."""

    WIN = "win"
    DRAW = "draw"
    LOSS = "loss"


class EpisodeTermination(enum.StrEnum):
    """Why an episode ended (``Episode.termination``; the game's own reason is
    ``core.games.Termination``)."""

    GAME_OVER = "game_over"
    """The rules ended the game."""
    FORFEIT = "forfeit"
    """One invalid reply more than ``max_invalid_moves``: a loss."""
    TURN_CAP = "turn_cap"
    """``max_turns`` replies; settled as ``turn_cap_result``."""
    STOPPED = "stopped"
    """The framework or the model stopped (``Episode.settle``); settled like a turn cap."""


SETTLED = frozenset({EpisodeTermination.TURN_CAP, EpisodeTermination.STOPPED})
"""Terminations that end a game before the rules do; the result is the task's
``turn_cap_result``."""

TEXT = "text"
TOOL = "tool"
KINDS = (TEXT, TOOL)
"""An event's ``kind``: a text reply (``<move>`` tags) or a ``make_move`` tool call."""


@dataclass(frozen=True, eq=False)
class Event(Mapping[str, Any]):
    """One model reply, as recorded. Read it by attribute or by key; ``to_dict()``
    (or ``dict(event)``) is its JSON form, keys in this order."""

    turn: int
    """1 for the first reply."""
    kind: str
    """``"text"`` or ``"tool"``."""
    reply: Any
    """The text reply; for a tool call the move text, or (a format failure) the
    call's raw arguments as they came, JSON-safe."""
    format_ok: bool
    move: str | None
    """The move played, in the game's notation; ``None`` when rejected."""
    error: str | None
    """``None``, ``"format"``, ``"invalid_move"`` or ``"illegal_move"``."""
    message: str | None
    opponent_moves: tuple[str, ...]
    """The opponent's replies after this move (a list in the JSON form)."""
    board: str
    """The board after this reply (and the opponent's)."""
    invalid_moves: int
    """Invalid replies so far, this one included."""
    observation: str
    """What the model read before this reply (a text reply answers it as a user
    message, a tool call as a tool result)."""
    seat: int | None = None
    """The seat that replied, in an episode with several outside seats
    (``Task.seats``); ``None`` otherwise, and then left out of the JSON form."""

    def _keys(self) -> tuple[str, ...]:
        return _EVENT_KEYS if self.seat is None else _SEAT_EVENT_KEYS

    def to_dict(self) -> dict[str, Any]:
        return {name: self[name] for name in self._keys()}

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        value = getattr(self, key)
        return list(value) if key == "opponent_moves" else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __repr__(self) -> str:
        return f"Event({self.to_dict()!r})"


_SEAT_EVENT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Event))
_EVENT_KEYS: tuple[str, ...] = tuple(k for k in _SEAT_EVENT_KEYS if k != "seat")


@dataclass(frozen=True)
class Ending:
    """A finished episode as the rubric sees it: how it ended and the counts the
    reward components read (never the model's words)."""

    termination: EpisodeTermination
    result: Result
    margin: float | None
    """The game's own margin for the model (``Game.margin``) when the rules
    ended the game; ``None`` for a forfeit, a turn cap or a stop."""
    replies: int
    well_formed: int
    """Replies that were well formed (``format_ok``)."""
    invalid_moves: int
    invalid_penalty: float
    invalid_penalty_cap: float


__all__ = [
    "KINDS",
    "SETTLED",
    "TEXT",
    "TOOL",
    "Ending",
    "EpisodeTermination",
    "Event",
    "Result",
]
