"""``POST /v1/chat/completions`` of the policy server: JSON, or ``stream: true``
as SSE ``chat.completion.chunk`` events ending with ``data: [DONE]`` (Verifiers
needs streaming; a usage chunk is sent when ``stream_options.include_usage`` is
true)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from rollouts.model.openai_wire import (
    MAKE_MOVE,
    RequestError,
    _bool_field,
    _make_move_offered,
    _model_field,
    _sse,
    _text_of,
    read_json,
    sampling_options,
)

MAX_CHOICES = 16


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


def add_chat_api(app: FastAPI, model: Any) -> None:
    """Route ``POST /v1/chat/completions`` on ``app`` to ``model.answer``."""

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
        if getattr(model, "samples", False):  # the model backend honours sampling settings
            options = sampling_options(body, responses_api=False)
            answers = [model.answer(messages, use_tool, **options) for _ in range(n)]
        else:  # the scripted player: deterministic, n equal choices
            answers = [model.answer(messages, use_tool)] * n
        ans = answers[0]
        cid = "chatcmpl-" + ans.call_id.removeprefix("call_")
        created = int(time.time())
        completion_tokens = sum(a.completion_tokens for a in answers)
        usage = {
            "prompt_tokens": ans.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": ans.prompt_tokens + completion_tokens,
        }

        def calls(a: Any) -> list[dict[str, Any]] | None:
            if a.arguments is None:
                return None
            function = {"name": MAKE_MOVE, "arguments": a.arguments}
            return [{"id": a.call_id, "type": "function", "function": function}]

        if not stream:

            def message(a: Any) -> dict[str, Any]:
                out: dict[str, Any] = {
                    "role": "assistant",
                    "content": a.text if a.arguments is None else None,
                }
                if a.arguments is not None:
                    out["tool_calls"] = calls(a)
                return out

            return JSONResponse(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": name,
                    "choices": [
                        {
                            "index": i,
                            "message": message(a),
                            "logprobs": None,
                            "finish_reason": a.finish_reason,
                        }
                        for i, a in enumerate(answers)
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
            for i, a in enumerate(answers):
                tool_calls = calls(a)
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
                    delta = {"content": a.text}
                yield chunk([{"index": i, "delta": delta, "logprobs": None, "finish_reason": None}])
                done = a.finish_reason
                yield chunk([{"index": i, "delta": {}, "logprobs": None, "finish_reason": done}])
            if include_usage:
                yield chunk([], usage=usage)
            yield "data: [DONE]\n\n"

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )
