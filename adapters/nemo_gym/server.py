"""core.Episode as two NeMo Gym resources servers (one game per session, any game).

The session is NeMo Gym's own (a signed cookie set by its session middleware);
its episode lives in a dict on the server, is released when the game ends (or
at ``/verify``) and expires after ``session_ttl_seconds`` idle (an agent that
gives up never says so).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from adapters._asgi import harden
from adapters._lazy import needs
from adapters._sessions import SessionMissingError, SessionsFullError, SessionStore
from adapters.nemo_gym.rows import DONE_HEADER
from core.episode import Episode, EpisodeFinishedError
from core.inputs import task_from_row as core_task_from_row
from core.metrics import RATE_KEYS, outcome_rates
from core.tasks import Task, TaskError

with needs("adapters.nemo_gym", "NeMo Gym (Python >= 3.12)", "nemo", " or make setup-nemo"):
    from fastapi import FastAPI, HTTPException, Request
    from fastapi.responses import PlainTextResponse
    from nemo_gym.base_resources_server import (
        BaseResourcesServerConfig,
        BaseSeedSessionRequest,
        BaseSeedSessionResponse,
        BaseVerifyRequest,
        BaseVerifyResponse,
        SimpleResourcesServer,
    )
    from nemo_gym.config_types import AggregateMetrics, AggregateMetricsRequest, BaseServerConfig
    from nemo_gym.openai_utils import NeMoGymResponse
    from nemo_gym.server_utils import SESSION_ID_KEY, ServerClient
    from omegaconf import OmegaConf
    from pydantic import ConfigDict, Field
    from resources_servers.gymnasium import GymnasiumServer, extract_text

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body: ``/verify`` carries the model's whole episode (every turn's
output, reasoning included), so the limit is generous; it bounds memory, nothing else."""


# rosetta: config: `GameServerConfig` (`gamebridge.yaml`: `game`, `style`, TTL, caps); each row carries its task
class GameServerConfig(BaseResourcesServerConfig):
    game: str = "tictactoe"
    """The game of rows that name none (a row's ``task.game`` wins)."""
    style: str = "gymnasium"
    """``gymnasium`` or ``tools``: which server ``app.py`` (ng_run's entrypoint) starts."""
    session_ttl_seconds: float = 1800.0
    max_sessions: int = 4096
    """Live games at once (429 beyond; idle ones expire after ``session_ttl_seconds``)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Largest request body (413 beyond)."""


def task_from_row(row: Mapping[str, Any], default_game: str) -> Task:
    """The task of a NeMo Gym row (core's ``task_from_row``; its own columns left out)."""
    return core_task_from_row(row, default_game, ignore=("responses_create_params", "response"))


# rosetta: session: NeMo Gym's signed session cookie -> one Episode in `adapters._sessions.SessionStore`; freed at the end, at `/verify` or after `session_ttl`
def _store(config: GameServerConfig, values: dict[str, Any]) -> SessionStore[Episode]:
    ttl, cap, hint = config.session_ttl_seconds, config.max_sessions, "finish or /verify some"
    return SessionStore(cap, ttl, values=values, what="live games", release=hint)


def _trajectory(rollout: Mapping[str, Any]) -> Any:
    """A verify response's trajectory: top level (tools ``/verify``) or in the final
    ``info`` (the gymnasium agent's ``/run`` answer)."""
    trajectory = rollout.get("trajectory")
    return (rollout.get("info") or {}).get("trajectory") if trajectory is None else trajectory


class GameHosting:
    """What both servers share: the session store over the server's own table
    (``session_state``), the limits on its app, and NeMo Gym's metric hooks
    (``/aggregate_metrics``, which its agents and ``ng_collect_rollouts`` call): core's
    outcome rates over the games."""

    config: GameServerConfig
    session_state: dict[str, Any]
    store: Any

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)  # type: ignore[misc]
        self.store = _store(self.config, self.session_state)

    def setup_webserver(self) -> FastAPI:
        """NeMo Gym's app with the limits: the body limit (413) and lone-surrogate check
        (400), the store's refusals (429 over the cap, 404 for no game), a task core
        refuses (422) and ``GET /sessions`` (read-only: the store's stats)."""
        refusals = {SessionsFullError: 429, SessionMissingError: 404, TaskError: 422}
        app = super().setup_webserver()  # type: ignore[misc]
        return harden(app, refusals, self.store.stats, max_body_bytes=self.config.max_body_bytes)

    async def aggregate_metrics(self, body: AggregateMetricsRequest) -> AggregateMetrics:
        """NeMo Gym's own, with malformed verify responses (no ``reward``, wrong
        types) answered 422 instead of raising (a 500)."""
        try:
            return await super().aggregate_metrics(body)  # type: ignore[misc, no-any-return]
        except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
            raise HTTPException(
                status_code=422,
                detail="verify_responses must be /verify responses with a numeric reward "
                f"({type(exc).__name__}: {exc})",
            ) from exc

    # rosetta: metrics: `compute_metrics(tasks)` / `get_key_metrics`: core's `outcome_rates` (win, draw, loss, invalid-move, format-error rates) in `/aggregate_metrics`
    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        trajectories = [t for rollouts in tasks for r in rollouts if (t := _trajectory(r))]
        return outcome_rates(trajectories)

    def get_key_metrics(self, agent_metrics: dict[str, Any]) -> dict[str, Any]:
        means = {k: v for k, v in agent_metrics.items() if k.startswith("mean/")}
        return {**means, **{k: agent_metrics[k] for k in RATE_KEYS if k in agent_metrics}}


NO_GAME = "no game in this session (never started, finished or expired): reset or seed it first"


# rosetta: state: the server's session dict; the trajectory in the final `info` (or the `/verify` response)
def _end_info(episode: Episode, info: dict[str, Any]) -> dict[str, Any]:
    return {**info, "trajectory": episode.to_dict()} if episode.done else info


class GameGymnasiumServer(GameHosting, GymnasiumServer):
    """``/reset`` starts the row's task; ``/step`` plays the model's text reply
    (the store is over ``GymnasiumServer``'s own ``session_state``)."""

    config: GameServerConfig
    store: Any = None

    # rosetta: reset: gymnasium: `/reset` -> `reset(metadata, session_id)`
    async def reset(self, metadata: dict, session_id: str | None = None) -> tuple[str, dict]:
        episode = Episode(task_from_row(metadata, self.config.game))
        # rosetta: agents: none: one agent run, one conversation per rollout: several outside seats play in it (self-play, each observation with the side to move); refused where the game hides information
        info = {"task": episode.task.to_dict(), "system_prompt": episode.shared_system_prompt()}
        observation = await self.store.play(episode, episode.reset)
        self.store.add(str(session_id), episode)
        return observation, info

    async def close_session(self, session_id: str | None) -> None:
        self.store.close(str(session_id), "finished")

    # rosetta: step: gymnasium: `/step` -> `(obs, reward, terminated, truncated, info)`
    # rosetta: action: gymnasium: the model's Responses output, as text (`extract_text`)
    # rosetta: observation: gymnasium: the observation string (the agent appends it as a user message)
    # rosetta: reward: gymnasium: `reward` of the last `/step` (the agent sums them)
    # rosetta: termination: gymnasium: `terminated` = `done`
    # rosetta: truncation: gymnasium: the agent's `max_steps` reached: core settles the game on that step (`truncated=True`, the settled reward)
    async def step(
        self, action: NeMoGymResponse, metadata: dict, session_id: str | None = None
    ) -> tuple[str, float, bool, bool, dict]:
        episode = self.store.get(str(session_id), NO_GAME)
        # The agent stops after its max_steps: core settles the game on that step, or
        # it would end unscored (reward 0) with the session left open.
        cap, reply = agent_max_steps(metadata, self.server_client), extract_text(action)

        def play() -> Any:  # the step and the cap in one trip to the worker thread
            return episode.cap(episode.step(reply), cap)

        result, truncated = await self.store.play(episode, play)
        # Finished sessions are closed by GymnasiumServer itself (terminated or truncated).
        return (
            result.observation,
            result.reward,
            result.done and not truncated,
            truncated,
            _end_info(episode, result.info),
        )


MAX_STEPS_KEY = "gamebridge_max_steps"
"""The row field through which gamebridge's agent (``adapters.nemo_gym.agent``) tells
the server its ``max_steps``."""


def agent_max_steps(metadata: Mapping[str, Any], client: Any = None) -> int | None:
    """The ``max_steps`` of the agent playing this row: the row's ``gamebridge_max_steps``
    (set by ``adapters.nemo_gym.agent``), else the config of the agent the row names
    (``agent_ref``, as ``ng_collect_rollouts`` sends it) in NeMo Gym's global config;
    ``None`` when neither says."""
    cap = metadata.get(MAX_STEPS_KEY)
    if isinstance(cap, int) and not isinstance(cap, bool) and cap >= 1:
        return cap
    ref = metadata.get("agent_ref")
    config = getattr(client, "global_config_dict", None)
    if not isinstance(ref, Mapping) or config is None or ref.get("name") not in config:
        return None
    for agents in dict(config[ref["name"]]).values():  # {"responses_api_agents": {dir: cfg}}
        for agent in dict(agents).values():
            steps = dict(agent).get("max_steps")
            if isinstance(steps, int) and steps >= 1:
                return steps
    return None


class SeedRequest(BaseSeedSessionRequest):
    model_config = ConfigDict(extra="allow")


class SeedResponse(BaseSeedSessionResponse):
    observation: str
    task: dict


class VerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")


class VerifyResponse(BaseVerifyResponse):
    model_config = ConfigDict(extra="allow")
    result: str
    reward_breakdown: dict
    trajectory: dict


# rosetta: tools: the tools-style server: `/make_move` is the tool, rows from `make_row(task, "tools")` offer it (Responses API form)
class GameToolsServer(GameHosting, SimpleResourcesServer):
    """``/seed_session`` starts the task, ``/make_move`` is the tool, ``/verify`` scores."""

    config: GameServerConfig
    session_state: dict[str, Any] = Field(default_factory=dict)
    store: Any = None

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/make_move")(self.make_move)
        return app

    # rosetta: reset: tools: `/seed_session` with the row's task
    async def seed_session(self, request: Request, body: SeedRequest) -> SeedResponse:  # type: ignore[override]
        episode = Episode(task_from_row(body.model_extra or {}, self.config.game))
        episode.shared_system_prompt(tools=True)  # several outside seats: refused if hidden
        observation = await self.store.play(episode, episode.reset)
        self.store.add(str(request.session[SESSION_ID_KEY]), episode)
        return SeedResponse(observation=observation, task=episode.task.to_dict())

    # rosetta: step: tools: the `POST /make_move` tool
    # rosetta: action: tools: the call's raw JSON arguments, the request body (core judges them: `Episode.step_tool`)
    # rosetta: observation: tools: the tool's plain-text reply (`x-gamebridge-done` header)
    async def make_move(self, request: Request) -> PlainTextResponse:
        """The agent posts the call's decoded arguments as the body, whatever the
        model wrote (a number, a list, an object without ``move``): they go to core
        unchanged (no pydantic model that would refuse them first). An empty body is
        JSON ``null`` (the agent's HTTP client sends none for ``json=None``)."""
        episode = self.store.get(str(request.session[SESSION_ID_KEY]), NO_GAME)
        arguments = await _arguments(request)
        try:
            result = await self.store.play(episode, episode.step_tool, arguments)
        except EpisodeFinishedError as exc:
            return PlainTextResponse(str(exc), status_code=409, headers={DONE_HEADER: "1"})
        return PlainTextResponse(result.observation, headers={DONE_HEADER: str(int(result.done))})

    # rosetta: reward: tools: `/verify` -> `reward` and `reward_breakdown`
    # rosetta: termination: tools: the model stops calling the tool; `/verify` ends the session
    async def verify(self, request: Request, body: VerifyRequest) -> VerifyResponse:  # type: ignore[override]
        key = str(request.session[SESSION_ID_KEY])
        episode = self.store.get(key, NO_GAME)
        self.store.close(key, "verified")
        # The model answered without a tool call (its closing text is not a move), or
        # the agent's own cap ended the loop: core settles an unfinished game.
        # rosetta: truncation: tools: the model stops calling the tool, or the agent's `max_steps` cuts it: `/verify` settles the game (`Episode.finish`)
        episode = await self.store.play(episode, episode.finish)
        breakdown = episode.reward().to_dict()
        return VerifyResponse(
            **body.model_dump(),
            reward=breakdown["total"],
            result=episode.result,
            reward_breakdown=breakdown,
            trajectory=episode.to_dict(),
        )


async def _arguments(request: Request) -> Any:
    body = await request.body()
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HTTPException(
            status_code=400, detail=f"the body must be the tool call's JSON arguments ({exc})"
        ) from exc


# rosetta: transport: HTTP (FastAPI + uvicorn), in `.venv-nemo` (Python 3.12)
def build_app(style: str = "gymnasium", **settings: Any) -> FastAPI:
    """The FastAPI app of a server of ``style`` (``"gymnasium"`` or ``"tools"``), as
    ``run_webserver`` builds it but without ``ng_run``'s global config or Ray.
    ``settings``: any other ``GameServerConfig`` field (``game``, ``host``, ``port``,
    ``session_ttl_seconds``, ``max_sessions``, ``max_body_bytes``)."""
    cls = {"gymnasium": GameGymnasiumServer, "tools": GameToolsServer}[style]
    where = {"host": "127.0.0.1", "port": 0, "entrypoint": "adapters/nemo_gym/server.py"}
    config = GameServerConfig(**{**where, **settings}, name=f"gamebridge_{style}", style=style)
    return app_without_ng_run(cls, config)


def app_without_ng_run(
    cls: Any, config: Any, global_config: Mapping[str, Any] | None = None
) -> FastAPI:
    """The app of NeMo Gym server class ``cls`` as ``run_webserver`` builds it, with
    ``global_config`` for NeMo Gym's global config (no head server, no Ray)."""
    head = BaseServerConfig(host=config.host, port=0)
    client = ServerClient(
        head_server_config=head, global_config_dict=OmegaConf.create(dict(global_config or {}))
    )
    server = cls(config=config, server_client=client)
    app = server.setup_webserver()
    server.setup_liveness(app)
    return app
