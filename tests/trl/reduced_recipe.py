"""What the reduced recipe runs of Connect Four, Wordle and Othello share (one test file
each, ``test_reduced_*.py``, so ``make test``'s two workers take them side by side): SFT
and RL each move the figures (Othello's RL under constrained decoding, the one figure its
reward pays for at this size being the games won).

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

from rollouts.training.recipe.ladder import pooled_rate


def legal_rate(per_set: dict[str, Any]) -> float:
    """The legal-move rate over every held-out set's replies together."""
    return pooled_rate(per_set, "legal_move_rate")


def format_rate(per_set: dict[str, Any]) -> float:
    """The well-formed-reply rate over every held-out set's replies together."""
    return pooled_rate(per_set, "format_rate")


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
