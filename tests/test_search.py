"""Alpha-beta search: the same values and best-move sets as plain minimax,
exact root ties, the speed preference for wins and losses, and its errors."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from core import make_game
from core.games.base import Game, GameSpec, Outcome, Termination
from core.search import WIN_BONUS, WIN_VALUE, SearchResult, search, terminal_value


def _minimax(game: Game[Any, Any], state: Any, depth: int, memo: dict[Any, float]) -> float:
    """Plain negamax without pruning: the reference the search must match.
    ``memo`` only remembers finished (state, depth) values; it prunes nothing."""
    key = (state, depth)
    if key in memo:
        return memo[key]
    player = game.to_play(state)
    moves = game.legal_moves(state)
    if not moves:
        best = terminal_value(game.outcome(state), player, depth)
    elif depth == 0:
        best = game.evaluate(state, player)
    else:
        best = -float("inf")
        for move in moves:
            child = game.apply(state, move)
            value = _minimax(game, child, depth - 1, memo)
            best = max(best, value if game.to_play(child) == player else -value)
    memo[key] = best
    return best


def _reference(game: Game[Any, Any], state: Any, depth: int) -> tuple[float, tuple[Any, ...]]:
    """The root value and every root move reaching it, by plain minimax."""
    player = game.to_play(state)
    memo: dict[Any, float] = {}
    values = {}
    for move in game.legal_moves(state):
        child = game.apply(state, move)
        value = _minimax(game, child, depth - 1, memo)
        values[move] = value if game.to_play(child) == player else -value
    best = max(values.values())
    return best, tuple(m for m in game.legal_moves(state) if values[m] == best)


def _random_positions(game: Game[Any, Any], count: int, max_plies: int, seed: int) -> list[Any]:
    """Non-terminal positions reached by random play (seeded, so fixed)."""
    rng = random.Random(seed)
    positions = []
    while len(positions) < count:
        state = game.initial_state(rng)
        for _ in range(rng.randrange(max_plies + 1)):
            moves = game.legal_moves(state)
            if not moves:
                break
            state = game.apply(state, rng.choice(moves))
        if not game.is_terminal(state):
            positions.append(state)
    return positions


# game, positions, plies of random play before them, depths checked
CASES = [
    pytest.param("tictactoe", 40, 6, (1, 2, 3, 4, 9), id="tictactoe"),
    pytest.param(
        "connect_four",
        12,
        20,
        (1, 2, 3, 4),
        id="connect_four",
    ),
    pytest.param(
        "othello",
        12,
        60,  # up to the endgame, where passes and exact scores come in
        (1, 2, 3),
        id="othello",
    ),
]


@pytest.mark.parametrize(("name", "count", "plies", "depths"), CASES)
def test_matches_plain_minimax(name: str, count: int, plies: int, depths: tuple[int, ...]) -> None:
    game = make_game(name)
    for state in _random_positions(game, count, plies, seed=len(name)):
        for depth in depths:
            expected = _reference(game, state, depth)
            got = search(game, state, depth)
            assert (got.value, got.best_moves) == expected, (depth, game.render(state))
            deepened = search(game, state, depth, iterative=False)
            assert (deepened.value, deepened.best_moves) == expected
            small_table = search(game, state, depth, max_table_size=8)
            assert (small_table.value, small_table.best_moves) == expected


# --- a toy game whose players do not always alternate -------------------------


@dataclass(frozen=True)
class _PileState:
    stones: int
    player: int
    winner: int | None = None


class _ExtraTurnNim(Game[_PileState, int]):
    """Take 1-3 stones; taking 3 earns another turn; taking the last stone wins.
    Its evaluation is an arbitrary fixed function, so leaves differ."""

    spec = GameSpec(
        name="extra_turn_nim",
        title="Extra-turn Nim",
        num_players=2,
        player_names=("A", "B"),
        board_shape=(1, 1),
        max_plies=40,
        move_syntax="1, 2 or 3",
        move_examples=("1",),
        rules="toy",
    )

    def __init__(self, start: int) -> None:
        self.start = start

    def initial_state(self, rng: random.Random | None = None) -> _PileState:
        return _PileState(self.start, 0)

    def to_play(self, state: _PileState) -> int:
        return state.player

    def legal_moves(self, state: _PileState) -> tuple[int, ...]:
        if state.winner is not None:
            return ()
        return tuple(n for n in (1, 2, 3) if n <= state.stones)

    def apply(self, state: _PileState, move: int) -> _PileState:
        stones = state.stones - move
        if stones == 0:
            return _PileState(0, 1 - state.player, state.player)
        return _PileState(stones, state.player if move == 3 else 1 - state.player)

    def is_terminal(self, state: _PileState) -> bool:
        return state.winner is not None

    def outcome(self, state: _PileState) -> Outcome | None:
        if state.winner is None:
            return None
        scores = (1.0, 0.0) if state.winner == 0 else (0.0, 1.0)
        return Outcome(Termination.WIN, state.winner, scores)

    def move_to_text(self, state: _PileState, move: int) -> str:
        return str(move)

    def parse_move(self, state: _PileState, text: str) -> int:
        return int(text)

    def render(self, state: _PileState) -> str:
        return repr(state)

    def margin(self, state: _PileState, player: int) -> float:
        return 0.0

    def evaluate(self, state: _PileState, player: int) -> float:
        value = ((state.stones * 7) % 5 - 2) / 4
        return value if player == 0 else -value

    def ordered_moves(self, state: _PileState) -> tuple[int, ...]:
        return tuple(reversed(self.legal_moves(state)))


@pytest.mark.parametrize("stones", [4, 7, 10, 13])
@pytest.mark.parametrize("depth", [1, 2, 3, 5, 8])
def test_players_need_not_alternate(stones: int, depth: int) -> None:
    game = _ExtraTurnNim(stones)
    state = game.initial_state()
    expected = _reference(game, state, depth)
    got = search(game, state, depth)
    assert (got.value, got.best_moves) == expected
    assert search(game, state, depth, iterative=False).best_moves == expected[1]


# --- Tic-Tac-Toe facts --------------------------------------------------------

TTT = make_game("tictactoe")


def _play(moves: str) -> Any:
    state = TTT.initial_state()
    for text in moves.split():
        state = TTT.play(state, text)
    return state


def test_empty_board_every_move_draws() -> None:
    result = search(TTT, TTT.initial_state(), 9)
    assert result == SearchResult(0.0, tuple(range(9)), result.nodes)
    assert result.nodes > 9


def test_after_the_centre_only_corners_hold() -> None:
    result = search(TTT, _play("4"), 8)
    assert result.value == 0.0
    assert result.best_moves == (0, 2, 6, 8)


def test_prefers_the_quickest_win() -> None:
    # X: 0 1, O: 3 4, X to move. Cell 2 wins at once; the search must not
    # count a slower forced win as equal.
    state = _play("0 3 1 4")
    result = search(TTT, state, 5)
    assert result.best_moves == (2,)
    assert result.value == WIN_VALUE + WIN_BONUS * 4


def test_prefers_the_slowest_loss() -> None:
    # X: 4 0 (corner), O: 1 (edge) has lost: X forks next move whatever O does,
    # except O blocks 8 and survives longest.
    state = _play("4 1 0")
    result = search(TTT, state, 6)
    assert result.value < -WIN_VALUE
    for move in TTT.legal_moves(state):
        value = -_minimax(TTT, TTT.apply(state, move), 5, {})
        assert (move in result.best_moves) == (value == result.value)
    # Only blocking the diagonal avoids losing on the very next X move.
    assert result.best_moves == (8,)
    assert result.value == -(WIN_VALUE + WIN_BONUS * 2)


def test_terminal_root() -> None:
    state = _play("0 3 1 4 2")
    result = search(TTT, state, 3)
    assert result.best_moves == ()
    # X has won; O is to move and has lost.
    assert result.value == -(WIN_VALUE + WIN_BONUS * 3)


def test_terminal_value() -> None:
    won = Outcome(Termination.WIN, 1, (0.0, 1.0))
    assert terminal_value(won, 1, 2) == WIN_VALUE + 2 * WIN_BONUS
    assert terminal_value(won, 0, 2) == -(WIN_VALUE + 2 * WIN_BONUS)
    assert terminal_value(Outcome(Termination.DRAW, None, (0.0, 0.0)), 0, 5) == 0.0


@pytest.mark.parametrize("depth", [0, -1, True, 2.0, "3"])
def test_bad_depth(depth: Any) -> None:
    with pytest.raises(ValueError, match="depth"):
        search(TTT, TTT.initial_state(), depth)


def test_needs_two_players() -> None:
    from dataclasses import replace

    game = _ExtraTurnNim(5)
    game.spec = replace(game.spec, num_players=1)
    with pytest.raises(ValueError, match="two-player"):
        search(game, game.initial_state(), 2)


def test_othello_passes() -> None:
    """Positions a few plies before a pass: the search treats the pass as a move."""
    game = make_game("othello")
    rng = random.Random(5)
    found = 0
    for _ in range(400):
        history = [game.initial_state()]
        while game.legal_moves(history[-1]):
            moves = game.legal_moves(history[-1])
            if len(moves) == 1 and game.move_to_text(history[-1], moves[0]) == "pass":
                break
            history.append(game.apply(history[-1], rng.choice(moves)))
        else:
            continue
        for state in history[-3:]:
            for depth in (1, 2, 3):
                got = search(game, state, depth)
                assert (got.value, got.best_moves) == _reference(game, state, depth)
        found += 1
        if found == 6:
            break
    assert found == 6
