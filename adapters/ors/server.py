"""The ORS server app: openreward's own ``Server([GameBridge]).app``, plus the limits
every gamebridge server has.

* 413 over ``max_body_bytes`` and 400 for a lone UTF-16 surrogate
  (``adapters._asgi.BodyLimitMiddleware``, shared with the other servers);
* ``POST /create`` over ``max_sessions`` live sessions: 429; with a
  ``toolset_name``: 400 (openreward's built-in toolsets add shell, file and web
  tools: none belongs on a game server); a malformed ``X-Secrets`` header: 400
  (openreward's decoder raised, a 500);
* a task row core refuses (``TaskError``): 422, not a 500;
* idle sessions (no ``/ping``, no call, nothing running) deleted after
  ``session_timeout_s`` (openreward's own reaper also runs, at 900 s, so that is
  the longest timeout);
* ``GET /sessions``: read-only, live sessions, the cap and the idle timeout;
* tool results re-cut so that no SSE chunk begins with a space (openreward's
  client strips it: see ``_space_safe``; the cut is ``adapters._asgi.sse_chunks``);
  the idle reaper runs in the app's lifespan (``SessionStore.reaping``).

openreward's session table is private (``Server._active_envs`` and friends):
this module reads it for the cap and the count and deletes idle sessions with its
``_delete_session``; tests/adapters/test_ors.py pins that against 0.1.167.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
from collections.abc import AsyncIterator
from typing import Any

from adapters._lazy import needs

os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")  # never ask PyPI

with needs("adapters.ors", "openreward 0.1.167", "ors"):
    from fastapi import FastAPI
    from openreward.environments import Server
    from openreward.environments import server as ors_server

from adapters._asgi import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    harden,
    refuse,
    replay,
    send_json,
    sse_chunks,
)
from adapters._sessions import SessionStore
from adapters.ors.env import GameBridge
from core.tasks import TaskError

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""As the OpenEnv server: a long reply still fits after JSON escaping."""
DEFAULT_MAX_SESSIONS = 256
ORS_REAPER_S = 900.0
"""openreward's own idle reaper (``reaper_coro``'s ``stale_threshold``), always on."""
DEFAULT_SESSION_TIMEOUT_S = ORS_REAPER_S
REAPER_INTERVAL_S = 1.0


class SessionLimits:
    """The ``POST /create`` checks and ``GET /sessions`` (pure ASGI, after the body
    limit, so the body is read in full and small)."""

    def __init__(self, app: ASGIApp, store: SessionStore[Any]) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        if path == "/sessions" and method == "GET":
            await send_json(send, 200, self.store.stats())
            return
        if path != "/create" or method != "POST":
            await self.app(scope, receive, send)
            return
        message = await receive()  # BodyLimitMiddleware replays the whole body at once
        problem = _secrets_problem(dict(scope.get("headers") or []).get(b"x-secrets"))
        if problem is None:
            problem = _toolset_problem(message.get("body", b""))
        if problem is not None:
            await refuse(send, 400, problem)
            return
        if self.store.full():
            await refuse(send, 429, self.store.full_message())
            return
        await self.app(scope, replay(message, receive), send)


def _secrets_problem(header: bytes | None) -> str | None:
    """Why openreward's ``X-Secrets`` decoder would fail on ``header`` (None: it would not)."""
    if not header:
        return None
    try:
        payload = json.loads(base64.b64decode(header, validate=True))
        if isinstance(payload, dict) and all(
            isinstance(v, dict) and "value" in v for v in payload.values()
        ):
            return None
    except (binascii.Error, ValueError):
        pass
    return 'X-Secrets must be base64 of a JSON object {"name": {"value": ...}}'


def _toolset_problem(body: bytes) -> str | None:
    try:
        request = json.loads(body)
    except ValueError:  # the route's own validation answers 422
        return None
    if isinstance(request, dict) and request.get("toolset_name") is not None:
        return "this server offers no toolsets (toolset_name must be absent)"
    return None


def _space_safe(stream: Any) -> Any:
    """openreward's ``sse_task_stream`` with its result re-cut so that no chunk begins
    with a space. openreward 0.1.167 cuts a tool result into 4096-character SSE
    ``chunk`` events, and its client ``lstrip()``s every data line (the SSE spec drops
    one space, no more): a chunk that began with a space lost it, and a board in the
    trajectory came back changed (``place;Y`` for ``place; Y``)."""

    async def stream_safe(*args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        parts: list[str] = []
        async for event in stream(*args, **kwargs):
            if event.get("event") not in ("chunk", "end"):
                yield event
                continue
            parts.append(event["data"])
            if event["event"] == "end":
                *chunks, end = sse_chunks("".join(parts), CHUNK)
                for chunk in chunks:
                    yield {"event": "chunk", "data": chunk}
                yield {"event": "end", "data": end}

    return stream_safe


CHUNK = 4096


# rosetta: session: openreward's own session table, seen through `adapters._sessions.SessionStore` (cap, idle expiry, stats)
def _store(server: Server, max_sessions: int, timeout_s: float) -> SessionStore[Any]:
    """openreward's tables as a store: a session is busy while its setup or a tool
    call runs; idle past ``timeout_s`` openreward's own ``_delete_session`` ends it."""

    def busy(sid: str, env: Any) -> bool:
        setup = server._setup_tasks.get(sid)
        return (setup is not None and not setup.done()) or bool(getattr(env, "busy", 0))

    tables = {"values": server._active_envs, "seen": server._last_ping}
    return SessionStore(max_sessions, timeout_s, busy=busy, release="delete some", **tables)


async def _reap(server: Server, store: SessionStore[Any]) -> None:
    """Delete sessions idle longer than the timeout (as openreward's reaper does at 900 s)."""
    for sid in store.idle():
        await ors_server._delete_session(
            sid,
            server._active_envs,
            server._active_toolsets,
            server._last_ping,
            server._setup_tasks,
            server._ready,
            server._setup_errors,
        )


# rosetta: packaging: `python -m adapters.ors` serves openreward's own app (what `Server([GameBridge]).run()` would, with the limits); the `ors` extra
# rosetta: transport: HTTP + server-sent events (openreward's FastAPI `Server`), uvicorn on 127.0.0.1
def create_app(
    env_cls: type[GameBridge] = GameBridge,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """openreward's app for ``env_cls``, with the limits above."""
    if not 0 < session_timeout_s <= ORS_REAPER_S:
        raise ValueError(
            f"session_timeout_s must be in (0, {ORS_REAPER_S:g}] (openreward's own reaper "
            f"deletes idle sessions at {ORS_REAPER_S:g} s), got {session_timeout_s!r}"
        )
    if not getattr(ors_server.sse_task_stream, "gamebridge_space_safe", False):
        ors_server.sse_task_stream = _space_safe(ors_server.sse_task_stream)
        ors_server.sse_task_stream.gamebridge_space_safe = True
    server = Server([env_cls], return_errors="exception")
    app: FastAPI = server.app

    store = _store(server, max_sessions, session_timeout_s)
    app.add_middleware(SessionLimits, store=store)  # inside the body limit: it serves /sessions
    harden(app, {TaskError: 422}, max_body_bytes=max_body_bytes)

    interval = min(REAPER_INTERVAL_S, session_timeout_s / 4)
    reap = functools.partial(_reap, server, store)
    app.router.lifespan_context = store.reaping(app.router.lifespan_context, interval, reap)
    app.state.ors_server = server
    return app
