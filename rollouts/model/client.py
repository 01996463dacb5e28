"""A small client for OpenAI-compatible chat endpoints.

``ChatClient(base_url, model).complete(messages, tools=None)`` posts one
``/chat/completions`` request and returns a :class:`Completion`. Every model call
follows one :class:`CallPolicy` (the same for every framework: the drivers whose
framework calls the model itself put ``rollouts.model.gateway`` in between): a per-call
timeout, and retries with exponential backoff for connection errors, timeouts,
408/425/429/5xx answers and malformed bodies (not JSON, or not a completion);
never for other 4xx answers, which would fail again. ``AsyncChatClient`` is the
same over ``httpx.AsyncClient`` for drivers that want asyncio concurrency.

The API key is taken from ``OPENAI_API_KEY`` when ``api_key`` is ``None``; the
embedded policy server ignores it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from adapters._lazy import needs

with needs("rollouts.model.client", "httpx", "rollouts"):
    import httpx

DEFAULT_TIMEOUT = 120.0
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class CallPolicy:
    """How every model call is made: ``timeout`` seconds per attempt, then up to
    ``retries`` more attempts after ``backoff * 2**k`` seconds (capped at
    ``max_backoff``) for connection errors, timeouts, 408/425/429/5xx answers and
    malformed bodies.

    >>> CallPolicy(timeout=30, retries=3, backoff=0.5).worst_case_seconds()
    123.5
    """

    timeout: float = DEFAULT_TIMEOUT
    retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1``."""
        return float(min(self.max_backoff, self.backoff * (2**attempt)))

    def worst_case_seconds(self) -> float:
        """The longest one call can take before it fails for good."""
        return (self.retries + 1) * self.timeout + sum(self.delay(a) for a in range(self.retries))

    def describe(self) -> str:
        return (
            f"{self.timeout:g} s per attempt, {self.retries} retries "
            f"(backoff {self.backoff:g} s doubling, at most {self.max_backoff:g} s)"
        )


DEFAULT_POLICY = CallPolicy()


class ModelError(RuntimeError):
    """The endpoint answered with an error, or with something that is not a
    chat completion. The message holds the status and the body's start."""

    source = "model endpoint"


class _Malformed(ModelError):
    """A 2xx answer whose body is not a completion (retried)."""


RETRY_ERRORS = (httpx.TransportError,)
"""Connection errors, timeouts (connect, read, write, pool), protocol errors."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for. ``arguments`` is the JSON value the
    model wrote, decoded and otherwise unchanged (any type: core judges it); text
    that is not JSON stays that text, and none at all is ``None``."""

    id: str
    name: str
    arguments: Any
    raw_arguments: str = ""

    def to_message_dict(self) -> dict[str, Any]:
        """The call as it appears in an assistant message's ``tool_calls``."""
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": self.raw_arguments or json.dumps(self.arguments),
            },
        }


@dataclass(frozen=True)
class Completion:
    """One model reply: its text (``""`` when it only called tools), its tool
    calls and the number of completion tokens the endpoint reported."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    completion_tokens: int = 0
    prompt_tokens: int = 0
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def assistant_message(self) -> dict[str, Any]:
        """The reply as an OpenAI assistant message, to append to the history."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [tc.to_message_dict() for tc in self.tool_calls]
        return msg


def _parse_arguments(raw: Any) -> Any:
    from core.parsing import decode_tool_arguments

    return decode_tool_arguments(raw)


def completion_problem(body: Any) -> str | None:
    """Why a 2xx JSON body is not a usable completion, or ``None`` when it is: the one
    malformed-reply rule of every framework (:class:`ChatClient` and the gateway in
    front of the frameworks that call the model themselves), so a malformed 200 is
    retried everywhere the same way. A Chat Completions body needs a non-empty
    ``choices`` list whose first choice holds a ``message`` object; a Responses API
    body an ``output`` list.

    >>> completion_problem({"choices": []})
    'a completion with no choices'
    >>> completion_problem({"choices": [{"message": {"content": "<move>4</move>"}}]}) is None
    True
    """
    if not isinstance(body, dict):
        return f"JSON that is not a completion: {str(body)[:120]}"
    if "choices" in body:
        choices = body["choices"]
        if not isinstance(choices, list) or not choices:
            return "a completion with no choices"
        first = choices[0]
        if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
            return f"a choice with no message object: {str(first)[:120]}"
        return None
    if "output" in body:
        if not isinstance(body["output"], list):
            return f"a response whose output is not a list: {str(body['output'])[:120]}"
        return None
    return f"JSON that is not a completion: {str(body)[:120]}"


def parse_completion(body: Any) -> Completion:
    """A :class:`Completion` from a ``/chat/completions`` JSON body."""
    problem = completion_problem(body)
    if problem is not None or "choices" not in body:
        raise ModelError(f"not a chat completion: {problem or str(body)[:300]}")
    choice = body["choices"][0]
    message = choice["message"]
    calls = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function") or {}
        raw_args = fn.get("arguments", "")
        calls.append(
            ToolCall(
                id=str(tc.get("id") or f"call_{i}"),
                name=str(fn.get("name", "")),
                arguments=_parse_arguments(raw_args),
                raw_arguments=raw_args if isinstance(raw_args, str) else json.dumps(raw_args),
            )
        )
    usage = body.get("usage") or {}
    return Completion(
        text=message.get("content") or "",
        tool_calls=tuple(calls),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
        raw=body,
    )


class _Base:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        policy: CallPolicy | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        backoff: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        p = policy or DEFAULT_POLICY
        self.policy = CallPolicy(
            timeout=p.timeout if timeout is None else timeout,
            retries=p.retries if max_retries is None else max_retries,
            backoff=p.backoff if backoff is None else backoff,
            max_backoff=p.max_backoff,
        )
        self.timeout = self.policy.timeout
        self.max_retries = self.policy.retries

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _payload(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        temperature: float | None,
        max_tokens: int | None,
        extra: dict[str, Any] | None,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            payload["tools"] = tools
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if extra:
            payload.update(extra)
        return payload

    def _check(self, response: httpx.Response) -> Completion:
        if response.status_code >= 400:
            raise ModelError(f"{self.url} answered {response.status_code}: {response.text[:500]}")
        try:
            body = response.json()
        except ValueError as e:
            raise _Malformed(f"{self.url} answered non-JSON: {response.text[:300]!r}") from e
        try:
            return parse_completion(body)
        except ModelError as e:
            raise _Malformed(str(e)) from e
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
            raise _Malformed(f"{self.url} answered a malformed completion: {e}") from e

    def _outcome(
        self, attempt: int, response: httpx.Response | None, error: Exception | None
    ) -> Completion | None:
        """The completion, ``None`` to retry, or raise the final error."""
        last = attempt >= self.policy.retries
        if error is not None:
            if last:
                raise ModelError(
                    f"cannot reach {self.url} after {attempt + 1} attempts "
                    f"({self.policy.describe()}): {type(error).__name__}: {error}"
                ) from error
            return None
        assert response is not None
        if response.status_code in RETRY_STATUS and not last:
            return None
        try:
            return self._check(response)
        except _Malformed as e:
            if last:
                raise ModelError(
                    f"{e} (after {attempt + 1} attempts, {self.policy.describe()})"
                ) from e
            return None


class ChatClient(_Base):
    """Synchronous client; thread-safe (one pooled ``httpx.Client``)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **kw: Any) -> None:
        super().__init__(base_url, model, api_key, **kw)
        self._http = httpx.Client(timeout=self.policy.timeout)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, under :attr:`policy` (timeout, retries, backoff)."""
        payload = self._payload(messages, tools, temperature, max_tokens, extra)
        for attempt in range(self.policy.retries + 1):
            response, error = None, None
            try:
                response = self._http.post(self.url, json=payload, headers=self._headers())
            except RETRY_ERRORS as e:
                error = e
            completion = self._outcome(attempt, response, error)
            if completion is not None:
                return completion
            time.sleep(self.policy.delay(attempt))
        raise ModelError(f"unreachable: retries exhausted for {self.url}")  # pragma: no cover

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChatClient(_Base):
    """Asynchronous twin of :class:`ChatClient` over ``httpx.AsyncClient``."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **kw: Any) -> None:
        super().__init__(base_url, model, api_key, **kw)
        self._http = httpx.AsyncClient(timeout=self.policy.timeout)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        """One chat completion, under :attr:`policy` (timeout, retries, backoff)."""
        payload = self._payload(messages, tools, temperature, max_tokens, extra)
        for attempt in range(self.policy.retries + 1):
            response, error = None, None
            try:
                response = await self._http.post(self.url, json=payload, headers=self._headers())
            except RETRY_ERRORS as e:
                error = e
            completion = self._outcome(attempt, response, error)
            if completion is not None:
                return completion
            await asyncio.sleep(self.policy.delay(attempt))
        raise ModelError(f"unreachable: retries exhausted for {self.url}")  # pragma: no cover

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
