"""core.Episode as two NeMo Gym resources servers (one game per session, any game).

The session is NeMo Gym's own (a signed cookie set by its session middleware);
its episode lives in a dict on the server, is released when the game ends (or
at ``/verify``) and expires after ``session_ttl_seconds`` idle (an agent that
gives up never says so).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from adapters.nemo_gym.limits import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware
from adapters.nemo_gym.rows import DONE_HEADER
from core.episode import Episode, EpisodeFinishedError
from core.metrics import RATE_KEYS, outcome_rates
from core.tasks import Task, TaskError

try:
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
    from pydantic import BaseModel, ConfigDict, Field
    from resources_servers.gymnasium import GymnasiumServer, extract_text
    from starlette.concurrency import run_in_threadpool
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "adapters.nemo_gym.server needs NeMo Gym (Python >= 3.12); install with: "
        "pip install -e '.[nemo]' (make setup-nemo builds .venv-nemo)"
    ) from e


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
    """The task of a NeMo Gym row: its ``task`` field, else its top-level fields."""
    raw = row.get("task")
    fields = (
        dict(raw)
        if isinstance(raw, Mapping)
        else {k: v for k, v in row.items() if k not in ("responses_create_params", "response")}
    )
    try:
        return Task.from_dict({"game": default_game, **fields}, strict=isinstance(raw, Mapping))
    except TaskError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


# rosetta: session: NeMo Gym's signed session cookie -> one Episode; freed at the end, at `/verify` or after `session_ttl`
def _open(
    store: dict[str, Any],
    session_id: str | None,
    episode: Episode,
    ttl: float,
    max_sessions: int | None = None,
) -> None:
    now = time.monotonic()
    for key in [k for k, (_, seen) in store.items() if now - seen > ttl]:
        store.pop(key, None)
    if max_sessions is not None and str(session_id) not in store and len(store) >= max_sessions:
        raise HTTPException(
            status_code=429,
            detail=f"{len(store)} live games, this server's max_sessions: finish or /verify "
            f"some (idle games expire after {ttl:g} s)",
        )
    store[str(session_id)] = (episode, now)


async def _aggregate(aggregate: Any, body: AggregateMetricsRequest) -> AggregateMetrics:
    """NeMo Gym's own ``/aggregate_metrics`` (``aggregate``), with malformed verify
    responses (no ``reward``, wrong types) answered 422 instead of raising (a 500)."""
    try:
        return await aggregate(body)  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise HTTPException(
            status_code=422,
            detail="verify_responses must be /verify responses with a numeric reward "
            f"({type(exc).__name__}: {exc})",
        ) from exc


def _trajectory(rollout: Mapping[str, Any]) -> Any:
    """A verify response's trajectory: top level (tools ``/verify``) or in the final
    ``info`` (the gymnasium agent's ``/run`` answer)."""
    trajectory = rollout.get("trajectory")
    return (rollout.get("info") or {}).get("trajectory") if trajectory is None else trajectory


class GameMetrics:
    """NeMo Gym's metric hooks for both servers (``/aggregate_metrics``, which its
    agents and ``ng_collect_rollouts`` call): core's outcome rates over the games."""

    # rosetta: metrics: `compute_metrics(tasks)` / `get_key_metrics`: core's `outcome_rates` (win, draw, loss, invalid-move, format-error rates) in `/aggregate_metrics`
    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        trajectories = [t for rollouts in tasks for r in rollouts if (t := _trajectory(r))]
        return outcome_rates(trajectories)

    def get_key_metrics(self, agent_metrics: dict[str, Any]) -> dict[str, Any]:
        means = {k: v for k, v in agent_metrics.items() if k.startswith("mean/")}
        return {**means, **{k: agent_metrics[k] for k in RATE_KEYS if k in agent_metrics}}


def _limits(app: FastAPI, config: GameServerConfig, store: dict[str, Any]) -> FastAPI:
    """The body limit (413) and lone-surrogate check (400), and ``GET /sessions``:
    read-only, the live (unexpired) games, the games held in memory (expired ones are
    dropped at the next reset/seed), the cap and the idle TTL."""
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=config.max_body_bytes)

    def sessions() -> dict[str, Any]:
        now, ttl, entries = time.monotonic(), config.session_ttl_seconds, list(store.values())
        active = sum(1 for _, seen in entries if now - seen <= ttl)
        return {
            "active": active,
            "stored": len(entries),
            "max": config.max_sessions,
            "idle_timeout_s": ttl,
        }

    app.add_api_route("/sessions", sessions, methods=["GET"])
    return app


def _episode(store: dict[str, Any], session_id: str | None, ttl: float | None = None) -> Episode:
    entry = store.get(str(session_id))
    if entry is not None and ttl is not None and time.monotonic() - entry[1] > ttl:
        store.pop(str(session_id), None)  # expired, even if no reset pruned it yet
        entry = None
    if entry is None:
        raise HTTPException(
            status_code=404,
            detail="no game in this session (never started, "
            "finished or expired): reset or seed it first",
        )
    store[str(session_id)] = (entry[0], time.monotonic())
    return entry[0]


T = TypeVar("T")
_LOCKS: weakref.WeakKeyDictionary[Episode, asyncio.Lock] = weakref.WeakKeyDictionary()


async def _play(episode: Episode, work: Callable[..., T], *args: Any) -> T:
    """Core's game work in a worker thread, one call per episode at a time: the
    opponent's search takes seconds at a high task ``depth``, and in the event loop
    it stalled every session of the server (OpenEnv runs sessions in threads too)."""
    lock = _LOCKS.setdefault(episode, asyncio.Lock())
    async with lock:
        return await run_in_threadpool(work, *args)


# rosetta: state: the server's session dict; the trajectory in the final `info` (or the `/verify` response)
def _end_info(episode: Episode, info: dict[str, Any]) -> dict[str, Any]:
    return {**info, "trajectory": episode.to_dict()} if episode.done else info


class GameGymnasiumServer(GameMetrics, GymnasiumServer):
    """``/reset`` starts the row's task; ``/step`` plays the model's text reply."""

    config: GameServerConfig

    # rosetta: reset: gymnasium: `/reset` -> `reset(metadata, session_id)`
    async def reset(self, metadata: dict, session_id: str | None = None) -> tuple[str, dict]:
        episode = Episode(task_from_row(metadata, self.config.game))
        observation = await _play(episode, episode.reset)
        cfg = self.config
        _open(self.session_state, session_id, episode, cfg.session_ttl_seconds, cfg.max_sessions)
        return observation, {"task": episode.task.to_dict(), "system_prompt": episode.system_prompt}

    def setup_webserver(self) -> FastAPI:
        return _limits(super().setup_webserver(), self.config, self.session_state)

    async def aggregate_metrics(self, body: AggregateMetricsRequest) -> AggregateMetrics:
        return await _aggregate(super().aggregate_metrics, body)

    # rosetta: step: gymnasium: `/step` -> `(obs, reward, terminated, truncated, info)`
    # rosetta: action: gymnasium: the model's Responses output, as text (`extract_text`)
    # rosetta: observation: gymnasium: the observation string (the agent appends it as a user message)
    # rosetta: reward: gymnasium: `reward` of the last `/step` (the agent sums them)
    # rosetta: termination: gymnasium: `terminated` = `done`
    # rosetta: truncation: gymnasium: `truncated` is always `False`: core's turn cap is a settled end
    async def step(
        self, action: NeMoGymResponse, metadata: dict, session_id: str | None = None
    ) -> tuple[str, float, bool, bool, dict]:
        episode = _episode(self.session_state, session_id, self.config.session_ttl_seconds)
        result = await _play(episode, episode.step, extract_text(action))
        # Finished sessions are closed by GymnasiumServer itself (terminated=True).
        return (
            result.observation,
            result.reward,
            result.done,
            False,
            _end_info(episode, result.info),
        )


class SeedRequest(BaseSeedSessionRequest):
    model_config = ConfigDict(extra="allow")


class SeedResponse(BaseSeedSessionResponse):
    observation: str
    task: dict


class MakeMoveRequest(BaseModel):
    move: Any = None


class VerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")


class VerifyResponse(BaseVerifyResponse):
    model_config = ConfigDict(extra="allow")
    result: str
    reward_breakdown: dict
    trajectory: dict


# rosetta: tools: the tools-style server: `/make_move` is the tool, rows from `make_row(task, "tools")` offer it (Responses API form)
class GameToolsServer(GameMetrics, SimpleResourcesServer):
    """``/seed_session`` starts the task, ``/make_move`` is the tool, ``/verify`` scores."""

    config: GameServerConfig
    sessions: dict[str, Any] = Field(default_factory=dict)

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/make_move")(self.make_move)
        return _limits(app, self.config, self.sessions)

    async def aggregate_metrics(self, body: AggregateMetricsRequest) -> AggregateMetrics:
        return await _aggregate(super().aggregate_metrics, body)

    # rosetta: reset: tools: `/seed_session` with the row's task
    async def seed_session(self, request: Request, body: SeedRequest) -> SeedResponse:  # type: ignore[override]
        episode = Episode(task_from_row(body.model_extra or {}, self.config.game))
        observation = await _play(episode, episode.reset)
        cfg = self.config
        session_id = request.session[SESSION_ID_KEY]
        _open(self.sessions, session_id, episode, cfg.session_ttl_seconds, cfg.max_sessions)
        return SeedResponse(observation=observation, task=episode.task.to_dict())

    # rosetta: step: tools: the `POST /make_move` tool
    # rosetta: action: tools: the `make_move(move)` argument
    # rosetta: observation: tools: the tool's plain-text reply (`x-gamebridge-done` header)
    async def make_move(self, request: Request, body: MakeMoveRequest) -> PlainTextResponse:
        ttl = self.config.session_ttl_seconds
        episode = _episode(self.sessions, request.session[SESSION_ID_KEY], ttl)
        try:
            result = await _play(episode, episode.step_move, body.move)
        except EpisodeFinishedError as exc:
            return PlainTextResponse(str(exc), status_code=409, headers={DONE_HEADER: "1"})
        return PlainTextResponse(result.observation, headers={DONE_HEADER: str(int(result.done))})

    # rosetta: reward: tools: `/verify` -> `reward` and `reward_breakdown`
    # rosetta: termination: tools: the model stops calling the tool; `/verify` ends the session
    async def verify(self, request: Request, body: VerifyRequest) -> VerifyResponse:  # type: ignore[override]
        ttl = self.config.session_ttl_seconds
        episode = _episode(self.sessions, request.session[SESSION_ID_KEY], ttl)
        self.sessions.pop(str(request.session[SESSION_ID_KEY]), None)  # verified: released
        if not episode.done:
            episode = await _play(episode, _settle, episode, body.response)
        breakdown = episode.reward().to_dict()
        return VerifyResponse(
            **body.model_dump(),
            reward=breakdown["total"],
            result=episode.result,
            reward_breakdown=breakdown,
            trajectory=episode.to_dict(),
        )


# rosetta: truncation: tools: a model that stops early is settled by core (`Episode.settle`)
def _settle(episode: Episode, response: NeMoGymResponse) -> Episode:
    """The model stopped calling ``make_move`` before the game ended (the model
    decides when to stop in NeMo Gym). Its closing text is its last reply, judged
    as core judges any text reply; if the game still goes on, it ends there as the
    task's turn cap (``Episode.settle``: a settled end, scored by the rubric)."""
    output = list(response.output)
    start = len(output)  # the closing messages: after the last tool call or tool output
    while start > 0 and output[start - 1].type in ("message", "reasoning"):
        start -= 1
    text = extract_text(response.model_copy(update={"output": output[start:]}))
    episode.step(text)
    if not episode.done:
        episode.settle()
    return episode


# rosetta: transport: HTTP (FastAPI + uvicorn), in `.venv-nemo` (Python 3.12)
def build_app(
    style: str = "gymnasium",
    game: str = "tictactoe",
    host: str = "127.0.0.1",
    port: int = 0,
    session_ttl_seconds: float = 1800.0,
    max_sessions: int = 4096,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The FastAPI app of a server of ``style`` (``"gymnasium"`` or ``"tools"``), as
    ``run_webserver`` builds it but without ``ng_run``'s global config or Ray."""
    cls = {"gymnasium": GameGymnasiumServer, "tools": GameToolsServer}[style]
    config = GameServerConfig(
        host=host,
        port=port,
        entrypoint="adapters/nemo_gym/server.py",
        name=f"gamebridge_{style}",
        game=game,
        style=style,
        session_ttl_seconds=session_ttl_seconds,
        max_sessions=max_sessions,
        max_body_bytes=max_body_bytes,
    )
    client = ServerClient(
        head_server_config=BaseServerConfig(host=host, port=0),
        global_config_dict=OmegaConf.create({}),
    )
    server = cls(config=config, server_client=client)
    app = server.setup_webserver()
    server.setup_liveness(app)
    return app
