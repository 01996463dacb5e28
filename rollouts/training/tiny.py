"""A tiny local Qwen2-style model, its tokenizer, scripted games and a held-out evaluation.

Nothing comes from a model hub:

* the tokenizer is a byte-level BPE trained here (``tokenizers``) on game
  text rendered by core (system prompts, observations, replies, tool calls),
  laid out by TRL's own Qwen2.5 chat template (``trl.chat_template_utils``),
  which TRL knows how to parse tool calls for;
* the model is ``Qwen2ForCausalLM`` randomly initialised from a small config
  (about 0.2M parameters).

The training recipe that uses them is ``rollouts.training.recipe`` (``gamebridge
train recipe``); the TRL tests use the scripted games and :func:`evaluate`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollouts.model.tokenizer import (  # load_tokenizer: training and bench read it here
    TINY_MARKER,
    load_tokenizer,  # noqa: F401
)

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Qwen2.5's: pad, turn start, turn end (= eos)."""
ADDED_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<move>",
    "</move>",
    "<think>",
    "</think>",
)
"""Kept whole (not special: decoding keeps them)."""
TINY_CONFIG: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 192,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}


def _require() -> None:
    try:
        import tokenizers  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise ImportError("the tiny model needs TRL; install with: pip install -e '.[trl]'") from e


# --- scripted games ------------------------------------------------------------------------------
class ScriptedClient:
    """``ChatClient.complete`` answered in-process by the policy server's own
    ``PolicyModel`` (no HTTP: thousands of scripted turns in seconds)."""

    def __init__(self, policy: str, seed: int = 0) -> None:
        from rollouts.model.policy_server import PolicyModel

        self.model = PolicyModel(policy, seed)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **_: Any
    ) -> Any:
        from core.parsing import decode_tool_arguments
        from core.prompts import TOOL_NAME
        from rollouts.model.client import Completion, ToolCall

        answer = self.model.answer(messages, use_tool=bool(tools))
        if answer.arguments is not None:  # a make_move call's JSON text, decoded as ChatClient does
            call = ToolCall(
                id=answer.call_id,
                name=TOOL_NAME,
                arguments=decode_tool_arguments(answer.arguments),
                raw_arguments=answer.arguments,
            )
            return Completion(text="", tool_calls=(call,))
        return Completion(text=answer.text)

    def close(self) -> None:
        """Nothing to release."""


def scripted_records(tasks: Sequence[Any], policy: str, *, tools: bool, seed: int = 0) -> list[Any]:
    """Rollout records of ``tasks`` played by ``ScriptedPlayer(policy)`` through
    the reference core driver (``CoreDriver.run_task``)."""
    from rollouts.drivers.base import RunContext
    from rollouts.drivers.core import CoreDriver

    client = ScriptedClient(policy, seed)
    ctx = RunContext(base_url="in-process", model="scripted", api_key=None, client=client)  # type: ignore[arg-type]
    driver = CoreDriver(use_tools=tools)
    return [driver.run_task(task, ctx) for task in tasks]


def chat_rows(records: Sequence[Any], keep: set[str]) -> list[dict[str, Any]]:
    """SFT rows (``messages``, plus ``tools`` for tool-mode games) from records,
    through ``rollouts.evaluation.export`` (see ``rollouts.evaluation.export.normalize_messages``)."""
    from rollouts.evaluation.export import chat_row, export_rows

    by_id = {str(r.trajectory.get("task_id")): r for r in records}
    return [
        chat_row(row["messages"], game=row["game"], trajectory=by_id[row["task_id"]].trajectory)
        for row in export_rows(records, keep)
    ]


# --- tokenizer and model ---------------------------------------------------------------------
def _train_bpe(texts: Sequence[str], vocab_size: int) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # No word splitting: merges may span spaces, so the (highly repetitive) game text takes
    # few tokens and the tiny model sees short sequences. But every digit and every lone
    # X/O mark is a token of its own: cells, legal-move lists and moves stay readable
    # one symbol at a time (a merged "0, 3" token would hide the cells it names).
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\d|\b[XO]\b"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


PLAIN_CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}{% generation %}"
    "{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{%- else %}{{- message['content'] + '<|im_end|>' }}{%- endif %}"
    "{{- '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""Qwen2.5's turn format without its default system prompt and without tools
(``gamebridge train recipe``: a decision is the observation alone); the
replies are marked as generation (assistant-token masks for the loss)."""


DECISION_CHAT_TEMPLATE = (
    "{%- set ns = namespace(start=0) %}"
    "{%- for message in messages %}"
    "{%- if message['role'] in ['user', 'tool'] %}{%- set ns.start = loop.index0 %}{%- endif %}"
    "{%- endfor %}"
    "{%- for message in messages[ns.start:] %}"
    "{%- set role = 'user' if message['role'] == 'tool' else message['role'] %}"
    "{{- '<|im_start|>' + role + '\\n' }}"
    "{%- if role == 'assistant' %}{% generation %}"
    "{{- (message['content'] or '') + '<|im_end|>' }}{% endgeneration %}"
    "{%- else %}{{- (message['content'] or '') + '<|im_end|>' }}{%- endif %}"
    "{{- '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""The recipe's chat template: a decision is the last observation alone. It renders
the conversation from its last ``user`` or ``tool`` message on (a tool result as a user
turn), in :data:`PLAIN_CHAT_TEMPLATE`'s turn format, and drops the system prompt and
every earlier turn. So a recipe checkpoint reads the prompt it was trained on from any
server that applies its chat template to a framework's whole chat (``serve-policy
--context chat``, vLLM, any OpenAI-compatible server), and a one-decision SFT row
(observation, reply) renders exactly as with :data:`PLAIN_CHAT_TEMPLATE`. Not
prefix-preserving across turns (a later turn drops the earlier ones): a recipe model
is trained one decision at a time (``TextRollout(history="none")``)."""


def is_decision_model(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` carries :data:`DECISION_CHAT_TEMPLATE` (a recipe checkpoint:
    trained, and to be trained, one decision at a time)."""
    return getattr(tokenizer, "chat_template", None) == DECISION_CHAT_TEMPLATE


def _wrap(tok: Any, chat_template: str | None = None) -> Any:
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=chat_template or qwen2_5_chat_template,
    )
    fast.add_tokens(list(ADDED_TOKENS))
    return fast


def build_tokenizer(
    rows: Sequence[dict[str, Any]], vocab_size: int = 1024, chat_template: str | None = None
) -> Any:
    """A byte-level BPE tokenizer trained on ``rows`` (chat rows) as the chat
    template (default TRL's Qwen2.5) renders them (two passes: the first
    tokenizer only renders the template)."""
    _require()
    pieces = [str(m.get("content") or "") for row in rows for m in row["messages"]]
    first = _wrap(_train_bpe(pieces, 300), chat_template)
    texts = [
        first.apply_chat_template(
            row["messages"], tools=json.loads(row.get("tools") or "null"), tokenize=False
        )
        for row in rows
    ]
    return _wrap(_train_bpe(texts + pieces, vocab_size), chat_template)


def build_model(tokenizer: Any, seed: int = 0, **overrides: Any) -> Any:
    """A randomly initialised ``Qwen2ForCausalLM`` for ``tokenizer``."""
    _require()
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **{**TINY_CONFIG, **overrides},
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model


def model_copy(model: Any) -> Any:
    """An independent copy of ``model``: the same class built from its config, its weights
    and generation config loaded in. Not ``copy.deepcopy``: once a trainer has prepared a
    model, accelerate has set a ``forward`` of its own on the instance, a wrapper bound to
    that model, and a deep copy keeps it, so the copy computes with the original's weights
    (measured: a deep copy of the recipe's SFT student under a GRPO trainer gave the same
    logits after every copied weight was moved by 1). A module without a config (a test's
    stand-in) is deep-copied."""
    import copy

    if getattr(model, "config", None) is None:
        return copy.deepcopy(model)
    clone = type(model)(model.config)
    clone.load_state_dict(model.state_dict())
    clone.generation_config = copy.deepcopy(model.generation_config)
    return clone.to(model.device).train(model.training)


def save_tiny(
    model: Any,
    tokenizer: Any,
    path: str | Path,
    info: dict[str, Any] | None = None,
    *,
    max_new_tokens: int | None = None,
) -> Path:
    """Save a tiny model and its tokenizer (loadable with :func:`load_tokenizer`).
    ``max_new_tokens``: the reply limit the model was evaluated with, written into the
    folder's ``generation_config.json`` (the live model's config is left as it is), so
    ``serve-policy --model-path`` cuts a reply where the evaluation cut it (vLLM reads
    the same field as its default ``max_tokens``)."""
    out = Path(path)
    model.save_pretrained(out)
    if max_new_tokens is not None:
        import copy

        config = copy.deepcopy(model.generation_config)
        config.max_new_tokens = max_new_tokens
        config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / TINY_MARKER).write_text(json.dumps(info or {}, indent=2))
    return out


def keep_marker(source: str, target: str | Path) -> None:
    """Copy :data:`TINY_MARKER` from ``source`` to ``target`` when ``source`` is
    a tiny model folder (so a model trained from it loads the same way)."""
    marker = Path(source) / TINY_MARKER
    if marker.exists():
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / TINY_MARKER).write_text(marker.read_text())


# --- evaluation ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluation:
    """Held-out play, greedy decoding: share of replies that were legal moves,
    and results."""

    games: int
    replies: int
    legal_move_rate: float
    format_rate: float
    """Share of replies that were well formed (a ``<move>`` tag), legal or not."""
    win_rate: float
    draw_rate: float
    loss_rate: float
    mean_reward: float


def evaluate(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Any],
    *,
    max_new_tokens: int = 24,
    budget: int = 4096,
    temperature: float = 0.0,
    seed: int = 0,
) -> Evaluation:
    """Play ``tasks`` in text mode (``<move>`` tags) through the same game
    loop as training (``TextRollout.play``): greedy decoding by default, or
    sampling at ``temperature`` (seeded)."""
    import torch
    from transformers import GenerationConfig

    from rollouts.training.text_rollout import TextRollout

    sample = temperature > 0
    config = GenerationConfig(
        do_sample=sample,
        temperature=temperature if sample else None,
        top_k=0 if sample else None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_new_tokens=max_new_tokens,
    )
    torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    try:
        played = TextRollout(max_new_tokens).play(
            model, tokenizer, list(tasks), config, [tokenizer.eos_token_id], budget
        )
    finally:
        model.train(was_training)
    eps = played.episodes
    replies = sum(len(e.events) for e in eps)
    valid = sum(1 for e in eps for ev in e.events if ev["error"] is None)
    n = max(len(eps), 1)
    return Evaluation(
        games=len(eps),
        replies=replies,
        legal_move_rate=valid / max(replies, 1),
        format_rate=sum(1 for e in eps for ev in e.events if ev["format_ok"]) / max(replies, 1),
        win_rate=sum(e.result == "win" for e in eps) / n,
        draw_rate=sum(e.result == "draw" for e in eps) / n,
        loss_rate=sum(e.result == "loss" for e in eps) / n,
        mean_reward=sum(e.reward().total for e in eps) / n,
    )
