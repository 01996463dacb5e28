"""NeMo Gym as its users run it: ``ng_run`` then ``ng_collect_rollouts`` (``make nemo-ng-run``).

``python -m rollouts.drivers.ng_run --game tictactoe -n 4`` (from ``.venv``; NeMo Gym's
own commands come from ``.venv-nemo``):

1. lays out a NeMo Gym working directory (default ``runs/ng_run``):
   ``resources_servers/gamebridge/`` with ``app.py`` and ``gamebridge.yaml``
   copied from ``adapters/nemo_gym/``, a ``requirements.txt`` naming this
   checkout (``-e <repo>``), and ``data/example.jsonl`` (the tasks' rows,
   ``adapters.nemo_gym.rows.make_row``); plus ``policy_model.yaml``, NeMo Gym's
   own ``openai_model`` server pointed at the scripted policy server;
2. starts the scripted policy server (``rollouts.model.policy_server``, Responses API)
   on a free 127.0.0.1 port;
3. runs ``ng_run`` with both configs: NeMo Gym starts its Ray head and its head
   server, builds one venv per server with ``uv`` (Python 3.12 from pyenv,
   packages from the index; ``skip_venv_if_present`` reuses them next time) and
   starts the gamebridge resources server, the ``gymnasium_agent`` and the
   ``openai_model`` server, each in its venv;
4. runs ``ng_collect_rollouts`` against the agent, which writes NeMo Gym's
   rollout JSONL (``rollouts.jsonl``);
5. stops ``ng_run`` (SIGINT, as Ctrl-C) and checks every rollout's reward and
   trajectory against ``CoreDriver`` (no framework) on the same tasks and the
   same policy server.

Exit status 0 when every rollout equals core's, 1 otherwise; the last lines
say which step failed. Logs: ``<workdir>/ng_run.log``, ``collect.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AGENT = "gamebridge_gymnasium_agent"
SERVER_DIR = Path("resources_servers/gamebridge")
READY = "servers ready!"
"""What ``ng_run`` prints once every server answers (``RunHelper.wait_for_spinup``)."""


class NgRunError(RuntimeError):
    """A step of the ng_run path failed; the message names the step and quotes its log."""


@dataclass(frozen=True)
class Paths:
    workdir: Path
    rows: Path
    rollouts: Path
    run_log: Path
    collect_log: Path


def nemo_bin() -> Path:
    """``.venv-nemo/bin`` (``GAMEBRIDGE_NEMO_PYTHON`` picks another interpreter's bin)."""
    python = Path(os.environ.get("GAMEBRIDGE_NEMO_PYTHON", ROOT / ".venv-nemo" / "bin" / "python"))
    return python.parent


def python312_bin() -> Path | None:
    """The bin folder of a Python 3.12 from pyenv (what ``uv venv --python 3.12.x`` finds)."""
    try:
        prefix = subprocess.run(
            ["pyenv", "prefix", _nemo_python_version()],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(prefix) / "bin"


def _nemo_python_version() -> str:
    """The exact version of ``.venv-nemo``'s Python: ng_run pins server venvs to it."""
    out = subprocess.run(
        [str(nemo_bin() / "python"), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def layout(workdir: Path, tasks: Sequence[Any], policy_url: str) -> Paths:
    """Write the NeMo Gym working directory (see the module docstring)."""
    from adapters.nemo_gym.rows import make_row

    server = workdir / SERVER_DIR
    (server / "data").mkdir(parents=True, exist_ok=True)
    for name in ("app.py", "gamebridge.yaml"):
        shutil.copyfile(ROOT / "adapters" / "nemo_gym" / name, server / name)
    (server / "requirements.txt").write_text(f"-e {ROOT}\n")
    rows = server / "data" / "example.jsonl"
    rows.write_text("".join(json.dumps(make_row(t, "gymnasium")) + "\n" for t in tasks))
    (workdir / "policy_model.yaml").write_text(
        "# NeMo Gym's own openai_model server, pointed at gamebridge's scripted policy server.\n"
        "policy_model:\n"
        "  responses_api_models:\n"
        "    openai_model:\n"
        "      entrypoint: app.py\n"
        f"      openai_base_url: {policy_url}\n"
        "      openai_api_key: unused\n"
        "      openai_model: scripted\n"
        "      openai_default_headers: {}\n"
    )
    rollouts = workdir / "rollouts.jsonl"
    rollouts.unlink(missing_ok=True)
    return Paths(workdir, rows, rollouts, workdir / "ng_run.log", workdir / "collect.log")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    path = [str(nemo_bin())]
    py312 = python312_bin()
    if py312 is not None:
        path.append(str(py312))
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    env.pop("VIRTUAL_ENV", None)
    env.update(
        {
            # uv must take pyenv's interpreter, never download one (no internet but the index).
            "UV_PYTHON_DOWNLOADS": "never",
            "WANDB_MODE": "disabled",
            "PYTHONUNBUFFERED": "1",
            "RAY_USAGE_STATS_ENABLED": "0",
        }
    )
    return env


def _tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes], grace: float = 60.0) -> None:
    """SIGINT to ng_run's process group (it shuts its servers and Ray down), then SIGKILL."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def collect(
    paths: Paths, head_port: int, *, start_timeout: float, collect_timeout: float
) -> list[dict[str, Any]]:
    """``ng_run`` (until every server is up), ``ng_collect_rollouts``, then stop ``ng_run``."""
    env = _env()
    head = f"+head_server={{host: 127.0.0.1, port: {head_port}}}"
    configs = f"+config_paths=[{SERVER_DIR / 'gamebridge.yaml'},policy_model.yaml]"
    run_argv = [
        str(nemo_bin() / "ng_run"),
        configs,
        head,
        "+skip_venv_if_present=true",
    ]
    with paths.run_log.open("wb") as log:
        process = subprocess.Popen(
            run_argv,
            cwd=paths.workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + start_timeout
        while READY not in paths.run_log.read_text(errors="replace"):
            if process.poll() is not None:
                raise NgRunError(
                    f"ng_run exited ({process.returncode}) before its servers were up; "
                    f"{paths.run_log}:\n{_tail(paths.run_log)}"
                )
            if time.monotonic() > deadline:
                raise NgRunError(
                    f"ng_run: servers not up after {start_timeout:.0f}s; "
                    f"{paths.run_log}:\n{_tail(paths.run_log)}"
                )
            time.sleep(2)
        collect_argv = [
            str(nemo_bin() / "ng_collect_rollouts"),
            f"+agent_name={AGENT}",
            f"+input_jsonl_fpath={paths.rows}",
            f"+output_jsonl_fpath={paths.rollouts}",
            "+num_samples_in_parallel=2",
            "+upload_rollouts_to_wandb=false",
            head,
        ]
        with paths.collect_log.open("wb") as log:
            try:
                done = subprocess.run(
                    collect_argv,
                    cwd=paths.workdir,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=collect_timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as e:
                raise NgRunError(
                    f"ng_collect_rollouts: no result after {collect_timeout:.0f}s; "
                    f"{paths.collect_log}:\n{_tail(paths.collect_log)}"
                ) from e
        if done.returncode != 0 or not paths.rollouts.exists():
            raise NgRunError(
                f"ng_collect_rollouts exited {done.returncode}; "
                f"{paths.collect_log}:\n{_tail(paths.collect_log)}"
            )
    finally:
        _stop(process)
    return [json.loads(line) for line in paths.rollouts.read_text().splitlines() if line.strip()]


def compare_with_core(
    rollouts: Sequence[dict[str, Any]], tasks: Sequence[Any], policy_url: str
) -> list[str]:
    """Problems (empty when every rollout's reward and trajectory equal core's)."""
    from rollouts.drivers.core import CoreDriver

    records = CoreDriver().run(tasks, base_url=policy_url, model="scripted")
    problems = []
    seen = set()
    for row in rollouts:
        # NeMo Gym's rollout rows carry the input row's index, not the row itself.
        index = row.get("_ng_task_index")
        if not isinstance(index, int) or not 0 <= index < len(records):
            problems.append(f"a rollout with no input row index: {str(row)[:200]}")
            continue
        ref = records[index]
        task_id = ref.trajectory["task_id"]
        seen.add(index)
        info = row.get("info") or {}
        if row.get("reward") != ref.reward["total"]:
            problems.append(
                f"{task_id}: NeMo Gym reward {row.get('reward')} != core's {ref.reward['total']}"
            )
        if info.get("trajectory") != ref.trajectory:
            problems.append(f"{task_id}: the trajectory differs from core's")
    missing = [records[i].trajectory["task_id"] for i in range(len(records)) if i not in seen]
    if missing:
        problems.append(f"no rollout for {missing}")
    return problems


def run(args: argparse.Namespace) -> int:
    from core.tasks import make_tasks
    from rollouts.model.policy_server import serve_in_thread
    from rollouts.model.servers import free_port

    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    if not (nemo_bin() / "ng_run").exists():
        print(f"ng-run: {nemo_bin() / 'ng_run'} is missing: run `make setup-nemo`", file=sys.stderr)
        return 2
    if shutil.which("uv", path=str(nemo_bin())) is None:
        print(f"ng-run: uv is missing from {nemo_bin()}: run `make setup-nemo`", file=sys.stderr)
        return 2
    tasks = make_tasks(args.n, seed=args.seed, game=args.game, num_groups=min(4, args.n))
    with serve_in_thread(args.policy, args.seed) as policy_url:
        paths = layout(workdir, tasks, policy_url)
        t0 = time.perf_counter()
        try:
            rollouts = collect(
                paths,
                free_port(),
                start_timeout=args.start_timeout,
                collect_timeout=args.collect_timeout,
            )
        except NgRunError as e:
            print(f"ng-run: FAILED: {e}")
            return 1
        elapsed = time.perf_counter() - t0
        problems = compare_with_core(rollouts, tasks, policy_url)
    print(
        f"ng-run: {len(rollouts)} rollouts in {paths.rollouts} ({elapsed:.0f}s with server start-up)"
    )
    for row in rollouts:
        info = row.get("info") or {}
        task_id = (info.get("trajectory") or {}).get("task_id")
        print(f"  {task_id}: reward {row.get('reward')} ({info.get('result')})")
    if problems:
        for line in problems:
            print(f"ng-run: DIFFERENT: {line}")
        return 1
    print(
        f"ng-run: IDENTICAL: {len(rollouts)} NeMo Gym rollouts equal core's rewards and trajectories"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rollouts.drivers.ng_run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--game", default="tictactoe")
    parser.add_argument("-n", type=int, default=4, help="tasks (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", default="noisy:0.2/minimax:1")
    parser.add_argument("--workdir", default="runs/ng_run")
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=1800.0,
        help="seconds for ng_run to build its venvs and start (the first run downloads ~1.5 GB)",
    )
    parser.add_argument("--collect-timeout", type=float, default=600.0)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
