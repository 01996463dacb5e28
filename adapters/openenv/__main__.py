"""``python -m adapters.openenv --game othello --port 8000``: the OpenEnv server
(WebSocket sessions on ``/ws``, ``GET /health``), one uvicorn worker."""

from __future__ import annotations

from adapters._serve import launch, server_parser
from adapters.openenv.limits import DEFAULT_MAX_BODY_BYTES, WS_HARD_LIMIT_FACTOR
from core.games import game_arg


def main(argv: list[str] | None = None) -> None:
    parser = server_parser(
        "python -m adapters.openenv",
        __doc__,
        port=8000,
        max_sessions=64,
        sessions_help="concurrent WebSocket sessions (one Episode each)",
        session_timeout=1800.0,
        timeout_help="idle seconds before a session is closed (0: never)",
        max_body_bytes=DEFAULT_MAX_BODY_BYTES,
        body_help="largest HTTP body (413 above) and WebSocket message (an error reply above)",
    )
    parser.add_argument(
        "--game",
        default="tictactoe",
        type=game_arg,
        help="the game reset() plays when it gets no task row",
    )
    args = parser.parse_args(argv)

    # uvicorn's default shutdown (no time limit) for its WebSocket sessions, as before.
    hard_limit = args.max_body_bytes * WS_HARD_LIMIT_FACTOR
    settings = launch(args, ws_max_size=hard_limit, timeout_graceful_shutdown=None)
    import uvicorn

    from adapters.openenv.env import create_game_app

    timeout = args.session_timeout or None
    app = create_game_app(args.game, args.max_sessions, timeout, args.max_body_bytes)
    uvicorn.run(app, **settings)


if __name__ == "__main__":
    main()
