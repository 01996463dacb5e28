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

from typing import TYPE_CHECKING, Any

from rollouts.drivers.base import Driver, RolloutRecord, RunContext, StepClock, make_record
from rollouts.drivers.sessions import TOOLS, TRLSession

if TYPE_CHECKING:
    from core.tasks import Task


class TRLDriver(Driver):
    """Drives the TRL adapter's environment (``rollouts.drivers.sessions.TRLSession``)
    with a chat client, in TRL's own loop."""

    name = "trl"
    mode = TOOLS

    def available(self) -> tuple[bool, str]:
        # The environment itself needs only core; the trainer needs TRL.
        try:
            import trl  # noqa: F401
        except ImportError as e:
            return False, f"TRL is not installed ({e}); install with: pip install -e '.[trl]'"
        return True, ""

    def open_session(self, task: Task, ctx: RunContext) -> TRLSession:
        return TRLSession()

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        clock = StepClock()
        with self.open_session(task, ctx) as session:
            messages = session.open(task)
            # TRL's max_tool_calling_iterations: tool calls of that many completions run.
            iterations = ctx.framework_cap
            while not session.done:
                if iterations is not None and clock.steps >= iterations:
                    break  # TRL's cap: get_reward() settles the game
                completion = clock.ask(ctx.client, messages, tools=session.tools)
                if not completion.tool_calls:
                    break  # TRL ends the rollout here; get_reward() settles the game
                for call in completion.tool_calls:  # every call runs, as in TRL
                    turn = session.call(call.arguments, call.name)
                    message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id}
                    messages.append({**message, "name": call.name, "content": turn.observation})
            trajectory, breakdown = session.result()
        return make_record(
            self.name, task, trajectory, breakdown, clock, clock.steps, clock.completion_tokens
        )
