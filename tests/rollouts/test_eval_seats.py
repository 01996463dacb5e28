"""``gamebridge eval --seats``: the endpoint in every outside seat (self-play), one
conversation per seat, through the core driver."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.episode import Episode
from rollouts import cli
from rollouts.evaluation.export import read_records

pytestmark = pytest.mark.server


def test_eval_plays_kuhn_poker_with_the_policy_in_both_seats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspiel")
    out = tmp_path / "kuhn.jsonl"
    argv = ["eval", "--game", "openspiel:kuhn_poker", "--seats", "outside,outside"]
    assert cli.main([*argv, "-n", "4", "--policy", "random", "--out", str(out)]) == 0
    records = read_records(out)
    assert len(records) == 4
    for record in records:
        trajectory = record.trajectory
        assert trajectory["seats"]["outside"] == [0, 1]
        assert {e["seat"] for e in trajectory["events"]} == {0, 1}
        assert set(trajectory["seats"]["results"].values()) in ({"win", "loss"}, {"draw"})
        # The run replays offline: the same replies give the same trajectory.
        assert Episode.from_trajectory(trajectory).to_dict() == trajectory
        # Each seat answered its own conversation: seat 1's first observation is its own.
        first_of_1 = next(e for e in trajectory["events"] if e["seat"] == 1)
        assert first_of_1["observation"].startswith("Opponent played:")
    assert "win rate" in capsys.readouterr().out


def test_seats_with_a_one_seat_driver_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rollouts.drivers.gem import GemDriver

    monkeypatch.setattr(GemDriver, "seats", None)  # as a driver that plays one outside seat
    argv = ["eval", "--framework", "gem", "--game", "tictactoe", "--seats", "outside,outside"]
    assert cli.main([*argv, "-n", "1"]) == 2
    assert "plays one outside seat" in capsys.readouterr().err


def test_eval_plays_both_seats_through_a_framework(capsys: pytest.CaptureFixture[str]) -> None:
    """GEM's multi-agent env: the endpoint in both seats of Phantom Tic-Tac-Toe."""
    pytest.importorskip("gem")
    argv = ["eval", "--framework", "gem", "--game", "openspiel:phantom_ttt"]
    assert cli.main([*argv, "--seats", "outside,outside", "-n", "2", "--policy", "random"]) == 0
    assert "win rate" in capsys.readouterr().out


def test_compare_with_seats_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["compare", "--frameworks", "core,gem", "--game", "tictactoe"]
    assert cli.main([*argv, "--seats", "outside,outside", "-n", "1"]) == 2
    assert "do not compare move for move" in capsys.readouterr().err


def test_one_conversation_of_a_hidden_information_game_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """SkyRL Gym keeps one conversation per trajectory: both seats of Kuhn Poker in it
    would show each the other's card, so eval refuses before any task runs."""
    argv = ["eval", "--framework", "skyrl_gym", "--game", "openspiel:kuhn_poker"]
    assert cli.main([*argv, "--seats", "outside,outside", "-n", "1"]) == 2
    err = capsys.readouterr().err
    assert "one conversation" in err and "gem" in err and "skyrl_gym," not in err
