"""``make bench`` (``python -m bench.run``): gamebridge against OpenSpiel and
the adapters against the bare Episode, in one run; prints the table and
rewrites the generated section of docs/performance.md.

``--quick`` runs every in-process benchmark on tiny inputs in seconds (no HTTP
servers, no doc rewrite unless ``--doc`` is given): tests/test_bench_quick.py
runs it so this code does not rot. Its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import breakdown, engine, servers, steps
from bench.report import (
    COMMAND,
    DOC,
    Row,
    load_average,
    machine,
    section_text,
    text_table,
    write_doc,
)


@dataclass(frozen=True)
class Sizes:
    """How much work each benchmark does per run."""

    runs: int
    perft_depth: int
    random_games: dict[str, int]
    search_depths: tuple[int, ...]
    search_repeats: int
    step_games_per_game: int
    http_games_per_game: int
    import_runs: int


FULL = Sizes(
    runs=7,
    perft_depth=8,
    random_games={"tictactoe": 20000, "othello": 300, "connect_four": 4000},
    search_depths=(3, 4),
    search_repeats=9,
    step_games_per_game=12,
    http_games_per_game=12,
    import_runs=21,
)
QUICK = Sizes(
    runs=2,
    perft_depth=4,
    random_games={"tictactoe": 50, "othello": 2, "connect_four": 10},
    search_depths=(2,),
    search_repeats=1,
    step_games_per_game=1,
    http_games_per_game=0,
    import_runs=2,
)


def run(
    sizes: Sizes, *, http: bool, rl: bool = False, log: bool = True
) -> tuple[list[Row], list[str]]:
    """Every benchmark; returns the rows and notes for the table."""

    def say(text: str) -> None:
        if log:
            print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    rows: list[Row] = []
    notes: list[str] = []
    say(f"Othello perft({sizes.perft_depth}), {sizes.runs} runs")
    rows += engine.perft_rows(sizes.runs, sizes.perft_depth)
    say("random games")
    rows += engine.random_game_rows(sizes.runs, sizes.random_games)
    say(f"alpha-beta at depths {sizes.search_depths}")
    search_rows, note = engine.alpha_beta_rows(
        sizes.runs, sizes.search_depths, sizes.search_repeats
    )
    rows += search_rows
    notes.append(note)
    say("Episode and in-process adapters")
    games = steps.scripted_games(sizes.step_games_per_game)
    default_games = steps.scripted_games(sizes.step_games_per_game, "default")
    rows += steps.episode_rows(sizes.runs, games, default_games)
    notes.append(
        "Verifiers: not stepped in process. Its adapter's step lives inside `GameEnv.run()`, "
        "which only advances when Verifiers' runtime delivers a model turn through its "
        "interception server (`interaction.turn`), so there is no step to call without a "
        "model endpoint and the runtime around it (each step is a model call through that "
        "server); docs/verifiers.md reports that path's per-step overhead, measured end to "
        "end with the scripted policy server."
    )
    if http:
        say("HTTP adapters (starts the OpenEnv and NeMo Gym servers)")
        http_games = steps.scripted_games(sizes.http_games_per_game)
        http_rows, skipped = steps.http_rows(http_games)
        rows += http_rows
        notes += skipped
    else:
        notes.append("HTTP adapters not measured in this run (--no-http or --quick).")
    say("the step itself: Episode.step by phase, and next to a model call")
    rows += breakdown.breakdown_rows(sizes.runs, games)
    share, share_notes = breakdown.share_rows(rows)
    rows += share
    notes += share_notes
    say("import core")
    rows += steps.import_rows(sizes.import_runs)
    if rl:
        say("RL updates: today's settings against the new ones (bench.rl; minutes)")
        from bench import rl as rl_bench

        rl_rows, rl_notes = rl_bench.rl_rows(runs=3, updates=3)
        rows += rl_rows
        notes += rl_notes
    else:
        notes.append("RL updates not measured in this run (--no-rl or --quick).")
    notes.append(
        "Engine and in-process rows are CPU times of the benchmark process "
        "(`time.process_time`), both sides timed back to back in each run (their order "
        "alternating), so other engineers' load on the shared machine sways the ratios less "
        "than wall time would (it still does: compare runs' min - max); HTTP latencies and "
        "`import core` are wall clock."
    )
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, seconds; no HTTP")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP adapters")
    parser.add_argument(
        "--no-servers",
        action="store_true",
        help="skip the servers against their floors (bench.servers; make load runs it too)",
    )
    parser.add_argument(
        "--no-rl", action="store_true", help="skip the RL update throughput (bench.rl)"
    )
    parser.add_argument("--runs", type=int, help="runs per benchmark (default 7, quick 2)")
    parser.add_argument(
        "--doc",
        type=Path,
        help=f"rewrite this file's generated section (default: {DOC.name} on a full run, "
        "nothing with --quick)",
    )
    parser.add_argument("--no-doc", action="store_true", help="do not write any doc")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    sizes = QUICK if args.quick else FULL
    if args.runs is not None:
        if args.runs < 1:
            parser.error("--runs must be at least 1")
        sizes = Sizes(**{**asdict(sizes), "runs": args.runs})
    load_before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    http = not (args.quick or args.no_http)
    rows, notes = run(sizes, http=http, rl=not (args.quick or args.no_rl))
    floors = http and not args.no_servers
    if floors:  # every server against its framework's floor: its own section of the page
        print(f"[bench {time.strftime('%H:%M:%S')}] servers against their floors", file=sys.stderr)
        floor_started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        floor_load = load_average()
        floor_rows, floor_notes, _ = servers.run(servers.SERVERS, servers.Sizes())
    info = machine()
    info["load average (1/5/15 min) before, after"] = f"{load_before}; {load_average()}"
    print(text_table(rows))
    for note in notes:
        print(f"* {note}")
    if floors:
        print(text_table(floor_rows))
        for note in floor_notes:
            print(f"* {note}")

    doc = None if args.no_doc else (args.doc or (None if args.quick else DOC))
    if doc is not None:
        flags = ["--quick"] * args.quick + ["--no-http"] * args.no_http
        flags += ["--no-servers"] * args.no_servers + ["--no-rl"] * args.no_rl
        flags += [f"--runs {args.runs}"] * (args.runs is not None)
        command = " ".join([".venv/bin/python -m bench.run", *flags]) if flags else COMMAND
        write_doc(doc, section_text(rows, info, notes, command, started))
        if floors:
            floor_info = {
                **info,
                "load average (1/5/15 min) before, after": f"{floor_load}; {load_average()}",
            }
            floor_text = servers.section_text(
                floor_rows, floor_info, floor_notes, command + " (its servers part)", floor_started
            )
            write_doc(doc, floor_text, servers.BEGIN, servers.END)
        print(f"wrote {doc}", file=sys.stderr)
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {"machine": info, "notes": notes, "rows": [asdict(r) for r in rows]}, indent=2
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
