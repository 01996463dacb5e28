"""README's first command, as a user types it: ``make demo`` on this checkout.

It runs ``make setup`` (a no-op once the venvs are stamped), then compares
Tic-Tac-Toe and Othello through every framework against the embedded policy
server, and must end on the verdict line with the report written.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.server
def test_make_demo_prints_an_identical_verdict_and_writes_the_report() -> None:
    done = subprocess.run(
        ["make", "--no-print-directory", "demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "skipping" not in done.stdout, "a framework's driver is unusable:\n" + out[-4000:]
    verdict = re.search(r"^IDENTICAL across (\d+) frameworks", done.stdout, re.MULTILINE)
    assert verdict is not None, out[-4000:]
    assert int(verdict[1]) >= 6, verdict[0]
    report = re.search(r"^report: (\S+report\.html)$", done.stdout, re.MULTILINE)
    assert report is not None, out[-4000:]
    html = Path(report[1]).read_text()  # the CLI prints the resolved path
    assert "tictactoe" in html and "othello" in html
