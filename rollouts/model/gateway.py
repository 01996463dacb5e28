"""The model gateway: one :class:`~rollouts.model.client.CallPolicy` for frameworks that call
the model themselves (Verifiers' interception client, NeMo Gym's agent).

``with ModelGateway(upstream, policy) as gw:`` serves ``gw.url`` (``http://127.0.0.1:
PORT/v1``) in a thread; the framework is pointed there instead of at the endpoint.
Each request is forwarded to the same path under ``upstream`` and retried under the
policy (connection errors, timeouts, 408/425/429/5xx, malformed bodies: not JSON, not
a completion by ``rollouts.model.client.completion_problem`` (the rule ``ChatClient``
applies: no choices, a choice without a message), a stream cut before its end). The answer is buffered and checked before
it is passed on, so a framework only ever sees a whole good answer, or, once the
retries are spent, a 502 whose JSON ``error.message`` names the endpoint and the
cause (with ``x-should-retry: false``, which OpenAI's client obeys, so nobody retries
on top of the policy). ``gw.failures`` keeps those messages for the driver's
failure records.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import httpx

from rollouts.model.client import DEFAULT_POLICY, RETRY_STATUS, CallPolicy, completion_problem

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}


def malformed(body: bytes, content_type: str, streamed: bool) -> str | None:
    """Why a 2xx answer is not a usable completion, or ``None`` when it is."""
    if streamed or "text/event-stream" in content_type:
        text = body.decode("utf-8", "replace")
        events = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
        if not events:
            return "an empty event stream"
        if events[-1] != "[DONE]" and '"response.completed"' not in events[-1]:
            return "an event stream cut before its end"
        for data in events:
            if data != "[DONE]":
                try:
                    json.loads(data)
                except ValueError:
                    return f"a stream event that is not JSON: {data[:120]!r}"
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return f"a body that is not JSON ({len(body)} bytes): {body[:120]!r}"
    return completion_problem(value)  # the rule ChatClient applies too


class _QuietServer(ThreadingHTTPServer):
    """A client that hung up mid-request is routine: no traceback on stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class LocalProxy:
    """A threaded HTTP server on 127.0.0.1 that forwards to ``upstream``: the
    plumbing of :class:`ModelGateway` and of the fault-injecting proxy of the
    faults tests. A subclass writes :meth:`_handle` (one request, GET or POST)."""

    def __init__(self, upstream: str, timeout: float) -> None:
        self.upstream = upstream.rstrip("/")
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=timeout)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: failures are reported
                pass

            def do_GET(self) -> None:
                proxy._handle(self, "GET")

            def do_POST(self) -> None:
                proxy._handle(self, "POST")

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL to give the framework (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _target(self, path: str) -> str:
        tail = path[3:] if path.startswith("/v1") else path
        return self.upstream + tail

    @staticmethod
    def _reply(
        req: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str, final: bool = False
    ) -> None:
        try:
            req.send_response(status)
            req.send_header("Content-Type", ctype or "application/json")
            req.send_header("Content-Length", str(len(data)))
            if final:
                req.send_header("x-should-retry", "false")
            req.end_headers()
            req.wfile.write(data)
        except OSError:  # the client gave up on this call: nothing to tell it
            pass

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class ModelGateway(LocalProxy):
    """A threaded local proxy applying ``policy`` to every model call."""

    def __init__(self, upstream: str, policy: CallPolicy | None = None) -> None:
        self.policy = policy or DEFAULT_POLICY
        super().__init__(upstream, self.policy.timeout)
        self.failures: list[str] = []
        self.calls = 0
        self.retried = 0

    def _handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        headers = {k: v for k, v in req.headers.items() if k.lower() not in HOP_HEADERS}
        streamed = False
        if body:
            try:
                streamed = bool(json.loads(body).get("stream"))
            except (ValueError, AttributeError):
                streamed = False
        target = self._target(req.path)
        with self._lock:
            self.calls += 1
        why = ""
        for attempt in range(self.policy.retries + 1):
            try:
                resp = self._http.request(method, target, content=body, headers=headers)
                data = resp.content
            except httpx.TransportError as e:
                why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            else:
                ctype = resp.headers.get("content-type", "")
                if resp.status_code in RETRY_STATUS:
                    why = f"answered {resp.status_code}: {data[:200].decode('utf-8', 'replace')}"
                elif resp.status_code >= 400 or method == "GET":
                    self._reply(req, resp.status_code, data, ctype)
                    return
                else:
                    bad = malformed(data, ctype, streamed)
                    if bad is None:
                        self._reply(req, resp.status_code, data, ctype)
                        return
                    why = f"answered {bad}"
            if attempt < self.policy.retries:
                with self._lock:
                    self.retried += 1
                time.sleep(self.policy.delay(attempt))
        message = (
            f"model endpoint {target} failed after {self.policy.retries + 1} attempts "
            f"({self.policy.describe()}): {why}"
        )
        with self._lock:
            self.failures.append(message)
        error = {"error": {"message": message, "type": "model_endpoint_error", "code": 502}}
        self._reply(req, 502, json.dumps(error).encode(), "application/json", final=True)

    def last_failure(self) -> str | None:
        with self._lock:
            return self.failures[-1] if self.failures else None


@contextmanager
def gateway(upstream: str, policy: CallPolicy | None = None) -> Iterator[ModelGateway]:
    """``ModelGateway(upstream, policy)`` for the block."""
    with ModelGateway(upstream, policy) as gw:
        yield gw
