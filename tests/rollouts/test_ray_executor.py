"""``--executor ray`` on a local 2-CPU Ray cluster: the same records as the thread
executor for every game (same trajectories, same order in the JSONL), a killed
worker's episode retried, a failing episode reported by task id; every socket the
cluster listens on is on 127.0.0.1; the server frameworks (OpenEnv, NeMo Gym) start
one server per worker, not one per episode, and give the thread executor's records."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import list_games
from core.tasks import Task, make_tasks
from rollouts import cli
from rollouts.drivers.base import DriverError, RolloutRecord, RunContext
from rollouts.drivers.core import CoreDriver
from rollouts.drivers.executors import local_cluster, run_on_ray, run_tasks
from rollouts.evaluation.export import read_records
from rollouts.model.policy_server import serve_in_thread

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.server

POLICY = "noisy:0.3/minimax:1"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local cluster for the module (a Ray start costs seconds on 2 cores)."""
    with local_cluster(2):
        yield


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(POLICY, 0) as base_url:
        yield base_url


def _same(a: list[RolloutRecord], b: list[RolloutRecord]) -> None:
    assert [r.task for r in a] == [r.task for r in b]
    assert [r.trajectory for r in a] == [r.trajectory for r in b]
    assert [r.reward for r in a] == [r.reward for r in b]
    assert [(r.framework, r.steps) for r in a] == [(r.framework, r.steps) for r in b]


@pytest.mark.parametrize("game", list_games())
def test_ray_equals_threads_for_every_game(cluster: None, url: str, game: str) -> None:
    tasks = make_tasks(4, seed=5, game=game, num_groups=2)
    for use_tools in (False, True):
        driver = CoreDriver(use_tools=use_tools)
        threads = run_tasks(driver, tasks, base_url=url, model="scripted", concurrency=2)
        on_ray = run_tasks(
            driver, tasks, base_url=url, model="scripted", concurrency=2, executor="ray"
        )
        _same(threads, on_ray)


def test_cli_eval_jsonl_is_the_same_file(cluster: None, url: str, tmp_path: Path) -> None:
    common = ["eval", "--game", "tictactoe", "-n", "6", "--base-url", url, "--concurrency", "2"]
    assert cli.main([*common, "--out", str(tmp_path / "t.jsonl")]) == 0
    assert cli.main([*common, "--executor", "ray", "--out", str(tmp_path / "r.jsonl")]) == 0
    _same(read_records(tmp_path / "t.jsonl"), read_records(tmp_path / "r.jsonl"))


def test_cli_rejects_ray_address_without_ray(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "-n", "1", "--ray-address", "auto"]) == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err


def _killer(marker_dir: str, victim: str) -> CoreDriver:
    """A core driver whose worker dies (SIGKILL) the first time it plays ``victim``.

    Defined in a function so that Ray pickles the class by value: the worker
    needs no test module on its path."""

    class KilledOnce(CoreDriver):
        def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
            marker = Path(marker_dir) / f"{task.task_id}.killed"
            if task.task_id == victim and not marker.exists():
                marker.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
            return super().run_task(task, ctx)

    return KilledOnce()


def test_killed_worker_episode_is_retried(cluster: None, url: str, tmp_path: Path) -> None:
    tasks = make_tasks(4, seed=6, game="tictactoe", num_groups=2)
    driver = _killer(str(tmp_path), tasks[1].task_id)
    on_ray = run_on_ray(driver, tasks, base_url=url, model="scripted")
    marker = tmp_path / f"{tasks[1].task_id}.killed"
    assert marker.exists(), "the victim episode never ran"
    assert int(marker.read_text()) != os.getpid()  # it died on a worker, not here
    _same(CoreDriver().run(tasks, base_url=url, model="scripted"), on_ray)


def test_killed_worker_without_retries_is_a_reported_failure(
    cluster: None, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = make_tasks(3, seed=7, game="tictactoe", num_groups=1)
    victim = tasks[2].task_id
    records = run_on_ray(
        _killer(str(tmp_path), victim), tasks, base_url=url, model="scripted", max_retries=0
    )
    # The dead worker's episode is a failure record, as on threads; the others finished.
    assert [r.index for r in records] == [0, 1, 2]
    assert [r.index for r in records if r.error] == [2]  # tasks[2] is the victim
    assert f"task {victim} FAILED" in capsys.readouterr().err


def _raiser(victim: str) -> CoreDriver:
    class Raises(CoreDriver):
        def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
            if task.task_id == victim:
                raise DriverError(f"scripted failure of {task.task_id}")
            return super().run_task(task, ctx)

    return Raises()


def test_failing_episode_is_reported_by_task(cluster: None, url: str) -> None:
    tasks = make_tasks(4, seed=8, game="tictactoe", num_groups=2)
    victim = tasks[0].task_id
    records = run_on_ray(_raiser(victim), tasks, base_url=url, model="scripted")
    assert [r.index for r in records] == [0, 1, 2, 3]
    failed = [r for r in records if r.error]
    assert [r.index for r in failed] == [0]  # tasks[0] is the victim
    assert f"scripted failure of {victim}" in str(failed[0].error)
    assert all(r.reward for r in records if not r.error)


def test_unknown_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown executor"):
        run_tasks(CoreDriver(), [], base_url="http://127.0.0.1:9/v1", model="m", executor="x")


def test_a_driver_that_runs_its_own_batch_is_not_played_task_by_task() -> None:
    """A worker keeps one session (and so one server) for drivers that keep the base
    ``run`` and ``run_batch``; Verifiers and ORS run a batch themselves."""
    from rollouts.drivers import get_driver
    from rollouts.drivers.executors import _per_worker

    for name in ("core", "openenv", "openenv_tools", "nemo_gym", "nemo_gym_tools", "gem"):
        assert _per_worker(get_driver(name)), name
    for name in ("verifiers", "ors"):
        assert not _per_worker(get_driver(name)), name


LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


def _cluster_listeners() -> list[tuple[str, int, str, int]]:
    """(process name, pid, address, port) of every listening TCP socket of this
    process and its descendants: the GCS, the raylet, the agents and the workers."""
    import psutil

    me = psutil.Process()
    rows = []
    for proc in [me, *me.children(recursive=True)]:
        try:
            name, conns = proc.name(), proc.net_connections(kind="inet")
        except psutil.Error:  # gone meanwhile
            continue
        rows += [
            (name, proc.pid, c.laddr.ip, c.laddr.port)
            for c in conns
            if c.status == psutil.CONN_LISTEN
        ]
    return rows


def test_the_local_cluster_listens_on_loopback_only(cluster: None, url: str) -> None:
    """What ``ss -ltnp`` shows during ``make eval-ray``: no Ray process listens on
    another interface (Ray's cluster mode binds 0.0.0.0 and ``::``), and the node's
    address is 127.0.0.1."""
    tasks = make_tasks(2, seed=3, game="tictactoe", num_groups=1)
    run_tasks(CoreDriver(), tasks, base_url=url, model="scripted", concurrency=2, executor="ray")
    listeners = _cluster_listeners()
    names = {name for name, *_ in listeners}
    assert {"gcs_server", "raylet"} <= names, listeners  # the cluster's servers were seen
    assert any(name.startswith("ray::") for name in names), listeners  # and its workers
    outside = [row for row in listeners if row[2] not in LOOPBACK]
    assert not outside, f"listening beyond 127.0.0.1: {outside}"
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}


def _url_logger(base: type, log_dir: str, key: str) -> Any:
    """``base`` (a server driver) that notes, per episode, the environment server it
    played against (``ctx.extra[key]``) in ``log_dir``. Defined in a function, so Ray
    pickles the class by value."""

    class Logged(base):  # type: ignore[misc, valid-type]
        def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
            url = ctx.extra[key]
            Path(log_dir, f"{task.task_id}.url").write_text(
                str(url[0] if isinstance(url, list) else url)
            )
            return super().run_task(task, ctx)

    return Logged()


def _one_server_per_worker(driver_cls: type, key: str, url: str, tmp_path: Path) -> None:
    tasks = make_tasks(6, seed=9, game="tictactoe", num_groups=2)
    threads = run_tasks(driver_cls(), tasks, base_url=url, model="scripted", concurrency=2)
    on_ray = run_on_ray(
        _url_logger(driver_cls, str(tmp_path), key), tasks, base_url=url, model="scripted"
    )
    _same(threads, on_ray)
    assert not [r for r in on_ray if r.error], [r.error for r in on_ray]
    servers = {p.read_text() for p in tmp_path.glob("*.url")}
    assert len(list(tmp_path.glob("*.url"))) == len(tasks)
    # 2 CPUs: at most two workers, each with its one server (one per episode would be 6).
    assert 1 <= len(servers) <= 2, servers


def test_ray_over_openenv_starts_one_server_per_worker(
    cluster: None, url: str, tmp_path: Path
) -> None:
    from rollouts.drivers.openenv import OpenEnvDriver

    _one_server_per_worker(OpenEnvDriver, "env_url", url, tmp_path)


def test_ray_over_nemo_gym_starts_one_server_per_worker(
    cluster: None, url: str, tmp_path: Path
) -> None:
    from rollouts.drivers.nemo_gym import NemoGymDriver

    if not NemoGymDriver().available()[0]:
        pytest.skip("no .venv-nemo (make setup-nemo)")
    _one_server_per_worker(NemoGymDriver, "urls", url, tmp_path)


@pytest.mark.parametrize("name", ["verifiers", "ors"])
def test_ray_equals_threads_for_drivers_that_run_their_own_batch(
    cluster: None, url: str, name: str
) -> None:
    """Verifiers and ORS play each Ray episode as a run of one: the same records."""
    from rollouts.drivers import get_driver

    driver = get_driver(name)
    ok, why = driver.available()
    if not ok:
        pytest.skip(why)
    tasks = make_tasks(2, seed=4, game="tictactoe", num_groups=1)
    threads = run_tasks(driver, tasks, base_url=url, model="scripted", concurrency=2)
    on_ray = run_tasks(driver, tasks, base_url=url, model="scripted", concurrency=2, executor="ray")
    assert not [r.error for r in threads + on_ray if r.error]
    _same(threads, on_ray)


def _timed(log_dir: str) -> Any:
    """The core driver noting when each episode ran (``log_dir``/<task>.span), each
    held 0.5 s so that episodes allowed to overlap do. Built in a function, so Ray
    pickles the class by value."""
    import time

    class Timed(CoreDriver):
        def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
            start = time.time()
            time.sleep(0.5)
            record = super().run_task(task, ctx)
            Path(log_dir, f"{task.task_id}.span").write_text(f"{start} {time.time()}")
            return record

    return Timed()


def _overlaps(log_dir: Path) -> int:
    """Episodes that started before the one before them (by start) had ended."""
    from itertools import pairwise

    spans = sorted(tuple(map(float, p.read_text().split())) for p in log_dir.glob("*.span"))
    return sum(1 for (_, end), (start, _) in pairwise(spans) if start < end)


def test_cpus_per_task_bounds_how_many_episodes_run_at_once(
    cluster: None, url: str, tmp_path: Path
) -> None:
    """``cpus_per_task=2`` on the 2-CPU cluster: one episode at a time (bench-scale's
    one worker, taking turns with two in the same cluster). The default, 1 CPU each,
    runs first, so both workers are up (with 1 CPU each the episodes overlapped:
    3 of 4 when the test was written); the records are the same."""
    tasks = make_tasks(4, seed=5, game="tictactoe", num_groups=1)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    paired = run_on_ray(_timed(str(two)), tasks, base_url=url, model="scripted")
    alone = run_on_ray(_timed(str(one)), tasks, base_url=url, model="scripted", cpus_per_task=2)
    _same(alone, paired)
    assert len(list(one.glob("*.span"))) == len(list(two.glob("*.span"))) == len(tasks)
    assert _overlaps(one) == 0
