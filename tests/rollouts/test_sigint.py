"""Ctrl-C on a long-running command that serves (``serve-policy``, ``play``): exit 130
and one line saying so, no traceback (uvicorn re-raised the signal as a
``KeyboardInterrupt``: a 32-line traceback and exit -2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _as_a_terminal_starts_it() -> None:
    """In the child, before it runs: SIGINT delivered and at its default, as a terminal's
    shell leaves it. The test process may not: a library loaded by an earlier test in the
    same worker (Ray's driver) can leave SIGINT blocked or ignored, and a child inherits
    both, so its Ctrl-C would never arrive."""
    import signal

    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _answers_http(line: str) -> None:
    """The address the ready line names answers HTTP (any status): the line means it serves."""
    import contextlib
    import re
    import urllib.error
    import urllib.request

    match = re.search(r"http://[\d.]+:\d+", line)
    assert match, line
    with contextlib.suppress(urllib.error.HTTPError):  # a 404 is an answer
        urllib.request.urlopen(match[0] + "/", timeout=30).close()


@pytest.mark.parametrize(
    ("argv", "ready"),
    [
        (["serve-policy", "--port", "0"], "policy server ("),
        (["play", "--port", "0"], "gamebridge play: http://"),
    ],
    ids=["serve-policy", "play"],
)
def test_ctrl_c_exits_130_with_one_line(argv: list[str], ready: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollouts.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # its own group: the SIGINT a terminal sends to the group
        preexec_fn=_as_a_terminal_starts_it,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert ready in first, first
        _answers_http(first)  # the line comes once it serves (when it came first, a Ctrl-C
        os.killpg(proc.pid, signal.SIGINT)  # while asyncio built its loop left a traceback)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-2000:]
    ours = [line for line in err.splitlines() if line.startswith("gamebridge:")]
    assert ours == [f"gamebridge: {argv[0]}: stopped (interrupted)"], err[-2000:]
