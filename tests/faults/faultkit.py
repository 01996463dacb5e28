"""Fault injection for the reliability tests and ``make faults``.

* :class:`FaultProxy`: an HTTP proxy in front of a policy server (in a thread of the
  test process) that adds latency (so runs can be killed mid-way) and injects one
  endpoint fault: ``500``, ``429``, ``truncated`` (a 200 whose JSON or event stream is
  cut), ``empty`` (a 200 with ``"choices": []``), ``huge`` (a 200 whose reply text is 20 MB), ``hang`` (no answer) or ``drop``
  (the connection closed), on every ``every``-th request or all of them. When the
  upstream is down it drops the connection, as a dead endpoint would.
* :func:`policy_server` starts ``gamebridge serve-policy`` as its own process (so a
  test can kill it) and :func:`descendants` / :func:`wait_gone` find and await the
  processes a run started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx

from rollouts.model.gateway import LocalProxy
from rollouts.model.servers import free_port, start_server

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ("500", "429", "truncated", "empty", "huge", "hang", "drop")
EMPTY_COMPLETION = b'{"id": "chatcmpl-empty", "object": "chat.completion", "choices": []}'
"""A 200 that is JSON but no completion: what some endpoints answer under load."""
HUGE_BYTES = 20 * 1024 * 1024


def _huge(data: bytes, streamed: bool) -> bytes:
    pad = "x" * HUGE_BYTES
    if not streamed:
        body = json.loads(data)
        msg = body["choices"][0]["message"] if "choices" in body else None
        if msg is not None:
            msg["content"] = pad + (msg.get("content") or "")
            msg.pop("tool_calls", None)
        elif "output" in body:  # Responses API
            body["output"] = [
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_huge",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": pad, "annotations": []}],
                }
            ]
        return json.dumps(body).encode()
    lines = data.decode().split("\n")
    out, done = [], False
    for line in lines:
        if not done and line.startswith("data: {") and '"delta"' in line:
            event = json.loads(line[6:])
            event["choices"][0]["delta"] = {"content": pad}
            out.append("data: " + json.dumps(event))
            out.append("")
            done = True
        out.append(line)
    return "\n".join(out).encode()


class FaultProxy(LocalProxy):
    """``with FaultProxy(upstream_base_url) as p:`` serves ``p.url`` (``.../v1``)."""

    def __init__(self, upstream: str, *, delay: float = 0.0) -> None:
        super().__init__(upstream, timeout=60.0)
        self.delay = delay
        self.fault: str | None = None
        self.every = 1
        self.requests = 0
        self.injected = 0
        self._stop = threading.Event()

    def set_fault(self, fault: str | None, every: int = 1) -> None:
        """Inject ``fault`` on every ``every``-th request from now on (``None``: none)."""
        with self._lock:
            self.fault, self.every, self.requests = fault, max(1, every), 0

    def _pick(self) -> str | None:
        with self._lock:
            self.requests += 1
            if self.fault is not None and self.requests % self.every == 0:
                self.injected += 1
                return self.fault
            return None

    def _handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        length = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(length) if length else b""
        fault = self._pick() if method == "POST" else None
        if self.delay and method == "POST":
            time.sleep(self.delay)
        if fault == "hang":
            self._stop.wait()
            return
        if fault == "drop":
            req.close_connection = True
            with suppress(OSError):
                req.connection.shutdown(2)
            return
        if fault == "empty":
            self._reply(req, 200, EMPTY_COMPLETION, "application/json")
            return
        if fault in ("500", "429"):
            self._reply(req, int(fault), b'{"error": {"message": "injected fault"}}', "")
            return
        headers = {k: v for k, v in req.headers.items() if k.lower() in ("content-type",)}
        try:
            resp = self._http.request(method, self._target(req.path), content=body, headers=headers)
        except httpx.TransportError:
            req.close_connection = True  # the endpoint is down: so is this proxy
            with suppress(OSError):
                req.connection.shutdown(2)
            return
        data, ctype = resp.content, resp.headers.get("content-type", "")
        streamed = "text/event-stream" in ctype
        if fault == "truncated":
            data = data[: max(1, len(data) // 2)]
        elif fault == "huge" and resp.status_code == 200:
            data = _huge(data, streamed)
        self._reply(req, resp.status_code, data, ctype)

    def close(self) -> None:
        self._stop.set()  # a hung request lets go
        super().close()


@contextmanager
def policy_server(
    policy: str = "noisy:0.3/minimax:1", seed: int = 0, port: int | None = None
) -> Iterator[Any]:
    """``gamebridge serve-policy`` as its own process (``srv.process`` to kill it)."""
    argv = [
        sys.executable,
        "-m",
        "rollouts.cli",
        "serve-policy",
        "--policy",
        policy,
        "--seed",
        str(seed),
        "--port",
        "{port}",
    ]
    with start_server(argv, "/health", port=port or free_port(), cwd=ROOT) as srv:
        yield srv


def children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        frontier += kids
    return out


descendants = children


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], timeout: float = 30.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds (``[]``: none left)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def kill_all(pids: list[int]) -> None:
    for p in pids:
        with suppress(OSError):
            os.kill(p, signal.SIGKILL)


def count_lines(path: Path) -> int:
    """Whole record lines in a records file (the header excluded)."""
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    return max(0, data.count(b"\n") - 1)


def wait_for(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def eval_argv(framework: str, n: int, out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rollouts.cli",
        "eval",
        "--framework",
        framework,
        "--game",
        "tictactoe",
        "-n",
        str(n),
        "--base-url",
        base_url,
        "--out",
        str(out),
        *extra,
    ]


def start_eval(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    fh = open(log, "wb")  # noqa: SIM115 (closed with the process by the caller)
    return subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
