"""Games between players of an arena: built-in bots and outside players.

A game here is one ``Episode``: one seat is played by replies (a model at an
endpoint, or a bot standing in for one), the other by the task's opponent; a bot
in the outside seat answers with its move formatted as a reply
(:func:`bot_reply`), through ``Episode.step`` like any model, so there is no
second turn loop. Two outside players meet in an episode with two outside seats
(``Task.seats="outside,outside"``, ``outside`` 0: seat 0's result scores the game).

:func:`round_robin` is the schedule: every pair of players, every game, both
seats, ``rounds`` seeded openings each; every pair plays the same openings
(round ``k`` of a game has one seed), so the pairs' results are comparable.

>>> bot = Bot.parse("minimax:2")
>>> bot.name, bot.task_fields()
('minimax:2', {'opponent': 'minimax', 'depth': 2, 'random_move_prob': 0.0})
>>> pairings, skipped = round_robin(["random", "minimax:1"], ["tictactoe"], rounds=1, seed=0)
>>> [(p.index, p.seats) for p in pairings]
[(0, ('random', 'minimax:1')), (1, ('minimax:1', 'random'))]
>>> play_bots(pairings[0]).result in ("win", "draw", "loss")
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.episode import Episode
from core.games import make_game
from core.opponents import OPPONENT_KINDS, Opponent, make_opponent
from core.parsing import format_reply
from core.rng import derive_rng, derive_seed
from core.tasks import Task

SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}
"""A game's score for a seat, by the result the episode settled for it."""
DEFAULT_OPENING_PLIES = 2
"""Random plies before the first seat's first move in an arena game, drawn from the
round's seed: both seats and every pair play the same opening."""


class ArenaError(ValueError):
    """A player or a schedule the arena cannot play."""


@dataclass(frozen=True)
class Bot:
    """A built-in player: ``random``, ``minimax:D`` or ``mcts:L`` (``core.opponents``),
    optionally ``+random:P`` (a random move with probability ``P``). Its name is
    the opponent's own (``Opponent.name``)."""

    kind: str
    level: int = 1
    """Search depth (minimax) or MCTS level; 1 for ``random`` (unused)."""
    random_move_prob: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Bot:
        """Raises :class:`ArenaError` for text that names no bot."""
        base, plus, noise = text.strip().partition("+")
        kind, _, arg = base.partition(":")
        try:
            level = 1 if kind == "random" and not arg else int(arg)
            prob = 0.0
            if plus:
                name, _, p = noise.partition(":")
                if name != "random":
                    raise ValueError(noise)
                prob = float(p)
            if kind not in OPPONENT_KINDS or not 1 <= level <= 12 or (kind == "random" and arg):
                raise ValueError(kind)
            if not 0.0 <= prob <= 1.0 or math.isnan(prob):
                raise ValueError(p)
        except ValueError:
            raise ArenaError(
                f"not a bot: {text!r} (random, minimax:D, mcts:L, D and L 1..12, "
                "optionally +random:P)"
            ) from None
        return cls(kind, level, prob)

    @property
    def name(self) -> str:
        return self.opponent().name

    def opponent(self) -> Opponent:
        return make_opponent(self.kind, self.level, self.random_move_prob)

    def task_fields(self) -> dict[str, Any]:
        """The ``Task`` fields that make this bot the episode's opponent."""
        return {
            "opponent": self.kind,
            "depth": self.level,
            "random_move_prob": self.random_move_prob,
        }


def is_bot(text: str) -> bool:
    try:
        Bot.parse(text)
    except ArenaError:
        return False
    return True


@dataclass(frozen=True)
class Pairing:
    """One game of the schedule."""

    index: int
    game: str
    round: int
    seats: tuple[str, str]
    """The player in seat 0 (moves first after the opening) and in seat 1."""
    outside: int
    """The seat played by replies (the task's ``model_player``); the other seat is
    the task's opponent, a bot, or (``task.seats`` set) a second outside player."""
    task: Task

    def score(self, result: str) -> float:
        """Seat 0's score from the result the episode settled for the outside seat."""
        mine = SCORES[result]
        return mine if self.outside == 0 else 1.0 - mine

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "game": self.game,
            "round": self.round,
            "seats": list(self.seats),
            "outside": self.outside,
            "task": self.task.to_dict(),
        }


def round_seed(seed: int, game: str, round_: int) -> int:
    """The task seed of round ``round_`` of ``game`` (its opening, its bots' draws)."""
    return derive_seed(seed, "arena", game, round_) % 2**31


def round_robin(
    players: Sequence[str],
    games: Sequence[str],
    *,
    rounds: int,
    seed: int,
    bots: Mapping[str, Bot] | None = None,
    opening_plies: int | Mapping[str, int] = DEFAULT_OPENING_PLIES,
    max_invalid_moves: int = 3,
) -> tuple[list[Pairing], list[tuple[str, str]]]:
    """The schedule, and the pairs it leaves out (none since core has two outside
    seats: two outside players play with ``seats="outside,outside"``).

    ``players`` are names; ``bots`` maps the names that are bots to their
    :class:`Bot` (default: every name :meth:`Bot.parse` reads). Order: game,
    round, pair (in ``players`` order), then both seats, so a run cut short has
    as many games of each pair as the next. The outside seat is the outside
    player's; between two bots, the first-listed player's."""
    if bots is None:
        bots = {p: Bot.parse(p) for p in players if is_bot(p)}
    if len(set(players)) != len(players):
        raise ArenaError(f"a player is named twice: {list(players)}")
    if len(players) < 2:
        raise ArenaError("an arena needs at least two players")
    if rounds < 1:
        raise ArenaError(f"rounds must be >= 1, got {rounds}")
    pairs = [(a, b) for i, a in enumerate(players) for b in players[i + 1 :]]
    skipped: list[tuple[str, str]] = []
    pairings: list[Pairing] = []
    for game in games:
        if make_game(game).spec.num_players != 2:
            raise ArenaError(f"{game} is not a two-player game")
        plies = opening_plies if isinstance(opening_plies, int) else opening_plies.get(game, 0)
        for k in range(rounds):
            task_seed = round_seed(seed, game, k)
            for a, b in pairs:
                if (a, b) in skipped:
                    continue
                for seats in ((a, b), (b, a)):
                    if a not in bots and b not in bots:  # two outside seats
                        task = Task(
                            game=game,
                            seed=task_seed,
                            seats="outside,outside",
                            opening_plies=plies,
                            max_invalid_moves=max_invalid_moves,
                        )
                        pairings.append(Pairing(len(pairings), game, k, seats, 0, task))
                        continue
                    outside_player = a if a not in bots or b in bots else b
                    outside = seats.index(outside_player)
                    bot = bots[seats[1 - outside]]
                    try:
                        task = Task(
                            game=game,
                            seed=task_seed,
                            model_player=outside,
                            opening_plies=plies,
                            max_invalid_moves=max_invalid_moves,
                            **bot.task_fields(),
                        )
                    except ValueError as e:
                        raise ArenaError(f"{bot.name} cannot play {game}: {e}") from None
                    pairings.append(Pairing(len(pairings), game, k, seats, outside, task))
    return pairings, skipped


def seat_rng(seed: int, game_name: str, state: Any) -> random.Random:
    """The generator of a bot's move in the outside seat at ``state`` (apart from
    the opponent's, ``core.opponents.opponent_rng``)."""
    return derive_rng(seed, "seat", game_name, state)


def bot_reply(episode: Episode, bot: Opponent) -> str:
    """The reply a bot in ``episode``'s outside seat gives now: its move, formatted
    as a model's well-formed reply (with an empty ``<think>`` when the task requires one)."""
    task, state = episode.task, episode.state
    move = bot.choose(episode.game, state, seat_rng(task.seed, task.game, state))
    text = episode.game.move_to_text(state, move)
    return format_reply(text, "" if task.think_required else None)


def play_bots(pairing: Pairing, bots: Mapping[str, Bot] | None = None) -> Episode:
    """Play a pairing between two bots through ``Episode``: the task's opponent in
    its seat, the outside seat's bot by :func:`bot_reply`. The finished episode."""
    name = pairing.seats[pairing.outside]
    bot = (bots[name] if bots is not None else Bot.parse(name)).opponent()
    episode = Episode(pairing.task)
    episode.reset()
    while not episode.done:
        episode.step(bot_reply(episode, bot))
    return episode


__all__ = [
    "DEFAULT_OPENING_PLIES",
    "SCORES",
    "ArenaError",
    "Bot",
    "Pairing",
    "bot_reply",
    "is_bot",
    "play_bots",
    "round_robin",
    "round_seed",
]
