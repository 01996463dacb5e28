"""The reference driver: ``core.Episode`` driven directly through ``ChatClient``.

No framework at all: reset, ask the model, step, until done. Every other
driver's trajectory must equal this one's for the same task and model
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

from rollouts.drivers.base import Driver, RolloutRecord, RunContext, StepClock, make_record

if TYPE_CHECKING:
    from core.tasks import Task

MAKE_MOVE = "make_move"


class CoreDriver(Driver):
    """Drives ``core.Episode`` with no framework in between."""

    name = "core"

    def __init__(self, use_tools: bool = False) -> None:
        self.use_tools = use_tools

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from core.episode import Episode

        clock = StepClock()
        episode = Episode(task)
        clock.partial = episode.to_dict  # a failure record keeps the trajectory so far
        system = episode.tool_system_prompt if self.use_tools else episode.system_prompt
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": episode.reset()},
        ]
        tools = [episode.tool_schema] if self.use_tools else None
        while not episode.done:
            if ctx.framework_cap is not None and clock.steps >= ctx.framework_cap:
                episode.settle()
                break
            completion = clock.ask(ctx.client, messages, tools=tools)
            call = next((c for c in completion.tool_calls if c.name == MAKE_MOVE), None)
            if call is not None:
                result = episode.step_tool(call.arguments)
                if not result.done:
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": result.observation}
                    )
            elif self.use_tools:
                episode.settle()  # no tool call: the model stopped playing
            else:
                result = episode.step(completion.text)
                if not result.done:
                    messages.append({"role": "user", "content": result.observation})
        trajectory = episode.to_dict()
        # The trajectory must be JSON: fail here, not later in a JSONL writer.
        json.dumps(trajectory)
        return make_record(
            self.name,
            task,
            trajectory,
            episode.reward(),
            clock,
            clock.steps,
            clock.completion_tokens,
        )
