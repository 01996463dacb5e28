"""``python -m adapters.nemo_gym --game othello --port N [--style gymnasium|tools]``:
serve a gamebridge resources server without ``ng_run`` (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import argparse

from core.games import game_arg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m adapters.nemo_gym", description=__doc__)
    parser.add_argument(
        "--game",
        default="tictactoe",
        type=game_arg,
        help="game of rows that name none (a row's task.game wins)",
    )
    parser.add_argument("--style", default="gymnasium", choices=("gymnasium", "tools"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=1800.0,
        help="seconds before an idle, unfinished game is dropped",
    )
    parser.add_argument(
        "--max-sessions", type=int, default=4096, help="live games at once (429 beyond)"
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=32 * 1024 * 1024,
        help="largest request body (413 beyond)",
    )
    args = parser.parse_args(argv)
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends

    import uvicorn

    from adapters.nemo_gym.server import build_app

    app = build_app(
        args.style,
        game=args.game,
        host=args.host,
        port=args.port,
        session_ttl_seconds=args.session_ttl,
        max_sessions=args.max_sessions,
        max_body_bytes=args.max_body_bytes,
    )
    uvicorn.run(
        app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )


if __name__ == "__main__":
    main()
