"""The reduced recipe run of Wordle: SFT and RL each move the figures (the reduced runs'
shared settings and reasons: ``reduced_recipe``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reduced_recipe import legal_rate, reduced_run


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
