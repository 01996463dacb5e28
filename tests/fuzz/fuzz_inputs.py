"""Hostile model replies and the invariants they must not break.

One grammar of hostile replies (:func:`hostile_reply`) is written once against a
small :class:`Chooser` interface, so three engines share it:

* hypothesis (``HypothesisChooser`` over ``st.data()``): the bounded tests in
  ``test_fuzz_bounded.py`` (shrinks a failure to a small reply);
* a seeded ``random.Random`` (``RandomChooser``): ``make fuzz`` (``run.py``), fast
  enough for 100k inputs;
* atheris (``run.py --engine atheris``, optional): coverage-guided bytes.

Replies: empty, whitespace, huge (1 MB), binary (latin-1 and surrogate-escaped
bytes), odd unicode (NUL, lone surrogates, RTL overrides, zero-width, line
separators), nested and repeated tags, tags inside ``<think>``, rendered board
text, moves in other notations (chess, coordinates, fullwidth and Arabic-Indic
digits), and well-formed legal moves so that games advance.

The checks (:func:`check_parse`, :func:`check_game`, :class:`EpisodeChecker`)
raise ``InvariantError`` when an invariant breaks; any other exception escaping
them is itself a finding (an untyped error out of core).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from core.episode import Episode, EpisodeFinishedError
from core.games import GameError, IllegalMoveError, InvalidMoveError, list_games, make_game
from core.games.base import Game
from core.parsing import (
    MAX_MOVE_CHARS,
    MOVE_CLOSE,
    MOVE_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    FormatError,
    parse_reply,
)
from core.tasks import Task

T = TypeVar("T")
MB = 1 << 20

TAGS = [
    THINK_OPEN,
    THINK_CLOSE,
    MOVE_OPEN,
    MOVE_CLOSE,
    "<MOVE>",
    "</MOVE>",
    "<Move>",
    "<move >",
    "< move>",
    "<move/>",
    "</ move>",
    "<move\n>",
    "&lt;move&gt;",
    "<answer>",
    "</answer>",
    "<think",
    "<mo",
    "ve>",
    "<<move>>",
    "<move>>",
    "<thinking>",
    "</thinking>",
    "```",
]
# fmt: off
OTHER_NOTATIONS = [
    "e2e4", "Nf3", "O-O", "0-0-0", "1. e4 e5", "(1, 2)", "[3]", "row 1, col 2", "B2", "c 4",
    "4.0", "-1", "+1", "1e3", "0x3", "0b11", "007", "½", "Ⅳ", "٣", "３", "𝟑", "²", "PASS",
    "Pass", "pas", "resign", "null", "None", "NaN", "inf", "''", '"c4"', "`c4`", "**c4**",
    "c4c4", "a0", "i9", "z26", "a9", "h0", "crane", "CRANE", "crаne", "abcdef", "abcd",
    "aaaaa", "12345", "cell 4", "column 3", "4 stones", "1 2", "1-2", "1,2", "0:1", "x",
]
UNICODE = [
    "\x00", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u202d", "\u2066",
    "\u2069", "\u061c", "\ud800", "\udfff", "\udcff", "\U0001f600", "\u0301", "\r", "\r\n",
    "\t", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\x7f", "\u00a0", "\u3000",
    "\uffff", "\U0010ffff",
]
# fmt: on
FULLWIDTH = {c: c + 0xFEE0 for c in range(0x21, 0x7F)}
"""ASCII -> fullwidth forms (``c4`` -> ``ｃ４``)."""
PROSE = ["I will play ", "my move is ", " because ", "Let me think.", "\n\n", " ", "ok", "."]


class Chooser(Protocol):
    """Where the grammar's choices come from (a seeded RNG, hypothesis, atheris)."""

    def choice(self, options: Sequence[T]) -> T: ...

    def integer(self, low: int, high: int) -> int: ...

    def text(self, max_size: int) -> str: ...

    def raw(self, max_size: int) -> bytes: ...


class RandomChooser:
    """A seeded ``random.Random``: fast, for ``make fuzz``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self, max_size: int) -> str:
        n = self.rng.randint(0, max_size)
        pool = self.rng.choice(
            [(0x20, 0x7E), (0x00, 0xFF), (0x00, 0x2FFF), (0xD800, 0xDFFF), (0x00, 0x10FFFF)]
        )
        return "".join(chr(self.rng.randint(*pool)) for _ in range(n))

    def raw(self, max_size: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(0, max_size))


class HypothesisChooser:
    """Choices drawn from hypothesis' ``st.data()`` (shrinkable)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data = data
        self.st = st

    def choice(self, options: Sequence[T]) -> T:
        return options[self.data.draw(self.st.integers(0, len(options) - 1))]

    def integer(self, low: int, high: int) -> int:
        return int(self.data.draw(self.st.integers(low, high)))

    def text(self, max_size: int) -> str:
        return str(self.data.draw(self.st.text(max_size=max_size)))

    def raw(self, max_size: int) -> bytes:
        return bytes(self.data.draw(self.st.binary(max_size=max_size)))


class AtherisChooser:
    """Choices from an ``atheris.FuzzedDataProvider`` (coverage-guided)."""

    def __init__(self, fdp: Any) -> None:
        self.fdp = fdp

    def choice(self, options: Sequence[T]) -> T:
        return options[self.fdp.ConsumeIntInRange(0, len(options) - 1)]

    def integer(self, low: int, high: int) -> int:
        return int(self.fdp.ConsumeIntInRange(low, high))

    def text(self, max_size: int) -> str:
        return str(self.fdp.ConsumeUnicode(self.fdp.ConsumeIntInRange(0, max_size)))

    def raw(self, max_size: int) -> bytes:
        return bytes(self.fdp.ConsumeBytes(self.fdp.ConsumeIntInRange(0, max_size)))


# --- the grammar ------------------------------------------------------------------------------


def legal_texts(ch: Chooser, game: Game[Any, Any], state: Any, k: int = 12) -> list[str]:
    """Up to ``k`` legal moves in notation (a spread, not just the first: Wordle has 10k+)."""
    if game.is_terminal(state):
        return []
    moves = list(game.legal_moves(state))
    if len(moves) > k:
        start = ch.integer(0, len(moves) - 1)
        moves = [moves[(start + i * 997) % len(moves)] for i in range(k)]
    return [game.move_to_text(state, m) for m in moves]


def move_tokens(game: Game[Any, Any], state: Any, legal: list[str]) -> list[str]:
    """Move-like tokens for ``state``: legal moves, examples, their mutations, other notations."""
    base = [*legal, *game.spec.move_examples]
    mutated = [
        m
        for t in base[:6]
        for m in (t.upper(), f" {t} ", f"{t}.", t[::-1], t + t, f"\u200b{t}", f"{t}\x00")
    ]
    fullwidth = [t.translate(FULLWIDTH) for t in base[:3]]
    return [*base, *mutated, *fullwidth, *OTHER_NOTATIONS]


def _fragment(ch: Chooser, game: Game[Any, Any], state: Any, tokens: list[str]) -> str:
    kind = ch.integer(0, 7)
    if kind == 0:
        return ch.choice(TAGS)
    if kind == 1:
        return ch.choice(tokens)
    if kind == 2:
        return ch.choice(UNICODE)
    if kind == 3:
        return ch.choice(PROSE)
    if kind == 4:
        return game.render(state)
    if kind == 5:
        return ch.text(12)
    if kind == 6:
        return f"{MOVE_OPEN}{ch.choice(tokens)}{MOVE_CLOSE}"
    return f"{THINK_OPEN}{ch.choice(tokens)}{THINK_CLOSE}"


def _soup(ch: Chooser, game: Game[Any, Any], state: Any, tokens: list[str], n: int) -> str:
    return "".join(_fragment(ch, game, state, tokens) for _ in range(ch.integer(0, n)))


def hostile_reply(ch: Chooser, game: Game[Any, Any], state: Any, *, huge: bool = True) -> str:
    """One hostile (or, about a fifth of the time, well-formed) reply for ``state``."""
    legal = legal_texts(ch, game, state)
    tokens = move_tokens(game, state, legal)
    shape = ch.integer(0, 13)
    if shape == 0:
        return ch.choice(["", " ", "\n", "\x00", "\t\r\n", "\u200b"])
    if shape == 1:  # a well-formed legal move (games must advance)
        move = ch.choice(legal) if legal else ch.choice(tokens)
        think = ch.choice(["", f"{THINK_OPEN}ok{THINK_CLOSE}\n"])
        return f"{think}{MOVE_OPEN}{move}{MOVE_CLOSE}"
    if shape == 2:  # a tag around any token, surrounded by soup
        pre, post = _soup(ch, game, state, tokens, 3), _soup(ch, game, state, tokens, 3)
        return f"{pre}{MOVE_OPEN}{ch.choice(tokens)}{MOVE_CLOSE}{post}"
    if shape == 3:  # think block holding tags, then maybe a move
        inner = _soup(ch, game, state, tokens, 4)
        tail = ch.choice(["", f"{MOVE_OPEN}{ch.choice(tokens)}{MOVE_CLOSE}"])
        return f"{THINK_OPEN}{inner}{THINK_CLOSE}{tail}"
    if shape == 4:  # nested tags
        depth = ch.integer(1, 6)
        tag = ch.choice([(MOVE_OPEN, MOVE_CLOSE), (THINK_OPEN, THINK_CLOSE)])
        return tag[0] * depth + ch.choice(tokens) + tag[1] * ch.integer(0, depth + 1)
    if shape == 5:  # repeated tags / moves
        unit = ch.choice([MOVE_OPEN, MOVE_CLOSE, f"{MOVE_OPEN}{ch.choice(tokens)}{MOVE_CLOSE}"])
        return unit * ch.integer(2, 50)
    if shape == 6:  # binary bytes, decoded the ways a client might
        data = ch.raw(64)
        codec = ch.choice(["latin-1", "surrogateescape", "replace"])
        if codec == "latin-1":
            return data.decode("latin-1")
        return data.decode("utf-8", codec)
    if shape == 7:  # odd unicode around a legal move
        move = ch.choice(legal) if legal else ch.choice(tokens)
        a, b, c = ch.choice(UNICODE), ch.choice(UNICODE), ch.choice(UNICODE)
        return f"{a}{MOVE_OPEN}{b}{move}{c}{MOVE_CLOSE}"
    if shape == 8:  # fake board text, then a move in another notation
        return f"{game.render(state)}\n{MOVE_OPEN}{ch.choice(OTHER_NOTATIONS)}{MOVE_CLOSE}"
    if shape == 9 and huge:  # 1 MB
        unit = ch.choice(
            ["x", MOVE_OPEN, THINK_OPEN, "\x00", "\ud800", game.render(state), "<", "a1 "]
        )
        body = unit * (MB // max(1, len(unit)) + 1)
        wrap = ch.integer(0, 2)
        move = ch.choice(tokens)
        if wrap == 0:
            return body
        if wrap == 1:
            return f"{THINK_OPEN}{body}{THINK_CLOSE}{MOVE_OPEN}{move}{MOVE_CLOSE}"
        return f"{MOVE_OPEN}{body}{MOVE_CLOSE}"
    if shape == 10:  # a bare token (lenient parsers would take it)
        return ch.choice(tokens)
    if shape == 11:
        return ch.text(40)
    return _soup(ch, game, state, tokens, 8)


def random_state(ch: Chooser, game: Game[Any, Any], seed: int) -> Any:
    """A position reached by some random legal plies (maybe terminal)."""
    state = game.initial_state(random.Random(seed))
    for _ in range(ch.integer(0, game.spec.max_plies)):
        moves = list(game.legal_moves(state))
        if not moves:
            break
        state = game.apply(state, moves[ch.integer(0, len(moves) - 1)])
    return state


def random_task(ch: Chooser, game: str, seed: int) -> Task:
    """A task with a varied budget, cap, side, opponent and opening."""
    players = make_game(game).spec.num_players
    return Task(
        game=game,
        seed=seed,
        model_player=ch.integer(0, players - 1),
        opponent=ch.choice(["random", "minimax"]),
        depth=1,
        max_turns=ch.choice([None, None, 1, 3, 8]),
        max_invalid_moves=ch.integer(0, 6),
        think_required=ch.choice([False, False, True]),
        opening_plies=ch.choice([0, 0, 2, 5]),
    )


# --- the invariants ---------------------------------------------------------------------------


class InvariantError(AssertionError):
    """An invariant of the parser, a game or the Episode broke (a finding)."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise InvariantError(message)


TYPED = (FormatError, InvalidMoveError, IllegalMoveError)


def check_parse(reply: str) -> str:
    """``parse_reply`` returns a sane move or raises ``FormatError``; nothing else."""
    outcome = "ok"
    for think_required in (False, True):
        for lenient in (False, True):
            try:
                parsed = parse_reply(reply, think_required=think_required, lenient=lenient)
            except FormatError:
                if not (think_required or lenient):
                    outcome = "FormatError"
                continue
            move = parsed.move
            _check(bool(move) and move == move.strip(), f"empty/unstripped move {move!r}")
            _check(len(move) <= MAX_MOVE_CHARS, f"move of {len(move)} chars")
            # strict: no tag or newline inside <move>; lenient: one printable token, no "<"
            banned = "<" if lenient and "<move>" not in reply else "<>\n"
            _check(not any(c in move for c in banned), f"tag or newline in move {move!r}")
    return outcome


def check_game(game: Game[Any, Any], state: Any, text: str) -> str:
    """``parse_move``/``play`` give a legal move or a typed error; ``state`` is unchanged."""
    before, rendered = state, game.render(state)
    outcome = "ok"
    try:
        move = game.parse_move(state, text)
        _check(move in game.legal_moves(state), f"parse_move({text!r}) gave illegal {move!r}")
    except (InvalidMoveError, IllegalMoveError) as exc:
        outcome = type(exc).__name__
    try:
        game.play(state, text)
        _check(outcome == "ok", f"play accepted {text!r} that parse_move refused")
    except (InvalidMoveError, IllegalMoveError) as exc:
        _check(outcome != "ok", f"parse_move accepted {text!r} but play raised {exc!r}")
    _check(state == before and game.render(state) == rendered, "a rejected text changed state")
    return outcome


@dataclass
class Figures:
    """What a fuzz run saw."""

    inputs: int = 0
    by_layer: dict[str, Counter[str]] = field(default_factory=dict)
    max_reply_chars: int = 0
    episodes: int = 0
    endings: Counter[str] = field(default_factory=Counter)

    def count(self, layer: str, outcome: str) -> None:
        self.by_layer.setdefault(layer, Counter())[outcome] += 1


class EpisodeChecker:
    """Drive one Episode with hostile replies, checking every step."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.episode = Episode(task)
        self.episode.reset()
        self.limit = task.turn_limit()

    def step(self, reply: str, tool: bool = False) -> str:
        """One reply (``tool``: as a tool call's move, ``Episode.step_move``); returns
        the step's error kind (``"valid"`` if accepted)."""
        ep = self.episode
        _check(not ep.done, "stepping a finished episode")
        state, events, invalid = ep.state, len(ep.events), ep.invalid_moves
        board = ep.game.render(state)
        try:
            result = ep.step_move(reply) if tool else ep.step(reply)
        except Exception as exc:
            name = "step_move" if tool else "step"
            raise InvariantError(f"Episode.{name} raised {exc!r} for {reply[:200]!r}") from exc
        _check(len(ep.events) == events + 1, "a reply was not recorded as one event")
        event = ep.events[-1]
        _check(event["reply"] == reply, "the event does not hold the reply")
        _check(event["kind"] == ("tool" if tool else "text"), "the event's kind is wrong")
        if tool:
            _check(event["format_ok"], "a tool call's move counted as a format failure")
        error = result.info["error"]
        if error is not None:
            _check(not result.info["valid"], "an error marked valid")
            _check(ep.invalid_moves == invalid + 1, "an invalid reply not counted")
            _check(ep.state == state and ep.game.render(ep.state) == board, "rejected, changed")
        else:
            _check(ep.invalid_moves == invalid, "a valid reply counted as invalid")
        _check(
            ep.invalid_moves == sum(e["error"] is not None for e in ep.events),
            "invalid count differs from the events",
        )
        _check(len(ep.events) <= self.limit, f"{len(ep.events)} replies > limit {self.limit}")
        if len(ep.events) == self.limit:
            _check(ep.done, f"not done after turn_limit() = {self.limit} replies")
        _check(result.done == ep.done, "StepResult.done differs from Episode.done")
        if ep.done:
            self._check_finished()
        return "valid" if error is None else error

    def _check_finished(self) -> None:
        ep = self.episode
        _check(ep.result in ("win", "draw", "loss"), f"result {ep.result!r}")
        _check(ep.termination in ("game_over", "forfeit", "turn_cap"), f"{ep.termination!r}")
        if ep.termination == "forfeit":
            _check(ep.invalid_moves == self.task.max_invalid_moves + 1, "forfeit miscounted")
        else:
            _check(ep.invalid_moves <= self.task.max_invalid_moves, "over budget, not forfeit")
        trajectory = ep.to_dict()
        events = len(ep.events)
        try:
            ep.step("<move>x</move>")
            raise InvariantError("a step after done was accepted")
        except EpisodeFinishedError:
            pass
        _check(len(ep.events) == events, "a step after done changed the events")
        # Exact replay from the trajectory itself. (A JSON round trip is not exact for
        # replies holding lone surrogates: json joins an adjacent high+low pair into one
        # character; model text over HTTP is valid UTF-8, so it never holds them.)
        replay = Episode.from_trajectory(trajectory)
        _check(replay.to_dict() == trajectory, "the trajectory does not replay exactly")
        _check(isinstance(json.dumps(trajectory), str), "the trajectory is not JSON-able")


def games() -> list[str]:
    return list_games()


__all__ = [
    "TYPED",
    "AtherisChooser",
    "Chooser",
    "EpisodeChecker",
    "Figures",
    "GameError",
    "HypothesisChooser",
    "InvariantError",
    "RandomChooser",
    "check_game",
    "check_parse",
    "games",
    "hostile_reply",
    "legal_texts",
    "move_tokens",
    "random_state",
    "random_task",
]
