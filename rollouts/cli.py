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
"""

from __future__ import annotations

import argparse
import copy
import errno
import importlib
import json
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rollouts.evaluation.compare import (
    CompareSettings,
    choose_frameworks,
    compare_games,
    endpoint,
    make_tasks,
    run_into_file,
)
from rollouts.frameworks import aliases as framework_aliases
from rollouts.frameworks import framework_of

PLUGINS: dict[str, str] = {
    # "name": "module:add_parser"  (one line per extra subcommand)
    "train": "rollouts.training.cli:add_parser",
    "play": "rollouts.play:add_parser",
}

DEFAULT_EVAL_POLICY = "minimax:2"
DEFAULT_COMPARE_POLICY = "noisy:0.3/minimax:1"
"""Compare and demo use a noisy player so malformed and illegal replies are
exercised too (the conformance suite's policy)."""
DEMO_GAMES = ("tictactoe", "othello")
DEMO_POLICY = "noisy:0.1/minimax:1"
"""Less noise than compare's default, so that Othello games are played out
rather than forfeited after four bad replies."""
FRAMEWORK_ALIASES = framework_aliases()
"""Other names a framework goes by (its pip extra): ``--framework skyrl`` runs
``skyrl_gym`` (the manifest's ``aliases``, ``rollouts.frameworks``)."""
POLICY_HELP = "random | minimax:D | noisy:P[/minimax:D] (D 1..12, P 0..1)"
OPPONENT_CHOICES = ("random", "minimax", "mcts")
"""The built-in opponents ``--opponent`` offers (``core.tasks.OPPONENTS``; the play
page offers the same)."""


def _game_help() -> str:
    from core import list_games

    return f"{', '.join(list_games())}, or openspiel:NAME (e.g. openspiel:hex(board_size=7))"


def _framework_help() -> str:
    from rollouts.drivers import DRIVERS

    return ", ".join(DRIVERS)


# --- the parser: one line for a bad value, the subcommand's usage for a bad flag ------


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (unless it says one already)."""

    def _format_action(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            action.option_strings
            and action.help is not argparse.SUPPRESS
            and action.default is not None
            and action.default is not argparse.SUPPRESS
            and action.default != ""
            and (action.default is not False or isinstance(action, argparse.BooleanOptionalAction))
            and "(default" not in text
        ):
            action = copy.copy(action)
            action.help = f"{text} (default: %(default)s)".strip()
        return super()._format_action(action)


class _SubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands parsed strictly, so that a misspelt flag is reported with the
    subcommand's own usage (argparse hands unknown flags up to the top parser,
    whose usage says nothing about them)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name, rest = values[0], values[1:]
        chosen = self._name_parser_map.get(name)
        if chosen is None:  # argparse's own "invalid choice" error
            super().__call__(parser, namespace, values, option_string)
            return
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        for key, value in vars(chosen.parse_args(rest)).items():
            setattr(namespace, key, value)


class Parser(argparse.ArgumentParser):
    """``argparse`` with :class:`HelpFormatter`, strict subcommands, and one line
    (no usage) for a bad value of a flag; other errors show the usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _SubParsers)

    def error(self, message: str) -> Any:  # -> NoReturn
        if message.startswith("argument -"):  # a flag's value: the line says it all
            self.exit(2, f"{self.prog}: error: {message}\n")
        super().error(message)


def _game(text: str) -> str:
    """``--game``: a name ``make_game`` can make (else exit 2 with one line)."""
    from core.games import game_arg

    return game_arg(text)


def _games(text: str) -> list[str]:
    """``--games``: comma-separated names (commas inside brackets belong to an
    OpenSpiel name's parameters), each checked like ``--game``."""
    names, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += ch
    names.append(current)
    return [_game(n.strip()) for n in names if n.strip()]


def _framework(text: str) -> str:
    """``--framework``: a registered driver name (or an alias such as ``skyrl``)."""
    from rollouts.drivers import DRIVERS

    name = text.strip().replace("-", "_")
    name = FRAMEWORK_ALIASES.get(name, name)
    if name not in DRIVERS:
        aliases = ", ".join(f"{k} = {v}" for k, v in FRAMEWORK_ALIASES.items())
        raise argparse.ArgumentTypeError(
            f"unknown framework {text!r}; known: {', '.join(DRIVERS)} ({aliases})"
        )
    return name


def _frameworks_arg(text: str) -> list[str]:
    """``--frameworks``: comma-separated, each checked like ``--framework``."""
    names = [_framework(x) for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no framework named")
    return names


def _policy(text: str) -> str:
    """``--policy``: a scripted policy ``core.players.Policy`` can parse."""
    from core.players import Policy

    try:
        Policy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e}; a policy is {POLICY_HELP}") from None
    return text


def _depth(text: str) -> int:
    """``--depth``: the opponent's search depth (MCTS: its level), 1..12."""
    value = _at_least(1)(text)
    if value > 12:
        raise argparse.ArgumentTypeError(f"a depth is 1..12, not {value}")
    return value


def _at_least(low: int) -> Callable[[str], int]:
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    check.__name__ = f"int>={low}"
    return check


_positive = _at_least(1)


def _port(text: str) -> int:
    value = _at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def _out(text: str = "") -> None:
    print(text, flush=True)


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


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


def _settings(args: argparse.Namespace) -> CompareSettings:
    return CompareSettings(
        n=args.n,
        seed=args.seed,
        policy=args.policy,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        concurrency=args.concurrency,
        progress=args.progress,
        min_rmp=args.min_rmp,
        max_rmp=args.max_rmp,
        executor=args.executor,
        ray_address=args.ray_address,
        resume=getattr(args, "resume", False),
        stop=getattr(args, "stop", None) or threading.Event(),
        call_policy=_call_policy(args) if hasattr(args, "model_timeout") else None,
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
    p.set_defaults(func=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    from adapters._lifeline import watch
    from rollouts.model.policy_server import serve

    watch()  # started by rollouts.model.servers (a test, make faults): stop when the parent ends

    backend = None
    if args.model_path:
        from rollouts.model.transformers_backend import ModelPathError, TransformersModel

        _err(f"loading the model in {args.model_path} (transformers)")
        try:
            backend = TransformersModel(
                args.model_path,
                model_name=args.model_name,
                context=args.context,
                temperature=args.temperature,
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


# --- eval -------------------------------------------------------------------------------


def _tasks(args: argparse.Namespace, game: str) -> list[Any]:
    """The run's tasks of ``game``; an opponent the game does not offer is a UsageError."""
    from core.tasks import TaskError

    try:
        return make_tasks(
            game,
            args.n,
            args.seed,
            args.min_rmp,
            args.max_rmp,
            opponent=getattr(args, "opponent", None),
            depth=getattr(args, "depth", None),
            seats=getattr(args, "seats", None),
        )
    except TaskError as e:
        raise UsageError(f"{game}: {e}") from None


def _add_common(p: argparse.ArgumentParser, policy_default: str) -> None:
    p.add_argument("-n", type=_positive, default=16, help="number of tasks")
    p.add_argument("--seed", type=int, default=0, help="task and policy seed")
    p.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible endpoint; default: start the embedded policy server",
    )
    p.add_argument(
        "--model",
        default=None,
        help="the model name at --base-url (default: the one model its /models lists; "
        "scripted for the embedded server)",
    )
    p.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY")
    p.add_argument("--concurrency", type=_positive, default=1, help="episodes at once")
    p.add_argument(
        "--policy",
        type=_policy,
        default=policy_default,
        help=f"scripted policy of the embedded server: {POLICY_HELP}",
    )
    p.add_argument(
        "--opponent",
        choices=OPPONENT_CHOICES,
        default=None,
        help="the built-in opponent: minimax (alpha-beta to --depth; native games), random, "
        "or mcts (level --depth; OpenSpiel games); default: minimax, or mcts where the game "
        "has no minimax",
    )
    p.add_argument(
        "--depth",
        type=_depth,
        default=None,
        help="the opponent's search depth (mcts: its level), 1..12 (default: 2)",
    )
    p.add_argument(
        "--seats",
        default=None,
        help="who plays each seat, e.g. outside,outside (the endpoint in both seats, one "
        "conversation each: self-play) or outside,mcts:2; core driver, text mode",
    )
    p.add_argument("--min-rmp", type=float, default=0.0, help="min opponent random_move_prob")
    p.add_argument("--max-rmp", type=float, default=1.0, help="max opponent random_move_prob")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.add_argument(
        "--executor",
        default="thread",
        choices=("thread", "ray"),
        help="thread: a pool in this process; ray: one Ray task per episode",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="join this Ray cluster (auto, ray://HOST:10001); default: a local one of --concurrency CPUs",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="complete the run in --out: refused unless it was made with the same tasks, "
        "policy and framework; runs only the missing (and failed) tasks",
    )
    p.add_argument(
        "--model-timeout",
        type=float,
        default=120.0,
        help="seconds per model call attempt, every framework",
    )
    p.add_argument(
        "--model-retries",
        type=int,
        default=4,
        help="retries of a model call after a connection error, timeout, 408/425/429/5xx or "
        "malformed body",
    )
    p.add_argument(
        "--model-backoff",
        type=float,
        default=0.5,
        help="seconds before the first retry, doubling each time, at most 8 s (default "
        "%(default)s: waits 0.5, 1, 2, 4 s; a call then fails for good after at most "
        "5 x timeout + 7.5 s, and its task gets a failure record)",
    )


def _executor_error(args: argparse.Namespace) -> str | None:
    """Why ``--executor``/``--ray-address`` cannot run here, or ``None``."""
    if args.executor != "ray":
        return "--ray-address needs --executor ray" if args.ray_address else None
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return "--executor ray needs Ray; install with: pip install -e '.[ray]'"
    return None


def _add_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--framework", type=_framework, default="core", help=f"one of {_framework_help()}"
    )
    p.add_argument("--game", default="tictactoe", type=_game, help=_game_help())
    _add_common(p, DEFAULT_EVAL_POLICY)
    p.add_argument(
        "--out",
        default=None,
        help="JSONL path, written as episodes finish (default runs/eval-FW-GAME-TIME-PID-N.jsonl, "
        "named at the start)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON too")
    p.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from rollouts.drivers import get_driver
    from rollouts.evaluation.records import RecordFileError, run_header, unique_path
    from rollouts.evaluation.summary import format_summary, summarize

    problem = _executor_error(args) or _unavailable_framework(args.framework)
    if problem:
        raise UsageError(problem)
    if args.resume and not args.out:
        raise UsageError("--resume needs --out FILE (the records file to complete)")
    tasks = _tasks(args, args.game)
    if getattr(args, "seats", None) and args.framework != "core":
        raise UsageError(
            f"--seats: the {args.framework} driver plays one outside seat; use --framework core "
            "(GEM's multi-agent env is in-process: docs/two-seats.md)"
        )
    _check_endpoint(args)
    driver = get_driver(args.framework)
    driver.call_policy = _call_policy(args)
    header = run_header(args.framework, tasks, policy=_policy_name(args))
    header.update(game=args.game, seed=args.seed, base_url=args.base_url)
    out = Path(args.out) if args.out else unique_path("runs", f"eval-{args.framework}-{args.game}")
    _out(f"writing records to {out} as episodes finish")
    _announce_servers()
    try:
        with Interrupts() as interrupts, endpoint(args.base_url, args.policy, args.seed) as url:
            run = run_into_file(
                driver,
                tasks,
                out,
                header,
                resume=args.resume,
                stop=interrupts.stop,
                base_url=url,
                model=args.model,
                api_key=args.api_key,
                concurrency=args.concurrency,
                progress=args.progress,
                executor=args.executor,
                ray_address=args.ray_address,
            )
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    except (UsageError, ImportError):  # an ImportError names the extra: main says it
        raise
    except KeyboardInterrupt as e:
        _err(
            f"{'terminated' if isinstance(e, Terminated) else 'stopped'}: every finished episode is in {out}"
        )
        _err(f"resume with: {_resume_command(args, out)}")
        args.hard_exit = 143 if isinstance(e, Terminated) else 130
        return args.hard_exit
    except Exception as e:  # the framework could not run at all
        from rollouts.drivers.base import describe_failure, failure_line

        _err(f"{args.framework}: {failure_line(describe_failure(e))}")
        _err(f"records so far: {out}; resume with: {_resume_command(args, out)}")
        return 1
    records = run.records
    summary = summarize(records, elapsed=run.elapsed)
    _out(
        format_summary(
            summary,
            title=f"{args.framework} / {args.game}: {len(records)} of {len(tasks)} tasks "
            f"({run.ran} run now) in {run.elapsed:.2f}s",
        )
    )
    if args.json:
        _out(json.dumps(summary.to_dict(), indent=1))
    _out(f"records: {out}")
    if run.stopped or len(records) < len(tasks):
        _err(f"stopped before the end: {len(tasks) - len(records)} tasks not run")
        _err(f"resume with: {_resume_command(args, out)}")
        return 130
    if summary.failed:
        _err(
            f"{summary.failed} of {len(tasks)} tasks failed; resume with: "
            f"{_resume_command(args, out)}"
        )
        return 1
    return 0


# --- compare ----------------------------------------------------------------------------


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("--game", default="tictactoe", type=_game, help=_game_help())
    p.add_argument(
        "--frameworks",
        type=_frameworks_arg,
        default=None,
        help=f"comma-separated, of {_framework_help()} (default: every one that can run here; "
        "the others are named with the reason)",
    )
    _add_common(p, DEFAULT_COMPARE_POLICY)
    p.add_argument("--out", default=None, help="output directory (default runs/compare-TIME-PID-N)")
    p.set_defaults(func=_run_compare)


def _chosen_frameworks(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The frameworks to run and those skipped (with why); asked-for ones that
    cannot run are a usage error."""
    if args.frameworks:
        for name in args.frameworks:
            problem = _unavailable_framework(name)
            if problem:
                raise UsageError(problem)
    return choose_frameworks(args.frameworks)


def _run_compare(args: argparse.Namespace) -> int:
    from rollouts.evaluation.records import RecordFileError, unique_path

    problem = _executor_error(args)
    if problem:
        raise UsageError(problem)

    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR (the compare directory to complete)")
    _tasks(args, args.game)  # a bad --opponent/--depth for the game: one line, now
    if getattr(args, "seats", None):
        raise UsageError(
            "--seats: only the core driver plays several outside seats, so there is "
            "nothing to compare yet (docs/two-seats.md); use eval --framework core"
        )
    _check_endpoint(args)
    frameworks, skipped = _chosen_frameworks(args)
    out_dir = Path(args.out) if args.out else unique_path("runs", "compare", suffix="")
    _announce_servers()
    try:
        with Interrupts() as interrupts:
            args.stop = interrupts.stop
            code, _ = compare_games(
                [args.game],
                frameworks,
                _settings(args),
                out_dir,
                title=f"gamebridge compare: {args.game}",
                skipped=skipped,
            )
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt as e:
        _err(
            f"{'terminated' if isinstance(e, Terminated) else 'stopped'}: every finished episode is in {out_dir}"
        )
        _err(f"resume with: {_resume_command(args, out_dir)}")
        args.hard_exit = 143 if isinstance(e, Terminated) else 130
        return args.hard_exit
    if args.stop.is_set():
        _err(f"stopped before the end; resume with: {_resume_command(args, out_dir)}")
        return 130
    return code


# --- export -----------------------------------------------------------------------------


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("--in", dest="inp", required=True, help="records JSONL (eval/compare output)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--keep", default="wins,draws", help="wins,draws,losses or all")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from rollouts.evaluation.export import ExportError, export_dataset, parse_keep, read_records
    from rollouts.evaluation.records import read_run

    try:
        keep = parse_keep(args.keep)
    except ValueError as e:
        raise UsageError(str(e)) from None
    path = Path(args.inp)
    if not path.is_file():
        raise UsageError(f"--in {path}: no such file")
    try:
        run = read_run(path, warn=False)
        if not run.records and not run.unindexed:
            raise ValueError("no rollout records in it (expected gamebridge eval/compare JSONL)")
        records = read_records(path)
        out, rows, saved = export_dataset(records, args.out, keep)
    except (ExportError, OSError, ValueError, TypeError, KeyError) as e:
        raise UsageError(f"--in {path}: {e}") from None
    _out(f"kept {rows} of {len(records)} episodes ({', '.join(sorted(keep))})")
    _out(
        f"wrote {out / 'data.jsonl'}"
        + (f" and a datasets folder {out}" if saved else " (datasets not installed: JSONL only)")
    )
    return 0


# --- demo -------------------------------------------------------------------------------


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=_positive, default=8, help="tasks per game")
    p.add_argument(
        "--games",
        default=",".join(DEMO_GAMES),
        type=_games,
        help=f"comma-separated: {_game_help()}",
    )
    p.add_argument(
        "--frameworks",
        type=_frameworks_arg,
        default=None,
        help=f"comma-separated, of {_framework_help()} (default: every one that can run here)",
    )
    p.add_argument("--seed", type=int, default=0, help="task and policy seed")
    p.add_argument("--policy", type=_policy, default=DEMO_POLICY, help=POLICY_HELP)
    p.add_argument("--concurrency", type=_positive, default=2, help="episodes at once")
    p.add_argument("--out", default=None, help="output directory (default runs/demo-TIME)")
    p.set_defaults(
        func=_run_demo,
        base_url=None,
        model="scripted",
        api_key=None,
        min_rmp=0.0,
        max_rmp=1.0,
        progress=False,
        executor="thread",
        ray_address=None,
    )


def _run_demo(args: argparse.Namespace) -> int:
    frameworks, skipped = _chosen_frameworks(args)
    games: list[str] = args.games
    out_dir = Path(args.out) if args.out else _unique_dir("demo")
    _out(
        f"demo: {', '.join(games)} x {args.n} tasks over {', '.join(frameworks)} "
        f"(embedded policy server, {args.policy})"
    )
    _announce_servers()
    code, _ = compare_games(
        games, frameworks, _settings(args), out_dir, title="gamebridge demo", skipped=skipped
    )
    return code


# --- arena ------------------------------------------------------------------------------

ARENA_PLAYERS = "random,minimax:1,minimax:2,mcts:2"
ARENA_GAMES = "tictactoe,connect_four"
ARENA_PLAYER_HELP = (
    "comma-separated [NAME=]SPEC: random, minimax:D, mcts:L (bots; +random:P mixes in random "
    "moves), endpoint:MODEL@URL (an OpenAI-compatible endpoint: vLLM, serve-policy), "
    "scripted:POLICY (the embedded scripted server)"
)


def _add_arena(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--games", default=ARENA_GAMES, type=_games, help=f"comma-separated: {_game_help()}"
    )
    p.add_argument("--players", default=ARENA_PLAYERS, help=ARENA_PLAYER_HELP)
    p.add_argument(
        "--rounds",
        type=_positive,
        default=4,
        help="openings per pair and game (each played from both seats)",
    )
    p.add_argument("--seed", type=int, default=0, help="the openings' seed")
    p.add_argument(
        "--opening-plies",
        type=_at_least(0),
        default=None,
        help="random plies before the first seat's first move (default 2)",
    )
    p.add_argument("--concurrency", type=_positive, default=1, help="games at once (threads)")
    p.add_argument("--api-key", default=None, help="endpoints' key; default: $OPENAI_API_KEY")
    p.add_argument(
        "--model-timeout", type=float, default=120.0, help="seconds per model call attempt"
    )
    p.add_argument("--model-retries", type=int, default=4, help="retries of a failed model call")
    p.add_argument(
        "--model-backoff", type=float, default=0.5, help="seconds before the first retry"
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder: arena.jsonl (written as games end), ratings.json, report.html "
        "(default runs/arena-TIME-PID-N)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="complete the arena in --out: refused unless made with the same players and "
        "schedule; plays only the missing (and failed) games",
    )
    p.add_argument(
        "--docs",
        default=None,
        help="rewrite each game's ratings between its markers in this Markdown file "
        "(<!-- arena-ratings: GAME start/end -->)",
    )
    p.add_argument("--progress", action="store_true", help="one line per finished game")
    p.set_defaults(func=_run_arena)


def _run_arena(args: argparse.Namespace) -> int:
    from core.arena import DEFAULT_OPENING_PLIES, ArenaError, round_robin
    from rollouts.evaluation.arena import (
        RECORDS,
        arena_header,
        bots_of,
        parse_players,
        run_arena,
    )
    from rollouts.evaluation.ratings import (
        arena_ratings,
        format_ratings,
        ratings_json,
        ratings_markdown,
        write_docs,
    )
    from rollouts.evaluation.records import RecordFileError
    from rollouts.evaluation.report import replay_episodes, write_report

    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR (the arena folder to complete)")
    plies = DEFAULT_OPENING_PLIES if args.opening_plies is None else args.opening_plies
    try:
        players = parse_players(args.players)
        pairings, skipped = round_robin(
            [p.name for p in players],
            args.games,
            rounds=args.rounds,
            seed=args.seed,
            bots=bots_of(players),
            opening_plies=plies,
        )
    except ArenaError as e:
        raise UsageError(f"arena: {e}") from None
    names = [p.name for p in players]
    for a, b in skipped:
        _err(f"{a} vs {b} left out")
    out_dir = Path(args.out) if args.out else _unique_dir("arena")
    out = out_dir / RECORDS
    header = arena_header(
        players, pairings, games=args.games, rounds=args.rounds, seed=args.seed, opening_plies=plies
    )
    _out(
        f"arena: {len(names)} players, {len(args.games)} games, {len(pairings)} games to play; "
        f"writing {out} as games end"
    )
    _announce_servers()

    def progress(record: Any) -> None:
        if args.progress:
            arena = record.trajectory.get("arena", {})
            seats = " vs ".join(arena.get("seats", []))
            _out(
                f"  #{record.index} {record.task['game']}: {seats}: {record.trajectory.get('result')}"
            )

    try:
        with Interrupts() as interrupts:
            run = run_arena(
                players,
                pairings,
                out,
                header,
                resume=args.resume,
                stop=interrupts.stop,
                seed=args.seed,
                api_key=args.api_key,
                concurrency=args.concurrency,
                call_policy=_call_policy(args),
                on_record=progress,
            )
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt as e:
        _err(
            f"{'terminated' if isinstance(e, Terminated) else 'stopped'}: every finished game is in {out}"
        )
        _err(f"resume with: {_resume_command(args, out_dir)}")
        args.hard_exit = 143 if isinstance(e, Terminated) else 130
        return args.hard_exit
    records = [run.records[i] for i in sorted(run.records)]
    failed = [r for r in records if r.error is not None]
    finished = [r for r in records if r.error is None]
    try:
        ratings = arena_ratings(finished, names)
    except ValueError as e:
        _err(f"no ratings: {e}")
        ratings = {}
    _out(f"{len(finished)} of {len(pairings)} games ({run.ran} played now) in {run.elapsed:.2f}s")
    _out(format_ratings(ratings))
    (out_dir / "ratings.json").write_text(json.dumps(ratings_json(ratings), indent=1) + "\n")
    report = write_report(
        out_dir / "report.html",
        [],
        title="gamebridge arena",
        meta={
            "games": ", ".join(args.games),
            "players": ", ".join(names),
            "rounds": args.rounds,
            "seed": args.seed,
            "opening plies": plies,
        },
        ratings=list(ratings.values()),
        episodes=replay_episodes(finished, RECORDS),
    )
    _out(f"report: {report.resolve()}")
    if args.docs:
        for game, g in ratings.items():
            if write_docs(args.docs, game, ratings_markdown(g)):
                _out(f"wrote {game}'s ratings into {args.docs}")
            else:
                _err(f"{args.docs} has no markers for {game}: nothing written")
    if run.stopped or len(records) < len(pairings):
        _err(f"stopped before the end: {len(pairings) - len(records)} games not played")
        _err(f"resume with: {_resume_command(args, out_dir)}")
        return 130
    if failed:
        _err(f"{len(failed)} games failed; resume with: {_resume_command(args, out_dir)}")
        return 1
    return 0


# --- main -------------------------------------------------------------------------------

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


if __name__ == "__main__":
    sys.exit(main())
