"""The recipe's reading of Connect Four, Othello and Wordle runs against their targets
(``rollouts.training.recipe.targets``): each target met or missed by the run's own
figures, the legal-move rate before RL, and whether RL's gain clears the intervals."""

from __future__ import annotations

from typing import Any

from rollouts.training.recipe.report import verdict
from rollouts.training.recipe.targets import GAME_TARGETS, game_verdict


def summary(win: float, ci: tuple[float, float], legal: float = 1.0) -> dict[str, Any]:
    """One held-out set's summary, as the recipe's evaluation writes it (100 replies)."""
    return {
        "games": 100,
        "win_rate": win,
        "win_ci": list(ci),
        "replies": 100,
        "legal_move_rate": legal,
    }


def ladder(random: float, depth1: float, legal: float, depth1_ci: tuple[float, float]) -> dict:
    """A Connect Four ladder's per-rung summaries."""
    return {
        "random": summary(random, (random - 0.05, min(random + 0.05, 1.0)), legal),
        "minimax:1": summary(depth1, depth1_ci, legal),
        "minimax:2": summary(0.55, (0.45, 0.65), legal),
        "minimax:3": summary(0.1, (0.05, 0.2), legal),
        "minimax:4": summary(0.0, (0.0, 0.04), legal),
    }


def run(game: str, stages: dict[str, Any], minutes: float = 30) -> dict[str, Any]:
    return {
        "settings": {"game": game},
        "stages": stages,
        "timing": {"total_wall_seconds": 60 * minutes},
    }


def test_a_connect_four_run_is_read_against_each_target() -> None:
    results = run(
        "connect_four",
        {
            "sft": {"label": "SFT", "greedy": ladder(0.90, 0.10, 0.99, (0.05, 0.18))},
            "rl1": {"label": "RL1 (0.5-1)", "greedy": ladder(0.99, 0.30, 1.0, (0.22, 0.40))},
        },
    )
    text = "\n".join(verdict(results))
    assert "- SFT: 99.0% legal moves before RL (at least 99.5%: **missed**)." in text
    assert "99.0% wins against random (at least 98%: met)" in text
    assert "55.0% wins against minimax:2 (more than 50%: met)" in text
    assert "figures with no target: 10.0% against minimax:3, 0.0% against minimax:4" in text
    # minimax:1 is the first rung SFT wins under half of; RL's interval clears SFT's.
    assert "(minimax:1): 10.0% [5.0, 18.0] after SFT, 30.0% [22.0, 40.0]" in text
    assert "raised, the 95% intervals apart" in text
    assert "30.0 minutes wall (at most 60: met)" in text


def test_a_gain_inside_the_intervals_is_not_called_a_gain() -> None:
    stages = {
        "sft": {"label": "SFT", "greedy": ladder(0.9, 0.10, 1.0, (0.05, 0.18))},
        "rl1": {"label": "RL1", "greedy": ladder(0.9, 0.14, 1.0, (0.08, 0.22))},
    }
    text = "\n".join(game_verdict(run("connect_four", stages, minutes=75)))
    assert "**not shown** to rise: the 95% intervals overlap" in text
    assert "75.0 minutes wall (at most 60: **missed**)" in text
    stages["rl1"]["greedy"] = ladder(0.9, 0.05, 1.0, (0.02, 0.11))
    assert "**not raised**" in "\n".join(game_verdict(run("connect_four", stages)))


def test_othello_pools_the_legal_moves_over_every_rung() -> None:
    rungs = ladder(0.96, 0.6, 1.0, (0.5, 0.7))
    rungs["minimax:1"]["legal_move_rate"] = 0.9  # 90 of the 500 replies' 10 illegal: 0.98
    rungs["minimax:3+random:0-0.25"] = summary(0.2, (0.1, 0.3))
    stages = {"sft": {"label": "SFT", "greedy": rungs}}
    lines = game_verdict(run("othello", stages))
    assert "- after SFT: 98.3% legal moves (at least 99.5%: **missed**)." in lines
    assert "- after SFT: 96.0% wins against random (at least 95%: met)." in lines
    assert "- after SFT: 60.0% wins against minimax:1 (more than 50%: met)." in lines
    assert "- figures with no target: 20.0% against minimax:3+random:0-0.25." in lines
    assert "- no RL stage ran." in lines


def test_a_rung_left_off_the_ladder_is_a_target_missed_and_no_figure() -> None:
    rungs = {k: v for k, v in ladder(0.96, 0.6, 1.0, (0.5, 0.7)).items() if k != "minimax:2"}
    lines = game_verdict(run("connect_four", {"sft": {"label": "SFT", "greedy": rungs}}))
    assert "- wins against minimax:2: not played (`--ladder-rungs`): **missed**." in lines
    othello = {"sft": {"label": "SFT", "greedy": ladder(0.96, 0.6, 1.0, (0.5, 0.7))}}
    assert not any(
        "figures with no target" in line for line in game_verdict(run("othello", othello))
    )


def test_wordle_reads_the_solved_rate_and_its_rl_gain() -> None:
    def solve(win: float, ci: tuple[float, float], legal: float) -> dict[str, Any]:
        return {"solve": {**summary(win, ci, legal), "mean_guesses": 4.1}}

    stages = {
        "sft": {"label": "SFT", "greedy": solve(0.07, (0.05, 0.10), 0.45)},
        "rl1": {"label": "RL1", "greedy": solve(0.61, (0.56, 0.66), 0.99)},
    }
    lines = game_verdict(run("wordle", stages))
    assert "- after RL1: 61.0% solved within six guesses (at least 60%: met)." in lines
    assert "- after RL1: 99.0% legal guesses (at least 99%: met)." in lines
    assert "- figures with no target: 4.1 mean guesses of solved games." in lines
    assert any(line.startswith("- RL on the solved rate: 7.0%") for line in lines)


def test_a_legal_rate_under_constrained_decoding_is_the_constraints() -> None:
    """``--constrained-decoding`` makes every reply legal: the reading says whose rate it is
    (the issue allows the option, labelled as such); the other targets read as before."""

    def solve(win: float, ci: tuple[float, float]) -> dict[str, Any]:
        return {"solve": {**summary(win, ci, 1.0), "mean_guesses": 4.1}}

    stages = {
        "sft": {"label": "SFT", "greedy": solve(0.30, (0.25, 0.35))},
        "rl1": {"label": "RL1", "greedy": solve(0.40, (0.36, 0.45))},
    }
    results = run("wordle", stages)
    results["settings"]["constrained_decoding"] = True
    lines = game_verdict(results)
    assert lines[0].startswith("**Read against the targets** (greedy, constrained to legal")
    assert (
        "- SFT: 100.0% legal moves before RL "
        "(at least 99.5%: met only by constrained decoding, an option)."
    ) in lines
    assert (
        "- after RL1: 100.0% legal guesses (at least 99%: met only by constrained decoding, "
        "an option)."
    ) in lines
    assert "- after RL1: 40.0% solved within six guesses (at least 60%: **missed**)." in lines
    assert "raised, the 95% intervals apart" in lines[-3]


def test_other_games_have_no_such_verdict() -> None:
    assert set(GAME_TARGETS) == {"connect_four", "othello", "wordle"}
    assert game_verdict(run("nim", {"sft": {"label": "SFT", "greedy": {}}})) == []
