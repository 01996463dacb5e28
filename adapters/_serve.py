"""What every server's launcher (``python -m adapters.<framework>``) shares (standard
library only: the launcher imports uvicorn and its framework once ``launch`` returns).

* ``server_parser``: the flags every gamebridge server takes, with the same names,
  checks and help (each default shown): ``--host``, ``--port``, ``--max-sessions``,
  ``--session-timeout`` and ``--max-body-bytes``. A bad value is one line of usage
  and exit status 2, as argparse answers.
* ``launch``: how every server starts. Its lifeline is watched first (it stops with the
  process that started it, however that one ends); then the launcher builds its app
  (the framework imported) and serves it with one uvicorn worker, given the settings
  ``launch`` returns (the address, warnings only).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {value}")
    return value


def server_parser(
    prog: str,
    description: str | None,
    *,
    port: int | None,
    max_sessions: int,
    sessions_help: str,
    session_timeout: float,
    timeout_help: str,
    max_body_bytes: int,
    body_help: str,
    timeout_aliases: Sequence[str] = (),
) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the server flags; the launcher adds its own
    (``--game``, ``--style``, ...). ``port`` ``None``: ``--port`` is required.
    ``timeout_aliases``: other names of ``--session-timeout`` (NeMo Gym's config calls
    it a TTL)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument(
        "--port",
        type=port_number,
        default=port,
        required=port is None,
        help="port to bind (0: any free one)",
    )
    parser.add_argument(
        "--max-sessions", type=positive_int, default=max_sessions, help=sessions_help
    )
    parser.add_argument(
        "--session-timeout",
        *timeout_aliases,
        dest="session_timeout",
        type=float,
        default=session_timeout,
        help=timeout_help,
    )
    parser.add_argument(
        "--max-body-bytes", type=positive_int, default=max_body_bytes, help=body_help
    )
    return parser


def launch(args: argparse.Namespace, **options: Any) -> dict[str, Any]:
    """Watch the lifeline; the ``uvicorn.run`` settings for ``args.host``/``args.port``,
    warnings only (``options``: uvicorn's own, which win over the defaults)."""
    from adapters._lifeline import watch

    watch()  # stop with the process that started us, however it ends
    defaults = {"log_level": "warning", "timeout_graceful_shutdown": 1}
    return {"host": args.host, "port": args.port, **defaults, **options}
