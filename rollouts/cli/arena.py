"""``gamebridge arena``: players (bots, endpoints) rated in a round robin."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rollouts.cli.args import (
    _at_least,
    _game_help,
    _games,
    _positive,
)
from rollouts.cli.common import (
    Interrupts,
    Terminated,
    UsageError,
    _announce_servers,
    _call_policy,
    _err,
    _out,
    _resume_command,
    _unique_dir,
)

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


def _schedule(args: argparse.Namespace) -> tuple[list[Any], list[Any], int]:
    """The players, the pairings and the opening plies the flags ask for (a bad player
    or game is a usage error); a pairing left out is said."""
    from core.arena import DEFAULT_OPENING_PLIES, ArenaError, round_robin
    from rollouts.evaluation.arena import bots_of, parse_players

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
    for a, b in skipped:
        _err(f"{a} vs {b} left out")
    return players, pairings, plies


def _write_results(
    args: argparse.Namespace,
    out_dir: Path,
    run: Any,
    finished: list[Any],
    total: int,
    names: list[str],
    plies: int,
) -> None:
    """The finished games' ratings (printed, ``ratings.json``, ``--docs``) and the
    HTML report with their replay."""
    from rollouts.evaluation.arena import RECORDS
    from rollouts.evaluation.ratings import (
        arena_ratings,
        format_ratings,
        ratings_json,
        ratings_markdown,
        write_docs,
    )
    from rollouts.evaluation.report import replay_episodes, write_report

    try:
        ratings = arena_ratings(finished, names)
    except ValueError as e:
        _err(f"no ratings: {e}")
        ratings = {}
    _out(f"{len(finished)} of {total} games ({run.ran} played now) in {run.elapsed:.2f}s")
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


def _run_arena(args: argparse.Namespace) -> int:
    from rollouts.evaluation.arena import RECORDS, arena_header, run_arena
    from rollouts.evaluation.records import RecordFileError

    if args.resume and not args.out:
        raise UsageError("--resume needs --out DIR (the arena folder to complete)")
    players, pairings, plies = _schedule(args)
    names = [p.name for p in players]
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
    _write_results(args, out_dir, run, finished, len(pairings), names, plies)
    if run.stopped or len(records) < len(pairings):
        _err(f"stopped before the end: {len(pairings) - len(records)} games not played")
        _err(f"resume with: {_resume_command(args, out_dir)}")
        return 130
    if failed:
        _err(f"{len(failed)} games failed; resume with: {_resume_command(args, out_dir)}")
        return 1
    return 0
