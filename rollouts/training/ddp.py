"""GRPO on more than one process: ``rollouts.training.grpo`` under ``accelerate launch``.

Three steps (``make train-ddp`` runs all three on CPU with 2 processes, gloo)::

    python -m rollouts.training.ddp tiny --out runs/ddp/tiny          # a tiny local model
    accelerate launch --cpu --num_processes 2 -m rollouts.training.ddp train \\
        --model runs/ddp/tiny --record runs/ddp/rollout_func --mode rollout_func ...
    python -m rollouts.training.ddp check runs/ddp/rollout_func       # logs == core

``train`` takes every ``gamebridge train grpo`` flag and builds the same
trainer (``rollouts.training.grpo.build_trainer``); accelerate gives each process
its rank, TRL splits each generation batch across the ranks, and each rank's
games are its own (its ``environment_factory`` instances, or its
``rollout_func`` episodes, in its own process). ``--record DIR`` adds a callback
that writes, after every optimizer step, each rank's games (task, trajectory,
core's reward components) to ``DIR/rank<R>.jsonl``, and rank 0 writes the
trainer's log history to ``DIR/log_history.json``.

``check DIR`` reads them back: every game replayed by core
(``Episode.from_trajectory``) scores what its rank recorded; the logged reward
columns (``rewards/reward_<component>/mean``) equal the mean of core's scores
over all ranks' games of that step; and every step's global batch holds whole
GRPO groups (each task exactly ``num_generations`` times) spanning all
``num_groups`` difficulty strata. ``compare DIR_A DIR_B`` checks that two runs
(say 1 process and 2 processes, same seed and global batch) played the same
tasks at every step with the same per-task rewards; with sampling that holds
only for the task assignment, since TRL seeds each rank differently
(``set_seed(seed, device_specific=True)``), so the exact comparison uses greedy
generation (``--greedy``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RANK_FILE = "rank{rank}.jsonl"
LOG_FILE = "log_history.json"
SETTINGS_FILE = "settings.json"


class CheckError(AssertionError):
    """A recorded run disagrees with core or with itself."""


# --- train ------------------------------------------------------------------------------------------
def _rank() -> int:
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))


def _recorder(trainer_box: dict[str, Any], rollout: Any, out: Path, rank: int) -> Any:
    """A ``TrainerCallback`` writing this rank's finished games after each step."""
    from transformers import TrainerCallback

    path = out / RANK_FILE.format(rank=rank)
    path.unlink(missing_ok=True)

    class RecordGames(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            trainer = trainer_box["trainer"]
            if trainer.environments is not None:
                episodes = [env.episode.finish() for env in trainer.environments]
            else:
                episodes = list(rollout.last_episodes)
            with path.open("a") as f:
                for i, ep in enumerate(episodes):
                    row = {
                        "step": state.global_step,
                        "rank": rank,
                        "index": i,
                        "task_id": ep.task.task_id,
                        "task": ep.task.to_dict(),
                        "trajectory": ep.to_dict(),
                        "components": dict(ep.reward().components),
                    }
                    f.write(json.dumps(row) + "\n")

    return RecordGames()


def train(args: argparse.Namespace) -> int:
    """One rank of a ``accelerate launch`` run (or the only process without it)."""
    import torch

    from rollouts.training.grpo import build_trainer, settings_from
    from rollouts.training.text_rollout import TextRollout
    from rollouts.training.tiny import load_tokenizer

    torch.set_num_threads(args.threads)
    s = settings_from(args)
    rank = _rank()
    rollout = TextRollout(s.max_new_tokens)
    callbacks = []
    box: dict[str, Any] = {}
    record = Path(args.record) if args.record else None
    if record is not None:
        record.mkdir(parents=True, exist_ok=True)
        callbacks.append(_recorder(box, rollout, record, rank))
    trainer = build_trainer(
        s,
        tokenizer=load_tokenizer(s.model),
        rollout=rollout,
        callbacks=callbacks,
        progress=False,
    )
    if args.greedy:
        # Deterministic replies: TRL's generation settings (env_factory generates with
        # them) and the config the rollout function reads, rebuilt as TRL builds them.
        from transformers import GenerationConfig

        trainer.generation_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        trainer.generation_config = GenerationConfig(
            **trainer.generation_kwargs, disable_compile=True
        )
    box["trainer"] = trainer
    t0 = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - t0
    world = trainer.accelerator.num_processes
    if record is not None and trainer.accelerator.is_main_process:
        (record / LOG_FILE).write_text(json.dumps(trainer.state.log_history, indent=1))
        facts = {**vars(args), "func": None, "world_size": world, "train_seconds": train_seconds}
        (record / SETTINGS_FILE).write_text(json.dumps(facts, indent=1, default=str))
    if trainer.accelerator.is_main_process:
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        print(f"train-ddp: {world} process(es), {len(losses)} steps, losses {losses}", flush=True)
    return 0


# --- check ------------------------------------------------------------------------------------------
def read_run(
    folder: str | Path,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(every rank's game rows, rank 0's log history, the settings) of a recorded run."""
    out = Path(folder)
    rows: list[dict[str, Any]] = []
    for path in sorted(out.glob("rank*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        raise CheckError(f"{out}: no rank*.jsonl game records")
    logs = json.loads((out / LOG_FILE).read_text())
    settings = json.loads((out / SETTINGS_FILE).read_text())
    return rows, logs, settings


def check_run(folder: str | Path, *, tol: float = 1e-6) -> dict[str, Any]:
    """Check a recorded run against core (see the module docstring); returns figures."""
    from adapters.trl import COMPONENTS
    from core.episode import Episode

    rows, logs, settings = read_run(folder)
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        replayed = Episode.from_trajectory(row["trajectory"])
        if replayed.to_dict() != row["trajectory"]:
            raise CheckError(f"step {row['step']}: a game does not replay to its trajectory")
        scored = dict(replayed.reward().components)
        if scored != row["components"]:
            raise CheckError(f"step {row['step']}: core scores {scored}, the rank recorded {row}")
        by_step[row["step"]].append(row)
    step_logs = {h["step"]: h for h in logs if "loss" in h}
    if sorted(step_logs) != sorted(by_step):
        raise CheckError(f"logged steps {sorted(step_logs)} != recorded steps {sorted(by_step)}")
    groups, generations = settings["num_groups"], settings["num_generations"]
    world = settings["world_size"]
    for step, games in sorted(by_step.items()):
        log = step_logs[step]
        if not math.isfinite(log["loss"]):
            raise CheckError(f"step {step}: loss {log['loss']}")
        for name in COMPONENTS:
            mean = sum(g["components"][name] for g in games) / len(games)
            logged = log[f"rewards/reward_{name}/mean"]
            if abs(mean - logged) > tol:
                raise CheckError(f"step {step}: logged {name} mean {logged}, core's {mean}")
        counts = Counter(g["task_id"] for g in games)
        if set(counts.values()) != {generations} or len(counts) != groups:
            raise CheckError(f"step {step}: groups not whole: {dict(counts)}")
        strata = sorted({int(g["task"]["random_move_prob"] * groups) for g in games})
        if strata != list(range(groups)):
            raise CheckError(f"step {step}: the batch spans strata {strata}, not all {groups}")
        ranks = {g["rank"] for g in games}
        if ranks != set(range(world)):
            raise CheckError(f"step {step}: games from ranks {sorted(ranks)} of {world}")
    return {
        "steps": len(by_step),
        "world_size": world,
        "games": len(rows),
        "losses": [step_logs[s]["loss"] for s in sorted(step_logs)],
    }


def per_task(folder: str | Path) -> dict[int, list[tuple[str, dict[str, float]]]]:
    """Step -> sorted (task id, core's components) of every game of a recorded run."""
    rows, _, _ = read_run(folder)
    out: dict[int, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    for row in rows:
        out[row["step"]].append((row["task_id"], row["components"]))
    return {
        step: sorted(games, key=lambda g: (g[0], json.dumps(g[1]))) for step, games in out.items()
    }


def compare_runs(a: str | Path, b: str | Path) -> None:
    """Raise ``CheckError`` unless both runs played the same tasks with the same rewards."""
    left, right = per_task(a), per_task(b)
    if sorted(left) != sorted(right):
        raise CheckError(f"steps differ: {sorted(left)} vs {sorted(right)}")
    for step in sorted(left):
        if [t for t, _ in left[step]] != [t for t, _ in right[step]]:
            raise CheckError(f"step {step}: different tasks")
        if left[step] != right[step]:
            raise CheckError(f"step {step}: per-task rewards differ")


# --- the tiny model ----------------------------------------------------------------------------------
def build_tiny(out: str, sft_steps: int, seed: int) -> Path:
    """A tiny model warmed up on scripted games in both formats (``<move>`` text
    and ``make_move`` tool calls), saved where ``--model`` can load it."""
    import torch

    from core.tasks import make_tasks
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import (
        build_model,
        build_tokenizer,
        chat_rows,
        save_tiny,
        scripted_records,
    )

    torch.set_num_threads(1)
    tasks = make_tasks(120, seed=seed + 1, num_groups=1, opponent="random")
    keep = {"win", "draw"}
    text = chat_rows(scripted_records(tasks, "minimax:9", tools=False), keep)
    tools = chat_rows(scripted_records(tasks, "minimax:9", tools=True), keep)
    tokenizer = build_tokenizer(text + tools)
    model = build_model(tokenizer, seed=seed)
    run_sft(
        model,
        tokenizer,
        text + tools,
        output_dir=str(Path(out) / "sft"),
        max_steps=sft_steps,
        learning_rate=3e-3,
        seed=seed,
        progress=False,
    )
    return save_tiny(
        model, tokenizer, out, {"built_by": "rollouts.training.ddp", "sft_steps": sft_steps}
    )


# --- the whole path (make train-ddp) -----------------------------------------------------------------
def launch_argv(processes: int, flags: Sequence[str]) -> list[str]:
    """``accelerate launch --multi_gpu --num_processes N -m rollouts.training.ddp train FLAGS``.

    ``--multi_gpu`` is accelerate's torchrun launcher; with the trainer on CPU
    (``--cpu``, TRL's ``use_cpu``) each rank runs on CPU and the process group
    is gloo (``DistributedType.MULTI_CPU``). ``accelerate launch --cpu
    --num_processes N`` would start ONE process: accelerate 1.15 runs several
    CPU processes only through ``mpirun`` (``--mpirun_hostfile``)."""
    accelerate = Path(sys.executable).with_name("accelerate")
    return [
        str(accelerate),
        "launch",
        "--multi_gpu" if processes > 1 else "--cpu",  # --multi_gpu refuses 1 process
        "--num_processes",
        str(processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "-m",
        "rollouts.training.ddp",
        "train",
        *flags,
    ]


def train_flags(
    model: str, record: Path, mode: str, steps: int, seed: int, *, greedy: bool
) -> list[str]:
    """The small CPU settings of the demo: 2 groups x 2 generations = 4 games per update
    (2 per rank on 2 processes), Tic-Tac-Toe against a random opponent."""
    flags = [
        "--model", model,
        "--mode", mode,
        "--game", "tictactoe",
        "--opponent", "random",
        "--num-tasks", "16",
        "--num-groups", "2",
        "--num-generations", "2",
        "--max-steps", str(steps),
        "--learning-rate", "1e-3",
        "--max-completion-length", "512",
        "--max-new-tokens", "16",
        "--seed", str(seed),
        "--cpu",
        "--output-dir", str(record / "trainer"),
        "--record", str(record),
    ]  # fmt: skip
    return flags + (["--greedy"] if greedy else [])


def run_launch(processes: int, flags: Sequence[str], log: Path) -> float:
    """Run one ``accelerate launch``; returns its wall seconds (raises with the log tail)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    t0 = time.perf_counter()
    with log.open("wb") as out:
        done = subprocess.run(
            launch_argv(processes, flags),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            check=False,
        )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise CheckError(
            f"accelerate launch ({processes} processes) exited {done.returncode}:\n{tail}"
        )
    return seconds


def demo(args: argparse.Namespace) -> int:
    """Tiny model, then per mode a 2-process run checked against core; with
    ``--compare`` also greedy 1- and 2-process runs with equal per-task rewards."""
    from rollouts.training.tiny import TINY_MARKER

    out = Path(args.out)
    tiny = out / "tiny"
    if not (tiny / TINY_MARKER).exists():
        print(f"train-ddp: building the tiny model in {tiny}", flush=True)
        build_tiny(str(tiny), args.sft_steps, args.seed)
    try:
        for mode in args.modes.split(","):
            record = out / f"{mode}-2proc"
            seconds = run_launch(
                2,
                train_flags(str(tiny), record, mode, args.steps, args.seed, greedy=False),
                out / f"{mode}-2proc.log",
            )
            figures = check_run(record)
            print(
                f"train-ddp: {mode}: 2 processes, {figures['steps']} steps in {seconds:.0f}s: "
                f"logged rewards == core's for all {figures['games']} games, groups whole, "
                f"losses {figures['losses']}",
                flush=True,
            )
            if args.compare:
                runs = {}
                for n in (1, 2):
                    record = out / f"{mode}-greedy-{n}proc"
                    runs[n] = run_launch(
                        n,
                        train_flags(str(tiny), record, mode, args.steps, args.seed, greedy=True),
                        out / f"{mode}-greedy-{n}proc.log",
                    )
                    check_run(record)
                compare_runs(out / f"{mode}-greedy-1proc", out / f"{mode}-greedy-2proc")
                print(
                    f"train-ddp: {mode}: greedy 1 process ({runs[1]:.0f}s) and 2 processes "
                    f"({runs[2]:.0f}s): the same tasks per step, the same per-task rewards",
                    flush=True,
                )
    except CheckError as e:
        print(f"train-ddp: FAILED: {e}")
        return 1
    return 0


# --- command line ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from rollouts.training import grpo as train_grpo

    parser = argparse.ArgumentParser(
        prog="python -m rollouts.training.ddp", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("train", help="one rank of GRPO (run it under accelerate launch)")
    train_grpo.add_arguments(p)
    p.add_argument("--record", default=None, help="write each rank's games and the logs here")
    p.add_argument("--greedy", action="store_true", help="greedy replies (exact 1 vs N comparison)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.set_defaults(func=train)
    p = sub.add_parser("tiny", help="build and save the tiny warmed-up model")
    p.add_argument("--out", required=True)
    p.add_argument("--sft-steps", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(
        func=lambda a: print(f"tiny model: {build_tiny(a.out, a.sft_steps, a.seed)}") or 0
    )
    p = sub.add_parser(
        "demo", help="tiny model, 2-process runs of both hooks, checks (make train-ddp)"
    )
    p.add_argument("--out", default="runs/ddp")
    p.add_argument("--modes", default="rollout_func,env_factory")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--sft-steps", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compare", action="store_true", help="also greedy 1 vs 2 processes")
    p.set_defaults(func=demo)
    p = sub.add_parser("check", help="check recorded runs against core")
    p.add_argument("folders", nargs="+")
    p.add_argument("--same-as", default=None, help="also compare per-task rewards with this run")
    p.set_defaults(func=_check)
    return parser


def _check(args: argparse.Namespace) -> int:
    for folder in args.folders:
        try:
            figures = check_run(folder)
            if args.same_as:
                compare_runs(args.same_as, folder)
        except (CheckError, OSError) as e:
            print(f"train-ddp check: {folder}: FAILED: {e}")
            return 1
        same = f", per-task rewards equal to {args.same_as}" if args.same_as else ""
        print(
            f"train-ddp check: {folder}: OK: {figures['steps']} steps x {figures['world_size']} "
            f"ranks, {figures['games']} games, logged rewards == core's{same}; "
            f"losses {figures['losses']}"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
