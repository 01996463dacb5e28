"""A model folder's tokenizer, as the transformers backend and training load it.

The tiny models ``rollouts.training.tiny`` trains here carry :data:`TINY_MARKER`
beside their weights: their tokenizer loads as a plain ``PreTrainedTokenizerFast``.
Any other folder or hub id loads through ``AutoTokenizer``. Both left-padded (batched
generation). Here, in the model wing, so the policy server's transformers backend reads
it without reaching up into training; ``rollouts.training.tiny`` re-exports both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY_MARKER = "gamebridge_tiny.json"
"""Written beside a saved tiny model: its tokenizer must load as a plain
``PreTrainedTokenizerFast`` (``AutoTokenizer`` would pick Qwen2's class for a
``qwen2`` config and replace the pre-tokenizer the BPE was trained with)."""


def load_tokenizer(name_or_path: str) -> Any:
    """The tokenizer of a model folder or hub id, left-padded (tiny models: see :data:`TINY_MARKER`)."""
    if (Path(name_or_path) / TINY_MARKER).exists():
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast.from_pretrained(name_or_path, padding_side="left")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name_or_path, padding_side="left")
