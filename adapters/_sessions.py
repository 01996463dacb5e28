"""The session store every server adapter hosts its games in (standard library only).

One ``SessionStore`` per server: a key (a cookie's session id, a WebSocket
session's id, an ORS ``X-Session-ID``) -> the session's value (an ``Episode``, an
environment), with

* a cap (``max_sessions``): ``add`` of a new key over it raises
  ``SessionsFullError`` (the server answers 429 with its message);
* idle expiry (``idle_timeout_s``): a session not touched for longer, and not busy,
  is expired: ``get`` refuses it (``SessionMissingError``, a 404) and ``reap`` (run
  at every ``add``, or on a timer by ``reap_every``, which ``reaping`` runs for as
  long as an ASGI app's lifespan lasts) closes it;
* one close path, ``close``: every way a session ends (finished, verified,
  expired, replaced, the client gone) goes through it, and it calls the server's
  ``on_close`` callback;
* a lock per value (``lock``): one piece of game work per session at a time;
* ``stats`` for ``GET /sessions``;
* ``play``: core's game work on a session, one piece at a time, on the event loop
  unless it can wait on an opponent's search (module-level :func:`play`, which the
  servers whose framework keeps the sessions use alone).

A framework that keeps its own session table (openreward's ``Server``) hands the
store that table (``values``, ``seen``) instead of a copy, so the cap, the count and
the idle test read the framework's truth; its own delete then closes sessions
(``idle`` lists the keys to close).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

V = TypeVar("V")
R = TypeVar("R")


async def play(episode: Any, work: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``work(*args, **kwargs)``, core's game work on ``episode``, where it costs least:
    on the event loop when the step cannot wait on an opponent's search (a random
    opponent or none: tens of µs, less than the hop to a worker thread and back, ~90 µs
    on OpenEnv, ~0.5 ms of CPU on the ORS and NeMo Gym servers), else in a worker
    thread, so that a search (seconds at a high task ``depth``) never stalls the
    server's other sessions. ``episode`` ``None`` (not started): on the loop."""
    if episode is None or not episode.searches:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)


class SessionsFullError(RuntimeError):
    """A new session over the store's ``max_sessions``: the server answers 429."""


class SessionMissingError(LookupError):
    """No live session under the key (never opened, closed or expired): a 404."""


class SessionStore(Generic[V]):
    """Sessions by key: cap, idle expiry, per-value lock, stats, one close path."""

    def __init__(
        self,
        max_sessions: int | None = None,
        idle_timeout_s: float | None = None,
        *,
        on_close: Callable[[str, V, str], None] | None = None,
        busy: Callable[[str, V], bool] | None = None,
        values: MutableMapping[str, V] | None = None,
        seen: MutableMapping[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        what: str = "live sessions",
        release: str = "close some",
    ) -> None:
        self.what, self.release = what, release
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.on_close = on_close
        self._busy = busy
        self._values: MutableMapping[str, V] = {} if values is None else values
        self._seen: MutableMapping[str, float] = {} if seen is None else seen
        self._clock = clock
        self._working: dict[str, int] = {}
        self._locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def full_message(self) -> str:
        """Why ``add`` refused a session (the 429's detail)."""
        timeout = self.idle_timeout_s
        expiry = "" if timeout is None else f" (idle ones expire after {timeout:g} s)"
        return f"{len(self)} {self.what}, this server's max_sessions: {self.release}{expiry}"

    def full(self) -> bool:
        return self.max_sessions is not None and len(self) >= self.max_sessions

    def add(self, key: str, value: V) -> None:
        """Store ``value`` under ``key`` (a session reopened replaces its old value,
        which is closed). Idle sessions are reaped first; over the cap: refused."""
        self.reap()
        if key not in self._values and self.full():
            raise SessionsFullError(self.full_message())
        if key in self._values and self._values[key] is not value:
            self.close(key, "replaced")
        self._values[key] = value
        self._seen[key] = self._clock()

    def touch(self, key: str) -> None:
        if key in self._values:
            self._seen[key] = self._clock()

    def busy(self, key: str) -> bool:
        """Working (game work under ``working``, or the framework says so): never idle."""
        if self._working.get(key):
            return True
        value = self._values.get(key)
        return value is not None and self._busy is not None and self._busy(key, value)

    def expired(self, key: str) -> bool:
        if self.idle_timeout_s is None or key not in self._values:
            return False
        if self.busy(key):
            self.touch(key)  # idle time counts from the end of the work
            return False
        seen = self._seen.get(key, self._clock())
        return self._clock() - seen > self.idle_timeout_s

    def get(self, key: str, missing: str = "no game in this session") -> V:
        """The live value under ``key``, touched; an expired one is closed first."""
        if self.expired(key):
            self.close(key, "expired")
        if key not in self._values:
            raise SessionMissingError(missing)
        self.touch(key)
        return self._values[key]

    def close(self, key: str, reason: str = "closed") -> V | None:
        """The one way a session ends: removed, then ``on_close(key, value, reason)``.
        A key already closed is a no-op (``None``)."""
        value = self._values.pop(key, None)
        self._seen.pop(key, None)
        self._working.pop(key, None)
        if value is not None and self.on_close is not None:
            self.on_close(key, value, reason)
        return value

    def idle(self) -> list[str]:
        """The keys of expired sessions (idle past the timeout, not busy)."""
        return [key for key in list(self._values) if self.expired(key)]

    def reap(self) -> list[str]:
        """Close every expired session; their keys."""
        keys = self.idle()
        for key in keys:
            self.close(key, "expired")
        return keys

    def lock(self, value: V) -> asyncio.Lock:
        """The lock of ``value`` (held by the value, so it outlives the session's
        entry: work on a just-closed session still waits its turn)."""
        lock = self._locks.get(value)
        if lock is None:
            lock = self._locks[value] = asyncio.Lock()
        return lock

    async def play(self, value: V, work: Callable[..., R], *args: Any) -> R:
        """Core's game work on ``value`` (an ``Episode``), one piece at a time (its
        :meth:`lock`), where it costs least (:func:`play`)."""
        async with self.lock(value):
            return await play(value, work, *args)

    def working(self, key: str) -> _Working:
        """``with store.working(key):`` marks the session busy (not idle) meanwhile."""
        return _Working(self, key)

    def stats(self) -> dict[str, Any]:
        """``GET /sessions``: live (unexpired) sessions, those held in memory (expired
        ones wait for the next reap), the cap and the idle timeout."""
        live = sum(1 for key in list(self._values) if not self._stale(key))
        return {
            "active": live,
            "stored": len(self),
            "max": self.max_sessions,
            "idle_timeout_s": self.idle_timeout_s,
        }

    def _stale(self, key: str) -> bool:
        """``expired`` without touching anything (stats read, never write)."""
        if self.idle_timeout_s is None or self._working.get(key):
            return False
        value = self._values.get(key)
        if value is not None and self._busy is not None and self._busy(key, value):
            return False
        return self._clock() - self._seen.get(key, self._clock()) > self.idle_timeout_s

    async def reap_every(self, interval_s: float, reap: Callable[[], Any] | None = None) -> None:
        """Reap on a timer, forever (a server's lifespan task; cancel it to stop).
        ``reap``: the framework's own (an awaitable's result is awaited)."""
        while True:
            await asyncio.sleep(interval_s)
            result = (reap or self.reap)()
            if asyncio.iscoroutine(result):
                await result

    def reaping(
        self,
        lifespan: Callable[[Any], Any],
        interval_s: float,
        reap: Callable[[], Any] | None = None,
    ) -> Callable[[Any], Any]:
        """An ASGI app's ``lifespan`` context (Starlette's ``router.lifespan_context``)
        that also runs :meth:`reap_every` while the app is up, and stops it after."""

        @contextlib.asynccontextmanager
        async def reaping_lifespan(app: Any) -> AsyncIterator[Any]:
            async with lifespan(app) as state:
                task = asyncio.create_task(self.reap_every(interval_s, reap))
                try:
                    yield state
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

        return reaping_lifespan


class _Working:
    def __init__(self, store: SessionStore[Any], key: str) -> None:
        self.store, self.key = store, key

    def __enter__(self) -> None:
        self.store._working[self.key] = self.store._working.get(self.key, 0) + 1

    def __exit__(self, *_: object) -> None:
        left = self.store._working.get(self.key, 0) - 1
        if left > 0:
            self.store._working[self.key] = left
        else:
            self.store._working.pop(self.key, None)
        self.store.touch(self.key)


__all__ = ["SessionMissingError", "SessionStore", "SessionsFullError", "play"]
