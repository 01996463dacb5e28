"""Seeds derived from stable digests, never from ``hash()`` or global state.

``hash()`` of a string changes with PYTHONHASHSEED and the global ``random``
is shared by everything in the process, so every random choice in gamebridge
comes from a ``random.Random`` built here from the task seed and a context
(a purpose string, a position).
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from the ``repr`` of ``parts`` (ints, strs, tuples of
    them: types whose repr is stable across processes and hash seeds)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def derive_rng(*parts: object) -> random.Random:
    """A fresh ``random.Random`` seeded by ``derive_seed(*parts)``."""
    return random.Random(derive_seed(*parts))
