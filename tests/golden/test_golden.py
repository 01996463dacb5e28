"""Core reproduces the golden transcripts (tests/golden/<game>.json) exactly, in this
process and in subprocesses under two PYTHONHASHSEED values (a set or dict order, or a
``hash()`` of a string, leaking into a move choice would show up here).

The drivers are checked against the same files by the conformance suite
(tests/conformance/test_conformance.py::test_driver_matches_golden), under the test
process's hash seed only: a second seed would rerun every driver (framework imports,
servers: minutes) to test framework code that sees the game only through core, which
the two-seed check here already covers; a driver that differs from core at one seed
fails there anyway.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.games import list_games

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _regen() -> Any:
    spec = importlib.util.spec_from_file_location("gamebridge_golden_regen", HERE / "regen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


regen = _regen()


def test_every_game_has_a_golden_file() -> None:
    assert {p.stem for p in HERE.glob("*.json")} == set(list_games())


@pytest.mark.parametrize("game", list_games())
def test_core_reproduces_the_golden_transcript(game: str) -> None:
    golden = regen.load(game)
    assert golden["game"] == game and golden["policy"] == regen.POLICY
    modes = [e["mode"] for e in golden["episodes"]]
    assert modes == ["text"] * regen.TASKS_PER_GAME + ["tools"] * regen.TASKS_PER_GAME
    for episode in golden["episodes"]:
        assert episode["trajectory"]["done"] and episode["reward"] is not None
        assert len(episode["observations"]) == len(episode["replies"]) + 1
    assert regen.differences(golden, regen.transcript(game)) == []
    assert regen.transcript(game) == golden


def test_a_changed_reply_is_caught() -> None:
    golden = regen.load("tictactoe")
    changed = copy.deepcopy(golden)
    changed["episodes"][0]["trajectory"]["events"][0]["reply"] += " "
    assert regen.differences(golden, changed) == [
        f"{golden['episodes'][0]['task_id']} [text]: trajectory (event 0) differs"
    ]


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_core_reproduces_the_golden_files_under_another_hash_seed(hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.golden.regen", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("identical") == len(list_games())
