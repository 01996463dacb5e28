"""Othello: perft counts, table-driven sequences, a naive reference move
generator, hypothesis properties over random games, and the typed errors."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import GameError, IllegalMoveError, InvalidMoveError, Termination, make_game
from core.games import othello
from core.games.othello import PASS, Othello, OthelloState
from core.perft import perft, perft_divide

GAME = make_game("othello")
assert isinstance(GAME, Othello)

# Aart Bik, "Perft for Reversi" (a pass counts as one ply). No game ends before
# ply 9, so the conventions for finished games agree up to depth 9 (see below).
PERFT = [1, 4, 12, 56, 244, 1396, 8200, 55092, 390216, 3005288]


def _square(name: str) -> int:
    return (int(name[1]) - 1) * 8 + "abcdefgh".index(name[0])


def _mask(*names: str) -> int:
    return sum(1 << _square(n) for n in names)


# --- an independent, slow reference: a mailbox board walked square by square --
def _ref_flips(mine: int, theirs: int, square: int) -> int:
    if (mine | theirs) >> square & 1:
        return 0
    row, col = divmod(square, 8)
    flips = 0
    for d_row in (-1, 0, 1):
        for d_col in (-1, 0, 1):
            if d_row == d_col == 0:
                continue
            line = 0
            r, c = row + d_row, col + d_col
            while 0 <= r < 8 and 0 <= c < 8 and theirs >> (r * 8 + c) & 1:
                line |= 1 << (r * 8 + c)
                r, c = r + d_row, c + d_col
            if line and 0 <= r < 8 and 0 <= c < 8 and mine >> (r * 8 + c) & 1:
                flips |= line
    return flips


def _ref_moves(state: OthelloState) -> list[int]:
    mine, theirs, _ = state
    own = [sq for sq in range(64) if _ref_flips(mine, theirs, sq)]
    if own:
        return own
    if any(_ref_flips(theirs, mine, sq) for sq in range(64)):
        return [PASS]
    return []


def _random_game(seed: int, plies: int = 200) -> list[OthelloState]:
    """The states of one random game from the start (the final one included)."""
    rng = random.Random(seed)
    state = GAME.initial_state()
    states = [state]
    for _ in range(plies):
        moves = GAME.legal_moves(state)
        if not moves:
            break
        state = GAME.apply(state, rng.choice(moves))
        states.append(state)
    return states


# --- spec and start ---------------------------------------------------------
def test_registered() -> None:
    assert GAME.spec.name == "othello"
    assert GAME.spec.num_players == 2
    assert GAME.spec.player_names == ("Black", "White")
    assert GAME.spec.board_shape == (8, 8)
    assert GAME.spec.max_plies >= 60
    start = GAME.initial_state()
    for example in GAME.spec.move_examples:
        # every example is well-formed: parsing may refuse it as illegal, never as invalid
        with contextlib.suppress(IllegalMoveError):
            GAME.parse_move(start, example)


def test_start_position() -> None:
    state = GAME.initial_state()
    black, white = GAME.discs(state)
    assert black == _mask("d5", "e4")
    assert white == _mask("d4", "e5")
    assert GAME.to_play(state) == 0
    assert GAME.legal_moves_text(state) == ["d3", "c4", "f5", "e6"]
    assert list(GAME.legal_moves(state)) == [19, 26, 37, 44]
    assert GAME.move_to_text(state, 0) == "a1"
    assert GAME.move_to_text(state, 7) == "h1"
    assert GAME.move_to_text(state, 8) == "a2"
    assert GAME.move_to_text(state, PASS) == "pass"
    assert eval(repr(state)) == state  # the repr seeds derive from is the full state


# --- perft ------------------------------------------------------------------
@pytest.mark.parametrize("depth", range(8))
def test_perft(depth: int) -> None:
    assert perft(GAME, GAME.initial_state(), depth) == PERFT[depth]


@pytest.mark.parametrize("depth", [1, 4, 6])
def test_perft_every_leaf_matches_bulk(depth: int) -> None:
    assert perft(GAME, GAME.initial_state(), depth, bulk=False) == PERFT[depth]
    assert perft(GAME, GAME.initial_state(), depth, use_perft2=False) == PERFT[depth]


def test_perft2_with_passes_and_endings() -> None:
    # Black to move must pass; then White's single placement ends the game.
    state = GAME.from_discs(_mask("b1"), _mask("a1"), 0)
    assert GAME.perft2(state) == 1
    assert GAME.perft2(GAME.apply(state, PASS)) == 0
    # Positions with a child that must pass, or a child where the game is over.
    kinds: set[str] = set()
    for seed in range(12):
        for state in _random_game(seed):
            children = [GAME.legal_moves(GAME.apply(state, m)) for m in GAME.legal_moves(state)]
            kind = {"pass" if c == (PASS,) else "end" for c in children if c in ((PASS,), ())}
            if kind:
                kinds |= kind
                assert GAME.perft2(state) == sum(len(c) for c in children)
                assert GAME.perft3(state) == perft(GAME, state, 3, use_perft2=False)
    assert kinds == {"pass", "end"}


@pytest.mark.slow
def test_perft_deep() -> None:
    othello._LEGAL.clear()
    assert perft(GAME, GAME.initial_state(), 8, bulk=False) == PERFT[8]
    assert perft(GAME, GAME.initial_state(), 9) == PERFT[9]


def _finished_at(depth: int) -> int:
    """Move sequences of ``depth`` plies that end the game on the last ply."""
    count = 0

    def walk(state: OthelloState, depth: int) -> None:
        nonlocal count
        for move in GAME.legal_moves(state):
            child = GAME.apply(state, move)
            if depth == 1:
                count += GAME.is_terminal(child)
            else:
                walk(child, depth - 1)

    walk(GAME.initial_state(), depth)
    return count


@pytest.mark.slow
def test_perft_10_and_bik_convention() -> None:
    # Bik lists 24,571,284 for depth 10: his generator lets a finished game go on
    # with a pass, so each of the 228 games over at ply 9 adds one sequence. Here a
    # finished game is not continued (as in OpenSpiel, which also counts 24,571,056).
    finished = _finished_at(9)
    assert finished == 228
    assert perft(GAME, GAME.initial_state(), 10) == 24_571_284 - finished


def test_perft_divide_sums_and_symmetry() -> None:
    divide = perft_divide(GAME, GAME.initial_state(), 5)
    assert sorted(divide) == ["c4", "d3", "e6", "f5"]
    assert sum(divide.values()) == PERFT[5]
    # The four openings are symmetric images of each other.
    assert len(set(divide.values())) == 1


def test_perft2_every_leaf_plays_every_leaf() -> None:
    class Counting(Othello):
        applied = 0
        made = 0

        def apply(self, state: OthelloState, move: int) -> OthelloState:
            Counting.applied += 1
            return super().apply(state, move)

        def children(self, state: OthelloState, moves: Iterable[int]) -> list[OthelloState]:
            out = super().children(state, moves)
            Counting.made += len(out)
            return out

    game = Counting()
    assert perft(game, game.initial_state(), 4, bulk=False) == PERFT[4]
    # perft applies ply 1; perft3 and perft2 make plies 2 and 3 inline and make
    # every leaf's position with children (apply's code, checked against apply below)
    assert Counting.applied == PERFT[1]
    assert Counting.made == PERFT[4]


def test_perft_rejects_bad_depth() -> None:
    with pytest.raises(ValueError):
        perft(GAME, GAME.initial_state(), -1)


# --- table-driven sequences ---------------------------------------------------
# (move, black discs after, white discs after, side to move after)
OPENING = [
    ("d3", ("d3", "d4", "d5", "e4"), ("e5",), 1),
    ("c5", ("d3", "d4", "e4"), ("c5", "d5", "e5"), 0),
    ("f6", ("d3", "d4", "e4", "e5", "f6"), ("c5", "d5"), 1),
    ("f5", ("d3", "d4", "e4", "f6"), ("c5", "d5", "e5", "f5"), 0),
    ("e6", ("d3", "d4", "e4", "e5", "e6", "f6"), ("c5", "d5", "f5"), 1),
    ("e3", ("d3", "e4", "e5", "e6", "f6"), ("c5", "d4", "d5", "e3", "f5"), 0),
]


def test_opening_sequence() -> None:
    state = GAME.initial_state()
    for move, black, white, to_play in OPENING:
        state = GAME.play(state, move)
        assert GAME.discs(state) == (_mask(*black), _mask(*white)), move
        assert GAME.to_play(state) == to_play
        assert not GAME.is_terminal(state)


def test_shortest_wipeout() -> None:
    # Nine plies and White has no disc left (found and checked with OpenSpiel).
    state = GAME.initial_state()
    for move in ["d3", "c3", "b3", "d2", "e1", "d6", "d7", "e3", "f4"]:
        assert not GAME.is_terminal(state)
        state = GAME.play(state, move)
    assert GAME.is_terminal(state)
    assert GAME.legal_moves(state) == ()
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.WIN
    assert outcome.winner == 0
    assert outcome.scores == (13.0, 0.0)
    assert GAME.margin(state, 0) == 13 / 64
    assert GAME.margin(state, 1) == -13 / 64
    assert "Game over: Black wins." in GAME.render(state)


def test_pass_then_end() -> None:
    # Black's only disc b1 sits beside White's corner a1: Black cannot place,
    # White can (c1), so Black must pass.
    state = GAME.from_discs(_mask("b1"), _mask("a1"), 0)
    assert GAME.legal_moves(state) == (PASS,)
    assert not GAME.is_terminal(state)
    assert "must pass" in GAME.render(state)
    with pytest.raises(IllegalMoveError, match="must pass"):
        GAME.parse_move(state, "c1")
    state = GAME.play(state, "PASS")
    assert GAME.to_play(state) == 1
    assert GAME.discs(state) == (_mask("b1"), _mask("a1"))
    assert GAME.legal_moves_text(state) == ["c1"]
    with pytest.raises(IllegalMoveError, match="cannot pass"):
        GAME.parse_move(state, "pass")
    state = GAME.play(state, "c1")
    assert GAME.discs(state) == (0, _mask("a1", "b1", "c1"))
    assert GAME.is_terminal(state)
    outcome = GAME.outcome(state)
    assert outcome is not None and outcome.winner == 1 and outcome.scores == (0.0, 3.0)
    with pytest.raises(IllegalMoveError, match="game is over"):
        GAME.play(state, "d1")


def test_draw() -> None:
    # A full board split 32-32 is a drawn finished game.
    black = sum(1 << sq for sq in range(32))
    state = GAME.from_discs(black, othello.BB_ALL ^ black, 1)
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.DRAW and outcome.winner is None
    assert outcome.scores == (32.0, 32.0)
    assert GAME.margin(state, 0) == 0.0


# --- notation and errors ----------------------------------------------------------
@pytest.mark.parametrize("text", ["C4", " c4 ", "c4\n", "\tC4"])
def test_parse_move_tolerates_case_and_space(text: str) -> None:
    assert GAME.parse_move(GAME.initial_state(), text) == _square("c4")


@pytest.mark.parametrize("text", ["", "c", "c9", "i1", "c0", "44", "c4 d3", "pas", "a1a", "c 4"])
def test_invalid_text(text: str) -> None:
    with pytest.raises(InvalidMoveError) as info:
        GAME.parse_move(GAME.initial_state(), text)
    assert GAME.render(GAME.initial_state()) in str(info.value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("a1", "does not trap"), ("d4", "occupied"), ("pass", "cannot pass"), ("E3", "does not trap")],
)
def test_illegal_moves(text: str, reason: str) -> None:
    with pytest.raises(IllegalMoveError, match=reason) as info:
        GAME.parse_move(GAME.initial_state(), text)
    assert GAME.render(GAME.initial_state()) in str(info.value)


def test_errors_are_value_errors() -> None:
    assert issubclass(InvalidMoveError, GameError) and issubclass(GameError, ValueError)


def test_render_format() -> None:
    lines = GAME.render(GAME.initial_state()).splitlines()
    assert lines[0] == "  a b c d e f g h"
    assert lines[4] == "4 . . . W B . . ."
    assert lines[5] == "5 . . . B W . . ."
    assert lines[-1] == "Black (B) to move. Discs: Black 2, White 2."


def test_parse_board_among_other_lines() -> None:
    state = GAME.play(GAME.initial_state(), "d3")
    text = f"You are White.\nBoard:\n{GAME.render(state)}\nLegal moves: c3, e3, c5\n"
    assert GAME.parse_board(text) == state
    indented = "\n".join("    " + line for line in GAME.render(state).splitlines())
    assert GAME.parse_board(indented) == state


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no board here",
        "  a b c d e f g h\n1 . . .",
        # a game in progress that does not say whose turn it is
        "\n".join(GAME.render(GAME.initial_state()).splitlines()[:-1]),
    ],
)
def test_parse_board_errors(text: str) -> None:
    with pytest.raises(GameError):
        GAME.parse_board(text)


# --- scoring ----------------------------------------------------------------------
def test_evaluate_and_ordering() -> None:
    # White owns no corner; Black to move can take a1 (over b2) and should try it first.
    state = GAME.from_discs(_mask("c3", "d4", "e5"), _mask("b2", "d5", "e4"), 0)
    assert GAME.ordered_moves(state)[0] == _square("a1")
    after = GAME.apply(state, _square("a1"))
    assert GAME.evaluate(after, 0) > GAME.evaluate(state, 0)
    assert GAME.evaluate(after, 0) == -GAME.evaluate(after, 1)
    assert GAME.evaluate(GAME.initial_state(), 0) == 0.0
    # X and C squares (beside the corners) come last.
    bad = othello.BB_X_SQUARES | othello.BB_C_SQUARES
    for state in _random_game(3):
        ranks = [bool(bad >> m & 1) for m in GAME.ordered_moves(state) if m != PASS]
        assert ranks == sorted(ranks)


# --- properties over random games -------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_random_game_invariants(seed: int) -> None:
    for ply, state in enumerate(_random_game(seed)):
        mine, theirs, player = state
        moves = GAME.legal_moves(state)
        # every legal move is listed, and only legal moves are (reference generator)
        assert list(moves) == _ref_moves(state)
        assert GAME.is_terminal(state) == (not moves) == (GAME.outcome(state) is not None)
        assert sorted(GAME.ordered_moves(state)) == list(moves)
        # pass semantics: only move, exactly when the mover cannot place but the other can
        if PASS in moves:
            assert moves == (PASS,)
            after = GAME.play(state, "pass")
            assert after == (theirs, mine, 1 - player)
            assert GAME.legal_moves(after) and PASS not in GAME.legal_moves(after)
        # the packed two-ply count agrees with plain counting (passes and ends included)
        assert GAME.perft2(state) == perft(GAME, state, 2, use_perft2=False)
        assert GAME.perft2(state, bulk=False) == GAME.perft2(state)
        if ply % 6 == 0:
            three_plies = perft(GAME, state, 3, use_perft2=False)
            assert GAME.perft3(state) == GAME.perft3(state, bulk=False) == three_plies
        # render / parse_board round trip
        text = GAME.render(state)
        parsed = GAME.parse_board(text)
        if moves:
            assert parsed == state
        else:
            assert GAME.render(parsed) == text and GAME.discs(parsed) == GAME.discs(state)
        # scores
        assert -1.0 <= GAME.margin(state, 0) == -GAME.margin(state, 1) <= 1.0
        if moves:
            assert -1.0 <= GAME.evaluate(state, player) <= 1.0
        assert GAME.children(state, moves) == [GAME.apply(state, m) for m in moves]
        for move in moves:
            text_move = GAME.move_to_text(state, move)
            assert GAME.parse_move(state, text_move) == move
            assert GAME.parse_move(state, f" {text_move.upper()} ") == move
            child = GAME.play(state, text_move)
            assert child == GAME.apply(state, move)
            if move == PASS:
                continue
            # disc conservation: one new disc, flips change colour only
            flips = _ref_flips(mine, theirs, move)
            assert flips
            assert child == (theirs ^ flips, mine | flips | 1 << move, 1 - player)
            assert (child[0] | child[1]).bit_count() == (mine | theirs).bit_count() + 1
            assert child[1].bit_count() == mine.bit_count() + flips.bit_count() + 1
        # every square that is not listed is refused with IllegalMoveError
        for square in range(65):
            if square not in moves:
                with pytest.raises(IllegalMoveError):
                    GAME.play(state, GAME.move_to_text(state, square))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.text(max_size=12))
def test_parse_move_raises_only_typed_errors(seed: int, text: str) -> None:
    states = _random_game(seed, plies=random.Random(seed).randrange(70))
    state = states[-1]
    try:
        move = GAME.parse_move(state, text)
    except (InvalidMoveError, IllegalMoveError):
        return
    assert move in GAME.legal_moves(state)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcdefgh12345678 .BW\nWhite to move Black", max_size=300))
def test_parse_board_raises_only_game_errors(text: str) -> None:
    try:
        state = GAME.parse_board(text)
    except GameError:
        return
    assert GAME.parse_board(GAME.render(state)) == state or GAME.is_terminal(state)


def test_memo_is_consistent_after_clearing() -> None:
    states = _random_game(7)
    before = [GAME.legal_moves(s) for s in states]
    othello._LEGAL.clear()
    othello._MASKS.clear()
    othello._ORDERED.clear()
    assert [GAME.legal_moves(s) for s in reversed(states)] == before[::-1]
