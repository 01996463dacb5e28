"""TRL's own OpenReward bridge (``trl.experimental.openreward.OpenRewardSpec``)
trains the tiny model for two GRPO steps against the gamebridge ORS server, and the
rewards it logs are core's.

Both run from ``.venv-ors`` (openreward cannot share ``.venv`` with Verifiers):
the server as ``python -m adapters.ors``, the training as ``python -m
rollouts.training.ors --tiny``, which checks every rollout of the last batch against
``core.Episode`` and exits 1 when TRL's logged mean reward is not core's.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollouts.drivers.ors import ROOT, ors_python

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not ors_python().exists(), reason="no .venv-ors (make setup-ors)"),
]


def _train(url: str, out: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}
    env.pop("OPENREWARD_SESSION_URL", None)  # train_ors must set it itself
    argv = [
        str(ors_python()), "-m", "rollouts.training.ors", "--url", url, "--tiny",
        "--sft-games", "60", "--sft-steps", "60", "--output-dir", str(out / "run"),
        "--out", str(out / "figures.json"), *extra,
    ]  # fmt: skip
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    figures = (
        json.loads((out / "figures.json").read_text()) if (out / "figures.json").exists() else {}
    )
    return done.returncode, figures, done.stdout[-2000:] + done.stderr[-4000:]


def test_openreward_spec_trains_two_grpo_steps_with_core_rewards(tmp_path: Path) -> None:
    from rollouts.model.servers import start_server

    argv = [
        "python", "-m", "adapters.ors", "--port", "{port}", "--games", "tictactoe",
        "--tasks-per-game", "8",
    ]  # fmt: skip
    with start_server(argv, "/health", None, str(ors_python()), cwd=ROOT) as server:
        code, figures, log = _train(server.base_url, tmp_path)
        live = httpx.get(server.base_url + "/sessions", timeout=30).json()
    assert code == 0, log
    assert figures["steps"] == 2 and all(math.isfinite(x) for x in figures["losses"]), figures
    # Every rollout of the last batch was scored (settled through the @terminal tool if the
    # model stopped early), and TRL's logged mean is the mean of core's replayed totals.
    assert figures["rollouts"] == 4 and figures["finished"] == 4, figures
    assert figures["mismatches"] == [] and figures["logged_equals_core"], figures
    assert all(r is not None for r in figures["logged_rewards"]), figures
    assert live["active"] == 0, "train_ors closes the sessions it opened"
