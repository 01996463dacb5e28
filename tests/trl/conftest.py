"""Shared tiny models for the TRL tests: built locally once per session (one
thread: the machines are shared) from scripted minimax wins and draws."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session", autouse=True)
def _one_thread() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_data() -> tuple[list[Any], list[Any], Any]:
    """(text rows, tool rows, tokenizer): SFT rows in both formats and a
    tokenizer trained on them."""
    from core.tasks import make_tasks
    from rollouts.training.tiny import build_tokenizer, chat_rows, scripted_records

    tasks = make_tasks(160, seed=1, num_groups=1, opponent="random")
    keep = {"win", "draw"}
    text = chat_rows(scripted_records(tasks, "minimax:9", tools=False), keep)
    tools = chat_rows(scripted_records(tasks, "minimax:9", tools=True), keep)
    noisy = chat_rows(
        scripted_records(tasks[:32], "noisy:0.5/minimax:1", tools=False), {"win", "draw", "loss"}
    )
    return text, tools, build_tokenizer(text + tools + noisy)


def _sft(rows: list[Any], tokenizer: Any, steps: int, tmp: Any) -> Any:
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import build_model

    model = build_model(tokenizer)
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(tmp),
        max_steps=steps,
        learning_rate=3e-3,
        progress=False,
    )
    return model


@pytest.fixture(scope="session")
def tiny(
    tiny_data: tuple[list[Any], list[Any], Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, Any]:
    """(model, tokenizer) after 80 SFT steps on both formats: it plays with
    ``<move>`` tags and calls ``make_move``."""
    text, tools, tokenizer = tiny_data
    return _sft(text + tools, tokenizer, 80, tmp_path_factory.mktemp("sft")), tokenizer


@pytest.fixture(scope="session")
def tiny_weak(
    tiny_data: tuple[list[Any], list[Any], Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, Any]:
    """(model, tokenizer) after only 45 SFT steps on ``<move>`` games: the
    format is half learnt, room for GRPO to show."""
    text, _, tokenizer = tiny_data
    return _sft(text, tokenizer, 45, tmp_path_factory.mktemp("sft_weak")), tokenizer


@pytest.fixture
def tiny_copy(tiny: tuple[Any, Any]) -> tuple[Any, Any]:
    """A fresh copy of the warmed-up model (training changes it in place)."""
    from rollouts.training.tiny import model_copy

    model, tokenizer = tiny
    return model_copy(model), tokenizer
