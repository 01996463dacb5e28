"""``gamebridge train selfplay``: self-play GRPO against fixed-opponent GRPO, equal compute.

The opponent seat is the model itself (``opponent="self"``: the trained policy samples
both seats and both seats' turns become training rows) or a frozen snapshot of it,
refreshed every ``refresh_every`` updates (``opponent="snapshot"``: only the learner's
seat is trained). The turn loop is core's two-seat episode (``Task.seats``
``"outside,outside"``, ``Episode.to_move``, ``observation_for``, ``reward_for``): core
judges every reply and scores each seat; this module only generates the replies.

**Per-role baselines** (SPIRAL's role-conditioned advantages): TRL normalises rewards
over each block of ``num_generations`` consecutive rows (mean and standard deviation).
:class:`SelfPlayRollout` lays the rows out so that every such block holds one seat's
decisions of one task's games (a *pair* of blocks per task: seat 0's, then seat 1's), so
TRL's group normalisation is a normalisation per (group, seat): the first player's
advantage never absorbs the second player's edge.

The command trains copies of one starting checkpoint three ways at equal compute (the
same updates and training rows per update; games and model turns counted and tabled),
evaluates each exactly and writes the table into docs/trl.md between the
``recipe-table: selfplay`` markers:

* **Tic-Tac-Toe** from the weak recipe's SFT student (``gamebridge train recipe
  --teacher weak`` saves ``runs/recipe-tictactoe-weak/sft-model``), the fixed-opponent arm
  being the weak recipe's RL settings (minimax:9 with 0-0.25 random moves, 4 decisions a
  game); evaluated by the recipe's ``exact_evaluation`` (every opponent choice enumerated,
  both sides, greedy).
* **Kuhn Poker** (``openspiel:kuhn_poker``) from a short SFT on the uniform random policy
  (:func:`kuhn_student`), the fixed opponent the random bot; evaluated by the
  exploitability of the policy the model's move probabilities define at Kuhn's 12
  information states (:func:`kuhn_information_states`, :func:`model_kuhn_policy`),
  through OpenSpiel's own ``exploitability`` on a ``TabularPolicy``.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from adapters.trl import COMPONENTS, component_key, task_of
from core.batch_stats import training_decisions
from core.episode import Episode
from core.parsing import format_reply
from core.tasks import Task
from rollouts.training.text_rollout import Played, TextRollout, _generation_config

OPPONENTS = ("self", "snapshot")
KUHN = "openspiel:kuhn_poker"
KUHN_WEIGHTS = "win=0,margin=1,format=0.2,invalid=1"
"""Kuhn's reward: the chips won (core's ``margin``: the return over its largest
magnitude, 2), so the trained objective is the zero-sum game whose exploitability is
measured (core's default adds a win bonus that values +1 chip nearly as +2)."""
SELF_SEATS = "outside,outside"


# --- the rollout ---------------------------------------------------------------------------------
@dataclass
class SelfPlayed(Played):
    """:class:`Played` with the seat of every row (its reward is that seat's)."""

    seats: list[int] = field(default_factory=list)


class SelfPlayRollout(TextRollout):
    """A ``rollout_func`` in which the model plays both seats of core's two-seat episode.

    TRL hands over ``num_groups x num_generations`` prompts; every two consecutive groups
    (``2 x num_generations`` rows) are one *pair*: ``games_per_group`` games of the first
    group's task (its seats set to ``"outside,outside"``), the first group's rows seat 0's
    decisions, the second's seat 1's, ``decisions_per_seat`` of each game
    (``core.batch_stats.training_decisions``), so ``num_generations`` must be
    ``games_per_group x decisions_per_seat`` and the groups come in pairs.

    ``opponent="self"``: the trainer's model plays both seats (the pair is
    ``games_per_group`` games, every turn trained). ``opponent="snapshot"``: a frozen copy
    of the model, taken at the first call and refreshed when ``refresh_every`` updates
    (``trainer.state.global_step``) have passed since, plays the other seat; the pair is
    ``2 x games_per_group`` games, the learner in seat 0 in the first half and in seat 1
    in the second, and only the learner's turns are rows.

    A seat that never moved in a game (the other forfeited on its first reply) keeps its
    reward in the group's baseline through one row whose completion is masked out
    (``env_mask`` 0: no gradient). ``games``, ``turns`` and ``snapshot_turns`` count what
    was played (the equal-compute bookkeeping); ``refreshes`` the updates at which the
    snapshot was (re)taken.
    """

    def __init__(
        self,
        max_new_tokens: int = 32,
        *,
        opponent: str = "self",
        refresh_every: int = 1,
        games_per_group: int = 8,
        decisions_per_seat: int = 1,
    ) -> None:
        super().__init__(max_new_tokens, history="none")
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, not {opponent!r}")
        for name, value in (
            ("refresh_every", refresh_every),
            ("games_per_group", games_per_group),
            ("decisions_per_seat", decisions_per_seat),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.opponent = opponent
        self.refresh_every = refresh_every
        self.games_per_group = games_per_group
        self.decisions_per_seat = decisions_per_seat
        self.snapshot: Any = None
        self.refreshes: list[int] = []
        self.games = 0
        self.turns = 0
        self.snapshot_turns = 0

    @property
    def group_size(self) -> int:
        """The rows of one TRL group (``GRPOConfig.num_generations``)."""
        return self.games_per_group * self.decisions_per_seat

    def refresh(self, model: Any, step: int) -> Any:
        """The snapshot for update ``step``: a frozen copy of ``model`` taken at the first
        call and again once ``refresh_every`` updates have passed since the last copy."""
        if self.snapshot is None:
            self.snapshot = copy.deepcopy(model)
            self.snapshot.eval()
            self.refreshes.append(step)
        elif step - self.refreshes[-1] >= self.refresh_every:
            self.snapshot.load_state_dict(model.state_dict())
            self.refreshes.append(step)
        return self.snapshot

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        size = getattr(trainer, "num_generations", self.group_size)
        if size != self.group_size:
            raise ValueError(
                f"num_generations ({size}) must be games_per_group x decisions_per_seat "
                f"({self.group_size})"
            )
        self.vllm = trainer if getattr(trainer, "use_vllm", False) else None
        if self.vllm is not None and self.opponent == "snapshot":
            raise ValueError("a snapshot opponent generates with transformers, not vLLM")
        model = trainer.accelerator.unwrap_model(trainer.model)
        other = None
        if self.opponent == "snapshot":
            other = self.refresh(model, int(trainer.state.global_step))
        played = self.play_pairs(
            model,
            other,
            trainer.processing_class,
            [task_of(p) for p in prompts],
            _generation_config(trainer),
            list(trainer.eos_token_ids),
        )
        self.last_episodes = played.episodes
        return self.columns(played)

    @staticmethod
    def columns(played: SelfPlayed) -> dict[str, Any]:
        """What ``rollout_func`` returns: each row's tokens, and core's reward components
        and statistics for the row's seat (``Episode.reward_for``)."""
        rows = list(zip(played.episodes, played.seats, strict=True))
        out: dict[str, Any] = {
            "prompt_ids": played.prompt_ids,
            "completion_ids": played.completion_ids,
            "env_mask": played.env_mask,
            "logprobs": None,
        }
        for name in COMPONENTS:
            out[component_key(name)] = [
                ep.reward_for(seat).components.get(name, 0.0) for ep, seat in rows
            ]
        out["game_turns"] = [sum(e.seat == seat for e in ep.events) for ep, seat in rows]
        out["game_invalid"] = [ep.invalid_moves_of(seat) for ep, seat in rows]
        out["game_result"] = [ep.results[seat] for ep, seat in rows]
        return out

    def play_pairs(
        self,
        model: Any,
        other: Any,
        tokenizer: Any,
        tasks: Sequence[Task],
        generation_config: Any,
        eos_token_ids: Sequence[int],
    ) -> SelfPlayed:
        """Every pair's games (:meth:`play_games`), laid out as per-seat groups (see the
        class). ``other``: the snapshot (``None``: ``model`` plays both seats)."""
        size, n = self.group_size, self.games_per_group
        if len(tasks) % (2 * size):
            raise ValueError(
                f"the batch ({len(tasks)}) must be whole pairs of groups of {size} "
                "(self-play: an even num_groups)"
            )
        heads = [replace(t, seats=SELF_SEATS) for t in tasks[:: 2 * size]]
        # one entry per game: its task's index and the learner's seat (None: both)
        games: list[tuple[int, int | None]] = []
        for p in range(len(heads)):
            games += [(p, None)] * n if other is None else [(p, 0)] * n + [(p, 1)] * n
        episodes = [Episode(heads[p]) for p, _ in games]
        learners = [learner for _, learner in games]
        decisions = self.play_games(
            model, other, tokenizer, episodes, learners, generation_config, eos_token_ids
        )
        out = SelfPlayed([], [], [], [], seats=[])
        for p, task in enumerate(heads):
            for seat in (0, 1):
                for i, (q, learner) in enumerate(games):
                    if q == p and learner in (None, seat):
                        self._seat_rows(out, tokenizer, task, i, episodes[i], seat, decisions[i])
        return out

    def play_games(
        self,
        model: Any,
        other: Any,
        tokenizer: Any,
        episodes: Sequence[Episode],
        learners: Sequence[int | None],
        generation_config: Any,
        eos_token_ids: Sequence[int],
    ) -> list[dict[int, list[tuple[list[int], list[int]]]]]:
        """Play the two-seat ``episodes`` to the end, batched turn by turn: the seat to move
        (``Episode.to_move``) answers its own view (``observation_for``) with ``model``
        where it is the game's learner seat (``learners[i]``; ``None``: both seats) and
        with ``other`` elsewhere; core judges every reply (``Episode.step``). Returns each
        game's learner decisions per seat: (context tokens, reply tokens)."""
        decisions: list[dict[int, list[tuple[list[int], list[int]]]]] = [
            {0: [], 1: []} for _ in episodes
        ]
        for ep in episodes:
            ep.reset()
        active = list(range(len(episodes)))
        while active:
            seats = {i: episodes[i].to_move for i in active}
            contexts = {
                i: self.decision_prompt(tokenizer, episodes[i].observation_for(seats[i]))
                for i in active
            }
            mine = [i for i in active if learners[i] in (None, seats[i])]
            theirs = [i for i in active if learners[i] not in (None, seats[i])]
            replies: dict[int, list[int]] = {}
            for player, batch in ((model, mine), (other, theirs)):
                if batch:
                    generated = self.generate(
                        player,
                        tokenizer,
                        [contexts[i] for i in batch],
                        generation_config,
                        eos_token_ids,
                    )
                    replies.update(zip(batch, (list(r) for r in generated), strict=True))
            self.turns += len(mine)
            self.snapshot_turns += len(theirs)
            for i in mine:
                decisions[i][int(seats[i])].append((contexts[i], replies[i]))
            active = [
                i
                for i in active
                if not episodes[i].step(tokenizer.decode(replies[i], skip_special_tokens=True)).done
            ]
        self.games += len(episodes)
        return decisions

    def _seat_rows(
        self,
        out: SelfPlayed,
        tokenizer: Any,
        task: Task,
        index: int,
        ep: Episode,
        seat: int,
        decisions: dict[int, list[tuple[list[int], list[int]]]],
    ) -> None:
        """Append game ``index``'s ``decisions_per_seat`` rows for ``seat``
        (``training_decisions``); a seat that never moved gets masked rows (its reward
        still counts in the group's baseline, no gradient)."""
        k = self.decisions_per_seat
        chosen = decisions[seat]
        if chosen:
            rows = training_decisions(task.seed, 2 * index + seat, chosen, k)
            masks = [[1] * len(r) for _, r in rows]
        else:
            context = self.decision_prompt(tokenizer, ep.observation_for(seat))
            rows, masks = [(context, [tokenizer.eos_token_id])] * k, [[0]] * k
        for (context, reply), mask in zip(rows, masks, strict=True):
            out.episodes.append(ep)
            out.seats.append(seat)
            out.prompt_ids.append(list(context))
            out.completion_ids.append(list(reply))
            out.env_mask.append(mask)


def group_advantages(rewards: Sequence[float], size: int) -> list[float]:
    """TRL's GRPO advantages (``scale_rewards="group"``): each block of ``size``
    consecutive rewards minus its mean, over its (unbiased) standard deviation + 1e-4.
    With :class:`SelfPlayRollout`'s layout a block is one (task, seat)."""
    out: list[float] = []
    for start in range(0, len(rewards), size):
        block = list(rewards[start : start + size])
        mean = sum(block) / len(block)
        var = sum((r - mean) ** 2 for r in block) / max(1, len(block) - 1)
        out += [(r - mean) / (math.sqrt(var) + 1e-4) for r in block]
    return out


# --- Kuhn Poker through OpenSpiel -----------------------------------------------------------------
@dataclass(frozen=True)
class InfoState:
    """One Kuhn information state: OpenSpiel's ``information_state_string``, the seat, the
    observation core shows that seat there, and the legal moves (text -> action id)."""

    key: str
    seat: int
    observation: str
    moves: dict[str, int]


def _pyspiel_game(name: str = "kuhn_poker") -> Any:
    try:
        import pyspiel
    except ImportError as e:
        raise ImportError(
            "Kuhn Poker needs OpenSpiel; install with: pip install -e '.[openspiel]'"
        ) from e
    return pyspiel.load_game(name)


def kuhn_information_states(seeds: int = 64) -> list[InfoState]:
    """Kuhn's 12 information states as core shows them: two-seat episodes of
    ``openspiel:kuhn_poker`` (tasks seeded 0..``seeds``, so every deal comes up) are
    played down every betting line; at each turn the pyspiel state of core's history
    gives the information state of the seat to move, and ``Episode.observation_for`` its
    text. Sorted by OpenSpiel's key."""
    game = _pyspiel_game()
    found: dict[str, InfoState] = {}
    lines = (("Pass", "Pass"), ("Pass", "Bet", "Pass"), ("Bet", "Pass"))
    for seed in range(seeds):
        for line in lines:
            ep = Episode(Task(game=KUHN, seed=seed, seats=SELF_SEATS))
            ep.reset()
            for move in line:
                seat = ep.to_move
                if seat is None:
                    break
                state = game.new_initial_state()
                for action in ep.state.history:
                    state.apply_action(action)
                key = state.information_state_string(seat)
                moves = {state.action_to_string(seat, a): a for a in state.legal_actions()}
                found.setdefault(key, InfoState(key, seat, ep.observation_for(seat), moves))
                ep.step(format_reply(move))
        if len(found) == 12:
            break
    if len(found) != 12:
        raise RuntimeError(f"found {len(found)} of Kuhn's 12 information states")
    return [found[k] for k in sorted(found)]


def policy_table(probabilities: Mapping[str, Mapping[str, float]]) -> Any:
    """An OpenSpiel ``TabularPolicy`` for Kuhn from ``{information state: {move text:
    probability}}`` (every one of the 12 states; each row normalised)."""
    from open_spiel.python import policy as os_policy

    game = _pyspiel_game()
    table = os_policy.TabularPolicy(game)
    states = {s.key: s for s in kuhn_information_states()}
    if set(probabilities) != set(states):
        raise ValueError(
            f"need every Kuhn information state {sorted(states)}, got {sorted(probabilities)}"
        )
    for key, probs in probabilities.items():
        total = sum(probs.values())
        if total <= 0 or set(probs) - set(states[key].moves):
            raise ValueError(f"bad probabilities at {key!r}: {dict(probs)}")
        row = table.policy_for_key(key)
        row[:] = 0.0
        for move, p in probs.items():
            row[states[key].moves[move]] = p / total
    return table


def kuhn_figures(probabilities: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """OpenSpiel's figures for the policy: its exploitability (``exploitability``: the
    mean over both seats of a best response's gain, 0 at a Nash equilibrium), the first
    player's value when it plays itself (-1/18 at equilibrium), and its mean value over
    both seats against the uniform random policy."""
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import expected_game_score, exploitability

    game = _pyspiel_game()
    table = policy_table(probabilities)
    uniform = os_policy.UniformRandomPolicy(game)
    root = game.new_initial_state()
    itself = expected_game_score.policy_value(root, [table, table])
    first = expected_game_score.policy_value(root, [table, uniform])
    second = expected_game_score.policy_value(root, [uniform, table])
    return {
        "exploitability": float(exploitability.exploitability(game, table)),
        "first_player_value": float(itself[0]),
        "value_vs_random": float((first[0] + second[1]) / 2),
    }


def model_kuhn_policy(model: Any, tokenizer: Any) -> tuple[dict[str, dict[str, float]], float]:
    """The model's move probabilities at each information state: the probability of each
    legal move's well-formed reply (``<move>M</move>`` and the end of turn, scored token
    by token after the one-decision prompt, as the chat template renders it), normalised
    over the legal moves; and the least total probability those replies had at any state
    (what a malformed reply would take)."""
    import torch

    rollout = TextRollout(16, history="none")
    out: dict[str, dict[str, float]] = {}
    least = 1.0
    was_training = model.training
    model.eval()
    try:
        for state in kuhn_information_states():
            prompt = rollout.decision_prompt(tokenizer, state.observation)
            logps = {}
            for move in state.moves:
                messages = [
                    {"role": "user", "content": state.observation},
                    {"role": "assistant", "content": format_reply(move)},
                ]
                ids = list(
                    tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False)
                )
                if ids[: len(prompt)] != prompt:
                    raise ValueError("the chat template does not extend the decision prompt")
                reply = ids[len(prompt) :]
                end = reply.index(tokenizer.eos_token_id) + 1
                full = torch.tensor([prompt + reply[:end]])
                with torch.no_grad():
                    logits = model(input_ids=full).logits[0, len(prompt) - 1 : -1]
                token_logps = torch.log_softmax(logits.float(), -1)
                picked = token_logps.gather(1, full[0, len(prompt) :].unsqueeze(1))
                logps[move] = float(picked.sum())
            mass = sum(math.exp(v) for v in logps.values())
            least = min(least, mass)
            out[state.key] = {m: math.exp(v) / mass for m, v in logps.items()}
    finally:
        model.train(was_training)
    return out, least


KUHN_START_TICKS = 20
"""The Kuhn student's targets are multiples of 1/20 (SFT rows: 20 a state)."""


def kuhn_start_policy(seed: int) -> dict[str, float]:
    """The Kuhn student's target: at each information state a Bet probability drawn
    uniformly from 0.2-0.8 (seeded, in multiples of 1/20). A random behaviour policy that
    differs from state to state, so the student has to read its card and the betting (a
    student of the uniform policy learns to ignore the observation, and RL then moves
    one probability shared by all 12 states: measured, 2026-12-06)."""
    import random

    rng = random.Random(f"kuhn-start-{seed}")
    ticks = KUHN_START_TICKS
    return {
        s.key: rng.randint(round(0.2 * ticks), round(0.8 * ticks)) / ticks
        for s in kuhn_information_states()
    }


def kuhn_student(out: Path, *, steps: int, seed: int, threads: int = 1) -> Path:
    """A tiny decision model (the recipe's ``MODEL_CONFIG``) SFT-trained (replies only) on
    :func:`kuhn_start_policy`: each information state's observation 20 times, its Bet
    reply as often as the target says and Pass the rest. Saved in ``out`` (skipped when a
    model is already there)."""
    import random

    import torch

    from rollouts.training.recipe import MODEL_CONFIG
    from rollouts.training.sft import run_sft
    from rollouts.training.tiny import (
        DECISION_CHAT_TEMPLATE,
        build_model,
        build_tokenizer,
        save_tiny,
    )

    if (out / "config.json").is_file():
        return out
    torch.set_num_threads(threads)
    target = kuhn_start_policy(seed)
    rows = []
    for s in kuhn_information_states():
        bets = round(target[s.key] * KUHN_START_TICKS)
        for j in range(KUHN_START_TICKS):
            move = "Bet" if j < bets else "Pass"
            rows.append(
                {
                    "messages": [
                        {"role": "user", "content": s.observation},
                        {"role": "assistant", "content": format_reply(move)},
                    ]
                }
            )
    rows *= 4
    random.Random(seed).shuffle(rows)
    tokenizer = build_tokenizer(rows, 512, DECISION_CHAT_TEMPLATE)
    model = build_model(tokenizer, seed=seed, **MODEL_CONFIG)
    run_sft(
        model,
        tokenizer,
        rows,
        output_dir=str(out.parent / "kuhn-sft"),
        max_steps=steps,
        learning_rate=2e-3,
        batch_size=64,
        seed=seed,
        max_length=256,
        progress=False,
        assistant_only_loss=True,
        lr_scheduler_type="cosine",
    )
    info = {"selfplay": "kuhn student", "target_bet_probabilities": target, "sft_steps": steps}
    return save_tiny(model, tokenizer, out, info)


# --- the arms ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GameSetup:
    """One game's comparison: where the start comes from and the RL settings every arm
    shares (the fixed arm's are the weak recipe's on Tic-Tac-Toe)."""

    game: str
    fixed_opponent: str
    depth: int
    min_random: float
    max_random: float
    max_new_tokens: int
    num_groups: int
    games_per_group: int
    decisions: int
    learning_rate: float
    loss_type: str
    epsilon_high: float
    temperature: float
    reward_weights: str = ""


def tictactoe_setup() -> GameSetup:
    """The weak recipe's RL settings (``gamebridge train recipe --teacher weak``)."""
    from rollouts.training.recipe import PLANS, RecipeSettings, parse_stages, resolve

    s = resolve(RecipeSettings(game="tictactoe", teacher="weak", docs=""))
    ((lo, hi),) = parse_stages(s.rl_stages)
    return GameSetup(
        "tictactoe",
        "minimax",
        PLANS["tictactoe"].opponent_depth,
        lo,
        hi,
        PLANS["tictactoe"].max_new_tokens,
        s.num_groups,
        s.num_generations,
        s.rl_decisions_per_game,
        s.rl_learning_rate,
        s.loss_type,
        s.epsilon_high,
        s.temperature,
    )


def kuhn_setup() -> GameSetup:
    """Kuhn: the random bot as the fixed opponent, one decision of each seat a game."""
    return GameSetup(
        KUHN, "random", 1, 0.0, 0.0, 8, 32, 8, 1, 1e-4, "cispo", 5.0, 1.0, KUHN_WEIGHTS
    )


ARMS = ("fixed", "self", "snapshot")


def arm_rollout(arm: str, g: GameSetup, refresh_every: int) -> TextRollout:
    """The rollout of one arm. Equal compute: every arm trains ``num_groups x
    games_per_group x decisions`` rows an update; ``fixed`` plays ``num_groups x
    games_per_group`` games (one model seat each), ``self`` half as many (both seats the
    model's, so as many model turns), ``snapshot`` as many as ``fixed`` (the snapshot's
    turns on top)."""
    if arm == "fixed":
        return TextRollout(g.max_new_tokens, history="none", decisions_per_game=g.decisions)
    return SelfPlayRollout(
        g.max_new_tokens,
        opponent=arm,
        refresh_every=refresh_every,
        games_per_group=g.games_per_group,
        decisions_per_seat=g.decisions,
    )


def train_arm(
    arm: str, g: GameSetup, model: Any, tokenizer: Any, updates: int, refresh_every: int, seed: int
) -> tuple[Any, dict[str, Any]]:
    """GRPO ``updates`` updates of ``model`` in place (the recipe's trainer: constant lr,
    no KL, invalid replies forfeit); returns the model and what was played."""
    from rollouts.training.grpo import GRPOSettings, train_grpo

    rollout = arm_rollout(arm, g, refresh_every)
    counted = _Counted(rollout)
    settings = GRPOSettings(
        game=g.game,
        mode="rollout_func",
        num_tasks=updates * g.num_groups,
        opponent=g.fixed_opponent,
        depth=g.depth,
        opening_plies=0,
        max_invalid_moves=0,
        min_random_move_prob=g.min_random,
        max_random_move_prob=g.max_random,
        num_groups=g.num_groups,
        num_generations=g.games_per_group * g.decisions,
        temperature=g.temperature,
        learning_rate=g.learning_rate,
        lr_scheduler_type="constant",
        loss_type=g.loss_type,
        epsilon_high=g.epsilon_high,
        max_steps=updates,
        max_completion_length=g.max_new_tokens,
        max_new_tokens=g.max_new_tokens,
        beta=0.0,
        cpu=True,
        seed=seed,
        logging_steps=max(1, updates // 5),
        output_dir=str(Path("/tmp") / f"gamebridge-selfplay-{arm}"),
        reward_weights=g.reward_weights,
    )
    trainer = train_grpo(
        settings, model=model, tokenizer=tokenizer, progress=False, rollout=counted
    )
    played = {
        "games": counted.games,
        "model_turns": counted.turns,
        "snapshot_turns": counted.snapshot_turns,
        "rows": counted.rows,
        "refreshes": list(getattr(rollout, "refreshes", [])),
    }
    return trainer.model, played


class _Counted:
    """A rollout that counts games, model turns and rows (the equal-compute columns)."""

    def __init__(self, inner: TextRollout) -> None:
        self.inner = inner
        self.games = self.turns = self.snapshot_turns = self.rows = 0

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        out = self.inner(prompts, trainer)
        self.rows += len(out["prompt_ids"])
        if isinstance(self.inner, SelfPlayRollout):
            self.games, self.turns = self.inner.games, self.inner.turns
            self.snapshot_turns = self.inner.snapshot_turns
        else:
            self.games += len(self.inner.last_episodes)
            self.turns += sum(len(ep.events) for ep in self.inner.last_episodes)
        return out


def evaluate(game: str, model: Any, tokenizer: Any) -> dict[str, Any]:
    """Tic-Tac-Toe: the recipe's exact evaluation (greedy); Kuhn: OpenSpiel's figures for
    the model's move probabilities."""
    if game == KUHN:
        probs, least = model_kuhn_policy(model, tokenizer)
        return {**kuhn_figures(probs), "least_mass": least, "policy": probs}
    from rollouts.training import recipe as R

    s = R.resolve(R.RecipeSettings(game="tictactoe", teacher="weak", docs=""))
    return R.exact_evaluation(s, R.model_replies_to(model, tokenizer, 8))


# --- the table -----------------------------------------------------------------------------------
ARM_NAMES = {
    "start": "the start (no RL)",
    "fixed": "fixed opponent",
    "self": "self-play (the model in both seats)",
    "snapshot": "self-play against a snapshot",
}

TTT_HEAD = [
    "| arm | games x updates | model turns | rows | vs random win (exact) "
    "| vs optimal non-loss (exact) | wall |",
    "|---|---|---|---|---|---|---|",
]
KUHN_HEAD = [
    "| arm | games x updates | model turns | rows | exploitability | first player's value "
    "| value vs random | wall |",
    "|---|---|---|---|---|---|---|---|",
]


def table_row(game: str, name: str, r: dict[str, Any], updates: int) -> str:
    e = r["eval"]
    p = r.get("played", {})
    turns = p.get("model_turns", 0)
    if p.get("snapshot_turns"):
        turns = f"{turns} (+{p['snapshot_turns']} snapshot)"
    games = f"{p.get('games', 0) // max(1, updates)} x {updates}" if p else "-"
    head = f"| {name} | {games} | {turns if p else '-'} | {p.get('rows', '-') if p else '-'} "
    wall = f"{r.get('seconds', 0):.0f} s"
    if game == KUHN:
        return (
            head + f"| {e['exploitability']:.4f} | {e['first_player_value']:+.4f} "
            f"| {e['value_vs_random']:+.4f} | {wall} |"
        )
    return (
        head + f"| {100 * e['random']['win_rate']:.2f}% "
        f"| {100 * e['optimal']['non_loss_rate']:.2f}% | {wall} |"
    )


def slug(game: str) -> str:
    """A game's name in the docs markers and output files (``kuhn_poker``, ``tictactoe``)."""
    return game.split(":")[-1]


def markdown(results: dict[str, Any], game: str) -> str:
    """One game's docs section: what was run, then the table, the figures as measured."""
    entry = results["games"][game]
    u = entry["updates"]
    lines = [
        f"`{results['command']}` (written by the command, {results['date']}): copies of "
        f"`{entry['start']}` trained by GRPO for {u} updates each (lr {entry['lr']:g}, "
        "loss `cispo`, temperature 1) against the fixed opponent, against themselves (both "
        "seats, both seats' turns trained) and against a snapshot of themselves refreshed "
        f"every {results['refresh_every']} updates, at equal compute (the same updates and "
        "training rows; games and model turns as played, the snapshot's counted apart); "
        "every GRPO group is one seat's decisions (per-role baselines). One seed each.",
        "",
    ]
    if game == KUHN:
        lines += [
            "The start: a tiny model SFT-trained on a random behaviour policy (a Bet "
            "probability drawn from 0.2-0.8 at each information state); the fixed opponent "
            "the random bot; the reward the chips won. Figures: OpenSpiel's "
            "`exploitability` of the `TabularPolicy` of the model's move probabilities at "
            "the 12 information states (0 at a Nash equilibrium; the uniform policy's is "
            "0.4583, always betting 0.3333), the first player's value when the policy "
            "plays itself (-1/18 = -0.0556 at equilibrium), and its mean value over both "
            "seats against uniform random play.",
            "",
            *KUHN_HEAD,
        ]
    else:
        lines += [
            "The start: the weak recipe's SFT student; the fixed arm: the recipe's RL "
            f"(minimax:9 with 0-0.25 random moves, {entry['decisions']} decisions of each "
            "game; self-play: of each seat). Figures: the recipe's exact evaluation, greedy, "
            "both sides.",
            "",
            *TTT_HEAD,
        ]
    for arm, r in entry["arms"].items():
        lines.append(table_row(game, ARM_NAMES[arm], r, u))
    if game == KUHN:
        lines += ["", "Bet probability at each information state (card, then the bets):", ""]
        keys = sorted(entry["arms"]["start"]["eval"]["policy"])
        lines += ["| arm | " + " | ".join(f"`{k}`" for k in keys) + " |"]
        lines += ["|---|" + "---|" * len(keys)]
        for arm, r in entry["arms"].items():
            policy = r["eval"]["policy"]
            cells = " | ".join(f"{policy[k]['Bet']:.2f}" for k in keys)
            lines.append(f"| {ARM_NAMES[arm]} | {cells} |")
    return "\n".join(lines) + "\n"


# --- the command ---------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    from rollouts.training.recipe import write_docs
    from rollouts.training.tiny import load_tokenizer

    torch.set_num_threads(args.threads)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    games = [g.strip() for g in args.games.split(",") if g.strip()]
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    bad = [g for g in games if g not in ("tictactoe", KUHN)] + [a for a in arms if a not in ARMS]
    if bad:
        print(f"gamebridge train selfplay: unknown {bad}", file=sys.stderr)
        return 2
    argv = sys.argv[3:] if sys.argv[1:3] == ["train", "selfplay"] else []
    command = " ".join(["gamebridge train selfplay", *argv])
    results: dict[str, Any] = {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "refresh_every": args.refresh_every,
        "games": {},
    }
    for game in games:
        if game == KUHN:
            setup, updates = kuhn_setup(), args.kuhn_updates
            source = kuhn_student(out / "kuhn-student", steps=args.kuhn_sft_steps, seed=args.seed)
        else:
            setup, updates = tictactoe_setup(), args.updates
            source = Path(args.model or "runs/recipe-tictactoe-weak/sft-model")
            if not (source / "config.json").is_file():
                print(
                    f"gamebridge train selfplay: no SFT student in {source} (run make "
                    "train-recipe TEACHER=weak first, or give --model)",
                    file=sys.stderr,
                )
                return 2
        tokenizer = load_tokenizer(str(source))
        entry: dict[str, Any] = {
            "start": str(source),
            "updates": updates,
            "lr": setup.learning_rate,
            "decisions": setup.decisions,
            "arms": {},
        }
        results["games"][game] = entry
        start = AutoModelForCausalLM.from_pretrained(str(source))
        entry["arms"]["start"] = {"eval": evaluate(game, start, tokenizer)}
        print(table_row(game, ARM_NAMES["start"], entry["arms"]["start"], updates), flush=True)
        for arm in arms:
            model = AutoModelForCausalLM.from_pretrained(str(source))
            t0 = time.perf_counter()
            model, played = train_arm(
                arm, setup, model, tokenizer, updates, args.refresh_every, args.seed
            )
            seconds = time.perf_counter() - t0
            entry["arms"][arm] = {
                "eval": evaluate(game, model, tokenizer),
                "played": played,
                "seconds": round(seconds, 1),
            }
            print(table_row(game, ARM_NAMES[arm], entry["arms"][arm], updates), flush=True)
            text = markdown(results, game)
            (out / f"{slug(game)}.md").write_text(text)
            (out / f"{slug(game)}.json").write_text(json.dumps(entry, indent=2))
            if args.docs:
                write_docs(args.docs, f"selfplay-{slug(game)}", text)
        print(markdown(results, game), flush=True)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--games", default=f"{KUHN},tictactoe", help="openspiel:kuhn_poker and/or tictactoe"
    )
    p.add_argument("--arms", default=",".join(ARMS), help="fixed, self, snapshot")
    p.add_argument(
        "--model",
        default="",
        help="Tic-Tac-Toe's start (default: the weak recipe's runs/recipe-tictactoe-weak/sft-model)",
    )
    p.add_argument("--updates", type=int, default=30, help="Tic-Tac-Toe updates per arm")
    p.add_argument("--kuhn-updates", type=int, default=80, help="Kuhn Poker updates per arm")
    p.add_argument("--kuhn-sft-steps", type=int, default=400, help="the Kuhn student's SFT steps")
    p.add_argument(
        "--refresh-every", type=int, default=5, help="updates between snapshot refreshes"
    )
    p.add_argument("--seed", type=int, default=0, help="GRPO and SFT seed")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--output-dir", default="runs/selfplay", help="where the table goes")
    p.add_argument("--docs", default="", help="also write the table into this file's markers")


__all__ = [
    "ARMS",
    "InfoState",
    "SelfPlayRollout",
    "add_arguments",
    "group_advantages",
    "kuhn_figures",
    "kuhn_information_states",
    "kuhn_start_policy",
    "model_kuhn_policy",
    "policy_table",
    "run",
]
