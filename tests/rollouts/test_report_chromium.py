"""The HTML report: self-contained, and it renders and replays in headless
Chromium without console errors."""

from __future__ import annotations

import copy
import dataclasses
import html
import re
import subprocess
from pathlib import Path

import pytest

from rollouts.drivers.base import RolloutRecord
from rollouts.evaluation.report import GameSection, render_report, replay_frames, write_report
from rollouts.evaluation.summary import check_identity

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def _two_frameworks(records: list[RolloutRecord]) -> GameSection:
    other = [
        dataclasses.replace(r, framework="other", trajectory=copy.deepcopy(r.trajectory))
        for r in records
    ]
    runs = {"offline": records, "other": other}
    return GameSection("tictactoe", runs, divergences=check_identity(runs))


def test_report_is_self_contained(offline_records: list[RolloutRecord]) -> None:
    page = render_report([_two_frameworks(offline_records)], verdict="IDENTICAL across 2")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page and "<link" not in page
    assert page.count("<svg") >= 3  # two histograms + the difficulty chart
    assert "identical across 2 frameworks" in page.lower()
    # replay data cannot close its <script> element early
    evil = dataclasses.replace(
        offline_records[0], trajectory=copy.deepcopy(offline_records[0].trajectory)
    )
    evil.trajectory["events"][0]["reply"] = "</script><script>alert(1)</script>"
    page = render_report([GameSection("tictactoe", {"x": [evil]})])
    assert "</script><script>alert(1)" not in page


def test_replay_frames_follow_the_trajectory(offline_records: list[RolloutRecord]) -> None:
    traj = offline_records[0].trajectory
    frames = replay_frames(traj)
    assert len(frames) == len(traj["events"]) + 1
    assert frames[0]["board"] == traj["initial_board"]
    assert [f["board"] for f in frames[1:]] == [e["board"] for e in traj["events"]]
    assert traj["result"] in frames[-1]["caption"]


def _chromium(
    args: list[str], user_dir: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={user_dir}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.chromium
@pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium (make setup installs it)"
)
def test_report_renders_and_replays_in_chromium(
    offline_records: list[RolloutRecord], tmp_path: Path
) -> None:
    section = _two_frameworks(offline_records)
    report = write_report(
        tmp_path / "report.html", [section], verdict="IDENTICAL across 2", meta={"test": "chromium"}
    )
    shot = tmp_path / "shot.png"
    run = _chromium(
        ["--window-size=1200,2000", f"--screenshot={shot}", report.as_uri()], tmp_path / "ud1"
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert _console_lines(run.stderr) == []

    # Jump to episode 1, frame 2 through the URL hash: the script must show that board.
    traj = section.records["offline"][1].trajectory
    dom = _chromium(["--dump-dom", report.as_uri() + "#episode=1&frame=2"], tmp_path / "ud2")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_lines(dom.stderr) == []
    n = sum(len(v) for v in section.records.values())
    assert f'data-replay-ready="{n}"' in dom.stdout
    board = re.search(r'<pre class="board" id="board">(.*?)</pre>', dom.stdout, re.S)
    assert board is not None
    expected = replay_frames(traj)[min(2, len(traj["events"]))]["board"]
    assert html.unescape(board.group(1)) == expected
    pos = re.search(r'<span id="pos">(.*?)</span>', dom.stdout)
    assert (
        pos is not None
        and pos.group(1) == f"{min(2, len(traj['events'])) + 1} / {len(traj['events']) + 1}"
    )


@pytest.mark.chromium
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium")
def test_console_errors_are_detected(tmp_path: Path) -> None:
    """The console check above can fail: a page that throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('boom');</script></body></html>")
    run = _chromium(["--dump-dom", bad.as_uri()], tmp_path / "ud")
    assert any("boom" in line for line in _console_lines(run.stderr))


def _tool_mode(records: list[RolloutRecord]) -> list[RolloutRecord]:
    out = []
    for r in records:
        traj = copy.deepcopy(r.trajectory)
        for e in traj["events"]:
            e["kind"] = "tool"
        out.append(dataclasses.replace(r, framework="toolish", trajectory=traj))
    return out


def test_report_labels_text_and_tool_mode_columns_and_its_axes(
    offline_records: list[RolloutRecord],
) -> None:
    """Which column is text mode and which tool mode; the charts' axis titles; an
    empty difficulty bucket says n=0 (it read as missing data, or as no wins)."""
    few = [r for r in offline_records if r.task["random_move_prob"] < 0.5]  # two buckets empty
    section = GameSection("tictactoe", {"core": few, "toolish": _tool_mode(few)})
    page = render_report([section])
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", page)
    assert header is not None
    assert "<th>core [text]</th>" in header.group(1)
    assert "<th>toolish [tools]</th>" in header.group(1)
    assert "identity is checked within a mode" in page
    assert "reward total</text>" in page and "episodes (max" in page
    assert "win rate (95% CI)</text>" in page and "opponent random_move_prob" in page
    assert page.count(">n=0<title>") >= 2


@pytest.mark.chromium
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs /usr/bin/chromium")
def test_report_replay_links_follow_the_play_page_address(
    offline_records: list[RolloutRecord], tmp_path: Path
) -> None:
    """The play page's address is an input (default: gamebridge play's default), kept
    in the browser and settable by #play=URL: a play page on another port is reachable."""
    report = write_report(tmp_path / "report.html", [_two_frameworks(offline_records)])
    dom = _chromium(
        ["--dump-dom", report.as_uri() + "#episode=1&play=http%3A%2F%2F127.0.0.1%3A9123"],
        tmp_path / "ud",
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_lines(dom.stderr) == []
    link = re.search(r'<a id="play-link" href="([^"]*)"', dom.stdout)
    assert link is not None and link.group(1).startswith("http://127.0.0.1:9123/#replay="), link
    plain = _chromium(["--dump-dom", report.as_uri()], tmp_path / "ud2")
    link = re.search(r'<a id="play-link" href="([^"]*)"', plain.stdout)
    assert link is not None and link.group(1).startswith("http://127.0.0.1:8765/#replay=")
