"""``gamebridge play``: play any game against the opponents or a model, watch a
model play, replay runs — in the browser (a local web page) or the terminal.

The CLI hook is :func:`add_parser` (one line in ``rollouts.cli.PLUGINS``);
the page's server is :mod:`rollouts.play.app`, the game logic
:mod:`rollouts.play.session` (every turn through ``core.Episode``), the
replays :mod:`rollouts.play.replay`, the terminal mode
:mod:`rollouts.play.terminal`.
"""

from __future__ import annotations

import argparse

DEFAULT_PORT = 8765
"""The port ``gamebridge play`` listens on; the HTML report's replay links here."""


def add_parser(parser: argparse.ArgumentParser) -> None:
    """play a game against an opponent or a model, watch a model, replay runs (web page)"""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help="default %(default)s; 0 picks a free one"
    )
    parser.add_argument(
        "--runs",
        action="append",
        type=_runs_dir,
        default=None,
        help="directory of records the replay may open (repeatable; default runs)",
    )
    parser.add_argument(
        "--base-url", default=None, help="an OpenAI-compatible endpoint to offer as a model"
    )
    parser.add_argument("--model", default=None, help="the model name at --base-url")
    parser.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY")
    parser.add_argument(
        "--model-path",
        default=None,
        help="a trained checkpoint to offer as a model, loaded here "
        "(the transformers backend of serve-policy --model-path)",
    )
    parser.add_argument(
        "--context",
        choices=("observation", "chat"),
        default=None,
        help="--model-path: the last observation alone (default; recipe models) or the whole chat",
    )
    parser.add_argument(
        "--constrained-decoding",
        action="store_true",
        help="--model-path, an option: its replies restricted to the legal moves core lists "
        "(its name in the Model list says so)",
    )
    parser.add_argument("--max-sessions", type=int, default=32, help="open games at once")
    parser.add_argument(
        "--idle-timeout", type=float, default=1800.0, help="seconds before an idle game is dropped"
    )
    term = parser.add_argument_group("terminal mode (--terminal)")
    term.add_argument("--terminal", action="store_true", help="play in the terminal, no browser")
    term.add_argument(
        "--game",
        default="tictactoe",
        type=_game,
        help="a game of core.list_games() (connect_four, nim, othello, tictactoe, wordle), "
        "or openspiel:NAME (e.g. openspiel:tic_tac_toe)",
    )
    term.add_argument("--side", type=int, default=0, help="your side: 0 moves first")
    term.add_argument(
        "--against",
        choices=("opponent", "model"),
        default="opponent",
        help="the built-in opponent or the model (scripted --policy, --base-url or --model-path)",
    )
    term.add_argument(
        "--opponent",
        choices=("minimax", "random", "mcts"),
        default=None,
        help="the built-in opponent (default: minimax, or mcts for an OpenSpiel game)",
    )
    term.add_argument("--depth", type=int, default=2, help="its search depth (mcts: its level)")
    term.add_argument("--rmp", type=float, default=0.0, help="opponent random-move probability")
    term.add_argument(
        "--policy",
        default="minimax:2",
        type=_policy,
        help="the scripted model's policy: random | minimax:D | noisy:P[/minimax:D]",
    )
    term.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=run)


def _port(text: str) -> int:
    """``--port``: 0..65535 (else one line, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def _runs_dir(text: str) -> str:
    """``--runs``: a directory that exists (else one line, exit 2)."""
    from pathlib import Path

    path = Path(text)
    if not path.is_dir():
        why = "not a directory" if path.exists() else "no such directory"
        raise argparse.ArgumentTypeError(f"{text}: {why}")
    return text


def _game(text: str) -> str:
    from core.games import game_arg

    return game_arg(text)


def _policy(text: str) -> str:
    from core.players import Policy

    try:
        Policy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def run(args: argparse.Namespace) -> int:
    import sys

    problem = _usage_problem(args)
    if problem is None and args.model_path:
        from pathlib import Path

        from rollouts.play.session import CheckpointModel, PlayError

        if (Path(args.model_path) / "config.json").is_file():  # else the error says why
            print(f"gamebridge play: loading the model in {args.model_path}", file=sys.stderr)
        try:
            args.checkpoint = CheckpointModel.load(
                args.model_path,
                context=args.context or "observation",
                constrained=args.constrained_decoding,
            )
        except PlayError as e:
            problem = str(e)
    if problem is not None:
        print(f"gamebridge play: {problem}", file=sys.stderr)
        return 2
    if args.terminal:
        from rollouts.play.terminal import run_terminal

        return run_terminal(args)
    return serve(args)


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What makes no sense in the flags (one line), else None."""
    if args.base_url and not args.model:
        return "--base-url needs --model"
    if args.model_path and args.base_url:
        return "--model-path and --base-url each name the model: give one"
    if not args.model_path:
        for flag, given in (
            ("--constrained-decoding", args.constrained_decoding),
            ("--context", args.context is not None),
        ):
            if given:
                return f"{flag} needs --model-path"
        return None
    if args.terminal and args.against != "model":
        return "--model-path is a model to play against: add --against model"
    return None


def serve(args: argparse.Namespace) -> int:
    """Run the page's server in the foreground; prints its URL once listening."""
    import socket
    import sys
    from pathlib import Path

    from rollouts.model.servers import serve_in_foreground
    from rollouts.play.app import Endpoint, create_app

    endpoint = Endpoint(args.base_url, args.model, args.api_key) if args.base_url else None
    runs = [Path(p) for p in (args.runs or ["runs"])]
    app = create_app(
        runs=runs,
        endpoint=endpoint,
        checkpoint=getattr(args, "checkpoint", None),
        cap=args.max_sessions,
        idle_seconds=args.idle_timeout,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        import errno

        why = (
            "the port is busy (another server?); pick another with --port (0 picks a free one)"
            if e.errno == errno.EADDRINUSE
            else e.strerror or str(e)
        )
        print(f"gamebridge play: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 2
    sock.listen(128)
    port = sock.getsockname()[1]
    serve_in_foreground(app, sock, f"gamebridge play: http://{args.host}:{port}/", "warning")
    return 0
