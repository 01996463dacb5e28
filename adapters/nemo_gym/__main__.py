"""``python -m adapters.nemo_gym --game othello --port N [--style gymnasium|tools]``:
serve a gamebridge resources server without ``ng_run`` (uvicorn on 127.0.0.1)."""

from __future__ import annotations

from adapters._serve import launch, server_parser
from core.games import game_arg


def main(argv: list[str] | None = None) -> None:
    parser = server_parser(
        "python -m adapters.nemo_gym",
        __doc__,
        port=None,
        max_sessions=4096,
        sessions_help="live games at once (429 beyond)",
        session_timeout=1800.0,
        timeout_help="seconds before an idle, unfinished game is dropped",
        timeout_aliases=("--session-ttl",),
        max_body_bytes=32 * 1024 * 1024,
        body_help="largest request body (413 beyond)",
    )
    parser.add_argument(
        "--game",
        default="tictactoe",
        type=game_arg,
        help="game of rows that name none (a row's task.game wins)",
    )
    parser.add_argument("--style", default="gymnasium", choices=("gymnasium", "tools"))
    args = parser.parse_args(argv)

    settings = launch(args)
    import uvicorn

    from adapters.nemo_gym.server import build_app

    app = build_app(
        args.style,
        game=args.game,
        host=args.host,
        port=args.port,
        session_ttl_seconds=args.session_timeout,
        max_sessions=args.max_sessions,
        max_body_bytes=args.max_body_bytes,
    )
    uvicorn.run(app, **settings)


if __name__ == "__main__":
    main()
