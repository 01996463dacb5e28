"""An OpenAI-compatible model endpoint backed by ``core.players.ScriptedPlayer``.

Every framework driver talks to a model over HTTP; this server is the model
for tests, the conformance suite and the demo. It plays from the conversation
text alone, as a language model would, and is deterministic for
(seed, conversation).

Endpoints (all under ``/v1`` except ``/health``):

* ``POST /v1/chat/completions`` — JSON, or ``stream: true`` as SSE
  ``chat.completion.chunk`` events ending with ``data: [DONE]`` (Verifiers
  needs streaming). A usage chunk is sent when
  ``stream_options.include_usage`` is true.
* ``POST /v1/responses`` — the OpenAI Responses API (NeMo Gym's agents):
  ``instructions`` + ``input`` (a string or message / ``function_call`` /
  ``function_call_output`` items) in; ``output`` message or ``function_call``
  items out. ``stream: true`` sends the ``response.*`` SSE events.
* ``GET /v1/models``, ``GET /health``.

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
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

try:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the policy server needs fastapi and uvicorn; install with: pip install -e '.[rollouts]'"
    ) from e

from core.rng import derive_seed

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body accepted (413 above it). Long Othello games stay far below."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
DEFAULT_MODEL_NAME = "scripted"
MAKE_MOVE = "make_move"
MAX_CHOICES = 16


class RequestError(Exception):
    """A request the server refuses, with its HTTP status and OpenAI error fields."""

    def __init__(
        self,
        message: str,
        status: int = 400,
        *,
        param: str | None = None,
        code: str | None = None,
        type_: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.type = type_

    def response(self) -> JSONResponse:
        return JSONResponse(
            status_code=self.status,
            content={
                "error": {
                    "message": self.message,
                    "type": self.type,
                    "param": self.param,
                    "code": self.code,
                }
            },
        )


# --- helpers ----------------------------------------------------------------


def count_tokens(text: str) -> int:
    """A rough token count: whitespace-separated words."""
    return len(text.split())


def _text_of(content: Any, where: str) -> str:
    """Plain text of a message ``content``: a string, or a list of text parts
    (``{"type": "text" | "input_text" | "output_text", "text": ...}``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") in ("refusal",):
                parts.append(str(part.get("refusal", "")))
            else:
                raise RequestError(
                    f"{where}[{i}]: only text content parts are supported", param=where
                )
        return "".join(parts)
    raise RequestError(f"{where} must be a string or a list of text parts", param=where)


def _digest(*parts: object) -> str:
    return f"{derive_seed(*parts):016x}"


def _make_move_offered(tools: Any, tool_choice: Any, *, responses_api: bool) -> bool:
    """Whether the request offers the ``make_move`` function (and allows it)."""
    if tools is None:
        return False
    if not isinstance(tools, list):
        raise RequestError("tools must be a list", param="tools")
    if tool_choice == "none":
        return False
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise RequestError(f"tools[{i}] must be an object", param="tools")
        if tool.get("type", "function") != "function":
            continue
        if responses_api and "name" in tool:
            name = tool.get("name")
        else:
            fn = tool.get("function")
            name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
        if name == MAKE_MOVE:
            return True
    return False


@dataclass(frozen=True)
class Answer:
    """What the scripted player says: text, or a ``make_move`` call whose
    ``arguments`` are the JSON text the model wrote (``None``: a text answer)."""

    text: str
    arguments: str | None
    call_id: str
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        return count_tokens(self.arguments if self.arguments is not None else self.text)


# --- request parsing ----------------------------------------------------------


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Normalised chat messages (string contents) from a chat request."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list", param="messages")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise RequestError(f"messages[{i}] must be an object", param="messages")
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise RequestError(f"messages[{i}].role {role!r} is not a chat role", param="messages")
        norm: dict[str, Any] = {
            "role": role,
            "content": _text_of(msg.get("content"), f"messages[{i}].content"),
        }
        if msg.get("tool_calls"):
            norm["tool_calls"] = msg["tool_calls"]
        if role == "tool" and "tool_call_id" in msg:
            norm["tool_call_id"] = msg["tool_call_id"]
        out.append(norm)
    return out


def responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat messages equivalent to a Responses API request's instructions + input."""
    out: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise RequestError("instructions must be a string", param="instructions")
        out.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise RequestError("input must be a string or a non-empty list of items", param="input")
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise RequestError(f"{where} must be an object", param="input")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in ("system", "developer", "user", "assistant"):
                raise RequestError(f"{where}.role {role!r} is not a message role", param="input")
            out.append({"role": role, "content": _text_of(item.get("content"), where + ".content")})
        elif kind == "function_call":
            call = {
                "id": str(item.get("call_id", "")),
                "type": "function",
                "function": {
                    "name": str(item.get("name", "")),
                    "arguments": str(item.get("arguments", "")),
                },
            }
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(item.get("call_id", "")),
                    "content": _text_of(output, where + ".output"),
                }
            )
        elif kind == "reasoning":
            continue
        else:
            raise RequestError(f"{where}.type {kind!r} is not supported", param="input")
    return out


# --- the app -------------------------------------------------------------------


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


def _reject_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (Python's parser accepts them by default)."""
    raise RequestError(f"request body is not valid JSON: {name} is not a JSON number")


def _sse(data: Any) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _sse_event(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _bool_field(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(f"{key} must be a boolean", param=key)
    return value


def _model_field(body: dict[str, Any], default: str) -> str:
    model = body.get("model", default)
    if not isinstance(model, str):
        raise RequestError("model must be a string", param="model")
    return model or default


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

    async def read_json(request: Request) -> dict[str, Any]:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            raise RequestError(
                f"request body of {declared} bytes exceeds the limit of {max_body_bytes}",
                status=413,
                code="body_too_large",
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body_bytes:
                raise RequestError(
                    f"request body exceeds the limit of {max_body_bytes} bytes",
                    status=413,
                    code="body_too_large",
                )
            chunks.append(chunk)
        raw = b"".join(chunks)
        if not raw:
            raise RequestError("empty request body; expected a JSON object")
        try:
            body = json.loads(raw, parse_constant=_reject_constant)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise RequestError(f"request body is not valid JSON: {e}") from e
        if not isinstance(body, dict):
            raise RequestError("request body must be a JSON object")
        if _SURROGATE_ESCAPE.search(raw):  # echoed fields could not be encoded back (a 500)
            try:
                json.dumps(body, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError as e:
                raise RequestError(
                    "request body holds a lone UTF-16 surrogate (not Unicode text)"
                ) from e
        return body

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
        return {
            "status": "ok",
            "policy": model.policy,
            "seed": model.seed,
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

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: Request) -> Response:
        body = await read_json(request)
        messages = chat_messages(body)
        stream = _bool_field(body, "stream")
        name = _model_field(body, model.model_name)
        n = body.get("n", 1)
        if n is None:
            n = 1
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_CHOICES:
            raise RequestError(f"n must be an integer in 1..{MAX_CHOICES}", param="n")
        use_tool = _make_move_offered(
            body.get("tools"), body.get("tool_choice"), responses_api=False
        )
        ans = model.answer(messages, use_tool)
        cid = "chatcmpl-" + ans.call_id.removeprefix("call_")
        created = int(time.time())
        finish = "tool_calls" if ans.arguments is not None else "stop"
        tool_calls = (
            [
                {
                    "id": ans.call_id,
                    "type": "function",
                    "function": {"name": MAKE_MOVE, "arguments": ans.arguments},
                }
            ]
            if ans.arguments is not None
            else None
        )
        usage = {
            "prompt_tokens": ans.prompt_tokens,
            "completion_tokens": ans.completion_tokens * n,
            "total_tokens": ans.prompt_tokens + ans.completion_tokens * n,
        }
        if not stream:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": ans.text if ans.arguments is None else None,
            }
            if tool_calls:
                message["tool_calls"] = tool_calls
            return JSONResponse(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": name,
                    "choices": [
                        {"index": i, "message": message, "logprobs": None, "finish_reason": finish}
                        for i in range(n)
                    ],
                    "usage": usage,
                }
            )
        opts = body.get("stream_options") or {}
        include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
            return _sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": name,
                    "choices": choices,
                    **extra,
                }
            )

        async def events() -> AsyncIterator[str]:
            for i in range(n):
                yield chunk(
                    [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ]
                )
                if tool_calls:
                    delta: dict[str, Any] = {"tool_calls": [{"index": 0, **tool_calls[0]}]}
                else:
                    delta = {"content": ans.text}
                yield chunk([{"index": i, "delta": delta, "logprobs": None, "finish_reason": None}])
                yield chunk([{"index": i, "delta": {}, "logprobs": None, "finish_reason": finish}])
            if include_usage:
                yield chunk([], usage=usage)
            yield "data: [DONE]\n\n"

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    @app.post("/v1/responses", response_model=None)
    async def responses(request: Request) -> Response:
        body = await read_json(request)
        messages = responses_messages(body)
        stream = _bool_field(body, "stream")
        name = _model_field(body, model.model_name)
        tools = body.get("tools")
        use_tool = _make_move_offered(tools, body.get("tool_choice"), responses_api=True)
        ans = model.answer(messages, use_tool)
        digest = ans.call_id.removeprefix("call_")
        if ans.arguments is not None:
            item: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_" + digest,
                "call_id": ans.call_id,
                "name": MAKE_MOVE,
                "arguments": ans.arguments,
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": "msg_" + digest,
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ans.text, "annotations": []}],
            }
        resp: dict[str, Any] = {
            "id": "resp_" + digest,
            "object": "response",
            "created_at": float(int(time.time())),
            "status": "completed",
            "model": name,
            "output": [item],
            "instructions": body.get("instructions"),
            "error": None,
            "incomplete_details": None,
            "metadata": body.get("metadata") or {},
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": tools or [],
            "max_output_tokens": body.get("max_output_tokens"),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": None,
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "usage": {
                "input_tokens": ans.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": ans.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": ans.prompt_tokens + ans.completion_tokens,
            },
        }
        if not stream:
            return JSONResponse(resp)

        async def events() -> AsyncIterator[str]:
            seq = 0

            def ev(kind: str, **data: Any) -> str:
                nonlocal seq
                seq += 1
                return _sse_event(kind, {"type": kind, "sequence_number": seq - 1, **data})

            pending = {**resp, "status": "in_progress", "output": [], "usage": None}
            yield ev("response.created", response=pending)
            yield ev("response.in_progress", response=pending)
            started = {**item, "status": "in_progress"}
            if item["type"] == "message":
                started["content"] = []
            else:
                started["arguments"] = ""
            yield ev("response.output_item.added", output_index=0, item=started)
            if item["type"] == "message":
                part = {"type": "output_text", "text": "", "annotations": []}
                yield ev(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    part=part,
                )
                yield ev(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    delta=ans.text,
                )
                yield ev(
                    "response.output_text.done",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    text=ans.text,
                )
                yield ev(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=0,
                    content_index=0,
                    part=item["content"][0],
                )
            else:
                yield ev(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=0,
                    delta=item["arguments"],
                )
                yield ev(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=0,
                    arguments=item["arguments"],
                )
            yield ev("response.output_item.done", output_index=0, item=item)
            yield ev("response.completed", response=resp)

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

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
    print(f"policy server ({what}) at http://{host}:{actual}/v1", flush=True)
    config = uvicorn.Config(app, log_level="info", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
