"""The Verifiers (v1) adapter: taskset rows, rewards, the Env's turn loop, the harness,
and the documented ``vf-eval`` command run offline against the scripted policy server."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers is not installed")

from adapters.verifiers import (  # noqa: E402 - after the importorskip
    TASKSET_ID,
    ChatHarness,
    GameEnv,
    GameTaskset,
    GameTasksetConfig,
)
from core import DEFAULT_WEIGHTS, Episode, Task, TaskError, make_tasks  # noqa: E402
from core.metrics import RATE_KEYS, outcome_rates  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
POLICY = "noisy:0.3/minimax:1"


def _taskset(**config: Any) -> GameTaskset:
    return vf.load_taskset(GameTasksetConfig(id=TASKSET_ID, **config))


def test_taskset_id_resolves_taskset_env_and_harness() -> None:
    from verifiers.v1.utils.loaders import default_harness_id, environment_class, harness_class

    assert type(_taskset(n=1)) is GameTaskset
    assert environment_class(TASKSET_ID) is GameEnv
    assert default_harness_id(TASKSET_ID) == TASKSET_ID
    assert harness_class(TASKSET_ID) is ChatHarness


def test_taskset_rows_are_make_tasks() -> None:
    tasks = list(_taskset(game="tictactoe", n=5, seed=3))
    expected = make_tasks(5, seed=3, game="tictactoe")
    assert [t.data.row for t in tasks] == [t.to_dict() for t in expected]
    assert [t.data.id for t in tasks] == [t.task_id for t in expected]
    assert [t.data.idx for t in tasks] == list(range(5))
    assert tasks[0].data.prompt is None
    assert tasks[0].data.system_prompt == Episode(expected[0]).system_prompt


def test_explicit_rows_serve_any_game() -> None:
    rows = [Task(game="othello", seed=1).to_dict(), Task(game="tictactoe", seed=2).to_dict()]
    tasks = list(_taskset(rows=rows, game="wordle", n=99))
    assert [t.data.row for t in tasks] == rows
    assert "Othello" in tasks[0].data.system_prompt


def test_a_bad_row_is_a_task_error() -> None:
    with pytest.raises(TaskError, match="unknown task fields"):
        list(_taskset(rows=[{"game": "tictactoe", "colour": "blue"}]))


def test_rewards_are_the_rubric_components_with_their_weights() -> None:
    task = next(iter(_taskset(n=1)))
    rewards = {fn.__name__: fn._vf_weight for fn in task.hooks("reward")}
    assert rewards == dict(DEFAULT_WEIGHTS)


def test_reward_methods_read_the_breakdown_and_refuse_an_unfinished_game() -> None:
    task = next(iter(_taskset(n=1)))
    episode = Episode(task.data.row)
    episode.reset()
    while not episode.done:
        episode.step("<move>nonsense</move>")  # forfeits after max_invalid_moves
    breakdown = episode.reward()

    class FakeTrace:
        def __init__(self, info: dict[str, Any]) -> None:
            self.info = info
            self.stop_condition = "forfeit"

    for fn in task.hooks("reward"):
        score = asyncio.run(fn(trace=FakeTrace({"reward": breakdown.to_dict()})))
        assert score == breakdown.components[fn.__name__]
    with pytest.raises(ValueError, match="did not finish"):
        asyncio.run(task.hooks("reward")[0](trace=FakeTrace({})))


async def _run_env(rows: list[dict[str, Any]], base_url: str) -> list[Any]:
    """What ``vf-eval`` does in process; the episodes, to inspect their traces."""
    from verifiers.v1.env import RunSlot

    env = vf.load_environment(vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "rows": rows}}))
    ctx = vf.ModelContext(
        model="scripted", client=vf.EvalClientConfig(base_url=base_url, api_key_var="NO_KEY")
    )
    async with env.serving():
        return list(await asyncio.gather(*(env.run_slot(RunSlot(t), ctx) for t in env.taskset)))


@pytest.mark.server
def test_env_plays_the_episode_and_records_it_in_the_trace() -> None:
    from core.players import ScriptedPlayer
    from rollouts.model.policy_server import serve_in_thread

    rows = [t.to_dict() for t in make_tasks(3, seed=5, game="tictactoe")]
    with serve_in_thread(POLICY, seed=0) as url:
        episodes = asyncio.run(_run_env(rows, url))
    for row, episode in zip(rows, episodes, strict=True):
        assert episode.ok, episode.errors
        (trace,) = episode.traces
        trajectory = trace.info["episode"]
        replay = Episode.replay(row, [e["reply"] for e in trajectory["events"]])
        assert trajectory == replay.to_dict()
        assert trace.info["reward"] == replay.reward().to_dict()
        assert trace.stop_condition == replay.termination
        assert trace.reward == pytest.approx(replay.reward().total)
        assert {k: r.score for k, r in trace.rewards.items()} == replay.reward().components
        # The model saw the system prompt and every observation, in order.
        messages = trace.messages
        assert messages[0].content == replay.system_prompt
        users = [m.content for m in messages if m.role == "user"]
        assert users[0] == Episode(row).reset()
        assert len(users) == trace.num_turns == len(trajectory["events"])
        # And each reply is what the scripted player answers to that conversation.
        player = ScriptedPlayer(POLICY, seed=0)
        wire = [{"role": m.role, "content": m.content} for m in messages]
        for i, m in enumerate(wire):
            if m["role"] == "assistant":
                assert m["content"] == player.reply(wire[:i])


@pytest.mark.server
def test_a_failing_model_endpoint_is_an_error_not_a_reward() -> None:
    rows = [Task(game="tictactoe", seed=1).to_dict()]
    (episode,) = asyncio.run(_run_env(rows, "http://127.0.0.1:9/v1"))  # nothing listens on 9
    assert not episode.ok
    (trace,) = episode.traces
    assert "reward" not in trace.info
    assert trace.info["episode"]["done"] is False


def _documented_vf_eval(index: int = 0) -> list[str]:
    """The ``index``-th ``vf-eval`` command of docs/verifiers.md's ```bash blocks, as argv
    (0: the text-mode run; 1: the tool-mode run with the walkthrough's arguments; the
    capped run and the walkthrough's file are left out)."""
    text = (ROOT / "docs" / "verifiers.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    commands = [  # typed as .venv/bin/vf-eval in the docs
        line.removeprefix(".venv/bin/")
        for b in blocks
        for line in b.replace("\\\n", " ").splitlines()
        if line.removeprefix(".venv/bin/").startswith("vf-eval ")
    ]
    assert len(commands) == 4 and "max-turns" in commands[1], commands
    runs = [commands[0], commands[2]]  # text, tools (the capped run, the walkthrough's file)
    argv = shlex.split(runs[index])
    # the page sends vf-eval's traces (stdout) to /dev/null, as a shell does; the test
    # reads the traces from the output folder, so it runs the command without the shell's
    # redirection
    if argv[-2:] == [">", "/dev/null"]:
        argv = argv[:-2]
    return argv


@pytest.mark.server
def test_the_documented_vf_eval_command_runs_offline(tmp_path: Path) -> None:
    from rollouts.model.policy_server import serve_in_thread

    argv = _documented_vf_eval()
    assert "--no-push" in argv and "--env.taskset.game" in argv
    with serve_in_thread("minimax:2", seed=0) as url:
        argv[argv.index("--client.base-url") + 1] = url
        argv[argv.index("--output-dir") + 1] = str(tmp_path)
        argv[0] = str(Path(sys.executable).with_name("vf-eval"))
        done = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    (traces_file,) = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert len(episodes) == int(argv[argv.index("-n") + 1])
    game = argv[argv.index("--env.taskset.game") + 1]
    for row in episodes:
        assert row["ok"], row["errors"]
        trace = row["traces"][0]
        trajectory = trace["info"]["episode"]
        assert trajectory["game"] == game and trajectory["done"]
        assert set(trace["rewards"]) == set(DEFAULT_WEIGHTS)
        assert trace["rewards"]["win"]["score"] == trace["info"]["reward"]["components"]["win"]
        replay = Episode.replay(trajectory["task"], [e["reply"] for e in trajectory["events"]])
        assert replay.to_dict() == trajectory


@pytest.mark.server
def test_a_failed_rollout_is_a_failure_record_naming_the_endpoint() -> None:
    """Issue 15: a task that fails gets a failure record (the others would go on),
    naming the model endpoint and why, not an exception that sinks the run."""
    from rollouts.drivers import get_driver
    from rollouts.model.client import CallPolicy

    driver = get_driver("verifiers")
    driver.call_policy = CallPolicy(timeout=5, retries=1, backoff=0.05)
    (record,) = driver.run(
        [Task(game="tictactoe", seed=1)], base_url="http://127.0.0.1:9/v1", model="scripted"
    )
    assert record.error is not None and record.error["source"] == "model endpoint"
    assert "http://127.0.0.1:9/v1/chat/completions" in record.error["message"]
    assert "Connection refused" in record.error["message"]
    assert record.index == 0 and record.trajectory["partial"] is True


# --- tool mode, the walkthrough's arguments, reward weights ----------------------------------


def test_the_walkthrough_s_arguments_under_both_spellings() -> None:
    for depth_key in ("minimax_depth", "depth"):
        config = GameTasksetConfig.model_validate(
            {
                "id": TASKSET_ID,
                "n": 4,
                "min_random_move_prob": 0.0,
                "max_random_move_prob": 0.0,
                depth_key: 3,
            }
        )
        rows = [t.data.row for t in vf.load_taskset(config)]
        expected = make_tasks(4, min_random_move_prob=0.0, max_random_move_prob=0.0, depth=3)
        assert rows == [t.to_dict() for t in expected]
        assert {r["depth"] for r in rows} == {3} and {r["random_move_prob"] for r in rows} == {0.0}


def test_tool_mode_tasks_carry_core_s_tool_prompt_and_schema() -> None:
    (text,) = _taskset(n=1)
    (tools,) = _taskset(n=1, tools=True)
    episode = Episode(text.data.row)
    assert text.data.tools is None and text.data.system_prompt == episode.system_prompt
    assert tools.data.row == text.data.row
    assert tools.data.system_prompt == episode.tool_system_prompt
    assert tools.data.tools == [episode.tool_schema]


@pytest.mark.server
def test_vf_eval_tool_mode_with_the_walkthrough_s_arguments_and_weights(tmp_path: Path) -> None:
    """The documented tool-mode ``vf-eval``: every move a ``make_move`` call judged by
    core, the walkthrough's opponent, and Verifiers' re-weighted reward in core's total."""
    from rollouts.model.policy_server import serve_in_thread

    argv = _documented_vf_eval(1)
    assert argv[argv.index("--env.taskset.tools") + 1] == "true"
    weight = float(argv[argv.index("--env.taskset.task.rewards.win.weight") + 1])
    with serve_in_thread("noisy:0.3/minimax:1", seed=0) as url:
        argv[argv.index("--client.base-url") + 1] = url
        argv[argv.index("--output-dir") + 1] = str(tmp_path)
        argv[0] = str(Path(sys.executable).with_name("vf-eval"))
        done = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    (traces_file,) = tmp_path.glob("*/traces.jsonl")
    rows = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert len(rows) == int(argv[argv.index("-n") + 1])
    for row in rows:
        assert row["ok"], row["errors"]
        trace = row["traces"][0]
        trajectory = trace["info"]["episode"]
        assert trajectory["task"]["depth"] == 3 and trajectory["task"]["random_move_prob"] == 0.0
        assert trajectory["done"] and {e["kind"] for e in trajectory["events"]} == {"tool"}
        replay = Episode.replay(
            trajectory["task"], [{"move": e["reply"]} for e in trajectory["events"]]
        )
        assert replay.to_dict()["events"] == trajectory["events"]
        assert trace["rewards"]["win"]["weight"] == weight
        weighted = sum(r["score"] * r["weight"] for r in trace["rewards"].values())
        assert trace["info"]["reward"]["total"] == pytest.approx(weighted)
        assert trace["info"]["reward"]["weights"]["win"] == weight
        rates = outcome_rates([trajectory])
        assert trace["metrics"] == {k: rates[k] for k in RATE_KEYS}
