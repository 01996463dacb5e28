"""Tasks: plain, JSON-serialisable records of one game to play.

A task fixes everything that makes a rollout reproducible: the game, the seed
(from which the opening, the opponent's choices and Wordle's answer derive),
the model's side, the opponent's strength and the invalid-move policy. Rows
from ``make_tasks`` are flat dicts of JSON scalars, usable as a Hugging Face
``datasets`` table.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.games import list_games, make_game
from core.games.base import Game, GameError
from core.rewards import DEFAULT_WEIGHTS, format_weights, parse_weights
from core.rng import derive_rng, derive_seed

OPPONENTS = ("minimax", "random", "mcts")
TURN_CAP_RESULTS = ("loss", "draw")
OUTSIDE = "outside"
"""A seat played by replies from outside core (``Task.seats``)."""
DEFAULT_OPENING_PLIES = {"othello": 2}
"""Random plies before the model's first turn, so that games do not all start
alike (the source walkthrough does this for Othello)."""


class TaskError(ValueError):
    """A task row is malformed: unknown field, wrong type or value out of range."""


MAX_SEED = 2**63 - 1
"""The largest task seed. A seed is an int in ``0..MAX_SEED`` (a signed 64-bit
integer, what every framework's dataset columns hold), the one rule every server
and the play server apply, through :class:`Task`."""


@dataclass(frozen=True)
class Task:
    """One game to play. Every field is a JSON scalar."""

    game: str = "tictactoe"
    seed: int = 0
    model_player: int = 0
    """The model's player index: 0 moves first."""
    opponent: str = "minimax"
    """``"minimax"`` (alpha-beta to ``depth``), ``"random"`` or ``"mcts"`` (Monte
    Carlo tree search at level ``depth``), as the game's ``spec.opponents`` offer."""
    depth: int = 2
    random_move_prob: float = 0.0
    """Probability that the opponent plays a random legal move instead."""
    max_turns: int | None = None
    """Cap on model replies, valid or not; ``None``: enough for any game."""
    max_invalid_moves: int = 3
    """Invalid replies allowed in one game; one more forfeits it."""
    invalid_penalty: float = 0.1
    invalid_penalty_cap: float = 0.5
    turn_cap_result: str = "loss"
    """How a game cut by ``max_turns`` is settled: ``"loss"`` or ``"draw"``."""
    think_required: bool = False
    opening_plies: int = 0
    reward_weights: str | None = None
    """The rubric's weights for this task, as ``"win=1,margin=1,format=0.2,invalid=1"``
    (only the components named are scored); ``None``: ``core.rewards.DEFAULT_WEIGHTS``.
    Every adapter scores by these, so a run's weights reach every framework. A
    mapping is accepted and written in that form; left out of ``to_dict`` (and so
    of the task id) while ``None``."""
    seats: str | None = None
    """Who plays each seat, comma-separated in player order: ``outside`` (a
    model, a person, another checkpoint: its replies come through
    ``Episode.step``) or a built-in bot, ``random``, ``minimax:D`` or ``mcts:L``
    (the game's ``spec.opponents``), e.g. ``"outside,outside"`` for model
    against model. ``model_player`` must be an outside seat (the episode's
    first seat: ``Episode.result``, ``reward()``). ``None``: today's episode,
    ``model_player`` outside and every other seat the task's ``opponent``;
    left out of ``to_dict`` (and so of the task id) while ``None``."""

    def __post_init__(self) -> None:
        spec = _game(self.game).spec
        _check(
            _is_int(self.seed) and 0 <= self.seed <= MAX_SEED,
            f"seed must be an int in 0..{MAX_SEED} (2**63 - 1), got {self.seed!r}",
        )
        players = spec.num_players
        _check(
            _is_int(self.model_player) and 0 <= self.model_player < players,
            f"model_player must be in 0..{players - 1} for {self.game}, got {self.model_player!r}",
        )
        _check(
            self.opponent in OPPONENTS,
            f"opponent must be one of {OPPONENTS}, got {self.opponent!r}",
        )
        _check(
            players == 1 or self.seats is not None or self.opponent in spec.opponents,
            f"{self.game} offers the opponents {spec.opponents}, not {self.opponent!r}",
        )
        _check(
            _is_int(self.depth) and 1 <= self.depth <= 12,
            f"depth must be an int in 1..12, got {self.depth!r}",
        )
        _check(
            _is_prob(self.random_move_prob),
            f"random_move_prob must be in [0, 1], got {self.random_move_prob!r}",
        )
        _check(
            self.max_turns is None or (_is_int(self.max_turns) and self.max_turns >= 1),
            f"max_turns must be a positive int or None, got {self.max_turns!r}",
        )
        _check(
            _is_int(self.max_invalid_moves) and self.max_invalid_moves >= 0,
            f"max_invalid_moves must be an int >= 0, got {self.max_invalid_moves!r}",
        )
        _check(
            _is_num(self.invalid_penalty) and self.invalid_penalty >= 0,
            f"invalid_penalty must be a number >= 0, got {self.invalid_penalty!r}",
        )
        _check(
            _is_num(self.invalid_penalty_cap) and self.invalid_penalty_cap >= 0,
            f"invalid_penalty_cap must be a number >= 0, got {self.invalid_penalty_cap!r}",
        )
        _check(
            self.turn_cap_result in TURN_CAP_RESULTS,
            f"turn_cap_result must be one of {TURN_CAP_RESULTS}, got {self.turn_cap_result!r}",
        )
        _check(
            isinstance(self.think_required, bool),
            f"think_required must be a bool, got {self.think_required!r}",
        )
        _check(
            _is_int(self.opening_plies) and 0 <= self.opening_plies <= 20,
            f"opening_plies must be an int in 0..20, got {self.opening_plies!r}",
        )
        if self.reward_weights is not None:
            try:
                text = format_weights(
                    self.reward_weights
                    if isinstance(self.reward_weights, Mapping)
                    else parse_weights(self.reward_weights)
                )
            except (TypeError, ValueError) as exc:
                raise TaskError(f"reward_weights: {exc}") from None
            object.__setattr__(self, "reward_weights", text)  # one written form
        if self.seats is not None:
            _check(isinstance(self.seats, str), f"seats must be text, got {self.seats!r}")
            roles = tuple(part.strip() for part in self.seats.split(","))
            _check(
                len(roles) == players,
                f"seats names {len(roles)} seats; {self.game} has {players} players",
            )
            for role in roles:
                if role == OUTSIDE:
                    continue
                kind, _, level = role.partition(":")
                _check(
                    kind in spec.opponents and (kind == "random") == (level == ""),
                    f"a seat is {OUTSIDE!r} or a bot of {spec.opponents} "
                    f"(random, minimax:D, mcts:L), got {role!r}",
                )
                _check(
                    kind == "random" or (level.isdigit() and 1 <= int(level) <= 12),
                    f"a bot seat's level must be in 1..12, got {role!r}",
                )
            _check(
                roles[self.model_player] == OUTSIDE,
                f"model_player {self.model_player} must be an outside seat, got {roles}",
            )
            object.__setattr__(self, "seats", ",".join(roles))  # one written form

    def seat_roles(self) -> tuple[str, ...]:
        """Each seat's role, in player order: ``"outside"`` or a bot (``"random"``,
        ``"minimax:2"``, ``"mcts:3"``). Without ``seats``: the model's seat outside,
        every other the task's opponent."""
        if self.seats is not None:
            return tuple(self.seats.split(","))
        players = _game(self.game).spec.num_players
        bot = "random" if self.opponent == "random" else f"{self.opponent}:{self.depth}"
        return tuple(OUTSIDE if p == self.model_player else bot for p in range(players))

    def weights(self) -> dict[str, float]:
        """The rubric's weights: ``reward_weights`` or ``DEFAULT_WEIGHTS``."""
        if self.reward_weights is None:
            return dict(DEFAULT_WEIGHTS)
        return parse_weights(self.reward_weights)

    @functools.cached_property
    def task_id(self) -> str:
        """A stable id: game, seed and a digest of every other field (computed
        once per task: trajectories and logs ask for it again and again)."""
        return f"{self.game}-{self.seed}-{derive_seed(*sorted(self.to_dict().items())) % 16**6:06x}"

    def turn_limit(self) -> int:
        """``max_turns``, or the most replies any game can take."""
        if self.max_turns is not None:
            return self.max_turns
        spec = make_game(self.game).spec
        return math.ceil(spec.max_plies / spec.num_players) + self.max_invalid_moves + 1

    def to_dict(self) -> dict[str, Any]:
        """The fields as a flat dict. Every field is a JSON scalar, so there is
        nothing to copy deeply (``dataclasses.asdict`` does, about ten times
        slower, and trajectories and task ids call this on every game)."""
        row = {name: getattr(self, name) for name in _FIELD_NAMES}
        if self.reward_weights is None:
            del row["reward_weights"]
        if self.seats is None:
            del row["seats"]
        return row

    @classmethod
    def from_dict(
        cls,
        row: Mapping[str, Any],
        *,
        strict: bool = True,
        defaults: Mapping[str, Any] | None = None,
    ) -> Task:
        """Build a task from a row. ``strict``: unknown keys are an error; pass
        ``strict=False`` for framework rows that carry other columns too.
        ``defaults``: values for the fields the row does not set (a framework's
        environment config); an unknown key there is always an error."""
        if isinstance(row, Task):
            return row
        if not isinstance(row, Mapping):
            raise TaskError(f"a task row must be a mapping, not {type(row).__name__}")
        names = set(_FIELD_NAMES)
        if defaults is not None:
            if not isinstance(defaults, Mapping):
                raise TaskError(f"task defaults must be a mapping, not {type(defaults).__name__}")
            bad = sorted(str(k) for k in defaults if k not in names)
            if bad:
                raise TaskError(
                    f"unknown task fields {bad} in the defaults; known: {sorted(names)}"
                )
            row = {**defaults, **row}
        unknown = sorted(str(k) for k in row if k not in names)
        if strict and unknown:
            raise TaskError(f"unknown task fields {unknown}; known: {sorted(names)}")
        return cls(**{k: v for k, v in row.items() if k in names})


_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Task))


def make_tasks(
    n: int,
    seed: int = 0,
    game: str = "tictactoe",
    min_random_move_prob: float = 0.0,
    max_random_move_prob: float = 1.0,
    num_groups: int = 1,
    model_player: int | None = None,
    opening_plies: int | None = None,
    **overrides: Any,
) -> list[Task]:
    """``n`` tasks, reproducible from ``seed`` alone.

    Difficulty is stratified: each block of ``num_groups`` consecutive tasks
    spans ``[min_random_move_prob, max_random_move_prob]`` evenly (task ``j``
    of a block draws from the ``j``-th of ``num_groups`` equal slices), so a
    GRPO batch of ``num_groups x num_generations`` rollouts always covers the
    whole range. ``model_player=None`` alternates sides; ``overrides`` sets
    any other ``Task`` field. A game that offers no minimax opponent (the
    OpenSpiel bridge) gets ``DEFAULT_OPPONENT`` unless ``opponent`` is given.
    """
    if not _is_int(n) or n < 0:
        raise TaskError(f"n must be an int >= 0, got {n!r}")
    if not _is_int(num_groups) or num_groups < 1:
        raise TaskError(f"num_groups must be an int >= 1, got {num_groups!r}")
    if (
        not (_is_prob(min_random_move_prob) and _is_prob(max_random_move_prob))
        or min_random_move_prob > max_random_move_prob
    ):
        raise TaskError(
            "need 0 <= min_random_move_prob <= max_random_move_prob <= 1, "
            f"got {min_random_move_prob!r}, {max_random_move_prob!r}"
        )
    spec = _game(game).spec
    players = spec.num_players
    if "opponent" not in overrides and players > 1 and "minimax" not in spec.opponents:
        overrides["opponent"] = DEFAULT_OPPONENT if DEFAULT_OPPONENT in spec.opponents else "random"
    plies = DEFAULT_OPENING_PLIES.get(game, 0) if opening_plies is None else opening_plies
    span = max_random_move_prob - min_random_move_prob
    tasks = []
    for i in range(n):
        rng = derive_rng(seed, "make_tasks", game, i)
        j = i % num_groups
        prob = min_random_move_prob + span * (j + rng.random()) / num_groups
        side = (i // num_groups) % players if model_player is None else model_player
        tasks.append(
            Task(
                game=game,
                seed=rng.getrandbits(31),
                model_player=side,
                random_move_prob=round(prob, 6),
                opening_plies=plies,
                **overrides,
            )
        )
    return tasks


DEFAULT_OPPONENT = "mcts"
"""``make_tasks``' opponent for a game whose spec does not offer minimax."""


def _game(name: object) -> Game[Any, Any]:
    """The game a task names, or a ``TaskError`` saying what is wrong."""
    families = " or openspiel:NAME"
    if not isinstance(name, str):
        raise TaskError(f"game must be one of {list_games()}{families}, got {name!r}")
    try:
        return make_game(name)
    except KeyError:
        raise TaskError(f"game must be one of {list_games()}{families}, got {name!r}") from None
    except (GameError, ImportError) as exc:
        raise TaskError(f"game {name!r}: {exc}") from None


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise TaskError(message)


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_prob(x: object) -> bool:
    return _is_num(x) and 0.0 <= x <= 1.0  # type: ignore[operator]  # _is_num narrowed it
