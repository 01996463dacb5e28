"""Opponents: uniform tie-breaking, a perfect Tic-Tac-Toe player, mixing,
determinism across processes, and no global randomness."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from core import make_game
from core.opponents import (
    MinimaxOpponent,
    MixedOpponent,
    Opponent,
    RandomOpponent,
    make_opponent,
    opponent_rng,
)
from core.search import search

ROOT = Path(__file__).resolve().parent.parent
TTT = make_game("tictactoe")

# Upper 0.1% points of the chi-square distribution (df = categories - 1).
CHI2_CRITICAL_001 = {2: 13.816, 3: 16.266, 5: 20.515, 6: 22.458, 8: 26.124}


def _chi_square(counts: Counter[Any], categories: tuple[Any, ...]) -> float:
    n = sum(counts.values())
    expected = n / len(categories)
    return sum((counts[c] - expected) ** 2 / expected for c in categories)


def _play(moves: str) -> Any:
    state = TTT.initial_state()
    for text in moves.split():
        state = TTT.play(state, text)
    return state


# --- ties are broken uniformly -------------------------------------------------


@pytest.mark.parametrize(
    ("moves", "depth", "ties"),
    [
        ("", 9, tuple(range(9))),  # every first move draws
        ("4", 8, (0, 2, 6, 8)),  # against the centre only a corner holds
        ("0 8", 2, (2, 4, 6)),  # shallow: the evaluation ties three moves
        ("4 0", 2, (1, 2, 3, 5, 6, 7, 8)),
    ],
    ids=["empty-board", "after-centre", "shallow-3", "shallow-7"],
)
def test_ties_broken_uniformly(moves: str, depth: int, ties: tuple[int, ...]) -> None:
    state = _play(moves)
    assert search(TTT, state, depth).best_moves == ties
    opponent = MinimaxOpponent(depth)
    draws = 200 * len(ties)
    counts = Counter(
        opponent.choose(TTT, state, opponent_rng(seed, "tictactoe", state)) for seed in range(draws)
    )
    assert set(counts) == set(ties)
    assert _chi_square(counts, ties) < CHI2_CRITICAL_001[len(ties) - 1]


def test_random_opponent_uniform() -> None:
    state = _play("4 0 8")
    moves = TTT.legal_moves(state)
    opponent = RandomOpponent()
    counts = Counter(opponent.choose(TTT, state, random.Random(seed)) for seed in range(1200))
    assert _chi_square(counts, moves) < CHI2_CRITICAL_001[len(moves) - 1]


# --- the full-depth Tic-Tac-Toe opponent never loses ---------------------------


@pytest.mark.parametrize("side", [0, 1], ids=["as-X", "as-O"])
def test_full_depth_minimax_never_loses(side: int) -> None:
    """Every line of play of the other side, against every move the opponent
    may pick (each tied best move, so every possible rng), ends in no loss."""
    opponent = make_opponent("minimax", depth=9, random_move_prob=0.0)
    assert isinstance(opponent, MinimaxOpponent)
    seen: set[Any] = set()
    results: Counter[str] = Counter()

    def visit(state: Any) -> None:
        if state in seen:
            return
        seen.add(state)
        outcome = TTT.outcome(state)
        if outcome is not None:
            results[outcome.result_for(side)] += 1
            return
        if TTT.to_play(state) == side:
            best = opponent.search(TTT, state).best_moves
            chosen = opponent.choose(TTT, state, opponent_rng(0, "tictactoe", state))
            assert chosen in best
            for move in best:
                visit(TTT.apply(state, move))
        else:
            for move in TTT.legal_moves(state):
                visit(TTT.apply(state, move))

    visit(TTT.initial_state())
    assert results["loss"] == 0
    assert results["win"] > 0 and results["draw"] > 0


def test_full_depth_minimax_takes_a_win_and_blocks() -> None:
    opponent = MinimaxOpponent(9)
    win = _play("0 3 1 4")  # X wins at 2
    block = _play("0 4 1")  # O must block at 2
    for seed in range(20):
        assert opponent.choose(TTT, win, opponent_rng(seed, "tictactoe", win)) == 2
        assert opponent.choose(TTT, block, opponent_rng(seed, "tictactoe", block)) == 2


# --- mixing --------------------------------------------------------------------


def _positions() -> list[Any]:
    return [_play(m) for m in ("", "4", "0", "4 0", "0 4 8", "1 4 7 3", "0 1 2 4 3")]


def test_mixed_at_one_is_random_and_at_zero_is_base() -> None:
    minimax = MinimaxOpponent(3)
    random_player = RandomOpponent()
    always_random = MixedOpponent(minimax, 1.0)
    never_random = MixedOpponent(minimax, 0.0)
    for state in _positions():
        for seed in range(30):

            def rng(seed: int = seed, state: Any = state) -> random.Random:
                return opponent_rng(seed, "tictactoe", state)

            assert always_random.choose(TTT, state, rng()) == random_player.choose(
                TTT, state, rng()
            )
            assert never_random.choose(TTT, state, rng()) == minimax.choose(TTT, state, rng())


def test_mixed_plays_random_moves_at_the_given_rate() -> None:
    # After X centre and O edge, full-depth minimax X has a set of winning moves;
    # a random move outside it shows the random branch was taken.
    state = _play("4 1")
    base = MinimaxOpponent(7)
    best = set(base.search(TTT, state).best_moves)
    legal = TTT.legal_moves(state)
    p = 0.3
    mixed = MixedOpponent(base, p)
    n = 3000
    outside = sum(
        mixed.choose(TTT, state, opponent_rng(seed, "tictactoe", state)) not in best
        for seed in range(n)
    )
    rate = p * (len(legal) - len(best)) / len(legal)
    sd = math.sqrt(n * rate * (1 - rate))
    assert abs(outside - n * rate) < 4 * sd


def test_make_opponent() -> None:
    assert isinstance(make_opponent(), MinimaxOpponent)
    assert make_opponent().name == "minimax:2"
    assert isinstance(make_opponent("random"), RandomOpponent)
    assert isinstance(make_opponent("random", depth=0, random_move_prob=0.5), RandomOpponent)
    mixed = make_opponent("minimax", 3, 0.25)
    assert isinstance(mixed, MixedOpponent)
    assert isinstance(mixed.base, MinimaxOpponent) and mixed.base.depth == 3
    assert mixed.random_move_prob == 0.25
    assert isinstance(make_opponent("minimax", 4, 0.0), MinimaxOpponent)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "alphabeta"},
        {"kind": "Minimax"},
        {"depth": 0},
        {"depth": -2},
        {"depth": 2.5},
        {"depth": True},
        {"random_move_prob": -0.1},
        {"random_move_prob": 1.5},
        {"random_move_prob": float("nan")},
        {"random_move_prob": "0.5"},
        {"kind": "random", "random_move_prob": 2.0},
    ],
)
def test_make_opponent_rejects(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make_opponent(**kwargs)


@pytest.mark.parametrize(
    "opponent",
    [RandomOpponent(), MinimaxOpponent(2), MixedOpponent(MinimaxOpponent(2), 0.5)],
    ids=lambda o: o.name,
)
def test_no_move_in_a_finished_game(opponent: Opponent) -> None:
    for seed in range(5):  # seeds taking either branch of the mixed opponent
        with pytest.raises(ValueError, match="game is over"):
            opponent.choose(TTT, _play("0 3 1 4 2"), random.Random(seed))


def test_never_touches_the_global_random(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the global random module was used")

    for name in (
        "random",
        "choice",
        "choices",
        "randrange",
        "randint",
        "shuffle",
        "sample",
        "seed",
    ):
        monkeypatch.setattr(random, name, forbidden)
    opponent = make_opponent("minimax", 2, 0.5)
    for seed in range(20):
        state = _play("4")
        opponent.choose(TTT, state, opponent_rng(seed, "tictactoe", state))
        RandomOpponent().choose(TTT, state, opponent_rng(seed, "tictactoe", state))


def test_opponent_rng_depends_on_seed_game_and_position() -> None:
    a, b = _play("4"), _play("0")

    def draws(rng: random.Random) -> list[float]:
        return [rng.random() for _ in range(3)]

    assert draws(opponent_rng(1, "tictactoe", a)) == draws(opponent_rng(1, "tictactoe", a))
    assert draws(opponent_rng(1, "tictactoe", a)) != draws(opponent_rng(2, "tictactoe", a))
    assert draws(opponent_rng(1, "tictactoe", a)) != draws(opponent_rng(1, "tictactoe", b))
    assert draws(opponent_rng(1, "tictactoe", a)) != draws(opponent_rng(1, "othello", a))


# --- determinism across processes -------------------------------------------------

_GAMES = ["tictactoe"] + [
    name
    for name in ("connect_four", "othello")
    if importlib.util.find_spec(f"core.games.{name}") is not None
]

# ``picks`` lists, for each game, opponent and seed, the moves an opponent picks
# along a game played by seeded random moves. It runs in this process and in
# subprocesses with other PYTHONHASHSEED values.
_SCRIPT = """
import random
from core import make_game
from core.opponents import make_opponent, opponent_rng

def picks(names):
    out = {}
    for name in names:
        game = make_game(name)
        for kind, depth, p in (("minimax", 2, 0.0), ("minimax", 1, 0.5), ("random", 1, 0.0)):
            opponent = make_opponent(kind, depth, p)
            for seed in range(4):
                walk = random.Random(seed)
                state = game.initial_state()
                chosen = []
                for _ in range(12):
                    moves = game.legal_moves(state)
                    if not moves:
                        break
                    pick = opponent.choose(game, state, opponent_rng(seed, name, state))
                    chosen.append(game.move_to_text(state, pick))
                    state = game.apply(state, walk.choice(moves))
                out[f"{name}/{opponent.name}/{seed}"] = chosen
    return out
"""
_MAIN = """
import json, sys
print(json.dumps(picks(sys.argv[1].split(","))))
"""


def _run(hash_seed: str | None) -> dict[str, list[str]]:
    env = dict(os.environ)
    if hash_seed is None:
        env.pop("PYTHONHASHSEED", None)
    else:
        env["PYTHONHASHSEED"] = hash_seed
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT + _MAIN, ",".join(_GAMES)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, list[str]] = json.loads(proc.stdout)
    return result


def test_same_moves_in_any_process() -> None:
    first = _run("1")
    assert first == _run("987654")
    assert first == _run(None)  # a random hash seed
    namespace: dict[str, Any] = {}
    exec(_SCRIPT, namespace)
    assert namespace["picks"](_GAMES) == first
    # The picks differ between seeds (else the comparison above proves little).
    assert len({tuple(v) for v in first.values()}) > len(first) // 2


def test_distribution_is_the_policy_choose_samples() -> None:
    """``Opponent.distribution``: every move ``choose`` may play, with its probability;
    the frequencies of many seeded choices agree with it."""
    import random as _random

    from core.games import make_game
    from core.opponents import MctsOpponent, MinimaxOpponent, MixedOpponent, RandomOpponent

    game = make_game("tictactoe")
    state = game.apply(game.initial_state(), game.legal_moves(game.initial_state())[0])
    mixed = MixedOpponent(MinimaxOpponent(2), 0.3)
    for opponent in (RandomOpponent(), MinimaxOpponent(2), mixed):
        dist = opponent.distribution(game, state)
        assert abs(sum(dist.values()) - 1.0) < 1e-9
        assert set(dist) <= set(game.legal_moves(state))
        rng = _random.Random(7)
        draws = [opponent.choose(game, state, rng) for _ in range(4000)]
        for move, p in dist.items():
            assert abs(draws.count(move) / len(draws) - p) < 0.03, (opponent, move)
        assert set(draws) <= set(dist)
    best = MinimaxOpponent(2).distribution(game, state)
    assert mixed.distribution(game, state)[next(iter(best))] > 0.7 * max(best.values())
    with pytest.raises(NotImplementedError):
        MctsOpponent(1).distribution(game, state)
