"""core.Episode in OpenEnv's vocabulary: an ``Environment`` (one Episode per
WebSocket session) with the ``make_move`` MCP tool and real ``/metadata``, and the
FastAPI app (the typed messages are in ``models``, the client in ``client``). Every
game is served: ``reset(task=row)`` names it (or ``reset(seed=..., **fields)`` with
the server's default game)."""

from __future__ import annotations

import functools
import inspect
import sys
import uuid
from typing import Any

from adapters._lazy import needs

with needs("adapters.openenv", "OpenEnv (openenv 0.10, or openenv-core 0.3)", "openenv"):
    from fastmcp import FastMCP
    from fastmcp.tools import Tool
    from openenv.core.env_server import ConcurrencyConfig, Environment, create_app
    from openenv.core.env_server.types import EnvironmentMetadata

from adapters._asgi import harden
from adapters._sessions import SessionStore, play
from adapters.openenv.limits import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware
from adapters.openenv.models import GameAction, GameObservation, GameState
from core import Episode, EpisodeNotStartedError, make_game
from core.episode import EpisodeError
from core.inputs import require_unicode, task_from_arguments
from core.prompts import TOOL_NAME, tool_schema
from core.tasks import TaskError

DEFAULT_SESSION_TIMEOUT_S = 1800.0
"""Idle seconds before the server closes a WebSocket session's game (OpenEnv's default: never)."""
ENV_NAME = "gamebridge"
"""The environment's name (``openenv.yaml``, the web interface's title)."""


class SessionClosedError(EpisodeError):
    """The session's game was closed: idle past the server's session timeout, or shut down."""


@functools.cache  # one per game
def _move_tool(game: str) -> Any:
    """``make_move`` for ``game`` as a FastMCP ``Tool``, built once from the unbound
    ``GameEnvironment._make_move`` (each session copies it with ``fn`` bound to itself).

    Not from the session's bound method: FastMCP's ``Tool.from_function`` keeps the
    function it parses as the key of module-level caches (``lru_cache(maxsize=5000)``
    on ``without_injected_parameters`` in ``fastmcp/server/dependencies.py``,
    ``session_id_parameter_names`` in ``fastmcp/server/sessions.py`` and
    ``get_cached_typeadapter`` in ``fastmcp/utilities/types.py``, fastmcp 4.1), so
    every closed session's environment, FastMCP server and TypeAdapters stayed alive
    until 5,000 more sessions had pushed them out (after 2,000 abandoned sessions were
    all closed the server stayed 257 MB over its baseline, and neither ``gc.collect()``
    nor ``malloc_trim`` could give it back: tests/faults/test_openenv_sessions.py,
    ``adapters._reclaim.Reclaimer`` for the rest). ``model_copy`` parses nothing."""
    function = tool_schema(make_game(game))["function"]
    tool = Tool.from_function(
        GameEnvironment._make_move, name=TOOL_NAME, description=function["description"]
    )
    return tool.model_copy(update={"parameters": function["parameters"]})


class GameEnvironment(Environment[GameAction, GameObservation, GameState]):
    """One ``core.Episode`` per session; no game logic here."""

    # rosetta: session: one `GameEnvironment` per WebSocket session (up to `max_concurrent_envs`)
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, game: str = "tictactoe", store: SessionStore[Any] | None = None) -> None:
        super().__init__()
        self.default_game = game
        self.episode: Episode | None = None
        self.episode_id: str | None = None
        self.closed = False
        self._mcp: tuple[str, Any] | None = None  # (game, its FastMCP server), built on first use
        self._store, self._key = store, uuid.uuid4().hex  # the app's open environments
        if store is not None:
            store.add(self._key, self)

    # rosetta: tools: MCP: `/mcp` and the `/ws` `mcp` message list and call `make_move` (core's schema) on the session's game
    @property
    def mcp_server(self) -> Any:
        """The session's game's MCP server (:meth:`_tools`), built when OpenEnv's MCP
        routes first read it: most sessions never list or call a tool over MCP, and a
        FastMCP server costs ~50 µs of CPU a session."""
        game = self.default_game if self.episode is None else self.episode.task.game
        if self._mcp is None or self._mcp[0] != game:
            self._mcp = (game, self._tools(game))
        return self._mcp[1]

    def _tools(self, game: str) -> Any:
        """The MCP server OpenEnv's ``/mcp`` routes read (``tools/list``, ``tools/call``):
        one tool, ``make_move``, with core's schema for ``game``, bound to this session
        (a copy of the game's :func:`_move_tool`, so nothing global refers to it)."""
        server = FastMCP("gamebridge")
        server.add_tool(_move_tool(game).model_copy(update={"fn": self._make_move}))
        return server

    def _make_move(self, move: str) -> str:
        """The ``make_move`` tool: play ``move`` in this session's game; the next observation."""
        self._check_open()
        if self.episode is None:
            raise EpisodeNotStartedError(
                "no game in this session: start one with reset (OpenEnv's /ws session), "
                "then play it with make_move over MCP"
            )
        return self.episode.answer_tool({"move": move})  # after the end: the final observation

    # rosetta: packaging: `GET /metadata` (`get_metadata()`: the game's name, rules, module doc); `openenv.yaml` + `server/Dockerfile` at the repo root (`server.app:app`)
    def get_metadata(self) -> EnvironmentMetadata:
        game = make_game(self.default_game if self.episode is None else self.episode.task.game)
        spec = game.spec
        return EnvironmentMetadata(
            name=f"gamebridge-{spec.name}",
            description=f"{spec.title} against gamebridge's built-in opponent, one game "
            f"per session (any core game by reset(task=...)). {spec.rules}",
            readme_content=inspect.getdoc(sys.modules[type(game).__module__]),
            documentation_url="docs/openenv.md",
        )

    def close(self) -> None:
        """OpenEnv calls this on disconnect and when the idle reaper expires the session:
        the game is released; later messages on a still-open socket get an error.
        The app's store closes it (its one close path, which calls ``release``)."""
        if self._store is None or self._store.close(self._key) is None:
            self.release()

    def release(self) -> None:
        self.closed, self.episode = True, None

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
        self.episode = Episode(task_from_arguments(self.default_game, seed, task, **fields))
        self.episode_id = episode_id or uuid.uuid4().hex
        ep = self.episode
        # rosetta: agents: none: one session plays every outside seat: each observation is the seat to move's own view, `info["to_move"]` names it (the reset's `info` each seat's system prompt); the client keeps one conversation per seat
        obs = self._observe(ep, ep.reset(), ep.seat_prompts(tools=tools))
        obs.system_prompt = ep.tool_system_prompt if tools else ep.system_prompt
        obs.tools = [ep.tool_schema] if tools else None
        return obs

    # rosetta: step: `step(GameAction)` -> `GameObservation`
    def step(
        self, action: GameAction, timeout_s: float | None = None, **kwargs: Any
    ) -> GameObservation:
        self._check_open()
        ep = self.episode  # one game throughout, should the session be closed meanwhile
        if ep is None:
            raise EpisodeNotStartedError("call reset() before step()")
        if action.stop:
            result = ep.settle()
        elif action.reply is not None:
            result = ep.step(require_unicode(action.reply))
        else:
            result = ep.step_tool(require_unicode(action.tool_arguments()))
        return self._observe(ep, result.observation, result.info, result.reward)

    async def step_async(self, action: GameAction, **kwargs: Any) -> GameObservation:
        """:meth:`step`, which OpenEnv awaits (its own path runs a sync ``step`` in the
        session's worker thread, ~90 µs of a 0.5 ms Tic-Tac-Toe step): on the event loop
        unless it can wait on a search (``adapters._sessions.play``)."""
        return await play(self.episode, self.step, action, **kwargs)

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
        return GameObservation(
            text=text,
            legal_moves=ep.listed_moves,
            info=info,
            done=ep.done,
            reward=reward,
            reward_breakdown=ep.reward().to_dict() if ep.done else None,
        )

    # rosetta: state: the `state` property: `GameState(task, trajectory)`
    # rosetta: metrics: none: OpenEnv has no aggregation; `State.trajectory` and `obs.reward_breakdown` per session
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
# rosetta: config: `--game` (the default of a `reset()` without a task row); `reset(task=row)` or `reset(seed=..., **task_fields)` per session
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
    # OpenEnv's ConcurrencyConfig owns the cap and the idle reaper: the store holds the
    # open environments, their one close path and the stats.
    store: SessionStore[GameEnvironment] = SessionStore(on_close=lambda _k, env, _r: env.release())

    def factory() -> GameEnvironment:  # a function, not a partial: the web interface calls it
        return GameEnvironment(game=game, store=store)

    config = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout_s)
    app = create_app(
        factory, GameAction, GameObservation, env_name=ENV_NAME, concurrency_config=config
    )
    hint = " (plain HTTP /reset and /step are stateless: play over the /ws WebSocket)"

    def sessions() -> dict[str, Any]:
        """Read-only: open games (WebSocket sessions) now, the cap and the idle timeout."""
        return {**store.stats(), "max": max_sessions, "idle_timeout_s": session_timeout_s}

    refusals = {TaskError: 422, EpisodeError: (409, hint)}
    limits = {"max_body_bytes": max_body_bytes, "idle_timeout": session_timeout_s}
    return harden(app, refusals, sessions, BodyLimitMiddleware, **limits)
