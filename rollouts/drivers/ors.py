"""The ORS driver: tasks played through openreward's own client (``EnvironmentsAPI``)
against the adapter's server (``python -m adapters.ors``), started as a subprocess
for the run and stopped afterwards.

The loop is RL_Envs_101's ORS rollout with the OpenAI tool-calling client: open a
session per task (its row as the ``task_spec``), read the prompt
(``get_messages``: core's tool-mode system prompt and the first observation) and
the tools (``list_tools()``, as Chat Completions tools: core's ``make_move`` schema), then call
the model and hand each ``make_move`` call's arguments, as decoded, to
``call_tool`` until a ``ToolOutput`` says ``finished``. A reply without a tool call
goes to the environment's ``@terminal`` tool (``call_terminal_tool``), which ends
an ORS rollout (core settles the game), and so does the driver's ``framework_cap``. Reward and trajectory come from the final ``ToolOutput``
(``reward``, ``metadata``): the episode that ran in the server.

The model moves by tool call, so the conformance reference is core's tool mode.

openreward cannot share ``.venv`` with Verifiers (it pins sse-starlette 2.3.6,
Verifiers' mcp 2.0 needs 3.x), so where openreward is not importable the driver
runs itself in ``.venv-ors`` (``make setup-ors``): ``python -m rollouts.drivers.ors``
reads the run's tasks as JSON on stdin and prints one record per line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.prompts import TOOL_NAME
from rollouts.drivers.base import (
    Driver,
    DriverError,
    RolloutRecord,
    RunContext,
    StepClock,
    as_tasks,
    make_record,
)

if TYPE_CHECKING:
    from core.tasks import Task

ROOT = Path(__file__).resolve().parents[2]
RECORD_PREFIX = "gamebridge-record: "
"""Marks the record lines on the subprocess's stdout (openreward logs there too)."""
ENV_NAME = "gamebridge"
"""The environment's name on the server (``adapters.ors.ENV_NAME``; not imported
here, so that listing the drivers does not import openreward)."""


def ors_python() -> Path:
    """The ``.venv-ors`` interpreter (``GAMEBRIDGE_ORS_PYTHON`` overrides it)."""
    return Path(os.environ.get("GAMEBRIDGE_ORS_PYTHON", ROOT / ".venv-ors" / "bin" / "python"))


def openreward_here() -> bool:
    """Whether this interpreter can import openreward."""
    return importlib.util.find_spec("openreward") is not None


def server_python() -> str:
    """The interpreter that serves ``python -m adapters.ors``: this one if it has
    openreward, else ``.venv-ors``'s."""
    return sys.executable if openreward_here() else str(ors_python())


def chat_tool(spec: Any) -> dict[str, Any]:
    """An ORS ``ToolSpec`` as a Chat Completions tool (``list_tools(format="openai")``
    gives the Responses API's flat shape, which ``/chat/completions`` servers refuse)."""
    function = {"name": spec.name, "description": spec.description}
    return {"type": "function", "function": {**function, "parameters": spec.input_schema}}


def text_of(blocks: Any) -> str:
    """The text of ORS content blocks, joined (images have none here)."""
    return "\n".join(b.text for b in blocks if getattr(b, "type", "text") == "text")


class ORSDriver(Driver):
    """One server per run (``--max-sessions`` = room for the run), one ORS session per task."""

    name = "ors"

    def available(self) -> tuple[bool, str]:
        if not openreward_here() and not ors_python().exists():
            return False, (
                f"openreward is not installed here and {ors_python()} is missing: "
                "run `make setup-ors` (or pip install -e '.[ors]')"
            )
        return True, ""

    def run(
        self,
        tasks: Iterable[Task | dict[str, Any]],
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        concurrency: int = 1,
        progress: bool = False,
        on_record: Callable[[int, RolloutRecord], None] | None = None,
        stop: threading.Event | None = None,
    ) -> list[RolloutRecord]:
        if openreward_here():
            return super().run(
                tasks,
                base_url=base_url,
                model=model,
                api_key=api_key,
                concurrency=concurrency,
                progress=progress,
                on_record=on_record,
                stop=stop,
            )
        request = {
            "tasks": [t.to_dict() for t in as_tasks(tasks)],
            "base_url": base_url,
            "model": model,
            "concurrency": concurrency,
            "framework_cap": self.framework_cap,
        }
        env = {**os.environ, "GAMEBRIDGE_ORS_API_KEY": api_key or ""}
        done = subprocess.run(
            [str(ors_python()), "-m", "rollouts.drivers.ors"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
        if done.returncode != 0:
            raise DriverError(
                f"the ORS driver in {ors_python()} failed ({done.returncode}):\n"
                f"{done.stderr[-3000:]}"
            )
        rows = [
            json.loads(line.removeprefix(RECORD_PREFIX))
            for line in done.stdout.splitlines()
            if line.startswith(RECORD_PREFIX)
        ]
        records = [RolloutRecord.from_dict(row) for row in rows]
        for i, record in enumerate(records):
            if on_record is not None:
                on_record(record.index if record.index is not None else i, record)
        return records

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        from openreward import EnvironmentsAPI

        from rollouts.model.servers import start_server

        argv = [
            server_python(), "-m", "adapters.ors", "--host", "127.0.0.1", "--port", "{port}",
            "--max-sessions", str(max(8, 2 * concurrency)),
        ]  # fmt: skip
        env = {"OPENREWARD_DISABLE_UPDATE_CHECK": "1"}
        with (
            start_server(argv, "/health", env) as server,
            super().session(
                base_url=base_url, model=model, api_key=api_key, concurrency=concurrency
            ) as ctx,
        ):
            api = EnvironmentsAPI(base_url=server.base_url, api_key="")
            try:
                ctx.extra["env"] = api.get(ENV_NAME)
                yield ctx
            finally:
                api.close()

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from openreward.api.environments.client import Task as ORSTask

        clock = StepClock()
        env = ctx.extra["env"]
        spec = ORSTask(
            server_name=ENV_NAME,
            environment_name=ENV_NAME,
            task_spec=task.to_dict(),
            namespace=None,
        )
        with env.session(task=spec) as session:
            messages: list[dict[str, Any]] = [
                {"role": m.role, "content": text_of(m.blocks)} for m in session.get_messages()
            ]
            tools = [chat_tool(spec) for spec in session.list_tools()]
            out = None
            while out is None or not out.finished:
                if clock.steps > task.turn_limit():
                    raise DriverError(f"{task.task_id}: the ORS session never finished")
                if ctx.framework_cap is not None and clock.steps >= ctx.framework_cap:
                    out = session.call_terminal_tool()  # the driver's cap ends the rollout
                    continue
                completion = clock.ask(ctx.client, messages, tools=tools)
                call = next((c for c in completion.tool_calls if c.name == TOOL_NAME), None)
                if call is None:  # a plain reply ends an ORS rollout: the @terminal tool
                    out = session.call_terminal_tool(completion.text)
                    continue
                # No arguments at all (null) is {} to ORS, as to core and OpenAI clients;
                # every JSON object goes as it came (ORS carries objects only).
                arguments = {} if call.arguments is None else call.arguments
                out = session.call_tool(TOOL_NAME, arguments)
                if not out.finished:
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": text_of(out.blocks)}
                    )
        metadata = out.metadata or {}
        trajectory, reward = metadata.get("trajectory"), metadata.get("reward")
        if trajectory is None or reward is None or out.reward != reward["total"]:
            raise DriverError(f"{task.task_id}: the final ToolOutput lacks the game's result")
        return make_record(
            self.name, task, trajectory, reward, clock, clock.steps, clock.completion_tokens
        )


def main() -> int:
    """``python -m rollouts.drivers.ors`` (in ``.venv-ors``): run the JSON request on
    stdin (``tasks``, ``base_url``, ``model``, ``concurrency``), one record per line."""
    request = json.load(sys.stdin)
    driver = ORSDriver()
    driver.framework_cap = request.get("framework_cap")
    records = driver.run(
        request["tasks"],
        base_url=request["base_url"],
        model=request["model"],
        api_key=os.environ.get("GAMEBRIDGE_ORS_API_KEY") or None,
        concurrency=int(request.get("concurrency", 1)),
    )
    for record in records:
        print(RECORD_PREFIX + json.dumps(record.to_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
