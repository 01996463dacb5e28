"""The ORS driver: tasks played through openreward's own client (``EnvironmentsAPI``)
against the adapter's server (``python -m adapters.ors``), started as a subprocess
for the run and stopped afterwards.

The loop (the driver base's, over :class:`ORSSession`) is
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
reads the run's tasks and call policy as JSON on stdin and prints each record as its
episode finishes; it lives on this process's lifeline and drains on SIGINT
(``ORSDriver._run_in_ors_venv``), so a killed eval keeps every finished episode and
leaves no process behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.inputs import wrap_arguments
from core.prompts import TOOL_NAME
from core.tasks import OUTSIDE
from rollouts.drivers.base import (
    TOOLS,
    ClientSession,
    Driver,
    DriverError,
    Message,
    RolloutRecord,
    RunContext,
    RunRequest,
    Turn,
)
from rollouts.drivers.http import TIMEOUT, HTTPSession, OnResponse
from rollouts.drivers.seats import CHAT_PER_SEAT, SeatsOverOneEnv

if TYPE_CHECKING:
    from core.tasks import Task

ORS_ENV_NAME = "gamebridge"
"""The environment's name on the ORS server (``adapters.ors.ENV_NAME``; not imported
here, so that listing the drivers does not import openreward)."""


def ors_chat_tool(spec: Any) -> dict[str, Any]:
    """An ORS ``ToolSpec`` as a Chat Completions tool (``list_tools(format="openai")``
    gives the Responses API's flat shape, which ``/chat/completions`` servers refuse)."""
    function = {"name": spec.name, "description": spec.description}
    return {"type": "function", "function": {**function, "parameters": spec.input_schema}}


def ors_text(blocks: Any) -> str:
    """The text of ORS content blocks, joined (images have none here)."""
    return "\n".join(
        (b["text"] if isinstance(b, dict) else b.text)
        for b in blocks
        if (b.get("type", "text") if isinstance(b, dict) else getattr(b, "type", "text")) == "text"
    )


class ORSSession(SeatsOverOneEnv, ClientSession):
    """An ORS session through openreward's client (``env`` is
    ``EnvironmentsAPI(...).get(name)``): the task row as ``task_spec``, the prompt
    from ``get_messages``, ``make_move`` through ``call_tool``, the end of play
    through the ``@terminal`` tool (``call_terminal_tool``)."""

    mode = TOOLS

    def __init__(self, env: Any) -> None:
        self.env = env
        self._manager: Any = None
        self._out: Any = None
        self._calls = 0

    def open(self, task: Task) -> list[Message]:
        from openreward.api.environments.client import Task as ORSTask

        self._task = task
        self._replies = task.turn_limit() * task.seat_roles().count(OUTSIDE)
        spec = ORSTask(
            server_name=ORS_ENV_NAME,
            environment_name=ORS_ENV_NAME,
            task_spec=task.to_dict(),
            namespace=None,
        )
        self._manager = self.env.session(task=spec)
        self.session = self._manager.__enter__()
        self.tools = [ors_chat_tool(s) for s in self.session.list_tools()]
        messages = self.session.get_messages()
        first = messages[-1].blocks[0] if messages and messages[-1].blocks else None
        self._seen(getattr(first, "detail", None), ors_text(messages[-1].blocks))
        return [{"role": m.role, "content": ors_text(m.blocks)} for m in messages]

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        # No arguments at all (null) is {} to ORS, as to core and OpenAI clients; every
        # JSON object goes as it came, anything else wrapped (ORS carries objects only):
        # core judges it in the server (an invalid reply), the task goes on.
        self._out = self.session.call_tool(name, wrap_arguments(arguments))
        self._calls += 1
        if not self._out.finished and self._calls > self._replies:
            raise DriverError(f"{self._task.task_id}: the ORS session never finished")
        text = ors_text(self._out.blocks)
        self._seen((self._out.metadata or {}).get("info"), text)
        return Turn(text, bool(self._out.finished))

    def stop(self, text: str | None = None) -> Turn:
        terminal = self.session.call_terminal_tool
        self._out = terminal() if text is None else terminal(text)
        if not self._out.finished:
            raise DriverError(f"{self._task.task_id}: the ORS @terminal tool did not finish")
        return Turn(ors_text(self._out.blocks), True)

    def result(self) -> tuple[dict[str, Any], Any]:
        metadata = (self._out.metadata if self._out is not None else None) or {}
        trajectory, reward = metadata.get("trajectory"), metadata.get("reward")
        if trajectory is None or reward is None or self._out.reward != reward["total"]:
            raise DriverError(f"{self._task.task_id}: the final ToolOutput lacks the game's result")
        return trajectory, reward

    def close(self) -> None:
        if self._manager is not None:
            manager, self._manager = self._manager, None
            manager.__exit__(None, None, None)


def sse_events(text: str) -> list[tuple[str, str]]:
    """``(event, data)`` pairs of a server-sent-events body (ORS's ``/create_session``
    and ``/{env}/call`` answer with these). As the SSE spec says, one space after the
    colon is dropped, no more: ORS cuts a long result into 4096-character chunks, and a
    chunk may begin or end with a space of the JSON text."""
    events: list[tuple[str, str]] = []
    event, data = "", []
    for line in [*text.splitlines(), ""]:
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif not line and (event or data):
            events.append((event, "\n".join(data)))
            event, data = "", []
    return events


class ORSWireSession(HTTPSession):
    """An ORS session over ORS's HTTP API itself (``/create_session``, ``/create``,
    ``/{env}/messages``, ``/{env}/call`` as server-sent events, ``/delete``): for
    where openreward cannot be imported (``.venv``: it conflicts with Verifiers).
    :meth:`delete` frees the server's session."""

    name = "ors"
    mode = TOOLS

    def __init__(
        self,
        url: str,
        http: Any = None,
        on_response: OnResponse | None = None,
        timeout: float = TIMEOUT,
        env_name: str = ORS_ENV_NAME,
    ) -> None:
        super().__init__(url, http, on_response, timeout)
        self.env_name = env_name
        """The environment's name on the server (another environment: bench's ORS floor)."""

    def open(self, task: Task) -> list[Message]:
        minted = self._post("/create_session")
        if minted.status_code != 200:
            raise DriverError(f"ors /create_session answered {minted.status_code}")
        self.sid = next(data for event, data in sse_events(minted.text) if event == "task_id")
        self._headers = {"X-Session-ID": self.sid}
        create = {"task_spec": task.to_dict(), "env_name": self.env_name}
        self._json("/create", json=create, headers=self._headers)
        response = self.http.get(f"/{self.env_name}/messages", headers=self._headers)
        if self.on_response is not None:
            self.on_response(response, "/messages")
        response.raise_for_status()
        self._out: dict[str, Any] = {}
        return [{"role": m["role"], "content": ors_text(m["blocks"])} for m in response.json()]

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        response = self._post(
            f"/{self.env_name}/call",
            "/call",
            json={"name": name, "input": wrap_arguments(arguments)},
            headers=self._headers,
        )
        events = sse_events(response.text)
        if not events or events[-1][0] != "end":
            raise DriverError(f"/call ended without a result: {response.text[:300]}")
        result = json.loads("".join(data for event, data in events if event in ("chunk", "end")))
        if not result.get("ok"):
            raise DriverError(f"/call {name}: {result.get('reason')}: {result.get('error')}")
        self._out = result["output"]
        return Turn(ors_text(self._out["blocks"]), bool(self._out["finished"]))

    @property
    def output(self) -> dict[str, Any]:
        """The last ``ToolOutput``, as a dict."""
        return self._out

    def result(self) -> tuple[dict[str, Any], Any]:
        metadata = self._out.get("metadata") or {}
        trajectory, reward = metadata.get("trajectory"), metadata.get("reward")
        if trajectory is None or reward is None:
            raise DriverError("the final ToolOutput lacks the game's result")
        return trajectory, reward

    def delete(self) -> None:
        """``/delete``: free the server's session."""
        self._json("/delete", headers=self._headers)


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
    """One server per run (``--max-sessions`` = room for the run; supervised, restarted
    once), one ORS session per task."""

    name = "ors"
    seats = CHAT_PER_SEAT
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
        return self._run_in_ors_venv(tasks, request)

    def _run_in_ors_venv(self, tasks: list[Task], request: RunRequest) -> list[RolloutRecord]:
        """The batch in ``.venv-ors``'s ``python -m rollouts.drivers.ors``, in the crash-safe
        shape of the other drivers: each record handed to ``on_record`` as its episode
        finishes (the child prints it at once), the child on this process's lifeline
        (it stops its process group, and so its ORS server, when this process ends in
        any way, SIGKILL included), ``request.stop`` (the first Ctrl-C) passed on as a
        SIGINT that drains it (no new episode; the running ones finish and are sent),
        and an interrupt here (a second Ctrl-C, SIGTERM) stops it at once."""
        from rollouts.model.servers import LIFELINE_VAR, stop_process

        r = request
        policy = self.call_policy
        job = {
            "tasks": [t.to_dict() for t in tasks],
            "base_url": r.base_url,
            "model": r.model,
            "concurrency": r.concurrency,
            "framework_cap": self.framework_cap,
            "call_policy": None if policy is None else asdict(policy),
        }
        read_end, write_end = os.pipe()  # both non-inheritable; pass_fds hands down read_end
        env = {
            **os.environ,
            "GAMEBRIDGE_ORS_API_KEY": r.api_key or "",
            LIFELINE_VAR: str(read_end),
        }
        log = tempfile.TemporaryFile()  # noqa: SIM115 (closed below, after the child)
        try:
            child = subprocess.Popen(
                [str(ors_python()), "-m", "rollouts.drivers.ors"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=ROOT,
                env=env,
                start_new_session=True,  # a terminal's Ctrl-C reaches it only through us
                pass_fds=(read_end,),
            )
        except OSError as e:
            os.close(write_end)
            log.close()
            raise DriverError(f"cannot start the ORS driver in {ors_python()}: {e}") from e
        finally:
            os.close(read_end)
        records: dict[int, RolloutRecord] = {}

        def read() -> None:
            assert child.stdout is not None
            for raw in child.stdout:
                line = raw.decode("utf-8", "replace")
                if not line.startswith(RECORD_PREFIX):
                    continue  # openreward logs on stdout too
                record = RolloutRecord.from_dict(json.loads(line.removeprefix(RECORD_PREFIX)))
                index = record.index if record.index is not None else len(records)
                records[index] = record
                if r.on_record is not None:
                    r.on_record(index, record)

        reader = threading.Thread(target=read, name="ors-records", daemon=True)
        reader.start()
        try:
            assert child.stdin is not None
            with suppress(BrokenPipeError):
                child.stdin.write(json.dumps(job).encode())
                child.stdin.close()
            drained = False
            while child.poll() is None:
                if r.stop is not None and r.stop.is_set() and not drained:
                    drained = True
                    with suppress(ProcessLookupError):
                        child.send_signal(signal.SIGINT)
                with suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.1)
            reader.join(timeout=30)
            # Drained: whatever it wrote is kept (a Ctrl-C during its start-up, before its
            # handler was in place, ends it with 130: not a failure of the framework).
            if child.returncode != 0 and not drained:
                log.seek(0)
                tail = log.read()[-3000:].decode("utf-8", "replace")
                raise DriverError(
                    f"the ORS driver in {ors_python()} failed ({child.returncode}):\n{tail}"
                )
        except BaseException:
            stop_process(child, grace=3.0)  # its group; its ORS server follows by lifeline
            raise
        finally:
            with suppress(OSError):
                os.close(write_end)
            log.close()
        return [records[i] for i in sorted(records)]

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        from openreward import EnvironmentsAPI

        from rollouts.model.servers import SupervisedServer

        argv = [
            server_python(), "-m", "adapters.ors", "--host", "127.0.0.1", "--port", "{port}",
            "--max-sessions", str(max(8, 2 * concurrency)),
        ]  # fmt: skip
        env = {"OPENREWARD_DISABLE_UPDATE_CHECK": "1"}
        # Supervised as the other servers: a death is noticed at once, the server restarted
        # once on the same port (the client's URL holds), the tasks on it failed naming it.
        with (
            SupervisedServer("ORS", argv, "/health", env=env) as server,
            super().session(
                base_url=base_url, model=model, api_key=api_key, concurrency=concurrency
            ) as ctx,
        ):
            api = EnvironmentsAPI(base_url=server.base_url, api_key="")
            try:
                ctx.extra["env"] = api.get(ENV_NAME)
                ctx.extra["server"] = server
                yield ctx
            finally:
                api.close()

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        server = ctx.extra["server"]
        generation = server.check()
        try:
            return super().run_task(task, ctx)
        except Exception as e:
            if getattr(e, "source", None) is None and server.died_since(generation, wait=1.0):
                raise server.error(f" during {task.task_id}") from e
            raise

    def open_session(self, task: Task, ctx: RunContext) -> ORSSession:
        return ORSSession(ctx.extra["env"])


def main() -> int:
    """``python -m rollouts.drivers.ors`` (in ``.venv-ors``): run the JSON request on
    stdin (``tasks``, ``base_url``, ``model``, ``concurrency``, ``framework_cap``,
    ``call_policy``), printing each record on its own line as its episode finishes.
    SIGINT drains (no new episode; the running ones finish and are printed); the
    parent's lifeline (``GAMEBRIDGE_LIFELINE_FD``) stops it when the parent ends."""
    from adapters._lifeline import watch
    from rollouts.model.client import CallPolicy

    watch(grace=3.0)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    request = json.load(sys.stdin)
    driver = ORSDriver()
    driver.framework_cap = request.get("framework_cap")
    policy = request.get("call_policy")
    lock = threading.Lock()

    def emit(_index: int, record: RolloutRecord) -> None:
        line = RECORD_PREFIX + json.dumps(record.to_dict())
        with lock:
            print(line, flush=True)

    driver.run(
        request["tasks"],
        base_url=request["base_url"],
        model=request["model"],
        api_key=os.environ.get("GAMEBRIDGE_ORS_API_KEY") or None,
        concurrency=int(request.get("concurrency", 1)),
        on_record=emit,
        stop=stop,
        call_policy=None if policy is None else CallPolicy(**policy),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
