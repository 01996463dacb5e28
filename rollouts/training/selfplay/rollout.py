"""Self-play's rollout: the model in both seats of core's two-seat episode (or against a
frozen snapshot of itself), its rows laid out one seat per GRPO group (per-role
baselines). See :mod:`rollouts.training.selfplay`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from adapters.trl import COMPONENTS, component_key, task_of
from core.batch_stats import training_decisions
from core.episode import Episode
from core.tasks import Task
from rollouts.training.text_rollout import Played, TextRollout, _generation_config
from rollouts.training.tiny import model_copy

OPPONENTS = ("self", "snapshot")
SELF_SEATS = "outside,outside"


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
            self.snapshot = model_copy(model)
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


__all__ = ["OPPONENTS", "SELF_SEATS", "SelfPlayRollout", "SelfPlayed", "group_advantages"]
