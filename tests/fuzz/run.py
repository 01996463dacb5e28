"""``make fuzz``: hostile replies through the parser, every game and the Episode.

    python tests/fuzz/run.py                      # 100k inputs, seeded RNG engine
    python tests/fuzz/run.py --inputs 5000 --engine hypothesis
    python tests/fuzz/run.py --engine atheris --inputs 20000   # needs `pip install atheris`

Every input (one reply, grammar in ``fuzz_inputs.py``) goes through
``parse_reply`` (strict, think-required, lenient), ``Game.parse_move`` and
``Game.play`` on the current position (the raw reply and, if it parses, its
move text; one input in sixteen also every move-like token on a random reachable
position, finished games included) and ``Episode.step`` of a live episode of each game in
``list_games()`` in turn (tasks vary budget, cap, side, opponent, opening).
Anything but the typed errors escaping, or a broken invariant (see
``fuzz_inputs.EpisodeChecker``), is a finding: printed with the input, exit 1.
Prints inputs/s, outcomes by layer and error type, the largest reply, and how
the episodes ended.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (str(ROOT), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

MAX_FINDINGS = 10
HUGE_RATE = 0.002
"""Share of inputs allowed to be 1 MB (each is parsed, stepped, recorded and replayed)."""


class Fuzzer:
    """Shared by the engines: one input at a time, counting outcomes."""

    def __init__(self) -> None:
        import fuzz_inputs as fz

        from core.games import make_game

        self.fz = fz
        self.make_game = make_game
        self.figures = fz.Figures()
        self.games = fz.games()
        self.checkers: dict[str, Any] = {}
        self.findings: list[str] = []
        self.task_seed = 0

    def checker(self, ch: Any, game: str) -> Any:
        current = self.checkers.get(game)
        if current is None or current.episode.done:
            self.task_seed += 1
            current = self.fz.EpisodeChecker(self.fz.random_task(ch, game, self.task_seed))
            self.checkers[game] = current
            self.figures.episodes += 1
        return current

    def one(self, ch: Any, game_name: str, huge: bool) -> None:
        fz, fig = self.fz, self.figures
        checker = self.checker(ch, game_name)
        game, state = checker.episode.game, checker.episode.state
        reply = fz.hostile_reply(ch, game, state, huge=huge)
        fig.inputs += 1
        fig.max_reply_chars = max(fig.max_reply_chars, len(reply))
        try:
            parsed = fz.check_parse(reply)
            fig.count("parse_reply", parsed)
            fig.count("Game.play(reply)", fz.check_game(game, state, reply))
            if parsed == "ok":
                move = fz.parse_reply(reply).move
                fig.count("Game.play(move)", fz.check_game(game, state, move))
            if ch.integer(0, 15) == 0:  # any reachable position, finished games included:
                anywhere = fz.random_state(ch, game, ch.integer(0, 2**16))  # every token
                for text in fz.move_tokens(game, anywhere, fz.legal_texts(ch, game, anywhere)):
                    fig.count("Game.play(any pos)", fz.check_game(game, anywhere, text))
            if ch.integer(0, 3) == 0:  # a quarter as tool calls: the move text alone
                move_text = fz.parse_reply(reply).move if parsed == "ok" else reply
                fig.count("Episode.step_move", checker.step(move_text, tool=True))
            else:
                fig.count("Episode.step", checker.step(reply))
        except Exception as exc:  # every escape is a finding, typed or not
            self.findings.append(
                f"{game_name}: {type(exc).__name__}: {exc}\n  reply[:300] = {reply[:300]!r}\n"
                + "".join(traceback.format_exception(exc)[-4:])
            )
            self.checkers.pop(game_name, None)
            return
        if checker.episode.done:
            fig.endings[checker.episode.termination] += 1


def run_random(fuzzer: Fuzzer, inputs: int, seed: int) -> None:
    import fuzz_inputs as fz

    rng = random.Random(seed)
    ch = fz.RandomChooser(rng)
    for i in range(inputs):
        fuzzer.one(ch, fuzzer.games[i % len(fuzzer.games)], rng.random() < HUGE_RATE)
        if len(fuzzer.findings) >= MAX_FINDINGS:
            break


def run_hypothesis(fuzzer: Fuzzer, inputs: int, seed: int) -> None:
    import fuzz_inputs as fz
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    per_example = 8

    @hseed(seed)
    @settings(
        max_examples=max(1, inputs // per_example),
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(st.data())
    def body(data: Any) -> None:
        ch = fz.HypothesisChooser(data)
        fuzzer.checkers.clear()  # each example starts its own episode (no state across examples)
        fuzzer.task_seed = ch.integer(0, 2**16)
        game = ch.choice(fuzzer.games)
        for _ in range(per_example):
            fuzzer.one(ch, game, ch.integer(0, 500) == 0)

    body()


def run_atheris(fuzzer: Fuzzer, inputs: int, seed: int) -> None:
    try:
        import atheris
    except ImportError as e:
        raise SystemExit("atheris is not installed: .venv/bin/pip install atheris") from e
    import fuzz_inputs as fz

    def one_input(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        ch = fz.AtherisChooser(fdp)
        fuzzer.one(ch, ch.choice(fuzzer.games), ch.integer(0, 500) == 0)
        if fuzzer.findings or fuzzer.figures.inputs >= inputs:
            # libFuzzer ends the process with C exit(), past Python's atexit: report here.
            report(fuzzer, "atheris", time.perf_counter() - start)
            sys.stdout.flush()
            os._exit(1 if fuzzer.findings else 0)

    atheris.instrument_all()  # slow (every loaded module): not counted in inputs/s
    start = time.perf_counter()
    atheris.Setup(
        [sys.argv[0], f"-runs={inputs + 100}", f"-seed={seed + 1}", "-max_len=4096"], one_input
    )
    with contextlib.suppress(SystemExit):
        atheris.Fuzz()


def report(fuzzer: Fuzzer, engine: str, seconds: float) -> None:
    fig = fuzzer.figures
    print(
        f"engine {engine}: {fig.inputs} inputs in {seconds:.1f} s "
        f"({fig.inputs / max(seconds, 1e-9):,.0f} inputs/s), games {', '.join(fuzzer.games)}"
    )
    print(f"largest reply: {fig.max_reply_chars:,} chars")
    for layer, counts in fig.by_layer.items():
        parts = ", ".join(f"{k} {v}" for k, v in counts.most_common())
        print(f"  {layer:<18} {parts}")
    endings = ", ".join(f"{k} {v}" for k, v in fig.endings.most_common())
    print(f"episodes: {fig.episodes} started; ended by {endings}")
    print(f"findings: {len(fuzzer.findings)}")
    for finding in fuzzer.findings:
        print("-" * 60)
        print(finding)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=("random", "hypothesis", "atheris"), default="random")
    args = parser.parse_args(argv)
    fuzzer = Fuzzer()
    start = time.perf_counter()
    runner = {"random": run_random, "hypothesis": run_hypothesis, "atheris": run_atheris}
    try:
        runner[args.engine](fuzzer, args.inputs, args.seed)
    finally:
        report(fuzzer, args.engine, time.perf_counter() - start)
    return 1 if fuzzer.findings else 0


if __name__ == "__main__":
    sys.exit(main())
