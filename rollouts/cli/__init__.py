"""The ``gamebridge`` command line.

Subcommands: ``serve-policy``, ``eval``, ``compare``, ``export``, ``demo``, ``arena``,
plus any listed in :data:`PLUGINS`. Adding one is one line there:
``"train": "rollouts.training.cli:add_parser"``, where ``add_parser(parser)`` adds
its arguments to the given ``argparse`` parser and calls
``parser.set_defaults(func=run)`` with ``run(args) -> int``. Heavy imports
belong inside ``run``, so ``gamebridge --help`` stays fast.

The CLI parses and calls: what ``compare``, ``demo`` and ``eval`` run is
``rollouts.evaluation.compare``. Bad input (an unknown game or framework, a bad
policy, ``-n 0``, a missing ``--in`` file, a busy port, a missing extra) is one
line on stderr and exit status 2; a misspelt flag shows its subcommand's usage.

This package holds :func:`main` and the parser; each command sits in its own
module: ``serve`` (serve-policy), ``evaluate`` (eval, compare, demo), ``export``,
``arena``. ``args`` holds the parser's parts and argument types, ``common`` what
the commands share when they run (output, interrupts, the endpoint check).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from rollouts.cli.arena import ARENA_GAMES, ARENA_PLAYERS, _add_arena
from rollouts.cli.args import (
    DEFAULT_COMPARE_POLICY,
    DEFAULT_EVAL_POLICY,
    DEMO_GAMES,
    DEMO_POLICY,
    FRAMEWORK_ALIASES,
    OPPONENT_CHOICES,
    POLICY_HELP,
    HelpFormatter,
    Parser,
    _framework,
)
from rollouts.cli.common import UsageError, _err
from rollouts.cli.evaluate import _add_compare, _add_demo, _add_eval
from rollouts.cli.export import _add_export
from rollouts.cli.serve import _add_serve

__all__ = [
    "ARENA_GAMES",
    "ARENA_PLAYERS",
    "COMMANDS",
    "DEFAULT_COMPARE_POLICY",
    "DEFAULT_EVAL_POLICY",
    "DEMO_GAMES",
    "DEMO_POLICY",
    "FRAMEWORK_ALIASES",
    "OPPONENT_CHOICES",
    "PLUGINS",
    "POLICY_HELP",
    "HelpFormatter",
    "Parser",
    "UsageError",
    "_framework",
    "build_parser",
    "main",
]

PLUGINS: dict[str, str] = {
    # "name": "module:add_parser"  (one line per extra subcommand)
    "train": "rollouts.training.cli:add_parser",
    "play": "rollouts.play:add_parser",
}

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "serve-policy": ("run the scripted OpenAI-compatible policy server", _add_serve),
    "eval": ("run tasks through one framework and summarise", _add_eval),
    "compare": ("run the same tasks through several frameworks; check identity", _add_compare),
    "export": ("turn rollout records into an SFT chat dataset", _add_export),
    "demo": ("compare tictactoe and othello over every available framework", _add_demo),
    "arena": ("rate players (bots, endpoints) in a round robin, with intervals", _add_arena),
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gamebridge",
        description="gamebridge: board-game rollouts through every RL environment framework.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    for name, target in PLUGINS.items():
        module, _, attr = target.partition(":")
        try:
            add_parser = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            broken = sub.add_parser(name, help=f"(unavailable: {_first_line(e)})")
            broken.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            broken.set_defaults(func=lambda _a, e=e: _unavailable(e))
            continue
        doc = (getattr(add_parser, "__doc__", None) or name).strip().splitlines()[0]
        add_parser(sub.add_parser(name, help=doc, description=doc))
    return parser


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _unavailable(e: Exception) -> int:
    _err(f"this command is unavailable here: {_first_line(e)}")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gamebridge`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    args.hard_exit = None
    try:
        code: int = args.func(args)
    except UsageError as e:
        _err(str(e))
        return 2
    except ImportError as e:  # a missing extra: its message names what to install
        _err(_first_line(e))
        return 2
    except KeyboardInterrupt:  # Ctrl-C on a server (serve-policy, play): one line, no traceback
        _err(f"{argv[0] if argv else 'gamebridge'}: stopped (interrupted)")
        return 130
    if args.hard_exit is not None and threading.active_count() > 1 and _is_console():
        # Stopped now: episodes still running in worker threads are abandoned (their
        # servers are already stopped); do not wait for them at interpreter exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _is_console() -> bool:
    """True when running as the ``gamebridge`` script or ``python -m rollouts.cli``."""
    return Path(sys.argv[0]).name in ("gamebridge", "cli.py", "__main__.py")
