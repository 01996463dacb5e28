"""adapters/_sessions.py, the session store every server adapter hosts its games in:
cap, idle expiry (a fake clock: no timed assertion), busy sessions kept, one close
path with its callback, per-value locks, stats, and a framework's own tables."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters._sessions import SessionMissingError, SessionsFullError, SessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store(**kwargs: Any) -> tuple[SessionStore[Any], Clock, list[tuple[str, Any, str]]]:
    clock, closed = Clock(), []
    s: SessionStore[Any] = SessionStore(
        clock=clock, on_close=lambda k, v, r: closed.append((k, v, r)), **kwargs
    )
    return s, clock, closed


def test_add_get_close_through_one_path() -> None:
    s, _, closed = store()
    s.add("a", "game-a")
    assert s.get("a") == "game-a" and "a" in s and len(s) == 1
    assert s.close("a", "finished") == "game-a"
    assert closed == [("a", "game-a", "finished")]
    assert s.close("a") is None and len(closed) == 1  # closing twice: a no-op
    with pytest.raises(SessionMissingError, match="no game here"):
        s.get("a", "no game here")


def test_the_cap_refuses_a_new_key_with_the_reason() -> None:
    s, _, _ = store(max_sessions=2, idle_timeout_s=60, what="live games", release="finish some")
    s.add("a", 1)
    s.add("b", 2)
    with pytest.raises(SessionsFullError) as refused:
        s.add("c", 3)
    assert str(refused.value) == (
        "2 live games, this server's max_sessions: finish some (idle ones expire after 60 s)"
    )
    s.add("a", 4)  # a key already held is reopened, not refused; its old value is closed
    assert s.get("a") == 4 and len(s) == 2


def test_reopening_closes_the_old_value() -> None:
    s, _, closed = store()
    s.add("a", "old")
    s.add("a", "new")
    assert closed == [("a", "old", "replaced")]


def test_idle_sessions_expire_and_are_reaped_at_add() -> None:
    s, clock, closed = store(max_sessions=1, idle_timeout_s=10)
    s.add("a", 1)
    clock.now = 9
    assert s.get("a") == 1  # touched at 9
    clock.now = 19
    assert s.stats() == {"active": 1, "stored": 1, "max": 1, "idle_timeout_s": 10}
    clock.now = 19.5
    assert s.stats()["active"] == 0 and s.stats()["stored"] == 1  # stats never reap
    s.add("b", 2)  # the full store makes room by reaping the idle one
    assert closed == [("a", 1, "expired")]
    clock.now = 40
    with pytest.raises(SessionMissingError):
        s.get("b")
    assert closed[-1] == ("b", 2, "expired")


def test_busy_sessions_are_never_idle() -> None:
    flags = {"a": True}
    s, clock, closed = store(idle_timeout_s=10, busy=lambda k, v: flags.get(k, False))
    s.add("a", 1)
    s.add("b", 2)
    clock.now = 30
    with s.working("b"):
        assert s.reap() == []  # a busy in the framework's eyes, b in a piece of work
    assert closed == []
    flags["a"] = False
    clock.now = 39  # idle time counts from the last moment each was busy (30)
    assert s.reap() == []
    clock.now = 41
    assert s.reap() == ["a", "b"] and [c[0] for c in closed] == ["a", "b"]


def test_no_timeout_means_no_expiry() -> None:
    s, clock, _ = store()
    s.add("a", 1)
    clock.now = 1e9
    assert s.reap() == [] and s.get("a") == 1


def test_a_frameworks_own_tables() -> None:
    values: dict[str, Any] = {"x": "env"}
    seen = {"x": 0.0}
    s, clock, _ = store(max_sessions=1, idle_timeout_s=5, values=values, seen=seen)
    assert len(s) == 1 and s.full()
    clock.now = 6
    assert s.idle() == ["x"]
    values.pop("x")  # the framework deleted it itself
    assert s.idle() == [] and not s.full()


def test_one_lock_per_value_outlives_the_entry() -> None:
    s, _, _ = store()
    game = type("Game", (), {})()
    s.add("a", game)
    lock = s.lock(game)
    s.close("a")
    assert s.lock(game) is lock

    async def overlap() -> int:
        running = peak = 0

        async def work() -> None:
            nonlocal running, peak
            async with s.lock(game):
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0)
                running -= 1

        await asyncio.gather(*(work() for _ in range(4)))
        return peak

    assert asyncio.run(overlap()) == 1


def test_reap_every_runs_the_frameworks_reaper() -> None:
    s, _, _ = store()
    calls: list[int] = []

    async def reap() -> None:
        calls.append(1)

    async def run() -> None:
        task = asyncio.create_task(s.reap_every(0, reap))
        while len(calls) < 3:
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(run())
    assert len(calls) >= 3


def test_reaping_runs_the_reaper_for_as_long_as_the_lifespan() -> None:
    import contextlib

    s, _, _ = store()
    calls: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        calls.append("up")
        yield {"app": app}
        calls.append("down")

    async def reap() -> None:
        calls.append("reap")

    async def run() -> None:
        async with s.reaping(lifespan, 0, reap)("the app") as state:
            assert state == {"app": "the app"}
            while calls.count("reap") < 2:
                await asyncio.sleep(0)
        reaped = calls.count("reap")
        for _ in range(5):
            await asyncio.sleep(0)
        assert calls.count("reap") == reaped  # stopped with the lifespan

    asyncio.run(run())
    assert calls[0] == "up" and calls[-1] == "down"


def test_play_runs_a_search_off_the_event_loop_and_the_rest_on_it() -> None:
    """``play`` (and ``SessionStore.play``, which also takes the value's lock): work that
    can wait on an opponent's search runs in a worker thread, the rest on the loop."""
    import threading

    from adapters._sessions import play
    from core import Episode, Task

    def where() -> bool:  # on the event loop's thread?
        return threading.current_thread() is threading.main_thread()

    searching = Episode(Task(game="tictactoe", depth=4, random_move_prob=0.0))
    quick = Episode(Task(game="tictactoe", opponent="random"))
    assert searching.searches and not quick.searches

    async def main() -> list[bool]:
        s: SessionStore[Any] = SessionStore()
        return [
            await play(None, where),
            await play(quick, where),
            await play(searching, where),
            await s.play(quick, where),
            await s.play(searching, where),
        ]

    assert asyncio.run(main()) == [True, True, False, True, False]


def test_needs_names_the_extra_and_keeps_the_cause() -> None:
    from adapters._lazy import needs

    hint = needs("adapters.x", "x-framework 1.0", "x", " or make setup-x")
    with pytest.raises(ImportError) as info, hint:
        import gamebridge_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert str(info.value) == (
        "adapters.x needs x-framework 1.0; install with: pip install -e '.[x]' or make setup-x"
    )
    assert isinstance(info.value.__cause__, ModuleNotFoundError)
