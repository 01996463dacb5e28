"""The policy server's transformers backend: a trained checkpoint behind the
same endpoints as the scripted player (``gamebridge serve-policy --model-path``).

``TransformersModel.answer(messages, use_tool)`` is ``PolicyModel.answer``'s
twin: it returns the same ``Answer`` (text, or a ``make_move`` call with a
deterministic call id), so chat completions (JSON and SSE), the Responses API
and tool calls are answered exactly as the scripted backend answers them.

The model reads what it was trained on:

* ``context="observation"`` (default; ``gamebridge train recipe`` models): the
  last observation (the last user or tool message) as the only user turn;
* ``context="chat"``: the whole conversation through the tokenizer's chat
  template (system prompt, every turn; tool calls rendered as text).

Decoding is greedy by default (``temperature`` > 0 samples, seeded by the
conversation). A reply is cut at the checkpoint's own limit when its folder has one
(``generation_config.json``'s ``max_new_tokens``: the recipe writes the limit it
evaluated with, so a served reply is cut where the recipe's table cut it), else at
:data:`DEFAULT_MAX_NEW_TOKENS`. A request's own ``temperature``, ``top_p``, ``max_tokens`` (or
``max_completion_tokens``, ``max_output_tokens``) and ``seed`` are honoured, as
an OpenAI server honours them: a request that sets ``temperature`` > 0 without
a ``seed`` samples afresh each time; out-of-range values are a 400. Usage
counts the model's tokens, and a reply cut at its token limit finishes with
``length``. In tool mode the reply's ``<move>`` tag becomes the call's
``move`` argument (core's parser reads it); a reply without one is passed on
as it is, for the game to reject, as a model's bad tool argument would be.
Generation runs under a lock: one request at a time (CPU).

``constrained=True`` (``serve-policy --constrained-decoding``, an option): every reply is
one of the legal replies core lists for the conversation's last observation
(``core.players.legal_replies``, the game found from the system prompt as a scripted
player finds it), by the token trie of ``rollouts.model.constrained``; ``/health`` and
the start line name it, since the replies are then not the model's alone.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

CONTEXTS = ("observation", "chat")
DEFAULT_MAX_NEW_TOKENS = 24
"""A reply's token limit when neither the checkpoint nor the request sets one."""


class ModelPathError(ValueError):
    """The model folder is missing or holds no model."""


class TransformersModel:
    """A causal LM checkpoint answering like ``PolicyModel``."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        context: str = "observation",
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        threads: int = 1,
        constrained: bool = False,
    ) -> None:
        if context not in CONTEXTS:
            raise ValueError(f"context must be one of {CONTEXTS}, not {context!r}")
        if not 0.0 <= temperature <= 10.0:
            raise ValueError(f"temperature must be in [0, 10], not {temperature!r}")
        path = Path(model_path)
        if not path.exists():
            raise ModelPathError(f"{path}: no such model folder")
        if not (path / "config.json").is_file():
            raise ModelPathError(f"{path} is not a model folder (no config.json)")
        try:
            import torch
            from transformers import AutoModelForCausalLM
        except ImportError as e:
            raise ImportError(
                "the transformers backend needs torch and transformers; "
                "install with: pip install -e '.[trl]'"
            ) from e
        from rollouts.model.tokenizer import load_tokenizer

        torch.set_num_threads(threads)
        self.torch = torch
        try:
            self.tokenizer = load_tokenizer(str(path))
            self.model = AutoModelForCausalLM.from_pretrained(str(path))
        except (OSError, ValueError, KeyError, TypeError) as e:  # a folder transformers cannot read
            why = " ".join(str(e).split())[:300] or type(e).__name__
            raise ModelPathError(f"{path}: cannot load the model ({why})") from None
        if getattr(self.tokenizer, "chat_template", None) is None:
            raise ModelPathError(f"{path}: the tokenizer has no chat template to render a chat")
        self.model.eval()
        self.model_path = str(path)
        self.model_name = model_name or str(model_path)
        self.policy = f"model:{path}" + (", constrained to legal moves" if constrained else "")
        self.constrained = constrained
        self._tries: Any = None
        self.context = context
        self.temperature = temperature
        self.max_new_tokens = (
            max_new_tokens
            or getattr(self.model.generation_config, "max_new_tokens", None)
            or DEFAULT_MAX_NEW_TOKENS
        )
        self._lock = threading.Lock()
        self.seed = None  # /health reports it (the scripted backend's seed)

    samples = True
    """The chat and Responses APIs pass a request's sampling settings to :meth:`answer`."""

    def prompt(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The chat the model reads for ``messages``."""
        from rollouts.model.policy_server import RequestError

        if self.context == "chat":
            return [
                {
                    "role": "system" if m["role"] == "developer" else m["role"],
                    "content": m.get("content") or "",
                }
                for m in messages
            ]
        for m in reversed(messages):
            if m["role"] in ("user", "tool"):
                return [{"role": "user", "content": m.get("content") or ""}]
        raise RequestError(
            "the conversation has no observation (user or tool message) to answer",
            status=422,
            code="unplayable_conversation",
        )

    def legal(self, messages: list[dict[str, Any]]) -> list[str]:
        """The legal replies to the conversation's last observation (core's
        ``legal_replies``; the game named by its system prompt)."""
        from core.players import ConversationError, identify_game, legal_replies, message_text
        from rollouts.model.policy_server import RequestError

        system = "\n".join(
            message_text(m) for m in messages if m.get("role") in ("system", "developer")
        )
        seen = [message_text(m) for m in messages if m.get("role") in ("user", "tool")]
        try:
            game = identify_game(system or (seen[0] if seen else ""))
            if not seen:
                raise ConversationError("no observation to read the board from")
            return legal_replies(game, seen[-1])
        except ConversationError as e:
            raise RequestError(
                f"constrained decoding cannot list the legal moves: {e}",
                status=422,
                code="unplayable_conversation",
            ) from None

    def generate(
        self,
        chat: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        legal: list[str] | None = None,
    ) -> tuple[str, int, int, bool]:
        """The model's reply text to ``chat``, the prompt's and the reply's token
        counts, and whether the reply was cut at ``max_tokens``. ``temperature``
        ``None``: the server's; a sampled reply is seeded by ``seed`` and the
        conversation, or (a request's temperature, no seed) afresh. ``legal``: the
        replies allowed (constrained decoding), else None."""
        torch = self.torch
        tok = self.tokenizer
        ids = tok.apply_chat_template(
            chat, tokenize=True, add_generation_prompt=True, return_dict=False
        )
        digest = hashlib.sha256(json.dumps([seed, chat], sort_keys=True).encode()).digest()
        temp = self.temperature if temperature is None else temperature
        sample = temp > 0
        limit = self.max_new_tokens if max_tokens is None else max_tokens
        extra: dict[str, Any] = {}
        if legal is not None:
            from transformers import LogitsProcessorList

            from rollouts.model.constrained import ReplyTries

            if self._tries is None:
                self._tries = ReplyTries(tok)
            constraint = self._tries.constraint([legal], len(ids), limit)
            extra["logits_processor"] = LogitsProcessorList([constraint])
        with self._lock, torch.no_grad():
            if sample and (seed is not None or temperature is None):
                torch.manual_seed(int.from_bytes(digest[:8], "big") % 2**63)
            elif sample:
                torch.seed()  # a request's temperature without a seed: fresh samples
            out = self.model.generate(
                input_ids=torch.tensor([list(ids)]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                do_sample=sample,
                temperature=temp if sample else None,
                top_k=0 if sample else None,
                top_p=top_p if sample and top_p is not None else None,
                max_new_tokens=limit,
                eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id,
                **extra,
            )
        reply = out[0, len(ids) :].tolist()
        ended = bool(reply) and reply[-1] == tok.eos_token_id
        count = len(reply)
        if tok.pad_token_id is not None and tok.pad_token_id != tok.eos_token_id:
            count -= reply.count(tok.pad_token_id)
        cut = not ended and count >= limit
        # The text as generated (no strip), as the recipe's evaluation reads it.
        return tok.decode(reply, skip_special_tokens=True), len(ids), count, cut

    def answer(self, messages: list[dict[str, Any]], use_tool: bool, **options: Any) -> Any:
        """The model's ``Answer`` (``rollouts.model.policy_server.Answer``);
        ``options``: a request's sampling settings (:meth:`generate`'s keywords)."""
        from core.parsing import TOOL_ARGUMENT, FormatError, parse_reply
        from rollouts.model.policy_server import Answer, _digest

        legal = self.legal(messages) if self.constrained else None
        text, prompt_tokens, tokens, cut = self.generate(
            self.prompt(messages), **options, legal=legal
        )
        convo = tuple((m["role"], m.get("content") or "") for m in messages)
        call_id = "call_" + _digest("call", self.model_path, convo)
        if use_tool:
            try:
                move = parse_reply(text).move
            except FormatError:
                move = text
            # The call's arguments as the JSON text a model writes: {"move": ...}.
            arguments = json.dumps({TOOL_ARGUMENT: move})
            return Answer("", arguments, call_id, prompt_tokens, tokens, cut)
        return Answer(text, None, call_id, prompt_tokens, tokens, cut)
