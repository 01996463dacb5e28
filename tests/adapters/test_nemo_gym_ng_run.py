"""NeMo Gym as its users run it: ``ng_run`` (its Ray head, a uv venv per server,
Python 3.12 from pyenv) and ``ng_collect_rollouts`` against the scripted policy
server; the rollout JSONL's rewards and trajectories equal core's.

The whole path is ``slow`` (the first run builds three venvs from the package
index, minutes; later runs reuse them in ``runs/ng_run``). The layout and the
comparison with core are checked quickly without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.tasks import make_tasks
from rollouts.drivers import ng_run
from rollouts.drivers.core import CoreDriver
from rollouts.drivers.nemo_gym import nemo_python
from rollouts.model.policy_server import serve_in_thread

POLICY = "noisy:0.2/minimax:1"


def test_layout_is_a_nemo_gym_working_directory(tmp_path: Path) -> None:
    tasks = make_tasks(3, seed=4, game="othello", num_groups=1)
    paths = ng_run.layout(tmp_path, tasks, "http://127.0.0.1:9/v1")
    server = tmp_path / "resources_servers" / "gamebridge"
    assert (server / "app.py").read_text() == (
        ng_run.ROOT / "adapters" / "nemo_gym" / "app.py"
    ).read_text()
    assert (server / "requirements.txt").read_text().strip() == f"-e {ng_run.ROOT}"
    rows = [json.loads(line) for line in paths.rows.read_text().splitlines()]
    assert [r["task"] for r in rows] == [t.to_dict() for t in tasks]
    policy = (tmp_path / "policy_model.yaml").read_text()
    assert "openai_base_url: http://127.0.0.1:9/v1" in policy
    # ng_run treats a folder with a pyproject.toml two levels up as an editable
    # checkout of NeMo Gym itself: the working directory must not be one.
    assert not (tmp_path / "pyproject.toml").exists()


def test_comparison_with_core_catches_differences() -> None:
    tasks = make_tasks(3, seed=2, game="tictactoe", num_groups=1)
    with serve_in_thread(POLICY, 0) as url:
        records = CoreDriver().run(tasks, base_url=url, model="scripted")
        rows = [
            {
                "_ng_task_index": i,
                "reward": r.reward["total"],
                "info": {"trajectory": r.trajectory, "result": r.trajectory["result"]},
            }
            for i, r in enumerate(records)
        ]
        assert ng_run.compare_with_core(rows, tasks, url) == []
        rows[1]["reward"] += 0.5
        del rows[2]
        problems = ng_run.compare_with_core(rows, tasks, url)
    assert len(problems) == 2
    assert "NeMo Gym reward" in problems[0] and "no rollout for" in problems[1]


@pytest.mark.slow
@pytest.mark.nemo
@pytest.mark.server
@pytest.mark.skipif(
    not nemo_python().exists(), reason=f"{nemo_python()} is missing: run `make setup-nemo`"
)
def test_ng_run_and_collect_rollouts_equal_core(capsys: pytest.CaptureFixture[str]) -> None:
    workdir = ng_run.ROOT / "runs" / "ng_run"
    code = ng_run.main(["--game", "tictactoe", "-n", "3", "--workdir", str(workdir)])
    out = capsys.readouterr().out
    assert code == 0, out[-3000:]
    assert "IDENTICAL: 3 NeMo Gym rollouts" in out
    rollouts = [json.loads(x) for x in (workdir / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(r["_ng_task_index"] for r in rollouts) == [0, 1, 2]
    assert all(r["terminated"] and not r["truncated"] for r in rollouts)
    log = (workdir / "ng_run.log").read_text()
    # NeMo Gym's own machinery ran: its Ray cluster, then every server in its venv.
    assert "NeMo Gym is starting a new Ray cluster" in log
    assert "servers ready!" in log
