"""Constrained decoding: each reply restricted to one of a set of texts, for transformers
``generate``.

The texts are given (the legal replies core lists for an observation:
``core.players.legal_replies``); this module holds no game rule. Each set is tokenized the
way the tokenizer writes the text alone (``add_special_tokens=False``, as the SFT rows'
replies and the exploration moves are tokenized) and kept as a token trie ending in the
end-of-turn token, so a constrained reply is exactly one of the texts followed by that
token. :class:`ReplyConstraint`, a logits processor, masks at each step every token that
leaves the trie of its row: the row's generated part starts after the batch's padded
prompt width (rows are left-padded), so it is read from there. A row with no set (None)
or already finished is left as it is. Where ``max_new_tokens`` would cut a text, the
steps that can still finish one within it are preferred.

It changes which reply comes out, not the model: greedy decoding takes the likeliest
allowed token at each step, sampling draws from the model's probabilities renormalized
over the allowed tokens. A legal-move rate measured with it says nothing about the
model's own legality; it is an option, and the reports that use it say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Node:
    """A token trie node: the next tokens and, for each, what follows; ``need`` is the
    fewest tokens (the end-of-turn token included) that finish a text from here."""

    __slots__ = ("children", "need")

    def __init__(self) -> None:
        self.children: dict[int, Node] = {}
        self.need = 0

    def insert(self, ids: Sequence[int]) -> None:
        node = self
        node.need = min(node.need, len(ids)) if node.children else len(ids)
        for depth, token in enumerate(ids, start=1):
            child = node.children.get(token)
            if child is None:
                child = node.children[token] = Node()
                child.need = len(ids) - depth
            else:
                child.need = min(child.need, len(ids) - depth)
            node = child

    def walk(self, ids: Sequence[int]) -> Node | None:
        """The node ``ids`` lead to; None when they leave the trie or go past its end."""
        node: Node | None = self
        for token in ids:
            if node is None or not node.children:
                return None
            node = node.children.get(token)
        return node


class ReplyTries:
    """The token tries of reply sets for one tokenizer, built once per distinct set (the
    token ids of each text cached too: Wordle's 11,392 replies are one set at every
    guess; a board game's sets are few per position). ``end_token_id``: the token that
    closes a reply (default the tokenizer's end of turn, ``eos_token_id``)."""

    CACHE = 4096
    """Distinct sets kept; the cache starts afresh beyond it."""

    def __init__(self, tokenizer: Any, end_token_id: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.end = tokenizer.eos_token_id if end_token_id is None else end_token_id
        if self.end is None:
            raise ValueError("constrained decoding needs an end-of-turn token (eos_token_id)")
        self._ids: dict[str, tuple[int, ...]] = {}
        self._tries: dict[tuple[str, ...], Node] = {}

    def token_ids(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """Each text's token ids, the end-of-turn token appended."""
        new = [t for t in dict.fromkeys(texts) if t not in self._ids]
        if new:
            encoded = self.tokenizer(new, add_special_tokens=False)["input_ids"]
            self._ids.update({t: (*ids, self.end) for t, ids in zip(new, encoded, strict=True)})
        return [self._ids[t] for t in texts]

    def trie(self, texts: Sequence[str]) -> Node:
        """The trie of ``texts`` (at least one)."""
        key = tuple(texts)
        trie = self._tries.get(key)
        if trie is None:
            if not key:
                raise ValueError("constrained decoding needs at least one reply to allow")
            trie = Node()
            for ids in self.token_ids(key):
                trie.insert(ids)
            if len(self._tries) >= self.CACHE:
                self._tries.clear()
            self._tries[key] = trie
        return trie

    def constraint(
        self, allowed: Sequence[Sequence[str] | None], prompt_width: int, max_new_tokens: int
    ) -> ReplyConstraint:
        """The logits processor for one ``generate`` call: row i's reply one of
        ``allowed[i]`` (None: unconstrained), its prompt padded to ``prompt_width``."""
        return ReplyConstraint(
            [None if a is None else self.trie(a) for a in allowed], prompt_width, max_new_tokens
        )


class ReplyConstraint:
    """A logits processor (``generate(logits_processor=LogitsProcessorList([...]))``):
    for each row with a trie, every token that does not continue one of its texts gets
    score ``-inf``."""

    def __init__(self, tries: Sequence[Node | None], prompt_width: int, max_new_tokens: int):
        self.tries = list(tries)
        self.width = prompt_width
        self.max_new_tokens = max_new_tokens

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        made = input_ids.shape[1] - self.width
        generated = input_ids[:, self.width :].tolist() if made else [[]] * len(self.tries)
        left = self.max_new_tokens - made
        rows: list[int] = []
        cols: list[int] = []
        for i, trie in enumerate(self.tries):
            node = None if trie is None else trie.walk(generated[i])
            if node is None or not node.children:  # unconstrained, or finished
                continue
            fits = [t for t, child in node.children.items() if 1 + child.need <= left]
            allowed = fits or list(node.children)
            rows += [i] * len(allowed)
            cols += allowed
        if not rows:
            return scores
        keep = torch.zeros(scores.shape, dtype=torch.bool, device=scores.device)
        keep[rows, cols] = True
        constrained = keep.any(dim=1, keepdim=True)
        return scores.masked_fill(constrained & ~keep, float("-inf"))


__all__ = ["Node", "ReplyConstraint", "ReplyTries"]
