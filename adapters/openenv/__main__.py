"""``python -m adapters.openenv --game othello --port 8000``: the OpenEnv server
(WebSocket sessions on ``/ws``, ``GET /health``), one uvicorn worker."""

from __future__ import annotations

import argparse

from core.games import game_arg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m adapters.openenv", description=__doc__)
    parser.add_argument(
        "--game",
        default="tictactoe",
        type=game_arg,
        help="the game reset() plays when it gets no task row",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=64,
        help="concurrent WebSocket sessions (one Episode each)",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=1800.0,
        help="idle seconds before a session is closed (0: never)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=16 * 1024 * 1024,
        help="largest HTTP body (413 above) and WebSocket message (an error reply above)",
    )
    args = parser.parse_args(argv)
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends

    import uvicorn

    from adapters.openenv.env import create_game_app

    app = create_game_app(
        args.game, args.max_sessions, args.session_timeout or None, args.max_body_bytes
    )
    from adapters.openenv.limits import WS_HARD_LIMIT_FACTOR

    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        ws_max_size=args.max_body_bytes * WS_HARD_LIMIT_FACTOR,
    )


if __name__ == "__main__":
    main()
