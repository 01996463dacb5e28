"""The gamebridge CLI: eval, compare (identity and divergence), export, and the
core driver's records against an offline replay."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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
    assert cli.main(["export", "--keep", "victories", "--in", str(runs), "--out", str(out)]) == 2


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


ENTRY = (
    "import sys; [sys.modules.__setitem__(m, None) for m in sys.argv[1].split(',') if m]; "
    "from rollouts.cli import main; sys.argv = ['gamebridge', *sys.argv[2:]]; sys.exit(main())"
)
"""The ``gamebridge`` console script's entry point (``rollouts.cli:main``), with the
modules named in its first argument made unimportable (a missing extra)."""


def _gamebridge(
    argv: list[str], *, block: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, block, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[2],
    )


NO_NEMO = {"GAMEBRIDGE_NEMO_PYTHON": "/nonexistent/.venv-nemo/bin/python"}


def _refused_port() -> int:
    """A port where nothing listens (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bad_inputs(tmp: Path, busy_port: int) -> list[tuple[list[str], str, dict[str, Any]]]:
    """Every documented bad input: (argv, what the one line says, how to run it)."""
    malformed = tmp / "malformed.jsonl"
    malformed.write_text("not json\nnor this\n")
    garbage = tmp / "garbage.jsonl"
    garbage.write_text("hello")
    empty = tmp / "empty.jsonl"
    empty.write_text("")
    out = str(tmp / "out")
    cases: list[tuple[list[str], str, dict[str, Any]]] = [
        (["eval", "--game", "chess"], "unknown game 'chess'", {}),
        (["compare", "--game", "chess"], "unknown game 'chess'", {}),
        (["demo", "--games", "tictactoe,chess"], "unknown game 'chess'", {}),
        (["play", "--terminal", "--game", "chess"], "unknown game 'chess'", {}),
        (["play", "--terminal", "--policy", "minimax:0"], "minimax depth", {}),
        (["eval", "--framework", "nope"], "skyrl = skyrl_gym", {}),
        (["compare", "--frameworks", "core,nope"], "unknown framework 'nope'", {}),
        (["eval", "--policy", "banana"], "a policy is random | minimax:D", {}),
        (["eval", "--policy", "minimax:99"], "minimax depth must be in 1..12", {}),
        (["serve-policy", "--policy", "noisy:2"], "noise must be in [0, 1]", {}),
        (["eval", "-n", "0"], "argument -n: must be at least 1, not 0", {}),
        (["compare", "-n", "-3"], "must be at least 1", {}),
        (["demo", "-n", "zero"], "'zero' is not a whole number", {}),
        (["eval", "--concurrency", "0"], "must be at least 1", {}),
        (["export", "--in", str(tmp / "missing.jsonl"), "--out", out], "no such file", {}),
        (["export", "--in", str(malformed), "--out", out], "not a rollout record", {}),
        (["export", "--in", str(garbage), "--out", out], "no rollout records", {}),
        (["export", "--in", str(empty), "--out", out], "no rollout records", {}),
        (["export", "--in", str(tmp), "--out", out], "no such file", {}),
        (["export", "--in", str(empty), "--out", out, "--keep", "victories"], "--keep", {}),
        (["eval", "--resume"], "--resume needs --out", {}),
        (["serve-policy", "--port", str(busy_port)], f"port {busy_port} on 127.0.0.1 is busy", {}),
        (["serve-policy", "--port", "70000"], "a port is 0..65535", {}),
        (["play", "--port", str(busy_port)], "busy", {}),
        (["play", "--port", "99999"], "a port is 0..65535, not 99999", {}),
        (["play", "--runs", str(tmp / "nonexistent")], "no such directory", {}),
        (["eval", "--base-url", "notaurl"], "is not an http(s) URL", {}),
        (["compare", "--base-url", "notaurl"], "is not an http(s) URL", {}),
        (["eval", "--base-url", f"http://127.0.0.1:{_refused_port()}/v1"], "cannot connect", {}),
        (["eval", "--opponent", "alphazero"], "invalid choice: 'alphazero'", {}),
        (["eval", "--depth", "13"], "a depth is 1..12, not 13", {}),
        (["compare", "--depth", "0"], "must be at least 1", {}),
        (
            ["eval", "--framework", "verifiers"],
            "pip install -e '.[verifiers]'",
            {"block": "verifiers"},
        ),
        (["eval", "--framework", "openenv"], "pip install -e '.[openenv]'", {"block": "openenv"}),
        (["eval", "--framework", "skyrl"], "pip install -e '.[skyrl]'", {"block": "skyrl_gym"}),
        (["compare", "--frameworks", "gem"], "pip install -e '.[gem]'", {"block": "gem"}),
        (["eval", "--executor", "ray"], "pip install -e '.[ray]'", {"block": "ray"}),
        (["eval", "-n", "1"], "pip install -e '.[rollouts]'", {"block": "fastapi"}),
        (["train", "grpo", "--model", "m"], "pip install -e '.[trl]'", {"block": "trl"}),
        (["eval", "--framework", "nemo_gym"], "make setup-nemo", {"env": NO_NEMO}),
        (["compare", "--frameworks", "nemo_gym_tools"], "make setup-nemo", {"env": NO_NEMO}),
    ]
    if importlib.util.find_spec("pyspiel") is not None:
        cases += [
            (["eval", "--game", "openspiel:nope"], "unknown OpenSpiel game 'nope'", {}),
            (["eval", "--game", "openspiel:liars_dice"], "has chance events", {}),
            (["eval", "--game", "openspiel:go(board_size=x)"], "OpenSpiel cannot load", {}),
            (
                ["eval", "--game", "openspiel:tic_tac_toe", "--opponent", "minimax"],
                "offers the opponents",
                {},
            ),
        ]
    else:
        cases.append((["eval", "--game", "openspiel:hex"], "[openspiel]", {}))
    return cases


def test_every_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Each documented bad input, through the CLI as a subprocess: exit status 2,
    exactly one line on stderr saying what is wrong, no traceback."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        cases = _bad_inputs(tmp_path, busy.getsockname()[1])
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda c: _gamebridge(c[0], **c[2]), cases))
    problems = []
    for (argv, says, how), run in zip(cases, runs, strict=True):
        lines = run.stderr.strip().splitlines()
        if (
            run.returncode != 2
            or len(lines) != 1
            or says not in run.stderr
            or "Traceback" in (run.stderr + run.stdout)
        ):
            problems.append(
                f"gamebridge {' '.join(argv)} {how}: exit {run.returncode}\n{run.stderr}"
            )
    assert not problems, "\n\n".join(problems)


def test_framework_aliases() -> None:
    """The pip extra's name runs its driver: ``skyrl`` is ``skyrl_gym``."""
    assert cli._framework("skyrl") == "skyrl_gym"
    assert cli._framework("nemo-gym") == "nemo_gym"
    args = cli.build_parser().parse_args(["eval", "--framework", "skyrl"])
    assert args.framework == "skyrl_gym"


@pytest.mark.parametrize(
    "argv", [["eval", "--gmae", "x"], ["train", "recipe", "--quik"], ["play", "--prot", "1"]]
)
def test_a_misspelt_flag_shows_the_subcommands_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    prog = "gamebridge " + " ".join(a for a in argv if not a.startswith("-") and a != "x")
    prog = prog.removesuffix(" 1")
    assert err.startswith(f"usage: {prog} [-h]"), err
    assert (
        err.strip().splitlines()[-1]
        == f"{prog}: error: unrecognized arguments: {' '.join(argv[len(prog.split()) - 1 :])}"
    )


def _subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = True
            for name, sub in action.choices.items():
                yield from _subcommands(sub, (*path, name))
    if not found:
        yield path, parser


def test_every_subcommands_help_shows_its_defaults_and_choices() -> None:
    """``--help`` of every subcommand (``train grpo|sft|recipe`` too) names each
    flag's default and choices; the games, frameworks and policies are listed."""
    from core import list_games
    from rollouts.drivers import DRIVERS

    seen = set()
    for path, parser in _subcommands(cli.build_parser()):
        seen.add(" ".join(path))
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            flag = action.option_strings[-1]
            if action.default not in (None, False, "", argparse.SUPPRESS) or isinstance(
                action, argparse.BooleanOptionalAction
            ):
                assert f"default: {action.default}" in text or (
                    f"default {action.default}" in text
                ), f"gamebridge {' '.join(path)} --help: {flag} hides its default"
            for choice in action.choices or ():
                assert str(choice) in text, f"gamebridge {' '.join(path)}: {flag} hides {choice}"
            if action.dest in ("game", "games") and path[0] in ("eval", "compare", "demo"):
                assert all(g in text for g in list_games()), path
            if action.dest in ("framework", "frameworks"):
                assert all(d in text for d in DRIVERS), path
            if action.dest == "policy" and path[0] in ("eval", "compare", "demo", "serve-policy"):
                assert "minimax:D" in text and "noisy:P" in text, path
        if path and path[0] in ("serve-policy", "play"):
            assert "default: 127.0.0.1" in text and "--port" in text, path
    assert {"eval", "compare", "demo", "export", "serve-policy", "play"} <= seen
    assert {"train grpo", "train sft", "train recipe"} <= seen


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


class ToolsDriver(CoreDriver):
    """The core driver in tool mode, registered under another name."""

    name = "coretools"

    def __init__(self) -> None:
        super().__init__(use_tools=True)


def test_compare_labels_modes_shows_the_tool_reference_and_names_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rollouts.cli.comparison import compare_games
    from rollouts.evaluation.compare import CompareSettings, choose_frameworks

    monkeypatch.setenv("GAMEBRIDGE_NEMO_PYTHON", str(tmp_path / "no-venv-nemo" / "python"))
    chosen, skipped = choose_frameworks(None)
    assert "nemo_gym" not in chosen and "make setup-nemo" in skipped["nemo_gym"]
    assert "core" in chosen
    monkeypatch.setitem(DRIVERS, "coretools", f"{__name__}:ToolsDriver")
    code, verdict = compare_games(
        ["tictactoe"],
        ["core", "coretools"],
        CompareSettings(n=3, seed=0, policy="minimax:1"),
        tmp_path,
        title="t",
        skipped={"nemo_gym": skipped["nemo_gym"]},
    )
    text = capsys.readouterr().out
    assert code == 0 and verdict[0] == "IDENTICAL across 2 frameworks (core, coretools)"
    assert text.startswith(f"skipping nemo_gym: {skipped['nemo_gym']}")
    assert "core [text]" in text and "coretools [tools]" in text
    assert "core [tools]" in text and "(the tool-mode reference)" in text
    table = text[text.index("win rate") - 400 :]
    assert "core [text]" in table and "core [tools]" in table
    assert text.strip().splitlines()[-1] == "skipped 1 frameworks that cannot run here: nemo_gym"


class WatchedDriver(CoreDriver):
    """The core driver, noting what stderr held when its run began."""

    name = "watched"
    seen: str = ""
    capsys: Any = None

    def run(self, tasks, **kw):  # type: ignore[no-untyped-def, override]
        WatchedDriver.seen = WatchedDriver.capsys.readouterr().err
        return super().run(tasks, **kw)


def test_the_progress_bar_shows_before_the_first_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.setitem(DRIVERS, "watched", f"{__name__}:WatchedDriver")
    WatchedDriver.capsys = capsys
    out = tmp_path / "eval.jsonl"
    argv = ["eval", "--framework", "watched", "-n", "3", "--progress", "--out", str(out)]
    assert cli.main(argv) == 0
    assert "watched" in WatchedDriver.seen and "0/3" in WatchedDriver.seen, WatchedDriver.seen
    assert "3/3" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "opponent", "depth"),
    [
        (["--opponent", "random"], "random", 2),
        (["--opponent", "minimax", "--depth", "9"], "minimax", 9),
        (
            [
                "--game",
                "openspiel:tic_tac_toe",
                "--policy",
                "random",
                "--opponent",
                "mcts",
                "--depth",
                "1",
            ],
            "mcts",
            1,
        ),
        ([], "minimax", 2),
    ],
)
def test_eval_plays_the_chosen_opponent(
    argv: list[str], opponent: str, depth: int, tmp_path: Path
) -> None:
    """``eval --opponent/--depth`` reach every task (the play page and the tasks
    offer them; ``--min-rmp 0 --max-rmp 0`` alone could only reach minimax depth 2)."""
    out = tmp_path / "run.jsonl"
    base = ["eval", "-n", "2", "--min-rmp", "0", "--max-rmp", "0", "--out", str(out)]
    assert cli.main([*base, *argv]) == 0
    tasks = [r.task for r in read_records(out)]
    assert [(t["opponent"], t["depth"]) for t in tasks] == [(opponent, depth)] * 2


def test_compare_plays_the_chosen_opponent(tmp_path: Path) -> None:
    code = cli.main(
        [
            "compare",
            "--frameworks",
            "core",
            "-n",
            "2",
            "--opponent",
            "random",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    (records,) = tmp_path.glob("tictactoe-core.jsonl")
    assert {r.task["opponent"] for r in read_records(records)} == {"random"}
    assert "random" in (tmp_path / "report.html").read_text()
