"""An OpenAI-compatible model endpoint backed by ``core.players.ScriptedPlayer``.

Every framework driver talks to a model over HTTP; this server is the model
for tests, the conformance suite and the demo. It plays from the conversation
text alone, as a language model would, and is deterministic for
(seed, conversation).

Endpoints (all under ``/v1`` except ``/health``):

* ``POST /v1/chat/completions`` (:mod:`rollouts.model.chat_api`) — JSON or SSE.
* ``POST /v1/responses`` (:mod:`rollouts.model.responses_api`) — the OpenAI
  Responses API (NeMo Gym's agents), JSON or SSE.
* ``GET /v1/models``, ``GET /health`` (here).

What the two APIs share (errors, the answer, the request hardening of
``adapters._asgi``) is :mod:`rollouts.model.openai_wire`.

When the request offers a function tool named ``make_move`` (and
``tool_choice`` is not ``"none"``) the answer is a tool call
``make_move({"move": ...})``; otherwise a text reply with ``<move>`` tags.

Usage counts are whitespace tokens (rough, but stable). Bad requests get a
4xx with an OpenAI-style JSON error ``{"error": {"message", "type", "param",
"code"}}``, never a 500: malformed JSON or fields, or text holding a lone UTF-16
surrogate (``"\\ud800"``, not Unicode) -> 400, a conversation the
scripted player cannot read (no board in it) -> 422, a body over
``max_body_bytes`` (default 4 MiB, :data:`DEFAULT_MAX_BODY_BYTES`) -> 413.
Every server binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adapters._lazy import needs

with needs("the policy server", "fastapi and uvicorn", "rollouts"):
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

from rollouts.model.chat_api import MAX_CHOICES, add_chat_api, chat_messages
from rollouts.model.openai_wire import (
    DEFAULT_MAX_BODY_BYTES,
    MAKE_MOVE,
    Answer,
    OpenAIBodyLimit,
    RequestError,
    _digest,
    count_tokens,
)
from rollouts.model.responses_api import add_responses_api, responses_messages
from rollouts.model.servers import serve_in_foreground

DEFAULT_MODEL_NAME = "scripted"

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MODEL_NAME",
    "MAKE_MOVE",
    "MAX_CHOICES",
    "Answer",
    "PolicyModel",
    "RequestError",
    "_digest",
    "chat_messages",
    "count_tokens",
    "create_app",
    "responses_messages",
    "serve",
    "serve_in_thread",
]


class PolicyModel:
    """The scripted player behind the endpoints."""

    def __init__(self, policy: str, seed: int, model_name: str = DEFAULT_MODEL_NAME) -> None:
        from core.players import ScriptedPlayer

        self.policy = policy
        self.seed = seed
        self.model_name = model_name
        self.player = ScriptedPlayer(policy, seed)

    def answer(self, messages: list[dict[str, Any]], use_tool: bool) -> Answer:
        prompt_tokens = sum(count_tokens(m.get("content") or "") for m in messages)
        convo = tuple((m["role"], m.get("content") or "") for m in messages)
        call_id = "call_" + _digest("call", self.seed, self.policy, convo)
        try:
            if use_tool:
                from core.players import STOP_TEXT, Stop

                arguments = self.player.tool_arguments(messages)
                if isinstance(arguments, Stop):
                    return Answer(STOP_TEXT, None, call_id, prompt_tokens)
                return Answer("", json.dumps(arguments), call_id, prompt_tokens)
            text = self.player.reply(messages)
        except RequestError:
            raise
        except Exception as e:  # the player's failure is the request's fault (no board)
            raise RequestError(
                f"the scripted player cannot answer this conversation: {type(e).__name__}: {e}",
                status=422,
                code="unplayable_conversation",
            ) from e
        return Answer(str(text), None, call_id, prompt_tokens)


def create_app(
    policy: str,
    seed: int = 0,
    *,
    model_name: str = DEFAULT_MODEL_NAME,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    backend: Any = None,
) -> FastAPI:
    """The FastAPI app answering with ``ScriptedPlayer(policy, seed)``, or with
    ``backend`` (an object with ``model_name`` and ``answer(messages,
    use_tool) -> Answer``, e.g. ``rollouts.model.transformers_backend.TransformersModel``)."""
    model = backend if backend is not None else PolicyModel(policy, seed, model_name)
    app = FastAPI(title="gamebridge policy server", docs_url=None, redoc_url=None)
    app.state.model = model
    app.add_middleware(OpenAIBodyLimit, max_body_bytes=max_body_bytes)

    @app.exception_handler(RequestError)
    async def _request_error(_: Request, exc: RequestError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(404)
    async def _not_found(request: Request, _: Exception) -> JSONResponse:
        return RequestError(f"no route {request.url.path}", 404, code="not_found").response()

    @app.exception_handler(405)
    async def _bad_method(request: Request, _: Exception) -> JSONResponse:
        return RequestError(
            f"{request.method} is not allowed on {request.url.path}",
            405,
            code="method_not_allowed",
        ).response()

    @app.get("/health")
    async def health() -> dict[str, Any]:
        # a backend (the transformers model) has a policy (its description) but no
        # scripted seed: /health answers for every backend (it raised, a 500)
        return {
            "status": "ok",
            "policy": getattr(model, "policy", None),
            "seed": getattr(model, "seed", None),
            "model": model.model_name,
        }

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": model.model_name, "object": "model", "created": 0, "owned_by": "gamebridge"}
            ],
        }

    add_chat_api(app, model)
    add_responses_api(app, model)
    return app


# --- running it ----------------------------------------------------------------


def _bind(host: str, port: int) -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket's proto is IPPROTO_TCP; with proto 0, Nagle + delayed ACK added ~40 ms
    # to every keep-alive request (uvicorn's h11 writes headers and body separately).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@contextmanager
def serve_in_thread(
    policy: str,
    seed: int = 0,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    model_name: str = DEFAULT_MODEL_NAME,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    startup_timeout: float = 30.0,
    backend: Any = None,
) -> Iterator[str]:
    """Run the policy server in a background thread; yields ``http://host:port/v1``.

    ``port=0`` picks a free port (the socket is bound before the server starts,
    so there is no race). The server is stopped when the block exits.
    """
    app = create_app(
        policy, seed, model_name=model_name, max_body_bytes=max_body_bytes, backend=backend
    )
    sock = _bind(host, port)
    actual_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run,
        kwargs={"sockets": [sock]},
        name=f"policy-server-{actual_port}",
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive():
            sock.close()
            raise RuntimeError("the policy server thread died during start-up")
        if time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise TimeoutError(f"the policy server did not start within {startup_timeout}s")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{actual_port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def serve(
    policy: str,
    seed: int = 0,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    model_name: str = DEFAULT_MODEL_NAME,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    backend: Any = None,
) -> None:
    """Run the policy server in the foreground (``gamebridge serve-policy``);
    ``port=0`` picks a free one. Prints the base URL once listening."""
    app = create_app(
        policy, seed, model_name=model_name, max_body_bytes=max_body_bytes, backend=backend
    )
    sock = _bind(host, port)
    actual = sock.getsockname()[1]
    what = backend.policy if backend is not None else f"{policy}, seed {seed}"
    ready = f"policy server ({what}) at http://{host}:{actual}/v1"
    serve_in_foreground(app, sock, ready, log_level="info")
