"""gamebridge rollouts: policy server, model client, per-framework drivers,
eval/compare summaries, HTML reports, dataset export and the ``gamebridge`` CLI.

Nothing here holds a game rule, a prompt or a reward formula: those live in
``core``. Third-party packages (fastapi, httpx, tqdm, ...) are imported by the
modules that need them, so ``import rollouts`` stays cheap.
"""
