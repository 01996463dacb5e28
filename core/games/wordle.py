"""Wordle: guess a hidden five-letter word in six tries.

The single-player reference environment of the RL_Envs_101 course, as one core
game: the same :class:`~core.games.base.Game` contract as the board games, so
every adapter runs it unchanged (it reads ``spec.num_players == 1`` to skip the
opponent and ``spec.list_legal_moves`` to leave the 11,000-word list out of
observations).

Word lists (SCOWL, see ``core/games/data/WORDLE_LICENSE.md``) are read on first
use through :mod:`importlib.resources`, so an installed package works too.
"""

from __future__ import annotations

import functools
import heapq
import random
import re
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import NamedTuple

from core.games.base import (
    BoardView,
    Game,
    GameError,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
)

WORD_LENGTH = 5
MAX_GUESSES = 6

GREEN = "G"
"""Feedback mark: the right letter in the right place."""
YELLOW = "Y"
"""Feedback mark: the letter is in the word (one more copy of it), elsewhere."""
GRAY = "."
"""Feedback mark: no (further) copy of the letter is in the word."""
SOLVED_FEEDBACK = GREEN * WORD_LENGTH

OPENER = "raise"
"""The solver's first guess on an empty board: the allowed word that leaves the
fewest answers in expectation (sum of squared bucket sizes over the answers
list) among the 500 richest in common letters, found by
``python -m core.games.wordle --opener``."""

Feedback = str
"""Five marks from ``G``, ``Y`` and ``.``, e.g. ``"GY..G"``."""


class WordleState(NamedTuple):
    """A Wordle position: immutable, hashable, with a stable ``repr``.

    ``answer`` is the hidden word (``""`` when unknown, as in a state read back
    from an observation by :meth:`Wordle.parse_board`); ``guesses`` holds one
    ``(guess, feedback)`` pair per guess made, in order. The feedback is stored
    so a position can be shown and read back without knowing the answer.
    """

    answer: str
    guesses: tuple[tuple[str, Feedback], ...] = ()


def score_guess(guess: str, answer: str) -> Feedback:
    """The feedback for ``guess`` against ``answer``, as the NYT game gives it.

    Greens first; then, left to right, a letter is yellow while the answer has
    copies of it not already matched (by a green or an earlier yellow), else
    gray.

    >>> score_guess("babes", "abbey")
    'YYGG.'
    >>> score_guess("erase", "speed")
    'Y..YY'
    """
    if guess == answer:
        return SOLVED_FEEDBACK
    unmatched = [a for g, a in zip(guess, answer, strict=True) if g != a]
    marks = []
    for g, a in zip(guess, answer, strict=True):
        if g == a:
            marks.append(GREEN)
        elif g in unmatched:
            unmatched.remove(g)
            marks.append(YELLOW)
        else:
            marks.append(GRAY)
    return "".join(marks)


# --- word lists, loaded on first use -------------------------------------------------


def _read_list(name: str) -> tuple[str, ...]:
    text = resources.files("core.games").joinpath("data", name).read_text(encoding="utf-8")
    return tuple(sorted(w for w in text.split() if w))


@functools.cache
def answers() -> tuple[str, ...]:
    """The words an answer is drawn from, sorted (a few thousand common words)."""
    return _read_list("wordle_answers.txt")


@functools.cache
def allowed() -> tuple[str, ...]:
    """Every word accepted as a guess, sorted (a superset of :func:`answers`)."""
    return _read_list("wordle_allowed.txt")


@functools.cache
def _allowed_set() -> frozenset[str]:
    return frozenset(allowed())


# --- the solver ----------------------------------------------------------------------

_PAIR_BUDGET = 5_000
"""How many (guess, candidate) feedbacks one solver call may compute beyond
filtering (a few microseconds each): a cold call after any first guess takes at
most about 30 ms of CPU here (the solver's own games, opening with
:data:`OPENER` and its table, a few ms)."""
_PROBES = 16
"""At most this many non-candidate answers (chosen for testing the letters the
candidates disagree on) are weighed besides the candidates."""
SECOND_GUESSES_FILE = "wordle_second_guesses.txt"


@functools.lru_cache(maxsize=8192)
def _candidates(guesses: tuple[tuple[str, Feedback], ...]) -> tuple[str, ...]:
    """Answers consistent with every ``(guess, feedback)`` pair, sorted.

    Built one guess at a time, so the cache serves every prefix of a game."""
    if not guesses:
        return answers()
    guess, fb = guesses[-1]
    return tuple(w for w in _candidates(guesses[:-1]) if score_guess(guess, w) == fb)


def _expected_left(guess: str, candidates: Sequence[str]) -> int:
    """Sum of squared bucket sizes when ``guess`` splits ``candidates`` by
    feedback (proportional to the expected number left), not counting the
    bucket a correct guess ends the game in."""
    buckets: dict[str, int] = {}
    for w in candidates:
        fb = score_guess(guess, w)
        buckets[fb] = buckets.get(fb, 0) + 1
    buckets.pop(SOLVED_FEEDBACK, None)
    return sum(n * n for n in buckets.values())


def _letter_scores(candidates: Sequence[str]) -> tuple[dict[str, int], list[dict[str, int]]]:
    """How many candidates hold each letter, and each letter at each position."""
    anywhere: dict[str, int] = {}
    at: list[dict[str, int]] = [{} for _ in range(WORD_LENGTH)]
    for w in candidates:
        for ch in set(w):
            anywhere[ch] = anywhere.get(ch, 0) + 1
        for i, ch in enumerate(w):
            at[i][ch] = at[i].get(ch, 0) + 1
    return anywhere, at


def _shortlist(
    candidates: Sequence[str], k: int, probes: int, pool: Sequence[str] | None = None
) -> list[str]:
    """Guesses worth scoring exactly: the ``k`` candidates richest in common
    letters and, when more than two candidates remain, ``probes`` words of
    ``pool`` that best test the letters the candidates disagree on (default
    pool: the answers rather than all allowed words, five times fewer to rank)."""
    n = len(candidates)
    anywhere, at = _letter_scores(candidates)

    def richness(w: str) -> tuple[int, str]:
        return (
            -sum(anywhere[ch] for ch in set(w)) - sum(at[i][ch] for i, ch in enumerate(w)),
            w,
        )

    picked = sorted(candidates, key=richness)[:k]
    if n > 2 and probes > 0:
        # A letter found in every candidate (or none) tells nothing; one found
        # in half of them tells most.
        info = {ch: c * (n - c) for ch, c in anywhere.items() if 0 < c < n}
        if info:
            chosen = set(picked)

            def probe_value(w: str) -> tuple[int, str]:
                return (-sum(info.get(ch, 0) for ch in set(w)), w)

            others = (w for w in (answers() if pool is None else pool) if w not in chosen)
            picked += heapq.nsmallest(probes, others, key=probe_value)
    return picked


def _best_of(candidates: Sequence[str], shortlist: Iterable[str]) -> tuple[str, ...]:
    """The words of ``shortlist`` that leave the fewest candidates in
    expectation, candidates preferred on ties; sorted."""
    members = frozenset(candidates)
    scored = [(_expected_left(w, candidates), w not in members, w) for w in shortlist]
    best = min(s[:2] for s in scored)
    return tuple(sorted(w for left, outside, w in scored if (left, outside) == best))


@functools.cache
def _second_guesses() -> dict[Feedback, tuple[str, ...]]:
    """The precomputed best second guesses after :data:`OPENER`, by its feedback."""
    text = resources.files("core.games").joinpath("data", SECOND_GUESSES_FILE)
    table: dict[Feedback, tuple[str, ...]] = {}
    for line in text.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and not line.startswith("#"):
            table[fields[0]] = tuple(fields[1:])
    return table


def build_second_guesses(probes: int = 400) -> dict[Feedback, tuple[str, ...]]:
    """For each feedback :data:`OPENER` can get, the best second guesses among
    every candidate and the ``probes`` answers that best test the candidates'
    letters (answers, not all allowed words: scripted games that may end up
    in training data should teach common words). Seconds: run by ``--write``."""
    table: dict[Feedback, tuple[str, ...]] = {}
    patterns = sorted({score_guess(OPENER, w) for w in answers()} - {SOLVED_FEEDBACK})
    for fb in patterns:
        candidates = _candidates(((OPENER, fb),))
        if len(candidates) <= 2:
            table[fb] = candidates
        else:
            words = _shortlist(candidates, len(candidates), probes)
            table[fb] = _best_of(candidates, words)
    return table


@functools.lru_cache(maxsize=8192)
def _best_guesses(guesses: tuple[tuple[str, Feedback], ...]) -> tuple[str, ...]:
    """The equally best guesses for a position (sorted), from feedback only."""
    if not guesses:
        return (OPENER,)
    if len(guesses) == 1 and guesses[0][0] == OPENER:
        known = _second_guesses().get(guesses[0][1])
        if known:
            return known
    candidates = _candidates(guesses)
    if not candidates:
        # The feedback fits no answer (a board from elsewhere): fall back on
        # the first allowed word that fits it, else on the opener.
        for w in allowed():
            if all(score_guess(g, w) == fb for g, fb in guesses):
                return (w,)
        return (OPENER,)
    n = len(candidates)
    if n <= 2:
        return candidates
    total = max(2, _PAIR_BUDGET // n)
    probes = min(_PROBES, total // 3)
    return _best_of(candidates, _shortlist(candidates, min(n, total - probes), probes))


def find_opener(pool_size: int = 500) -> list[tuple[int, str]]:
    """The ``pool_size`` allowed words richest in the answers' common letters,
    ranked by :func:`_expected_left` over all answers, best first. Used once to
    choose :data:`OPENER` (a few seconds for 500 words)."""
    anywhere, at = _letter_scores(answers())

    def richness(w: str) -> tuple[int, str]:
        return (
            -sum(anywhere.get(ch, 0) for ch in set(w))
            - sum(at[i].get(ch, 0) for i, ch in enumerate(w)),
            w,
        )

    pool = sorted(allowed(), key=richness)[:pool_size]
    return sorted((_expected_left(w, answers()), w) for w in pool)


# --- the game ------------------------------------------------------------------------

_HEADER = "Wordle board"
_LEGEND = (
    f"{_HEADER} ({GREEN} = right letter, right place; {YELLOW} = in the word, another "
    f"place; {GRAY} = not in the word, or no more copies of it)"
)
_ROW = re.compile(r"^\s*(\d+)\.\s+([A-Za-z]{5})\s+([GY.](?:\s*[GY.]){4})\s*$")
_LEFT = re.compile(r"^\s*Guesses left:\s*(\d+) of (\d+)\s*$")


class Wordle(Game[WordleState, str]):
    """Wordle: find the hidden five-letter word in six guesses.

    **Observation.** The board (:meth:`render`): one row per guess with its
    feedback, ``G`` (right letter, right place), ``Y`` (in the word, another
    place) and ``.`` (not in the word, or no more copies of it); letter hints;
    guesses left; whose turn it is. The answer is never shown.

    **Action Space.** A five-letter word from the allowed list (about 11,400
    SCOWL words), lower-case ``str``; ``parse_move`` strips whitespace and
    ignores case. Text that is not exactly five ASCII letters raises
    ``InvalidMoveError``; five letters that are not an allowed word raise
    ``IllegalMoveError`` and use no guess (the episode's invalid-move policy
    applies). Observations do not list the moves (``spec.list_legal_moves`` is
    False). Repeated letters are scored as in the NYT game: greens first, then
    yellows while unmatched copies remain in the answer.

    **Rewards.** :meth:`margin` (also :meth:`evaluate`; there is no search):

    * solved with ``k`` guesses: ``(7 - k) / 6`` (1 for a first-guess solve,
      1/6 for a sixth-guess solve);
    * not solved: ``0.5 * max over guesses of (greens + 0.5 * yellows) / 5``,
      partial credit in [0, 0.4] (a guess that is not the answer has at most
      four greens);
    * 0 while the game goes on.

    :meth:`outcome` scores (one per player): ``7 - k`` when solved in ``k``
    guesses (guesses left plus one), 0 when not solved.

    **Episode End.** The word is guessed (``Termination.WIN``, winner 0), or
    six guesses are used without it (``Termination.LOSS``, winner ``None``).

    **Starting State.** ``initial_state(rng)`` draws the answer with
    ``rng.choice`` over the sorted answers list (``rng=None``:
    ``random.Random(0)``).

    **Version History.** v1: SCOWL 2020.12.07 lists (2,178 answers, 11,392
    allowed words), tiered margin.
    """

    spec = GameSpec(
        name="wordle",
        title="Wordle",
        num_players=1,
        player_names=("Player",),
        board_shape=(MAX_GUESSES, WORD_LENGTH),
        max_plies=MAX_GUESSES,
        move_syntax="Write a guess as one five-letter English word, such as crane.",
        move_examples=("crane", "sloth", "pudgy"),
        rules=(
            "Find the hidden five-letter English word in at most six guesses. Each guess "
            "must be a real word from the game's list. After each guess every letter is "
            "marked G (right letter, right place), Y (in the word, another place) or . "
            "(not in the word, or no more copies of it). A guess that is not in the word "
            "list does not count as a guess."
        ),
        list_legal_moves=False,
    )

    # --- positions -----------------------------------------------------------------
    def initial_state(self, rng: random.Random | None = None) -> WordleState:
        """A new game whose answer is ``rng.choice(answers())``."""
        rng = random.Random(0) if rng is None else rng
        return WordleState(rng.choice(answers()), ())

    def to_play(self, state: WordleState) -> int:
        """Always 0: there is one player."""
        return 0

    def legal_moves(self, state: WordleState) -> Sequence[str]:
        """Every allowed word (sorted), or nothing once the game is over."""
        return () if self.is_terminal(state) else allowed()

    def apply(self, state: WordleState, move: str) -> WordleState:
        """Fast path: add ``move`` and its feedback. Needs the answer."""
        if not state.answer:
            raise GameError("the answer is unknown (a board read back); cannot score a guess")
        return WordleState(state.answer, (*state.guesses, (move, score_guess(move, state.answer))))

    def is_terminal(self, state: WordleState) -> bool:
        """Solved, or six guesses used."""
        return _solved(state) or len(state.guesses) >= MAX_GUESSES

    def outcome(self, state: WordleState) -> Outcome | None:
        """WIN for player 0 with score ``7 - guesses used``; LOSS with score 0."""
        if _solved(state):
            return Outcome(Termination.WIN, 0, (float(MAX_GUESSES + 1 - len(state.guesses)),))
        if len(state.guesses) >= MAX_GUESSES:
            return Outcome(Termination.LOSS, None, (0.0,))
        return None

    # --- notation ------------------------------------------------------------------
    def move_to_text(self, state: WordleState, move: str) -> str:
        """The guess itself, lower-case."""
        return move

    def parse_move(self, state: WordleState, text: str) -> str:
        """``text`` stripped and lower-cased, if it is an allowed word."""
        word = text.strip()
        if len(word) != WORD_LENGTH or not (word.isascii() and word.isalpha()):
            raise InvalidMoveError(
                f"{text.strip()[:40]!r} is not a guess: write one word of exactly "
                f"{WORD_LENGTH} letters A-Z\n{self.render(state)}"
            )
        word = word.lower()
        if self.is_terminal(state):
            raise IllegalMoveError(f"the game is over; no guess is legal\n{self.render(state)}")
        if word not in _allowed_set():
            raise IllegalMoveError(
                f"{word!r} is not in the word list; it does not count as a guess\n"
                f"{self.render(state)}"
            )
        return word

    def render(self, state: WordleState) -> str:
        """The board from the guesses and feedback only (never the answer)."""
        lines = [_LEGEND]
        for i, (guess, fb) in enumerate(state.guesses, start=1):
            lines.append(f"{i}. {guess.upper()}  {' '.join(fb)}")
        if not state.guesses:
            lines.append("(no guesses yet)")
        else:
            present, absent = _letter_hints(state.guesses)
            known = "".join(_known_greens(state.guesses))
            lines.append(f"Known positions: {' '.join(known.upper())}")
            lines.append(f"In the word: {' '.join(present).upper() or '-'}")
            lines.append(f"Not in the word: {' '.join(absent).upper() or '-'}")
        lines.append(f"Guesses left: {MAX_GUESSES - len(state.guesses)} of {MAX_GUESSES}")
        used = len(state.guesses)
        if _solved(state):
            lines.append(f"Solved in {used} guess{'es' if used > 1 else ''}. The game is over.")
        elif used >= MAX_GUESSES:
            lines.append("Out of guesses: not solved. The game is over.")
        else:
            lines.append(f"{self.spec.player_names[0]} to guess (guess {used + 1} of 6).")
        return "\n".join(lines)

    def board_view(self, state: WordleState) -> BoardView:
        """Six rows of five letters, coloured by their feedback; guesses are
        typed, not clicked (there are thousands of words)."""
        style = {GREEN: "green", YELLOW: "yellow", GRAY: "gray"}
        cells, marks = [], []
        for i in range(MAX_GUESSES):
            if i < len(state.guesses):
                guess, feedback = state.guesses[i]
                cells.append(tuple(guess.upper()))
                marks.append(tuple(style[f] for f in feedback))
            else:
                cells.append(("",) * WORD_LENGTH)
                marks.append(("",) * WORD_LENGTH)
        return BoardView(
            cells=tuple(cells),
            marks=tuple(marks),
            typed=True,
            to_play=None if self.is_terminal(state) else 0,
        )

    def parse_board(self, text: str) -> WordleState:
        """The guesses and feedback of the last board in ``text``; answer ``""``."""
        lines = text.splitlines()
        starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(_HEADER)]
        if not starts:
            raise GameError(f"no Wordle board found in the text (no {_HEADER!r} line)")
        guesses: list[tuple[str, Feedback]] = []
        left: int | None = None
        for line in lines[starts[-1] + 1 :]:
            row = _ROW.match(line)
            if row is not None:
                if int(row.group(1)) != len(guesses) + 1:
                    raise GameError(f"Wordle board row out of order: {line.strip()!r}")
                fb = row.group(3).replace(" ", "")
                guesses.append((row.group(2).lower(), fb))
                continue
            m = _LEFT.match(line)
            if m is not None:
                left = int(m.group(1))
                break
        if left is None:
            raise GameError("Wordle board has no 'Guesses left' line")
        if left != MAX_GUESSES - len(guesses) or len(guesses) > MAX_GUESSES:
            raise GameError(f"Wordle board shows {len(guesses)} guesses but {left} left")
        return WordleState("", tuple(guesses))

    def solve(self, state: WordleState, rng: random.Random) -> str:
        """A strong guess from the feedback alone (the answer is not read).

        Candidates are the answers consistent with all feedback; among the
        candidates richest in common letters (and a few allowed words probing
        the letters the candidates disagree on) it picks the guess minimising
        the expected number of candidates left, preferring a candidate on
        ties; remaining ties go to ``rng``. The empty board gets the fixed
        :data:`OPENER`. Positions are cached, so a repeated position is free.
        """
        if self.is_terminal(state):
            raise IllegalMoveError(f"the game is over; no guess is legal\n{self.render(state)}")
        return rng.choice(_best_guesses(state.guesses))

    # --- scoring -------------------------------------------------------------------
    def margin(self, state: WordleState, player: int) -> float:
        """Win: ``(7 - guesses) / 6``; loss: ``0.5 * best (G + Y/2) / 5``; else 0."""
        used = len(state.guesses)
        if _solved(state):
            return (MAX_GUESSES + 1 - used) / MAX_GUESSES
        if used < MAX_GUESSES:
            return 0.0
        best = max(fb.count(GREEN) + 0.5 * fb.count(YELLOW) for _, fb in state.guesses)
        return 0.5 * best / WORD_LENGTH


def _solved(state: WordleState) -> bool:
    return bool(state.guesses) and state.guesses[-1][1] == SOLVED_FEEDBACK


def _known_greens(guesses: Iterable[tuple[str, Feedback]]) -> list[str]:
    """Each position's letter where some guess got it green, else ``_``."""
    known = ["_"] * WORD_LENGTH
    for guess, fb in guesses:
        for i, (ch, mark) in enumerate(zip(guess, fb, strict=True)):
            if mark == GREEN:
                known[i] = ch
    return known


def _letter_hints(guesses: Iterable[tuple[str, Feedback]]) -> tuple[list[str], list[str]]:
    """Letters known to be in the word, and letters known not to be (sorted)."""
    present: set[str] = set()
    marked_gray: set[str] = set()
    for guess, fb in guesses:
        for ch, mark in zip(guess, fb, strict=True):
            if mark == GRAY:
                marked_gray.add(ch)
            else:
                present.add(ch)
    return sorted(present), sorted(marked_gray - present)


def _main(argv: Sequence[str] | None = None) -> int:
    """``python -m core.games.wordle --opener``: rank openers; ``--bench N``:
    solver win rate over N seeded games."""
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Wordle tools")
    parser.add_argument("--opener", action="store_true", help="rank openers (top 500 words)")
    parser.add_argument(
        "--write", action="store_true", help="rebuild the second-guess table for OPENER"
    )
    parser.add_argument("--bench", type=int, default=0, help="solver games to play")
    args = parser.parse_args(argv)
    if args.opener:
        for score, word in find_opener()[:10]:
            print(f"{word} {score / len(answers()):.2f}")
    if args.write:
        table = build_second_guesses()
        path = resources.files("core.games").joinpath("data", SECOND_GUESSES_FILE)
        lines = [
            f"# Best second guesses after {OPENER!r}, by its feedback: built by",
            "# python -m core.games.wordle --write (see WORDLE_LICENSE.md).",
        ]
        lines += [f"{fb} {' '.join(words)}" for fb, words in sorted(table.items())]
        with resources.as_file(path) as out:
            out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(table)} entries to {path}")
    if args.bench:
        from core.rng import derive_rng

        game = Wordle()
        hist = [0] * (MAX_GUESSES + 1)
        worst = 0.0
        for seed in range(args.bench):
            state = game.initial_state(derive_rng("wordle-bench", seed))
            rng = derive_rng("wordle-bench-solver", seed)
            while not game.is_terminal(state):
                t0 = time.perf_counter()
                board = game.parse_board(game.render(state))
                move = game.solve(board, rng)
                worst = max(worst, time.perf_counter() - t0)
                state = game.apply(state, move)
            hist[len(state.guesses) if _solved(state) else 0] += 1
        wins = args.bench - hist[0]
        mean = sum(k * hist[k] for k in range(1, MAX_GUESSES + 1)) / max(1, wins)
        print(f"games {args.bench} won {wins} ({wins / args.bench:.1%}) mean guesses {mean:.3f}")
        print(f"histogram 1..6: {hist[1:]} lost {hist[0]}; slowest call {worst * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
