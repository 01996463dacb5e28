"""Start a server subprocess on a free 127.0.0.1 port, wait until healthy, and
always stop it (with its children) afterwards.

>>> argv = ["python", "-m", "my.server", "--host", "127.0.0.1", "--port", "{port}"]
>>> # with start_server(argv, "/health") as srv:  srv.base_url, srv.port, srv.process

``{port}`` anywhere in ``argv`` (or in ``env`` values) is replaced by the
chosen port. The process runs in its own process group, so stopping it also
stops whatever it spawned (uvicorn workers, Ray helpers): SIGTERM, then
SIGKILL after a grace period. Its stdout and stderr go to a temporary log
file whose tail is quoted in any start-up error.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"


class ServerStartError(RuntimeError):
    """The server exited or never became healthy; the message has its log tail."""


@dataclass(frozen=True)
class RunningServer:
    """A started, healthy server."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://{HOST}:{self.port}"

    def log_tail(self, max_chars: int = 4000) -> str:
        """The end of the server's combined stdout/stderr."""
        return _tail(self.log_path, max_chars)


def free_port(host: str = HOST) -> int:
    """A port that was free a moment ago (the OS's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, max_chars: int) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-max_chars:].decode("utf-8", "replace")


def _healthy(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop_process(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group of ``process``, then SIGKILL after ``grace``."""
    if process.poll() is not None:
        _kill_group(process.pid, signal.SIGKILL)  # leftover children, if any
        return
    _kill_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)
    _kill_group(process.pid, signal.SIGKILL)


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # the child is its own session leader: pgid == pid


@contextmanager
def start_server(
    argv: Sequence[str],
    health_url_path: str = "/health",
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    *,
    timeout: float = 120.0,
    cwd: str | os.PathLike[str] | None = None,
    port: int | None = None,
) -> Iterator[RunningServer]:
    """Start ``argv`` on a free port and yield a :class:`RunningServer` once
    ``GET http://127.0.0.1:PORT{health_url_path}`` answers 2xx.

    ``python``: if given, an ``argv[0]`` of ``"python"`` (or ``"{python}"``)
    is replaced by it (e.g. ``.venv-nemo/bin/python``); otherwise by the
    running interpreter. ``env`` is added to (not replacing) ``os.environ``.
    Raises :class:`ServerStartError` with the log tail if the process exits
    or is not healthy within ``timeout`` seconds; the process is stopped in
    every case. An exception raised inside the block gets the log tail as a
    note (and the log file is kept); otherwise the log file is removed.
    """
    chosen = port if port is not None else free_port()
    interpreter = python or sys.executable
    args = [a.replace("{port}", str(chosen)) for a in argv]
    if args and args[0] in ("python", "python3", "{python}"):
        args[0] = interpreter
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        full_env[key] = value.replace("{port}", str(chosen))
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (kept open for the process's life)
        prefix=f"gamebridge-server-{chosen}-", suffix=".log", delete=False
    )
    log_path = Path(log.name)
    try:
        process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as e:
        log.close()
        raise ServerStartError(f"cannot start {args!r}: {e}") from e
    server = RunningServer(process=process, port=chosen, log_path=log_path)
    keep_log = False
    url = f"http://{HOST}:{chosen}{health_url_path}"
    try:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            code = process.poll()
            if code is not None:
                raise ServerStartError(
                    f"server {args!r} exited with code {code} before becoming healthy.\n"
                    f"--- log tail ({log_path}) ---\n{server.log_tail()}"
                )
            if _healthy(url, timeout=2.0):
                break
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"server {args!r} not healthy at {url} after {timeout:.0f}s.\n"
                    f"--- log tail ({log_path}) ---\n{server.log_tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        try:
            yield server
        except BaseException as exc:
            # The caller failed while the server ran: the server's side of the story
            # usually explains it. Keep the log file and quote its tail.
            keep_log = True
            exc.add_note(f"--- server log tail ({log_path}) ---\n{server.log_tail(2000)}")
            raise
    finally:
        stop_process(process)
        log.close()
        if not keep_log:
            with suppress(OSError):
                log_path.unlink()
