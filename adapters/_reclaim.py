"""Hands the memory of ended sessions back to the system once a server goes quiet.

Shared by the servers (standard library only): a server calls
``Reclaimer.session_ended()`` on its event loop wherever a session's resources are
released; the OpenEnv server does so from its WebSocket middleware
(``adapters/_websocket.py``, which the OpenEnv server uses). ``Reclaimer``'s docstring says what held the memory
and what each step gave back.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import threading
from collections.abc import Callable

SERVER_ENV = {"PYTHONMALLOC": "malloc"}
"""The environment a long-lived server is started with (``rollouts``' launchers pass it
to the OpenEnv server): the system allocator instead of pymalloc. After the reclaim,
what pymalloc keeps is arenas pinned by a few small live objects, which no trim can
hand back; glibc's heap can be trimmed page by page. Measured with 2,000 abandoned
OpenEnv sessions (tests/faults/test_openenv_sessions.py): RSS 224.4 -> 502.5 -> 303.3
MB under pymalloc (28% of the growth kept), 226.6 -> 518.9 -> 257.7 MB under
``PYTHONMALLOC=malloc`` (11%, +31 MB). Start a server by hand with it too when it will
see bursts of abandoned sessions."""
RECLAIM_QUIET_S = 5.0
"""Seconds without a session ending before the ended sessions' memory is reclaimed."""
RECLAIM_AT_MOST_S = 60.0
"""...or this long after the first unreclaimed end, when sessions keep ending."""


def _malloc_trim() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)``, or ``None`` (another C library)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


class Reclaimer:
    """Hands back the memory of ended sessions once the server goes quiet.

    With FastMCP's caches no longer keeping every session (``env._move_tool``, ours),
    2,000 abandoned sessions, all closed, still left the server at 460 MB (from 230,
    peak 515; tests/faults/test_openenv_sessions.py). What held it, none of it ours,
    undone here in this order after ``RECLAIM_QUIET_S`` without a session ending
    (measured one step after another: -20, -47, -122 MB, to 282 MB):

    1. Reference cycles: each session's FastMCP server (its low-level server's
       handlers are bound methods of it) and uvicorn's WebSocket protocol objects
       (``websockets`` ``ServerProtocol``). An idle server allocates too little for
       CPython's full collection to run, so they waited for the next traffic:
       ``gc.collect()``.
    2. ``threading._shutdown_locks`` (CPython 3.11, ``Lib/threading.py``
       ``_set_tstate_lock``) keeps the lock of every exited non-daemon thread until
       the next thread starts, and OpenEnv gives each session its own
       ``ThreadPoolExecutor(max_workers=1)`` (``_create_session`` in
       ``openenv/core/env_server/http_server.py``): 2,000 small objects strewn over
       48 pymalloc arenas, which pymalloc cannot free while one object lives in
       them. Pruned with ``threading._maintain_shutdown_locks`` (what the next
       thread start would call), under its lock; skipped where it does not exist.
    3. glibc keeps freed memory in its arenas: ``malloc_trim(0)``, in a worker
       thread (ctypes releases the GIL), only where glibc has it.

    What stays (about 50 MB after 2,000 sessions) is pymalloc arenas that a few
    hundred small objects made during the burst and still alive keep (abc caches,
    uvicorn's and websockets' date strings, cancelled asyncio timers until due).
    The collection holds the event loop while it runs (0.5 s measured with 2,000
    ended sessions on this loaded machine), once per quiet spell, or once per
    ``RECLAIM_AT_MOST_S`` while sessions keep ending."""

    def __init__(self, quiet_s: float = RECLAIM_QUIET_S) -> None:
        self.quiet_s = quiet_s
        self._first: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._trim = _malloc_trim()
        self.rounds = 0

    def session_ended(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._first is None:
            self._first = now
        if self._timer is not None:
            self._timer.cancel()
        delay = min(self.quiet_s, max(0.0, self._first + RECLAIM_AT_MOST_S - now))
        self._timer = loop.call_later(delay, lambda: asyncio.ensure_future(self.reclaim()))

    async def reclaim(self) -> None:
        self._first, self._timer = None, None
        gc.collect()
        prune = getattr(threading, "_maintain_shutdown_locks", None)
        lock = getattr(threading, "_shutdown_locks_lock", None)
        if prune is not None and lock is not None:
            with lock:
                prune()
        if self._trim is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._trim)
        self.rounds += 1
