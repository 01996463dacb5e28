"""core.Episode in OpenEnv's vocabulary: typed Action / Observation / State, an
``Environment`` (one Episode per WebSocket session), the FastAPI app and an
``EnvClient``. Every game is served: ``reset(task=row)`` names it (or
``reset(seed=..., **fields)`` with the server's default game)."""

from __future__ import annotations

import functools
import uuid
from typing import Any

try:
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import (
        Action,
        ConcurrencyConfig,
        Environment,
        Observation,
        State,
        create_app,
    )
    from pydantic import Field, model_validator
    from pydantic_core import PydanticCustomError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "adapters.openenv needs openenv-core 0.3; install with: pip install -e '.[openenv]'"
    ) from e

from adapters.openenv.limits import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware
from core import Episode, EpisodeNotStartedError, Task
from core.episode import EpisodeError
from core.tasks import TaskError

DEFAULT_SESSION_TIMEOUT_S = 1800.0
"""Idle seconds before the server closes a WebSocket session's game (OpenEnv's default: never)."""


class SessionClosedError(EpisodeError):
    """The session's game was closed: idle past the server's session timeout, or shut down."""


class ResetArgumentsError(TaskError, TypeError):
    """``reset`` got a task row and task fields at once."""


class NotUnicodeError(ValueError):
    """A reply or move holding a lone UTF-16 surrogate: no JSON reply could carry it
    back as UTF-8 (the session's ``State`` would fail to serialise), so it is refused
    before it reaches the game (HTTP bodies get a 400 from ``BodyLimitMiddleware``)."""


def _unicode(value: Any) -> Any:
    """``value`` unchanged, unless a string in it holds a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise NotUnicodeError(
                f"the action holds a lone UTF-16 surrogate at index {exc.start}: not Unicode"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _unicode(key), _unicode(item)
    elif isinstance(value, list):
        for item in value:
            _unicode(item)
    return value


# rosetta: action: `GameAction(reply=text)`, or `GameAction(arguments=...)`: a tool call's raw JSON arguments (core judges them)
class GameAction(Action):
    """Exactly one of: the model's reply text (``<move>..</move>``), a ``make_move``
    call's raw ``arguments`` (the JSON value the model wrote, unchanged: any type,
    missing or extra keys; core judges it, ``Episode.step_tool``), ``move``, a
    shortcut for ``arguments={"move": move}`` (any JSON value too), or
    ``stop=True``: the client stops the game here (the model stopped calling the
    tool, or the trainer's own turn or token cap was reached), and core settles
    it (``Episode.settle``), scored, never left unfinished."""

    reply: str | None = None
    arguments: Any = None
    move: Any = None
    stop: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> GameAction:
        fields = ("reply", "arguments", "move", "stop")
        given = [k for k in fields if k in self.model_fields_set]
        if len(given) > 1:  # a full dump sets the others to None/False: those were not given
            given = [
                k for k in given if getattr(self, k) is not None and getattr(self, k) is not False
            ]
        if given == ["stop"] and not self.stop:
            given = []
        if len(given) != 1:
            # PydanticCustomError, not ValueError: OpenEnv's WebSocket error reply must
            # serialise the validation error (a ValueError in its ctx closed the session).
            raise PydanticCustomError(
                "one_of",
                "a GameAction carries exactly one of `reply`, `arguments`, `move` and `stop=True`",
            )
        return self

    def tool_arguments(self) -> Any:
        """The tool call's raw arguments (``move`` given: ``{"move": move}``)."""
        if "arguments" in self.model_fields_set and (
            self.arguments is not None or "move" not in self.model_fields_set
        ):
            return self.arguments
        return {"move": self.move}


# rosetta: observation: `GameObservation`: `text`, `legal_moves`, `info`, `done`, `reward`
class GameObservation(Observation):
    """What the model reads next, plus ``done``/``reward`` (the rubric total at the
    end); ``reward_breakdown`` is set on the final observation only."""

    text: str = ""
    legal_moves: list[str] | None = None
    """In the game's notation; ``None`` where the game does not list them (Wordle)."""
    info: dict[str, Any] = Field(default_factory=dict)
    """``StepResult.info`` (valid, error, move, opponent_move, turn, ...)."""
    reward_breakdown: dict[str, Any] | None = None
    system_prompt: str | None = None
    """The system prompt, on the reset observation only."""
    tools: list[dict[str, Any]] | None = None
    """With ``reset(tools=True)``: the ``make_move`` tool schema (reset observation only)."""


class GameState(State):
    """``episode_id``, ``step_count`` (model replies), the task row and the trajectory."""

    task: dict[str, Any] | None = None
    trajectory: dict[str, Any] | None = None


class GameEnvironment(Environment[GameAction, GameObservation, GameState]):
    """One ``core.Episode`` per session; no game logic here."""

    # rosetta: session: one `GameEnvironment` per WebSocket session (up to `max_concurrent_envs`)
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, game: str = "tictactoe", live: set[Any] | None = None) -> None:
        super().__init__()
        self.default_game = game
        self.episode: Episode | None = None
        self.episode_id: str | None = None
        self.closed = False
        self._live = live  # the app's open environments (GET /sessions counts them)
        if live is not None:
            live.add(self)

    def close(self) -> None:
        """OpenEnv calls this on disconnect and when the idle reaper expires the session:
        the game is released; later messages on a still-open socket get an error."""
        self.closed, self.episode = True, None
        if self._live is not None:
            self._live.discard(self)

    def _check_open(self) -> None:
        if self.closed:
            raise SessionClosedError(
                "this session was closed (idle longer than the server's session timeout, "
                "or the server is shutting down): open a new connection"
            )

    # rosetta: reset: `reset(seed, episode_id, task=row)` -> `GameObservation`
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task: dict[str, Any] | None = None,
        tools: bool = False,
        **fields: Any,
    ) -> GameObservation:
        """Start ``task`` (a ``Task.to_dict()`` row), or the default game with
        ``seed`` and any other task ``fields``. ``tools``: the model will move by
        ``make_move`` tool call (``GameAction(move=...)``); the reset observation then
        carries core's tool system prompt and the tool schema."""
        self._check_open()
        if task is not None and fields:
            raise ResetArgumentsError(
                f"pass a task row or task fields, not both (got {sorted(fields)})"
            )
        row = (
            dict(task)
            if task is not None
            else {"game": self.default_game, **({} if seed is None else {"seed": seed}), **fields}
        )
        self.episode = Episode(Task.from_dict(row))  # strict: an unknown field is an error
        self.episode_id = episode_id or uuid.uuid4().hex
        obs = self._observe(self.episode, self.episode.reset(), {})
        ep = self.episode
        obs.system_prompt = ep.tool_system_prompt if tools else ep.system_prompt
        obs.tools = [ep.tool_schema] if tools else None
        return obs

    # rosetta: step: `step(GameAction)` -> `GameObservation`
    def step(
        self, action: GameAction, timeout_s: float | None = None, **kwargs: Any
    ) -> GameObservation:
        self._check_open()
        if self.episode is None:
            raise EpisodeNotStartedError("call reset() before step()")
        if action.stop:
            result = self.episode.settle()
        elif action.reply is not None:
            result = self.episode.step(_unicode(action.reply))
        else:
            result = self.episode.step_tool(_unicode(action.tool_arguments()))
        return self._observe(self.episode, result.observation, result.info, result.reward)

    # rosetta: reward: `obs.reward` (the total, on the final observation) and `obs.reward_breakdown`
    # rosetta: termination: `obs.done`
    # rosetta: truncation: no flag: `done` with `info["termination"] == "turn_cap"`
    @staticmethod
    def _observe(
        ep: Episode,
        text: str,
        info: dict[str, Any],
        reward: float = 0.0,
    ) -> GameObservation:
        legal = (
            None
            if ep.done or not ep.game.spec.list_legal_moves
            else list(ep.game.legal_moves_text(ep.state))
        )
        return GameObservation(
            text=text,
            legal_moves=legal,
            info=info,
            done=ep.done,
            reward=reward,
            reward_breakdown=ep.reward().to_dict() if ep.done else None,
        )

    # rosetta: state: the `state` property: `GameState(task, trajectory)`
    @property
    def state(self) -> GameState:
        ep = self.episode
        return GameState(
            episode_id=self.episode_id,
            step_count=0 if ep is None else len(ep.events),
            task=None if ep is None else ep.task.to_dict(),
            trajectory=None if ep is None else ep.to_dict(),
        )


# rosetta: registration: none: `create_app(factory, GameAction, GameObservation)`, served by `python -m adapters.openenv`
# rosetta: transport: HTTP + WebSocket server (`/ws`; plain HTTP `/reset` and `/step` are stateless)
def create_game_app(
    game: str = "tictactoe",
    max_sessions: int = 64,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Any:
    """The FastAPI app (``/ws`` sessions, ``/health``, ``/schema``, ``/sessions``, ...).

    Idle sessions close after ``session_timeout_s`` (``None``: never; OpenEnv's reaper
    checks every ``max(timeout / 4, 5)`` s). HTTP bodies over ``max_body_bytes`` get a
    413; core's typed errors on the stateless HTTP routes get a 4xx, not a 500."""
    live: set[GameEnvironment] = set()
    factory = functools.partial(GameEnvironment, game=game, live=live)
    config = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout_s)
    app = create_app(factory, GameAction, GameObservation, concurrency_config=config)
    app.add_middleware(BodyLimitMiddleware, max_body_bytes=max_body_bytes)

    async def task_error(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    async def episode_error(_: Request, exc: Exception) -> JSONResponse:
        hint = " (plain HTTP /reset and /step are stateless: play over the /ws WebSocket)"
        return JSONResponse({"detail": f"{exc}{hint}"}, status_code=409)

    app.add_exception_handler(TaskError, task_error)
    app.add_exception_handler(EpisodeError, episode_error)

    def sessions() -> dict[str, Any]:
        """Read-only: open games (WebSocket sessions) now, the cap and the idle timeout."""
        return {"active": len(live), "max": max_sessions, "idle_timeout_s": session_timeout_s}

    app.add_api_route("/sessions", sessions, methods=["GET"])

    return app


# rosetta: rollout: the client loops `reset()` / `step(GameAction)` until `done` (rollouts/drivers/openenv.py)
class GameEnvClient(EnvClient[GameAction, GameObservation, GameState]):
    """The WebSocket client (async; ``.sync()`` for a blocking one)."""

    def _step_payload(self, action: GameAction) -> dict[str, Any]:
        # exclude_unset, not exclude_none: `arguments=None` is a tool call with null arguments.
        return action.model_dump(exclude_unset=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GameObservation]:
        obs = GameObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(observation=obs, reward=obs.reward, done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> GameState:
        return GameState(**payload)
