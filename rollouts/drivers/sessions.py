"""One client session per framework: one episode, driven from the client side.

A session opens an episode for a task (:meth:`ClientSession.open` gives the chat
the model reads first and, in tool mode, ``tools``), takes the model's reply
(:meth:`~ClientSession.send`, text mode) or a ``make_move`` call's raw arguments
(:meth:`~ClientSession.call`, tool mode), or the end of the model's play
(:meth:`~ClientSession.stop`: the model answered without a tool call, or the
framework's cap on model turns; core settles the game), and answers each with the
next :class:`Turn`. :meth:`~ClientSession.result` is the trajectory and reward the
framework hands back; :meth:`~ClientSession.close` ends the client's side.

``mode`` says whether the model moves by reply (``text``) or by tool call
(``tools``): drivers read it from here, and so does the conformance suite. The
one model<->environment loop is :meth:`rollouts.drivers.base.Driver.play`; load
tests (``rollouts.evaluation.load``) and benchmarks (``bench.steps``) drive the
same sessions with a scripted player. No session judges anything: core does,
inside the framework.

The interface (:class:`ClientSession`, :class:`Turn`, the modes) is defined
beside the driver contract in ``rollouts.drivers.base``; the frameworks' sessions
are here. Frameworks are imported when a session opens, never at import.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from core.inputs import wrap_arguments
from core.prompts import TOOL_NAME
from rollouts.drivers.base import MODES, TEXT, TOOLS, ClientSession, DriverError, Turn

if TYPE_CHECKING:
    from core.tasks import Task

__all__ = [
    "MODES",
    "TEXT",
    "TOOLS",
    "ClientSession",
    "CoreSession",
    "GemSession",
    "NemoGymSession",
    "NemoGymToolsSession",
    "ORSSession",
    "ORSWireSession",
    "OpenEnvSession",
    "SkyRLSession",
    "TRLSession",
    "Turn",
    "nemo_response",
    "sse_events",
]

Message = dict[str, Any]
OnResponse = Callable[[Any, str], None]
"""Called with every HTTP response of an HTTP session and what it answered
(``/step``...): the load test counts 5xx there (and refuses any non-200)."""


def _mode(tools: bool) -> str:
    return TOOLS if tools else TEXT


# --- in process -------------------------------------------------------------------


class CoreSession(ClientSession):
    """``core.Episode`` with no framework: the reference every driver must equal."""

    def __init__(self, tools: bool = False) -> None:
        self.mode = _mode(tools)

    def open(self, task: Task) -> list[Message]:
        from core.episode import Episode

        self.episode = episode = Episode(task)
        tools = self.mode == TOOLS
        self.tools = [episode.tool_schema] if tools else None
        system = episode.tool_system_prompt if tools else episode.system_prompt
        return [{"role": "system", "content": system}, {"role": "user", "content": episode.reset()}]

    def send(self, reply: str) -> Turn:
        result = self.episode.step(reply)
        return Turn(result.observation, result.done)

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        result = self.episode.step_tool(arguments)
        return Turn(result.observation, result.done)

    def stop(self, text: str | None = None) -> Turn:
        self.episode.settle()
        return Turn("", True)

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self.episode.to_dict()
        json.dumps(trajectory)  # the trajectory must be JSON: fail here, not in a writer
        return trajectory, self.episode.reward()

    def partial(self) -> dict[str, Any] | None:
        return self.episode.to_dict()

    supports_seats = True

    def seat(self) -> int | None:
        return self.episode.to_move if self.episode.several else None

    def opening(self, seat: int) -> list[Message]:
        return [
            {"role": "system", "content": self.episode.system_prompt_for(seat)},
            {"role": "user", "content": self.episode.observation_for(seat)},
        ]


class GemSession(ClientSession):
    """``gem.make("gamebridge/<game>", task=...)``: reset, then ``step(text)``.

    The chat is core's: ``info["system_prompt"]``, then ``info["observation"]`` (the
    board alone) and one user message per observation."""

    own_cap = True

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self._info: dict[str, Any] = {}

    def open(self, task: Task) -> list[Message]:
        import gem

        from adapters.gem import ID_PREFIX, register

        register((task.game,))  # an openspiel: game has no id until asked for
        self._task = task
        self.env = gem.make(ID_PREFIX + task.game, task=task.to_dict(), max_episode_steps=self.cap)
        _, info = self.env.reset()
        return [
            {"role": "system", "content": info["system_prompt"]},
            {"role": "user", "content": info["observation"]},
        ]

    def send(self, reply: str) -> Turn:
        observation, _, terminated, truncated, self._info = self.env.step(reply)
        return Turn(observation, bool(terminated or truncated))

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._info.get("trajectory")
        if trajectory is None:
            raise DriverError(f"gem: the final info of {self._task.task_id} has no trajectory")
        return trajectory, trajectory["reward"]


class SkyRLSession(ClientSession):
    """``skyrl_gym.make("gamebridge", env_config, extras)``, ``init``, ``step(text)``:
    as SkyRL's generator, which puts its ``max_turns`` in ``extras``."""

    own_cap = True

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self._metadata: dict[str, Any] = {}
        self.env: Any = None

    def open(self, task: Task) -> list[Message]:
        import skyrl_gym

        from adapters.skyrl_gym import ENV_ID, make_row, register

        register()  # a no-op once registered
        self._task = task
        row = make_row(task)
        # SkyRL passes every column but the prompt as extras, plus its generator's max_turns.
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        extras["max_turns"] = self.cap or task.turn_limit()
        self.env = skyrl_gym.make(row["env_class"] or ENV_ID, env_config={}, extras=extras)
        chat, _ = self.env.init(row["prompt"])
        return list(chat)

    def send(self, reply: str) -> Turn:
        out = self.env.step(reply)
        self._metadata = out["metadata"]
        observations = out["observations"]  # one user message, none at the end
        return Turn(observations[-1]["content"] if observations else "", bool(out["done"]))

    def result(self) -> tuple[dict[str, Any], Any]:
        trajectory = self._metadata.get("trajectory")
        if trajectory is None:
            raise DriverError(
                f"skyrl_gym: the final metadata of {self._task.task_id} has no trajectory"
            )
        return trajectory, trajectory["reward"]

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


class TRLSession(ClientSession):
    """TRL's ``environment_factory`` environment (``adapters.trl``), as ``GRPOTrainer``
    uses it: no-argument construction, ``reset(**row)``, each tool call a method call
    (an exception is the tool's reply), ``get_reward()`` (which settles the game)."""

    mode = TOOLS

    def open(self, task: Task) -> list[Message]:
        from adapters.trl import environment_class
        from core.prompts import tool_schema

        self.env = environment_class(task.game)()
        observation = self.env.reset(**task.to_dict())
        self.tools = [tool_schema(self.env.episode.game)]
        self._methods = {TOOL_NAME: self.env.make_move}
        return [
            {"role": "system", "content": self.env.episode.tool_system_prompt},
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


# --- OpenEnv (its own WebSocket client) --------------------------------------------


class OpenEnvSession(ClientSession):
    """OpenEnv's own client (``adapters.openenv.GameEnvClient``, synchronous), one
    WebSocket per episode. Tool mode sends ``GameAction(arguments=...)``; the end of
    play is ``GameAction(stop=True)``."""

    def __init__(self, url: str, tools: bool = False) -> None:
        self.url = url
        self.mode = _mode(tools)
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
        return [
            {"role": "system", "content": obs.system_prompt},
            {"role": "user", "content": obs.text},
        ]

    def _step(self, **action: Any) -> Turn:
        from adapters.openenv import GameAction

        self._last = self.client.step(GameAction(**action))
        return Turn(self._last.observation.text, bool(self._last.done))

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


# --- ORS (openreward's own client) -------------------------------------------------


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


class ORSSession(ClientSession):
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
        spec = ORSTask(
            server_name=ORS_ENV_NAME,
            environment_name=ORS_ENV_NAME,
            task_spec=task.to_dict(),
            namespace=None,
        )
        self._manager = self.env.session(task=spec)
        self.session = self._manager.__enter__()
        self.tools = [ors_chat_tool(s) for s in self.session.list_tools()]
        return [
            {"role": m.role, "content": ors_text(m.blocks)} for m in self.session.get_messages()
        ]

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        # No arguments at all (null) is {} to ORS, as to core and OpenAI clients; every
        # JSON object goes as it came, anything else wrapped (ORS carries objects only):
        # core judges it in the server (an invalid reply), the task goes on.
        self._out = self.session.call_tool(name, wrap_arguments(arguments))
        self._calls += 1
        if not self._out.finished and self._calls > self._task.turn_limit():
            raise DriverError(f"{self._task.task_id}: the ORS session never finished")
        return Turn(ors_text(self._out.blocks), bool(self._out.finished))

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


# --- over HTTP (NeMo Gym's servers; ORS's wire protocol) -----------------------------


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


TIMEOUT = 300.0
"""Seconds an HTTP session waits for one answer."""


class _HTTPSession(ClientSession):
    """A session over plain HTTP with httpx: its own client (its cookie jar holds
    NeMo Gym's session cookie) unless one is handed in (then it is left open)."""

    name: ClassVar[str] = ""
    """The framework, in error messages."""

    def __init__(
        self,
        url: str,
        http: Any = None,
        on_response: OnResponse | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self._own = http is None
        self.http = http
        self.on_response = on_response

    def _post(self, path: str, what: str = "", **kwargs: Any) -> Any:
        if self.http is None:
            import httpx

            self.http = httpx.Client(base_url=self.url, timeout=self.timeout)
        response = self.http.post(path, **kwargs)
        if self.on_response is not None:
            self.on_response(response, what or path)
        return response

    def _json(self, path: str, **kwargs: Any) -> Any:
        response = self._post(path, **kwargs)
        if response.status_code != 200:
            raise DriverError(
                f"{self.name} {path} answered {response.status_code}: {response.text[:500]}"
            )
        return response.json()

    def close(self) -> None:
        if self._own and self.http is not None:
            http, self.http = self.http, None
            http.close()


class NemoGymSession(_HTTPSession):
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


class NemoGymToolsSession(_HTTPSession):
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


class ORSWireSession(_HTTPSession):
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
