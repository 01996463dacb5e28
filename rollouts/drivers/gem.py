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
    Driver,
    DriverError,
    RolloutRecord,
    RunContext,
    StepClock,
    make_record,
)

if TYPE_CHECKING:
    from core.tasks import Task


class GemDriver(Driver):
    """Plays each task in a fresh GEM env."""

    name = "gem"
    registers = "adapters.gem"

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        import gem

        from adapters.gem import ID_PREFIX, register

        register((task.game,))  # an openspiel: game has no id until asked for
        clock = StepClock()
        env = gem.make(
            ID_PREFIX + task.game, task=task.to_dict(), max_episode_steps=self.framework_cap
        )
        observation, info = env.reset()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": info["system_prompt"]},
            {"role": "user", "content": info["observation"]},
        ]
        done = False
        while not done:
            completion = clock.ask(ctx.client, messages)
            observation, _, terminated, truncated, info = env.step(completion.text)
            done = bool(terminated or truncated)
            if not done:
                messages.append({"role": "user", "content": observation})
        trajectory = info.get("trajectory")
        if trajectory is None:
            raise DriverError(f"gem: the final info of {task.task_id} has no trajectory")
        return make_record(
            self.name,
            task,
            trajectory,
            trajectory["reward"],
            clock,
            clock.steps,
            clock.completion_tokens,
        )
