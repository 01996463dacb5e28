"""SkyRL Gym driver: ``skyrl_gym.make("gamebridge", env_config, extras)``, ``init``,
then the model's replies through ``env.step`` until ``done``: the loop of
SkyRL's ``SkyRLGymGenerator.agent_loop`` (which also puts its ``max_turns`` in
``extras``), with the chat kept as messages instead of token ids.
The trajectory comes back in the final step's ``metadata``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rollouts.drivers.base import Driver, RunContext
from rollouts.drivers.sessions import SkyRLSession

if TYPE_CHECKING:
    from core.tasks import Task


class SkyRLGymDriver(Driver):
    """Plays each task in a fresh SkyRL Gym env (``rollouts.drivers.sessions.SkyRLSession``)."""

    name = "skyrl_gym"
    registers = "adapters.skyrl_gym"

    def open_session(self, task: Task, ctx: RunContext) -> SkyRLSession:
        return SkyRLSession(cap=self.framework_cap)
