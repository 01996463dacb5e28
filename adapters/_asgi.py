"""Request limits for the server adapters (pure ASGI, standard library only).

Not an adapter: framework-free plumbing that the OpenEnv, NeMo Gym and ORS servers
share (adapters never import each other; modules named ``adapters._*`` are
shared helpers that import nothing but the standard library).

``BodyLimitMiddleware`` answers, before the app sees the request:

* 413 for a body over ``max_body_bytes`` (declared or streamed);
* 400 for a JSON body holding a lone UTF-16 surrogate (``"\\ud800"``): not valid
  Unicode, so no reply could echo it as UTF-8 JSON (FastAPI's encoder raised, a 500);
* 400 for a body nesting arrays or objects deeper than :data:`MAX_JSON_DEPTH`
  (:func:`too_deep`, before any parser runs: Python's ``json`` raised
  ``RecursionError`` on 100,000 nested ``[``, a 500);
* 400 for ``NaN``, ``Infinity`` or ``1e999`` in a body (:func:`non_finite`: Python
  reads them, no JSON reply can carry them back: FastAPI's error reply raised, a 500).

Also: ``harden`` (every server's limits on its framework's app, in one call),
``send_json`` (a whole JSON response), ``refusal`` (an exception handler
answering ``{"detail": ...}`` with a status), ``replay`` (hand on a request read whole)
and ``sse_chunks`` (a text cut into server-sent events no client can strip).
"""

from __future__ import annotations

import array
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from itertools import accumulate
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""An opener as +1, a closer as -1 (signed bytes)."""

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a request body may have (every server).
A chat request, a task row or a tool call nests a handful of levels."""


def too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body`` nests ``[``/``{`` deeper than ``limit`` (strings ignored),
    decided without parsing: the brackets outside strings as +1/-1 signed bytes, the
    deepest running sum (C loops: under 1 s for 16 MB of brackets, none for a body with
    few of them). An unclosed ``[`` counts as a level, as a parser recurses into it.

    >>> too_deep(b'{"a": [[1], "[[[\\\\"[["]}', limit=3), too_deep(b"[" * 100_000)
    (False, True)
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    steps = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS).translate(_STEPS)
    return max(accumulate(array.array("b", steps)), default=0) > limit


_NON_FINITE_HINT = re.compile(rb"NaN|Infinity|[0-9][eE]\+?[0-9]{3}")


class _NotFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotFinite(text)
    return value


def non_finite(body: bytes) -> bool:
    """Whether a JSON body holds ``NaN``, ``Infinity`` or a number no float holds
    (``1e999``): Python's ``json`` reads them, but no JSON reply can echo them back
    (FastAPI's error reply raised, a 500). Parsed only when such a token appears.

    >>> non_finite(b'{"seed": NaN}'), non_finite(b'{"seed": 1e999}'), non_finite(b'{"a": "NaN"}')
    (True, True, False)
    """
    if not _NON_FINITE_HINT.search(body):
        return False
    try:
        json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotFinite:
        return True
    except ValueError:  # not JSON at all: the app's own 4xx says so
        return False
    return False


def has_lone_surrogate(body: bytes) -> bool:
    """Whether a JSON body decodes to text with an unpaired surrogate."""
    if not _SURROGATE_ESCAPE.search(body):
        return False
    try:
        json.dumps(json.loads(body), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except ValueError:  # not JSON at all: the app's own 4xx says so
        return False
    return False


async def refuse(send: Send, status: int, message: str) -> None:
    await send_json(send, status, {"detail": message})


def refusal(status: int, hint: str = "") -> Callable[[Any, Exception], Awaitable[ASGIApp]]:
    """An exception handler for Starlette's ``app.add_exception_handler(error, ...)``:
    ``{"detail": "<the error><hint>"}`` with ``status``, the bytes Starlette's
    ``JSONResponse`` writes (compact UTF-8 JSON). Starlette sends whatever ASGI app the
    handler returns, so no Starlette import is needed here."""

    async def handler(_request: Any, exc: Exception) -> ASGIApp:
        payload = {"detail": f"{exc}{hint}"}
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        body = text.encode("utf-8")

        async def respond(_scope: Scope, _receive: Receive, send: Send) -> None:
            await _send_body(send, status, body)

        return respond

    return handler


async def send_json(send: Send, status: int, payload: object) -> None:
    """A whole JSON response, sent straight through ASGI ``send``."""
    await _send_body(send, status, json.dumps(payload).encode())


async def _send_body(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """413 over ``max_body_bytes``, 400 for lone surrogates, on HTTP requests; other
    scopes go to ``websocket`` (WebSocket) or straight through. A subclass may
    override :meth:`refuse` to answer in its own error format."""

    TOO_BIG = "body_too_large"
    SURROGATE = "lone_surrogate"
    TOO_DEEP = "too_deep"
    NOT_FINITE = "not_finite"
    """The ``code`` handed to :meth:`refuse` for each refusal."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def refuse(self, send: Send, status: int, message: str, code: str) -> None:
        """Answer a refused request (default: ``{"detail": message}``)."""
        await refuse(send, status, message)

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket connection: passed through (a subclass may filter messages)."""
        await self.app(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self.websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        too_big = f"request body exceeds the limit of {limit} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await self.refuse(send, 413, too_big, self.TOO_BIG)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self.refuse(send, 413, too_big, self.TOO_BIG)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        if too_deep(body):
            await self.refuse(
                send,
                400,
                f"the JSON body nests arrays or objects deeper than {MAX_JSON_DEPTH} levels",
                self.TOO_DEEP,
            )
            return
        if non_finite(body):
            await self.refuse(
                send,
                400,
                "the JSON body holds NaN, Infinity or a number beyond a float (not JSON)",
                self.NOT_FINITE,
            )
            return
        if has_lone_surrogate(body):
            await self.refuse(
                send,
                400,
                "the JSON body holds a lone UTF-16 surrogate (not Unicode)",
                self.SURROGATE,
            )
            return
        message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, replay(message, receive), send)


def harden(
    app: Any,
    refusals: Mapping[type[BaseException], int | tuple[int, str]],
    sessions: Callable[[], Any] | None = None,
    limits: type[BodyLimitMiddleware] = BodyLimitMiddleware,
    **options: Any,
) -> Any:
    """A gamebridge server's limits on its framework's (Starlette) ``app``: each error
    of ``refusals`` answered with its status (or status and hint, :func:`refusal`),
    ``GET /sessions`` from ``sessions`` (read-only: the store's stats), and ``limits``
    (:class:`BodyLimitMiddleware` or a subclass, given ``options``) added last, so it
    is outermost and sees every request first."""
    for error, answer in refusals.items():
        status, hint = answer if isinstance(answer, tuple) else (answer, "")
        app.add_exception_handler(error, refusal(status, hint))
    if sessions is not None:
        app.add_api_route("/sessions", sessions, methods=["GET"])
    app.add_middleware(limits, **options)
    return app


def replay(message: Message, receive: Receive) -> Receive:
    """A ``receive`` that first gives ``message`` (a request already read whole, e.g.
    to check it), then whatever ``receive`` gives."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return message
        return await receive()

    return replayed


def sse_chunks(text: str, size: int) -> Iterator[str]:
    """``text`` cut into pieces of at most ``size`` characters (one per server-sent
    event), none beginning with a space or a tab: a client may strip more than the
    one space after ``data:`` that the SSE spec drops, and a piece beginning with
    one lost it. A run of blanks as long as a piece goes whole into the last one."""
    start = 0
    while True:
        stop = min(start + size, len(text))
        while start < stop < len(text) and text[stop] in " \t":
            stop -= 1  # the next piece must not begin with a blank
        if stop == start:
            stop = len(text)
        yield text[start:stop]
        if stop >= len(text):
            return
        start = stop
