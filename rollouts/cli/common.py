"""What the ``gamebridge`` commands share when they run: output lines, the usage
error, Ctrl-C/SIGTERM handling, the endpoint check, the run settings and the
resume command."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from rollouts.drivers.base import RunRequest
from rollouts.evaluation.compare import CompareSettings
from rollouts.frameworks import framework_of


def _out(text: str = "") -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(f"gamebridge: {text}", file=sys.stderr, flush=True)


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (how ``timeout``, Slurm and Kubernetes stop a job): stop now."""


class Interrupts:
    """Ctrl-C and SIGTERM for a run. First Ctrl-C: :attr:`stop` is set (no new
    episodes; the running ones finish and are written). Second Ctrl-C, or SIGTERM:
    ``KeyboardInterrupt`` now (every line already written stays whole)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._old: dict[int, Any] = {}

    def _sigint(self, signum: int, frame: Any) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()
        _err(
            "interrupted: no new episodes; the running ones finish and are written (Ctrl-C again to stop now)"
        )

    def _sigterm(self, signum: int, frame: Any) -> None:
        self.stop.set()
        raise Terminated

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._old[signal.SIGINT] = signal.signal(signal.SIGINT, self._sigint)
            self._old[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _unique_dir(stem: str) -> Path:
    from rollouts.evaluation.records import unique_path

    return unique_path("runs", stem, suffix="")


def _call_policy(args: argparse.Namespace) -> Any:
    from rollouts.model.client import CallPolicy

    return CallPolicy(
        timeout=args.model_timeout, retries=args.model_retries, backoff=args.model_backoff
    )


def _policy_name(args: argparse.Namespace) -> str:
    """What the records' header names as the model side (``--resume`` checks it): the
    model, for an endpoint (whose URL may change between runs), or the embedded
    server's scripted policy."""
    return f"model:{args.model}" if args.base_url else f"scripted:{args.policy}"


def _check_endpoint(args: argparse.Namespace) -> None:
    """Before any episode: ``--base-url`` is an http(s) URL that answers, and
    ``--model`` defaults to the model it serves (its ``/models`` list holds one),
    so a run is labelled with the model, not ``scripted``. Else :class:`UsageError`."""
    import urllib.error
    import urllib.parse
    import urllib.request

    if not args.base_url:
        args.model = args.model or "scripted"
        return
    url = args.base_url.rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--base-url {args.base_url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
        )
    try:
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as e:
        raise UsageError(f"--base-url {args.base_url!r}: {e}") from None
    key = args.api_key or os.environ.get("OPENAI_API_KEY")
    request = urllib.request.Request(
        f"{url}/models", headers={"Authorization": f"Bearer {key}"} if key else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=min(args.model_timeout, 15.0)) as reply:
            body = json.loads(reply.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError:
        body = None  # it answers, without a model list: the run finds out the rest
    except (urllib.error.URLError, OSError) as e:
        why = getattr(e, "reason", None) or e
        why = getattr(why, "strerror", None) or str(why)
        raise UsageError(
            f"--base-url {url}: cannot connect ({why}); is the server running?"
        ) from None
    except ValueError:
        body = None
    if args.model:
        return
    data = body.get("data") if isinstance(body, dict) else None
    ids = [m["id"] for m in data or [] if isinstance(m, dict) and isinstance(m.get("id"), str)]
    if len(ids) > 1:
        raise UsageError(
            f"--base-url {url} serves {len(ids)} models ({', '.join(ids[:5])}); "
            "choose one with --model"
        )
    args.model = ids[0] if ids else "scripted"


def _resume_command(args: argparse.Namespace, out: Path) -> str:
    argv = list(getattr(args, "argv", None) or [])
    cleaned: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--out":
            skip = True
            continue
        if a.startswith("--out=") or a == "--resume":
            continue
        cleaned.append(a)
    return shlex.join(["gamebridge", *cleaned, "--resume", "--out", str(out)])


def _request(args: argparse.Namespace, stop: threading.Event | None = None) -> RunRequest:
    """The one run request of ``eval``, ``compare`` and ``demo``, built from their flags
    (``base_url`` empty: the embedded policy server's, known once it starts)."""
    return RunRequest(
        base_url=args.base_url or "",
        model=args.model,
        api_key=args.api_key,
        concurrency=args.concurrency,
        progress=args.progress,
        stop=stop or getattr(args, "stop", None) or threading.Event(),
        call_policy=_call_policy(args) if hasattr(args, "model_timeout") else None,
        executor=args.executor,
        ray_address=args.ray_address,
    )


def _settings(args: argparse.Namespace) -> CompareSettings:
    return CompareSettings(
        n=args.n,
        seed=args.seed,
        policy=args.policy,
        request=_request(args),
        min_rmp=args.min_rmp,
        max_rmp=args.max_rmp,
        resume=getattr(args, "resume", False),
        policy_name=_policy_name(args),
        opponent=getattr(args, "opponent", None),
        depth=getattr(args, "depth", None),
    )


def _announce_servers() -> None:
    """Server start-ups say what they wait for (a NeMo Gym start takes a while)."""
    from rollouts.model import servers

    servers.ANNOUNCE = lambda line: print(f"gamebridge: {line}", file=sys.stderr, flush=True)


def _unavailable_framework(name: str) -> str | None:
    """Why framework ``name`` cannot run here (with what to install), or ``None``."""
    from rollouts.drivers import driver_status

    ok, why = driver_status(name)
    if ok:
        return None
    line = why.splitlines()[0] if why else "not available here"
    if "pip install" not in line and "make setup" not in line:
        line += f"; install with: {framework_of(name).install_hint()}"
    return f"framework {name} cannot run here: {line}"
