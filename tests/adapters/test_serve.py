"""adapters/_serve.py, what the server launchers share: the same flags on every server,
a bad value answered with usage and exit status 2 (no traceback), each default shown
by ``--help``; ``launch`` (the lifeline, then uvicorn's settings) is where a launcher
stops being argument parsing."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

LAUNCHERS = ("adapters.nemo_gym.__main__", "adapters.openenv.__main__", "adapters.ors.__main__")


class Launched(Exception):
    """Raised by the recording ``launch``: the launcher stops before uvicorn."""


def launcher(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[Any]]:
    """The launcher module with ``launch`` recorded, and stopping there."""
    module = importlib.import_module(name)
    served: list[Any] = []

    def launch(args: Any, **options: Any) -> None:
        served.append(args)
        raise Launched

    monkeypatch.setattr(module, "launch", launch)
    return module, served


@pytest.mark.parametrize("name", LAUNCHERS)
@pytest.mark.parametrize(
    "argv",
    [
        ["--port", "http"],
        ["--port", "70000"],
        ["--port", "1", "--max-sessions", "0"],
        ["--port", "1", "--max-body-bytes", "-5"],
        ["--port", "1", "--session-timeout", "soon"],
        ["--port", "1", "--max-sesions", "3"],
    ],
)
def test_a_bad_flag_is_usage_and_exit_2(
    name: str, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module, served = launcher(name, monkeypatch)
    with pytest.raises(SystemExit) as info:
        module.main(argv)
    assert info.value.code == 2 and not served
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m adapters.") and "Traceback" not in err
    assert [line for line in err.splitlines() if "error:" in line] == [err.splitlines()[-1]]


@pytest.mark.parametrize("name", LAUNCHERS)
def test_every_server_takes_the_same_flags(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module, served = launcher(name, monkeypatch)
    flags = ["--host", "127.0.0.1", "--port", "0", "--max-sessions", "3"]
    with pytest.raises(Launched):
        module.main([*flags, "--session-timeout", "5", "--max-body-bytes", "1000"])
    (args,) = served
    assert (args.host, args.port, args.max_sessions) == ("127.0.0.1", 0, 3)
    assert (args.session_timeout, args.max_body_bytes) == (5.0, 1000)
    with pytest.raises(SystemExit) as info:
        module.main(["--help"])
    assert info.value.code == 0
    assert "(default: 127.0.0.1)" in capsys.readouterr().out  # each default is shown


def test_nemo_gyms_ttl_is_the_same_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    module, served = launcher("adapters.nemo_gym.__main__", monkeypatch)
    with pytest.raises(Launched):
        module.main(["--port", "0", "--session-ttl", "7"])
    assert served[0].session_timeout == 7.0


@pytest.mark.parametrize("games", ["chess,tictactoe", ","])
def test_ors_games_are_checked_by_core(
    games: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--games`` goes through ``core.splits.split_games``, before the lifeline and
    openreward: an unknown game, or none, is one usage line and exit 2."""
    module, served = launcher("adapters.ors.__main__", monkeypatch)
    with pytest.raises(SystemExit) as info:
        module.main(["--port", "1", "--games", games])
    assert info.value.code == 2 and not served
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("python -m adapters.ors: error: --games: games must be some of")
