"""Supervised warm-up with TRL's ``SFTTrainer`` on an exported dataset.

Input: the folder ``gamebridge export`` writes (``data.jsonl``, one row per
kept episode with a ``messages`` column in OpenAI chat format: system, user
observations, assistant replies; tool-mode games as assistant ``tool_calls``
to ``make_move`` answered by ``tool`` messages). :func:`chat_row` normalises a
row for training: tool-call arguments become objects (chat templates render
them with ``tojson``), tool-mode rows get a ``tools`` column with core's
``make_move`` schema (so the system prompt renders exactly as GRPO renders it)
and the game's final observation plus an empty assistant turn, so the model
also learns to stop calling the tool once the game is over.

Loss is on assistant tokens only (``assistant_only_loss``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollouts.evaluation.export import chat_row


def read_export(path: str | Path) -> list[dict[str, Any]]:
    """Rows of an export folder (``data.jsonl``) or a JSONL file."""
    p = Path(path)
    file = p / "data.jsonl" if p.is_dir() else p
    with open(file, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    *,
    output_dir: str,
    max_steps: int = 200,
    learning_rate: float = 2e-4,
    batch_size: int = 16,
    seed: int = 0,
    max_length: int = 2048,
    cpu: bool = True,
    progress: bool = True,
    assistant_only_loss: bool = True,
    lr_scheduler_type: str = "constant_with_warmup",
    warmup_steps: int | None = None,
    assistant_weight: float = 0.0,
) -> Any:
    """Fine-tune ``model`` in place on chat ``rows``; returns the trainer.
    ``assistant_only_loss=False`` trains on the whole sequence (prompt too);
    ``assistant_weight`` > 0 then adds that many times the replies' mean token
    loss to the sequence's (the replies are a few tokens of each row)."""
    try:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
    except ImportError as e:
        raise ImportError("SFT needs TRL; install with: pip install -e '.[trl]'") from e
    quiet_datasets(progress)
    args = SFTConfig(
        output_dir=output_dir,
        max_steps=max_steps,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=1,
        lr_scheduler_type=lr_scheduler_type,
        warmup_steps=min(10, max_steps // 10) if warmup_steps is None else warmup_steps,
        assistant_only_loss=assistant_only_loss or assistant_weight > 0,
        max_length=max_length,
        packing=False,
        seed=seed,
        logging_steps=max(1, max_steps // 10),
        save_strategy="no",
        report_to="none",
        use_cpu=cpu,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )
    trainer_class = SFTTrainer if assistant_weight <= 0 else _weighted_trainer(assistant_weight)
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(list(rows)),
        processing_class=tokenizer,
    )
    trainer.train()
    return trainer


def quiet_datasets(progress: bool) -> None:
    """``datasets``' progress bars (tokenizing, building labels, ...) follow ``progress``:
    without it a run's log is the run's figures, not thousands of bar redraws."""
    from datasets.utils.logging import disable_progress_bar, enable_progress_bar

    (enable_progress_bar if progress else disable_progress_bar)()


def _weighted_trainer(weight: float) -> Any:
    """An ``SFTTrainer`` whose loss is the whole sequence's mean token loss plus
    ``weight`` times the assistant tokens' (``labels`` hold the assistant mask)."""
    import torch
    from trl import SFTTrainer

    class WeightedSFTTrainer(SFTTrainer):  # type: ignore[misc]
        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            ids, mask, labels = inputs["input_ids"], inputs["attention_mask"], inputs["labels"]
            logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, :-1]
            nll = torch.nn.functional.cross_entropy(
                logits.float().reshape(-1, logits.size(-1)),
                ids[:, 1:].reshape(-1),
                reduction="none",
            ).view(ids.size(0), -1)
            seq = mask[:, 1:].to(nll.dtype)
            reply = (labels[:, 1:] != -100).to(nll.dtype)
            loss = (nll * seq).sum() / seq.sum().clamp(min=1)
            return loss + weight * (nll * reply).sum() / reply.sum().clamp(min=1)

    return WeightedSFTTrainer


def training_rows(
    exported: Sequence[dict[str, Any]], *, decision_model: bool = False
) -> list[dict[str, Any]]:
    """Training rows of exported episodes: one row per episode (:func:`chat_row`), or, for
    a model that reads one decision at a time (a recipe checkpoint, its chat template
    ``DECISION_CHAT_TEMPLATE``), one row per text decision: the observation as the only
    user turn and the reply (``core.conversation.decisions``), the format it was trained in."""
    if not decision_model:
        return [chat_row(r["messages"], game=r["game"]) for r in exported]
    from core.conversation import decisions

    return [
        {"messages": [{"role": "user", "content": o}, {"role": "assistant", "content": a}]}
        for r in exported
        for o, a in decisions(r["messages"])
    ]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="an export folder (data.jsonl) or a JSONL file")
    p.add_argument("--model", required=True, help="a local model folder or hub id (with tokenizer)")
    p.add_argument("--output-dir", default="runs/sft", help="where the trained model is saved")
    p.add_argument("--max-steps", type=int, default=200, help="optimizer updates")
    p.add_argument(
        "--learning-rate", type=float, default=2e-4, help="the optimizer's learning rate"
    )
    p.add_argument("--batch-size", type=int, default=16, help="rows per update")
    p.add_argument("--seed", type=int, default=0, help="shuffle and training seed")
    p.add_argument("--gpu", action="store_true", help="train on the GPU (default: CPU)")


def run(args: argparse.Namespace) -> int:
    from transformers import AutoModelForCausalLM

    from rollouts.training.tiny import is_decision_model, keep_marker, load_tokenizer

    tokenizer = load_tokenizer(args.model)
    rows = training_rows(read_export(args.data), decision_model=is_decision_model(tokenizer))
    model = AutoModelForCausalLM.from_pretrained(args.model)
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        seed=args.seed,
        cpu=not args.gpu,
    )
    model.save_pretrained(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)
    keep_marker(args.model, args.output_dir)
    print(f"saved the fine-tuned model to {args.output_dir}", flush=True)
    return 0
