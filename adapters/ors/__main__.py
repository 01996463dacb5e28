"""``python -m adapters.ors --port 8080``: the ORS server (openreward's FastAPI app,
``gamebridge`` environment, every game), one uvicorn worker on 127.0.0.1."""

from __future__ import annotations

import argparse
import os

from core import list_games


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m adapters.ors", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--games",
        default=",".join(list_games()),
        help="comma-separated games the splits list (a session's own task row may name any)",
    )
    parser.add_argument(
        "--tasks-per-game", type=int, default=32, help="tasks per game in each split"
    )
    parser.add_argument("--seed", type=int, default=0, help="make_tasks seed of the train split")
    parser.add_argument(
        "--max-sessions", type=int, default=256, help="live sessions at once (429 beyond)"
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=900.0,
        help="idle seconds before a session is deleted (at most 900: openreward's own reaper)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="largest request body (413 beyond)",
    )
    args = parser.parse_args(argv)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    unknown = sorted(set(games) - set(list_games()))
    if unknown or not games:
        parser.error(f"--games: unknown {unknown or games}; known: {', '.join(list_games())}")
    if not 0 < args.session_timeout <= 900:
        parser.error("--session-timeout must be in (0, 900]")
    if args.tasks_per_game < 1 or args.max_sessions < 1:
        parser.error("--tasks-per-game and --max-sessions must be >= 1")
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends
    # Before openreward is imported: no PyPI update check, warnings only in the log.
    os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")

    import uvicorn

    from adapters.ors.env import environment_class
    from adapters.ors.server import create_app

    env_cls = environment_class(games, args.tasks_per_game, args.seed)
    app = create_app(env_cls, args.max_sessions, args.session_timeout, args.max_body_bytes)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_keep_alive=60,
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
