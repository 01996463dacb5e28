"""The OpenEnv driver: tasks played over OpenEnv's own WebSocket client
(``adapters.openenv.GameEnvClient``) against the adapter's server, started as a
subprocess (``python -m adapters.openenv``) for the run and stopped afterwards.

The model is called here (``rollouts.model.client.ChatClient``); the system prompt and each
observation come from the server, and the trajectory from the server's ``State``.
``openenv_tools`` offers the ``make_move`` tool (schema from the server) and sends a
tool call as a structured ``GameAction(move=...)``.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from core.prompts import TOOL_NAME
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


class OpenEnvDriver(Driver):
    """One server per run (``max_concurrent_envs`` = the run's concurrency), one
    WebSocket session per task."""

    name = "openenv"
    use_tools = False
    """Offer the ``make_move`` tool and send tool calls as ``GameAction(move=...)``."""

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        from rollouts.model.servers import SupervisedServer

        # The client side imports openenv too (5-10 s): overlap it with the server's start.
        loader = threading.Thread(target=importlib.import_module, args=("adapters.openenv.env",))
        loader.start()
        argv = [
            sys.executable,
            "-m",
            "adapters.openenv",
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--max-sessions",
            str(max(1, concurrency)),
        ]
        with (
            SupervisedServer("OpenEnv", argv, "/health") as server,
            super().session(
                base_url=base_url, model=model, api_key=api_key, concurrency=concurrency
            ) as ctx,
        ):
            loader.join()
            ctx.extra["env_url"] = server.base_url
            ctx.extra["server"] = server
            yield ctx

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        server = ctx.extra["server"]
        generation = server.check()
        try:
            return self._play(task, ctx)
        except Exception as e:
            if getattr(e, "source", None) is None and server.died_since(generation, wait=1.0):
                raise server.error(f" during {task.task_id}") from e
            raise

    def _play(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from adapters.openenv import GameAction, GameEnvClient

        clock = StepClock()
        with GameEnvClient(base_url=ctx.extra["env_url"]).sync() as env:
            result = env.reset(task=task.to_dict(), tools=self.use_tools)
            obs = result.observation
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": obs.system_prompt},
                {"role": "user", "content": obs.text},
            ]
            while not result.done:
                if ctx.framework_cap is not None and clock.steps >= ctx.framework_cap:
                    result = env.step(GameAction(stop=True))  # the client's own cap
                    break
                completion = clock.ask(ctx.client, messages, tools=obs.tools)
                call = next((c for c in completion.tool_calls if c.name == TOOL_NAME), None)
                if call is not None:
                    result = env.step(GameAction(arguments=call.arguments))
                    reply = {"role": "tool", "tool_call_id": call.id}
                elif self.use_tools:  # no tool call: the model stopped playing
                    result = env.step(GameAction(stop=True))
                    break
                else:
                    result = env.step(GameAction(reply=completion.text))
                    reply = {"role": "user"}
                if not result.done:
                    messages.append({**reply, "content": result.observation.text})
            state = env.state()
        if state.trajectory is None or result.observation.reward_breakdown is None:
            raise DriverError(f"{task.task_id}: the OpenEnv session ended without a trajectory")
        return make_record(
            self.name,
            task,
            state.trajectory,
            result.observation.reward_breakdown,
            clock,
            clock.steps,
            clock.completion_tokens,
        )

    def available(self) -> tuple[bool, str]:
        import importlib.util

        if importlib.util.find_spec("openenv") is None:
            return False, "openenv-core is not installed: pip install -e '.[openenv]'"
        return True, ""


class OpenEnvToolsDriver(OpenEnvDriver):
    """The OpenEnv driver in tool mode: the model moves by ``make_move`` tool call."""

    name = "openenv_tools"
    use_tools = True
