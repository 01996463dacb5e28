"""GRPO on a gamebridge game with TRL 1.16 (``gamebridge train grpo``).

Two hooks (``--mode``), the same tasks and the same core rubric:

* ``env_factory``: ``GRPOTrainer(environment_factory=environment_class(game))``;
  the model plays by calling the ``make_move`` tool; TRL runs the tool loop.
* ``rollout_func``: ``GRPOTrainer(rollout_func=TextRollout(...))``; the model
  plays with ``<move>`` tags; the rollout function runs ``core.Episode``.

Tasks come from ``core.tasks.make_tasks`` with ``num_groups`` difficulty strata
over ``[min_random_move_prob, max_random_move_prob]``; one generation batch is
``num_groups x num_generations`` games (each task is one GRPO group), and the
dataset is not shuffled so that every batch spans the whole range.

GPU defaults (:data:`GPU_DEFAULTS`): the source walkthrough found batches of
at least 256 games per optimizer update necessary for stability, so 32 groups
x 8 generations with per-device batch 32 and 8 accumulation steps; bf16. The
other values (lr 1e-6, temperature 1.0, 8192 completion tokens) are starting
points, not measured here (no GPU). Optional vLLM (``--vllm``, colocated; TRL
generates with it in ``env_factory`` mode). On CPU (``--cpu``) everything
also runs, slowly, with plain transformers generation.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, fields
from typing import Any

MODES = ("env_factory", "rollout_func")

GPU_DEFAULTS: dict[str, Any] = {
    "num_groups": 32,
    "num_generations": 8,
    "per_device_batch_size": 32,  # x 8 accumulation steps = 256 games per optimizer update
    "learning_rate": 1e-6,
    "temperature": 1.0,
    "max_completion_length": 8192,  # a whole Othello game (~10k characters without thinking)
    "bf16": True,
}
"""Written-down GPU settings: 256 games per update (the source walkthrough found
smaller batches unstable); lr and temperature are unmeasured starting points."""


@dataclass
class GRPOSettings:
    """Everything ``train_grpo`` needs (CLI flags are the field names)."""

    game: str = "tictactoe"
    """The game to train on (``core.games``)."""
    model: str = ""
    """A local folder or hub id (ignored when a model object is passed)."""
    mode: str = "env_factory"
    """TRL's hook: ``env_factory`` (``environment_factory``, tool calls) or ``rollout_func``
    (text replies, one reward column per core component)."""
    num_tasks: int = 1024
    """Training tasks (seeded, stratified over the random-move range)."""
    opponent: str = "minimax"
    """The built-in opponent: ``minimax`` (alpha-beta), ``mcts`` or ``random``."""
    depth: int = 2
    """The minimax opponent's search depth (Tic-Tac-Toe: 9 is the optimal opponent)."""
    opening_plies: int = -1
    """Random plies before the model's first turn (-1: core's default for the game)."""
    max_invalid_moves: int = -1
    """Task override: invalid replies allowed per game (-1: core's default; 0:
    strict, the first invalid reply forfeits, so no illegal reply ever shares
    a won game's advantage)."""
    min_random_move_prob: float = 0.0
    """The low end of the opponent's random-move probability range."""
    max_random_move_prob: float = 1.0
    """The high end of that range."""
    num_groups: int = 4
    """Difficulty groups per update (tasks spread over the random-move range)."""
    num_generations: int = 8
    """Games per task in a GRPO group (``GRPOConfig.num_generations``)."""
    per_device_batch_size: int = 0
    """0: the whole generation batch (num_groups x num_generations) in one step."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    learning_rate: float = 1e-6
    """The optimizer's learning rate."""
    lr_scheduler_type: str = "linear"
    """The learning-rate schedule over ``max_steps`` (TRL's default ``linear`` decays to 0;
    ``constant`` keeps it)."""
    max_steps: int = 100
    """Optimizer updates."""
    max_completion_length: int = 1024
    """``GRPOConfig.max_completion_length`` (tokens of a whole game's replies)."""
    max_new_tokens: int = 64
    """rollout_func: cap on one reply."""
    history: str = "auto"
    """rollout_func: what each reply is generated from: ``game`` (the whole chat so far, one
    token sequence per game), ``none`` (the current observation alone, one decision at a
    time: ``gamebridge train recipe`` models), ``auto`` (``none`` for a model whose chat
    template is the recipe's decision template, else ``game``)."""
    decisions_per_game: int = 1
    """rollout_func with history ``none``: decisions of each game trained (it must divide
    ``num_generations``: a GRPO group is then ``num_generations / decisions_per_game`` games)."""
    explore_epsilon: float = 0.0
    """rollout_func: epsilon-greedy exploration, the chance that a decision's reply is a
    uniformly drawn legal move instead of the model's sample (``TextRollout``)."""
    beta: float = 0.0
    """KL coefficient against the reference model (0: no reference model)."""
    loss_type: str = "dapo"
    """TRL's ``GRPOConfig.loss_type``: grpo, dr_grpo, dapo (TRL's default), bnpo,
    cispo (the seed course's loss), sapo, luspo, vespo."""
    epsilon_high: float = 0.0
    """Upper clip (0: TRL's default; cispo: 5.0 is the suggested value)."""
    lora: bool = False
    """Train LoRA adapters (peft) instead of the whole model."""
    lora_r: int = 16
    """LoRA rank."""
    vllm: bool = False
    """Generate with vLLM (GPU; docs/trl.md)."""
    vllm_mode: str = "colocate"
    """``colocate`` (vLLM inside each training process) or ``server`` (``trl vllm-serve``
    on its own GPUs; docs/trl.md, "More than one process")."""
    vllm_server_base_url: str = ""
    """Server mode: the ``trl vllm-serve`` address (empty: TRL's default, port 8000)."""
    bf16: bool = False
    """bfloat16 training (GPU)."""
    cpu: bool = False
    """Train on the CPU even when a GPU is there."""
    seed: int = 0
    """Task and training seed."""
    logging_steps: int = 1
    """Log every this many updates."""
    output_dir: str = "runs/grpo"
    """Where the trained model is saved."""
    shared_forward: bool = True
    """Score each distinct (prompt, completion) row of a batch once in the training forward
    and backward, and share its log-probabilities with its copies (``SharedForwardGRPOTrainer``).
    Exact (every copy's loss term and gradient is the same as if it were scored alone); pays
    where rows repeat, as one-decision rollouts of a small game do."""
    reward_weights: str = ""
    """The rubric's weights, e.g. ``win=1,format=0.2`` (core's components: win, margin,
    format, invalid; empty: core's defaults). They travel on every task, so the
    environment's reward and the per-component columns use the same ones."""


def staged_settings(
    *, updates: int, num_groups: int, max_new_tokens: int, **fields: Any
) -> GRPOSettings:
    """The settings of one CPU stage of text GRPO played a decision at a time (the
    recipe's RL stages, the self-play arms): ``updates`` optimizer updates of ``num_groups``
    tasks each, a constant learning rate, no KL term, the first invalid reply forfeiting
    and one reply's cap as the completion's; ``fields`` sets the rest (game, opponent,
    random-move range, generations, loss, learning rate, seed, output folder, ...)."""
    return GRPOSettings(
        **{
            "mode": "rollout_func",
            "num_tasks": updates * num_groups,
            "num_groups": num_groups,
            "max_steps": updates,
            "max_invalid_moves": 0,
            "lr_scheduler_type": "constant",
            "max_completion_length": max_new_tokens,
            "max_new_tokens": max_new_tokens,
            "beta": 0.0,
            "cpu": True,
            "logging_steps": max(1, updates // 5),
            **fields,
        }
    )


def make_train_tasks(s: GRPOSettings) -> list[Any]:
    """The training tasks (``core.tasks.make_tasks``, stratified by ``num_groups``)."""
    from core.tasks import make_tasks

    overrides: dict[str, Any] = {}
    if s.max_invalid_moves >= 0:
        overrides["max_invalid_moves"] = s.max_invalid_moves
    if s.reward_weights:
        overrides["reward_weights"] = s.reward_weights
    return make_tasks(
        s.num_tasks,
        seed=s.seed,
        game=s.game,
        min_random_move_prob=s.min_random_move_prob,
        max_random_move_prob=s.max_random_move_prob,
        num_groups=s.num_groups,
        opponent=s.opponent,
        depth=s.depth,
        opening_plies=None if s.opening_plies < 0 else s.opening_plies,
        **overrides,
    )


def check_settings(s: GRPOSettings) -> None:
    """Refuse (``ValueError``) settings that could not train, before anything loads."""
    if s.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {s.mode!r}")
    if not 0.0 <= s.explore_epsilon <= 1.0:
        raise ValueError(f"explore_epsilon must be in [0, 1], not {s.explore_epsilon!r}")
    if s.explore_epsilon and s.mode != "rollout_func":
        raise ValueError("explore_epsilon needs --mode rollout_func (TRL runs env_factory's tools)")


def grpo_config(s: GRPOSettings, *, progress: bool = True) -> Any:
    from trl import GRPOConfig

    from adapters.trl import reward_weights
    from core.rewards import parse_weights
    from core.tasks import Task

    check_settings(s)
    batch = s.num_groups * s.num_generations
    # Under `accelerate launch` (rollouts.training.ddp) each of WORLD_SIZE processes takes its
    # share: `batch` games per optimizer update in all, whatever the number of processes.
    world = int(os.environ.get("WORLD_SIZE", "1"))
    per_device = s.per_device_batch_size or max(1, batch // world)
    if batch % (per_device * world):
        raise ValueError(
            f"num_groups x num_generations ({batch}) must be a multiple of "
            f"per_device_batch_size ({per_device}) x processes ({world})"
        )
    return GRPOConfig(
        output_dir=s.output_dir,
        max_steps=s.max_steps,
        learning_rate=s.learning_rate,
        lr_scheduler_type=s.lr_scheduler_type,
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=batch // (per_device * world),
        num_generations=s.num_generations,
        temperature=s.temperature,
        beta=s.beta,
        loss_type=s.loss_type,
        **({"epsilon_high": s.epsilon_high} if s.epsilon_high > 0 else {}),
        max_completion_length=s.max_completion_length,
        # Each block of num_groups tasks spans the difficulty range: keep the order.
        shuffle_dataset=False,
        reward_weights=reward_weights(
            s.mode, parse_weights(s.reward_weights) if s.reward_weights else None
        ),
        # A finished game answers make_move with its final observation; stop a model that keeps calling.
        max_tool_calling_iterations=Task(game=s.game, opponent=s.opponent).turn_limit() + 1,
        use_vllm=s.vllm,
        vllm_mode=s.vllm_mode,
        vllm_server_base_url=s.vllm_server_base_url or None,
        use_cpu=s.cpu,
        bf16=s.bf16 and not s.cpu,
        fp16=False,
        gradient_checkpointing=False,
        logging_steps=s.logging_steps,
        save_strategy="no",
        report_to="none",
        seed=s.seed,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )


def build_trainer(
    s: GRPOSettings,
    *,
    model: Any = None,
    tokenizer: Any = None,
    rollout: Any = None,
    callbacks: list[Any] | None = None,
    progress: bool = True,
    tasks: list[Any] | None = None,
) -> Any:
    """A ready ``GRPOTrainer`` for the settings (``model``/``tokenizer`` objects
    override ``s.model``; ``rollout`` overrides the default ``TextRollout``; ``tasks``
    the training tasks, default :func:`make_train_tasks`)."""
    try:
        from trl import GRPOTrainer
    except ImportError as e:
        raise ImportError("GRPO needs TRL; install with: pip install -e '.[trl]'") from e

    from adapters.trl import environment_class, make_dataset, reward_functions
    from rollouts.training.sft import quiet_datasets
    from rollouts.training.text_rollout import TextRollout

    quiet_datasets(progress)
    args = grpo_config(s, progress=progress)
    if model is None:
        if not s.model:
            raise ValueError("give a model (a local folder or hub id)")
        model = s.model
    if tokenizer is None:
        from rollouts.training.tiny import load_tokenizer

        tokenizer = load_tokenizer(s.model)
    peft_config = None
    if s.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=s.lora_r, lora_alpha=2 * s.lora_r, target_modules="all-linear", task_type="CAUSAL_LM"
        )
    tools = s.mode == "env_factory"
    if rollout is None and not tools:
        rollout = TextRollout(
            s.max_new_tokens,
            history=resolve_history(s.history, tokenizer),
            decisions_per_game=s.decisions_per_game,
            explore_epsilon=s.explore_epsilon,
        )
    kwargs: dict[str, Any] = (
        {"environment_factory": environment_class(s.game)} if tools else {"rollout_func": rollout}
    )
    trainer_class = shared_forward_trainer() if s.shared_forward else GRPOTrainer
    return trainer_class(
        model=model,
        reward_funcs=reward_functions(),
        args=args,
        train_dataset=make_dataset(make_train_tasks(s) if tasks is None else tasks, tools=tools),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
        **kwargs,
    )


def shared_forward_trainer() -> Any:
    """``GRPOTrainer`` whose log-probability forward runs once per distinct row of the batch.

    A one-decision batch of a small game repeats itself: every game played as X opens on
    the same empty board, and a confident policy mostly answers it the same way. TRL scores
    each of the batch's rows with its own forward (and backward) pass; here the rows whose
    tokens and mask are identical are scored once, and the log-probabilities (and
    entropies) gathered back to every copy with an index, so autograd sums the copies'
    gradients into the one forward. Nothing else changes: advantages, clipping, the loss's
    normalisation and the logged metrics see the full batch. Exact for a model whose
    training forward is deterministic (no dropout, as the recipe's Qwen2); rows with
    images or other per-row inputs are scored as TRL scores them."""
    import torch
    from trl import GRPOTrainer

    plain = {"batch_size", "compute_entropy", "compute_aux_loss"}

    class SharedForwardGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
        def _get_per_token_logps_and_entropies(
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: int,
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            if args or any(v is not None for k, v in kwargs.items() if k not in plain):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
                )
            key = torch.cat([input_ids.masked_fill(attention_mask == 0, -1), attention_mask], 1)
            distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
            # (distinct rows, rows) of each scored batch: the benchmark reads them
            self.__dict__.setdefault("distinct_rows", []).append(
                (int(distinct.size(0)), int(key.size(0)))
            )
            if distinct.size(0) == key.size(0):
                return super()._get_per_token_logps_and_entropies(
                    model, input_ids, attention_mask, logits_to_keep, **kwargs
                )
            rows = torch.arange(key.size(0), device=key.device)
            first = torch.full(
                (distinct.size(0),), key.size(0), dtype=torch.long, device=key.device
            )
            first = first.scatter_reduce(0, inverse, rows, reduce="amin")
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(
                model, input_ids[first], attention_mask[first], logits_to_keep, **kwargs
            )
            return (
                logps[inverse],
                None if entropies is None else entropies[inverse],
                aux,
            )

    return SharedForwardGRPOTrainer


def resolve_history(history: str, tokenizer: Any) -> str:
    """``auto``: ``none`` for a recipe model (its chat template shows one decision), else
    ``game``."""
    from rollouts.training.tiny import is_decision_model

    if history == "auto":
        return "none" if is_decision_model(tokenizer) else "game"
    return history


def train_grpo(
    s: GRPOSettings,
    *,
    model: Any = None,
    tokenizer: Any = None,
    progress: bool = True,
    **kwargs: Any,
) -> Any:
    """Build the trainer, train, return it (the model is trained in place)."""
    trainer = build_trainer(s, model=model, tokenizer=tokenizer, progress=progress, **kwargs)
    trainer.train()
    return trainer


def add_arguments(p: argparse.ArgumentParser) -> None:
    from rollouts.training.flags import add_settings_arguments

    add_settings_arguments(
        p,
        GRPOSettings,
        choices={"mode": MODES, "history": ("auto", "game", "none")},
        types={"reward_weights": _weights},
        required=("model",),
    )
    p.add_argument(
        "--gpu-defaults",
        action="store_true",
        help="apply GPU_DEFAULTS (256 games per update, bf16) before the other flags' values",
    )


def _weights(text: str) -> str:
    """``--reward-weights``: checked by core's parser (a bad one is a usage error)."""
    from core.rewards import parse_weights

    if not text:
        return text  # core's defaults
    try:
        parse_weights(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def settings_from(args: argparse.Namespace) -> GRPOSettings:
    values = {f.name: getattr(args, f.name) for f in fields(GRPOSettings)}
    if getattr(args, "gpu_defaults", False):
        defaults = asdict(GRPOSettings())
        for key, value in GPU_DEFAULTS.items():
            if values[key] == defaults[key]:  # an explicit flag wins
                values[key] = value
    return GRPOSettings(**values)


def run(args: argparse.Namespace) -> int:
    s = settings_from(args)
    try:
        check_settings(s)
    except ValueError as e:
        import sys

        print(f"gamebridge train grpo: {e}", file=sys.stderr)
        return 2
    trainer = train_grpo(s)
    trainer.save_model(s.output_dir)
    from rollouts.training.tiny import keep_marker

    keep_marker(s.model, s.output_dir)
    print(f"saved the trained model to {s.output_dir}", flush=True)
    return 0
