"""``run_parallel``: calls on a thread pool, results in input order, with a progress
bar, per-result hook and a stop event: how :meth:`rollouts.drivers.base.Driver.run`
runs a batch's tasks (and the arena its games). Standard library (tqdm if present)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_parallel(
    items: Sequence[T],
    fn: Callable[[T], R],
    *,
    concurrency: int = 1,
    progress: bool = False,
    desc: str = "rollouts",
    on_result: Callable[[int, R], None] | None = None,
    stop: threading.Event | None = None,
) -> list[R]:
    """``[fn(x) for x in items]`` on ``concurrency`` threads, results in input
    order, with a tqdm bar when ``progress``. The first exception propagates
    (the calls not yet started are cancelled).

    ``on_result(i, result)`` is called as soon as item ``i`` is done (from the
    thread that ran it). Once ``stop`` is set no new item starts; the running
    ones finish and the result list holds only the items that ran."""
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=len(items), desc=desc, unit="ep")
        except ImportError:  # progress bars are a nicety, not a requirement
            bar = None
    done: dict[int, R] = {}

    def wrapped(i: int, item: T) -> None:
        if stop is not None and stop.is_set():
            return
        result = fn(item)
        done[i] = result
        if on_result is not None:
            on_result(i, result)
        if bar is not None:
            bar.update(1)

    try:
        if concurrency <= 1 or len(items) <= 1:
            for i, item in enumerate(items):
                wrapped(i, item)
        else:
            pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=desc)
            try:
                futures = [pool.submit(wrapped, i, item) for i, item in enumerate(items)]
                for future in as_completed(futures):
                    future.result()
            finally:
                # An error or an interrupt: cancel what has not started, do not wait here.
                pool.shutdown(wait=False, cancel_futures=True)
        return [done[i] for i in sorted(done)]
    finally:
        if bar is not None:
            bar.close()
