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
from rollouts.drivers.seats import CHAT_PER_SEAT

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


class GemSeatsSession(ClientSession):
    """A task with several outside seats in GEM's own multi-agent idiom
    (``adapters.gem.GameMultiAgentEnv``): the active agent (the seat core says is to
    move) answers from its own ``observe(agent)``, one conversation per agent."""

    supports_seats = True

    def open(self, task: Task) -> list[Message]:
        from adapters.gem import GameMultiAgentEnv, agent_name

        self._task, self._name = task, agent_name
        self.env = GameMultiAgentEnv(task)
        _, self._infos = self.env.reset()
        self._info: dict[str, Any] = {}
        return []  # each seat's own chat comes from opening()

    def seat(self) -> int | None:
        active = self.env.agent_selector.get_active_agents()
        return int(active[0].rsplit("_", 1)[1]) if active and self.env.agents else None

    def opening(self, seat: int) -> list[Message]:
        agent = self._name(seat)
        return [
            {"role": "system", "content": self._infos[agent]["system_prompt"]},
            {"role": "user", "content": self.env.observe(agent)},
        ]

    def send(self, reply: str) -> Turn:
        agent = self._name(self.seat())  # type: ignore[arg-type]  # a seat is to move
        _, _, terminations, _, infos = self.env.step({agent: reply})
        self._info = infos[agent]
        done = all(terminations.values())
        nxt = self.seat()
        return Turn("" if done or nxt is None else self.env.observe(self._name(nxt)), done)

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._info.get("trajectory")
        if trajectory is None:
            raise DriverError(f"gem: the final infos of {self._task.task_id} have no trajectory")
        return trajectory, trajectory["reward"]


class GemDriver(Driver):
    """Plays each task in a fresh GEM env (:class:`GemSession`), or GEM's multi-agent
    env for a task with several outside seats (:class:`GemSeatsSession`)."""

    name = "gem"
    seats = CHAT_PER_SEAT  # GEM's multi-agent env
    registers = "adapters.gem"

    def open_session(self, task: Task, ctx: RunContext) -> ClientSession:
        if task.seats is not None:
            return GemSeatsSession()
        return GemSession(cap=self.framework_cap)
