"""``POST /v1/responses`` of the policy server, the OpenAI Responses API (NeMo
Gym's agents): ``instructions`` + ``input`` (a string or message /
``function_call`` / ``function_call_output`` items) in; ``output`` message or
``function_call`` items out. ``stream: true`` sends the ``response.*`` SSE events."""

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
    _sse_event,
    _text_of,
    read_json,
    sampling_options,
)


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


def add_responses_api(app: FastAPI, model: Any) -> None:
    """Route ``POST /v1/responses`` on ``app`` to ``model.answer``."""

    @app.post("/v1/responses", response_model=None)
    async def responses(request: Request) -> Response:
        body = await read_json(request)
        messages = responses_messages(body)
        stream = _bool_field(body, "stream")
        name = _model_field(body, model.model_name)
        tools = body.get("tools")
        use_tool = _make_move_offered(tools, body.get("tool_choice"), responses_api=True)
        if getattr(model, "samples", False):  # the model backend honours sampling settings
            ans = model.answer(messages, use_tool, **sampling_options(body, responses_api=True))
        else:
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
            "status": "incomplete" if ans.cut else "completed",
            "model": name,
            "output": [item],
            "instructions": body.get("instructions"),
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if ans.cut else None,
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
            yield ev("response.incomplete" if ans.cut else "response.completed", response=resp)

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )
