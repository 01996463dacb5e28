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

from typing import TYPE_CHECKING, Any

from rollouts.drivers.base import (
    ClientSession,
    Driver,
    DriverError,
    Message,
    RunContext,
    Turn,
)

if TYPE_CHECKING:
    from core.tasks import Task


class GemSession(ClientSession):
    """``gem.make("gamebridge/<game>", task=...)``: reset, then ``step(text)``.

    The chat is core's: ``info["system_prompt"]``, then ``info["observation"]`` (the
    board alone) and one user message per observation."""

    own_cap = True

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self._info: dict[str, Any] = {}

    def open(self, task: Task) -> list[Message]:
        import gem

        from adapters.gem import ID_PREFIX, register

        register((task.game,))  # an openspiel: game has no id until asked for
        self._task = task
        self.env = gem.make(ID_PREFIX + task.game, task=task.to_dict(), max_episode_steps=self.cap)
        _, info = self.env.reset()
        return [
            {"role": "system", "content": info["system_prompt"]},
            {"role": "user", "content": info["observation"]},
        ]

    def send(self, reply: str) -> Turn:
        observation, _, terminated, truncated, self._info = self.env.step(reply)
        return Turn(observation, bool(terminated or truncated))

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._info.get("trajectory")
        if trajectory is None:
            raise DriverError(f"gem: the final info of {self._task.task_id} has no trajectory")
        return trajectory, trajectory["reward"]


class GemDriver(Driver):
    """Plays each task in a fresh GEM env (:class:`GemSession`)."""

    name = "gem"
    registers = "adapters.gem"

    def open_session(self, task: Task, ctx: RunContext) -> GemSession:
        return GemSession(cap=self.framework_cap)
