"""The policy server's transformers backend: a tiny trained checkpoint answers
chat completions (JSON and SSE), the Responses API and tool calls in the
scripted backend's shapes, greedily; ``gamebridge compare --base-url`` runs it
through every framework with the identity verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny recipe-style model: 100 SFT steps on teacher decisions (it plays legal moves)."""
    from core.tasks import make_tasks
    from core.teacher import make_teacher
    from rollouts.training.recipe import MODEL_CONFIG, decisions, play_teacher, sft_rows
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import build_model, build_tokenizer, save_tiny

    tasks = make_tasks(120, seed=3, opponent="minimax", depth=9, num_groups=10)
    rows = sft_rows(
        decisions(play_teacher(make_teacher("tictactoe"), tasks), {"win", "draw"}), 1, 0
    )
    tokenizer = build_tokenizer(rows, 512)
    model = build_model(tokenizer, **{**MODEL_CONFIG, "num_hidden_layers": 2})
    out = tmp_path_factory.mktemp("policy_model")
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(out / "sft"),
        max_steps=100,
        learning_rate=3e-3,
        batch_size=32,
        progress=False,
        assistant_only_loss=False,
        lr_scheduler_type="cosine",
    )
    return save_tiny(model, tokenizer, out / "model")


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Any:
    from rollouts.model.policy_server import serve_in_thread
    from rollouts.model.transformers_backend import TransformersModel

    with serve_in_thread("random", backend=TransformersModel(model_dir)) as url:
        yield url


def _conversation() -> list[dict[str, Any]]:
    from core.episode import Episode
    from core.tasks import Task

    ep = Episode(Task(opponent="random", seed=5))
    return [
        {"role": "system", "content": ep.system_prompt},
        {"role": "user", "content": ep.reset()},
    ]


def test_chat_json_sse_and_tool_calls_agree(server: str) -> None:
    from core.games import make_game
    from core.parsing import parse_reply
    from core.prompts import tool_schema

    messages = _conversation()
    with httpx.Client(timeout=60) as client:
        plain = client.post(f"{server}/chat/completions", json={"messages": messages}).json()
        again = client.post(f"{server}/chat/completions", json={"messages": messages}).json()
        text = plain["choices"][0]["message"]["content"]
        assert text == again["choices"][0]["message"]["content"]  # greedy: deterministic
        move = parse_reply(text).move
        assert move in [str(i) for i in range(9)]
        stream = client.post(
            f"{server}/chat/completions", json={"messages": messages, "stream": True}
        ).text
        pieces = [
            json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: {")
        ]
        streamed = "".join(
            (p["choices"][0]["delta"].get("content") or "") for p in pieces if p["choices"]
        )
        assert streamed == text and stream.rstrip().endswith("data: [DONE]")
        tools = [tool_schema(make_game("tictactoe"))]
        call = client.post(
            f"{server}/chat/completions", json={"messages": messages, "tools": tools}
        ).json()["choices"][0]
        assert call["finish_reason"] == "tool_calls"
        fn = call["message"]["tool_calls"][0]["function"]
        assert fn["name"] == "make_move" and json.loads(fn["arguments"]) == {"move": move}
        resp = client.post(
            f"{server}/responses",
            json={"instructions": messages[0]["content"], "input": messages[1]["content"]},
        ).json()
        out_text = resp["output"][0]["content"][0]["text"]
        assert out_text == text
        bad = client.post(
            f"{server}/chat/completions", json={"messages": [{"role": "system", "content": "x"}]}
        )
        assert bad.status_code == 422


def test_bad_model_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rollouts.cli import main

    assert main(["serve-policy", "--model-path", str(tmp_path)]) == 2
    assert "not a model folder" in capsys.readouterr().err


@pytest.mark.parametrize("n", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_compare_runs_the_trained_model_through_every_framework(
    n: int, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One task per framework in ``make test`` (each framework's start-up and one game
    through the model dominate); three in ``make test-slow``."""
    from rollouts.cli import main

    args = ["compare", "--base-url", server, "-n", str(n), "--seed", "4", "--out", str(tmp_path)]
    code = main(args)
    out = capsys.readouterr().out
    assert "IDENTICAL across" in out, out[-2000:]
    assert code == 0


def test_health_answers_200_for_the_model_backend(server: str) -> None:
    """``GET /health`` on ``serve-policy --model-path`` (the transformers backend has no
    scripted seed: it answered 500 with ``AttributeError: ... 'seed'``)."""
    health = httpx.get(server.removesuffix("/v1") + "/health", timeout=30)
    assert health.status_code == 200, health.text[:300]
    assert health.json()["status"] == "ok" and health.json()["policy"].startswith("model:")
