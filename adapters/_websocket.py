"""A WebSocket server's session lifecycle and message checks (pure ASGI, standard
library only).

Not an adapter: framework-free plumbing for any server whose sessions live on a
WebSocket (today OpenEnv's: ``adapters/openenv/limits.py`` says how its protocol
words the replies). ``WebSocketLimits`` is ``adapters._asgi.BodyLimitMiddleware``
(HTTP: 413, 400 for lone surrogates) plus, on each WebSocket connection:

* a message that is JSON but not an object, or nests deeper than
  ``adapters._asgi.MAX_JSON_DEPTH``, or a binary frame, gets an error reply
  (:meth:`WebSocketLimits.error_frame`) and the session goes on; JSON that does not
  parse goes through (the framework answers it);
* a message over ``max_body_bytes`` gets an error reply and the session goes on
  (the server's own hard limit, e.g. uvicorn's ``ws_max_size``, only closes a
  connection for a message far beyond it);
* idle past ``idle_timeout`` (nothing received or sent, no message being answered),
  the connection is closed with code 4408 and a reason saying why, so its session
  is freed (a reaper that frees the game but leaves the socket open keeps file
  descriptors and memory until the client goes away);
* a message after which the framework's session is over
  (:meth:`WebSocketLimits.closing_frame`: a capacity refusal, say) closes the
  connection with the code and reason it gives;
* a client that went away logs one line; a second close of a closed socket (some
  frameworks' close paths do that, raising, a traceback each time) is dropped;
* every connection's end is reported to ``adapters._reclaim.Reclaimer``, which hands
  the ended sessions' memory back once the server goes quiet.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from adapters._asgi import (
    MAX_JSON_DEPTH,
    ASGIApp,
    BodyLimitMiddleware,
    Message,
    Receive,
    Scope,
    Send,
    non_finite,
    too_deep,
)
from adapters._reclaim import Reclaimer

IDLE_CLOSE_CODE = 4408
"""The close code of an idle session (an application code: 4000 + HTTP 408)."""
TOO_LARGE = "too_large"
NOT_OBJECT = "not_object"
"""The ``kind`` handed to :meth:`WebSocketLimits.error_frame` for each refusal."""


class Connection:
    """One WebSocket connection's lifecycle: idle close, closing after a framework's
    last word, quiet ends. ``receive`` and ``send`` wrap the server's."""

    def __init__(
        self, receive: Receive, send: Send, limits: WebSocketLimits, idle: float | None
    ) -> None:
        self._receive, self._send, self._limits = receive, send, limits
        self.idle_timeout = idle
        self.last = time.monotonic()
        self.closed = asyncio.Event()
        self.client_gone = False
        self.close_sent = False
        self.busy = False
        """A message was received and not answered yet: the session is working (a deep
        search can take seconds), not idle."""
        self._waiting: asyncio.Future[Message] | None = None

    async def receive(self) -> Message:
        """The server's next message; a disconnect once :meth:`close` has run (a wait
        under way is cancelled: one task a message, not a race of two, ~9 µs less)."""
        if self.closed.is_set():
            return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
        self._waiting = inner = asyncio.ensure_future(self._receive())
        try:
            message = await inner
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.closed.is_set() and not (task is not None and task.cancelling()):
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
            raise  # the app itself was cancelled
        finally:
            self._waiting = None
        self.last = time.monotonic()
        if message["type"] == "websocket.disconnect":
            self.client_gone = True
        elif message["type"] == "websocket.receive":
            self.busy = True
        return message

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "websocket.close":
            if self.client_gone or self.close_sent:
                return  # already closed: a second close would raise (a traceback)
            self.close_sent = True
        elif self.client_gone or self.close_sent:
            return  # nobody to send to
        self.last = time.monotonic()
        self.busy = False
        await self._send(message)
        if kind == "websocket.send":
            closing = self._limits.closing_frame(message.get("text") or "")
            if closing is not None:
                await self.close(*closing)

    async def close(self, code: int, reason: str) -> None:
        if not self.close_sent and not self.client_gone:
            self.close_sent = True
            await self._send({"type": "websocket.close", "code": code, "reason": reason[:120]})
        self.closed.set()
        if self._waiting is not None:
            self._waiting.cancel()  # its receive() answers the disconnect

    async def watch_idle(self) -> None:
        timeout = self.idle_timeout
        if timeout is None:
            return
        interval = max(timeout / 4, 5.0)  # OpenEnv's own reaper's period
        while not self.closed.is_set():
            await asyncio.sleep(interval)
            idle = time.monotonic() - self.last
            if idle > timeout and not self.busy:
                self._limits.log.warning("closing a WebSocket session idle for %.0f s", idle)
                await self.close(
                    IDLE_CLOSE_CODE,
                    f"idle longer than the session timeout ({timeout:g} s): reconnect",
                )
                return


def objects_only(receive: Receive, send: Send, limits: WebSocketLimits) -> Receive:
    """A WebSocket ``receive`` that answers non-object JSON, binary frames and
    messages over ``limits.max_body_bytes`` itself (``limits.error_frame``)."""
    max_bytes = limits.max_body_bytes

    async def refuse(kind: str, problem: str) -> None:
        await send({"type": "websocket.send", "text": limits.error_frame(kind, problem)})

    async def checked() -> Message:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return message
            text = message.get("text")
            if text is not None and len(text) > max_bytes // 6:
                size = len(text.encode("utf-8", "surrogatepass"))
                if size > max_bytes:
                    await refuse(
                        TOO_LARGE,
                        f"a message of {size} bytes is over the server's limit of "
                        f"{max_bytes} bytes: refused, the session goes on",
                    )
                    continue
            if text is not None and too_deep(text.encode("utf-8", "surrogatepass")):
                await refuse(
                    NOT_OBJECT,
                    f"a message must nest arrays and objects at most {MAX_JSON_DEPTH} deep",
                )
                continue
            if text is not None and non_finite(text.encode("utf-8", "surrogatepass")):
                await refuse(NOT_OBJECT, "a message must not hold NaN, Infinity or 1e999")
                continue
            if text is not None:
                if text.lstrip()[:1] == "{":
                    return message
                try:
                    kind = type(json.loads(text)).__name__
                except ValueError:  # not JSON: the framework answers that itself
                    return message
                await refuse(NOT_OBJECT, f"a message must be a JSON object, not {kind}")
            else:
                await refuse(NOT_OBJECT, "a message must be a text frame holding a JSON object")

    return checked


class WebSocketLimits(BodyLimitMiddleware):
    """HTTP: 413 over ``max_body_bytes``, 400 for lone surrogates. WebSocket: the
    checks and the lifecycle above (``idle_timeout``: seconds, ``None`` for never).
    A framework's subclass words the replies (:meth:`error_frame`) and names the
    messages after which it closes (:meth:`closing_frame`)."""

    log = logging.getLogger("adapters.websocket")

    def __init__(
        self, app: ASGIApp, max_body_bytes: int, idle_timeout: float | None = None
    ) -> None:
        super().__init__(app, max_body_bytes)
        self.idle_timeout = idle_timeout
        self.reclaimer = Reclaimer()

    def error_frame(self, kind: str, problem: str) -> str:
        """The text frame refusing a message (``kind``: ``TOO_LARGE``, ``NOT_OBJECT``)."""
        return json.dumps({"error": problem, "code": kind})

    def closing_frame(self, text: str) -> tuple[int, str] | None:
        """``(code, reason)`` when the server's text frame ``text`` ends the session
        and the connection should close after it; ``None`` (the default) otherwise."""
        return None

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        conn = Connection(receive, send, self, self.idle_timeout)
        watcher = asyncio.ensure_future(conn.watch_idle())
        try:
            await self.app(scope, objects_only(conn.receive, conn.send, self), conn.send)
        except Exception as e:
            if not (conn.client_gone or conn.close_sent):
                raise
            # The client went away (or we closed an idle session): routine, one line.
            self.log.warning("WebSocket session ended: %s: %s", type(e).__name__, e)
        finally:
            watcher.cancel()
            self.reclaimer.session_ended()
