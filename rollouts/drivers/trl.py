"""The TRL driver: ``adapters.trl.GameEnvironment`` driven as ``GRPOTrainer`` drives it.

TRL's ``environment_factory`` loop, against an OpenAI-compatible endpoint
instead of the trainer's model: build the environment with no arguments,
``reset(**task_row)`` (its text is appended to the user message after the
tool-mode system prompt), offer the ``make_move`` tool, call the environment
method for every tool call (an exception becomes the tool's reply, as in
``GRPOTrainer._tool_call_loop``), and stop when the model answers without a
tool call or the game is over. The reward is ``get_reward()`` (an unfinished
game is settled by core first) and the trajectory is the episode inside the
environment.

The model moves by tool call, so the conformance reference is core's tool mode.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rollouts.drivers.base import Driver, RolloutRecord, RunContext, StepClock, make_record

if TYPE_CHECKING:
    from core.tasks import Task

MAKE_MOVE = "make_move"


class TRLDriver(Driver):
    """Drives the TRL adapter's environment with a chat client."""

    name = "trl"
    uses_tools = True

    def available(self) -> tuple[bool, str]:
        # The environment itself needs only core; the trainer needs TRL.
        try:
            import trl  # noqa: F401
        except ImportError as e:
            return False, f"TRL is not installed ({e}); install with: pip install -e '.[trl]'"
        return True, ""

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from adapters.trl import environment_class
        from core.prompts import tool_schema

        clock = StepClock()
        env = environment_class(task.game)()
        observation = env.reset(**task.to_dict())
        episode = env.episode
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": episode.tool_system_prompt},
            {"role": "user", "content": observation},
        ]
        tools = [tool_schema(episode.game)]
        tool_methods = {MAKE_MOVE: env.make_move}
        # TRL's max_tool_calling_iterations: tool calls of that many completions run.
        iterations = ctx.framework_cap
        while not episode.done:
            if iterations is not None and clock.steps >= iterations:
                break  # TRL's cap: get_reward() settles the game
            completion = clock.ask(ctx.client, messages, tools=tools)
            if not completion.tool_calls:
                break  # TRL ends the rollout here; get_reward() settles the game
            for call in completion.tool_calls:
                # As TRL: a missing `arguments` is {} (trl's _validate_tool_calls), then
                # `tool(**arguments)`: a non-object fails there, before the environment.
                arguments = {} if call.arguments is None else call.arguments
                try:
                    result: Any = tool_methods[call.name](**arguments)
                except Exception as e:  # TRL: a failing tool's reply is {"error": str(e)}
                    result = {
                        "error": str(e)
                        if call.name in tool_methods
                        else f"Tool {call.name} not found."
                    }
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "name": call.name,
                        "content": str(result),
                    }
                )
        reward = env.get_reward()  # settles an unfinished game through core
        trajectory = env.episode.to_dict()
        json.dumps(trajectory)  # must be JSON
        breakdown = env.episode.reward()
        if breakdown.total != reward:
            raise RuntimeError("get_reward() disagrees with the episode's breakdown")
        return make_record(
            self.name, task, trajectory, breakdown, clock, clock.steps, clock.completion_tokens
        )
