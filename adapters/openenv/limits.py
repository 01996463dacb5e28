"""Request limits for the OpenEnv server.

``BodyLimitMiddleware`` is the shared HTTP middleware (``adapters/_asgi.py``: 413
over ``max_body_bytes``, 400 for a JSON body holding a lone UTF-16 surrogate)
plus, on the WebSocket, an error reply for a message that is JSON but not an
object, or a binary frame, keeping the session (OpenEnv's loop closed it with
``'list' object has no attribute 'get'``). A message over ``max_body_bytes`` gets an error reply
(``MESSAGE_TOO_LARGE``: that step's error) and the session goes on; uvicorn's
``ws_max_size`` (``__main__`` sets it to four times the limit) only closes a
connection (1009) for a message far beyond it.

The session lifecycle (``SessionLifecycle``, on the same middleware):

* idle past the session timeout, the connection is closed (code 4408, the reason
  says why) and so its session freed: OpenEnv's reaper frees the game but left the
  socket open (file descriptors and memory held until the client went away);
* a full server closes a new connection with code 1013 ("try again later") and
  the capacity reason, after OpenEnv's ``CAPACITY_REACHED`` error message;
* a client that went away logs one line; OpenEnv's close path, which closes a
  socket already closed, is kept from logging a traceback each time;
* once no session has ended for ``RECLAIM_QUIET_S`` seconds, the memory the ended
  sessions held is handed back (``adapters._reclaim.Reclaimer``: what keeps it, and the figures).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from adapters._asgi import ASGIApp, Message, Receive, Scope, Send
from adapters._asgi import BodyLimitMiddleware as _BodyLimit
from adapters._reclaim import Reclaimer

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body or WebSocket message: uvicorn's own WebSocket default, so a
long reply still fits after JSON escaping (up to 6 bytes a character)."""
WS_HARD_LIMIT_FACTOR = 4
"""uvicorn's ``ws_max_size`` is this many times the limit: a message between the two
gets an error reply, not a closed connection."""
IDLE_CLOSE_CODE = 4408
CAPACITY_CLOSE_CODE = 1013

log = logging.getLogger("adapters.openenv")


def _objects_only(receive: Receive, send: Send, max_bytes: int | None = None) -> Receive:
    """A WebSocket ``receive`` that answers non-object JSON, binary frames and
    messages over ``max_bytes`` itself."""

    async def checked() -> Message:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            text = message.get("text")
            if text is not None and max_bytes is not None and len(text) > max_bytes // 6:
                size = len(text.encode("utf-8", "surrogatepass"))
                if size > max_bytes:
                    problem = (
                        f"a message of {size} bytes is over the server's limit of "
                        f"{max_bytes} bytes: refused, the session goes on"
                    )
                    error = {
                        "type": "error",
                        "data": {"message": problem, "code": "MESSAGE_TOO_LARGE"},
                    }
                    await send({"type": "websocket.send", "text": json.dumps(error)})
                    continue
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


class _Connection:
    """One WebSocket connection's lifecycle: idle close, capacity close, quiet ends."""

    def __init__(self, receive: Receive, send: Send, idle_timeout: float | None) -> None:
        self._receive = receive
        self._send = send
        self.idle_timeout = idle_timeout
        self.last = time.monotonic()
        self.closed = asyncio.Event()
        self.client_gone = False
        self.close_sent = False
        self.busy = False
        """A message was received and not answered yet: the session is working (a deep
        search can take seconds), not idle."""

    async def receive(self) -> Message:
        if self.closed.is_set():
            return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
        inner = asyncio.ensure_future(self._receive())
        closer = asyncio.ensure_future(self.closed.wait())
        done, _ = await asyncio.wait({inner, closer}, return_when=asyncio.FIRST_COMPLETED)
        if inner in done:
            closer.cancel()
            message = inner.result()
            self.last = time.monotonic()
            if message["type"] == "websocket.disconnect":
                self.client_gone = True
            elif message["type"] == "websocket.receive":
                self.busy = True
            return message
        inner.cancel()
        return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "websocket.close":
            if self.client_gone or self.close_sent:
                return  # already closed: OpenEnv's close path would raise (a traceback)
            self.close_sent = True
        elif self.client_gone or self.close_sent:
            return  # nobody to send to
        self.last = time.monotonic()
        self.busy = False
        await self._send(message)
        text = message.get("text") or ""
        if kind == "websocket.send" and '"CAPACITY_REACHED"' in text:
            reason = "server at capacity"
            with contextlib.suppress(ValueError, KeyError, TypeError):
                reason = str(json.loads(text)["data"]["message"])
            await self.close(CAPACITY_CLOSE_CODE, reason)

    async def close(self, code: int, reason: str) -> None:
        if not self.close_sent and not self.client_gone:
            self.close_sent = True
            await self._send({"type": "websocket.close", "code": code, "reason": reason[:120]})
        self.closed.set()

    async def watch_idle(self) -> None:
        timeout = self.idle_timeout
        if timeout is None:
            return
        interval = max(timeout / 4, 5.0)  # OpenEnv's own reaper's period
        while not self.closed.is_set():
            await asyncio.sleep(interval)
            idle = time.monotonic() - self.last
            if idle > timeout and not self.busy:
                log.warning("closing a WebSocket session idle for %.0f s", idle)
                await self.close(
                    IDLE_CLOSE_CODE,
                    f"idle longer than the session timeout ({timeout:g} s): reconnect",
                )
                return


class BodyLimitMiddleware(_BodyLimit):
    """HTTP: 413 over ``max_body_bytes``, 400 for lone surrogates. WebSocket: an error
    reply for a non-object, binary or oversize message; the session lifecycle above
    (``idle_timeout``: seconds, ``None`` for never)."""

    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        idle_timeout: float | None = None,
    ) -> None:
        super().__init__(app, max_body_bytes)
        self.idle_timeout = idle_timeout
        self.reclaimer = Reclaimer()

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        conn = _Connection(receive, send, self.idle_timeout)
        watcher = asyncio.ensure_future(conn.watch_idle())
        try:
            await self.app(
                scope, _objects_only(conn.receive, conn.send, self.max_body_bytes), conn.send
            )
        except Exception as e:
            if not (conn.client_gone or conn.close_sent):
                raise
            # The client went away (or we closed an idle session): routine, one line.
            log.warning("WebSocket session ended: %s: %s", type(e).__name__, e)
        finally:
            watcher.cancel()
            self.reclaimer.session_ended()
