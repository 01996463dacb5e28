"""The gamebridge CLI: eval, compare (identity and divergence), export, and the
core driver's records against an offline replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.tasks import make_tasks
from rollouts import cli
from rollouts.drivers import DRIVERS, get_driver
from rollouts.drivers.base import RolloutRecord
from rollouts.drivers.core import CoreDriver
from rollouts.evaluation.export import conversation, read_records
from rollouts.model.policy_server import serve_in_thread

pytestmark = pytest.mark.server


def test_eval_writes_records_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval.jsonl"
    code = cli.main(
        [
            "eval",
            "--framework",
            "core",
            "--game",
            "tictactoe",
            "-n",
            "6",
            "--policy",
            "noisy:0.3/minimax:1",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    records = read_records(out)
    assert len(records) == 6 and {r.framework for r in records} == {"core"}
    text = capsys.readouterr().out
    assert "win rate [95% CI]" in text and "env+fw ms/step" in text and str(out) in text
    summary = json.loads(text[text.index("{") : text.rindex("}") + 1])
    assert summary["episodes"] == 6
    assert summary["results"]["win"]["count"] == sum(
        r.trajectory["result"] == "win" for r in records
    )


def test_core_driver_equals_offline_play(play) -> None:  # type: ignore[no-untyped-def]
    tasks = make_tasks(6, seed=9, game="tictactoe")
    with serve_in_thread("noisy:0.3/minimax:1", 0) as url:
        records = get_driver("core").run(tasks, base_url=url, model="scripted", concurrency=3)
        tool_records = CoreDriver(use_tools=True).run(tasks[:2], base_url=url, model="scripted")
    for task, rec in zip(tasks, records, strict=True):
        offline = play(task)
        assert rec.trajectory == offline.trajectory
        assert rec.reward == offline.reward
        assert rec.steps == len(rec.trajectory["events"])
        assert rec.completion_tokens == offline.completion_tokens
        assert rec.wall_seconds >= rec.env_seconds >= 0
    assert all(e["kind"] == "tool" for r in tool_records for e in r.trajectory["events"])


def test_compare_identical_writes_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(
        [
            "compare",
            "--game",
            "tictactoe",
            "-n",
            "4",
            "--frameworks",
            "core",
            "--out",
            str(tmp_path),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    assert "IDENTICAL across 1 frameworks (core)" in text
    assert (tmp_path / "report.html").stat().st_size > 1000
    assert len(read_records(tmp_path / "tictactoe-core.jsonl")) == 4


class TamperingDriver(CoreDriver):
    """The core driver, but it corrupts the third task's second board."""

    name = "tamper"

    def run(self, tasks, **kw):  # type: ignore[no-untyped-def, override]
        records: list[RolloutRecord] = super().run(tasks, **kw)
        for r in records:
            r.framework = "tamper"
        events = records[2].trajectory["events"]
        events[min(1, len(events) - 1)]["board"] = "corrupted"
        return records


class BrokenDriver(CoreDriver):
    name = "broken"

    def run(self, tasks, **kw):  # type: ignore[no-untyped-def, override]
        raise RuntimeError("framework exploded")


def test_compare_names_first_divergence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(DRIVERS, "tamper", f"{__name__}:TamperingDriver")
    monkeypatch.setitem(DRIVERS, "broken", f"{__name__}:BrokenDriver")
    code = cli.main(
        [
            "compare",
            "--game",
            "tictactoe",
            "-n",
            "4",
            "--frameworks",
            "core,tamper,broken",
            "--out",
            str(tmp_path),
        ]
    )
    text = capsys.readouterr().out
    assert code == 1
    tasks = make_tasks(4, seed=0, game="tictactoe", num_groups=4)
    step = min(2, len(read_records(tmp_path / "tictactoe-core.jsonl")[2].trajectory["events"]))
    assert (
        f"DIVERGENT: tictactoe: tamper diverges from core[text] on task #2 "
        f"({tasks[2].task_id}) at step {step}, field 'board'"
    ) in text
    assert "FAILED: tictactoe: broken: framework failed: RuntimeError: framework exploded" in text
    html = (tmp_path / "report.html").read_text()
    assert "Trajectories differ" in html and "tamper" in html


def test_export_keeps_wins_and_draws(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "eval.jsonl"
    assert (
        cli.main(
            [
                "eval",
                "--game",
                "tictactoe",
                "-n",
                "8",
                "--policy",
                "noisy:0.2/minimax:2",
                "--out",
                str(runs),
            ]
        )
        == 0
    )
    records = read_records(runs)
    keep = [r for r in records if r.trajectory["result"] in ("win", "draw")]
    assert keep, "expected at least one win or draw"
    out = tmp_path / "sft"
    assert cli.main(["export", "--keep", "wins,draws", "--in", str(runs), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "data.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [r.trajectory["task_id"] for r in keep]
    for row, rec in zip(rows, keep, strict=True):
        msgs = row["messages"]
        assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user"
        assistant = [m["content"] for m in msgs if m["role"] == "assistant"]
        assert assistant == [e["reply"] for e in rec.trajectory["events"]]
        roles = [m["role"] for m in msgs[1:]]
        assert roles[::2] == ["user"] * len(roles[::2])
        assert roles[1::2] == ["assistant"] * len(roles[1::2])
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == len(rows) and ds[0]["messages"][0]["role"] == "system"
    with pytest.raises(SystemExit):
        cli.main(["export", "--keep", "victories", "--in", str(runs), "--out", str(out)])


def test_export_conversation_is_what_the_model_saw(play) -> None:  # type: ignore[no-untyped-def]
    """The rebuilt conversation equals the one the policy server answered."""
    task = make_tasks(1, seed=4, game="tictactoe")[0]
    rec = play(task)
    msgs = conversation(rec.trajectory)
    from core.players import ScriptedPlayer

    player = ScriptedPlayer("noisy:0.3/minimax:1", 0)
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            assert m["content"] == player.reply(msgs[:i])


def test_plugin_subcommand_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(cli.PLUGINS, "hello", f"{__name__}:add_hello")
    monkeypatch.setitem(cli.PLUGINS, "nothere", "no_such_module_xyz:add")
    assert cli.main(["hello", "--name", "gb"]) == 0
    assert "hello gb" in capsys.readouterr().out
    assert cli.main(["nothere"]) == 2


def add_hello(parser) -> None:  # type: ignore[no-untyped-def]
    """Say hello (a test plugin)."""
    parser.add_argument("--name", default="world")
    parser.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)


def test_serve_policy_subprocess() -> None:
    """`gamebridge serve-policy` as a subprocess, started with start_server."""
    import httpx

    from rollouts.model.servers import start_server

    argv = [
        "python",
        "-m",
        "rollouts.cli",
        "serve-policy",
        "--policy",
        "minimax:1",
        "--seed",
        "3",
        "--port",
        "{port}",
    ]
    with start_server(argv, "/health", timeout=60) as srv:
        health = httpx.get(f"{srv.base_url}/health").json()
        assert health["policy"] == "minimax:1" and health["seed"] == 3
        models = httpx.get(f"{srv.base_url}/v1/models").json()
        assert models["data"][0]["id"] == "scripted"
    assert srv.process.returncode is not None


@pytest.mark.parametrize(
    ("game", "why"),
    [
        ("chess", "unknown game 'chess'"),
        ("openspiel:nope", "unknown OpenSpiel game 'nope'"),
        ("openspiel:backgammon", "has chance events"),
    ],
)
def test_a_bad_game_exits_2_with_one_line(
    game: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspiel")
    with pytest.raises(SystemExit) as exc:
        cli.main(["eval", "--framework", "core", "--game", game, "-n", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert why in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("gamebridge eval: error: argument --game:")


def test_eval_plays_a_bridged_openspiel_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspiel")
    out = tmp_path / "eval.jsonl"
    game = "openspiel:hex(board_size=5)"
    assert cli.main(["eval", "--game", game, "-n", "2", "--out", str(out)]) == 0
    records = read_records(out)
    assert [r.task["game"] for r in records] == [game, game]
    assert {r.task["opponent"] for r in records} == {"mcts"}
    assert all(r.trajectory["result"] in ("win", "loss", "draw") for r in records)
    assert "win rate" in capsys.readouterr().out
