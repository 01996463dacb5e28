"""The engines against OpenSpiel, in one process: Othello perft, random games,
alpha-beta.

Fairness rules (each is checked, not assumed):

* Both sides do the same work: perft counts are asserted equal (and equal to
  Aart Bik's published count), random games use the same ``random.Random``
  seed and move order, so both sides play the very same games (the ply totals
  are asserted equal), and both alpha-beta searches return the same minimax
  value from the same evaluation.
* Othello memoises legal moves per position in module-level tables; they are
  emptied before every timed run of either side, so no side runs on the
  other's (or its own previous run's) warm cache.
* OpenSpiel is driven as its Python users drive it: ``state.child(action)``
  to walk a tree (one C++ call: clone + apply), ``legal_actions()``,
  ``apply_action()``, ``is_terminal()``.
* Times are CPU times of this process (``time.process_time``), and each run
  times both sides back to back, so a ratio compares like with like even on
  a loaded machine.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.report import MismatchError, Row, Target, rate
from core import make_game
from core.perft import perft
from core.search import search

OTHELLO_PERFT = {1: 4, 2: 12, 3: 56, 4: 244, 5: 1396, 6: 8200, 7: 55092, 8: 390216}
"""Aart Bik's Othello perft counts (a pass is a ply); /work/shared/FACTS.md."""

MIDGAMES: tuple[tuple[str, str], ...] = (
    ("midgame A (16 plies)", "c4 c5 b6 d3 c2 a7 d6 e7 d7 e3 b5 d2 f7 b1 b7 c6"),
    (
        "midgame B (24 plies)",
        "d3 c3 b3 e3 f3 c5 f6 g2 b5 c6 f4 a5 h1 f5 d6 e7 d7 e6 d8 c4 c7 b7 a8 b6",
    ),
    (
        "midgame C (32 plies)",
        "c4 c5 f6 c3 b5 g7 e3 e6 c2 f3 g3 a5 h8 b3 f4 f2 b4 f5 f7 h3 a3 d2 e2 e1 a6 e7 d7 "
        "c1 c6 g8 f1 g4",
    ),
)
"""Fixed Othello positions for alpha-beta (seeded random openings, frozen here)."""


def _pyspiel() -> Any:
    try:
        import pyspiel
    except ImportError as e:
        raise ImportError(
            "the benchmarks compare against OpenSpiel; install with: pip install -e '.[dev]'"
        ) from e
    return pyspiel


def clear_memos() -> None:
    """Empty every position-keyed memo of the games (Othello's move tables)."""
    from core.games import othello

    for name in ("_LEGAL", "_ORDERED", "_MASKS"):
        table = getattr(othello, name, None)
        if isinstance(table, dict):
            table.clear()


def _cpu(fn: Callable[[], Any], repeats: int = 1) -> tuple[float, Any]:
    """CPU seconds of ``repeats`` calls of ``fn``, the memos emptied before
    each (untimed), and the last call's result."""
    total = 0.0
    result = None
    for _ in range(repeats):
        clear_memos()
        start = time.process_time()
        result = fn()
        total += time.process_time() - start
    return total, result


def _compare(
    runs: int,
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    check: Callable[[Any, Any], None],
    offset: int = 0,
    repeats: int = 1,
) -> tuple[list[float], list[float]]:
    """Time both sides ``runs`` times, alternating which goes first (ours in
    even runs, counting from ``offset``), after an untimed pass when ``offset``
    is 0; returns (our seconds, their seconds) per run."""
    if offset == 0:  # one untimed pass first: lazily built tables, imports, allocator
        check(_cpu(ours, repeats)[1], _cpu(theirs, repeats)[1])
    mine: list[float] = []
    other: list[float] = []
    for i in range(offset, offset + runs):
        if i % 2:
            t_theirs, r_theirs = _cpu(theirs, repeats)
            t_ours, r_ours = _cpu(ours, repeats)
        else:
            t_ours, r_ours = _cpu(ours, repeats)
            t_theirs, r_theirs = _cpu(theirs, repeats)
        check(r_ours, r_theirs)
        mine.append(t_ours)
        other.append(t_theirs)
    return mine, other


def _ratios(mine: Sequence[float], other: Sequence[float]) -> tuple[float, ...]:
    return tuple(b / a for a, b in zip(mine, other, strict=True))


# --- perft -------------------------------------------------------------------
def spiel_perft(state: Any, depth: int, bulk: bool) -> int:
    """Perft over pyspiel states (the same counting rules as ``core.perft``)."""
    actions = state.legal_actions()
    if depth == 1:
        if not bulk:
            for action in actions:
                state.child(action)
        return len(actions)
    child = state.child
    total = 0
    for action in actions:
        total += spiel_perft(child(action), depth - 1, bulk)
    return total


def perft_rows(runs: int, depth: int) -> list[Row]:
    pyspiel = _pyspiel()
    game = make_game("othello")
    spiel_game = pyspiel.load_game("othello")
    expected = OTHELLO_PERFT[depth]
    rows = []
    for bulk, label, target in ((True, "bulk", 3.0), (False, "every leaf", 4.0)):

        def check(a: int, b: int) -> None:
            if not a == b == expected:
                raise MismatchError(f"perft({depth}): ours {a}, OpenSpiel {b}, known {expected}")

        mine, other = _compare(
            runs,
            lambda bulk=bulk: perft(game, game.initial_state(), depth, bulk),
            lambda bulk=bulk: spiel_perft(spiel_game.new_initial_state(), depth, bulk),
            check,
        )
        rows.append(
            Row(
                "Othello perft",
                f"perft({depth}) {label}",
                rate(expected, statistics.median(mine), "leaves"),
                rate(expected, statistics.median(other), "leaves"),
                _ratios(mine, other),
                "x",
                Target(target),
                f"{expected:,} leaves on both sides; ours generates the moves of all the "
                "children of a position in one packed pass (`perft3`/`perft2`)"
                + (
                    ""
                    if bulk
                    else " and makes every leaf's position with `children` (`apply`'s code, "
                    "one call per position)"
                ),
            )
        )
    return rows


# --- random games ------------------------------------------------------------
def play_ours(name: str, games: int, seed: int) -> int:
    """Random-vs-random games; returns the plies played."""
    game = make_game(name)
    choice = random.Random(seed).choice
    legal_moves, apply, initial = game.legal_moves, game.apply, game.initial_state
    plies = 0
    for _ in range(games):
        state = initial()
        moves = legal_moves(state)
        while moves:
            state = apply(state, choice(moves))
            plies += 1
            moves = legal_moves(state)
    return plies


def play_spiel(spiel_game: Any, games: int, seed: int) -> int:
    choice = random.Random(seed).choice
    plies = 0
    for _ in range(games):
        state = spiel_game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(choice(state.legal_actions()))
            plies += 1
    return plies


GAMES = (
    ("Tic-Tac-Toe", "tictactoe", "tic_tac_toe", 1.0),
    ("Othello", "othello", "othello", 1.0),
    ("Connect Four", "connect_four", "connect_four", None),
)


def random_game_rows(runs: int, counts: dict[str, int]) -> list[Row]:
    pyspiel = _pyspiel()
    rows = []
    for title, name, spiel_name, target in GAMES:
        spiel_game = pyspiel.load_game(spiel_name)
        n = counts[name]

        def check(a: int, b: int, name: str = name) -> None:
            if a != b:
                raise MismatchError(f"{name}: ours played {a} plies, OpenSpiel {b}")

        mine: list[float] = []
        other: list[float] = []
        for i in range(runs):  # one seed per run, both sides: the same games
            seed = 1000 + i
            m, o = _compare(
                1,
                lambda: play_ours(name, n, seed),  # noqa: B023
                lambda: play_spiel(spiel_game, n, seed),  # noqa: B023
                check,
                offset=i,
            )
            mine += m
            other += o
        rows.append(
            Row(
                "Random games",
                f"{title} random vs random",
                rate(n, statistics.median(mine), "games"),
                rate(n, statistics.median(other), "games"),
                _ratios(mine, other),
                "x",
                Target(target) if target is not None else None,
                f"{n:,} games a run, the same games on both sides",
            )
        )
    return rows


# --- alpha-beta ----------------------------------------------------------------
_FLOAT_ONE = 0x3F
_BYTES_TO_BITS = bytes.maketrans(bytes([0, _FLOAT_ONE]), b"01")


class SpielConverter:
    """pyspiel Othello state -> our state, cheaply.

    OpenSpiel writes its observation planes (empty, Black, White: 64 float32
    each) into a preallocated buffer (``Observation.set_from``, one C++ call);
    the high byte of each float is 0x3F for 1.0 and 0 for 0.0, so the Black and
    White planes become two 64-bit ints through bytes slicing, ``translate``
    and ``int(..., 2)`` (all C). About 3 µs a call, against 10-20 µs for
    ``observation_tensor()`` (a Python list of 192 floats).
    """

    def __init__(self, spiel_game: Any) -> None:
        from open_spiel.python.observation import make_observation

        self.observation = make_observation(spiel_game)
        self.buffer = memoryview(self.observation.tensor)
        self.calls = 0

    def __call__(self, state: Any) -> tuple[int, int, int]:
        self.observation.set_from(state, 0)
        bits = self.buffer.tobytes()[259:771:4].translate(_BYTES_TO_BITS)
        black = int(bits[63::-1], 2)
        white = int(bits[127:63:-1], 2)
        return (black, white, 0) if state.current_player() == 0 else (white, black, 1)


def _positions() -> list[tuple[str, list[int]]]:
    game = make_game("othello")
    out = [("start", [])]
    for label, text in MIDGAMES:
        state = game.initial_state()
        moves = []
        for token in text.split():
            move = game.parse_move(state, token)
            moves.append(move)
            state = game.apply(state, move)
        out.append((label, moves))
    return out


def alpha_beta_rows(runs: int, depths: Sequence[int], repeats: int) -> tuple[list[Row], str]:
    """One row per (depth, position) and a total row per depth (the judged one
    at depth 4); returns the rows and a note on the conversion's cost."""
    pyspiel = _pyspiel()
    from open_spiel.python.algorithms import minimax

    game = make_game("othello")
    spiel_game = pyspiel.load_game("othello")
    convert = SpielConverter(spiel_game)
    evaluate = game.evaluate
    rows: list[Row] = []
    conversion_share: list[float] = []

    # The conversion's own cost, to report how much of OpenSpiel's time it is.
    probe = spiel_game.new_initial_state()
    for move in _positions()[2][1]:
        probe.apply_action(move)
    start = time.process_time()
    for _ in range(20000):
        convert(probe)
    convert_s = (time.process_time() - start) / 20000

    for depth in depths:
        total_mine = [0.0] * runs
        total_other = [0.0] * runs
        total_calls = 0.0
        for label, moves in _positions():
            state = game.initial_state()
            spiel_state = spiel_game.new_initial_state()
            for move in moves:
                state = game.apply(state, move)
                spiel_state.apply_action(move)
            if convert(spiel_state) != state:
                raise MismatchError(f"{label}: the converted OpenSpiel state differs")
            me = spiel_state.current_player()

            def value(s: Any, me: int = me) -> float:
                convert.calls += 1
                return evaluate(convert(s), me)

            def ours(state: Any = state, depth: int = depth) -> float:
                return search(game, state, depth).value

            def theirs(spiel_state: Any = spiel_state, depth: int = depth, me: int = me) -> float:
                return float(
                    minimax.alpha_beta_search(
                        spiel_game,
                        spiel_state.clone(),
                        value_function=value,
                        maximum_depth=depth,
                        maximizing_player_id=me,
                    )[0]
                )

            def check(a: float, b: float, label: str = label) -> None:
                if abs(a) < 1 and abs(a - b) > 1e-9:
                    raise MismatchError(f"alpha-beta {label}: ours {a}, OpenSpiel {b}")

            convert.calls = 0
            mine, other = _compare(runs, ours, theirs, check, repeats=repeats)
            calls = convert.calls / (runs + 1)  # the untimed pass called it too
            total_calls += calls
            share = calls * convert_s / statistics.median(other)
            conversion_share.append(share)
            for i in range(runs):
                total_mine[i] += mine[i]
                total_other[i] += other[i]
            rows.append(
                Row(
                    f"Othello alpha-beta, depth {depth}",
                    f"depth {depth}, {label}",
                    f"{statistics.median(mine) / repeats * 1e3:.1f} ms",
                    f"{statistics.median(other) / repeats * 1e3:.1f} ms",
                    _ratios(mine, other),
                    "x",
                    None,
                    f"{calls / repeats:,.0f} OpenSpiel leaf evaluations",
                )
            )
        without = [
            (o - total_calls * convert_s) / m for m, o in zip(total_mine, total_other, strict=True)
        ]
        rows.append(
            Row(
                f"Othello alpha-beta, depth {depth}",
                f"depth {depth}, all four positions",
                f"{statistics.median(total_mine) / repeats * 1e3:.1f} ms",
                f"{statistics.median(total_other) / repeats * 1e3:.1f} ms",
                _ratios(total_mine, total_other),
                "x",
                Target(5.0) if depth == 4 else None,
                "sum of the four searches; without OpenSpiel's conversion time "
                f"{statistics.median(without):.2f}x",
            )
        )
    note = (
        "Alpha-beta: both sides score a leaf with `Othello.evaluate` (ours); OpenSpiel's "
        "`minimax.alpha_beta_search` gets it through a value function that converts the "
        f"pyspiel state (`SpielConverter`: {convert_s * 1e6:.1f} µs a call, "
        f"{min(conversion_share):.0%}-{max(conversion_share):.0%} of OpenSpiel's time). Both "
        "return the same minimax value (asserted). Ours adds move ordering, a transposition "
        "table, PVS and iterative deepening: the ratio is search against search."
    )
    return rows, note
