"""``gamebridge train``: GRPO, SFT and the tiny CPU demo, with TRL.

Subcommands (heavy imports happen only when one runs):

* ``grpo``: GRPO on a game (``rollouts.training.grpo``; both TRL hooks).
* ``sft``: supervised warm-up on a ``gamebridge export`` folder (``rollouts.training.sft``).
* ``recipe``: the seed's recipe end to end on CPU: teacher games, a tiny local
  model, SFT, two GRPO stages, evaluation after each (``rollouts.training.recipe``;
  ``make train-recipe``, ``--quick`` for a smoke run).
* ``levers``: which RL settings matter: the weak-teacher recipe's SFT student trained under
  one changed lever at a time, evaluated exactly (``rollouts.training.levers``;
  ``make train-levers``).
* ``selfplay``: self-play GRPO (the model in both seats, or against a snapshot of itself)
  against fixed-opponent GRPO at equal compute, on Tic-Tac-Toe and Kuhn Poker
  (``rollouts.training.selfplay``; ``make train-selfplay``).
"""

from __future__ import annotations

import argparse


def add_parser(parser: argparse.ArgumentParser) -> None:
    """Train with TRL: grpo, sft, recipe, levers, selfplay (see docs/trl.md)."""
    from rollouts.training import grpo as train_grpo
    from rollouts.training import levers, recipe, selfplay
    from rollouts.training import sft as train_sft

    sub = parser.add_subparsers(dest="train_command", required=True, metavar="KIND")
    for name, module, text in (
        ("grpo", train_grpo, "GRPO on a game with TRL (env_factory or rollout_func)"),
        ("sft", train_sft, "supervised warm-up on an exported wins/draws dataset"),
        ("recipe", recipe, "the seed's recipe on CPU: teacher, tiny model, SFT, GRPO, evaluation"),
        ("levers", levers, "which RL settings matter: one lever at a time from the SFT student"),
        ("selfplay", selfplay, "self-play against fixed-opponent GRPO at equal compute"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
