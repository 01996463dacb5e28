"""Where episodes run: ``thread`` (the driver's own pool, the default) or ``ray``.

``run_tasks(driver, tasks, executor=...)`` is the one seam ``eval`` and
``compare`` call instead of ``driver.run``:

* ``thread``: ``driver.run(tasks, ...)`` unchanged (a thread pool of
  ``concurrency`` inside this process, see ``rollouts.drivers.base``).
* ``ray``: one Ray task per episode. Each task unpickles the driver on a Ray
  worker and plays the episode there (:func:`play_one`): the worker has its own
  session (its client, its environment server if the driver starts one) and
  plays exactly the episode the thread executor would; the episode is still
  ``core.Episode`` through the driver's framework, nothing is re-implemented.
  Results come back in task order whatever order they finish in, so the JSONL
  is the same file. A worker that dies (killed, out of memory, node lost) has
  its episode re-run by Ray up to ``max_retries`` times; an episode that raises
  is reported by task id and not retried (it would fail the same way).

Each worker process keeps one session per driver (:func:`play_one`): a driver
that starts a server (OpenEnv, NeMo Gym) starts it once on that worker and plays
all the worker's episodes against it, as the thread executor plays a run against
one server. Drivers that run a batch themselves (Verifiers' ``Env``, ORS from
``.venv`` through ``.venv-ors``) play each episode as a run of one.

With no ``ray_address`` a local cluster of ``concurrency`` CPUs is started for
the run (:func:`local_cluster`: every process of it listens on 127.0.0.1 only)
and stopped after it; ``ray_address`` (``auto``, ``ray://head:10001``, ``head:6379``)
joins an existing cluster instead, whose size then decides how many episodes
run at once. If Ray is already initialised in this process (a test, a
notebook), that cluster is used and left running. The model endpoint
(``base_url``) must be reachable from the workers: on a real cluster, pass
``--base-url`` of a server the nodes can reach, not the embedded one.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from adapters._lazy import needs
from rollouts.drivers.base import (
    RolloutRecord,
    RunContext,
    RunRequest,
    as_tasks,
    failure_record,
    run_request,
)

if TYPE_CHECKING:
    from core.tasks import Task
    from rollouts.drivers.base import Driver

EXECUTORS: tuple[str, ...] = ("thread", "ray")
MAX_RETRIES = 3
"""Ray re-runs an episode whose worker died this many times (Ray's own default)."""


def run_tasks(
    driver: Driver,
    tasks: Iterable[Task | dict[str, Any]],
    request: RunRequest | None = None,
    **settings: Any,
) -> list[RolloutRecord]:
    """One record per task, in task order, run by the request's ``executor``.

    ``request`` (or its fields as keywords, as for ``Driver.run``): its
    ``on_record(index, record)`` and ``stop`` mean what they mean for ``Driver.run``:
    each record is handed over as soon as its episode ends (eval writes it there),
    and once ``stop`` is set no new episode starts."""
    r = run_request(request, settings)
    if r.executor == "thread":
        if r.ray_address is not None:
            raise ValueError("--ray-address needs --executor ray")
        return driver.run(tasks, request=r)
    if r.executor == "ray":
        return run_on_ray(driver, tasks, r, num_cpus=max(1, r.concurrency))
    raise ValueError(f"unknown executor {r.executor!r}; known: {', '.join(EXECUTORS)}")


def _import_ray() -> Any:
    with needs("--executor ray", "Ray", "ray"):
        import ray
    return ray


LOOPBACK_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch between cluster mode (Linux's default) and its single-machine mode
(the macOS and Windows default), read by Ray's Python and C++ alike. In cluster mode
Ray turns ``_node_ip_address="127.0.0.1"`` back into the machine's address
(``services.resolve_ip_for_localhost``) and every gRPC server (GCS, raylet, each
worker, the driver) listens on all interfaces; in single-machine mode the node
address stays 127.0.0.1 and each of them binds 127.0.0.1 only (Ray's
``GrpcServer``: ``listen_to_localhost_only`` when the node address is 127.0.0.1)."""


@contextmanager
def local_cluster(num_cpus: int, ray: Any = None) -> Iterator[Any]:
    """A local Ray cluster of ``num_cpus`` CPUs that nothing outside this machine can
    reach: GCS, raylet, agents, workers and this driver listen on 127.0.0.1 only
    (tests/rollouts/test_ray_executor.py reads their sockets). Ray's single-machine
    mode (:data:`LOOPBACK_VAR`) is set for the cluster's processes (they inherit
    this environment) and for this one, and put back after ``ray.shutdown()``."""
    ray = ray or _import_ray()
    from ray._private import ray_constants

    before = os.environ.get(LOOPBACK_VAR), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOOPBACK_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False  # read at import: Ray may be imported already
    try:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if before[0] is None:
            os.environ.pop(LOOPBACK_VAR, None)
        else:
            os.environ[LOOPBACK_VAR] = before[0]
        ray_constants.ENABLE_RAY_CLUSTER = before[1]


_SESSIONS: dict[tuple[str, ...], tuple[ExitStack, RunContext]] = {}
"""Per worker process: the open session of each driver that plays task by task
(see :func:`play_one`); closed when the worker exits (its servers stop with it)."""


def _per_worker(driver: Driver) -> bool:
    """The driver keeps the base ``run`` and ``run_batch``: its tasks run one by one
    through ``run_task`` inside one ``session`` (a client, or a server it starts),
    which a worker can therefore keep for all its episodes."""
    from rollouts.drivers.base import Driver

    cls = type(driver)
    return cls.run is Driver.run and cls.run_batch is Driver.run_batch


def _session(driver: Driver, base_url: str, model: str, api_key: str | None) -> RunContext:
    key = (
        type(driver).__module__,
        type(driver).__qualname__,
        repr(sorted(vars(driver).items())),
        base_url,
        model,
        str(api_key),
    )
    if key not in _SESSIONS:
        stack = ExitStack()
        ctx = stack.enter_context(
            driver.session(base_url=base_url, model=model, api_key=api_key, concurrency=1)
        )
        if not _SESSIONS:
            atexit.register(_close_sessions)
        _SESSIONS[key] = (stack, ctx)
    return _SESSIONS[key][1]


def _close_sessions() -> None:
    for stack, _ in _SESSIONS.values():
        stack.close()
    _SESSIONS.clear()


def play_one(
    driver: Driver, task: dict[str, Any], base_url: str, model: str, api_key: str | None
) -> dict[str, Any]:
    """The body of one Ray task: the driver plays one episode on this worker.

    A driver with the base ``run`` and ``run_batch`` (core, GEM, SkyRL Gym, TRL,
    OpenEnv, NeMo Gym) keeps one session per worker process, as the thread
    executor keeps one per run: one client (a new HTTP client costs ~0.1-0.7 s
    of CA-bundle loading) and, for OpenEnv and NeMo Gym, one server per worker,
    not one per episode. A driver that runs a batch itself (Verifiers, ORS from
    ``.venv``) runs ``driver.run([task])``: a session for the episode."""
    from core.tasks import Task

    if _per_worker(driver):
        ctx = _session(driver, base_url, model, api_key)
        record = driver.run_guarded(Task.from_dict(task), ctx, 0)
    else:
        (record,) = driver.run(
            [task], base_url=base_url, model=model, api_key=api_key, concurrency=1
        )
    return record.to_dict()


def run_on_ray(
    driver: Driver,
    tasks: Iterable[Task | dict[str, Any]],
    request: RunRequest | None = None,
    *,
    num_cpus: int = 2,
    max_retries: int = MAX_RETRIES,
    cpus_per_task: int = 1,
    **settings: Any,
) -> list[RolloutRecord]:
    """Each task as one Ray task (``cpus_per_task`` CPUs each, so at most num_cpus //
    cpus_per_task run at once); records in task order.

    An episode that fails (its worker died more than ``max_retries`` times, or
    Ray itself failed) gets a failure record, as on threads; each failure is
    also printed as it happens. Once ``stop`` is set, episodes not yet started
    are cancelled and left out. ``request`` (or its fields as keywords): the run;
    its ``ray_address`` names a cluster to join, else one of ``num_cpus`` CPUs is
    started for the run.
    """
    r = run_request(request, settings)
    ray = _import_ray()
    task_list = as_tasks(tasks)
    if not task_list:
        return []
    driver.adopt(r)  # the call policy travels with the driver to the workers
    with ExitStack() as stack:
        if not ray.is_initialized():
            if r.ray_address:
                ray.init(address=r.ray_address, log_to_driver=False)
                stack.callback(ray.shutdown)
            else:
                stack.enter_context(local_cluster(num_cpus, ray))
        driver.prepare(task_list)  # settings of the whole run, before the workers' sessions
        remote = ray.remote(play_one).options(
            num_cpus=cpus_per_task, max_retries=max_retries, retry_exceptions=False
        )
        driver_ref = ray.put(driver)
        refs = [
            remote.remote(driver_ref, t.to_dict(), r.base_url, r.model, r.api_key)
            for t in task_list
        ]
        return _collect(
            ray,
            refs,
            task_list,
            driver.name or type(driver).__name__,
            r.progress,
            r.on_record,
            r.stop,
        )


def _collect(
    ray: Any,
    refs: Sequence[Any],
    tasks: Sequence[Task],
    desc: str,
    progress: bool,
    on_record: Callable[[int, RolloutRecord], None] | None = None,
    stop: threading.Event | None = None,
) -> list[RolloutRecord]:
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[RolloutRecord | None] = [None] * len(refs)
    bar = _bar(len(refs), desc) if progress else None
    pending = list(refs)
    cancelled = False
    try:
        while pending:
            if stop is not None and stop.is_set() and not cancelled:
                cancelled = True
                for ref in pending:  # running episodes finish; queued ones never start
                    ray.cancel(ref, force=False)
            done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            for ref in done:
                i = index[ref]
                try:
                    record = RolloutRecord.from_dict(ray.get(ref))
                except Exception as e:  # reported per task; the others go on
                    if cancelled and type(e).__name__ == "TaskCancelledError":
                        continue
                    cause = getattr(e, "cause", None) or e
                    record = failure_record(desc, tasks[i], cause)
                    lines = str(cause).strip().splitlines()
                    message = f"{type(cause).__name__}: {lines[-1] if lines else ''}"
                    print(f"{desc}: task {tasks[i].task_id} FAILED: {message}", file=sys.stderr)
                record.index = i
                results[i] = record
                if on_record is not None:
                    on_record(i, record)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return [r for r in results if r is not None]


def _bar(total: int, desc: str) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # progress bars are a nicety, not a requirement
        return None
    return tqdm(total=total, desc=f"{desc} (ray)", unit="ep")
