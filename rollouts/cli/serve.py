"""``gamebridge serve-policy``: the scripted (or trained) OpenAI-compatible policy server."""

from __future__ import annotations

import argparse
import errno

from rollouts.cli.args import (
    DEFAULT_EVAL_POLICY,
    POLICY_HELP,
    _policy,
    _port,
)
from rollouts.cli.common import (
    UsageError,
    _err,
)

# --- serve-policy ---------------------------------------------------------------------


def _add_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", type=_policy, default=DEFAULT_EVAL_POLICY, help=POLICY_HELP)
    p.add_argument("--seed", type=int, default=0, help="the scripted player's seed")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=_port, default=8000, help="port to listen on; 0 picks a free one")
    p.add_argument(
        "--model-name", default=None, help="the id /v1/models reports (default: scripted)"
    )
    p.add_argument(
        "--model-path",
        default=None,
        help="serve a trained checkpoint (transformers backend) instead of the scripted player",
    )
    p.add_argument(
        "--context",
        choices=("observation", "chat"),
        default="observation",
        help="model backend: the last observation alone (recipe models) or the whole chat",
    )
    p.add_argument(
        "--temperature", type=float, default=0.0, help="model backend: 0 is greedy (default)"
    )
    p.add_argument(
        "--constrained-decoding",
        action="store_true",
        help="model backend, an option: replies restricted to the legal moves core lists "
        "(/health says so)",
    )
    p.set_defaults(func=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    from adapters._lifeline import watch
    from rollouts.model.policy_server import serve

    watch()  # started by rollouts.model.servers (a test, make faults): stop when the parent ends

    backend = None
    if args.constrained_decoding and not args.model_path:
        raise UsageError("serve-policy: --constrained-decoding needs --model-path")
    if args.model_path:
        from rollouts.model.transformers_backend import ModelPathError, TransformersModel

        _err(f"loading the model in {args.model_path} (transformers)")
        try:
            backend = TransformersModel(
                args.model_path,
                model_name=args.model_name,
                context=args.context,
                temperature=args.temperature,
                constrained=args.constrained_decoding,
            )
        except (ModelPathError, ValueError) as e:
            raise UsageError(f"serve-policy: {e}") from None
    try:
        serve(
            args.policy,
            args.seed,
            host=args.host,
            port=args.port,
            model_name=args.model_name or "scripted",
            backend=backend,
        )
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {args.port} on {args.host} is busy (another server?); "
                "pick another with --port (0 picks a free one)"
            ) from None
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return 0
