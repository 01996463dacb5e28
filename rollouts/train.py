"""``gamebridge train``: GRPO, SFT and the tiny CPU demo, with TRL.

Subcommands (heavy imports happen only when one runs):

* ``grpo``: GRPO on a game (``rollouts.train_grpo``; both TRL hooks).
* ``sft``: supervised warm-up on a ``gamebridge export`` folder (``rollouts.train_sft``).
* ``tiny``: build a tiny local model, warm it up, GRPO it, print before/after
  figures (``rollouts.tiny``; ``make train-tiny``).
"""

from __future__ import annotations

import argparse


def add_parser(parser: argparse.ArgumentParser) -> None:
    """Train with TRL: grpo, sft, tiny (see docs/trl.md)."""
    from rollouts import tiny, train_grpo, train_sft

    sub = parser.add_subparsers(dest="train_command", required=True, metavar="KIND")
    for name, module, text in (
        ("grpo", train_grpo, "GRPO on a game with TRL (env_factory or rollout_func)"),
        ("sft", train_sft, "supervised warm-up on an exported wins/draws dataset"),
        ("tiny", tiny, "tiny local model: SFT then GRPO on CPU, before/after figures"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
