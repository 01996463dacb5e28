"""The ORS driver: tasks played through openreward's own client (``EnvironmentsAPI``)
against the adapter's server (``python -m adapters.ors``), started as a subprocess
for the run and stopped afterwards.

The loop (the driver base's, over ``rollouts.drivers.sessions.ORSSession``) is
RL_Envs_101's ORS rollout with the OpenAI tool-calling client: open a session per task (its row as the ``task_spec``), read the prompt
(``get_messages``: core's tool-mode system prompt and the first observation) and
the tools (``list_tools()``, as Chat Completions tools: core's ``make_move`` schema), then call
the model and hand each ``make_move`` call's arguments, as decoded, to
``call_tool`` until a ``ToolOutput`` says ``finished``. A reply without a tool call
goes to the environment's ``@terminal`` tool (``call_terminal_tool``), which ends
an ORS rollout (core settles the game), and so does the driver's ``framework_cap``.
Reward and trajectory come from the final ``ToolOutput``
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rollouts.drivers.base import Driver, DriverError, RolloutRecord, RunContext, RunRequest
from rollouts.drivers.sessions import (
    ORS_ENV_NAME,
    TOOLS,
    ORSSession,
    ors_chat_tool,
    ors_text,
)

if TYPE_CHECKING:
    from core.tasks import Task

ROOT = Path(__file__).resolve().parents[2]
RECORD_PREFIX = "gamebridge-record: "
"""Marks the record lines on the subprocess's stdout (openreward logs there too)."""
ENV_NAME = ORS_ENV_NAME


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


chat_tool = ors_chat_tool
text_of = ors_text


class ORSDriver(Driver):
    """One server per run (``--max-sessions`` = room for the run), one ORS session per task."""

    name = "ors"
    mode = TOOLS

    def available(self) -> tuple[bool, str]:
        if not openreward_here() and not ors_python().exists():
            return False, (
                f"openreward is not installed here and {ors_python()} is missing: "
                "run `make setup-ors` (or pip install -e '.[ors]')"
            )
        return True, ""

    def run_batch(self, tasks: list[Task], request: RunRequest) -> list[RolloutRecord]:
        if openreward_here():
            return super().run_batch(tasks, request)
        r = request
        job = {
            "tasks": [t.to_dict() for t in tasks],
            "base_url": r.base_url,
            "model": r.model,
            "concurrency": r.concurrency,
            "framework_cap": self.framework_cap,
        }
        env = {**os.environ, "GAMEBRIDGE_ORS_API_KEY": r.api_key or ""}
        done = subprocess.run(
            [str(ors_python()), "-m", "rollouts.drivers.ors"],
            input=json.dumps(job),
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
            if r.on_record is not None:
                r.on_record(record.index if record.index is not None else i, record)
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

    def open_session(self, task: Task, ctx: RunContext) -> ORSSession:
        return ORSSession(ctx.extra["env"])


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
