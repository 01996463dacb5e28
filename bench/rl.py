"""RL throughput: games per CPU second of whole GRPO updates on the recipe's model.

A GRPO update of ``gamebridge train recipe`` is its rollouts (``TextRollout`` playing
the batch's games through ``core.Episode``, one batched ``generate`` per turn) and TRL's
training step (the log-probabilities of every sampled reply, the loss, the backward pass
and the optimizer). Two settings on one model, each from the same starting weights,
alternating in order, after a warm-up update each:

* **today**: 64 games an update (8 groups x 8 games, 4 decisions of each: 256 rows),
  every row scored by its own forward and backward pass (TRL's ``GRPOTrainer``);
* **new** (the recipe's settings now): 256 games an update (32 groups of 8, 4 decisions of
  each: 1,024 rows), each distinct row scored once (``GRPOSettings.shared_forward``: the
  copies share its log-probabilities, exactly).

Timed in CPU seconds of this process (``time.process_time``) with one torch thread, so
other engineers' load on a shared machine counts less than it would in wall time. The
rollout's share is timed inside the update; the rest is the log-probability forward,
the backward pass and the optimizer step.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import Row, Target

SECTION = "RL updates (Tic-Tac-Toe, the recipe's 0.83M model)"
TARGET = 2.0
"""New settings against today's, games per CPU second (issue: at least 2x)."""


@dataclass(frozen=True)
class Setting:
    name: str
    num_groups: int
    games_per_group: int
    decisions_per_game: int
    shared_forward: bool
    group: str = "game"

    @property
    def games(self) -> int:
        return self.num_groups * self.games_per_group


TODAY = Setting("today: 64 games/update, every row scored", 8, 8, 4, False)
NEW = Setting("new: 256 games/update, distinct rows scored once", 32, 8, 4, True)
"""The recipe's settings now (``RecipeSettings``: 32 groups of 8 games, 4 decisions of
each, ``GRPOSettings.shared_forward``)."""


@dataclass
class Measured:
    games: int = 0
    cpu: float = 0.0
    rollout_cpu: float = 0.0
    rows: int = 0
    distinct_rows: int = 0


def playing_model(steps: int, seed: int = 0) -> tuple[Any, Any]:
    """A model that plays legal moves: the recipe's tokenizer and 0.83M model after
    ``steps`` SFT steps on the weak teacher's games (a fresh clone has no checkpoint)."""
    from core.teacher import weak_teacher
    from rollouts.training import recipe as R
    from rollouts.training.tiny import DECISION_CHAT_TEMPLATE, build_model, build_tokenizer

    s = R.resolve(
        R.RecipeSettings(teacher="weak", teacher_games=1000, output_dir="/tmp/bench-rl", docs="")
    )
    games = R.play_teacher(weak_teacher(s.game), R.teacher_tasks(s))
    rows = R.sft_rows(R.decisions(games, R.kept_results(s.game)), s.unique_repeats, seed)
    tokenizer = build_tokenizer(rows[:3000], s.vocab_size, DECISION_CHAT_TEMPLATE)
    model = build_model(tokenizer, seed=seed, **R.model_config(s))
    R.sft(s, model, tokenizer, rows, steps, "sft", {"logs": {}})
    return model, tokenizer


def one_setting(model: Any, tokenizer: Any, setting: Setting, updates: int, seed: int) -> Measured:
    """``updates`` GRPO updates of ``setting`` after one warm-up update, from a copy of
    ``model``: games, CPU seconds, the rollouts' share, rows and distinct rows."""
    from transformers import TrainerCallback

    from rollouts.training.grpo import GRPOSettings, build_trainer
    from rollouts.training.text_rollout import TextRollout

    measured = Measured()
    k = setting.decisions_per_game

    class Timed(TextRollout):
        def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
            start = time.process_time()
            out = super().__call__(prompts, trainer)
            if clock["on"]:
                measured.rollout_cpu += time.process_time() - start
            return out

    clock = {"on": False, "start": 0.0}

    class Steps(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            clock["on"] = state.global_step >= 1  # the first update warms up
            clock["start"] = time.process_time()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if clock["on"]:
                measured.cpu += time.process_time() - clock["start"]
                measured.games += setting.games

    s = GRPOSettings(
        game="tictactoe",
        mode="rollout_func",
        num_tasks=(updates + 1) * setting.num_groups,
        opponent="minimax",
        depth=9,
        opening_plies=0,
        max_invalid_moves=0,
        min_random_move_prob=0.0,
        max_random_move_prob=0.25,
        num_groups=setting.num_groups,
        num_generations=setting.games_per_group * k,
        temperature=1.0,
        learning_rate=5e-5,
        loss_type="cispo",
        epsilon_high=5.0,
        max_steps=updates + 1,
        max_completion_length=8,
        max_new_tokens=8,
        cpu=True,
        seed=seed,
        logging_steps=updates + 1,
        output_dir=f"/tmp/bench-rl/{setting.num_groups}",
        shared_forward=setting.shared_forward,
    )
    trainer = build_trainer(
        s,
        model=copy.deepcopy(model),
        tokenizer=tokenizer,
        rollout=Timed(8, history="none", decisions_per_game=k, group=setting.group),
        callbacks=[Steps()],
        progress=False,
    )
    trainer.train()
    counts = trainer.__dict__.get("distinct_rows", [])[1:]  # past the warm-up
    rows = updates * setting.games * k
    measured.rows = rows
    measured.distinct_rows = sum(d for d, _ in counts) if counts else rows
    return measured


def rl_rows(
    runs: int,
    updates: int,
    sft_steps: int = 300,
    model_path: str | Path | None = None,
    settings: tuple[Setting, Setting] = (TODAY, NEW),
) -> tuple[list[Row], list[str]]:
    """Today's settings against the new ones, ``runs`` rounds alternating their order."""
    import torch

    torch.set_num_threads(1)
    if model_path is not None:
        from transformers import AutoModelForCausalLM

        from rollouts.training.tiny import load_tokenizer

        model = AutoModelForCausalLM.from_pretrained(str(model_path))
        tokenizer = load_tokenizer(str(model_path))
        origin = f"the checkpoint in {model_path}"
    else:
        model, tokenizer = playing_model(sft_steps)
        origin = f"the recipe's model after {sft_steps} SFT steps on the weak teacher's games"
    today, new = settings
    results: dict[str, list[Measured]] = {today.name: [], new.name: []}
    for r in range(runs):
        order = (today, new) if r % 2 == 0 else (new, today)
        for setting in order:
            results[setting.name].append(one_setting(model, tokenizer, setting, updates, r))
    ratios = []
    for t, n in zip(results[today.name], results[new.name], strict=True):
        ratios.append((n.games / n.cpu) / (t.games / t.cpu))
    rows = []
    for setting in (today, new):
        ms = results[setting.name]
        games, cpu = sum(m.games for m in ms), sum(m.cpu for m in ms)
        rollout = sum(m.rollout_cpu for m in ms) / cpu
        distinct = sum(m.distinct_rows for m in ms) / max(1, sum(m.rows for m in ms))
        rows.append(
            Row(
                SECTION,
                setting.name,
                f"{games / cpu:.1f} games/CPU-s",
                "" if setting is today else f"{_rate(results[today.name])} games/CPU-s",
                tuple(ratios) if setting is new else (1.0,) * len(ms),
                "x",
                Target(TARGET) if setting is new else None,
                f"rollouts {100 * rollout:.0f}%, log-probs + backward + step "
                f"{100 * (1 - rollout):.0f}%; rows scored {100 * distinct:.0f}% of "
                f"{sum(m.rows for m in ms) // max(1, len(ms) * updates)} a update",
            )
        )
    notes = [
        f"RL updates: {runs} rounds x {updates} updates per setting (after a warm-up update "
        f"each), order alternating, each round from the same weights ({origin}); one torch "
        "thread; CPU seconds of this process. `measured` is new / today per round."
    ]
    return rows, notes


def _rate(ms: list[Measured]) -> str:
    return f"{sum(m.games for m in ms) / sum(m.cpu for m in ms):.1f}"
