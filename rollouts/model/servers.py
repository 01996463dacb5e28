"""Start a server subprocess on a free 127.0.0.1 port, wait until healthy, and
always stop it (with its children) afterwards.

>>> argv = ["python", "-m", "my.server", "--host", "127.0.0.1", "--port", "{port}"]
>>> # with start_server(argv, "/health") as srv:  srv.base_url, srv.port, srv.process

``{port}`` anywhere in ``argv`` (or in ``env`` values) is replaced by the
chosen port. The process runs in its own process group, so stopping it also
stops whatever it spawned (uvicorn workers, Ray helpers): SIGTERM, then
SIGKILL after a grace period. Its stdout and stderr go to a temporary log
file whose tail is quoted in any start-up error.

No process outlives the run: besides the stop above (normal end, error, Ctrl-C,
SIGTERM), the child gets a *lifeline*, the read end of a pipe only this process
writes to (``GAMEBRIDGE_LIFELINE_FD``; ``adapters._lifeline.watch()`` in the
server's ``main``): if this process dies, SIGKILL included, the server stops its
own process group.

:class:`SupervisedServer` adds what a run needs: a thread notices at once when
the server dies (``dead``, ``died_log``), and it is restarted once, on the same
port, so the tasks after it go on; a second death is final.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
LIFELINE_VAR = "GAMEBRIDGE_LIFELINE_FD"
"""Matches ``adapters._lifeline.ENV_VAR``."""
LOG_VAR = "GAMEBRIDGE_SERVER_LOG"
"""Matches ``adapters._lifeline.LOG_VAR``."""


def serve_in_foreground(app: Any, sock: socket.socket, ready: str, log_level: str) -> None:
    """Serve ``app`` on the listening ``sock`` until Ctrl-C or SIGTERM; print ``ready``
    once it serves, not before. The socket accepts connections as soon as it listens, so a
    line printed then lets a person (or a test) press Ctrl-C while asyncio is still building
    its event loop: the ``KeyboardInterrupt`` then lands outside uvicorn's signal handling,
    and the half-built loop's ``__del__`` prints a traceback."""
    import uvicorn

    class _Server(uvicorn.Server):  # type: ignore[misc]
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                print(ready, flush=True)

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="off")
    try:
        _Server(config).run(sockets=[sock])
    finally:
        sock.close()


class ServerStartError(RuntimeError):
    """The server exited or never became healthy; the message has its log tail."""


class ServerDiedError(RuntimeError):
    """A server this run started died while tasks used it."""

    source = "environment server"

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class RunningServer:
    """A started, healthy server."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    lifeline: int | None = None
    """The write end of the child's lifeline pipe (closed when the server is stopped)."""

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://{HOST}:{self.port}"

    def log_tail(self, max_chars: int = 4000) -> str:
        """The end of the server's combined stdout/stderr."""
        return _tail(self.log_path, max_chars)


ANNOUNCE: Callable[[str], None] | None = None
"""Told one line when a server starts and what it waits for (the CLI sets it to
print to stderr, so a long start-up shows life; ``None``: silent, as in tests)."""


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
    read_end, write_end = os.pipe()  # both non-inheritable; pass_fds hands down read_end
    full_env[LIFELINE_VAR] = str(read_end)
    full_env[LOG_VAR] = str(log_path)  # removed by the server if this process dies
    try:
        process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
            pass_fds=(read_end,),
        )
    except OSError as e:
        log.close()
        os.close(write_end)
        raise ServerStartError(f"cannot start {args!r}: {e}") from e
    finally:
        os.close(read_end)
    server = RunningServer(process=process, port=chosen, log_path=log_path, lifeline=write_end)
    keep_log = False
    url = f"http://{HOST}:{chosen}{health_url_path}"
    if ANNOUNCE is not None:
        what = args[2] if args[1:2] == ["-m"] and len(args) > 2 else Path(args[0]).name
        ANNOUNCE(
            f"started {what} (pid {process.pid}): waiting up to {timeout:.0f}s for {url} to answer"
        )
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
        with suppress(OSError):
            os.close(write_end)
        log.close()
        if not keep_log:
            with suppress(OSError):
                log_path.unlink()


class SupervisedServer:
    """A server for a whole run: started by :func:`start_server`, watched by a
    thread (its death is noticed at once), restarted once on the same port.

    ``with SupervisedServer(name, argv, ...) as srv:`` — ``srv.base_url`` stays
    valid across the restart; ``srv.generation`` counts starts; ``srv.check()``
    raises :class:`ServerDiedError` (with the dead server's log tail) when the
    server is down for good; ``srv.died_since(gen)`` tells a task that started
    under generation ``gen`` that its server died meanwhile."""

    def __init__(
        self, name: str, argv: Sequence[str], health_url_path: str = "/health", **kw: Any
    ) -> None:
        self.name = name
        self._argv = list(argv)
        self._health = health_url_path
        self._kw = kw
        self._kw.setdefault("port", free_port())
        self.port: int = int(self._kw["port"])
        self.generation = 0
        self.deaths = 0
        self.died_log = ""
        self.final = False
        self._manager: Any = None
        self._server: RunningServer | None = None
        self._closing = False
        self._lock = threading.Lock()
        self._up = threading.Event()
        self.keep_log = False
        """Keep the log file after the run (set when a task failed on this server)."""

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def server(self) -> RunningServer | None:
        return self._server

    def _start(self) -> None:
        manager = start_server(self._argv, self._health, **self._kw)
        self._server = manager.__enter__()
        self._manager = manager
        self.generation += 1
        self._up.set()
        threading.Thread(
            target=self._watch, args=(self._server.process, self.generation), daemon=True
        ).start()

    def _watch(self, process: subprocess.Popen[bytes], generation: int) -> None:
        code = process.wait()
        with self._lock:
            if self._closing or generation != self.generation:
                return
            self._up.clear()
            self.deaths += 1
            tail = self._server.log_tail(3000) if self._server else ""
            self.died_log = f"exit code {code}\n{tail}"
            self._stop_manager(keep_log=True)
            if self.deaths > 1:
                self.final = True
                return
        try:  # restart once, same port: clients keep their URL
            with self._lock:
                if not self._closing:
                    self._start()
        except Exception as e:  # a failed restart is final, and said so
            with self._lock:
                self.final = True
                self.died_log += f"\nrestart failed: {e}"

    def _stop_manager(self, keep_log: bool = False) -> None:
        manager, self._manager = self._manager, None
        if manager is None:
            return
        if keep_log:
            err = ServerDiedError("kept")
            with suppress(BaseException):
                manager.__exit__(ServerDiedError, err, None)
        else:
            manager.__exit__(None, None, None)

    def died_since(self, generation: int, wait: float = 0.0) -> bool:
        """Whether the server died since ``generation`` began (waiting up to
        ``wait`` s for the watcher, which may hear of a death after a client did)."""
        deadline = time.monotonic() + wait
        while True:
            if self.generation != generation or not self._up.is_set() or self.final:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def log_tail(self, max_chars: int = 3000) -> str:
        """The current (or last) server's log tail, with its path."""
        srv = self._server
        if srv is None:
            return ""
        return f"--- {self.name} server log ({srv.log_path}) ---\n{srv.log_tail(max_chars)}"

    def alive(self) -> bool:
        s = self._server
        return self._up.is_set() and s is not None and s.process.poll() is None

    def error(self, what: str = "") -> ServerDiedError:
        """The error naming this server's death (for a task that ran on it)."""
        restart = (
            "not restarted (it died again)" if self.final else f"restarted on port {self.port}"
        )
        first = self.died_log.splitlines()[0] if self.died_log else "exited"
        return ServerDiedError(
            f"the {self.name} server died ({first}){what}; {restart}", log=self.died_log
        )

    def check(self, wait: float = 60.0) -> int:
        """The current generation once the server is up (waiting for a restart in
        progress); :class:`ServerDiedError` if it is down for good."""
        deadline = time.monotonic() + wait
        while not self._up.is_set():
            if self.final or time.monotonic() > deadline:
                raise self.error()
            time.sleep(0.05)
        return self.generation

    def __enter__(self) -> SupervisedServer:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._closing = True
            self._stop_manager(keep_log=self.keep_log or exc[0] is not None)
