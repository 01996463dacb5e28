"""GRPO through TRL's own OpenReward bridge (``trl.experimental.openreward``) against
the gamebridge ORS server: a client nobody here wrote.

    python -m rollouts.training.ors --url http://127.0.0.1:8080 --model runs/tiny/model

``--tiny`` builds the tiny local model instead (``rollouts.training.tiny``: a short supervised
warm-up on scripted tool-call games), so it all runs on a CPU. The dataset, the
environment factory and the reward function are ``OpenRewardSpec``'s
(``adapters.ors.openreward_spec`` sets ``OPENREWARD_SESSION_URL`` first: without it
the SDK sends sessions to ``sessions.127.0.0.1``).

After training, each rollout of the last generation batch is checked against core:
its session's trajectory (the final ``ToolOutput.metadata``) replays through
``core.Episode`` to the reward TRL recorded, and TRL's logged mean reward of that
step is the mean of core's totals. A rollout the model ended without finishing the
game (no more tool calls) has no ORS reward with ``--reward spec`` (TRL's own
``reward_funcs``: its bridge never calls the ``@terminal`` tool, so such a rollout
scores ``None``); the default ``--reward settled`` (:func:`settled_reward`, here)
calls it, as an ORS harness would, so core settles the game. Prints the figures as
JSON (``--out`` writes them too).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

REWARD_COLUMNS = {
    "spec": "rewards/_outcome_only_reward_func/mean",
    "settled": "rewards/settled_reward/mean",
}
"""The column TRL logs for each ``--reward``."""


def _last_text(completion: Any) -> str:
    """The text of the last assistant message of a TRL completion (a message list)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if message.get("role") == "assistant":
            content = message.get("content") or ""
            return content if isinstance(content, str) else ""
    return ""


def settled_reward(environments: list[Any], completions: list[Any], **_: Any) -> list[float | None]:
    """A reward function for ``OpenRewardSpec`` rollouts that ORS itself would score.

    TRL's bridge ends a rollout when the model answers without a tool call, but never
    routes that answer into the environment's ``@terminal`` tool, as ORS harnesses
    do; an unfinished game then has no reward (``None``). This calls the terminal tool
    (with the model's last text, should it take one: gamebridge's takes none and
    core settles the game, scored like a turn cap), so every rollout gets core's
    reward. It reaches into TRL's rollout
    environment (``_session``, ``_call_ors_tool``, TRL 1.16) for the session."""
    rewards: list[float | None] = []
    for env, completion in zip(environments, completions, strict=True):
        if env.reward is None and not env.finished and env._session is not None:
            terminal = env._session.terminal_tool()
            if terminal is not None:
                arguments = {} if terminal.arg is None else {terminal.arg: _last_text(completion)}
                env._call_ors_tool(terminal.name, arguments)
        rewards.append(env.reward)
    return rewards


def build_tiny(output_dir: str, sft_games: int = 100, sft_steps: int = 80) -> tuple[Any, Any]:
    """The tiny model, warmed up on scripted tool-call games to call ``make_move``
    (``rollouts.training.tiny``: a local tokenizer and a random Qwen2; no hub download)."""
    from core.tasks import make_tasks
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import build_model, build_tokenizer, chat_rows, scripted_records

    tasks = make_tasks(sft_games, seed=1, num_groups=1, opponent="random")
    rows = chat_rows(scripted_records(tasks, "minimax:9", tools=True), {"win", "draw"})
    noisy = chat_rows(
        scripted_records(tasks[:32], "noisy:0.5/minimax:1", tools=True), {"win", "draw", "loss"}
    )
    tokenizer = build_tokenizer(rows + noisy)
    model = build_model(tokenizer)
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=output_dir,
        max_steps=sft_steps,
        learning_rate=3e-3,
        progress=False,
    )
    return model, tokenizer


def check_against_core(environments: list[Any], logged_mean: float | None) -> dict[str, Any]:
    """Replay each finished rollout's trajectory in core; compare with TRL's rewards."""
    from core.episode import Episode

    finished, mismatches, totals = 0, [], []
    for i, env in enumerate(environments):
        metadata = [m for m in env.metadata if m and "trajectory" in m]
        if env.reward is None or not metadata:
            continue
        finished += 1
        replayed = Episode.from_trajectory(metadata[-1]["trajectory"])
        total = replayed.reward().total
        totals.append(total)
        if replayed.to_dict() != metadata[-1]["trajectory"] or not math.isclose(env.reward, total):
            mismatches.append(i)
    core_mean = sum(totals) / len(totals) if totals else None
    return {
        "rollouts": len(environments),
        "finished": finished,
        "mismatches": mismatches,
        "core_mean_reward": core_mean,
        "trl_logged_mean_reward": logged_mean,
        "logged_equals_core": (
            logged_mean is not None
            and core_mean is not None
            and math.isclose(logged_mean, core_mean, rel_tol=1e-5, abs_tol=1e-6)
        ),
    }


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from adapters.ors import openreward_spec
    from core.tasks import Task

    torch.set_num_threads(1)
    if args.tiny:
        model, tokenizer = build_tiny(
            str(Path(args.output_dir) / "tiny"), args.sft_games, args.sft_steps
        )
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    spec = openreward_spec(args.url, split=args.split, num_tasks=args.num_tasks)
    game = spec.train_dataset[0]["game"]
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=args.num_generations * args.groups,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=Task(game=game).turn_limit() + 1,
        shuffle_dataset=False,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=spec.train_dataset,
        environment_factory=spec.environment_factory,
        reward_funcs=spec.reward_funcs if args.reward == "spec" else settled_reward,
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    logged = logs[-1].get(REWARD_COLUMNS[args.reward]) if logs else None
    figures = {
        "steps": len(logs),
        "losses": [h["loss"] for h in logs],
        "logged_rewards": [h.get(REWARD_COLUMNS[args.reward]) for h in logs],
        **check_against_core(list(trainer.environments), logged),
    }
    for env in trainer.environments:
        env._close()  # TRL leaves the last batch's sessions open
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rollouts.training.ors", description=__doc__)
    parser.add_argument("--url", required=True, help="the ORS server (python -m adapters.ors)")
    parser.add_argument("--model", default="", help="a local model folder (or use --tiny)")
    parser.add_argument("--tiny", action="store_true", help="build the tiny local model")
    parser.add_argument("--sft-games", type=int, default=100, help="--tiny: warm-up games")
    parser.add_argument("--sft-steps", type=int, default=80, help="--tiny: warm-up steps")
    parser.add_argument("--split", default="tictactoe-train")
    parser.add_argument(
        "--reward",
        default="settled",
        choices=sorted(REWARD_COLUMNS),
        help="settled: settled_reward (this module: calls the @terminal tool); spec: OpenRewardSpec.reward_funcs",
    )
    parser.add_argument("--num-tasks", type=int, default=4)
    parser.add_argument("--groups", type=int, default=2, help="tasks per generation batch")
    parser.add_argument("--num-generations", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="runs/train-ors")
    parser.add_argument("--out", default=None, help="write the figures JSON here too")
    args = parser.parse_args(argv)
    if not args.tiny and not args.model:
        parser.error("give --model PATH or --tiny")
    figures = train(args)
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0 if figures["logged_equals_core"] and not figures["mismatches"] else 1


if __name__ == "__main__":
    sys.exit(main())
