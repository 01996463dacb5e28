"""The run: SFT, the hard-example phase, the GRPO stages, each evaluated, and
:func:`run_recipe` which chains them."""

from __future__ import annotations

import os
import random
import resource
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rollouts.training.recipe.data import (
    answer_split,
    answers_of,
    decisions,
    eval_sets,
    exhaustive_teacher_games,
    play_teacher,
    rl_tasks,
    sft_rows,
    teacher_replies,
    teacher_tasks,
)
from rollouts.training.recipe.evaluation import (
    climb,
    evaluate_model,
    exact_evaluation,
    model_replies_to,
    student_errors,
    teacher_replies_to,
)
from rollouts.training.recipe.plan import (
    PLANS,
    RecipeSettings,
    kept_results,
    model_config,
    one_player,
    parse_stages,
    resolve,
    stage_learning_rates,
)
from rollouts.training.recipe.report import write_results


@dataclass
class Clock:
    """Wall and CPU seconds per stage, and the machine's load around them."""

    start: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)
    load: list[tuple[str, list[float]]] = field(default_factory=list)

    def mark(self, name: str) -> None:
        self.marks[name] = round(time.perf_counter() - self.start, 1)
        self.load.append((name, [round(x, 2) for x in os.getloadavg()]))

    def figures(self) -> dict[str, Any]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "wall_seconds_at": self.marks,
            "total_wall_seconds": round(time.perf_counter() - self.start, 1),
            "process_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "load_average_1_5_15": dict(self.load),
            "cpus": os.cpu_count(),
            "machine": machine(),
        }


VECTOR_FLAGS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"))
"""The widest vector instructions a CPU may have, as ``/proc/cpuinfo`` flags them."""


def machine() -> dict[str, str]:
    """What a run's floating point depends on beyond its seed: the CPU, its widest vector
    instructions (torch's CPU kernels pick theirs at run time) and the versions of torch and
    transformers. Runs on one machine repeat to the bit; the same command elsewhere need not
    (measured: the weak recipe's SFT student, 79.41% non-loss against optimal on the machine
    that wrote docs/trl.md in the morning of 2026-12-06, 85.14% on an AVX2 AMD EPYC that
    afternoon, the pinned trl/torch/transformers/datasets/accelerate unchanged)."""
    import platform

    import torch
    import transformers

    cpu, flags = platform.processor() or platform.machine(), set()
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = text.partition(":")
            if key.strip() == "model name":
                cpu = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    vector = next((name for flag, name in VECTOR_FLAGS if flag in flags), "")
    return {
        "cpu": f"{cpu} ({vector})" if vector else cpu,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def _log(s: RecipeSettings, clock: Clock, text: str) -> None:
    print(f"[recipe {time.perf_counter() - clock.start:6.0f}s] {text}", flush=True)


def run_rl_stages(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    results: dict[str, Any],
    sets: dict[str, list[Any]],
    clock: Clock,
    sampled: bool,
    on_stage: Any = None,
    *,
    evaluate: bool = True,
) -> Any:
    """The GRPO stages, each followed by its evaluation (``evaluate``; sampled play too
    after the last stage when ``sampled``)."""
    from rollouts.training.grpo import train_grpo
    from rollouts.training.text_rollout import TextRollout

    plan = PLANS[s.game]
    stages = parse_stages(s.rl_stages)
    per_game = 1 if s.rl_group == "position" else s.rl_decisions_per_game
    for k, (lo, hi) in enumerate(stages, start=1):
        stage = f"rl{k}"
        grpo = stage_settings(s, k)
        trainer = train_grpo(
            grpo,
            model=model,
            tokenizer=tokenizer,
            tasks=rl_tasks(s, grpo),
            progress=s.progress,
            callbacks=curve_callback(s, tokenizer, results.setdefault("curve", {}), stage),
            rollout=TextRollout(
                plan.max_new_tokens,
                history="none",
                decisions_per_game=per_game,
                group=s.rl_group,
                continuation="greedy" if s.rl_group == "position" else "sample",
                explore_epsilon=s.explore_epsilon,
                constrained=s.constrained_decoding,
            ),
        )
        model = trainer.model
        results["logs"][stage] = [h for h in trainer.state.log_history if "loss" in h]
        clock.mark(stage)
        if not evaluate:
            continue
        label = stage_label(s, k, (lo, hi))
        record(s, model, tokenizer, stage, label, results, sets, sampled and k == len(stages))
        _log(s, clock, line(stage, results["stages"][stage]))
        if on_stage is not None:
            on_stage()
    return model


def stage_settings(s: RecipeSettings, k: int) -> Any:
    """The ``GRPOSettings`` of RL stage ``k`` (from 1): its random-move range and learning
    rate, the recipe's batch, loss and opponent."""
    from rollouts.training.grpo import staged_settings

    plan = PLANS[s.game]
    lo, hi = parse_stages(s.rl_stages)[k - 1]
    per_game = 1 if s.rl_group == "position" else s.rl_decisions_per_game
    return staged_settings(
        updates=s.rl_steps,
        num_groups=s.num_groups,
        max_new_tokens=plan.max_new_tokens,
        game=s.game,
        opponent="minimax",
        depth=plan.opponent_depth,
        opening_plies=plan.opening_plies,
        max_invalid_moves=s.rl_max_invalid_moves,
        min_random_move_prob=lo,
        max_random_move_prob=hi,
        num_generations=s.num_generations * per_game,
        temperature=s.temperature,
        learning_rate=stage_learning_rates(s)[k - 1],
        loss_type=s.loss_type,
        epsilon_high=s.epsilon_high,
        seed=s.seed + 100 * k,
        output_dir=str(Path(s.output_dir) / f"rl{k}"),
    )


def stage_label(s: RecipeSettings, k: int, span: tuple[float, float]) -> str:
    """RL stage ``k``'s row label: ``RL1 (0.2-0.7)``, its opponent's random-move range; a
    one-player game has no opponent, so its stages are ``RL1``, ``RL2``, ..."""
    if one_player(s.game):
        return f"RL{k}"
    return f"RL{k} ({span[0]:g}-{span[1]:g})"


def answer_facts(s: RecipeSettings, sets: dict[str, list[Any]]) -> dict[str, Any] | None:
    """For a game with hidden answers (:func:`answer_split`, Wordle): the split's sizes, the
    distinct answers of the held-out games and of every training game (the teacher's and
    each RL stage's GRPO tasks, made by the functions the run makes them with) and whether
    the two are disjoint; None for other games."""
    split = answer_split(s.game)
    if split is None:
        return None
    held_out = answers_of([t for tasks in sets.values() for t in tasks])
    train = answers_of(teacher_tasks(s))
    if s.rl_steps > 0:
        for k in range(1, len(parse_stages(s.rl_stages)) + 1):
            train |= answers_of(rl_tasks(s, stage_settings(s, k)))
    return {
        "split_train": len(split.train),
        "split_held_out": len(split.held_out),
        "train": len(train),
        "held_out": len(held_out),
        "disjoint": not train & held_out,
    }


def curve_callback(
    s: RecipeSettings, tokenizer: Any, curve: dict[str, Any], stage: str
) -> list[Any]:
    """A ``TrainerCallback`` that evaluates the model exactly every ``s.eval_every``
    updates of ``stage`` into ``curve[stage]`` (none when there is nothing to do)."""
    if s.eval_every <= 0 or not PLANS[s.game].exact:
        return []
    import torch
    from transformers import TrainerCallback

    points = curve.setdefault(stage, [])

    class Curve(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step % s.eval_every:
                return
            model = kw["model"]
            was_training = model.training
            model.eval()
            with torch.no_grad():
                replies = model_replies_to(
                    model, tokenizer, PLANS[s.game].max_new_tokens, game=constrained_game(s)
                )
                points.append({"update": state.global_step, **exact_evaluation(s, replies)})
            model.train(was_training)

    return [Curve()]


def record(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    key: str,
    label: str,
    results: dict[str, Any],
    sets: dict[str, list[Any]],
    sampled: bool,
) -> None:
    plan = PLANS[s.game]
    constrained = s.constrained_decoding
    entry = {
        "label": label,
        "greedy": evaluate_model(
            model, tokenizer, sets, max_new_tokens=plan.max_new_tokens, constrained=constrained
        ),
    }
    if constrained:
        entry["constrained"] = True  # the log line says so
    if plan.exact:
        entry["exact"] = exact_evaluation(
            s, model_replies_to(model, tokenizer, plan.max_new_tokens, game=constrained_game(s))
        )
    if sampled:
        entry["sampled"] = evaluate_model(
            model,
            tokenizer,
            sets,
            max_new_tokens=plan.max_new_tokens,
            temperature=s.eval_temperature,
            seed=s.seed,
            constrained=constrained,
        )
    results["stages"][key] = entry


def constrained_game(s: RecipeSettings) -> str | None:
    """The game whose legal replies the model's replies are restricted to (constrained
    decoding, ``--constrained-decoding``), or None."""
    return s.game if s.constrained_decoding else None


def line(key: str, entry: dict[str, Any]) -> str:
    parts = [f"{entry['label']:<14}"]
    for name, e in entry["greedy"].items():
        parts.append(
            f"{name}: {e['wins']}/{e['draws']}/{e['losses']} legal {e['legal_move_rate']:.3f}"
        )
    if entry.get("constrained"):
        parts.append("(constrained decoding: replies restricted to legal moves)")
    return "  ".join(parts)


def sft(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    steps: int,
    name: str,
    results: dict[str, Any],
    *,
    learning_rate: float | None = None,
    replies_only: bool | None = None,
) -> None:
    """SFT ``model`` in place (cosine decay, whole-sequence loss unless ``sft_loss``;
    ``learning_rate`` and ``replies_only`` override the settings' for one phase)."""
    from rollouts.training.sft import run_sft

    assistant = s.sft_loss == "assistant" if replies_only is None else replies_only
    trainer = run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(Path(s.output_dir) / name),
        max_steps=steps,
        learning_rate=s.sft_learning_rate if learning_rate is None else learning_rate,
        batch_size=s.sft_batch_size,
        seed=s.seed,
        max_length=512,
        progress=s.progress,
        assistant_only_loss=assistant,
        lr_scheduler_type="cosine",
        warmup_steps=min(20, steps // 10),
        assistant_weight=0.0 if assistant else s.sft_assistant_weight,
    )
    results["logs"][name] = [h for h in trainer.state.log_history if "loss" in h]


def hard_phase(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    trained: Sequence[tuple[str, str]],
    results: dict[str, Any],
    clock: Clock,
) -> None:
    """SFT's hard-example phase, in place: the trained decisions the student's greedy
    reply gets wrong (:func:`student_errors`), added ``hard_repeats`` times to the SFT
    rows, then ``hard_steps`` steps on the replies' loss only at ``hard_learning_rate``.
    The errors before and after go in ``results["hard"]``."""
    plan = PLANS[s.game]
    support = teacher_replies(trained)
    before = student_errors(model, tokenizer, support, plan.max_new_tokens)
    hard = [(o, r) for o, r in dict.fromkeys(trained) if o in before]
    extra = sft_rows(hard * s.hard_repeats, 0, s.seed + 1)
    mixed = rows + extra
    random.Random(s.seed + 1).shuffle(mixed)
    _log(s, clock, f"hard examples: {len(before)} of {len(support)} trained boards wrong")
    sft(
        s,
        model,
        tokenizer,
        mixed,
        s.hard_steps,
        "sft-hard",
        results,
        learning_rate=s.hard_learning_rate,
        replies_only=True,
    )
    after = student_errors(model, tokenizer, support, plan.max_new_tokens)
    results["hard"] = {
        "boards": len(support),
        "wrong_before": len(before),
        "wrong_after": len(after),
        "fixed": len(before - after),
        "broken": len(after - before),
        "rows_added": len(extra),
        "steps": s.hard_steps,
    }
    _log(
        s,
        clock,
        f"after {s.hard_steps} hard steps: {len(after)} of {len(support)} wrong "
        f"({len(before - after)} fixed, {len(after - before)} newly wrong)",
    )


def teacher_stage(
    s: RecipeSettings, sets: dict[str, list[Any]], clock: Clock
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, str]]]:
    """The teacher's games, what SFT keeps of them (``pairs``: decisions of its sampled
    games; ``coverage``: of its games against an exhaustive opponent) and its ceiling."""
    from core.teacher import make_teacher, weak_teacher

    teacher = make_teacher(s.game) if s.teacher == "strong" else weak_teacher(s.game)
    keep = kept_results(s.game)
    games = play_teacher(teacher, teacher_tasks(s))
    pairs = decisions(games, keep)
    every: list[Any] = []
    coverage: list[tuple[str, str]] = []
    if s.exhaustive == "yes":
        every = exhaustive_teacher_games(teacher, s)
        coverage = decisions(every, keep)
    facts: dict[str, Any] = {
        "name": teacher.name,
        "games": len(games),
        "kept": sum(g.result in keep for g in games),
        "decisions": len(pairs),
        "unique_decisions": len(set(pairs)),
        "exhaustive_games": len(every),
        "exhaustive_unique_decisions": len(set(coverage)),
        "unique_decisions_trained": len(set(coverage) | set(pairs)),
        "held_out": climb(teacher, sets),
    }
    if PLANS[s.game].exact:
        facts["exact"] = exact_evaluation(s, teacher_replies_to(teacher, s.game))
    clock.mark("teacher")
    _log(
        s,
        clock,
        f"teacher {teacher.name}: {facts['kept']}/{len(games)} games kept, "
        f"{len(pairs)} decisions ({facts['unique_decisions']} unique)",
    )
    for name, e in facts["held_out"].items():
        _log(s, clock, f"teacher ceiling vs {name}: {e['wins']}/{e['draws']}/{e['losses']}")
    if coverage:
        _log(
            s,
            clock,
            f"exhaustive opponent: {len(every)} teacher games, "
            f"{len(set(coverage))} unique decisions "
            f"({facts['unique_decisions_trained']} in all with the sampled games)",
        )
    return facts, pairs, coverage


def model_facts(
    s: RecipeSettings, model: Any, tokenizer: Any, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """The student's size, vocabulary, configuration and SFT rows, for the table."""
    sample = rows[:200]
    prompt_tokens = sum(
        len(
            tokenizer.apply_chat_template(
                r["messages"][:1], add_generation_prompt=True, return_dict=False
            )
        )
        for r in sample
    )
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": len(tokenizer),
        "config": model_config(s),
        "sft_rows": len(rows),
        "prompt_tokens_mean": round(prompt_tokens / max(1, len(sample)), 1),
    }


def run_recipe(settings: RecipeSettings) -> dict[str, Any]:
    """The whole recipe; returns (and writes) the results."""
    from rollouts.training.tiny import _require

    _require()
    import torch

    from rollouts.training.tiny import (
        DECISION_CHAT_TEMPLATE,
        build_model,
        build_tokenizer,
        save_tiny,
    )

    s = resolve(settings)
    torch.set_num_threads(s.threads)
    out = Path(s.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    results: dict[str, Any] = {"settings": asdict(s), "stages": {}, "logs": {}}
    sets = eval_sets(s)
    if (answers := answer_facts(s, sets)) is not None:
        results["answers"] = answers

    # 1. teacher games and the ceiling
    results["teacher"], pairs, coverage = teacher_stage(s, sets, clock)
    rows = sft_rows(pairs, s.unique_repeats, s.seed, coverage)

    # 2. tokenizer and model
    tokenizer = build_tokenizer(rows[:3000], s.vocab_size, DECISION_CHAT_TEMPLATE)
    model = build_model(tokenizer, seed=s.seed, **model_config(s))
    results["model"] = model_facts(s, model, tokenizer, rows)

    def checkpoint(done: bool = False) -> None:
        """Write the results so far (an interrupted run keeps its finished stages)."""
        results["timing"] = clock.figures()
        results["complete"] = done
        write_results(s, results)

    record(s, model, tokenizer, "base", "base", results, sets, False)
    clock.mark("base")
    _log(s, clock, line("base", results["stages"]["base"]))
    checkpoint()

    # 3. SFT, then its hard-example phase
    sft(s, model, tokenizer, rows, s.sft_steps, "sft", results)
    if s.hard_steps > 0:
        hard_phase(s, model, tokenizer, rows, [*coverage, *pairs], results, clock)
    clock.mark("sft")
    record(s, model, tokenizer, "sft", "SFT", results, sets, s.sampled)
    _log(s, clock, line("sft", results["stages"]["sft"]))
    save_tiny(
        model,
        tokenizer,
        out / "sft-model",
        {"recipe": asdict(s), "stage": "sft"},
        max_new_tokens=PLANS[s.game].max_new_tokens,
    )
    checkpoint()

    # 4-5. RL stages, each evaluated
    if s.rl_steps > 0:
        model = run_rl_stages(
            s, model, tokenizer, results, sets, clock, s.sampled, on_stage=checkpoint
        )
    save_tiny(
        model,
        tokenizer,
        out / "model",
        {"recipe": asdict(s)},
        max_new_tokens=PLANS[s.game].max_new_tokens,
    )
    checkpoint(done=True)
    return results
