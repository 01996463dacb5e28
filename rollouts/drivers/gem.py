"""GEM driver: ``gem.make("gamebridge/<game>", task=...)``, reset, then the model's
replies through ``env.step`` until ``terminated or truncated``.

GEM hands the model a string observation (the reset one holds the rules, as
GEM's own games do); the chat here is core's (``info["system_prompt"]`` as the
system message, ``info["observation"]``, the board alone, as the first user
message, then one user message per observation), so the scripted model reads
what it reads in every framework. The trajectory comes back in the final
``info``. A framework cap is the env's ``max_episode_steps``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollouts.drivers.base import Driver, RunContext
from rollouts.drivers.sessions import GemSession

if TYPE_CHECKING:
    from core.tasks import Task


class GemDriver(Driver):
    """Plays each task in a fresh GEM env (``rollouts.drivers.sessions.GemSession``)."""

    name = "gem"
    registers = "adapters.gem"

    def open_session(self, task: Task, ctx: RunContext) -> GemSession:
        return GemSession(cap=self.framework_cap)
