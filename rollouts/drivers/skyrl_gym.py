"""SkyRL Gym driver: ``skyrl_gym.make("gamebridge", env_config, extras)``, ``init``,
then the model's replies through ``env.step`` until ``done``: the loop of
SkyRL's ``SkyRLGymGenerator.agent_loop`` (which also puts its ``max_turns`` in
``extras``), with the chat kept as messages instead of token ids.
The trajectory comes back in the final step's ``metadata``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.tasks import OUTSIDE
from rollouts.drivers.base import (
    ClientSession,
    Driver,
    DriverError,
    Message,
    RunContext,
    Turn,
)
from rollouts.drivers.seats import ONE_CHAT

if TYPE_CHECKING:
    from core.tasks import Task


class SkyRLSession(ClientSession):
    """``skyrl_gym.make("gamebridge", env_config, extras)``, ``init``, ``step(text)``:
    as SkyRL's generator, which puts its ``max_turns`` in ``extras``."""

    own_cap = True
    supports_seats = True  # SkyRL's one conversation: several seats play in it (seat() None)

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self._metadata: dict[str, Any] = {}
        self.env: Any = None

    def open(self, task: Task) -> list[Message]:
        import skyrl_gym

        from adapters.skyrl_gym import ENV_ID, make_row, register

        register()  # a no-op once registered
        self._task = task
        row = make_row(task)
        # SkyRL passes every column but the prompt as extras, plus its generator's max_turns.
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        # Its turns count every seat's replies in the one conversation.
        extras["max_turns"] = self.cap or task.turn_limit() * task.seat_roles().count(OUTSIDE)
        self.env = skyrl_gym.make(row["env_class"] or ENV_ID, env_config={}, extras=extras)
        chat, _ = self.env.init(row["prompt"])
        return list(chat)

    def send(self, reply: str) -> Turn:
        out = self.env.step(reply)
        self._metadata = out["metadata"]
        observations = out["observations"]  # one user message, none at the end
        return Turn(observations[-1]["content"] if observations else "", bool(out["done"]))

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._metadata.get("trajectory")
        if trajectory is None:
            raise DriverError(
                f"skyrl_gym: the final metadata of {self._task.task_id} has no trajectory"
            )
        return trajectory, trajectory["reward"]

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


class SkyRLGymDriver(Driver):
    """Plays each task in a fresh SkyRL Gym env (:class:`SkyRLSession`)."""

    name = "skyrl_gym"
    seats = ONE_CHAT  # SkyRL's generator keeps one conversation per trajectory
    registers = "adapters.skyrl_gym"

    def open_session(self, task: Task, ctx: RunContext) -> SkyRLSession:
        return SkyRLSession(cap=self.framework_cap)
