"""Request limits for the NeMo Gym resources servers.

Both server styles add ``BodyLimitMiddleware`` (shared with the OpenEnv server,
``adapters/_asgi.py``) in ``setup_webserver``, so ``ng_run`` gets it too:
413 over ``max_body_bytes``, 400 for a JSON body holding a lone UTF-16 surrogate.
"""

from __future__ import annotations

from adapters._asgi import BodyLimitMiddleware

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body: ``/verify`` carries the model's whole episode (every turn's
output, reasoning included), so the limit is generous; it bounds memory, nothing else."""

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyLimitMiddleware"]
