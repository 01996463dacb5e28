"""NeMo Gym adapter: core.Episode as NeMo Gym resources servers.

* ``server.GameGymnasiumServer`` — a ``resources_servers.gymnasium`` server:
  ``/reset`` + ``/step`` with text replies (``<move>`` tags), driven by NeMo
  Gym's own ``gymnasium_agent``.
* ``server.GameToolsServer`` — a ``SimpleResourcesServer``: ``/seed_session``
  takes the task, the model plays through a ``/make_move`` tool, ``/verify``
  returns the engine's reward with its breakdown and the trajectory.
* ``agent`` — starts NeMo Gym's real ``GymnasiumAgent`` without ``ng_run``.
* ``rows.make_row(task, style)`` — a NeMo Gym dataset row (JSONL line) for a
  task; it needs core only, so callers outside ``.venv-nemo`` can use it.

NeMo Gym needs Python >= 3.12: run the servers from ``.venv-nemo``
(``python -m adapters.nemo_gym --port N``). Importing this package does not
import NeMo Gym.
"""
