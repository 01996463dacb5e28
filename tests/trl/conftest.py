"""A shared tiny model for the TRL tests: built locally once per session (one
thread: the machines are shared), warmed up on scripted games in both formats
(``<move>`` tags and ``make_move`` tool calls) so one model serves both hooks."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

SFT_STEPS = 80


@pytest.fixture(scope="session", autouse=True)
def _one_thread() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """(model, tokenizer): a tiny Qwen2 after a short SFT on minimax wins/draws."""
    from core.tasks import make_tasks
    from rollouts.tiny import build_model, build_tokenizer, chat_rows, scripted_records
    from rollouts.train_sft import run_sft

    tasks = make_tasks(48, seed=1, num_groups=1, opponent="random")
    keep = {"win", "draw"}
    rows = [
        row
        for tools in (False, True)
        for row in chat_rows(scripted_records(tasks, "minimax:9", tools=tools), keep)
    ]
    noisy = chat_rows(
        scripted_records(tasks[:16], "noisy:0.5/minimax:1", tools=False), {"win", "draw", "loss"}
    )
    tokenizer = build_tokenizer(rows + noisy)
    model = build_model(tokenizer)
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(tmp_path_factory.mktemp("sft")),
        max_steps=SFT_STEPS,
        learning_rate=3e-3,
        progress=False,
    )
    return model, tokenizer


@pytest.fixture
def tiny_copy(tiny: tuple[Any, Any]) -> tuple[Any, Any]:
    """A fresh copy of the warmed-up model (training changes it in place)."""
    model, tokenizer = tiny
    return copy.deepcopy(model), tokenizer
