"""Reduced recipe runs of Connect Four, Wordle and Othello: SFT and RL each move the
figures (Othello's RL under constrained decoding, the one figure its reward pays for at
this size being the games won).

Each test runs ``run_recipe`` whole (teacher games, SFT, a GRPO stage, the held-out
evaluation after every stage) at one to two minutes of CPU with one torch thread, and
checks the direction of each stage: SFT takes the untrained model (no legal or no
well-formed move) to one that plays, and RL takes the SFT student further on the figure
its reward pays for.

What the reduced runs share, and why (measured here, 2026-12-06, on the shared 2-core
machine):

- The 64-wide, 2-layer model and 100 SFT steps: a student that plays, far from fitting.
- RL samples at temperature 0.5, and the sampled evaluation plays at that temperature
  too (``eval_temperature``): at temperature 1 this student's sampled replies are almost
  never legal (Connect Four: 1-4% of replies), every GRPO game forfeits at once, the
  rewards of a group barely differ, and RL drifted (Connect Four's greedy legal moves
  0.68 -> 0.00 in one of two seeds at lr 3e-4, 20 updates).
- Othello's student (0-9% legal replies sampled) forfeits every unconstrained GRPO game,
  and core scores a forfeit alike whatever came before it: its RL plays constrained, so
  its games run to the end and their outcomes differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pooled(per_set: dict[str, Any], rate: str) -> float:
    """``rate`` (a share of replies) over every held-out set's replies together (the
    ladder's rungs, or Wordle's one set)."""
    replies = sum(e["replies"] for e in per_set.values())
    count = sum(round(e[rate] * e["replies"]) for e in per_set.values())
    return count / max(replies, 1)


def legal_rate(per_set: dict[str, Any]) -> float:
    """The legal-move rate over every held-out set's replies together."""
    return pooled(per_set, "legal_move_rate")


def format_rate(per_set: dict[str, Any]) -> float:
    """The well-formed-reply rate over every held-out set's replies together."""
    return pooled(per_set, "format_rate")


def reduced_run(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    """``run_recipe`` with the reduced runs' common settings and ``settings``."""
    from rollouts.training.recipe import RecipeSettings, run_recipe

    common: dict[str, Any] = {
        "sft_steps": 100,
        "hidden_size": 64,
        "num_layers": 2,
        "num_groups": 8,
        "num_generations": 4,
        "temperature": 0.5,
        "eval_temperature": 0.5,
        "threads": 1,
        "output_dir": str(tmp_path / "run"),
        "docs": "",
    }
    return run_recipe(RecipeSettings(**{**common, **settings}))


@pytest.mark.timeout(1200)  # about 80 CPU-s; far more on a loaded shared machine
def test_reduced_connect_four_sft_plays_and_rl_raises_the_legal_move_rate(tmp_path: Path) -> None:
    """Connect Four: SFT takes the untrained model from no legal move to one that wins
    against random, and 30 GRPO updates of 8x4 games (against 0.5-1 random moves, the
    plan's stage, at lr 1e-4) raise the legal-move rate of sampled play (temperature 0.5,
    the rate RL samples at) over every rung of the ladder (20 games a rung).

    Measured here (seeds 0 / 1 / 2, 67-82 CPU-s each): greedy legal moves base 0 -> SFT
    0.674 / 0.683 / 0.698, wins against random 0 -> 0.70 / 0.70 / 0.75; sampled legal
    moves SFT 0.515 / 0.511 / 0.569 -> RL 0.854 / 0.894 / 0.839 (+0.27 at the least).
    Greedy, RL raised the legal moves less and not in every variant (0.770 / 0.800 / 0.759
    here; unchanged in one of two seeds at 40 updates) and lowered the wins against random
    (0.45 / 0.50 / 0.60 of 20 games), so the test holds RL to the sampled figure."""
    results = reduced_run(
        tmp_path,
        game="connect_four",
        teacher="weak",
        teacher_games=200,
        rl_stages="0.5-1",
        rl_steps=30,
        rl_learning_rate=1e-4,
        ladder_games=20,
    )
    stages = results["stages"]
    base, sft, rl = stages["base"], stages["sft"], stages["rl1"]
    assert legal_rate(base["greedy"]) < 0.05
    assert legal_rate(sft["greedy"]) > legal_rate(base["greedy"]) + 0.45, legal_rate(sft["greedy"])
    wins = base["greedy"]["random"]["win_rate"], sft["greedy"]["random"]["win_rate"]
    assert wins[1] >= wins[0] + 0.4, wins
    before, after = legal_rate(sft["sampled"]), legal_rate(rl["sampled"])
    assert after >= before + 0.15, (before, after)


@pytest.mark.timeout(1200)  # about 60 CPU-s; far more on a loaded shared machine
def test_reduced_wordle_sft_guesses_words_and_rl_raises_the_legal_guess_rate(
    tmp_path: Path,
) -> None:
    """Wordle: SFT (on the replies only, ``sft_loss`` assistant) takes the untrained model
    from no well-formed guess to legal words about half the time, and 20 GRPO updates of
    8x4 games (five invalid guesses allowed a game, each penalized) raise the legal-guess
    rate, greedy and sampled (temperature 0.5), on 60 held-out answers.

    Measured here (seeds 0 / 1 / 2, 57-68 CPU-s each): greedy legal guesses base 0 -> SFT
    0.504 / 0.514 / 0.386 -> RL 1.0 / 1.0 / 1.0; sampled SFT 0.471 / 0.416 / 0.326 -> RL
    0.957 / 0.981 / 0.938 (+0.49 at the least). Nothing is solved at this size (0 of 60 at
    every stage), so the solved rate is not asserted. With the sequence loss SFT's greedy
    guesses were all legal already (solving none) and its sampled ones legal 0.5% of the
    time, and RL (temperature 1, the first invalid guess forfeiting) took the greedy ones to
    none legal. Invalid guesses are allowed in RL (``rl_max_invalid_moves``), each costing
    core's invalid-move penalty, so a legal guess pays at once: with the first invalid
    guess forfeiting, a forfeit at the first guess and one at the fifth scored the same and
    RL lowered the legal guesses (greedy 0.51 -> 0.48, 30 updates)."""
    results = reduced_run(
        tmp_path,
        game="wordle",
        teacher_games=300,
        sft_loss="assistant",
        rl_steps=20,
        rl_max_invalid_moves=5,
        rl_learning_rate=1e-4,
        eval_games=60,
    )
    stages = results["stages"]
    base, sft, rl = stages["base"], stages["sft"], stages["rl1"]
    assert legal_rate(base["greedy"]) < 0.05 and base["greedy"]["solve"]["format_rate"] < 0.05
    assert sft["greedy"]["solve"]["format_rate"] > 0.9, sft["greedy"]["solve"]
    assert legal_rate(sft["greedy"]) > 0.25, legal_rate(sft["greedy"])
    for decoding in ("greedy", "sampled"):
        before, after = legal_rate(sft[decoding]), legal_rate(rl[decoding])
        assert after >= before + 0.25, (decoding, before, after)


def wins(per_set: dict[str, Any]) -> int:
    """Games won over every held-out set together (the ladder's rungs)."""
    return sum(e["wins"] for e in per_set.values())


def unconstrained_formats(tmp_path: Path, results: dict[str, Any]) -> dict[str, float]:
    """The well-formed-reply rate, decoding unconstrained, of the untrained model (the
    run's own, rebuilt from its seed), greedy, and of the saved SFT student, greedy and
    sampled (temperature 0.5), on the first 20 of the run's held-out games against random."""
    from transformers import AutoModelForCausalLM

    from rollouts.training.recipe import RecipeSettings, eval_sets, evaluate_model, model_config
    from rollouts.training.tiny import build_model, load_tokenizer

    s = RecipeSettings(**results["settings"])
    sets = {"random": eval_sets(s)["random"][:20]}
    source = str(tmp_path / "run" / "sft-model")
    student, tokenizer = AutoModelForCausalLM.from_pretrained(source), load_tokenizer(source)
    untrained = build_model(tokenizer, seed=s.seed, **model_config(s))

    def rate(model: Any, temperature: float) -> float:
        per = evaluate_model(
            model, tokenizer, sets, max_new_tokens=10, temperature=temperature, seed=s.seed
        )
        return format_rate(per)

    return {
        "base": rate(untrained, 0.0),
        "sft greedy": rate(student, 0.0),
        "sft sampled": rate(student, 0.5),
    }


@pytest.mark.timeout(1200)  # about 90 CPU-s; far more on a loaded shared machine
def test_reduced_othello_sft_learns_the_syntax_and_rl_raises_the_wins(tmp_path: Path) -> None:
    """Othello under constrained decoding (``constrained_decoding``: every reply one of the
    legal moves core lists, in the GRPO games and the held-out ones): the SFT student (on
    the replies only, ``sft_loss`` assistant; the weak teacher's 100 games) writes
    well-formed moves where the untrained model writes none (decoding unconstrained,
    greedy and sampled at temperature 0.5, 20 held-out games against random), and 10 GRPO
    updates of 8x4 games against random moves (the stage 1-1, reward the game's outcome,
    lr 3e-4) raise the games won greedily against random and depth-1 alpha-beta (40
    held-out games each, ``ladder_rungs``; the deeper rungs' searches cost minutes).

    Measured here (seeds 0 / 1 / 2, 2026-12-06): format rate base 0 -> SFT 1.0 / 1.0 /
    1.0, greedy and sampled; games won of 80 (random + depth 1, constrained, greedy) base
    15 / 23 / 44 -> SFT 33 / 36 / 31 -> RL 46 / 41 / 44 (+5 at the least), against random
    alone SFT 29 / 27 / 24 -> RL 33 / 33 / 33 (+4 at the least). ``run_recipe`` took 89-95
    CPU-s, the whole test under pytest 88-98 CPU-s (seed 0, at
    load 5 and 7). SFT is not held to
    the wins: the untrained model's constrained choices won 44 of seed 2's 80 games, more
    than its SFT student. Sampled (temperature 0.5), RL moved the wins against random
    either way (25 -> 22, 24 -> 30, 23 -> 20 of 40); at 30 held-out games a rung seed 1's
    greedy gain was +2 of 60; 20 updates against 0.5-1 at lr 1e-4 moved seed 0's greedy
    wins against random 29 -> 30 of 40 at twice the RL's CPU.

    Unconstrained, RL cannot pay for legal moves at this size: this student never names a
    legal square greedily and does 0-9% of the time sampled, so every GRPO game forfeits,
    and core scores a forfeited game alike however many legal moves came before it (with
    three invalid replies allowed: -1.2 after 0, 3 or 8 legal moves), so a group's rewards
    do not differ. The unconstrained variants tried moved the sampled legal rate either
    way (20 updates with three invalid replies allowed: 0.012 -> 0.077 and 0.048 -> 0.024;
    30 and 10 updates at lr 1e-4 and 3e-4: 0.059 -> 0.059 and 0.059 -> 0.024), and so did
    the constrained RL above (seed 0: 0.070 -> 0.064 against random). The full recipe's
    2,400 SFT steps of the 0.83M model reach 88-98% legal moves (``recipe.plan.PLANS``)."""
    results = reduced_run(
        tmp_path,
        game="othello",
        teacher="weak",
        teacher_games=100,
        sft_loss="assistant",
        constrained_decoding=True,
        rl_stages="1-1",
        rl_steps=10,
        rl_learning_rate=3e-4,
        ladder_rungs="random,minimax:1",
        ladder_games=40,
        sampled=False,
    )
    formats = unconstrained_formats(tmp_path, results)
    assert formats["base"] < 0.05, formats
    assert formats["sft greedy"] > 0.9 and formats["sft sampled"] > 0.9, formats
    stages = results["stages"]
    sft, rl = stages["sft"]["greedy"], stages["rl1"]["greedy"]
    assert wins(rl) >= wins(sft) + 4, (wins(sft), wins(rl))
    assert rl["random"]["wins"] >= sft["random"]["wins"] + 3, (sft["random"], rl["random"])
