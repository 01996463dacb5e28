"""``gamebridge train recipe``: the seed course's recipe end to end, on CPU.

1. **Teacher games**: ``core.teacher`` (minimax-optimal, ties broken toward
   the best chance against imperfect play) plays the model's side, both
   sides, against the minimax opponent with a random-move probability spread
   over 0-1 (stratified); games the teacher won or drew are kept (the seed's
   filter). Tic-Tac-Toe adds the teacher's games against an exhaustive
   opponent (every reply, both sides: :func:`exhaustive_teacher_games`), so
   SFT covers every position the teacher reaches. The teacher's own W/D/L on
   the held-out tasks is the ceiling row.
2. **Tokenizer and model**: a byte-level BPE trained here on the decisions'
   text, and a tiny ``Qwen2ForCausalLM`` from :data:`MODEL_CONFIG`.
3. **SFT** (TRL ``SFTTrainer``): one row per decision, the observation as the
   only user turn (core's text verbatim; no system prompt, no history, no
   think text) and the teacher's ``<move>`` reply; unique decisions repeated
   plus every decision (so frequent positions weigh more); loss on the whole
   sequence by default (``--sft-loss assistant``: replies only). Then the
   hard-example phase (``--hard-steps``; Tic-Tac-Toe's plan has it): the
   student's greedy reply on every trained observation is checked against the
   teacher's (:func:`student_errors`), and SFT goes on with the replies' loss
   only, on the same rows plus the ones it gets wrong, repeated.
4. **GRPO** through the project's TRL adapter (``TextRollout(history="none",
   decisions_per_game=4)``: four decisions of each game trained),
   stratified difficulty groups, one stage per random-move range (the seed's
   0.2-0.7 then 0-0.25), ``--loss-type`` (default ``cispo``, the seed's).
5. **Evaluation** after every stage through ``core.Episode`` (the same
   ``TextRollout`` loop): held-out seeded games, both sides, against the
   random and the optimal opponent, greedy and sampled; a W/D/L table with
   legal-move and format rates and 95% Wilson intervals, as Markdown, JSON and
   an SVG plot under ``runs/recipe-<game>/``, and (full runs) between markers
   in docs/trl.md. Two-player games too large to evaluate exactly (Connect
   Four, Othello) play the ladder instead (``ladder.py``: random, alpha-beta at
   depths 1-4, Othello's seed opponent; ``--ladder-games`` a rung), the
   teacher's ladder the ceiling.

A weaker start (the uniform-tie minimax as teacher, the same SFT budget: it
plays legally but loses to the optimal opponent more often) goes through its
own RL stages (``--weak-rl-*``), to show what RL adds where there is room
(``--weak-start``, on by default for Tic-Tac-Toe).
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from rollouts.training.recipe.data import (
    decisions,
    eval_sets,
    exhaustive_teacher_games,
    play_teacher,
    sft_rows,
    teacher_replies,
    teacher_tasks,
)
from rollouts.training.recipe.evaluation import (
    climb,
    evaluate_model,
    exact_evaluation,
    exact_outcomes,
    generation_config,
    greedy_replies,
    held_out_games,
    interval95,
    model_replies_to,
    student_errors,
    summarize,
    teacher_replies_to,
)
from rollouts.training.recipe.ladder import (
    LADDER_DEPTHS,
    SEED_RUNGS,
    Rung,
    ladder_sets,
    ladder_svg,
    ladder_table,
    rungs,
)
from rollouts.training.recipe.plan import (
    MODEL_CONFIG,
    PLANS,
    QUICK,
    TEACHERS,
    WEAK,
    GamePlan,
    RecipeSettings,
    is_ladder_game,
    kept_results,
    model_config,
    one_player,
    parse_stages,
    resolve,
    run_name,
    stage_learning_rates,
)
from rollouts.training.recipe.report import (
    TARGETS,
    exact_table,
    markdown,
    marker,
    stage_table,
    svg_plot,
    verdict,
    write_docs,
    write_results,
)
from rollouts.training.recipe.stages import (
    Clock,
    hard_phase,
    line,
    record,
    run_recipe,
    run_rl_stages,
    sft,
)

__all__ = [
    "LADDER_DEPTHS",
    "MODEL_CONFIG",
    "PLANS",
    "QUICK",
    "SEED_RUNGS",
    "TARGETS",
    "TEACHERS",
    "WEAK",
    "Clock",
    "GamePlan",
    "RecipeSettings",
    "Rung",
    "add_arguments",
    "climb",
    "decisions",
    "eval_sets",
    "evaluate_model",
    "exact_evaluation",
    "exact_outcomes",
    "exact_table",
    "exhaustive_teacher_games",
    "generation_config",
    "greedy_replies",
    "hard_phase",
    "held_out_games",
    "interval95",
    "is_ladder_game",
    "kept_results",
    "ladder_sets",
    "ladder_svg",
    "ladder_table",
    "line",
    "markdown",
    "marker",
    "model_config",
    "model_replies_to",
    "one_player",
    "parse_stages",
    "play_teacher",
    "record",
    "resolve",
    "run",
    "run_name",
    "run_recipe",
    "run_rl_stages",
    "rungs",
    "sft",
    "sft_rows",
    "stage_learning_rates",
    "stage_table",
    "student_errors",
    "summarize",
    "svg_plot",
    "teacher_replies",
    "teacher_replies_to",
    "teacher_tasks",
    "verdict",
    "write_docs",
    "write_results",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    from rollouts.training.flags import add_settings_arguments

    add_settings_arguments(
        p,
        RecipeSettings,
        choices={"game": sorted(PLANS), "teacher": TEACHERS, "rl_group": ("position", "game")},
        negatable=True,
    )


def run(args: argparse.Namespace) -> int:
    values = {f.name: getattr(args, f.name) for f in fields(RecipeSettings)}
    try:
        s = resolve(RecipeSettings(**values))
    except ValueError as e:
        import sys

        print(f"gamebridge train recipe: {e}", file=sys.stderr)
        return 2
    results = run_recipe(s)
    print(markdown(results), flush=True)
    print(f"wrote {s.output_dir}/results.md, results.json, plot.svg and model/", flush=True)
    if results.get("docs_written"):
        print(f"wrote the table into {s.docs}", flush=True)
    return 0
