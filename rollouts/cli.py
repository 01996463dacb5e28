"""The ``gamebridge`` command line.

Subcommands: ``serve-policy``, ``eval``, ``compare``, ``export``, ``demo``,
plus any listed in :data:`PLUGINS`. Adding one is one line there:
``"train": "rollouts.train:add_parser"``, where ``add_parser(parser)`` adds
its arguments to the given ``argparse`` parser and calls
``parser.set_defaults(func=run)`` with ``run(args) -> int``. Heavy imports
belong inside ``run``, so ``gamebridge --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rollouts.drivers.base import RolloutRecord
    from rollouts.summary import Divergence

PLUGINS: dict[str, str] = {
    # "name": "module:add_parser"  (one line per extra subcommand)
    "train": "rollouts.train:add_parser",
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


GAME_HELP = "a game of core.list_games(), or openspiel:NAME (e.g. openspiel:hex(board_size=7))"


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


def _out(text: str = "") -> None:
    print(text, flush=True)


@contextlib.contextmanager
def _endpoint(base_url: str | None, policy: str, seed: int) -> Iterator[str]:
    """``base_url`` if given, else an embedded policy server for the block."""
    if base_url:
        yield base_url
        return
    from rollouts.policy_server import serve_in_thread

    with serve_in_thread(policy, seed) as url:
        yield url


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


# --- serve-policy ---------------------------------------------------------------------


def _add_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        default=DEFAULT_EVAL_POLICY,
        help="random | minimax:D | noisy:P[/minimax:D] (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--model-name", default=None, help="the id /v1/models reports")
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
    from rollouts.policy_server import serve

    backend = None
    if args.model_path:
        from rollouts.policy_model import ModelPathError, TransformersModel

        try:
            backend = TransformersModel(
                args.model_path,
                model_name=args.model_name,
                context=args.context,
                temperature=args.temperature,
            )
        except (ModelPathError, ValueError) as e:
            print(f"gamebridge serve-policy: {e}", file=sys.stderr)
            return 2
    serve(
        args.policy,
        args.seed,
        host=args.host,
        port=args.port,
        model_name=args.model_name or "scripted",
        backend=backend,
    )
    return 0


# --- eval -------------------------------------------------------------------------------


def _add_common(p: argparse.ArgumentParser, policy_default: str) -> None:
    p.add_argument("-n", type=int, default=16, help="number of tasks (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="task and policy seed")
    p.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible endpoint; default: start the embedded policy server",
    )
    p.add_argument("--model", default="scripted")
    p.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument(
        "--policy",
        default=policy_default,
        help="scripted policy of the embedded server (default %(default)s)",
    )
    p.add_argument("--min-rmp", type=float, default=0.0, help="min opponent random_move_prob")
    p.add_argument("--max-rmp", type=float, default=1.0, help="max opponent random_move_prob")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.add_argument(
        "--executor",
        default="thread",
        choices=("thread", "ray"),
        help="thread: a pool in this process; ray: one Ray task per episode (default %(default)s)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="join this Ray cluster (auto, ray://HOST:10001); default: a local one of --concurrency CPUs",
    )


def _executor_error(args: argparse.Namespace) -> str | None:
    """Why ``--executor``/``--ray-address`` cannot run here, or ``None``."""
    if args.executor != "ray":
        return "--ray-address needs --executor ray" if args.ray_address else None
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return "--executor ray needs Ray; install with: pip install -e '.[ray]'"
    return None


def _make_tasks(game: str, n: int, seed: int, lo: float, hi: float) -> list[Any]:
    from core.tasks import make_tasks

    return make_tasks(
        n=n, seed=seed, game=game, min_random_move_prob=lo, max_random_move_prob=hi, num_groups=4
    )


def _add_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--framework", default="core", help="driver name (see rollouts.drivers)")
    p.add_argument("--game", default="tictactoe", type=_game, help=GAME_HELP)
    _add_common(p, DEFAULT_EVAL_POLICY)
    p.add_argument("--out", default=None, help="JSONL path (default runs/eval-FW-GAME-TIME.jsonl)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON too")
    p.set_defaults(func=_run_eval)


def _run_eval(args: argparse.Namespace) -> int:
    from rollouts.drivers import get_driver
    from rollouts.executors import run_tasks
    from rollouts.export import write_records
    from rollouts.summary import format_summary, summarize

    problem = _executor_error(args)
    if problem:
        print(f"gamebridge: {problem}", file=sys.stderr)
        return 2
    driver = get_driver(args.framework)
    tasks = _make_tasks(args.game, args.n, args.seed, args.min_rmp, args.max_rmp)
    with _endpoint(args.base_url, args.policy, args.seed) as url:
        t0 = time.perf_counter()
        records = run_tasks(
            driver,
            tasks,
            base_url=url,
            model=args.model,
            api_key=args.api_key,
            concurrency=args.concurrency,
            progress=args.progress,
            executor=args.executor,
            ray_address=args.ray_address,
        )
        elapsed = time.perf_counter() - t0
    out = Path(args.out or f"runs/eval-{args.framework}-{args.game}-{_stamp()}.jsonl")
    write_records(out, records)
    summary = summarize(records, elapsed=elapsed)
    _out(
        format_summary(
            summary,
            title=f"{args.framework} / {args.game}: {len(records)} episodes in {elapsed:.2f}s",
        )
    )
    if args.json:
        _out(json.dumps(summary.to_dict(), indent=1))
    _out(f"records: {out}")
    return 0


# --- compare ----------------------------------------------------------------------------


def run_compare(
    game: str,
    tasks: Sequence[Any],
    frameworks: Sequence[str],
    *,
    base_url: str,
    model: str,
    api_key: str | None,
    concurrency: int,
    progress: bool,
    out_dir: Path,
    executor: str = "thread",
    ray_address: str | None = None,
) -> tuple[dict[str, list[RolloutRecord]], dict[str, Any], list[Divergence], dict[str, str]]:
    """Run ``tasks`` through each framework (on ``executor``, see
    ``rollouts.executors``); check identity against the core driver in the
    matching mode (text or tool calls), which runs here on threads.

    Returns (records by framework, summaries, divergences, failures) where
    ``failures`` maps a framework that raised to its error.
    """
    from rollouts.drivers import get_driver
    from rollouts.drivers.core import CoreDriver
    from rollouts.executors import run_tasks
    from rollouts.export import write_records
    from rollouts.summary import check_identity, summarize, trajectory_mode

    records: dict[str, list[RolloutRecord]] = {}
    summaries: dict[str, Any] = {}
    failures: dict[str, str] = {}
    for name in frameworks:
        t0 = time.perf_counter()
        try:
            recs = run_tasks(
                get_driver(name),
                tasks,
                base_url=base_url,
                model=model,
                api_key=api_key,
                concurrency=concurrency,
                progress=progress,
                executor=executor,
                ray_address=ray_address,
            )
        except Exception as e:  # one framework's failure is reported, not fatal
            failures[name] = f"{type(e).__name__}: {e}"
            _out(f"  {name:10s} FAILED: {failures[name][:300]}")
            continue
        elapsed = time.perf_counter() - t0
        records[name] = recs
        summaries[name] = summarize(recs, elapsed=elapsed)
        write_records(out_dir / f"{game}-{name}.jsonl", recs)
        _out(f"  {name:10s} {len(recs)} episodes in {elapsed:.2f}s")
    references: dict[str, list[RolloutRecord]] = {}
    modes = {trajectory_mode(r.trajectory) for recs in records.values() for r in recs}
    for mode in sorted(modes):
        if mode == "text" and "core" in records:
            references[mode] = records["core"]
            continue
        references[mode] = CoreDriver(use_tools=mode == "tools").run(
            tasks, base_url=base_url, model=model, api_key=api_key, concurrency=concurrency
        )
    divergences = check_identity(records, references) if records else []
    return records, summaries, divergences, failures


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("--game", default="tictactoe", type=_game, help=GAME_HELP)
    p.add_argument(
        "--frameworks",
        default=None,
        help="comma-separated driver names (default: every available driver)",
    )
    _add_common(p, DEFAULT_COMPARE_POLICY)
    p.add_argument("--out", default=None, help="output directory (default runs/compare-TIME)")
    p.set_defaults(func=_run_compare)


def _frameworks(arg: str | None) -> list[str]:
    from rollouts.drivers import DRIVERS, available_drivers

    if arg:
        names = [x.strip() for x in arg.split(",") if x.strip()]
        unknown = [x for x in names if x not in DRIVERS]
        if unknown:
            raise SystemExit(f"unknown frameworks {unknown}; known: {', '.join(DRIVERS)}")
        return names
    return available_drivers()


def compare_games(
    games: Sequence[str],
    frameworks: Sequence[str],
    args: argparse.Namespace,
    out_dir: Path,
    *,
    title: str,
) -> tuple[int, list[str]]:
    """Compare over several games; write the report. Returns (exit code, verdict lines)."""
    from rollouts.report import GameSection, write_report
    from rollouts.summary import format_comparison

    sections = []
    problems: list[str] = []
    with _endpoint(args.base_url, args.policy, args.seed) as url:
        for game in games:
            tasks = _make_tasks(game, args.n, args.seed, args.min_rmp, args.max_rmp)
            _out(f"{game}: {len(tasks)} tasks x {len(frameworks)} frameworks")
            records, summaries, divergences, failures = run_compare(
                game,
                tasks,
                frameworks,
                base_url=url,
                model=args.model,
                api_key=args.api_key,
                concurrency=args.concurrency,
                progress=args.progress,
                out_dir=out_dir,
                executor=args.executor,
                ray_address=args.ray_address,
            )
            if summaries:
                _out(format_comparison(summaries))
            for d in divergences:
                problems.append(f"DIVERGENT: {game}: {d.describe()}")
            for name, err in failures.items():
                problems.append(f"FAILED: {game}: {name}: {err[:300]}")
            sections.append(GameSection(game, records, summaries, divergences))
    ran = sorted({n for s in sections for n in s.records})
    if problems:
        verdict = (
            problems[0] if len(problems) == 1 else f"{problems[0]} (+{len(problems) - 1} more)"
        )
    else:
        verdict = f"IDENTICAL across {len(ran)} frameworks ({', '.join(ran)})"
    report = write_report(
        out_dir / "report.html",
        sections,
        title=title,
        verdict=verdict,
        verdict_ok=not problems,
        meta={
            "games": ", ".join(games),
            "tasks per game": args.n,
            "policy": args.policy if not args.base_url else args.model,
            "seed": args.seed,
        },
    )
    for line in problems:
        _out(line)
    _out(f"report: {report.resolve()}")
    _out(verdict)
    return (1 if problems else 0), [verdict, *problems]


def _run_compare(args: argparse.Namespace) -> int:
    problem = _executor_error(args)
    if problem:
        print(f"gamebridge: {problem}", file=sys.stderr)
        return 2
    frameworks = _frameworks(args.frameworks)
    out_dir = Path(args.out or f"runs/compare-{_stamp()}")
    code, _ = compare_games(
        [args.game], frameworks, args, out_dir, title=f"gamebridge compare: {args.game}"
    )
    return code


# --- export -----------------------------------------------------------------------------


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("--in", dest="inp", required=True, help="records JSONL (eval/compare output)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--keep", default="wins,draws", help="wins,draws,losses or all")
    p.set_defaults(func=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from rollouts.export import export_dataset, parse_keep, read_records

    try:
        keep = parse_keep(args.keep)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    records = read_records(args.inp)
    out, rows, saved = export_dataset(records, args.out, keep)
    _out(f"kept {rows} of {len(records)} episodes ({', '.join(sorted(keep))})")
    _out(
        f"wrote {out / 'data.jsonl'}"
        + (f" and a datasets folder {out}" if saved else " (datasets not installed: JSONL only)")
    )
    return 0


# --- demo -------------------------------------------------------------------------------


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, default=8, help="tasks per game (default %(default)s)")
    p.add_argument("--games", default=",".join(DEMO_GAMES), type=_games, help=GAME_HELP)
    p.add_argument("--frameworks", default=None, help="default: every available driver")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--policy", default=DEMO_POLICY, help="default %(default)s")
    p.add_argument("--concurrency", type=int, default=2)
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
    from rollouts.drivers import DRIVERS, driver_status

    if args.frameworks:
        frameworks = _frameworks(args.frameworks)
    else:
        frameworks = []
        for name in DRIVERS:
            ok, why = driver_status(name)
            if ok:
                frameworks.append(name)
            else:
                _out(f"skipping {name}: {why[:200]}")
    games: list[str] = args.games
    out_dir = Path(args.out or f"runs/demo-{_stamp()}")
    _out(
        f"demo: {', '.join(games)} x {args.n} tasks over {', '.join(frameworks)} "
        f"(embedded policy server, {args.policy})"
    )
    code, _ = compare_games(games, frameworks, args, out_dir, title="gamebridge demo")
    return code


# --- main -------------------------------------------------------------------------------

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "serve-policy": ("run the scripted OpenAI-compatible policy server", _add_serve),
    "eval": ("run tasks through one framework and summarise", _add_eval),
    "compare": ("run the same tasks through several frameworks; check identity", _add_compare),
    "export": ("turn rollout records into an SFT chat dataset", _add_export),
    "demo": ("compare tictactoe and othello over every available framework", _add_demo),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
            broken = sub.add_parser(name, help=f"(unavailable: {e})")
            broken.set_defaults(func=lambda _a, e=e: _unavailable(e))
            continue
        doc = (getattr(add_parser, "__doc__", None) or name).strip().splitlines()[0]
        add_parser(sub.add_parser(name, help=doc, description=doc))
    return parser


def _unavailable(e: Exception) -> int:
    print(f"gamebridge: this command is unavailable here: {e}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gamebridge`` console script."""
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
