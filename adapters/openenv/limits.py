"""Request limits for the OpenEnv server, in OpenEnv's words.

The checks and the session lifecycle are the shared ``adapters._websocket.
WebSocketLimits`` (HTTP: 413 over ``max_body_bytes``, 400 for a lone UTF-16
surrogate; WebSocket: refusals that keep the session, the idle close with code 4408,
quiet ends, the memory handed back). What is OpenEnv's:

* a refused message is answered as OpenEnv answers a bad one, ``{"type": "error",
  "data": {"message", "code"}}``: ``MESSAGE_TOO_LARGE`` (that step's error) or
  ``INVALID_JSON`` (JSON but not an object, or a binary frame: OpenEnv's loop closed
  the session with ``'list' object has no attribute 'get'``);
* a full server's ``CAPACITY_REACHED`` error message is followed by a close with
  code 1013 ("try again later") and its reason (OpenEnv left the socket open and
  the client saw only a normal close);
* uvicorn's ``ws_max_size`` (``__main__`` sets it to ``WS_HARD_LIMIT_FACTOR`` times
  the limit) only closes a connection (1009) for a message far beyond it;
* OpenEnv's close path closes a socket already closed: the shared connection drops
  that second close (it raised, a traceback each time).
"""

from __future__ import annotations

import contextlib
import json
import logging

from adapters._websocket import TOO_LARGE, WebSocketLimits

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body or WebSocket message: uvicorn's own WebSocket default, so a
long reply still fits after JSON escaping (up to 6 bytes a character)."""
WS_HARD_LIMIT_FACTOR = 4
"""uvicorn's ``ws_max_size`` is this many times the limit: a message between the two
gets an error reply, not a closed connection."""
CAPACITY_CLOSE_CODE = 1013


class BodyLimitMiddleware(WebSocketLimits):
    """``WebSocketLimits`` answering in OpenEnv's error messages."""

    log = logging.getLogger("adapters.openenv")

    def error_frame(self, kind: str, problem: str) -> str:
        code = "MESSAGE_TOO_LARGE" if kind == TOO_LARGE else "INVALID_JSON"
        return json.dumps({"type": "error", "data": {"message": problem, "code": code}})

    def closing_frame(self, text: str) -> tuple[int, str] | None:
        if '"CAPACITY_REACHED"' not in text:
            return None
        reason = "server at capacity"
        with contextlib.suppress(ValueError, KeyError, TypeError):
            reason = str(json.loads(text)["data"]["message"])
        return CAPACITY_CLOSE_CODE, reason
