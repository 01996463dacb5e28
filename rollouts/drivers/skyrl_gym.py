"""SkyRL Gym driver: ``skyrl_gym.make("gamebridge", env_config, extras)``, ``init``,
then the model's replies through ``env.step`` until ``done``: the loop of
SkyRL's ``SkyRLGymGenerator.agent_loop`` (which also puts its ``max_turns`` in
``extras``), with the chat kept as messages instead of token ids.
The trajectory comes back in the final step's ``metadata``.
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


class SkyRLGymDriver(Driver):
    """Plays each task in a fresh SkyRL Gym env."""

    name = "skyrl_gym"
    registers = "adapters.skyrl_gym"

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        import skyrl_gym

        from adapters.skyrl_gym import ENV_ID, make_row

        clock = StepClock()
        row = make_row(task)
        # SkyRL passes every column but the prompt as extras, plus its generator's max_turns.
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        extras["max_turns"] = self.framework_cap or task.turn_limit()
        env = skyrl_gym.make(row["env_class"] or ENV_ID, env_config={}, extras=extras)
        chat, _ = env.init(row["prompt"])
        messages: list[dict[str, Any]] = list(chat)
        done = False
        metadata: dict[str, Any] = {}
        while not done:
            completion = clock.ask(ctx.client, messages)
            out = env.step(completion.text)
            done, metadata = out["done"], out["metadata"]
            messages.extend(out["observations"])
        env.close()
        trajectory = metadata.get("trajectory")
        if trajectory is None:
            raise DriverError(f"skyrl_gym: the final metadata of {task.task_id} has no trajectory")
        return make_record(
            self.name,
            task,
            trajectory,
            trajectory["reward"],
            clock,
            clock.steps,
            clock.completion_tokens,
        )
