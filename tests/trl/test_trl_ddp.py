"""GRPO on two processes (``accelerate launch``, gloo on CPU): each rank's games
are its own, the logged reward columns equal core's scores of the same games,
GRPO groups stay whole; a greedy 2-process run plays the same tasks with the
same per-task rewards as a 1-process run with the same seed and global batch.

The smoke (one 2-rank launch, rollout_func) runs in ``make test``; the rest is
``slow`` (each launch costs a minute or more on the shared 2-core machine)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from rollouts.training import ddp as train_ddp
from rollouts.training.ddp import CheckError, check_run, compare_runs, run_launch, train_flags


@pytest.fixture(scope="module")
def tiny_dir(tiny: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The session's warmed-up tiny model, saved where ``--model`` loads it."""
    from rollouts.training.tiny import save_tiny

    model, tokenizer = tiny
    return str(save_tiny(model, tokenizer, tmp_path_factory.mktemp("tiny") / "model"))


def _launch(tiny_dir: str, out: Path, mode: str, processes: int, *, greedy: bool = False) -> Path:
    record = out / f"{mode}-{processes}"
    run_launch(
        processes,
        train_flags(tiny_dir, record, mode, 2, 0, greedy=greedy),
        out / f"{mode}-{processes}.log",
    )
    return record


def _games_by_rank(record: Path) -> dict[tuple[int, int], list[str]]:
    rows, _, _ = train_ddp.read_run(record)
    out: dict[tuple[int, int], list[str]] = defaultdict(list)
    for row in rows:
        out[(row["step"], row["rank"])].append(row["task_id"])
    return out


def test_two_ranks_rollout_func_smoke(tiny_dir: str, tmp_path: Path) -> None:
    record = _launch(tiny_dir, tmp_path, "rollout_func", 2)
    figures = check_run(record)
    assert figures["world_size"] == 2 and figures["steps"] == 2
    assert figures["games"] == 2 * 4  # 2 steps x (2 groups x 2 generations)
    by_rank = _games_by_rank(record)
    for step in (1, 2):
        # Each rank played its own share of the batch (2 games), no game twice.
        ranks = [by_rank[(step, r)] for r in (0, 1)]
        assert [len(r) for r in ranks] == [2, 2]
    # The check can fail: a rank that recorded another score than core's is caught.
    bad = tmp_path / "tampered"
    shutil.copytree(record, bad)
    path = bad / "rank1.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["components"]["win"] = 1.0 - rows[0]["components"]["win"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(CheckError, match="core scores"):
        check_run(bad)
    # ... and so is a logged mean that is not core's.
    bad_log = tmp_path / "tampered-log"
    shutil.copytree(record, bad_log)
    logs = json.loads((bad_log / train_ddp.LOG_FILE).read_text())
    next(h for h in logs if "loss" in h)["rewards/reward_format/mean"] += 0.25
    (bad_log / train_ddp.LOG_FILE).write_text(json.dumps(logs))
    with pytest.raises(CheckError, match="logged format mean"):
        check_run(bad_log)


@pytest.mark.slow
def test_two_ranks_env_factory(tiny_dir: str, tmp_path: Path) -> None:
    record = _launch(tiny_dir, tmp_path, "env_factory", 2)
    figures = check_run(record)
    assert figures["world_size"] == 2 and figures["games"] == 8
    rows, _, _ = train_ddp.read_run(record)
    # The warmed-up model calls make_move: real multi-turn tool games on both ranks.
    for rank in (0, 1):
        calls = [
            sum(e["kind"] == "tool" for e in r["trajectory"]["events"])
            for r in rows
            if r["rank"] == rank
        ]
        assert max(calls) >= 2, (rank, calls)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rollout_func", "env_factory"])
def test_one_and_two_processes_same_per_task_rewards(
    tiny_dir: str, tmp_path: Path, mode: str
) -> None:
    one = _launch(tiny_dir, tmp_path, mode, 1, greedy=True)
    two = _launch(tiny_dir, tmp_path, mode, 2, greedy=True)
    assert check_run(one)["world_size"] == 1 and check_run(two)["world_size"] == 2
    compare_runs(one, two)
    with pytest.raises(CheckError):
        compare_runs(one, _tampered_copy(two, tmp_path / "tampered"))


def _tampered_copy(record: Path, to: Path) -> Path:
    shutil.copytree(record, to)
    path = to / "rank0.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[-1]["components"]["margin"] += 1.0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return to
