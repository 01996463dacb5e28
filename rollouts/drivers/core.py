"""The reference driver: ``core.Episode`` driven directly through ``ChatClient``.

No framework at all (:class:`CoreSession` in the driver
base's loop): reset, ask the model, step, until done. Every other driver's
trajectory must equal this one's for the same task and model
(tests/conformance).

With ``use_tools=True`` the request offers the ``make_move`` tool and a tool
call's raw arguments go to ``Episode.step_tool`` (core judges them); a reply
without a tool call ends the model's turn loop, as in TRL and NeMo Gym's
agents, and core settles the game (``Episode.settle``).

``framework_cap`` (``RunContext``) stands for a framework's own cap on model
turns: after that many replies an unfinished game is settled by core, which is
what every framework's adapter does at its cap (docs/frameworks.md, "Edges").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.prompts import TOOL_NAME
from rollouts.drivers.base import (
    TEXT,
    TOOLS,
    ClientSession,
    Driver,
    Message,
    RunContext,
    Turn,
)
from rollouts.drivers.seats import CHAT_PER_SEAT

if TYPE_CHECKING:
    from core.tasks import Task


class CoreSession(ClientSession):
    """``core.Episode`` with no framework: the reference every driver must equal."""

    def __init__(self, tools: bool = False, one_chat: bool = False) -> None:
        self.mode = TOOLS if tools else TEXT
        self.one_chat = one_chat
        """Several outside seats in one conversation (the reference of a framework that
        keeps one per rollout); else one conversation per seat."""

    def open(self, task: Task) -> list[Message]:
        from core.episode import Episode

        self.episode = episode = Episode(task)
        tools = self.mode == TOOLS
        self.tools = [episode.tool_schema] if tools else None
        system = episode.tool_system_prompt if tools else episode.system_prompt
        if self.one_chat:
            system = episode.shared_system_prompt(tools=tools)
        return [{"role": "system", "content": system}, {"role": "user", "content": episode.reset()}]

    def send(self, reply: str) -> Turn:
        result = self.episode.step(reply)
        return Turn(result.observation, result.done)

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        result = self.episode.step_tool(arguments)
        return Turn(result.observation, result.done)

    def stop(self, text: str | None = None) -> Turn:
        self.episode.settle()
        return Turn("", True)

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self.episode.to_dict()
        json.dumps(trajectory)  # the trajectory must be JSON: fail here, not in a writer
        return trajectory, self.episode.reward()

    def partial(self) -> dict[str, Any] | None:
        return self.episode.to_dict()

    supports_seats = True

    def seat(self) -> int | None:
        return self.episode.to_move if self.episode.several and not self.one_chat else None

    def opening(self, seat: int) -> list[Message]:
        tools = self.mode == TOOLS
        return [
            {"role": "system", "content": self.episode.system_prompt_for(seat, tools=tools)},
            {"role": "user", "content": self.episode.observation_for(seat)},
        ]


class CoreDriver(Driver):
    """Drives ``core.Episode`` with no framework in between."""

    name = "core"
    seats = CHAT_PER_SEAT

    def __init__(self, use_tools: bool = False, one_chat: bool = False) -> None:
        self.use_tools = use_tools
        self.one_chat = one_chat
        self.mode = TOOLS if use_tools else TEXT

    def open_session(self, task: Task, ctx: RunContext) -> CoreSession:
        return CoreSession(tools=self.use_tools, one_chat=self.one_chat)
