"""The OpenEnv entry point, laid out as ``openenv init`` lays one out.

* ``uvicorn server.app:app`` (``openenv.yaml``'s ``app``, ``openenv serve``): the app,
  serving ``GAMEBRIDGE_GAME`` (default ``tictactoe``) to resets that name no game;
* ``python -m server.app --host 0.0.0.0 --port 8000`` (the Docker image's ``CMD``):
  ``python -m adapters.openenv``'s options (``--game``, ``--max-sessions``, ...).

``ENABLE_WEB_INTERFACE=true`` adds OpenEnv's web interface at ``/web``.
"""

from __future__ import annotations

import os

from adapters.openenv.__main__ import main as _serve
from adapters.openenv.env import create_game_app

app = create_game_app(os.environ.get("GAMEBRIDGE_GAME", "tictactoe"))


def main(argv: list[str] | None = None) -> None:
    """Serve with uvicorn (``python -m adapters.openenv``'s command line)."""
    _serve(argv)


if __name__ == "__main__":
    main()
