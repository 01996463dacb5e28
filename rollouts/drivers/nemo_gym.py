"""NeMo Gym drivers: the gamebridge resources server (and NeMo Gym's agent) run
as real processes from ``.venv-nemo`` (Python 3.12), started on free 127.0.0.1
ports for the run and stopped afterwards.

* ``nemo_gym`` — the gymnasium-style server driven by NeMo Gym's own
  ``GymnasiumAgent`` (``adapters.nemo_gym.agent``): one ``POST /run`` per task;
  the agent calls the model through the Responses API (``{base_url}/responses``)
  and ``/reset`` / ``/step`` itself. Model time is inside the agent, so
  ``env_seconds`` equals ``wall_seconds`` here.
* ``nemo_gym_tools`` — the tool-style server, driven the way NeMo Gym's
  ``simple_agent`` does: ``/seed_session``, model calls offering ``make_move``,
  each call posted to ``/make_move``, then ``/verify``. The loop is written
  here (the simple agent asks the model once more after the game ends and
  stops only when it answers in text) and ends when the server says the game
  is over, when the model answers without a tool call, or at the agent's
  ``max_steps`` (``/verify`` then settles the game).

The trajectory and reward come back from the server: the agent's final
``info`` (gymnasium) or the ``/verify`` response (tools).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.prompts import TOOL_NAME
from core.tasks import OUTSIDE
from rollouts.drivers.base import (
    FRAMEWORK,
    MODEL_ENDPOINT,
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
from rollouts.drivers.http import HTTPSession
from rollouts.drivers.seats import ONE_CHAT

if TYPE_CHECKING:
    from core.tasks import Task


def nemo_response(text: str) -> dict[str, Any]:
    """A minimal NeMoGymResponse holding one assistant message (what a scripted
    player, or a text reply, sends to ``/step`` and ``/verify``)."""
    return {
        "id": "resp_gamebridge",
        "created_at": 0.0,
        "model": "scripted",
        "object": "response",
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "id": "msg_gamebridge",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
    }


class NemoGymSession(HTTPSession):
    """NeMo Gym's gymnasium-style server: ``/reset``, then ``/step`` with the reply
    as a NeMoGymResponse (what its ``GymnasiumAgent`` does around each model call)."""

    name = "nemo_gym"

    def open(self, task: Task) -> list[Message]:
        from adapters.nemo_gym.rows import make_row

        self._task = task
        self.row = make_row(task)
        self._out = out = self._json("/reset", json=self.row)
        return [
            {"role": "system", "content": out["info"]["system_prompt"]},
            {"role": "user", "content": out["observation"]},
        ]

    def send(self, reply: str) -> Turn:
        self._out = out = self._json("/step", json={**self.row, "response": nemo_response(reply)})
        return Turn(out["observation"], bool(out["terminated"]))

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._out["info"].get("trajectory")
        if trajectory is None:
            raise DriverError(f"nemo_gym: {self._task.task_id} ended without a trajectory")
        return trajectory, trajectory["reward"]


class NemoGymToolsSession(HTTPSession):
    """NeMo Gym's tool-style server, as its ``simple_agent`` drives it:
    ``/seed_session``, each tool call posted to ``/<name>`` (the answer's text is the
    tool's output; a header says when the game is over), ``/verify`` at the end."""

    name = "nemo_gym"
    mode = TOOLS

    def open(self, task: Task) -> list[Message]:
        from adapters.nemo_gym.rows import make_row

        self.row = make_row(task, "tools")
        self._post("/seed_session", "/seed", json=self.row).raise_for_status()
        params = self.row["responses_create_params"]
        self.tools = params["tools"]
        return [dict(m) for m in params["input"]]

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        from adapters.nemo_gym.rows import DONE_HEADER

        response = self._post("/" + name, json=arguments)
        return Turn(response.text, response.headers.get(DONE_HEADER) == "1")

    def verify(self, response: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """``/verify`` with the agent's final response: trajectory and breakdown."""
        body = self._json("/verify", json={**self.row, "response": response})
        return body["trajectory"], body["reward_breakdown"]

    def result(self) -> tuple[dict[str, Any], Any]:
        return self.verify(nemo_response(""))


ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300.0


def _replies(task: Task) -> int:
    """Model replies a whole game may take in the agent's one conversation (several
    outside seats play in it, each up to the task's turn limit)."""
    return task.turn_limit() * task.seat_roles().count(OUTSIDE)


def nemo_python() -> Path:
    """The ``.venv-nemo`` interpreter (``GAMEBRIDGE_NEMO_PYTHON`` overrides it)."""
    return Path(os.environ.get("GAMEBRIDGE_NEMO_PYTHON", ROOT / ".venv-nemo" / "bin" / "python"))


def _start_together(managers: list[AbstractContextManager[Any]]) -> list[Any]:
    """Enter server context managers at once (each waits ~7 s for NeMo Gym's imports)."""
    results: list[Any] = [None] * len(managers)
    errors: list[BaseException] = []

    def enter(i: int) -> None:
        try:
            results[i] = managers[i].__enter__()
        except BaseException as e:  # re-raised below, once every thread is done
            errors.append(e)

    threads = [threading.Thread(target=enter, args=(i,)) for i in range(len(managers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for i, manager in enumerate(managers):
            if results[i] is not None:
                manager.__exit__(None, None, None)
        raise errors[0]
    return results


class NemoGymDriver(Driver):
    """Gymnasium-style server + NeMo Gym's ``GymnasiumAgent`` (which owns the loop; the
    client side of its ``/reset`` and ``/step`` is ``NemoGymSession``)."""

    name = "nemo_gym"
    style = "gymnasium"
    seats = ONE_CHAT  # its agent keeps one conversation per rollout
    session_class: type[ClientSession] = NemoGymSession
    """The client session of this server style (load tests and benchmarks drive it)."""

    def __init__(self) -> None:
        self._max_steps = 1

    def available(self) -> tuple[bool, str]:
        if not nemo_python().exists():
            return False, f"{nemo_python()} is missing: run `make setup-nemo` (Python 3.12)"
        return True, ""

    def prepare(self, tasks: list[Task]) -> None:
        """The agent's ``max_steps`` (fixed when its server starts): the run's longest game."""
        self._max_steps = self.framework_cap or max((_replies(t) for t in tasks), default=1)

    def _servers(self, model_url: str) -> list[AbstractContextManager[Any]]:
        from rollouts.model.servers import SupervisedServer, free_port

        python = str(nemo_python())
        env = {"PYTHONUNBUFFERED": "1"}
        res_port = free_port()
        servers: list[AbstractContextManager[Any]] = [
            SupervisedServer(
                "NeMo Gym resources",
                ["python", "-m", "adapters.nemo_gym", "--style", self.style, "--port", "{port}"],
                "/",
                env=env,
                python=python,
                port=res_port,
                cwd=ROOT,
            )
        ]
        if self.style == "gymnasium":
            servers.append(
                SupervisedServer(
                    "NeMo Gym agent",
                    [
                        "python",
                        "-m",
                        "adapters.nemo_gym.agent",
                        "--port",
                        "{port}",
                        "--resources-url",
                        f"http://127.0.0.1:{res_port}",
                        "--model-url",
                        model_url,
                        "--max-steps",
                        str(self._max_steps),
                    ],
                    "/",
                    env=env,
                    python=python,
                    cwd=ROOT,
                )
            )
        return servers

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        from concurrent.futures import ThreadPoolExecutor

        import httpx

        from rollouts.model.gateway import ModelGateway

        # NeMo Gym's agent (and the tools loop) call the model through the gateway: the
        # one call policy, and an answer within its bound (the agent retries a dead
        # endpoint forever on its own).
        with ModelGateway(base_url, self.call_policy) as gateway:
            managers = self._servers(gateway.url)
            running = _start_together(managers)
            waiter = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="nemo")
            try:
                with super().session(
                    base_url=gateway.url, model=model, api_key=api_key, concurrency=concurrency
                ) as ctx:
                    ctx.extra["urls"] = [server.base_url for server in running]
                    ctx.extra["servers"] = running
                    ctx.extra["gateway"] = gateway
                    ctx.extra["waiter"] = waiter
                    ctx.extra["headers"] = {"Authorization": f"Bearer {api_key}"} if api_key else {}
                    ctx.extra["httpx"] = httpx
                    yield ctx
            finally:
                waiter.shutdown(wait=False, cancel_futures=True)
                for manager in reversed(managers):
                    manager.__exit__(None, None, None)

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        servers = ctx.extra["servers"]
        gateway = ctx.extra["gateway"]
        generations = [server.check() for server in servers]
        failures_before = len(gateway.failures)
        future = ctx.extra["waiter"].submit(self._play, task, ctx)
        try:
            while True:  # a dead server is noticed at once (the agent would retry forever)
                try:
                    return future.result(timeout=0.1)
                except TimeoutError:
                    for server, gen in zip(servers, generations, strict=True):
                        if server.died_since(gen):
                            raise server.error(f" during {task.task_id}") from None
        except Exception as e:
            for server in servers:
                server.keep_log = True
            if getattr(e, "source", FRAMEWORK) != FRAMEWORK:
                raise
            for server, gen in zip(servers, generations, strict=True):
                if server.died_since(gen, wait=0.5):
                    raise server.error(f" during {task.task_id}") from e
            if len(gateway.failures) > failures_before:
                raise DriverError(
                    f"{task.task_id}: {gateway.failures[-1]}",
                    source=MODEL_ENDPOINT,
                    log="\n".join(s.log_tail(1500) for s in servers),
                ) from e
            raise DriverError(
                f"{task.task_id}: NeMo Gym failed: {e}",
                source=FRAMEWORK,
                log="\n".join(s.log_tail(1500) for s in servers),
            ) from e

    def _play(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from adapters.nemo_gym.rows import make_row

        clock = StepClock()
        httpx = ctx.extra["httpx"]
        response = httpx.post(
            ctx.extra["urls"][1] + "/run", json=make_row(task, "gymnasium"), timeout=TIMEOUT
        )
        if response.status_code != 200:
            raise DriverError(
                f"nemo_gym /run answered {response.status_code}: {response.text[:500]}"
            )
        body = response.json()
        trajectory = body["info"].get("trajectory")
        if trajectory is None:
            raise DriverError(
                f"nemo_gym: {task.task_id} did not finish within the agent's "
                f"{self._max_steps} steps (truncated={body.get('truncated')})"
            )
        usage = body["response"].get("usage") or {}
        return make_record(
            self.name,
            task,
            trajectory,
            trajectory["reward"],
            clock,
            len(trajectory["events"]),
            int(usage.get("output_tokens") or 0),
        )


class NemoGymToolsDriver(NemoGymDriver):
    """Tool-style server (``/seed_session``, ``/make_move``, ``/verify``)."""

    name = "nemo_gym_tools"
    style = "tools"
    mode = TOOLS
    session_class = NemoGymToolsSession

    def _play(self, task: Task, ctx: RunContext) -> RolloutRecord:
        from adapters.nemo_gym.rows import make_row

        clock = StepClock()
        httpx = ctx.extra["httpx"]
        params = {**make_row(task, "tools")["responses_create_params"], "model": ctx.model}
        outputs: list[dict[str, Any]] = []
        steps = tokens = 0
        done = False
        last: dict[str, Any] = {}
        # One session (one client, its cookie jar: one NeMo Gym session) per episode.
        with NemoGymToolsSession(ctx.extra["urls"][0]) as env:
            env.open(task)
            # simple_agent's max_steps: model calls whose tool calls run (then /verify settles).
            max_steps = ctx.framework_cap or _replies(task)
            while not done and steps < max_steps:
                with clock.model():
                    reply = httpx.post(
                        ctx.base_url.rstrip("/") + "/responses",
                        timeout=TIMEOUT,
                        json={**params, "input": params["input"] + outputs},
                        headers=ctx.extra["headers"],
                    )
                if reply.status_code != 200:
                    raise DriverError(
                        f"model /responses answered {reply.status_code}: {reply.text[:500]}"
                    )
                last = reply.json()
                steps += 1
                tokens += int((last.get("usage") or {}).get("output_tokens") or 0)
                outputs.extend(last["output"])
                calls = [item for item in last["output"] if item.get("type") == "function_call"]
                if not calls:
                    break  # a text answer ends the turn loop, as in simple_agent
                for call in calls:
                    try:
                        arguments = json.loads(call["arguments"])
                    except (json.JSONDecodeError, TypeError) as e:
                        output = json.dumps({"error": f"Invalid tool call arguments: {e!r}"})
                    else:
                        turn = env.call(arguments, call["name"])
                        output = turn.observation
                        done = done or turn.done
                    outputs.append(
                        {
                            "type": "function_call_output",
                            "call_id": call["call_id"],
                            "output": output,
                        }
                    )
            trajectory, breakdown = env.verify({**last, "output": outputs})
        return make_record(self.name, task, trajectory, breakdown, clock, steps, tokens)
