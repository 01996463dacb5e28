"""Request limits for the OpenEnv server.

``BodyLimitMiddleware`` is the shared HTTP middleware (``adapters/_asgi.py``: 413
over ``max_body_bytes``, 400 for a JSON body holding a lone UTF-16 surrogate)
plus, on the WebSocket, an error reply for a message that is JSON but not an
object, or a binary frame, keeping the session (OpenEnv's loop closed it with
``'list' object has no attribute 'get'``). Messages are capped by uvicorn's
``ws_max_size`` (``__main__`` sets it to the same limit): an oversize message
closes the connection with code 1009.
"""

from __future__ import annotations

import json

from adapters._asgi import ASGIApp, Message, Receive, Scope, Send
from adapters._asgi import BodyLimitMiddleware as _BodyLimit

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body or WebSocket message: uvicorn's own WebSocket default, so a
long reply still fits after JSON escaping (up to 6 bytes a character)."""


def _objects_only(receive: Receive, send: Send) -> Receive:
    """A WebSocket ``receive`` that answers non-object JSON and binary frames itself."""

    async def checked() -> Message:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            text = message.get("text")
            if text is not None:
                if text.lstrip()[:1] == "{":
                    return message
                try:
                    kind = type(json.loads(text)).__name__
                except ValueError:  # not JSON: OpenEnv answers INVALID_JSON itself
                    return message
                problem = f"a message must be a JSON object, not {kind}"
            else:
                problem = "a message must be a text frame holding a JSON object"
            error = {"type": "error", "data": {"message": problem, "code": "INVALID_JSON"}}
            await send({"type": "websocket.send", "text": json.dumps(error)})

    return checked


class BodyLimitMiddleware(_BodyLimit):
    """HTTP: 413 over ``max_body_bytes``, 400 for lone surrogates. WebSocket: an error
    reply for a non-object or binary message."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        super().__init__(app, max_body_bytes)

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, _objects_only(receive, send), send)
