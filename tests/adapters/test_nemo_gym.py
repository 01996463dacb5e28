"""The NeMo Gym adapter: both resources servers as real processes from .venv-nemo.

The servers start once per module (NeMo Gym takes several seconds to import);
each test opens its own sessions with its own cookie jar.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from adapters.nemo_gym.rows import DONE_HEADER, make_row
from core.episode import Episode
from core.players import ScriptedPlayer
from core.tasks import Task
from rollouts.drivers.nemo_gym import nemo_python

pytestmark = [
    pytest.mark.nemo,
    pytest.mark.server,
    pytest.mark.skipif(
        not nemo_python().exists(),
        reason=f"{nemo_python()} is missing: `make setup-nemo` builds .venv-nemo (Python 3.12)",
    ),
]

TOOLS_TTL = 3.0


def _server(style: str, *extra: str) -> Any:
    from rollouts.drivers.nemo_gym import ROOT
    from rollouts.model.servers import start_server

    argv = ["python", "-m", "adapters.nemo_gym", "--style", style, "--port", "{port}", *extra]
    return start_server(argv, "/", {"PYTHONUNBUFFERED": "1"}, str(nemo_python()), cwd=ROOT)


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    from rollouts.drivers.nemo_gym import _start_together

    managers = [
        _server("gymnasium", "--game", "othello"),
        _server("tools", "--session-timeout", str(TOOLS_TTL)),
    ]
    gym, tools = _start_together(managers)
    try:
        yield {"gymnasium": gym.base_url, "tools": tools.base_url}
    finally:
        for manager in managers:
            manager.__exit__(None, None, None)


def response(text: str) -> dict[str, Any]:
    """A minimal NeMoGymResponse holding one assistant message."""
    return {
        "id": "resp_test",
        "created_at": 0.0,
        "model": "test",
        "object": "response",
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
    }


@pytest.mark.parametrize("game", ["tictactoe", "connect_four", "wordle"])
def test_gymnasium_game_matches_core_replay(urls: dict[str, str], game: str) -> None:
    task = Task(game=game, seed=5)
    row = make_row(task)
    player = ScriptedPlayer("noisy:0.3/minimax:1", 0)
    with httpx.Client(base_url=urls["gymnasium"], timeout=60) as env:
        reset = env.post("/reset", json=row).json()
        assert reset["observation"] == Episode(task).reset()
        assert reset["info"]["task"] == task.to_dict()
        messages = [*row["responses_create_params"]["input"]]
        messages.append({"role": "user", "content": reset["observation"]})
        replies: list[str] = []
        while True:
            reply = player.reply(messages)
            replies.append(reply)
            step = env.post("/step", json={**row, "response": response(reply)})
            assert step.status_code == 200, step.text
            out = step.json()
            if out["terminated"]:
                break
            assert out["reward"] == 0.0 and "trajectory" not in out["info"]
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": out["observation"]},
            ]
        reference = Episode.replay(task, replies)
        assert out["info"]["trajectory"] == reference.to_dict()
        assert out["reward"] == reference.reward().total
        assert not out["truncated"]
        # The finished session was released: its cookie now names no game.
        gone = env.post("/step", json={**row, "response": response("<move>1</move>")})
        assert gone.status_code == 404


def test_gymnasium_rows_without_a_task_use_the_server_game(urls: dict[str, str]) -> None:
    params = {"input": [{"role": "system", "content": "x"}]}
    with httpx.Client(base_url=urls["gymnasium"], timeout=60) as env:
        out = env.post("/reset", json={"responses_create_params": params, "seed": 3}).json()
    assert out["info"]["task"] == Task(game="othello", seed=3).to_dict()


def test_gymnasium_the_agents_max_steps_settles_the_game(urls: dict[str, str]) -> None:
    """The agent's cap reaches the server in the row (gamebridge_max_steps, set by
    adapters.nemo_gym.agent): on the capped step core settles the game, the step's
    reward is the settled total (the agent sums step rewards) and truncated is set."""
    task = Task(game="othello", seed=4)
    row = {**make_row(task), "gamebridge_max_steps": 2}
    replies = ["<move>zz</move>", "<move>d3</move>"]
    with httpx.Client(base_url=urls["gymnasium"], timeout=60) as env:
        env.post("/reset", json=row).raise_for_status()
        first = env.post("/step", json={**row, "response": response(replies[0])}).json()
        last = env.post("/step", json={**row, "response": response(replies[1])}).json()
    assert not first["terminated"] and not first["truncated"]
    reference = Episode.replay(task, replies)
    reference.settle()
    assert last["truncated"] and not last["terminated"]
    assert last["info"]["trajectory"] == reference.to_dict()
    assert last["reward"] == reference.reward().total
    assert reference.reward().components["margin"] == -1.0


def test_gymnasium_sessions_are_independent(urls: dict[str, str]) -> None:
    row = make_row(Task(game="tictactoe", seed=1))
    with (
        httpx.Client(base_url=urls["gymnasium"], timeout=60) as a,
        httpx.Client(base_url=urls["gymnasium"], timeout=60) as b,
    ):
        a.post("/reset", json=row).raise_for_status()
        b.post("/reset", json=row).raise_for_status()
        out_a = a.post("/step", json={**row, "response": response("<move>4</move>")}).json()
        out_b = b.post("/step", json={**row, "response": response("<move>0</move>")}).json()
    assert out_a["info"]["move"] == "4" and out_b["info"]["move"] == "0"
    assert out_a["info"]["turn"] == out_b["info"]["turn"] == 1


def test_bad_task_is_a_422(urls: dict[str, str]) -> None:
    row = make_row(Task(game="tictactoe"))
    row["task"]["depth"] = 99
    with httpx.Client(base_url=urls["gymnasium"], timeout=60) as env:
        assert env.post("/reset", json=row).status_code == 422


def test_tools_game_verify_returns_engine_reward(urls: dict[str, str]) -> None:
    task = Task(game="othello", seed=7)
    row = make_row(task, "tools")
    player = ScriptedPlayer("minimax:1", 0)
    messages = list(row["responses_create_params"]["input"])
    assert row["responses_create_params"]["tools"][0]["name"] == "make_move"
    moves: list[dict[str, str]] = []
    with httpx.Client(base_url=urls["tools"], timeout=60) as env:
        seeded = env.post("/seed_session", json=row).json()
        assert seeded["observation"] == messages[-1]["content"]
        illegal = env.post("/make_move", json={"move": "a1"})
        assert illegal.headers[DONE_HEADER] == "0" and "a1" in illegal.text
        moves.append({"move": "a1"})
        messages.append({"role": "user", "content": illegal.text})
        done = False
        while not done:
            move = str(player.move(messages))
            moves.append({"move": move})
            result = env.post("/make_move", json={"move": move})
            done = result.headers[DONE_HEADER] == "1"
            messages += [
                {"role": "assistant", "content": f"<move>{move}</move>"},
                {"role": "user", "content": result.text},
            ]
        assert env.post("/make_move", json={"move": "pass"}).status_code == 409
        verify = env.post("/verify", json={**row, "response": response("done")}).json()
        # Verified: the session is released.
        assert env.post("/make_move", json={"move": "pass"}).status_code == 404
    reference = Episode.replay(task, moves)
    assert verify["trajectory"] == reference.to_dict()
    assert verify["reward_breakdown"] == reference.reward().to_dict()
    assert verify["reward"] == reference.reward().total
    assert verify["result"] == reference.result


def test_tools_a_stopped_game_is_settled(urls: dict[str, str]) -> None:
    """A model that answers without a tool call stops playing (simple_agent ends its
    loop): its closing text is not a move, in NeMo Gym as in TRL, and core settles
    the game (Episode.settle: a loss by default, margin -1)."""
    task = Task(game="tictactoe", seed=2)
    row = make_row(task, "tools")
    stop = response("<move>0</move> I would rather stop here.")
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "make_move",
        "arguments": '{"move": "4"}',
    }
    with httpx.Client(base_url=urls["tools"], timeout=60) as env:
        env.post("/seed_session", json=row).raise_for_status()
        output = env.post("/make_move", json={"move": "4"}).text
        tool_output = {"type": "function_call_output", "call_id": "c1", "output": output}
        stop["output"] = [call, tool_output, *stop["output"]]
        verify = env.post("/verify", json={**row, "response": stop}).json()
    reference = Episode.replay(task, [{"move": "4"}])
    reference.settle()
    assert verify["trajectory"] == reference.to_dict()
    assert verify["result"] == "loss" and verify["trajectory"]["termination"] == "stopped"
    assert verify["reward_breakdown"] == reference.reward().to_dict()
    assert verify["reward"] == reference.reward().total
    assert verify["reward_breakdown"]["components"]["margin"] == -1.0


@pytest.mark.parametrize(
    "body",
    [
        "4",
        "2.5",
        "null",
        '["4"]',
        '"4"',
        '{"move": 4}',
        '{"square": "4"}',
        '{"move": "4", "x": 1}',
        "",
    ],
)
def test_tools_raw_arguments_are_judged_by_core(urls: dict[str, str], body: str) -> None:
    """The agent posts the call's decoded arguments as the body, whatever they are:
    core judges them (Episode.step_tool), no pydantic model refuses them first."""
    task = Task(game="tictactoe", seed=2)
    with httpx.Client(base_url=urls["tools"], timeout=60) as env:
        env.post("/seed_session", json=make_row(task, "tools")).raise_for_status()
        reply = env.post("/make_move", content=body, headers={"content-type": "application/json"})
        assert reply.status_code == 200, reply.text
        verify = env.post("/verify", json={**make_row(task, "tools"), "response": response("")})
    import json as _json

    reference = Episode(task)
    reference.reset()
    assert reply.text == reference.step_tool(_json.loads(body) if body else None).observation
    reference.settle()
    assert verify.json()["trajectory"] == reference.to_dict()
    assert reference.events[0]["error"] == "format"


def test_tools_a_body_that_is_not_json_is_a_400(urls: dict[str, str]) -> None:
    with httpx.Client(base_url=urls["tools"], timeout=60) as env:
        env.post("/seed_session", json=make_row(Task(), "tools")).raise_for_status()
        reply = env.post(
            "/make_move", content="{nope", headers={"content-type": "application/json"}
        )
    assert reply.status_code == 400 and "JSON arguments" in reply.text


def test_tools_abandoned_sessions_expire(urls: dict[str, str]) -> None:
    row = make_row(Task(game="tictactoe"), "tools")
    with httpx.Client(base_url=urls["tools"], timeout=60) as old:
        old.post("/seed_session", json=row).raise_for_status()
        time.sleep(TOOLS_TTL + 0.5)
        with httpx.Client(base_url=urls["tools"], timeout=60) as new:
            new.post("/seed_session", json=row).raise_for_status()  # sweeps idle sessions
        assert old.post("/make_move", json={"move": "4"}).status_code == 404


CONFIG_CHECK = """
from omegaconf import OmegaConf
from adapters.nemo_gym.server import GameServerConfig
from responses_api_agents.gymnasium_agent.app import GymnasiumAgentConfig
cfg = OmegaConf.to_container(OmegaConf.load("adapters/nemo_gym/gamebridge.yaml"))
at = {"host": "127.0.0.1", "port": 1, "name": "x"}
res = GameServerConfig.model_validate({**cfg["gamebridge_resources_server"]["resources_servers"]["gamebridge"], **at})
agent = GymnasiumAgentConfig.model_validate({**cfg["gamebridge_gymnasium_agent"]["responses_api_agents"]["gymnasium_agent"], **at})
assert agent.resources_server.name in cfg, agent.resources_server.name
print(res.style, res.domain.value, agent.max_steps)
"""


def test_ng_run_config_validates_against_nemo_gym_models() -> None:
    from rollouts.drivers.nemo_gym import ROOT

    out = subprocess.run(
        [str(nemo_python()), "-c", CONFIG_CHECK], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["gymnasium", "games", "100"]


@pytest.fixture(scope="module")
def agent(urls: dict[str, str]) -> Iterator[str]:
    """NeMo Gym's own GymnasiumAgent (adapters.nemo_gym.agent) over the gymnasium server,
    the model being the scripted policy server (in this process)."""
    from rollouts.drivers.nemo_gym import ROOT
    from rollouts.model.policy_server import serve_in_thread
    from rollouts.model.servers import start_server

    with serve_in_thread("noisy:0.4/minimax:1", seed=3) as model_url:
        argv = ["python", "-m", "adapters.nemo_gym.agent", "--port", "{port}"]
        argv += ["--resources-url", urls["gymnasium"], "--model-url", model_url]
        argv += ["--max-steps", "40"]
        env = {"PYTHONUNBUFFERED": "1"}
        with start_server(argv, "/", env, str(nemo_python()), cwd=ROOT) as server:
            yield server.base_url


def test_agent_aggregate_metrics_report_core_outcome_rates(agent: str) -> None:
    """Rows through NeMo Gym's agent (``/run``), then its ``/aggregate_metrics`` (what
    ``ng_collect_rollouts`` calls): the key metrics hold core's rates over the games."""
    from core.metrics import RATE_KEYS, outcome_rates

    rows = [make_row(Task(game=g, seed=s)) for g in ("tictactoe", "connect_four") for s in (1, 2)]
    runs = []
    with httpx.Client(base_url=agent, timeout=120) as client:
        for index, row in enumerate(rows):
            run = client.post("/run", json=row)
            assert run.status_code == 200, run.text
            runs.append({**run.json(), "_ng_task_index": index, "_ng_rollout_index": 0})
        out = client.post("/aggregate_metrics", json={"verify_responses": runs})
    assert out.status_code == 200, out.text
    key = out.json()["key_metrics"]
    expected = outcome_rates([r["info"]["trajectory"] for r in runs])
    assert {k: key[k] for k in RATE_KEYS} == {k: expected[k] for k in RATE_KEYS}
    assert expected["games"] == 4 and expected["invalid_move_rate"] > 0  # the noisy model
    assert key["mean/reward"] == pytest.approx(sum(r["reward"] for r in runs) / 4)


def test_agent_passes_the_resources_servers_reason_on(agent: str) -> None:
    row = make_row(Task(game="tictactoe"))
    row["task"]["depth"] = 99
    with httpx.Client(base_url=agent, timeout=60) as client:
        out = client.post("/run", json=row)
    assert out.status_code == 422, out.text
    body = out.json()
    assert "depth must be an int in 1..12" in body["detail"]
    assert body["upstream"].endswith("/reset") and body["upstream_status"] == 422


def test_tools_server_aggregate_metrics(urls: dict[str, str]) -> None:
    from core.metrics import outcome_rates

    verified = []
    for index, seed in enumerate((1, 2)):
        row = make_row(Task(game="tictactoe", seed=seed, max_turns=2), "tools")
        with httpx.Client(base_url=urls["tools"], timeout=60) as env:
            env.post("/seed_session", json=row).raise_for_status()
            env.post("/make_move", json={"move": "4" if seed == 1 else "zz"})
            done = env.post("/verify", json={**row, "response": response("<move>0</move>")})
            verified.append({**done.json(), "_ng_task_index": index, "_ng_rollout_index": 0})
    with httpx.Client(base_url=urls["tools"], timeout=60) as env:
        key = env.post("/aggregate_metrics", json={"verify_responses": verified}).json()
    expected = outcome_rates([v["trajectory"] for v in verified])
    assert key["key_metrics"]["invalid_move_rate"] == expected["invalid_move_rate"] > 0
    assert key["agent_metrics"]["loss_rate"] == expected["loss_rate"]
