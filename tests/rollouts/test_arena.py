"""``gamebridge arena``: ratings of four players on Tic-Tac-Toe and Connect Four with
intervals, in the report; a run killed with SIGKILL resumes to the same ratings;
endpoints as players; bad input exits 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rollouts.cli import main
from rollouts.evaluation.arena import RECORDS, ArenaPlayer, parse_players
from rollouts.evaluation.ratings import docs_marker, write_docs
from rollouts.evaluation.records import read_run

ROOT = Path(__file__).resolve().parents[2]
ARGS = [
    "arena",
    "--games",
    "tictactoe,connect_four",
    "--players",
    "random,minimax:1,minimax:3,mcts:2",
    "--rounds",
    "4",
    "--seed",
    "0",
]
GAMES_IN_ALL = 2 * 4 * 4 * 3  # games x rounds x ordered pairs of 4 players


def _ratings(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "ratings.json").read_text())
    return data


def _results(folder: Path) -> dict[int, str]:
    run = read_run(folder / RECORDS, warn=False)
    return {i: r.trajectory["result"] for i, r in run.records.items()}


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uninterrupted arena (the reference of the resume test)."""
    out = tmp_path_factory.mktemp("arena") / "whole"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out


def test_arena_rates_four_players_on_both_games_with_intervals(whole: Path) -> None:
    ratings = _ratings(whole)
    assert sorted(ratings) == ["connect_four", "tictactoe"]
    for game, table in ratings.items():
        assert table["anchor"] == "random" and table["games"] == GAMES_IN_ALL // 2
        rows = {r["player"]: r for r in table["ratings"]}
        assert sorted(rows) == ["mcts:2", "minimax:1", "minimax:3", "random"], game
        assert rows["random"]["elo"] == rows["random"]["low"] == rows["random"]["high"] == 0.0
        for name, r in rows.items():
            assert r["games"] == 24
            if name != "random":
                assert r["low"] < r["elo"] < r["high"], (game, r)
    report = (whole / "report.html").read_text()
    assert "<h2>Ratings</h2>" in report and 'aria-label="ratings with 95% intervals"' in report
    assert report.count("<h3>tictactoe</h3>") == report.count("<h3>connect_four</h3>") == 1
    assert len(read_run(whole / RECORDS).records) == GAMES_IN_ALL


def test_ratings_order_is_sane_on_connect_four(whole: Path) -> None:
    """Measured, not assumed: random rates lowest, and deeper minimax higher (its
    head-to-head score too)."""
    table = _ratings(whole)["connect_four"]
    elo = {r["player"]: r["elo"] for r in table["ratings"]}
    assert min(elo, key=elo.__getitem__) == "random"
    assert elo["minimax:3"] > elo["minimax:1"] > elo["random"]
    h2h = {(h["player"], h["against"]): h for h in table["head_to_head"]}
    deep = h2h[("minimax:3", "minimax:1")]
    assert deep["points"] > deep["games"] / 2


def test_a_killed_arena_resumes_to_the_same_ratings(whole: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollouts.cli", *ARGS, "--out", str(out)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    records = out / RECORDS
    deadline = time.monotonic() + 60
    try:
        # kill it among the Connect Four games (Tic-Tac-Toe's are the first half)
        while time.monotonic() < deadline and proc.poll() is None:
            if records.exists() and records.read_bytes().count(b"\n") > GAMES_IN_ALL // 2 + 4:
                break
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    written = read_run(records, warn=False).records
    assert GAMES_IN_ALL // 2 < len(written) < GAMES_IN_ALL, "the kill did not land mid-run"
    with records.open("ab") as f:  # and a write cut short by the kill, for good measure
        f.write(b'{"framework": "arena", "task": {"ga')
    assert main([*ARGS, "--out", str(out), "--resume"]) == 0
    assert _results(out) == _results(whole)
    assert _ratings(out) == _ratings(whole)


def test_resume_refuses_another_arenas_file(
    whole: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = [*ARGS[:4], "random,minimax:1,minimax:2,mcts:2", *ARGS[5:]]
    assert main([*other, "--out", str(whole), "--resume"]) == 2
    assert "cannot resume" in capsys.readouterr().err


def test_endpoints_play_the_bots(tmp_path: Path) -> None:
    """An OpenAI-compatible endpoint (the scripted policy server) and the embedded
    scripted server as players; the two meet in an episode with two outside seats,
    each reading its own conversation."""
    from rollouts.model.policy_server import serve_in_thread

    with serve_in_thread("minimax:2", 0) as url:
        players = f"random,minimax:1,served=endpoint:scripted@{url},noisy=scripted:noisy:0.5"
        code = main(
            [
                "arena",
                "--games",
                "tictactoe",
                "--players",
                players,
                "--rounds",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
    assert code == 0
    run = read_run(tmp_path / RECORDS)
    assert len(run.records) == 2 * 2 * 6  # rounds x seats x pairs
    for r in run.records.values():
        seats = r.trajectory["arena"]["seats"]
        assert r.framework == "arena" and r.error is None
        if set(seats) == {"served", "noisy"}:  # two outside seats, one game
            assert {e["seat"] for e in r.trajectory["events"]} == {0, 1}
            assert r.trajectory["seats"]["outside"] == [0, 1]
            continue
        outside = seats[r.trajectory["arena"]["outside"]]
        if "served" in seats or "noisy" in seats:
            assert outside in ("served", "noisy")
    noisy = [r for r in run.records.values() if "noisy" in r.trajectory["arena"]["seats"]]
    assert any(e["error"] for r in noisy for e in r.trajectory["events"])  # replies judged by core
    table = {r["player"]: r for r in _ratings(tmp_path)["tictactoe"]["ratings"]}
    assert table["served"]["elo"] > table["noisy"]["elo"]


def test_an_endpoint_that_fails_is_recorded_left_out_of_the_ratings_and_resumable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    players = "random,minimax:1,dead=endpoint:x@http://127.0.0.1:9/v1"
    argv = ["arena", "--games", "tictactoe", "--players", players, "--rounds", "1"]
    flags = ["--model-retries", "0", "--model-timeout", "2", "--out", str(tmp_path)]
    assert main([*argv, *flags]) == 1
    assert "4 games failed; resume with: gamebridge arena" in capsys.readouterr().err
    run = read_run(tmp_path / RECORDS)
    failed = [r for r in run.records.values() if r.error is not None]
    assert len(run.records) == 6 and len(failed) == 4
    assert all(r.error["source"] == "model endpoint" for r in failed)  # type: ignore[index]
    table = _ratings(tmp_path)["tictactoe"]
    assert [r["player"] for r in table["ratings"]] != [] and table["games"] == 2
    assert "dead" not in {r["player"] for r in table["ratings"]}


@pytest.mark.parametrize(
    "argv",
    [
        ["--players", "random,minimax:0"],
        ["--players", "random"],
        ["--players", "random,random"],
        ["--games", "wordle"],
        ["--players", "random,endpoint:nourl"],
        ["--resume"],
    ],
)
def test_bad_input_exits_2(argv: list[str], tmp_path: Path) -> None:
    out = [] if "--resume" in argv else ["--out", str(tmp_path)]
    assert main(["arena", *argv, *out]) == 2


def test_player_names() -> None:
    assert [p.name for p in parse_players("random,me=minimax:2,mcts:1+random:0.5")] == [
        "random",
        "me",
        "mcts:1+random:0.5",
    ]
    served = ArenaPlayer.parse("m=endpoint:qwen@http://127.0.0.1:8000/v1")
    assert (served.name, served.model, served.base_url, served.spec) == (
        "m",
        "qwen",
        "http://127.0.0.1:8000/v1",
        "endpoint:qwen",
    )


def test_docs_markers_are_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# x\n{docs_marker('nim')}\nold\n{docs_marker('nim', end=True)}\nafter\n")
    assert write_docs(page, "nim", "new table\n")
    assert (
        page.read_text()
        == f"# x\n{docs_marker('nim')}\nnew table\n{docs_marker('nim', end=True)}\nafter\n"
    )
    assert not write_docs(page, "othello", "x")
