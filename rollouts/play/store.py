"""The play page's open games by id (``SessionStore``): a cap and an idle timeout,
apart from the games themselves (``rollouts.play.session``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rollouts.play.session import PlayError


class SessionStore:
    """Open games by id: at most ``cap`` at once, each dropped after ``idle_seconds``
    without a request (checked on every request; no background thread)."""

    def __init__(
        self,
        cap: int = 32,
        idle_seconds: float = 1800.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cap = cap
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._sessions: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.expired = 0

    def _sweep(self) -> None:
        now = self.clock()
        for sid in [s for s, v in self._sessions.items() if now - v.last_used > self.idle_seconds]:
            del self._sessions[sid]
            self.expired += 1

    def add(self, session: Any) -> str:
        import secrets

        with self._lock:
            self._sweep()
            if len(self._sessions) >= self.cap:
                raise PlayError(
                    f"too many open sessions ({self.cap}); close one, or wait until an idle one "
                    f"expires ({self.idle_seconds:g} s without a request)",
                    status=429,
                )
            sid = secrets.token_urlsafe(12)
            session.last_used = self.clock()
            self._sessions[sid] = session
            return sid

    def get(self, sid: str) -> Any:
        with self._lock:
            self._sweep()
            session = self._sessions.get(sid)
            if session is None:
                raise PlayError(f"no session {sid[:40]!r} (closed, or idle too long)", status=404)
            session.last_used = self.clock()
            return session

    def remove(self, sid: str) -> bool:
        with self._lock:
            return self._sessions.pop(sid, None) is not None

    def __len__(self) -> int:
        with self._lock:
            self._sweep()
            return len(self._sessions)
