"""Runs that survive faults (issue 15), on the OpenEnv, NeMo Gym, Verifiers and ORS paths.

One scenario per framework, on small Tic-Tac-Toe runs behind a slow fault proxy:
the environment server is killed mid-run (restarted once, its episodes failed),
then the policy server (the remaining episodes fail, naming the model endpoint);
a ``--resume`` run is SIGKILLed mid-way (no process left: the lifeline); a last
``--resume`` completes the file. Every finished episode stays in the file,
unchanged, and the completed file equals an uninterrupted run (core's, which every
framework must equal) up to timing fields. The heavy matrix is ``make faults``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    FaultProxy,
    children,
    count_lines,
    eval_argv,
    kill_all,
    policy_server,
    start_eval,
    wait_for,
    wait_gone,
)

from core.tasks import make_tasks
from rollouts.drivers import driver_status, get_driver
from rollouts.drivers.base import TOOLS
from rollouts.drivers.core import CoreDriver
from rollouts.evaluation.records import read_run

pytestmark = pytest.mark.server

N = 8
POLICY = "noisy:0.3/minimax:1"
CALL = ["--model-timeout", "5", "--model-retries", "1", "--model-backoff", "0.1"]
ENV_SERVER = {
    "openenv": "adapters.openenv",
    "nemo_gym": "adapters.nemo_gym --style",
    "verifiers": None,  # Verifiers runs its environment in process: no server to kill
    "ors": "adapters.ors",  # from .venv: in the .venv-ors child's process group
}


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _essence(rec: Any) -> dict[str, Any]:
    return {
        "index": rec.index,
        "task": rec.task,
        "trajectory": rec.trajectory,
        "reward": rec.reward,
    }


def _reference(url: str, framework: str = "core") -> dict[int, dict[str, Any]]:
    """Core's records for the run's tasks, in ``framework``'s mode (text or tools)."""
    tasks = make_tasks(n=N, seed=0, game="tictactoe", num_groups=4)
    tools = get_driver(framework).mode == TOOLS
    records = CoreDriver(use_tools=tools).run(tasks, base_url=url, model="scripted")
    return {r.index: _essence(r) for r in records if r.index is not None}


@pytest.mark.parametrize(
    "framework",
    [
        "openenv",  # make test; the other two paths in `make faults` (each ~40 s)
        pytest.param("nemo_gym", marks=[pytest.mark.nemo, pytest.mark.slow]),
        pytest.param("verifiers", marks=pytest.mark.slow),
        pytest.param("ors", marks=pytest.mark.slow),
    ],
)
def test_kills_mid_run_lose_nothing_and_resume_completes(framework: str, tmp_path: Path) -> None:
    ok, why = driver_status(framework)
    if not ok:
        pytest.skip(why)
    out = tmp_path / "run.jsonl"
    port = None
    with policy_server(POLICY) as srv:
        port = srv.port
        with FaultProxy(srv.base_url + "/v1", delay=0.15) as proxy:
            argv = eval_argv(framework, N, out, proxy.url, "--concurrency", "2", *CALL)
            first = start_eval(argv, tmp_path / "first.log")
            try:
                wait_for(lambda: count_lines(out) >= 2, 240, "two records")
                server_kind = ENV_SERVER[framework]
                if server_kind is not None:
                    (victim,) = [p for p in children(first.pid) if server_kind in _cmdline(p)][:1]
                    os.kill(victim, signal.SIGKILL)
                    mark = count_lines(out)
                    wait_for(lambda: count_lines(out) >= mark + 2, 240, "records after the restart")
                snapshot = read_run(out).finished()
                assert snapshot, "no finished episode before the policy server was killed"
                os.kill(srv.process.pid, signal.SIGKILL)
                code = first.wait(timeout=300)
            finally:
                kids = children(first.pid)
                if first.poll() is None:
                    first.kill()
            assert wait_gone(kids, 30) == [], "processes left after the run ended"
    log = (tmp_path / "first.log").read_text()
    assert code == 1, log[-3000:]
    assert "model endpoint failed" in log, log[-3000:]
    if ENV_SERVER[framework] is not None:
        assert "environment server failed" in log and "server died" in log, log[-3000:]
    assert "resume with: gamebridge eval" in log
    run = read_run(out)
    for i, rec in snapshot.items():  # nothing finished is lost or changed
        assert _essence(run.records[i]) == _essence(rec)
    assert any(r.error for r in run.records.values())

    with policy_server(POLICY, port=port) as srv:
        reference = _reference(srv.base_url + "/v1", framework)
        with FaultProxy(srv.base_url + "/v1", delay=0.15) as proxy:
            argv = eval_argv(framework, N, out, proxy.url, "--concurrency", "2", *CALL)
            before = len(read_run(out).finished())
            second = start_eval([*argv, "--resume"], tmp_path / "second.log")
            try:
                wait_for(
                    lambda: len(read_run(out, warn=False).finished()) > before,
                    240,
                    "a resumed record",
                )
                kids = children(second.pid)
                second.send_signal(signal.SIGKILL)
                second.wait(timeout=30)
            finally:
                if second.poll() is None:
                    second.kill()
            assert bool(kids) == (ENV_SERVER[framework] is not None)
            assert wait_gone(kids, 30) == [], "servers outlived a SIGKILLed eval"
            third = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=600)
    assert third.returncode == 0, third.stdout[-2000:] + third.stderr[-2000:]
    final = read_run(out)
    assert sorted(final.finished()) == list(range(N))
    got = {i: _essence(r) for i, r in final.finished().items()}
    assert got == reference
    assert {r.framework for r in final.records.values()} == {framework}


@pytest.mark.parametrize("framework", ["openenv", pytest.param("ors", marks=pytest.mark.slow)])
def test_sigterm_and_ctrl_c_keep_whole_lines_and_leave_nothing(
    framework: str, tmp_path: Path
) -> None:
    """SIGTERM stops now (exit 143), Ctrl-C drains (exit 130); both print how to resume.
    ORS from ``.venv``: the ``.venv-ors`` child is drained or stopped with the eval (a
    Ctrl-C once hung over 120 s with 0 records, once ended with a traceback)."""
    ok, why = driver_status(framework)
    if not ok:
        pytest.skip(why)
    with policy_server(POLICY) as srv, FaultProxy(srv.base_url + "/v1", delay=0.3) as proxy:
        for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
            out = tmp_path / f"{sig.name}.jsonl"
            argv = eval_argv(framework, N, out, proxy.url, "--concurrency", "2", *CALL)
            proc = start_eval(argv, tmp_path / f"{sig.name}.log")
            try:
                wait_for(lambda out=out: count_lines(out) >= 1, 240, "a record")
                kids = children(proc.pid)
                proc.send_signal(sig)
                assert proc.wait(timeout=120) == code
            finally:
                if proc.poll() is None:
                    kill_all([proc.pid, *children(proc.pid)])
            assert wait_gone(kids, 30) == []
            log = (tmp_path / f"{sig.name}.log").read_text()
            assert "resume with: gamebridge eval" in log, log[-2000:]
            run = read_run(out)
            assert not run.torn and len(run.records) >= 1
            if sig == signal.SIGINT:  # drained: the running episodes finished, none failed
                assert all(r.error is None for r in run.records.values())


def test_one_bad_task_never_sinks_the_others(tmp_path: Path) -> None:
    """A persistent 500 on every 3rd call with no retries: failure records for the
    tasks it hit, the others finished, exit 1, the summary counts them apart."""
    with policy_server(POLICY) as srv, FaultProxy(srv.base_url + "/v1") as proxy:
        proxy.set_fault("500", every=5)
        out = tmp_path / "core.jsonl"
        argv = eval_argv("core", N, out, proxy.url, "--model-retries", "0", "--json")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    run = read_run(out)
    failed = [r for r in run.records.values() if r.error]
    assert failed and len(run.records) == N
    assert all(r.error and r.error["source"] == "model endpoint" for r in failed)
    assert f"failed tasks: {len(failed)} (model endpoint: {len(failed)})" in done.stdout
    assert "model endpoint failed: ModelError:" in done.stderr and "answered 500" in done.stderr


def test_make_faults_smoke() -> None:
    """``make faults`` in small: core, a truncated body on every 4th call and a
    SIGKILLed eval, each completed by --resume (the whole matrix: ``make faults``)."""
    import importlib.util

    # By path, not `import run`: tests/fuzz has a run.py too, and whichever was
    # imported first in this process would answer to that name.
    spec = importlib.util.spec_from_file_location("faults_run", Path(__file__).with_name("run.py"))
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = run  # its dataclasses look their module up there
    spec.loader.exec_module(run)

    assert run.main(["--frameworks", "core", "--scenarios", "truncated,kill-eval", "-n", "3"]) == 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.parametrize(
    "framework", ["core", "verifiers", pytest.param("nemo_gym", marks=pytest.mark.nemo)]
)
def test_an_empty_choices_200_is_retried_by_every_framework(framework: str, tmp_path: Path) -> None:
    """A 200 whose body is ``{"choices": []}`` on every 3rd call is malformed by the one
    rule (``rollouts.model.client.completion_problem``): retried alike by core's client
    and by the gateway in front of Verifiers and NeMo Gym, so every task finishes
    (Verifiers failed 6 of 6 with ``list index out of range``)."""
    ok, why = driver_status(framework)
    if not ok:
        pytest.skip(why)
    n = 4
    with policy_server(POLICY) as srv, FaultProxy(srv.base_url + "/v1") as proxy:
        proxy.set_fault("empty", every=3)
        out = tmp_path / f"{framework}.jsonl"
        argv = eval_argv(framework, n, out, proxy.url, *CALL)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        injected = proxy.injected
    assert done.returncode == 0, done.stderr[-3000:]
    run = read_run(out)
    assert len(run.records) == n and not any(r.error for r in run.records.values())
    assert injected >= 1


def _need_ors() -> None:
    ok, why = driver_status("ors")
    if not ok:
        pytest.skip(why)


def _server_logs(pids: list[int]) -> list[Path]:
    """The ``gamebridge-server-*.log`` files the processes ``pids`` hold open."""
    found: set[Path] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if "gamebridge-server-" in target and target.endswith(".log"):
                found.add(Path(target))
    return sorted(found)


def test_ors_streams_records_before_the_batch_ends_and_dies_with_the_eval(
    tmp_path: Path,
) -> None:
    """From ``.venv``, ``eval --framework ors`` runs the batch in a ``.venv-ors`` child:
    its records reach the file as each episode finishes (they came only at the end:
    a SIGKILLed eval kept 0), and the child and its ORS server go with the eval (they
    lived on ~105 s, calling the model), removing the server's log file (logs of killed
    runs piled up in the temporary folder)."""
    _need_ors()
    out = tmp_path / "ors.jsonl"
    with policy_server(POLICY) as srv, FaultProxy(srv.base_url + "/v1", delay=0.3) as proxy:
        argv = eval_argv("ors", N, out, proxy.url, *CALL)
        proc = start_eval(argv, tmp_path / "ors.log")
        try:
            wait_for(lambda: out.exists() and count_lines(out) >= 3, 240, "two ORS records")
            assert proc.poll() is None, "the batch ended before the records were seen"
            kids = children(proc.pid)
            logs = _server_logs(kids)
            assert logs, "the ORS server's log file was not found"
            proc.kill()  # SIGKILL: nothing of the eval runs after this
            proc.wait()
            assert wait_gone(kids, timeout=10) == [], [_cmdline(p) for p in kids]
            assert [log for log in logs if log.exists()] == [], "server logs left behind"
            calls = proxy.requests
            time.sleep(1.0)
            assert proxy.requests == calls, "the model was called after the eval died"
        finally:
            kill_all([proc.pid, *children(proc.pid)])
    run = read_run(out)
    assert not run.torn and 2 <= len(run.records) < N


def test_ors_honours_the_call_policy(tmp_path: Path) -> None:
    """``--model-retries 0`` reaches the ``.venv-ors`` child (the call policy was not in
    its job): a 500 on every 3rd call fails those tasks, naming the model endpoint, as
    in core (ORS retried them and failed none)."""
    _need_ors()
    n = 4
    with policy_server(POLICY) as srv, FaultProxy(srv.base_url + "/v1") as proxy:
        proxy.set_fault("500", every=3)
        out = tmp_path / "ors.jsonl"
        argv = eval_argv("ors", n, out, proxy.url, "--model-retries", "0")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=400)
    assert done.returncode == 1, done.stderr[-3000:]
    run = read_run(out)
    failed = [r for r in run.records.values() if r.error]
    assert len(run.records) == n and failed, done.stderr[-3000:]
    assert all(r.error and r.error["source"] == "model endpoint" for r in failed)
    assert all(r.error and "answered 500" in r.error["message"] for r in failed)
