"""What both of the policy server's APIs share: OpenAI-style errors, the request's
text, the answer, JSON and SSE helpers, and the request hardening.

The hardening (413 over the body limit, 400 for a lone UTF-16 surrogate) is
``adapters._asgi.BodyLimitMiddleware``, the one the environment servers use;
:class:`OpenAIBodyLimit` only answers in the OpenAI error format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from adapters._asgi import BodyLimitMiddleware, Send, send_json
from core.prompts import TOOL_NAME
from core.rng import derive_seed

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body accepted (413 above it). Long Othello games stay far below."""
MAKE_MOVE = TOOL_NAME
"""The one tool the policy server answers with (core's name for it)."""


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

    def content(self) -> dict[str, Any]:
        """The OpenAI-style error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def response(self) -> JSONResponse:
        return JSONResponse(status_code=self.status, content=self.content())


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
    generated_tokens: int | None = None
    """The reply's length in the model's tokens (``None``: count whitespace words)."""
    cut: bool = False
    """The reply stopped at its token limit (finish_reason ``length``)."""

    @property
    def completion_tokens(self) -> int:
        if self.generated_tokens is not None:
            return self.generated_tokens
        return count_tokens(self.arguments if self.arguments is not None else self.text)

    @property
    def finish_reason(self) -> str:
        """OpenAI's ``finish_reason``: ``length`` when cut, else ``tool_calls`` or ``stop``."""
        if self.cut:
            return "length"
        return "tool_calls" if self.arguments is not None else "stop"


MAX_TOKENS_LIMIT = 4096
"""Largest ``max_tokens`` the model backend accepts (400 above it)."""


def sampling_options(body: dict[str, Any], *, responses_api: bool) -> dict[str, Any]:
    """A request's sampling settings for a backend that samples (``temperature``,
    ``top_p``, ``max_tokens``/``max_completion_tokens``/``max_output_tokens``,
    ``seed``), checked: a value out of range is a 400 naming the field."""
    out: dict[str, Any] = {}
    for key, low, high in (("temperature", 0.0, 2.0), ("top_p", 0.0, 1.0)):
        value = body.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise RequestError(f"{key} must be a number in [{low:g}, {high:g}]", param=key)
        out[key] = float(value)
    if out.get("top_p") == 0.0:
        raise RequestError("top_p must be above 0", param="top_p")
    names = ("max_output_tokens",) if responses_api else ("max_completion_tokens", "max_tokens")
    for key in names:
        value = body.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 1 <= value <= MAX_TOKENS_LIMIT
        ):
            raise RequestError(f"{key} must be an integer in 1..{MAX_TOKENS_LIMIT}", param=key)
        out["max_tokens"] = value
        break
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RequestError("seed must be an integer", param="seed")
        out["seed"] = seed
    return out


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


async def read_json(request: Request) -> dict[str, Any]:
    """The request's JSON object (its size and Unicode were checked by
    :class:`OpenAIBodyLimit` before the app saw it)."""
    raw = await request.body()
    if not raw:
        raise RequestError("empty request body; expected a JSON object")
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RequestError(f"request body is not valid JSON: {e}") from e
    if not isinstance(body, dict):
        raise RequestError("request body must be a JSON object")
    return body


class OpenAIBodyLimit(BodyLimitMiddleware):
    """The shared body limit and surrogate check, refusing with an OpenAI error body."""

    async def refuse(self, send: Send, status: int, message: str, code: str) -> None:
        await send_json(send, status, RequestError(message, status, code=code).content())
