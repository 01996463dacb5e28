"""Scripted players: stand-ins for a model that read only the conversation.

A ``ScriptedPlayer`` sees what a model sees — the system prompt and the
observations — finds the game from the system prompt, reads the position back
from the last observation with ``Game.parse_board``, and answers. It backs the
embedded policy server and the conformance suite.

Policies (joined with ``/``, noise first):

* ``random``: a uniformly random legal move.
* ``minimax:D``: alpha-beta to depth ``D`` (one-player games: the game's solver).
* ``noisy:P`` or ``noisy:P/minimax:D``: with probability ``P`` a bad reply —
  malformed, not a move, or an illegal move — else the base policy (``random``
  by default).
* ``args`` (with a base, e.g. ``args/minimax:1``): in tool mode, the first
  turns' ``make_move`` calls carry each of ``EDGE_ARGUMENTS`` in turn (every
  JSON type, a missing and an extra key: the edge cases core judges), then the
  base policy's moves. Text replies are unaffected.
* ``stop:N``: in tool mode, from the model's ``N``-th turn on it answers with
  text and no tool call (a model that stops playing). Text replies are unaffected.

Replies are deterministic for (seed, policy, the observations so far), so the
same task gives the same replies in every framework.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.games import family_of, list_games, make_game
from core.games.base import Game, GameError, IllegalMoveError
from core.opponents import MinimaxOpponent
from core.parsing import MOVE_CLOSE, MOVE_OPEN, format_reply
from core.prompts import listed_moves
from core.rng import derive_rng

NOISE_KINDS = ("no_tags", "two_tags", "not_a_move", "illegal")
EDGE_ARGUMENTS: tuple[Any, ...] = (
    {"move": 4},
    {"move": 2.5},
    {"move": None},
    {"move": ["4"]},
    {"move": {"square": "4"}},
    {"square": "4"},
    {"move": "zz", "why": "the centre"},
    {},
    None,
)
"""Raw ``make_move`` arguments that are not ``{"move": <text>}`` (the ``args`` policy):
a ``move`` of every JSON type but text, a missing key, an extra key, no arguments.
(Arguments that are not an object at all, ``7`` or ``["4"]``, are core's to reject
too, but TRL refuses them itself before the environment: ``tool(**arguments)``.)"""
STOP_TEXT = "I will stop here."
"""What a ``stop:N`` player says instead of a tool call."""


class Stop:
    """``ScriptedPlayer.tool_arguments``' answer when the player stops calling the tool."""


class PolicyError(ValueError):
    """A policy string that cannot be parsed."""


class ConversationError(ValueError):
    """The conversation does not show a gamebridge game the player can read."""


@dataclass(frozen=True)
class Policy:
    base: str = "random"
    depth: int = 0
    noise: float = 0.0
    edge_arguments: bool = False
    stop_after: int | None = None

    @classmethod
    def parse(cls, text: str) -> Policy:
        base, depth, noise = "random", 0, 0.0
        edge, stop = False, None
        for part in text.strip().split("/"):
            name, _, arg = part.strip().partition(":")
            try:
                if name == "args" and not arg:
                    edge = True
                elif name == "stop":
                    stop = int(arg)
                    if stop < 0:
                        raise PolicyError(f"stop must be >= 0, got {stop}")
                elif name == "random" and not arg:
                    base = "random"
                elif name == "minimax":
                    base, depth = "minimax", int(arg)
                    if not 1 <= depth <= 12:
                        raise PolicyError(f"minimax depth must be in 1..12, got {depth}")
                elif name == "noisy":
                    noise = float(arg)
                    if not 0.0 <= noise <= 1.0:
                        raise PolicyError(f"noise must be in [0, 1], got {noise}")
                else:
                    raise PolicyError(f"unknown policy part {part!r}")
            except ValueError as exc:
                if isinstance(exc, PolicyError):
                    raise
                raise PolicyError(
                    f"bad policy {text!r}: expected random, minimax:D, noisy:P or "
                    "noisy:P/minimax:D (optionally with args and stop:N)"
                ) from exc
        return cls(base, depth, noise, edge, stop)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of an OpenAI chat message (string or list-of-parts content)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return ""


_FAMILY_TITLE = re.compile(r"You are playing [^\n]*? \((\w+:\w+(?:\([^()\n]*\))?)\)(?: as |\.)")
"""A family game's title ends with its id in brackets (``Chess (openspiel:chess)``)."""


def identify_game(text: str) -> Game[Any, Any]:
    """The game a system prompt introduces (``You are playing <Title> as ...``
    or, for one-player games, ``You are playing <Title>.``)."""
    for name in list_games():
        game = make_game(name)
        intro = f"You are playing {game.spec.title}"
        if f"{intro} as " in text or f"{intro}." in text:
            return game
    match = _FAMILY_TITLE.search(text)
    if match is not None and family_of(match[1]) is not None:
        try:
            return make_game(match[1])
        except (KeyError, GameError, ImportError) as exc:
            raise ConversationError(f"cannot make the game {match[1]!r}: {exc}") from exc
    raise ConversationError("no gamebridge game found in the system prompt")


def legal_replies(game: Game[Any, Any], observation: str) -> list[str]:
    """Every legal reply to ``observation``, in the canonical form (``format_reply``): the
    replies a constrained decoder may choose from. The position is read back from the
    observation as a scripted player reads it (``game.parse_board``) and each legal move
    written in the game's notation, in ``legal_moves`` order; a game with hidden
    information gives the moves its observation lists. Empty once the game is over. Each
    reply parses (``parse_reply``) to a move ``game.play`` accepts in that position
    (Wordle: every word of its allowed list, 11,392 replies at every guess).

    >>> from core.games import make_game
    >>> game = make_game("tictactoe")
    >>> legal_replies(game, game.render(game.apply(game.initial_state(), 4)))[:3]
    ['<move>0</move>', '<move>1</move>', '<move>2</move>']
    """
    if game.spec.hidden_information:
        listed = listed_moves(observation)
        if listed is None:
            raise ConversationError("the observation lists no legal move")
        return [format_reply(m) for m in listed]
    try:
        state = game.parse_board(observation)
    except (GameError, ValueError, IndexError) as exc:
        raise ConversationError(
            f"cannot read a {game.spec.title} board from the observation"
        ) from exc
    return [format_reply(game.move_to_text(state, m)) for m in game.legal_moves(state)]


@dataclass(frozen=True)
class ListedMoves:
    """What a scripted player knows in a game with hidden information: the legal
    moves its observation lists (its view cannot be read back into a position)."""

    moves: tuple[str, ...]


class ScriptedPlayer:
    """A deterministic player that reads the conversation like a model."""

    def __init__(self, policy: str = "random", seed: int = 0) -> None:
        self.policy_text = policy
        self.policy = Policy.parse(policy)
        self.seed = seed
        self._minimax = (
            MinimaxOpponent(self.policy.depth) if self.policy.base == "minimax" else None
        )

    def _read(
        self, messages: Sequence[Mapping[str, Any]]
    ) -> tuple[Game[Any, Any], Any, random.Random]:
        if not messages:
            raise ConversationError("empty conversation")
        system = "\n".join(
            message_text(m) for m in messages if m.get("role") in ("system", "developer")
        )
        observations = [message_text(m) for m in messages if m.get("role") in ("user", "tool")]
        game = identify_game(system or (observations[0] if observations else ""))
        if not observations:
            raise ConversationError("no observation to read the board from")
        if game.spec.hidden_information:  # a seat's view is no position: pick from its list
            listed = listed_moves(observations[-1])
            if not listed:
                raise ConversationError("the last observation lists no legal move")
            return (
                game,
                ListedMoves(tuple(listed)),
                derive_rng(self.seed, self.policy_text, tuple(observations)),
            )
        try:
            state = game.parse_board(observations[-1])
        except (GameError, ValueError, IndexError) as exc:
            raise ConversationError(
                f"cannot read a {game.spec.title} board from the last observation"
            ) from exc
        rng = derive_rng(self.seed, self.policy_text, tuple(observations))
        return game, state, rng

    def _choose(self, game: Game[Any, Any], state: Any, rng: random.Random) -> str:
        if isinstance(state, ListedMoves):  # hidden information: every policy plays at random
            return rng.choice(state.moves)
        moves = list(game.legal_moves(state))
        if not moves:
            raise ConversationError("the position shown has no legal move")
        if game.spec.num_players == 1 and self._minimax is not None:
            move = game.solve(state, rng)
        elif self._minimax is not None:
            move = self._minimax.choose(game, state, rng)
        else:
            move = rng.choice(moves)
        return game.move_to_text(state, move)

    def _bad(self, game: Game[Any, Any], state: Any, rng: random.Random, kind: str) -> str:
        """A bad move text (``not_a_move`` or ``illegal``)."""
        if kind == "illegal" and isinstance(state, ListedMoves):
            for text in game.spec.move_examples:
                if text not in state.moves:
                    return text
        elif kind == "illegal":
            # A well-formed move that is not legal here: a notation example
            # (taken squares, full columns) or a legal move's text reversed
            # (Wordle: a five-letter non-word).
            legal = self._choose(game, state, rng)
            for text in (*game.spec.move_examples, legal[::-1]):
                try:
                    game.parse_move(state, text)
                except IllegalMoveError:
                    return text
                except GameError:
                    continue
        return rng.choice(["zz", "?", "move", "99x"])

    def move(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The move text only (a tool-call argument); noisy policies may give a
        text that is not a move or an illegal one."""
        game, state, rng = self._read(messages)
        if rng.random() < self.policy.noise:
            kind = rng.choice(NOISE_KINDS)
            return self._bad(game, state, rng, "illegal" if kind == "illegal" else "not_a_move")
        return self._choose(game, state, rng)

    def tool_arguments(self, messages: Sequence[Mapping[str, Any]]) -> Any:
        """A ``make_move`` call's arguments as the model would write them (a JSON
        value: ``{"move": ...}``, or an edge case under ``args``), or ``Stop()``
        when a ``stop:N`` player answers with text instead."""
        turns = sum(1 for m in messages if m.get("role") == "assistant")
        if self.policy.stop_after is not None and turns >= self.policy.stop_after:
            return Stop()
        if self.policy.edge_arguments and turns < len(EDGE_ARGUMENTS):
            self._read(messages)  # the conversation must still show a game
            return EDGE_ARGUMENTS[turns]
        return {"move": self.move(messages)}

    def reply(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """A full text reply with ``<move>`` tags (or a malformed one under noise)."""
        game, state, rng = self._read(messages)
        if rng.random() < self.policy.noise:
            kind = rng.choice(NOISE_KINDS)
            if kind == "no_tags":
                return f"I will play {self._choose(game, state, rng)}."
            if kind == "two_tags":
                move = self._choose(game, state, rng)
                return f"{MOVE_OPEN}{move}{MOVE_CLOSE} or {MOVE_OPEN}{move}{MOVE_CLOSE}"
            return format_reply(self._bad(game, state, rng, kind))
        move = self._choose(game, state, rng)
        return format_reply(move, think=f"{self.policy.base} picks {move}")
