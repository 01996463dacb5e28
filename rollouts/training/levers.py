"""``gamebridge train levers``: which RL settings matter, each from the same SFT student.

The weak-teacher recipe (``gamebridge train recipe --teacher weak``) saves its SFT
student (``runs/recipe-tictactoe-weak/sft-model``). This command trains copies of it with
GRPO under named variants of the recipe's RL settings, one lever changed at a time, at
equal compute (the same number of games played, counted as games per update x updates),
and evaluates each exactly (every opponent choice enumerated, both sides, greedy: the
recipe's ``exact_evaluation``). It writes a Markdown table (``levers.md`` in the output
folder and, with ``--docs``, between the ``recipe-levers`` markers of docs/trl.md) as each
variant finishes, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rollouts.training.recipe import (
    RecipeSettings,
    parse_stages,
    resolve,
    stage_learning_rates,
)


@dataclass(frozen=True)
class Variant:
    """One row: the recipe's RL settings with some changed."""

    name: str
    changes: dict[str, Any]


def variants(s: RecipeSettings) -> list[Variant]:
    """The recipe's own RL settings, then one lever changed at a time (equal compute:
    a variant with fewer games per update gets more updates)."""
    steps = s.rl_steps
    stages = len(parse_stages(s.rl_stages))
    rates = stage_learning_rates(s)
    return [
        Variant("the recipe's settings", {}),
        Variant(
            f"one stage against 0-0.25 at lr {rates[0]:g} ({stages}x the updates)",
            {
                "rl_stages": "0-0.25",
                "rl_stage_learning_rates": "",
                "rl_steps": stages * steps,
                "rl_learning_rate": rates[0],
            },
        ),
        Variant(
            "a group is 8 replies at one position, played on greedily (not 8 games)",
            {"rl_group": "position"},
        ),
        Variant(
            "64 games an update (4x the updates)",
            {"num_groups": max(1, s.num_groups // 4), "rl_steps": 4 * steps},
        ),
        Variant(
            "the seed's two stages (0.2-0.7, then 0-0.25; the updates split evenly)",
            {
                "rl_stages": "0.2-0.7,0-0.25",
                "rl_stage_learning_rates": "",
                "rl_steps": max(1, stages * steps // 2),
                "rl_learning_rate": rates[0],
            },
        ),
        Variant(
            "learning rate x3",
            {
                "rl_learning_rate": 3 * s.rl_learning_rate,
                "rl_stage_learning_rates": ",".join(f"{3 * r:g}" for r in rates),
            },
        ),
        Variant("temperature 1.5", {"temperature": 1.5}),
        Variant(
            "epsilon-greedy exploration 0.1 (a drawn legal move in place of a sampled reply)",
            {"explore_epsilon": 0.1},
        ),
        Variant("loss grpo (not cispo)", {"loss_type": "grpo"}),
        Variant("1 decision of each game (not 4)", {"rl_decisions_per_game": 1}),
    ]


def row(name: str, s: RecipeSettings, exact: dict[str, Any], seconds: float) -> str:
    r, o = exact["random"], exact["optimal"]
    return (
        f"| {name} | {s.num_groups * s.num_generations} x {s.rl_steps} per stage "
        f"| {100 * r['win_rate']:.2f}% | {100 * o['non_loss_rate']:.2f}% | {seconds:.0f} s |"
    )


HEAD = [
    "| RL variant (from the same SFT student) | games per update x updates | "
    "vs random win (exact) | vs optimal non-loss (exact) | wall |",
    "|---|---|---|---|---|",
]


def run(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    from rollouts.training import recipe as R
    from rollouts.training.tiny import load_tokenizer

    # no learning curve: the table shows each variant at its end only
    base = replace(resolve(RecipeSettings(game="tictactoe", teacher="weak", docs="")), eval_every=0)
    if args.updates:
        base = replace(base, rl_steps=args.updates)
    source = Path(args.model or Path(base.output_dir) / "sft-model")
    if not (source / "config.json").is_file():
        print(
            f"gamebridge train levers: no SFT student in {source} "
            "(run make train-recipe TEACHER=weak first, or give --model)",
            file=sys.stderr,
        )
        return 2
    torch.set_num_threads(base.threads)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = load_tokenizer(str(source))
    start = AutoModelForCausalLM.from_pretrained(str(source))
    lines = [*HEAD]
    exact = R.exact_evaluation(base, R.model_replies_to(start, tokenizer, 8))
    lines.append(row("(the SFT student, no RL)", replace(base, rl_steps=0), exact, 0.0))
    chosen = variants(base)
    if args.only:
        chosen = [v for i, v in enumerate(chosen) if str(i) in args.only.split(",")]
    results = []
    for v in chosen:
        s = replace(base, **v.changes, output_dir=str(out / "runs"), sampled=False)
        model = AutoModelForCausalLM.from_pretrained(str(source))
        t0 = time.perf_counter()
        clock = R.Clock()
        res: dict[str, Any] = {"stages": {}, "logs": {}}
        model = R.run_rl_stages(s, model, tokenizer, res, {}, clock, False, evaluate=False)
        seconds = time.perf_counter() - t0
        exact = R.exact_evaluation(s, R.model_replies_to(model, tokenizer, 8))
        results.append(
            {"variant": v.name, "changes": v.changes, "exact": exact, "seconds": seconds}
        )
        lines.append(row(v.name, s, exact, seconds))
        text = "\n".join(lines) + "\n"
        (out / "levers.md").write_text(text)
        (out / "levers.json").write_text(json.dumps(results, indent=2))
        print(lines[-1], flush=True)
        if args.docs:
            R.write_docs(args.docs, "levers", _intro(base, source, args.updates) + text)
    return 0


def _intro(s: RecipeSettings, source: Path, updates: int = 0) -> str:
    command = "gamebridge train levers" + (f" --updates {updates}" if updates else "")
    return (
        f"`{command}` (written by the command, {time.strftime('%Y-%m-%d')}): "
        f"copies of the SFT student in `{source}` trained by GRPO with the "
        f"recipe's RL settings ({s.num_groups * s.num_generations} games an update, stages "
        f"{s.rl_stages}, {s.rl_steps} updates each, group `{s.rl_group}`, loss "
        f"`{s.loss_type}`, lr {','.join(f'{r:g}' for r in stage_learning_rates(s))}, "
        f"temperature {s.temperature:g}) and "
        "with one lever changed; greedy, exact.\n\n"
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="", help="the SFT student (default: the weak recipe's)")
    p.add_argument("--output-dir", default="runs/levers", help="where the table goes")
    p.add_argument("--updates", type=int, default=0, help="updates per stage (0: the recipe's)")
    p.add_argument("--only", default="", help="comma-separated variant numbers (0: the recipe's)")
    p.add_argument("--docs", default="", help="also write the table into this file's markers")


__all__ = ["Variant", "add_arguments", "run", "variants"]
