"""``gamebridge eval``, ``compare`` and ``demo``: tasks run through one framework or
several (what they run is ``rollouts.evaluation.compare``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rollouts.cli.args import (
    DEFAULT_COMPARE_POLICY,
    DEFAULT_EVAL_POLICY,
    DEMO_GAMES,
    DEMO_POLICY,
    OPPONENT_CHOICES,
    POLICY_HELP,
    _depth,
    _framework,
    _framework_help,
    _frameworks_arg,
    _game,
    _game_help,
    _games,
    _policy,
    _positive,
)
from rollouts.cli.common import (
    Interrupts,
    Terminated,
    UsageError,
    _announce_servers,
    _check_endpoint,
    _err,
    _out,
    _policy_name,
    _request,
    _resume_command,
    _settings,
    _unavailable_framework,
    _unique_dir,
)
from rollouts.cli.comparison import compare_games
from rollouts.evaluation.compare import (
    choose_frameworks,
    endpoint,
    make_tasks,
    run_into_file,
)

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
        help="who plays each seat, e.g. outside,outside (the endpoint in both seats: "
        "self-play, in each framework's own terms, docs/two-seats.md) or outside,mcts:2",
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


def _check_seats(args: argparse.Namespace, driver: Any) -> None:
    """``--seats`` the driver cannot play is a usage error, said before any task runs:
    a driver of one outside seat, or several outside seats in the one conversation a
    framework keeps per rollout where the game hides information."""
    seats = getattr(args, "seats", None)
    if not seats:
        return
    if driver.seats is None:
        raise UsageError(
            f"--seats: the {args.framework} driver plays one outside seat (docs/two-seats.md)"
        )
    from core.games import make_game
    from rollouts.drivers import DRIVERS, get_driver
    from rollouts.drivers.seats import CHAT_PER_SEAT, ONE_CHAT

    several = seats.split(",").count("outside") > 1
    if several and driver.seats == ONE_CHAT and make_game(args.game).spec.hidden_information:
        per_seat = [name for name in DRIVERS if get_driver(name).seats == CHAT_PER_SEAT]
        raise UsageError(
            f"--seats: {args.framework} plays every outside seat in one conversation, which "
            f"would show each seat what {args.game} hides from it; use a framework that keeps "
            f"one conversation per seat ({', '.join(per_seat)}: docs/two-seats.md)"
        )


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
    driver = get_driver(args.framework)
    _check_seats(args, driver)
    _check_endpoint(args)
    header = run_header(args.framework, tasks, policy=_policy_name(args))
    header.update(game=args.game, seed=args.seed, base_url=args.base_url)
    out = Path(args.out) if args.out else unique_path("runs", f"eval-{args.framework}-{args.game}")
    _out(f"writing records to {out} as episodes finish")
    _announce_servers()
    try:
        with Interrupts() as interrupts, endpoint(args.base_url, args.policy, args.seed) as url:
            request = replace(_request(args, interrupts.stop), base_url=url)
            run = run_into_file(driver, tasks, out, header, request, resume=args.resume)
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
        from rollouts.record import describe_failure, failure_line

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
            "--seats: the frameworks play several outside seats in different conversation "
            "shapes (one per seat, or one for all), so their runs do not compare move for "
            "move (docs/two-seats.md); use eval --framework NAME --seats"
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
