"""The policy server's model backend answers as an OpenAI server would: a
request's ``temperature``/``top_p``/``max_tokens``/``seed`` are honoured (or
refused with a 400), ``usage.completion_tokens`` counts the model's tokens, a
reply cut at its token limit finishes with ``length``; and a run against it is
labelled with the model path. The model is an untrained tiny one (it babbles:
what is checked is the wire, not the play)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from core.episode import Episode
    from core.tasks import Task
    from rollouts.training.tiny import build_model, build_tokenizer, save_tiny

    obs = Episode(Task(opponent="random", seed=5)).reset()
    rows = [
        {
            "messages": [
                {"role": "user", "content": obs},
                {"role": "assistant", "content": "<move>4</move>"},
            ]
        }
    ]
    tokenizer = build_tokenizer(rows, 400)
    model = build_model(
        tokenizer,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    return Path(save_tiny(model, tokenizer, tmp_path_factory.mktemp("babbler") / "model"))


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Any:
    from rollouts.model.policy_server import serve_in_thread
    from rollouts.model.transformers_backend import TransformersModel

    with serve_in_thread("random", backend=TransformersModel(model_dir, max_new_tokens=24)) as url:
        yield url


def _messages() -> list[dict[str, Any]]:
    from core.episode import Episode
    from core.tasks import Task

    return [{"role": "user", "content": Episode(Task(opponent="random", seed=5)).reset()}]


def _chat(server: str, **body: Any) -> httpx.Response:
    with httpx.Client(timeout=120) as client:
        return client.post(f"{server}/chat/completions", json={"messages": _messages(), **body})


def test_temperature_samples_afresh_and_seed_repeats(server: str) -> None:
    hot = {
        _chat(server, temperature=2.0).json()["choices"][0]["message"]["content"] for _ in range(4)
    }
    assert len(hot) > 1, hot  # six identical replies at temperature 2.0 was the bug
    greedy = {
        _chat(server, temperature=0).json()["choices"][0]["message"]["content"] for _ in range(2)
    }
    assert len(greedy) == 1
    seeded = {
        _chat(server, temperature=2.0, seed=7).json()["choices"][0]["message"]["content"]
        for _ in range(2)
    }
    assert len(seeded) == 1
    two = _chat(server, temperature=2.0, n=3).json()["choices"]
    assert len(two) == 3 and len({c["message"]["content"] for c in two}) > 1


def test_max_tokens_cuts_with_length_and_usage_counts_tokens(server: str) -> None:
    reply = _chat(server, temperature=0, max_tokens=3).json()
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 3
    assert reply["usage"]["total_tokens"] == reply["usage"]["prompt_tokens"] + 3
    longer = _chat(server, temperature=0, max_completion_tokens=8).json()
    assert longer["usage"]["completion_tokens"] in range(1, 9)
    if longer["choices"][0]["finish_reason"] == "length":
        assert longer["usage"]["completion_tokens"] == 8
    with httpx.Client(timeout=120) as client:
        resp = client.post(
            f"{server}/responses",
            json={"input": _messages()[0]["content"], "max_output_tokens": 2, "temperature": 0},
        ).json()
    assert resp["status"] == "incomplete"
    assert resp["incomplete_details"] == {"reason": "max_output_tokens"}
    assert resp["usage"]["output_tokens"] == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", 5), ("temperature", "hot"), ("max_tokens", 0), ("top_p", 0), ("seed", 1.5)],
)
def test_settings_it_cannot_honour_are_400(server: str, field: str, value: Any) -> None:
    reply = _chat(server, **{field: value})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == field


def test_health_and_models_name_the_model_path(server: str, model_dir: Path) -> None:
    with httpx.Client(timeout=30) as client:
        assert client.get(server.removesuffix("/v1") + "/health").status_code == 200
        ids = [m["id"] for m in client.get(f"{server}/models").json()["data"]]
    assert ids == [str(model_dir)]


def test_eval_against_the_model_is_labelled_with_its_path(
    server: str, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rollouts.cli import main
    from rollouts.evaluation.records import read_run

    out = tmp_path / "run.jsonl"
    main(["eval", "--base-url", server, "-n", "1", "--out", str(out)])
    run = read_run(out, warn=False)
    assert run.header["policy"] == f"model:{model_dir}", run.header
    assert "scripted" not in out.read_text()
