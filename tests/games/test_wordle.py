"""Wordle: NYT feedback (repeated letters), word lists, typed errors, the end of
the game and its scores, render/parse_board round trips, and the solver."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import GameError, IllegalMoveError, InvalidMoveError, Termination, make_game
from core.games import wordle
from core.games.wordle import WordleState, score_guess
from core.rng import derive_rng

GAME = make_game("wordle")
ROOT = Path(__file__).resolve().parents[2]


def _play(answer: str, *guesses: str) -> WordleState:
    state = WordleState(answer)
    for guess in guesses:
        state = GAME.play(state, guess)
    return state


# --- feedback ------------------------------------------------------------------------

FEEDBACK_CASES = [
    # (answer, guess, feedback)
    ("crane", "crane", "GGGGG"),
    ("crane", "sloth", "....."),
    ("crane", "nacre", "YYYYG"),
    # repeated letters in the guess: greens first, then yellows while copies remain
    ("abbey", "babes", "YYGG."),
    ("abbey", "kebab", ".YGYY"),
    ("abbey", "abyss", "GGY.."),
    ("speed", "erase", "Y..YY"),
    ("speed", "steed", "G.GGG"),
    ("speed", "eerie", "YY..."),  # two e's in the answer: the first two e's yellow, the third gray
    ("those", "geese", "...GG"),  # the green e uses the answer's only e: the others gray
    ("crane", "error", "YG..."),  # one r in the answer, matched by the green: the others gray
    ("lever", "eerie", "YGY.."),  # the green e first, then one yellow e
    ("allay", "lolly", "Y.G.G"),  # three l's guessed, two in the answer
    ("mamma", "amass", "YYY.."),
    ("array", "rarer", "YYG.."),  # the green r first: one r left for a yellow
]


@pytest.mark.parametrize(
    ("answer", "guess", "feedback"), FEEDBACK_CASES, ids=[f"{a}-{g}" for a, g, _ in FEEDBACK_CASES]
)
def test_feedback_table(answer: str, guess: str, feedback: str) -> None:
    assert score_guess(guess, answer) == feedback


def _reference_feedback(guess: str, answer: str) -> str:
    """An independent, count-based statement of the NYT rule."""
    out = []
    for i, ch in enumerate(guess):
        if answer[i] == ch:
            out.append("G")
            continue
        in_answer = sum(1 for j, a in enumerate(answer) if a == ch and guess[j] != a)
        earlier = sum(1 for j in range(i) if guess[j] == ch and answer[j] != ch)
        out.append("Y" if earlier < in_answer else ".")
    return "".join(out)


@given(st.text("abcde", min_size=5, max_size=5), st.text("abcde", min_size=5, max_size=5))
def test_feedback_matches_reference(guess: str, answer: str) -> None:
    fb = score_guess(guess, answer)
    assert fb == _reference_feedback(guess, answer)
    assert (fb == "GGGGG") == (guess == answer)


# --- word lists ----------------------------------------------------------------------


def test_word_lists() -> None:
    answers, allowed = wordle.answers(), wordle.allowed()
    assert 2000 <= len(answers) <= 5000
    assert len(allowed) > 2 * len(answers)
    assert set(answers) <= set(allowed)
    for words in (answers, allowed):
        assert list(words) == sorted(set(words))
        assert all(len(w) == 5 and w.isascii() and w.isalpha() and w.islower() for w in words)
    assert GAME.legal_moves(GAME.initial_state()) == allowed


def test_second_guess_table_covers_every_opener_feedback() -> None:
    table = wordle._second_guesses()
    feedbacks = {score_guess(wordle.OPENER, a) for a in wordle.answers()} - {"GGGGG"}
    assert set(table) == feedbacks
    allowed = set(wordle.allowed())
    assert all(words and set(words) <= allowed for words in table.values())
    assert wordle.OPENER in allowed


@pytest.mark.skipif(
    not Path("/usr/share/dict/scowl/english-words.35").exists()
    or not Path("/usr/share/dict/american-english-huge").exists(),
    reason="needs the Debian packages scowl and wamerican-huge",
)
def test_shipped_lists_match_the_build_script() -> None:
    sys.path.insert(0, str(ROOT / "core" / "games" / "data"))
    try:
        import build_wordle_lists
    finally:
        sys.path.pop(0)
    answers, allowed = build_wordle_lists.build()
    assert tuple(answers) == wordle.answers()
    assert tuple(allowed) == wordle.allowed()


@pytest.mark.slow
def test_second_guess_table_is_up_to_date() -> None:
    assert wordle.build_second_guesses() == wordle._second_guesses()


# --- moves and errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "cran", "cranes", "cr4ne", "cr ne", "crâne", "<move>", "12345"]
)
def test_not_five_letters_is_invalid(text: str) -> None:
    with pytest.raises(InvalidMoveError):
        GAME.parse_move(GAME.initial_state(), text)


@pytest.mark.parametrize("text", ["xqzvw", "aaaaa", "QQQQQ"])
def test_five_letters_not_a_word_is_illegal(text: str) -> None:
    with pytest.raises(IllegalMoveError) as exc:
        GAME.parse_move(GAME.initial_state(), text)
    assert "Wordle board" in str(exc.value)  # the message shows the position
    assert not isinstance(exc.value, InvalidMoveError)


@pytest.mark.parametrize("text", ["crane", "CRANE", "  Crane\n", "\tcRaNe "])
def test_parse_move_strips_and_ignores_case(text: str) -> None:
    assert GAME.parse_move(GAME.initial_state(), text) == "crane"


def test_a_word_outside_the_list_uses_no_guess() -> None:
    state = _play("abbey", "crane")
    for bad in ("xqzvw", "abc", "toolong"):
        with pytest.raises(GameError):
            GAME.play(state, bad)
    assert state.guesses == (("crane", "..Y.Y"),)
    assert GAME.render(state).count("Guesses left: 5 of 6") == 1
    assert len(_play("abbey", "crane", "sloth").guesses) == 2


def test_errors_are_value_errors() -> None:
    assert issubclass(InvalidMoveError, ValueError)
    assert issubclass(IllegalMoveError, ValueError)


# --- the end of the game -------------------------------------------------------------


def test_solved_on_guess_three() -> None:
    state = _play("abbey", "crane", "sloth", "abbey")
    assert GAME.is_terminal(state)
    assert GAME.legal_moves(state) == ()
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.WIN and outcome.winner == 0
    assert outcome.scores == (4.0,)
    assert outcome.result_for(0) == "win"
    assert GAME.margin(state, 0) == pytest.approx(4 / 6)
    with pytest.raises(IllegalMoveError):
        GAME.play(state, "crane")


def test_six_misses_lose() -> None:
    state = _play("abbey", "crane", "sloth", "pudgy", "mixed", "abyss", "kebab")
    assert GAME.is_terminal(state)
    assert GAME.legal_moves(state) == ()
    outcome = GAME.outcome(state)
    assert outcome is not None
    assert outcome.termination is Termination.LOSS and outcome.winner is None
    assert outcome.scores == (0.0,)
    assert outcome.result_for(0) == "loss"
    # best guess: abyss GGY.. -> (2 + 0.5) / 5 * 0.5 = 0.25; kebab .YGYY -> 0.25 too
    assert GAME.margin(state, 0) == pytest.approx(0.25)
    with pytest.raises(IllegalMoveError):
        GAME.play(state, "abbey")


def test_in_progress() -> None:
    state = _play("abbey", "crane", "sloth")
    assert not GAME.is_terminal(state)
    assert GAME.outcome(state) is None
    assert GAME.margin(state, 0) == 0.0
    assert GAME.evaluate(state, 0) == 0.0
    assert GAME.to_play(state) == 0


def test_spec() -> None:
    spec = GAME.spec
    assert spec.num_players == 1 and spec.player_names == ("Player",)
    assert spec.list_legal_moves is False
    assert spec.board_shape == (6, 5) and spec.max_plies == 6
    for example in spec.move_examples:
        assert GAME.parse_move(GAME.initial_state(), example) == example


words = st.sampled_from(wordle.allowed())
answer_words = st.sampled_from(wordle.answers())


@st.composite
def states(draw: st.DrawFn) -> WordleState:
    """Any reachable position: an answer and up to six guesses (stopping at a solve)."""
    state = WordleState(draw(answer_words))
    for _ in range(draw(st.integers(0, 6))):
        if GAME.is_terminal(state):
            break
        guess = draw(st.one_of(words, st.just(state.answer)) if draw(st.booleans()) else words)
        state = GAME.apply(state, guess)
    return state


@given(states())
def test_margin_ranges(state: WordleState) -> None:
    m = GAME.margin(state, 0)
    outcome = GAME.outcome(state)
    if outcome is None:
        assert m == 0.0
    elif outcome.termination is Termination.WIN:
        assert 0 < m <= 1
        assert m == pytest.approx(outcome.scores[0] / 6)
    else:
        assert 0 <= m < 0.5
        assert outcome.scores == (0.0,)


# --- render and parse_board ----------------------------------------------------------


@given(states(), answer_words)
def test_render_never_shows_the_answer(state: WordleState, other: str) -> None:
    text = GAME.render(state)
    # the board depends on the guesses and feedback only, never on the answer
    assert text == GAME.render(WordleState(other, state.guesses))
    assert text == GAME.render(state._replace(answer=""))
    guessed = {g for g, _ in state.guesses}
    if state.answer not in guessed:

        def words(board: str) -> set[str]:
            return {t.strip(".,:;()").lower() for t in board.split()}

        # the legend's own words ("board", "another" are answers too) say nothing of it
        legend = words(GAME.render(WordleState("", ())))
        assert state.answer not in words(text) - legend


@given(states(), st.text(max_size=40), st.text(max_size=40))
def test_parse_board_round_trip(state: WordleState, before: str, after: str) -> None:
    blank = state._replace(answer="")
    assert GAME.parse_board(GAME.render(state)) == blank
    text = f"Your move.\n{before}\n{GAME.render(state)}\n{after}\nYour move."
    assert GAME.parse_board(text) == blank


def test_parse_board_reads_the_last_board() -> None:
    first = GAME.render(_play("abbey", "crane"))
    last = GAME.render(_play("abbey", "crane", "sloth"))
    assert GAME.parse_board(f"{first}\n\n{last}").guesses == (
        ("crane", "..Y.Y"),
        ("sloth", "....."),
    )


def test_render_shape() -> None:
    text = GAME.render(_play("abbey", "crane", "babes"))
    assert "1. CRANE  . . Y . Y" in text
    assert "2. BABES  Y Y G G ." in text
    assert "Guesses left: 4 of 6" in text
    assert "Player to guess (guess 3 of 6)." in text
    assert "Solved in 3 guesses." in GAME.render(_play("abbey", "crane", "babes", "abbey"))


@pytest.mark.parametrize("text", ["", "no board here", "Wordle board\n1. CRANE  G G G G G"])
def test_parse_board_rejects_text_without_a_board(text: str) -> None:
    with pytest.raises(GameError):
        GAME.parse_board(text)


def test_apply_needs_the_answer() -> None:
    with pytest.raises(GameError):
        GAME.apply(WordleState(""), "crane")


def test_state_is_hashable_with_a_stable_repr() -> None:
    state = _play("abbey", "crane")
    assert repr(state) == "WordleState(answer='abbey', guesses=(('crane', '..Y.Y'),))"
    assert hash(state) == hash(_play("abbey", "crane"))


# --- the answer draw -----------------------------------------------------------------


def test_answer_is_drawn_by_rng_choice() -> None:
    assert GAME.initial_state(random.Random(7)).answer == random.Random(7).choice(wordle.answers())
    assert GAME.initial_state().answer == random.Random(0).choice(wordle.answers())
    drawn = {GAME.initial_state(derive_rng("wordle", i)).answer for i in range(50)}
    assert len(drawn) > 40


def test_answer_is_reproducible_across_processes() -> None:
    code = (
        "from core import make_game; from core.rng import derive_rng\n"
        "g = make_game('wordle')\n"
        "print(' '.join(g.initial_state(derive_rng(s, 'initial', 'wordle')).answer"
        " for s in range(20)))"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(out.stdout)
    assert len(outputs) == 1
    expected = " ".join(
        GAME.initial_state(derive_rng(s, "initial", "wordle")).answer for s in range(20)
    )
    assert outputs == {expected + "\n"}


# --- the solver ----------------------------------------------------------------------


def _solve_game(answer: str, seed: int) -> WordleState:
    """Play one game with the solver, reading each position back from its board."""
    state, rng = WordleState(answer), derive_rng("solver", seed)
    while not GAME.is_terminal(state):
        state = GAME.play(state, GAME.solve(GAME.parse_board(GAME.render(state)), rng))
    return state


def test_solver_wins_at_least_95_percent() -> None:
    rng = random.Random(2024)
    games = [_solve_game(rng.choice(wordle.answers()), seed) for seed in range(200)]
    won = [len(s.guesses) for s in games if s.guesses[-1][1] == "GGGGG"]
    assert len(won) >= 190
    assert sum(won) / len(won) < 4.0


def test_solver_uses_feedback_only_and_plays_consistent_words() -> None:
    state = _play("abbey", "crane")
    move = GAME.solve(state._replace(answer=""), random.Random(0))
    assert move == GAME.solve(state, random.Random(0))
    assert move in wordle.allowed()
    # after any start, the solver's guesses never repeat and end in a solve
    state = _solve_game("fuzzy", 3)
    guesses = [g for g, _ in state.guesses]
    assert len(set(guesses)) == len(guesses)
    assert guesses[-1] == "fuzzy"


def test_solver_from_arbitrary_first_guesses() -> None:
    rng = random.Random(5)
    wins = 0
    for _ in range(20):
        answer = rng.choice(wordle.answers())
        state = GAME.apply(WordleState(answer), rng.choice(wordle.allowed()))
        while not GAME.is_terminal(state):
            state = GAME.apply(state, GAME.solve(state._replace(answer=""), rng))
        wins += state.guesses[-1][0] == answer
    assert wins >= 18


def test_solver_ties_depend_on_rng_only() -> None:
    state = WordleState("", (("raise", "....."),))
    picks = {GAME.solve(state, random.Random(s)) for s in range(10)}
    assert picks <= set(wordle._best_guesses(state.guesses))
    with pytest.raises(IllegalMoveError):
        GAME.solve(_play("abbey", "abbey"), random.Random(0))
