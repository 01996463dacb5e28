"""``gamebridge train recipe``: the seed course's recipe end to end, on CPU.

1. **Teacher games**: ``core.teacher`` (minimax-optimal, ties broken toward
   the best chance against imperfect play) plays the model's side, both
   sides, against the minimax opponent with a random-move probability spread
   over 0-1 (stratified); games the teacher won or drew are kept (the seed's
   filter). Tic-Tac-Toe adds the teacher's games against an exhaustive
   opponent (every reply, both sides: :func:`exhaustive_teacher_games`), so
   SFT covers every position the teacher reaches. The teacher's own W/D/L on
   the held-out tasks is the ceiling row.
2. **Tokenizer and model**: a byte-level BPE trained here on the decisions'
   text, and a tiny ``Qwen2ForCausalLM`` from :data:`MODEL_CONFIG`.
3. **SFT** (TRL ``SFTTrainer``): one row per decision, the observation as the
   only user turn (core's text verbatim; no system prompt, no history, no
   think text) and the teacher's ``<move>`` reply; unique decisions repeated
   plus every decision (so frequent positions weigh more); loss on the whole
   sequence by default (``--sft-loss assistant``: replies only). Then the
   hard-example phase (``--hard-steps``; Tic-Tac-Toe's plan has it): the
   student's greedy reply on every trained observation is checked against the
   teacher's (:func:`student_errors`), and SFT goes on with the replies' loss
   only, on the same rows plus the ones it gets wrong, repeated.
4. **GRPO** through the project's TRL adapter (``TextRollout(history="none",
   decisions_per_game=4)``: four decisions of each game trained),
   stratified difficulty groups, one stage per random-move range (the seed's
   0.2-0.7 then 0-0.25), ``--loss-type`` (default ``cispo``, the seed's).
5. **Evaluation** after every stage through ``core.Episode`` (the same
   ``TextRollout`` loop): held-out seeded games, both sides, against the
   random and the optimal opponent, greedy and sampled; a W/D/L table with
   legal-move and format rates and 95% Wilson intervals, as Markdown, JSON and
   an SVG plot under ``runs/recipe-<game>/``, and (full runs) between markers
   in docs/trl.md.

A weaker start (the uniform-tie minimax as teacher, the same SFT budget: it
plays legally but loses to the optimal opponent more often) goes through its
own RL stages (``--weak-rl-*``), to show what RL adds where there is room
(``--weak-start``, on by default for Tic-Tac-Toe).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

MODEL_CONFIG: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "tie_word_embeddings": True,
}
"""About 0.83M parameters (a 352-token vocabulary). Measured here, 800 SFT
steps of 64 on the teacher's games, 200 held-out games per opponent, greedy:
hidden 96 / 3 layers (0.37M, 0.26 CPU-s a step) won 86.0% against random and
did not lose 95.5% against optimal; hidden 128 / 4 layers (0.83M, 0.48 CPU-s
a step) 86.5% and 96.5%. The larger one is kept: it fits the teacher's
decisions better for under twice the cost. Wider still did not pay at equal
steps: hidden 192 / 4 layers (1.8M), 800 steps, 400 games per opponent, won
85.2% and did not lose 95.2% (its argmax move a teacher-best one on 78.1% of
the teacher's boards), where the 0.83M model given 1600 steps instead won
93.8% and did not lose 100% (fit 97.2%): steps, not width, were short."""


@dataclass(frozen=True)
class GamePlan:
    """What the recipe plays for one game."""

    opponent_depth: int
    """The minimax depth of the 'optimal' opponent (teacher games, RL, evaluation)."""
    opponent_label: str
    opening_plies: int
    max_new_tokens: int
    teacher_games: int
    sft_steps: int
    rl_steps: int
    hard_steps: int = 0
    """Steps of the hard-example SFT phase (0: none)."""
    exact: bool = False
    """Small enough to evaluate exactly: every move the opponent may play enumerated."""


PLANS: dict[str, GamePlan] = {
    "tictactoe": GamePlan(9, "optimal (minimax:9)", 0, 8, 3000, 1600, 0, 400, True),
    "connect_four": GamePlan(2, "minimax:2", 2, 8, 600, 600, 20),
    "wordle": GamePlan(2, "-", 0, 12, 600, 600, 0),
}
"""Per-game budgets (Connect Four and Wordle reduced: see docs/trl.md). The strong
Tic-Tac-Toe recipe stops at SFT (``rl_steps`` 0): its RL was measured to change nothing
(the exact figures identical after SFT and after each of two GRPO stages, 2026-12-02:
docs/recipe-history.md) with a student within 0.05 points of its teacher; ``--rl-steps``
still runs it."""

QUICK: dict[str, Any] = {
    "teacher_games": 300,
    "sft_steps": 150,
    "hard_steps": 0,
    "rl_steps": 3,
    "eval_games": 40,
    "num_groups": 2,
    "num_generations": 4,
    "sampled": False,
}
"""``--quick``: a smoke run of every stage (a minute or two on 2 cores)."""

TEACHERS = ("strong", "weak")
"""``--teacher``: whose games SFT imitates (see ``RecipeSettings.teacher``)."""

WEAK: dict[str, Any] = {
    "sft_steps": 600,
    "hard_steps": 0,
    "rl_steps": 100,
    "rl_stages": "0-0.25",
    "rl_group": "game",
    "rl_learning_rate": 1e-4,
}
"""``--teacher weak``: the settings that differ from the strong teacher's recipe."""


@dataclass
class RecipeSettings:
    """Settings of ``gamebridge train recipe`` (0 / "" / "auto": the game's plan)."""

    game: str = "tictactoe"
    """The game (its plan in :data:`PLANS`)."""
    teacher: str = "strong"
    """``strong``: ``core.teacher`` (minimax-optimal, ties toward the best chance against
    imperfect play); ``weak``: the seed's imperfect teacher (``core.teacher.weak_teacher``:
    minimax depth 1 with 5% random moves), which RL has to go beyond (:data:`WEAK`)."""
    seed: int = 0
    """Seed of the teacher games, the model, SFT, GRPO and the held-out tasks."""
    quick: bool = False
    """A smoke run of every stage (:data:`QUICK`; a minute or two)."""
    teacher_games: int = 0
    """Sampled teacher games (0: the game's plan)."""
    unique_repeats: int = 2
    """Times each unique decision is repeated in the SFT rows (plus every decision once)."""
    sft_steps: int = 0
    """SFT optimizer steps (0: the game's plan)."""
    sft_batch_size: int = 64
    """SFT rows per step."""
    sft_learning_rate: float = 2e-3
    """SFT peak learning rate (cosine decay)."""
    sft_loss: str = "sequence"
    """``sequence`` (whole sequence, measured better) or ``assistant`` (replies only)."""
    sft_assistant_weight: float = 0.0
    """With ``sequence`` loss: add this many times the replies' mean token loss."""
    hard_steps: int = -1
    """Steps of the hard-example SFT phase after SFT (-1: the game's plan; 0: none): the
    replies' loss only, on the SFT rows plus every trained decision the student's greedy
    reply gets wrong, ``hard_repeats`` times. For a student that already fits: from the
    1,600-step student (48 of 1,614 teacher boards wrong) 400 steps took it to 6 wrong;
    after 200 steps (1,098 wrong) 20 steps made it worse (1,173), so ``--quick`` has none."""
    hard_repeats: int = 9
    """Times each decision the student gets wrong is added to the hard phase's rows."""
    hard_learning_rate: float = 1e-4
    """Peak learning rate of the hard phase (cosine decay)."""
    exhaustive: str = "auto"
    """``yes``/``no``/``auto``: add the teacher's games against an exhaustive opponent
    (every reply, both sides; Tic-Tac-Toe's ``auto`` is yes) to the sampled games."""
    vocab_size: int = 512
    """The locally trained tokenizer's largest vocabulary."""
    rl_stages: str = "0.2-0.7,0-0.25"
    """Random-move probability ranges, one GRPO stage each."""
    rl_steps: int = -1
    """GRPO steps per stage (-1: the game's plan; 0: no RL)."""
    num_groups: int = 32
    """GRPO groups per update (tasks spread over the stage's random-move range): with
    ``num_generations`` 8, 256 games an update, the seed course's batch."""
    num_generations: int = 8
    """Games per GRPO group (each group one task)."""
    rl_group: str = "game"
    """What one GRPO group compares (``TextRollout(group=...)``): ``game``:
    ``num_generations`` games of one task, ``rl_decisions_per_game`` decisions of each,
    every decision scored with its game's reward; ``position``: replies sampled at one
    position of the model's greedy game, each played on greedily to the end, so the
    group's advantage is that decision's (measured worse here: ``gamebridge train
    levers``)."""
    rl_decisions_per_game: int = 4
    """Decisions of each game GRPO trains on (``TextRollout(decisions_per_game=...)``;
    the group then has ``num_generations`` x this many samples). Measured from a weak
    start at 0.643 non-loss vs optimal (40 steps of 8x8 games against 0-0.25, 400
    held-out games, one seed): one decision a game 0.615 / 0.878 / 0.378 at lr 2e-5 /
    5e-5 / 1e-4, four decisions 0.728 / 0.758 / 0.648; one decision at 5e-5 from the
    recipe's own weak start (0.728) went to 0.700. Four gain at every rate tried, one
    swings from -0.27 to +0.23: four is the default."""
    loss_type: str = "cispo"
    """TRL's GRPOConfig.loss_type (cispo: the seed's loss; grpo, dapo, dr_grpo, ...)."""
    epsilon_high: float = 5.0
    """The upper clip (cispo's suggested 5)."""
    rl_learning_rate: float = 2e-5
    """GRPO learning rate, constant (the weak teacher's recipe: 1e-4)."""
    temperature: float = 1.0
    """GRPO sampling temperature."""
    rl_max_invalid_moves: int = 0
    """Invalid replies allowed per GRPO game (0: the first forfeits)."""
    eval_games: int = 400
    """Held-out games per opponent (sides alternate). A sample: a student that plays exactly
    as well as Tic-Tac-Toe's teacher expects 95.56% wins against random, with one standard
    error of a point at 400 games; games small enough also get the exact figure
    (:func:`exact_evaluation`). 1,000 games took the recipe to 15.5 minutes."""
    sampled: bool = True
    """Also evaluate sampled play (at ``eval_temperature``)."""
    eval_temperature: float = 1.0
    """Temperature of the sampled evaluation."""
    hidden_size: int = 0
    """Model width (0: :data:`MODEL_CONFIG`; the intermediate size is three times it)."""
    num_layers: int = 0
    """Model depth (0: :data:`MODEL_CONFIG`)."""
    threads: int = 1
    """Torch threads (1: on a shared, overloaded machine a second thread mostly spins)."""
    output_dir: str = ""
    """Default ``runs/recipe-<game>`` (``-quick`` appended in quick mode)."""
    docs: str = "auto"
    """File whose recipe markers get the table (auto: docs/trl.md on full runs)."""
    progress: bool = False
    """Progress bars for SFT and GRPO."""


def resolve(s: RecipeSettings) -> RecipeSettings:
    """The settings with the game's plan and quick mode filled in."""
    plan = PLANS.get(s.game)
    if plan is None:
        raise ValueError(f"the recipe knows {sorted(PLANS)}, not {s.game!r}")
    if s.teacher not in TEACHERS:
        raise ValueError(f"teacher must be one of {TEACHERS}, not {s.teacher!r}")
    if s.teacher == "weak" and one_player(s.game):
        raise ValueError("the weak teacher needs a two-player game")
    values = asdict(s)
    if s.teacher == "weak":
        for key, value in WEAK.items():
            if values[key] == getattr(RecipeSettings(), key):
                values[key] = value
    if s.quick:
        for key, value in QUICK.items():
            if values[key] == getattr(RecipeSettings(), key):
                values[key] = value
    for key in ("teacher_games", "sft_steps"):
        if not values[key]:
            values[key] = getattr(plan, key)
    if values["rl_steps"] < 0:
        values["rl_steps"] = plan.rl_steps
    if values["hard_steps"] < 0:
        values["hard_steps"] = plan.hard_steps
    if not values["output_dir"]:
        values["output_dir"] = f"runs/recipe-{run_name(s)}" + ("-quick" if s.quick else "")
    if values["docs"] == "auto":
        values["docs"] = "" if s.quick else "docs/trl.md"
    if values["sft_loss"] not in ("sequence", "assistant"):
        raise ValueError(f"sft_loss must be sequence or assistant, not {values['sft_loss']!r}")
    if values["exhaustive"] == "auto":
        values["exhaustive"] = "yes" if s.game == "tictactoe" and s.teacher == "strong" else "no"
    if values["exhaustive"] not in ("yes", "no"):
        raise ValueError(f"exhaustive must be yes, no or auto, not {values['exhaustive']!r}")
    if values["exhaustive"] == "yes" and (
        plan.opening_plies or one_player(s.game) or s.teacher != "strong"
    ):
        raise ValueError(
            "exhaustive teacher games need the strong teacher and a two-player game "
            "without an opening"
        )
    if values["rl_group"] not in ("position", "game"):
        raise ValueError(f"rl_group must be position or game, not {values['rl_group']!r}")
    if values["rl_decisions_per_game"] < 1:
        raise ValueError(
            f"rl_decisions_per_game must be >= 1, not {values['rl_decisions_per_game']!r}"
        )
    if values["sft_assistant_weight"] < 0:
        raise ValueError(
            f"sft_assistant_weight must be >= 0, not {values['sft_assistant_weight']!r}"
        )
    parse_stages(values["rl_stages"])
    return RecipeSettings(**values)


def run_name(s: RecipeSettings) -> str:
    """The run's name: the game, ``-weak`` for the weak teacher (output folder, docs markers)."""
    return s.game + ("-weak" if s.teacher == "weak" else "")


def one_player(game: str) -> bool:
    """A one-player game (Wordle: solved or not, no sides, only wins kept): core's spec."""
    from core.games import make_game

    return make_game(game).spec.num_players == 1


def kept_results(game: str) -> set[str]:
    """The teacher games SFT keeps (the seed's filter): won or drawn; won (solved) alone
    in a one-player game."""
    return {"win"} if one_player(game) else {"win", "draw"}


def model_config(s: RecipeSettings) -> dict[str, Any]:
    """:data:`MODEL_CONFIG` with the settings' size overrides."""
    config = dict(MODEL_CONFIG)
    if s.hidden_size:
        config["hidden_size"] = s.hidden_size
        config["intermediate_size"] = 3 * s.hidden_size
    if s.num_layers:
        config["num_hidden_layers"] = s.num_layers
    return config


def parse_stages(text: str) -> list[tuple[float, float]]:
    """``"0.2-0.7,0-0.25"`` -> ``[(0.2, 0.7), (0.0, 0.25)]``."""
    stages = []
    for part in text.split(","):
        if not part.strip():
            continue
        lo, sep, hi = part.strip().partition("-")
        try:
            a, b = float(lo), float(hi)
        except ValueError:
            raise ValueError(f"bad RL stage {part!r}: expected LOW-HIGH, e.g. 0.2-0.7") from None
        if not sep or not 0.0 <= a <= b <= 1.0:
            raise ValueError(f"bad RL stage {part!r}: need 0 <= LOW <= HIGH <= 1")
        stages.append((a, b))
    return stages


# --- teacher games -----------------------------------------------------------------------------
def eval_sets(s: RecipeSettings) -> dict[str, list[Any]]:
    """The held-out tasks (their own seed, never trained on): per opponent."""
    from core.tasks import make_tasks

    plan = PLANS[s.game]
    seed = 1_000_003 + s.seed
    if one_player(s.game):
        return {"solve": make_tasks(s.eval_games, seed=seed, game=s.game)}
    common = {"game": s.game, "opening_plies": plan.opening_plies, "max_random_move_prob": 0.0}
    return {
        "random": make_tasks(s.eval_games, seed=seed, opponent="random", **common),
        "optimal": make_tasks(
            s.eval_games, seed=seed + 1, opponent="minimax", depth=plan.opponent_depth, **common
        ),
    }


def teacher_tasks(s: RecipeSettings) -> list[Any]:
    """Teacher-game tasks: both sides, random-move probability spread over 0-1."""
    from core.tasks import make_tasks

    plan = PLANS[s.game]
    return make_tasks(
        s.teacher_games,
        seed=7_000_001 + s.seed,
        game=s.game,
        opponent="minimax",
        depth=plan.opponent_depth,
        num_groups=10,
        opening_plies=plan.opening_plies,
    )


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


def generation_config(tokenizer: Any, max_new_tokens: int, temperature: float = 0.0) -> Any:
    """The recipe's ``GenerationConfig``: greedy unless ``temperature`` > 0 (then pure
    sampling at that temperature, no top-k)."""
    from transformers import GenerationConfig

    sample = temperature > 0
    return GenerationConfig(
        do_sample=sample,
        temperature=temperature if sample else None,
        top_k=0 if sample else None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        max_new_tokens=max_new_tokens,
    )


def greedy_replies(
    model: Any,
    tokenizer: Any,
    observations: Sequence[str],
    max_new_tokens: int,
    batch_size: int = 256,
) -> list[str]:
    """The model's greedy reply to each observation as the only user turn: the
    one-decision prompt and the batched generation of the held-out evaluation
    (``TextRollout.decision_prompt`` and ``TextRollout.generate``)."""
    from rollouts.training.text_rollout import TextRollout

    rollout = TextRollout(max_new_tokens, history="none")
    config = generation_config(tokenizer, max_new_tokens)
    replies: list[str] = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(observations), batch_size):
            contexts = [
                rollout.decision_prompt(tokenizer, o)
                for o in observations[start : start + batch_size]
            ]
            generated = rollout.generate(
                model, tokenizer, contexts, config, [tokenizer.eos_token_id]
            )
            replies += [tokenizer.decode(r, skip_special_tokens=True) for r in generated]
    finally:
        model.train(was_training)
    return replies


def student_errors(
    model: Any, tokenizer: Any, support: dict[str, set[str]], max_new_tokens: int
) -> set[str]:
    """The observations of ``support`` where the model's greedy reply is not one of
    the teacher's moves there (a malformed reply counts as wrong), read the way
    ``core.Episode`` reads a reply (``core.parsing.parse_reply``)."""
    from core.parsing import FormatError, parse_reply

    observations = list(support)
    wrong: set[str] = set()
    for observation, reply in zip(
        observations, greedy_replies(model, tokenizer, observations, max_new_tokens), strict=True
    ):
        try:
            move: str | None = parse_reply(reply).move
        except FormatError:
            move = None
        if move not in support[observation]:
            wrong.add(observation)
    return wrong


def exact_outcomes(task: Any, replies_to: Any, opponent: Any) -> dict[str, float]:
    """The expected W/D/L of a player on ``task``: ``replies_to(observations)`` gives its
    reply to each (a text: a deterministic player; or a mapping of replies to their
    probabilities: a stochastic one), ``opponent.distribution(game, state)`` every move the
    opponent may play there and its probability, and every branch is played through
    ``core.Episode`` (a ``MoveListOpponent`` replaying one branch), which judges the
    replies and the ending. The branches advance together, a round at a time, so the
    player is asked about every position the round reaches in one batch. No sampling:
    the figure a held-out sample of games estimates."""
    from core.episode import Episode
    from core.opponents import MoveListOpponent, NoMoveLeftError

    totals = {"win": 0.0, "draw": 0.0, "loss": 0.0}
    branches: list[tuple[list[str], list[str], float]] = [([], [], 1.0)]
    while branches:
        # Branches that reach one position (the same state and invalid replies so far) by
        # different orders have one future: one of them goes on, with their summed chance.
        merged: dict[Any, list[Any]] = {}
        for theirs, mine, p in branches:
            ep = Episode(task, opponent=MoveListOpponent(theirs))
            try:
                ep.reset()
                for reply in mine:
                    ep.step(reply)
            except NoMoveLeftError as e:  # the opponent's turn
                key: tuple[Any, ...] = ("opponent", e.state, ep.invalid_moves)
                payload: Any = (ep.game, e.state)
            else:
                if ep.done:
                    totals[ep.result if ep.result in totals else "loss"] += p
                    continue
                key = ("player", ep.state, ep.invalid_moves, ep.observation)
                payload = ep.observation
            if key in merged:
                merged[key][2] += p
            else:
                merged[key] = [theirs, mine, p, payload, key[0]]
        following: list[tuple[list[str], list[str], float]] = []
        asking = [b for b in merged.values() if b[4] == "player"]
        for theirs, mine, p, (game, state), _ in (b for b in merged.values() if b[4] != "player"):
            for m, q in opponent.distribution(game, state).items():  # every move it may play
                following.append((theirs + [game.move_to_text(state, m)], mine, p * q))
        replies = replies_to([b[3] for b in asking]) if asking else []
        for (theirs, mine, p, _, _), reply in zip(asking, replies, strict=True):
            for r, q in ({reply: 1.0} if isinstance(reply, str) else reply).items():
                following.append((theirs, mine + [r], p * q))
        branches = following
    return totals


def exact_evaluation(s: RecipeSettings, replies_to: Any) -> dict[str, dict[str, float]]:
    """:func:`exact_outcomes` against the random opponent (its legal moves) and the
    optimal one (minimax's tied best moves, as it breaks ties uniformly), both sides
    averaged, as the held-out sets alternate them: win, draw, loss and non-loss rates."""
    from core.opponents import MinimaxOpponent, RandomOpponent
    from core.tasks import make_tasks

    plan = PLANS[s.game]
    opponents = {"random": RandomOpponent(), "optimal": MinimaxOpponent(plan.opponent_depth)}
    out = {}
    for name, opponent in opponents.items():
        sides = [  # the model's side 0 and 1
            exact_outcomes(task, replies_to, opponent)
            for task in make_tasks(
                2, seed=1, game=s.game, opening_plies=0, max_random_move_prob=0.0
            )
        ]
        win, draw = (sum(o[k] for o in sides) / 2 for k in ("win", "draw"))
        out[name] = {
            "win_rate": round(win, 4),
            "draw_rate": round(draw, 4),
            "loss_rate": round(1.0 - win - draw, 4),
            "non_loss_rate": round(win + draw, 4),
        }
    return out


def model_replies_to(model: Any, tokenizer: Any, max_new_tokens: int) -> Any:
    """The model's greedy replies to observations, each asked once, the new ones in one
    batch (:func:`greedy_replies`)."""
    cache: dict[str, str] = {}

    def replies_to(observations: Sequence[str]) -> list[str]:
        new = list(dict.fromkeys(o for o in observations if o not in cache))
        if new:
            replies = greedy_replies(model, tokenizer, new, max_new_tokens)
            cache.update(zip(new, replies, strict=True))
        return [cache[o] for o in observations]

    return replies_to


def teacher_replies_to(teacher: Any, game_name: str) -> Any:
    """The teacher's replies to observations: every move it may play on the board each
    observation shows, with its probability (``teacher.distribution``), as ``<move>``
    replies."""
    from core.games import make_game
    from core.parsing import format_reply

    game = make_game(game_name)

    def reply_to(observation: str) -> dict[str, float]:
        state = game.parse_board(observation)
        return {
            format_reply(game.move_to_text(state, m)): q
            for m, q in teacher.distribution(game, state).items()
        }

    return lambda observations: [reply_to(o) for o in observations]


# --- evaluation ---------------------------------------------------------------------------------
def interval95(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of ``k`` in ``n`` (``core.stats.wilson_interval``), rounded
    to four places for the tables."""
    from core.stats import wilson_interval

    lo, hi = wilson_interval(k, n)
    return (round(lo, 4), round(hi, 4))


def summarize(episodes: Sequence[Any]) -> dict[str, Any]:
    """W/D/L counts, rates, intervals, legal-move and format rates of finished episodes."""
    n = len(episodes)
    w = sum(e.result == "win" for e in episodes)
    d = sum(e.result == "draw" for e in episodes)
    losses = n - w - d
    replies = sum(len(e.events) for e in episodes)
    legal = sum(1 for e in episodes for ev in e.events if ev["error"] is None)
    formed = sum(1 for e in episodes for ev in e.events if ev["format_ok"])
    out: dict[str, Any] = {
        "games": n,
        "wins": w,
        "draws": d,
        "losses": losses,
        "win_rate": round(w / max(n, 1), 4),
        "non_loss_rate": round((w + d) / max(n, 1), 4),
        "win_ci": interval95(w, n),
        "non_loss_ci": interval95(w + d, n),
        "replies": replies,
        "legal_move_rate": round(legal / max(replies, 1), 4),
        "legal_move_ci": interval95(legal, replies),
        "format_rate": round(formed / max(replies, 1), 4),
    }
    if episodes and episodes[0].game.spec.num_players == 1:
        solved = [len(e.events) for e in episodes if e.result == "win"]
        out["mean_guesses"] = round(sum(solved) / len(solved), 3) if solved else None
    return out


def evaluate_model(
    model: Any,
    tokenizer: Any,
    sets: dict[str, list[Any]],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Held-out play of every set through ``core.Episode`` (``TextRollout`` with
    one-decision prompts), greedy unless ``temperature`` > 0."""
    import torch

    from rollouts.training.text_rollout import TextRollout

    config = generation_config(tokenizer, max_new_tokens, temperature)
    rollout = TextRollout(max_new_tokens, history="none")
    was_training = model.training
    model.eval()
    out = {}
    try:
        for name, tasks in sets.items():
            torch.manual_seed(seed)
            played = rollout.play(model, tokenizer, tasks, config, [tokenizer.eos_token_id], 0)
            out[name] = summarize(played.episodes)
    finally:
        model.train(was_training)
    return out


# --- the run ---------------------------------------------------------------------------------------
@dataclass
class Clock:
    """Wall and CPU seconds per stage, and the machine's load around them."""

    start: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)
    load: list[tuple[str, list[float]]] = field(default_factory=list)

    def mark(self, name: str) -> None:
        self.marks[name] = round(time.perf_counter() - self.start, 1)
        self.load.append((name, [round(x, 2) for x in os.getloadavg()]))

    def figures(self) -> dict[str, Any]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "wall_seconds_at": self.marks,
            "total_wall_seconds": round(time.perf_counter() - self.start, 1),
            "process_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "load_average_1_5_15": dict(self.load),
            "cpus": os.cpu_count(),
        }


def _log(s: RecipeSettings, clock: Clock, text: str) -> None:
    print(f"[recipe {time.perf_counter() - clock.start:6.0f}s] {text}", flush=True)


def run_rl_stages(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    results: dict[str, Any],
    sets: dict[str, list[Any]],
    clock: Clock,
    sampled: bool,
    on_stage: Any = None,
    *,
    evaluate: bool = True,
) -> Any:
    """The GRPO stages, each followed by its evaluation (``evaluate``; sampled play too
    after the last stage when ``sampled``)."""
    from rollouts.training.grpo import GRPOSettings, train_grpo
    from rollouts.training.text_rollout import TextRollout

    plan = PLANS[s.game]
    stages = parse_stages(s.rl_stages)
    steps = s.rl_steps
    per_game = 1 if s.rl_group == "position" else s.rl_decisions_per_game
    for k, (lo, hi) in enumerate(stages, start=1):
        stage = f"rl{k}"
        grpo = GRPOSettings(
            game=s.game,
            mode="rollout_func",
            num_tasks=steps * s.num_groups,
            opponent="minimax",
            depth=plan.opponent_depth,
            opening_plies=plan.opening_plies,
            max_invalid_moves=s.rl_max_invalid_moves,
            min_random_move_prob=lo,
            max_random_move_prob=hi,
            num_groups=s.num_groups,
            num_generations=s.num_generations * per_game,
            temperature=s.temperature,
            learning_rate=s.rl_learning_rate,
            lr_scheduler_type="constant",
            loss_type=s.loss_type,
            epsilon_high=s.epsilon_high,
            max_steps=steps,
            max_completion_length=plan.max_new_tokens,
            max_new_tokens=plan.max_new_tokens,
            beta=0.0,
            cpu=True,
            seed=s.seed + 100 * k,
            logging_steps=max(1, steps // 5),
            output_dir=str(Path(s.output_dir) / stage),
        )
        trainer = train_grpo(
            grpo,
            model=model,
            tokenizer=tokenizer,
            progress=s.progress,
            rollout=TextRollout(
                plan.max_new_tokens,
                history="none",
                decisions_per_game=per_game,
                group=s.rl_group,
                continuation="greedy" if s.rl_group == "position" else "sample",
            ),
        )
        model = trainer.model
        results["logs"][stage] = [h for h in trainer.state.log_history if "loss" in h]
        clock.mark(stage)
        if not evaluate:
            continue
        label = f"RL{k} ({lo:g}-{hi:g})"
        record(s, model, tokenizer, stage, label, results, sets, sampled and k == len(stages))
        _log(s, clock, line(stage, results["stages"][stage]))
        if on_stage is not None:
            on_stage()
    return model


def record(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    key: str,
    label: str,
    results: dict[str, Any],
    sets: dict[str, list[Any]],
    sampled: bool,
) -> None:
    plan = PLANS[s.game]
    entry = {
        "label": label,
        "greedy": evaluate_model(model, tokenizer, sets, max_new_tokens=plan.max_new_tokens),
    }
    if plan.exact:
        entry["exact"] = exact_evaluation(
            s, model_replies_to(model, tokenizer, plan.max_new_tokens)
        )
    if sampled:
        entry["sampled"] = evaluate_model(
            model,
            tokenizer,
            sets,
            max_new_tokens=plan.max_new_tokens,
            temperature=s.eval_temperature,
            seed=s.seed,
        )
    results["stages"][key] = entry


def line(key: str, entry: dict[str, Any]) -> str:
    parts = [f"{entry['label']:<14}"]
    for name, e in entry["greedy"].items():
        parts.append(
            f"{name}: {e['wins']}/{e['draws']}/{e['losses']} legal {e['legal_move_rate']:.3f}"
        )
    return "  ".join(parts)


def sft(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    steps: int,
    name: str,
    results: dict[str, Any],
    *,
    learning_rate: float | None = None,
    replies_only: bool | None = None,
) -> None:
    """SFT ``model`` in place (cosine decay, whole-sequence loss unless ``sft_loss``;
    ``learning_rate`` and ``replies_only`` override the settings' for one phase)."""
    from rollouts.training.sft import run_sft

    assistant = s.sft_loss == "assistant" if replies_only is None else replies_only
    trainer = run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(Path(s.output_dir) / name),
        max_steps=steps,
        learning_rate=s.sft_learning_rate if learning_rate is None else learning_rate,
        batch_size=s.sft_batch_size,
        seed=s.seed,
        max_length=512,
        progress=s.progress,
        assistant_only_loss=assistant,
        lr_scheduler_type="cosine",
        warmup_steps=min(20, steps // 10),
        assistant_weight=0.0 if assistant else s.sft_assistant_weight,
    )
    results["logs"][name] = [h for h in trainer.state.log_history if "loss" in h]


def hard_phase(
    s: RecipeSettings,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    trained: Sequence[tuple[str, str]],
    results: dict[str, Any],
    clock: Clock,
) -> None:
    """SFT's hard-example phase, in place: the trained decisions the student's greedy
    reply gets wrong (:func:`student_errors`), added ``hard_repeats`` times to the SFT
    rows, then ``hard_steps`` steps on the replies' loss only at ``hard_learning_rate``.
    The errors before and after go in ``results["hard"]``."""
    plan = PLANS[s.game]
    support = teacher_replies(trained)
    before = student_errors(model, tokenizer, support, plan.max_new_tokens)
    hard = [(o, r) for o, r in dict.fromkeys(trained) if o in before]
    extra = sft_rows(hard * s.hard_repeats, 0, s.seed + 1)
    mixed = rows + extra
    random.Random(s.seed + 1).shuffle(mixed)
    _log(s, clock, f"hard examples: {len(before)} of {len(support)} trained boards wrong")
    sft(
        s,
        model,
        tokenizer,
        mixed,
        s.hard_steps,
        "sft-hard",
        results,
        learning_rate=s.hard_learning_rate,
        replies_only=True,
    )
    after = student_errors(model, tokenizer, support, plan.max_new_tokens)
    results["hard"] = {
        "boards": len(support),
        "wrong_before": len(before),
        "wrong_after": len(after),
        "fixed": len(before - after),
        "broken": len(after - before),
        "rows_added": len(extra),
        "steps": s.hard_steps,
    }
    _log(
        s,
        clock,
        f"after {s.hard_steps} hard steps: {len(after)} of {len(support)} wrong "
        f"({len(before - after)} fixed, {len(after - before)} newly wrong)",
    )


def run_recipe(settings: RecipeSettings) -> dict[str, Any]:
    """The whole recipe; returns (and writes) the results."""
    from rollouts.training.tiny import _require

    _require()
    import torch

    from core.teacher import make_teacher, weak_teacher
    from rollouts.training.tiny import (
        DECISION_CHAT_TEMPLATE,
        build_model,
        build_tokenizer,
        save_tiny,
    )

    s = resolve(settings)
    torch.set_num_threads(s.threads)
    out = Path(s.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    results: dict[str, Any] = {"settings": asdict(s), "stages": {}, "logs": {}}
    sets = eval_sets(s)

    # 1. teacher games and the ceiling
    teacher = make_teacher(s.game) if s.teacher == "strong" else weak_teacher(s.game)
    keep = kept_results(s.game)
    games = play_teacher(teacher, teacher_tasks(s))
    pairs = decisions(games, keep)
    every: list[Any] = []
    coverage: list[tuple[str, str]] = []
    if s.exhaustive == "yes":
        every = exhaustive_teacher_games(teacher, s)
        coverage = decisions(every, keep)
    results["teacher"] = {
        "name": teacher.name,
        "games": len(games),
        "kept": sum(g.result in keep for g in games),
        "decisions": len(pairs),
        "unique_decisions": len(set(pairs)),
        "exhaustive_games": len(every),
        "exhaustive_unique_decisions": len(set(coverage)),
        "unique_decisions_trained": len(set(coverage) | set(pairs)),
        "held_out": {name: summarize(play_teacher(teacher, tasks)) for name, tasks in sets.items()},
    }
    if PLANS[s.game].exact:
        results["teacher"]["exact"] = exact_evaluation(s, teacher_replies_to(teacher, s.game))
    clock.mark("teacher")
    _log(
        s,
        clock,
        f"teacher {teacher.name}: {results['teacher']['kept']}/{len(games)} games kept, "
        f"{len(pairs)} decisions ({results['teacher']['unique_decisions']} unique)",
    )
    for name, e in results["teacher"]["held_out"].items():
        _log(s, clock, f"teacher ceiling vs {name}: {e['wins']}/{e['draws']}/{e['losses']}")
    if coverage:
        _log(
            s,
            clock,
            f"exhaustive opponent: {len(every)} teacher games, "
            f"{len(set(coverage))} unique decisions "
            f"({results['teacher']['unique_decisions_trained']} in all with the sampled games)",
        )
    rows = sft_rows(pairs, s.unique_repeats, s.seed, coverage)

    # 2. tokenizer and model
    tokenizer = build_tokenizer(rows[:3000], s.vocab_size, DECISION_CHAT_TEMPLATE)
    model = build_model(tokenizer, seed=s.seed, **model_config(s))
    results["model"] = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": len(tokenizer),
        "config": model_config(s),
        "sft_rows": len(rows),
        "prompt_tokens_mean": round(
            sum(
                len(
                    tokenizer.apply_chat_template(
                        r["messages"][:1], add_generation_prompt=True, return_dict=False
                    )
                )
                for r in rows[:200]
            )
            / max(1, min(200, len(rows))),
            1,
        ),
    }

    def checkpoint(done: bool = False) -> None:
        """Write the results so far (an interrupted run keeps its finished stages)."""
        results["timing"] = clock.figures()
        results["complete"] = done
        write_results(s, results)

    record(s, model, tokenizer, "base", "base", results, sets, False)
    clock.mark("base")
    _log(s, clock, line("base", results["stages"]["base"]))
    checkpoint()

    # 3. SFT, then its hard-example phase
    sft(s, model, tokenizer, rows, s.sft_steps, "sft", results)
    if s.hard_steps > 0:
        hard_phase(s, model, tokenizer, rows, [*coverage, *pairs], results, clock)
    clock.mark("sft")
    record(s, model, tokenizer, "sft", "SFT", results, sets, s.sampled)
    _log(s, clock, line("sft", results["stages"]["sft"]))
    save_tiny(model, tokenizer, out / "sft-model", {"recipe": asdict(s), "stage": "sft"})
    checkpoint()

    # 4-5. RL stages, each evaluated
    if s.rl_steps > 0:
        model = run_rl_stages(
            s, model, tokenizer, results, sets, clock, s.sampled, on_stage=checkpoint
        )
    save_tiny(model, tokenizer, out / "model", {"recipe": asdict(s)})
    checkpoint(done=True)
    return results


# --- tables, plot, docs ----------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def stage_table(results: dict[str, Any], decoding: str, keys: Sequence[str]) -> list[str]:
    """One Markdown table: a row per stage, W/D/L in percent per held-out set."""
    stages = results["stages"]
    sets = list(next(iter(stages.values()))["greedy"])
    head = ["stage"]
    for name in sets:
        if name == "solve":
            head += ["solved % [95% CI]", "mean guesses"]
        else:
            head += [f"vs {name} W/D/L %", "win [95% CI]", "non-loss [95% CI]"]
    head += ["legal moves", "format"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(label: str, per_set: dict[str, Any]) -> str:
        c = [label]
        replies = legal = formed = 0
        for name in sets:
            e = per_set[name]
            if name == "solve":
                c += [
                    f"{_pct(e['win_rate'])} {_ci(e['win_ci'])}",
                    str(e.get("mean_guesses") or "-"),
                ]
            else:
                n = max(e["games"], 1)
                c += [
                    f"{_pct(e['wins'] / n)}/{_pct(e['draws'] / n)}/{_pct(e['losses'] / n)}",
                    f"{e['win_rate']:.3f} {_ci(e['win_ci'])}",
                    f"{e['non_loss_rate']:.3f} {_ci(e['non_loss_ci'])}",
                ]
            replies += e["replies"]
            legal += round(e["legal_move_rate"] * e["replies"])
            formed += round(e["format_rate"] * e["replies"])
        c += [f"{legal / max(replies, 1):.3f}", f"{formed / max(replies, 1):.3f}"]
        return "| " + " | ".join(c) + " |"

    if decoding == "greedy" and "teacher" in results:
        rows.append(
            cells(
                f"teacher ({results['teacher']['name']}), ceiling", results["teacher"]["held_out"]
            )
        )
    for key in keys:
        entry = stages.get(key)
        if entry and decoding in entry:
            rows.append(cells(entry["label"], entry[decoding]))
    return rows


def exact_table(results: dict[str, Any], keys: Sequence[str]) -> list[str]:
    """The exact expectations of the teacher and the greedy stages (games small enough
    to enumerate): W/D/L in percent against each opponent."""
    rows = [("teacher, ceiling", results["teacher"].get("exact"))]
    rows += [(results["stages"][k]["label"], results["stages"][k].get("exact")) for k in keys]
    rows = [(label, e) for label, e in rows if e]
    if not rows:
        return []

    def wdl(e: dict[str, float]) -> str:
        parts = (e["win_rate"], e.get("draw_rate"), e.get("loss_rate"))
        if parts[1] is None or parts[2] is None:  # a run written before draws were kept
            return f"{100 * e['win_rate']:.2f} / - / -"
        return " / ".join(f"{100 * x:.2f}" for x in parts)

    return [
        "",
        "Exact expectation, greedy (the teacher as it plays, with its ties and random "
        "moves): every move each side may play enumerated with its probability (the random "
        "opponent's legal moves, the optimal one's tied best moves, each equally likely), "
        "both sides averaged, every branch through `core.Episode`; no sampling, so no "
        "interval (the held-out games above are a sample of these):",
        "",
        "| stage | vs random W / D / L % | vs optimal W / D / L % | vs optimal non-loss |",
        "|---|---|---|---|",
        *(
            f"| {label} | {wdl(e['random'])} | {wdl(e['optimal'])} "
            f"| {100 * e['optimal']['non_loss_rate']:.2f}% |"
            for label, e in rows
        ),
    ]


def markdown(results: dict[str, Any]) -> str:
    s = results["settings"]
    m = results["model"]
    t = results["timing"]
    main = list(results["stages"])
    games = {name: e["games"] for name, e in results["teacher"]["held_out"].items()}
    load = t["load_average_1_5_15"]
    lines = [
        f"`gamebridge train recipe --game {s['game']}"
        f"{' --teacher weak' if s.get('teacher') == 'weak' else ''}`"
        f"{' --quick' if s['quick'] else ''}: "
        f"tiny Qwen2 of {m['parameters']:,} parameters (vocab {m['vocab']}), "
        f"{results['teacher']['kept']} of {results['teacher']['games']} teacher games kept "
        f"({results['teacher']['decisions']} decisions)"
        + (
            f" plus {results['teacher']['exhaustive_games']} against an exhaustive opponent "
            f"({results['teacher']['unique_decisions_trained']} unique decisions in all)"
            if results["teacher"].get("exhaustive_games")
            else ""
        )
        + f", {m['sft_rows']} SFT rows (prompts {m['prompt_tokens_mean']:g} tokens on average), "
        f"{s['sft_steps']} SFT steps of {s['sft_batch_size']} ({s['sft_loss']} loss"
        + (
            f" + {s['sft_assistant_weight']:g} x replies"
            if s.get("sft_assistant_weight") and s["sft_loss"] == "sequence"
            else ""
        )
        + ")"
        + (
            f", then {h['steps']} hard-example steps (replies only, lr "
            f"{s['hard_learning_rate']:g}; trained boards the student got wrong: "
            f"{h['wrong_before']} -> {h['wrong_after']} of {h['boards']})"
            if (h := results.get("hard"))
            else ""
        )
        + ", "
        + (
            f"RL {s['rl_steps']} updates x {s['num_groups']}x{s['num_generations']} games per "
            f"stage (stages {s['rl_stages']}; "
            + (
                "groups of one position, greedy continuations"
                if s.get("rl_group", "game") == "position"
                else f"groups of one task's games, {s['rl_decisions_per_game']} decisions of each"
            )
            + ")"
            + f", loss `{s['loss_type']}`, lr {s['rl_learning_rate']:g}, "
            f"temperature {s['temperature']:g}"
            if s["rl_steps"] > 0
            else "no RL stage"
        )
        + f". Held-out games per set: {games}"
        + ("" if one_player(s["game"]) else ", sides alternating")
        + ", through `core.Episode`.",
        "",
        f"Wall {t['total_wall_seconds']:.0f} s with {s['threads']} torch threads on "
        f"{t['cpus']} shared cores (process CPU {t['process_cpu_seconds']:.0f} s; "
        f"load average at the end {load.get(list(load)[-1]) if load else '-'}).",
        "",
        *(
            []
            if results.get("complete", True)
            else [
                f"**Partial run**: written after each stage; stages so far: "
                f"{', '.join(results['stages'][k]['label'] for k in main)}.",
                "",
            ]
        ),
        *verdict(results),
        "Greedy decoding:",
        "",
        *stage_table(results, "greedy", main),
        *exact_table(results, main),
    ]
    if any("sampled" in results["stages"][k] for k in main):
        lines += [
            "",
            f"Sampled (temperature {s['eval_temperature']:g}):",
            "",
            *stage_table(results, "sampled", main),
        ]
    return "\n".join(lines) + "\n"


TARGETS: dict[str, dict[str, float]] = {
    "strong": {"random_win": 0.95, "optimal_non_loss": 0.99},
    "weak": {"random_win": 0.90, "optimal_non_loss": 0.97},
}
"""Tic-Tac-Toe's targets per teacher (exact, greedy, after the last stage)."""


def verdict(results: dict[str, Any]) -> list[str]:
    """The run read against its targets, in words the command writes (exact figures;
    games small enough to enumerate only): the teacher, SFT and the last stage."""
    stages = results["stages"]
    s = results["settings"]
    exact = {k: e["exact"] for k, e in stages.items() if e.get("exact")}
    teacher = results["teacher"].get("exact")
    if not exact or not teacher or "sft" not in exact:
        return []
    last = list(exact)[-1]
    kind = s.get("teacher", "strong")
    goal = TARGETS[kind]

    def pct(e: dict[str, Any], name: str, key: str) -> str:
        return f"{100 * e[name][key]:.2f}%"

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    out = ["**Read against the targets** (exact, greedy; written by the command):", ""]
    t, f, end = teacher, exact["sft"], exact[last]
    out.append(
        f"- teacher: {pct(t, 'random', 'win_rate')} wins against random, "
        f"{pct(t, 'optimal', 'non_loss_rate')} non-loss against optimal."
    )
    if kind == "weak":
        above = max(
            f["random"]["win_rate"] - t["random"]["win_rate"],
            f["optimal"]["non_loss_rate"] - t["optimal"]["non_loss_rate"],
        )
        out.append(
            f"- SFT: {pct(f, 'random', 'win_rate')} and {pct(f, 'optimal', 'non_loss_rate')}: "
            f"at most {100 * above:+.2f} points from the teacher on either opponent "
            f"(imitation alone at most 5 above: {met(above <= 0.05)})."
        )
    if last != "sft":
        w, n = end["random"]["win_rate"], end["optimal"]["non_loss_rate"]
        out.append(
            f"- after {stages[last]['label']}: {pct(end, 'random', 'win_rate')} wins against "
            f"random (target {100 * goal['random_win']:.0f}%: {met(w >= goal['random_win'])}), "
            f"{pct(end, 'optimal', 'non_loss_rate')} non-loss against optimal (target "
            f"{100 * goal['optimal_non_loss']:.0f}%: {met(n >= goal['optimal_non_loss'])}); "
            f"RL moved them {100 * (w - f['random']['win_rate']):+.2f} and "
            f"{100 * (n - f['optimal']['non_loss_rate']):+.2f} points from SFT"
            + (
                f"; beyond the teacher by {100 * (w - t['random']['win_rate']):+.2f} and "
                f"{100 * (n - t['optimal']['non_loss_rate']):+.2f}."
                if kind == "weak"
                else "."
            )
        )
    else:
        w, n = f["random"]["win_rate"], f["optimal"]["non_loss_rate"]
        out.append(
            f"- no RL stage ran: SFT's {pct(f, 'random', 'win_rate')} (target "
            f"{100 * goal['random_win']:.0f}%: {met(w >= goal['random_win'])}) and "
            f"{pct(f, 'optimal', 'non_loss_rate')} (target "
            f"{100 * goal['optimal_non_loss']:.0f}%: {met(n >= goal['optimal_non_loss'])})."
        )
    minutes = results["timing"]["total_wall_seconds"] / 60
    out += [f"- the whole command: {minutes:.1f} minutes wall.", ""]
    return out


def svg_plot(results: dict[str, Any]) -> str:
    """Win rate (and non-loss rate) per stage and held-out set, with 95% intervals."""
    series = []
    keys = list(results["stages"])
    sets = list(results["stages"][keys[0]]["greedy"])
    for name in sets:
        metric = "win" if name != "optimal" else "non_loss"
        series.append((f"{metric.replace('_', '-')} vs {name}", name, metric))
    width, height, left, bottom = 120 + 90 * len(keys), 320, 60, 260
    colours = ["#1f77b4", "#d62728", "#2ca02c"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<line x1="{left}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="20" x2="{left}" y2="{bottom}" stroke="black"/>',
    ]
    for tick in range(0, 11, 2):
        y = bottom - tick * 24
        parts.append(f'<text x="{left - 30}" y="{y + 4}">{tick / 10:.1f}</text>')
        parts.append(f'<line x1="{left}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#eee"/>')
    for i, key in enumerate(keys):
        x = left + 50 + 90 * i
        parts.append(
            f'<text x="{x - 30}" y="{bottom + 16}">{results["stages"][key]["label"][:14]}</text>'
        )
        for j, (_, name, metric) in enumerate(series):
            e = results["stages"][key]["greedy"][name]
            rate, (lo, hi) = e[f"{metric}_rate"], e[f"{metric}_ci"]
            xx, c = x + 8 * j, colours[j % 3]
            parts.append(
                f'<line x1="{xx}" y1="{bottom - 240 * lo}" x2="{xx}" y2="{bottom - 240 * hi}" stroke="{c}"/>'
            )
            parts.append(f'<circle cx="{xx}" cy="{bottom - 240 * rate}" r="3" fill="{c}"/>')
    for j, (label, _, _) in enumerate(series):
        parts.append(
            f'<text x="{left + 10 + 170 * j}" y="{bottom + 40}" fill="{colours[j % 3]}">{label} (greedy, 95% CI)</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def marker(game: str, end: bool = False) -> str:
    return f"<!-- recipe-table: {game} {'end' if end else 'start'} -->"


def write_docs(path: str | Path, game: str, text: str) -> bool:
    """Replace the text between the game's recipe markers in ``path``; False if absent."""
    p = Path(path)
    if not p.exists():
        return False
    doc = p.read_text(encoding="utf-8")
    start, end = marker(game), marker(game, end=True)
    i, j = doc.find(start), doc.find(end)
    if i < 0 or j < i:
        return False
    p.write_text(doc[: i + len(start)] + "\n" + text + doc[j:], encoding="utf-8")
    return True


def write_results(s: RecipeSettings, results: dict[str, Any]) -> None:
    out = Path(s.output_dir)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    md = markdown(results)
    (out / "results.md").write_text(md)
    (out / "plot.svg").write_text(svg_plot(results))
    results["docs_written"] = bool(s.docs) and write_docs(s.docs, run_name(s), md)


# --- CLI ---------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    from rollouts.training.flags import add_settings_arguments

    add_settings_arguments(
        p,
        RecipeSettings,
        choices={"game": sorted(PLANS), "teacher": TEACHERS, "rl_group": ("position", "game")},
        negatable=True,
    )


def run(args: argparse.Namespace) -> int:
    values = {f.name: getattr(args, f.name) for f in fields(RecipeSettings)}
    try:
        s = resolve(RecipeSettings(**values))
    except ValueError as e:
        import sys

        print(f"gamebridge train recipe: {e}", file=sys.stderr)
        return 2
    results = run_recipe(s)
    print(markdown(results), flush=True)
    print(f"wrote {s.output_dir}/results.md, results.json, plot.svg and model/", flush=True)
    if results.get("docs_written"):
        print(f"wrote the table into {s.docs}", flush=True)
    return 0
