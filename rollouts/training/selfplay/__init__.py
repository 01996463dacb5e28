"""``gamebridge train selfplay``: self-play GRPO against fixed-opponent GRPO, equal compute.

The opponent seat is the model itself (``opponent="self"``: the trained policy samples
both seats and both seats' turns become training rows) or a frozen snapshot of it,
refreshed every ``refresh_every`` updates (``opponent="snapshot"``: only the learner's
seat is trained). The turn loop is core's two-seat episode (``Task.seats``
``"outside,outside"``, ``Episode.to_move``, ``observation_for``, ``reward_for``): core
judges every reply and scores each seat; this module only generates the replies.

**Per-role baselines** (SPIRAL's role-conditioned advantages): TRL normalises rewards
over each block of ``num_generations`` consecutive rows (mean and standard deviation).
:class:`SelfPlayRollout` lays the rows out so that every such block holds one seat's
decisions of one task's games (a *pair* of blocks per task: seat 0's, then seat 1's), so
TRL's group normalisation is a normalisation per (group, seat): the first player's
advantage never absorbs the second player's edge.

The command trains copies of one starting checkpoint three ways at equal compute (the
same updates and training rows per update; games and model turns counted and tabled),
evaluates each exactly and writes the table into docs/trl.md between the
``recipe-table: selfplay`` markers:

* **Tic-Tac-Toe** from the weak recipe's SFT student (``gamebridge train recipe
  --teacher weak`` saves ``runs/recipe-tictactoe-weak/sft-model``), the fixed-opponent arm
  being the weak recipe's RL settings (minimax:9 with 0-0.25 random moves, 4 decisions a
  game); evaluated by the recipe's ``exact_evaluation`` (every opponent choice enumerated,
  both sides, greedy).
* **Kuhn Poker** (``openspiel:kuhn_poker``) from a short SFT on the uniform random policy
  (:func:`kuhn_student`), the fixed opponent the random bot; evaluated by the
  exploitability of the policy the model's move probabilities define at Kuhn's 12
  information states (:func:`kuhn_information_states`, :func:`model_kuhn_policy`),
  through OpenSpiel's own ``exploitability`` on a ``TabularPolicy``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from rollouts.training.selfplay.arms import (
    ARM_NAMES,
    ARMS,
    GameSetup,
    arm_rollout,
    evaluate,
    kuhn_setup,
    markdown,
    slug,
    table_row,
    tictactoe_setup,
    train_arm,
)
from rollouts.training.selfplay.kuhn import (
    KUHN,
    KUHN_WEIGHTS,
    InfoState,
    kuhn_figures,
    kuhn_information_states,
    kuhn_start_policy,
    kuhn_student,
    model_kuhn_policy,
    policy_table,
)
from rollouts.training.selfplay.rollout import (
    OPPONENTS,
    SELF_SEATS,
    SelfPlayed,
    SelfPlayRollout,
    group_advantages,
)


def run(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    from rollouts.training.recipe import write_docs
    from rollouts.training.tiny import load_tokenizer

    torch.set_num_threads(args.threads)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    bad = [g for g in games if g not in ("tictactoe", KUHN)] + [a for a in arms if a not in ARMS]
    if bad:
        print(f"gamebridge train selfplay: unknown {bad}", file=sys.stderr)
        return 2
    argv = sys.argv[3:] if sys.argv[1:3] == ["train", "selfplay"] else []
    command = " ".join(["gamebridge train selfplay", *argv])
    results: dict[str, Any] = {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "refresh_every": args.refresh_every,
        "games": {},
    }
    for game in games:
        if game == KUHN:
            setup, updates = kuhn_setup(), args.kuhn_updates
            source = kuhn_student(out / "kuhn-student", steps=args.kuhn_sft_steps, seed=args.seed)
        else:
            setup, updates = tictactoe_setup(), args.updates
            source = Path(args.model or "runs/recipe-tictactoe-weak/sft-model")
            if not (source / "config.json").is_file():
                print(
                    f"gamebridge train selfplay: no SFT student in {source} (run make "
                    "train-recipe TEACHER=weak first, or give --model)",
                    file=sys.stderr,
                )
                return 2
        tokenizer = load_tokenizer(str(source))
        entry: dict[str, Any] = {
            "start": str(source),
            "updates": updates,
            "lr": setup.learning_rate,
            "decisions": setup.decisions,
            "arms": {},
        }
        results["games"][game] = entry
        start = AutoModelForCausalLM.from_pretrained(str(source))
        entry["arms"]["start"] = {"eval": evaluate(game, start, tokenizer)}
        print(table_row(game, ARM_NAMES["start"], entry["arms"]["start"], updates), flush=True)
        for arm in arms:
            model = AutoModelForCausalLM.from_pretrained(str(source))
            t0 = time.perf_counter()
            model, played = train_arm(
                arm, setup, model, tokenizer, updates, args.refresh_every, args.seed
            )
            seconds = time.perf_counter() - t0
            entry["arms"][arm] = {
                "eval": evaluate(game, model, tokenizer),
                "played": played,
                "seconds": round(seconds, 1),
            }
            print(table_row(game, ARM_NAMES[arm], entry["arms"][arm], updates), flush=True)
            text = markdown(results, game)
            (out / f"{slug(game)}.md").write_text(text)
            (out / f"{slug(game)}.json").write_text(json.dumps(entry, indent=2))
            if args.docs:
                write_docs(args.docs, f"selfplay-{slug(game)}", text)
        print(markdown(results, game), flush=True)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--games", default=f"{KUHN},tictactoe", help="openspiel:kuhn_poker and/or tictactoe"
    )
    p.add_argument("--arms", default=",".join(ARMS), help="fixed, self, snapshot")
    p.add_argument(
        "--model",
        default="",
        help="Tic-Tac-Toe's start (default: the weak recipe's runs/recipe-tictactoe-weak/sft-model)",
    )
    p.add_argument("--updates", type=int, default=30, help="Tic-Tac-Toe updates per arm")
    p.add_argument("--kuhn-updates", type=int, default=80, help="Kuhn Poker updates per arm")
    p.add_argument("--kuhn-sft-steps", type=int, default=400, help="the Kuhn student's SFT steps")
    p.add_argument(
        "--refresh-every", type=int, default=5, help="updates between snapshot refreshes"
    )
    p.add_argument("--seed", type=int, default=0, help="GRPO and SFT seed")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--output-dir", default="runs/selfplay", help="where the table goes")
    p.add_argument("--docs", default="", help="also write the table into this file's markers")


__all__ = [
    "ARMS",
    "ARM_NAMES",
    "KUHN",
    "KUHN_WEIGHTS",
    "OPPONENTS",
    "SELF_SEATS",
    "GameSetup",
    "InfoState",
    "SelfPlayRollout",
    "SelfPlayed",
    "add_arguments",
    "arm_rollout",
    "evaluate",
    "group_advantages",
    "kuhn_figures",
    "kuhn_information_states",
    "kuhn_setup",
    "kuhn_start_policy",
    "kuhn_student",
    "markdown",
    "model_kuhn_policy",
    "policy_table",
    "run",
    "slug",
    "table_row",
    "tictactoe_setup",
    "train_arm",
]
