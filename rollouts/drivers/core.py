"""The reference driver: ``core.Episode`` driven directly through ``ChatClient``.

No framework at all (``rollouts.drivers.sessions.CoreSession`` in the driver
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

from typing import TYPE_CHECKING

from rollouts.drivers.base import Driver, RunContext
from rollouts.drivers.sessions import TEXT, TOOLS, CoreSession

if TYPE_CHECKING:
    from core.tasks import Task


class CoreDriver(Driver):
    """Drives ``core.Episode`` with no framework in between."""

    name = "core"

    def __init__(self, use_tools: bool = False) -> None:
        self.use_tools = use_tools
        self.mode = TOOLS if use_tools else TEXT

    def open_session(self, task: Task, ctx: RunContext) -> CoreSession:
        return CoreSession(tools=self.use_tools)
