"""``python -m adapters.ors --port 8080``: the ORS server (openreward's FastAPI app,
``gamebridge`` environment, every game), one uvicorn worker on 127.0.0.1."""

from __future__ import annotations

import os

from adapters._serve import launch, positive_int, server_parser
from core import list_games
from core.splits import split_games

ORS_REAPER_S = 900.0
"""openreward's own idle reaper (``adapters.ors.server.ORS_REAPER_S``, which imports
openreward: the launcher checks its flags before that import)."""


def main(argv: list[str] | None = None) -> None:
    parser = server_parser(
        "python -m adapters.ors",
        __doc__,
        port=8080,
        max_sessions=256,
        sessions_help="live sessions at once (429 beyond)",
        session_timeout=ORS_REAPER_S,
        timeout_help="idle seconds before a session is deleted (at most 900: openreward's "
        "own reaper)",
        max_body_bytes=16 * 1024 * 1024,
        body_help="largest request body (413 beyond)",
    )
    parser.add_argument(
        "--games",
        default=",".join(list_games()),
        help="comma-separated games the splits list (a session's own task row may name any)",
    )
    parser.add_argument(
        "--tasks-per-game", type=positive_int, default=32, help="tasks per game in each split"
    )
    parser.add_argument("--seed", type=int, default=0, help="make_tasks seed of the train split")
    args = parser.parse_args(argv)
    try:  # core's check of a split task set (environment_class makes it again)
        names = [g.strip() for g in args.games.split(",") if g.strip()]
        games = split_games(names, args.tasks_per_game)
    except ValueError as e:
        parser.error(f"--games: {e}")
    if not 0 < args.session_timeout <= ORS_REAPER_S:
        parser.error(f"--session-timeout must be in (0, {ORS_REAPER_S:g}]")
    # Before openreward is imported: no PyPI update check, warnings only in the log.
    os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")

    settings = launch(args, timeout_keep_alive=60)
    import uvicorn

    from adapters.ors.env import environment_class
    from adapters.ors.server import create_app

    env_cls = environment_class(games, args.tasks_per_game, args.seed)
    app = create_app(env_cls, args.max_sessions, args.session_timeout, args.max_body_bytes)
    uvicorn.run(app, **settings)


if __name__ == "__main__":
    main()
