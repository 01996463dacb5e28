"""Teacher games and SFT rows: the held-out and teacher tasks, the teacher's games
(sampled and against an exhaustive opponent), their decisions and the SFT rows."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rollouts.training.recipe.plan import (
    PLANS,
    RecipeSettings,
    is_ladder_game,
    ladder_names,
    one_player,
)

HELD_OUT_ANSWERS = 0.2
"""The share of Wordle's answers the recipe holds out (:func:`answer_split`)."""


@dataclass(frozen=True)
class AnswerSplit:
    """A game's hidden answers split in two: the training games' and the held-out games'."""

    train: frozenset[str]
    held_out: frozenset[str]


@functools.cache
def answer_split(game: str) -> AnswerSplit | None:
    """Wordle's answers split for the recipe, or None (a game without a hidden answer).

    Core's answers list (sorted, 2,178 words) shuffled by a fixed seed (not the run's
    ``--seed``: every run holds out the same words), the first :data:`HELD_OUT_ANSWERS`
    (20%, 436 words) held out, the other 1,742 for training. The recipe's held-out games
    play only held-out answers; its teacher games and the GRPO tasks of its RL stages only
    training answers (:func:`split_tasks`), so no evaluated answer was ever trained on."""
    if game != "wordle":
        return None
    from core.games.wordle import answers
    from core.rng import derive_rng

    words = list(answers())
    derive_rng("recipe", "held-out answers", game).shuffle(words)
    k = round(HELD_OUT_ANSWERS * len(words))
    return AnswerSplit(train=frozenset(words[k:]), held_out=frozenset(words[:k]))


def task_answer(task: Any) -> str:
    """A Wordle task's hidden answer, drawn where ``core.Episode`` draws it
    (``core.episode.start_state``), without playing."""
    from core.episode import start_state

    return str(start_state(task).answer)


def split_tasks(game: str, side: str, make: Callable[[int], list[Any]], n: int) -> list[Any]:
    """``make(n)``, for a game with hidden answers (:func:`answer_split`) the first ``n``
    tasks of ``make(m)`` whose answer is on ``side`` (``train`` or ``held_out``), ``m``
    grown until there are ``n``. ``make(m)`` must extend ``make(n)`` (core's
    ``make_tasks``: task i comes from the seed and i alone), so the tasks are
    deterministic. Dropping tasks breaks ``make_tasks``' difficulty blocks, which a
    one-player game does not have (no opponent, no random-move probability)."""
    split = answer_split(game)
    if split is None or n <= 0:
        return make(n)
    keep = split.train if side == "train" else split.held_out
    m = math.ceil(1.25 * n * len(split.train | split.held_out) / len(keep))
    while True:
        tasks = [t for t in make(m) if task_answer(t) in keep]
        if len(tasks) >= n:
            return tasks[:n]
        m *= 2


def answers_of(tasks: Sequence[Any]) -> set[str]:
    """The distinct hidden answers of Wordle tasks."""
    return {task_answer(t) for t in tasks}


def eval_sets(s: RecipeSettings) -> dict[str, list[Any]]:
    """The held-out tasks (their own seed, never trained on): per opponent. A two-player
    game the recipe cannot evaluate exactly plays the ladder (``ladder_games`` on each of
    its ``ladder_rungs``: :func:`rollouts.training.recipe.ladder.ladder_sets`). Wordle's
    held-out games play only held-out answers (:func:`answer_split`)."""
    from core.tasks import make_tasks
    from rollouts.training.recipe.ladder import ladder_sets

    plan = PLANS[s.game]
    seed = 1_000_003 + s.seed
    if one_player(s.game):

        def solve(n: int) -> list[Any]:
            return make_tasks(n, seed=seed, game=s.game)

        return {"solve": split_tasks(s.game, "held_out", solve, s.eval_games)}
    if is_ladder_game(s.game):
        return ladder_sets(s.game, s.ladder_games, seed, plan.opening_plies, ladder_names(s))
    common = {"game": s.game, "opening_plies": plan.opening_plies, "max_random_move_prob": 0.0}
    return {
        "random": make_tasks(s.eval_games, seed=seed, opponent="random", **common),
        "optimal": make_tasks(
            s.eval_games, seed=seed + 1, opponent="minimax", depth=plan.opponent_depth, **common
        ),
    }


def teacher_tasks(s: RecipeSettings) -> list[Any]:
    """Teacher-game tasks: both sides, random-move probability spread over 0-1; Wordle's
    with training answers only (:func:`answer_split`)."""
    from core.tasks import make_tasks

    plan = PLANS[s.game]

    def make(n: int) -> list[Any]:
        return make_tasks(
            n,
            seed=7_000_001 + s.seed,
            game=s.game,
            opponent="minimax",
            depth=plan.opponent_depth,
            num_groups=10,
            opening_plies=plan.opening_plies,
        )

    return split_tasks(s.game, "train", make, s.teacher_games)


def rl_tasks(s: RecipeSettings, grpo: Any) -> list[Any]:
    """An RL stage's GRPO tasks: ``make_train_tasks(grpo)`` (``rollouts.training.grpo``);
    Wordle's with training answers only (:func:`answer_split`)."""
    from rollouts.training.grpo import make_train_tasks

    def make(n: int) -> list[Any]:
        return make_train_tasks(replace(grpo, num_tasks=n))

    return split_tasks(s.game, "train", make, grpo.num_tasks)


def play_teacher(policy: Any, tasks: Sequence[Any]) -> list[Any]:
    """Episodes of ``tasks`` with ``policy`` (an ``Opponent``) choosing the model's moves,
    each reply a ``<move>`` tag through ``Episode.step``."""
    from core.episode import Episode
    from core.parsing import format_reply
    from core.rng import derive_rng

    episodes = []
    for task in tasks:
        ep = Episode(task)
        ep.reset()
        ply = 0
        while not ep.done:
            move = policy.choose(ep.game, ep.state, derive_rng(task.seed, "teacher", ply))
            ep.step(format_reply(ep.game.move_to_text(ep.state, move)))
            ply += 1
        episodes.append(ep)
    return episodes


def exhaustive_teacher_games(teacher: Any, s: RecipeSettings) -> list[Any]:
    """The teacher's games against an exhaustive opponent: from both sides, every
    opponent reply at every turn (a ``MoveListOpponent`` replayed one move longer
    each time it runs out), and every move the teacher rates best (its exact
    ties). Two-player games without an opening only; every move goes through
    ``Episode.step``, so the decisions are the teacher's own, as in its sampled
    games. Tic-Tac-Toe: a few thousand games, a few seconds."""
    from core.episode import Episode
    from core.opponents import MoveListOpponent, NoMoveLeftError
    from core.parsing import format_reply
    from core.tasks import make_tasks

    plan = PLANS[s.game]
    games: list[Any] = []
    for side in (0, 1):
        (task,) = make_tasks(
            1,
            seed=7_500_001 + s.seed,
            game=s.game,
            opponent="minimax",
            depth=plan.opponent_depth,
            model_player=side,
            opening_plies=0,
            max_random_move_prob=0.0,
        )
        stack: list[tuple[list[str], list[str]]] = [([], [])]
        while stack:
            theirs, mine = stack.pop()
            ep = Episode(task, opponent=MoveListOpponent(theirs))
            try:
                ep.reset()
                for move in mine:
                    ep.step(format_reply(move))
            except NoMoveLeftError as e:  # the opponent's turn: every reply
                for m in ep.game.legal_moves(e.state):
                    stack.append((theirs + [ep.game.move_to_text(e.state, m)], mine))
                continue
            if ep.done:
                games.append(ep)
                continue
            chances = teacher.move_chances(ep.game, ep.state)
            top = max(chances.values())
            for m, v in chances.items():  # the teacher's turn: each of its best moves
                if v >= top - 1e-9:
                    stack.append((theirs, mine + [ep.game.move_to_text(ep.state, m)]))
    return games


def decisions(episodes: Sequence[Any], keep: set[str]) -> list[tuple[str, str]]:
    """(observation, reply) of every decision in the kept games, read off their
    events (each records the observation its reply answered; nothing replayed)."""
    out = []
    for ep in episodes:
        if ep.result not in keep:
            continue
        for event in ep.events:  # each event records the observation its reply answered
            out.append((event.observation, str(event.reply)))
    return out


def sft_rows(
    pairs: Sequence[tuple[str, str]],
    repeats: int,
    seed: int,
    coverage: Sequence[tuple[str, str]] = (),
) -> list[dict[str, Any]]:
    """Unique decisions (of ``coverage`` and ``pairs``) ``repeats`` times plus every
    decision of ``pairs`` (so frequent positions weigh more), shuffled."""
    unique = list(dict.fromkeys([*coverage, *pairs]))
    chosen = unique * repeats + list(pairs)
    random.Random(seed).shuffle(chosen)
    return [
        {"messages": [{"role": "user", "content": o}, {"role": "assistant", "content": r}]}
        for o, r in chosen
    ]


def teacher_replies(pairs: Sequence[tuple[str, str]]) -> dict[str, set[str]]:
    """Each trained observation and the moves the teacher plays there (every tie
    it was seen to take), as core parses them from its replies."""
    from core.parsing import parse_reply

    out: dict[str, set[str]] = {}
    for observation, reply in pairs:
        out.setdefault(observation, set()).add(parse_reply(reply).move)
    return out
