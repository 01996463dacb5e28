"""Several outside seats (``Task.seats``) through a driver: how a driver plays them
(:data:`CHAT_PER_SEAT`, :data:`ONE_CHAT`: ``Driver.seats``) and the client side of one
environment that plays every seat (:class:`SeatsOverOneEnv`). docs/two-seats.md."""

from __future__ import annotations

from typing import Any, ClassVar

from rollouts.drivers.base import DriverError

CHAT_PER_SEAT = "a conversation per seat"
"""Several outside seats, each with its own conversation (its own view only)."""
ONE_CHAT = "one conversation"
"""Several outside seats in the one conversation the framework keeps per rollout (its
observations say whose turn it is; core refuses it where the game hides information)."""


class SeatsOverOneEnv:
    """A session over one environment that plays every outside seat and names the seat
    to move (``to_move`` in each step's info, as core's ``StepResult.info`` has it):
    one conversation per seat, opened with that seat's system prompt (from
    ``Episode.seat_prompts``, handed over with the reset) and the observation the
    environment gave last (the seat to move's own view). A session mixes this in
    and calls :meth:`_seen` with each reset's or step's info and observation."""

    supports_seats: ClassVar[bool] = True
    _to_move: int | None = None
    _prompts: dict[str, str] | None = None
    _seat_view = ""

    def _seen(self, info: dict[str, Any] | None, observation: str) -> None:
        info = info or {}
        if "system_prompts" in info:
            self._prompts = dict(info["system_prompts"])
        self._to_move = info.get("to_move") if self._prompts else None
        self._seat_view = observation

    def seat(self) -> int | None:
        return self._to_move

    def opening(self, seat: int) -> list[dict[str, Any]]:
        if not self._prompts:
            raise DriverError(f"{type(self).__name__}: the reset named no seats")
        return [
            {"role": "system", "content": self._prompts[str(seat)]},
            {"role": "user", "content": self._seat_view},
        ]
