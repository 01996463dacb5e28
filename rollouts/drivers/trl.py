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

from core.prompts import TOOL_NAME
from rollouts.drivers.base import (
    TOOLS,
    ClientSession,
    Driver,
    DriverError,
    Message,
    RolloutRecord,
    RunContext,
    StepClock,
    Turn,
    make_record,
)
from rollouts.drivers.seats import ONE_CHAT

if TYPE_CHECKING:
    from core.tasks import Task


class TRLSession(ClientSession):
    """TRL's ``environment_factory`` environment (``adapters.trl``), as ``GRPOTrainer``
    uses it: no-argument construction, ``reset(**row)``, each tool call a method call
    (an exception is the tool's reply), ``get_reward()`` (which settles the game)."""

    mode = TOOLS
    supports_seats = True  # TRL's one conversation: the model plays every outside seat in it

    def open(self, task: Task) -> list[Message]:
        from adapters.trl import environment_class
        from core.prompts import tool_schema

        self.env = environment_class(task.game)()
        observation = self.env.reset(**task.to_dict())
        self.tools = [tool_schema(self.env.episode.game)]
        self._methods = {TOOL_NAME: self.env.make_move}
        return [
            {"role": "system", "content": self.env.episode.shared_system_prompt(tools=True)},
            {"role": "user", "content": observation},
        ]

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        # As TRL: a missing `arguments` is {} (trl's _validate_tool_calls), then
        # `tool(**arguments)`: a non-object fails there, before the environment.
        arguments = {} if arguments is None else arguments
        try:
            result: Any = self._methods[name](**arguments)
        except Exception as e:  # TRL: a failing tool's reply is {"error": str(e)}
            result = {"error": str(e) if name in self._methods else f"Tool {name} not found."}
        return Turn(str(result), self.env.episode.done)

    def move(self, move: str) -> Any:
        """``make_move(move=...)`` itself (the benchmarks time the bare call)."""
        return self.env.make_move(move=move)

    def stop(self, text: str | None = None) -> Turn:
        return Turn("", True)  # TRL ends the rollout; get_reward() settles the game

    def result(self) -> tuple[dict[str, Any], Any]:
        reward = self.env.get_reward()  # settles an unfinished game through core
        trajectory = self.env.episode.to_dict()
        json.dumps(trajectory)  # must be JSON
        breakdown = self.env.episode.reward()
        if breakdown.total != reward:
            raise DriverError("get_reward() disagrees with the episode's breakdown")
        return trajectory, breakdown

    @property
    def done(self) -> bool:
        return bool(self.env.episode.done)


class TRLDriver(Driver):
    """Drives the TRL adapter's environment (:class:`TRLSession`)
    with a chat client, in TRL's own loop."""

    name = "trl"
    seats = ONE_CHAT  # TRL's tool loop keeps one conversation per rollout
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
