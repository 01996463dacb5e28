"""The OpenEnv driver: tasks played over OpenEnv's own WebSocket client
(``adapters.openenv.GameEnvClient``) against the adapter's server, started as a
subprocess (``python -m adapters.openenv``) for the run and stopped afterwards.

The model is called here (``rollouts.model.client.ChatClient``, the driver base's loop over
:class:`OpenEnvSession`); the system prompt and each observation come
from the server, and the trajectory from the server's ``State``. ``openenv_tools`` offers
the ``make_move`` tool (schema from the server) and sends a tool call's raw arguments as
``GameAction(arguments=...)``.
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
    TEXT,
    TOOLS,
    ClientSession,
    Driver,
    DriverError,
    Message,
    RolloutRecord,
    RunContext,
    Turn,
)
from rollouts.drivers.seats import CHAT_PER_SEAT, SeatsOverOneEnv

if TYPE_CHECKING:
    from core.tasks import Task


class OpenEnvSession(SeatsOverOneEnv, ClientSession):
    """OpenEnv's own client (``adapters.openenv.GameEnvClient``, synchronous), one
    WebSocket per episode. Tool mode sends ``GameAction(arguments=...)``; the end of
    play is ``GameAction(stop=True)``."""

    def __init__(self, url: str, tools: bool = False) -> None:
        self.url = url
        self.mode = TOOLS if tools else TEXT
        self.client: Any = None
        self._last: Any = None

    def open(self, task: Task) -> list[Message]:
        from adapters.openenv import GameEnvClient

        self._task = task
        self.client = GameEnvClient(base_url=self.url).sync()
        self.client.connect()
        self._last = self.client.reset(task=task.to_dict(), tools=self.mode == TOOLS)
        obs = self._last.observation
        self.tools = obs.tools
        self._seen(obs.info, obs.text)  # several outside seats: who is to move, their prompts
        return [
            {"role": "system", "content": obs.system_prompt},
            {"role": "user", "content": obs.text},
        ]

    def _step(self, **action: Any) -> Turn:
        from adapters.openenv import GameAction

        self._last = self.client.step(GameAction(**action))
        obs = self._last.observation
        self._seen(obs.info, obs.text)
        return Turn(obs.text, bool(self._last.done))

    def send(self, reply: str) -> Turn:
        return self._step(reply=reply)

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        return self._step(arguments=arguments)

    def stop(self, text: str | None = None) -> Turn:
        return self._step(stop=True)

    def result(self) -> tuple[dict[str, Any], Any]:
        state = self.client.state()
        breakdown = self._last.observation.reward_breakdown
        if state.trajectory is None or breakdown is None:
            raise DriverError(
                f"{self._task.task_id}: the OpenEnv session ended without a trajectory"
            )
        return state.trajectory, breakdown

    def close(self) -> None:
        if self.client is not None:
            client, self.client = self.client, None
            client.close()


class OpenEnvDriver(Driver):
    """One server per run (``max_concurrent_envs`` = the run's concurrency), one
    WebSocket session per task."""

    name = "openenv"
    seats = CHAT_PER_SEAT

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        from adapters._reclaim import SERVER_ENV
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
            SupervisedServer("OpenEnv", argv, "/health", env=SERVER_ENV) as server,
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
            return super().run_task(task, ctx)
        except Exception as e:
            if getattr(e, "source", None) is None and server.died_since(generation, wait=1.0):
                raise server.error(f" during {task.task_id}") from e
            raise

    def open_session(self, task: Task, ctx: RunContext) -> OpenEnvSession:
        return OpenEnvSession(ctx.extra["env_url"], tools=self.mode == TOOLS)

    def available(self) -> tuple[bool, str]:
        import importlib.util

        if importlib.util.find_spec("openenv") is None:
            return False, "OpenEnv is not installed: pip install -e '.[openenv]' (openenv 0.10)"
        return True, ""


class OpenEnvToolsDriver(OpenEnvDriver):
    """The OpenEnv driver in tool mode: the model moves by ``make_move`` tool call."""

    name = "openenv_tools"
    mode = TOOLS
