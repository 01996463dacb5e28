"""``GRPOTrainer(rollout_func=...)``: multi-turn text-tag play (``<move>..</move>``).

Training machinery, not an adapter: as in TRL's own examples, the rollout function is
the trainer's side (generation with the trainer's model, the token bookkeeping, the
samples GRPO trains on); the environment's side in TRL's vocabulary (the dataset rows
carrying the task, ``task_of``, the reward columns) is ``adapters.trl``. The same loop
plays the held-out games of ``rollouts.training.recipe`` and ``tiny``.

TRL hands the rollout function the batch's prompts (each already repeated
``num_generations`` times) and the trainer. For each prompt this plays one game
of the task carried in the prompt's system message (``TASK_KEY``, see
``make_dataset(tasks, tools=False)``) with the trainer's own model and
tokenizer (plain ``transformers`` generation; a vLLM-backed variant would swap
only :meth:`TextRollout.generate`), turn by turn, all games of the batch
batched together:

    prompt_ids      = chat template(system, first observation) + assistant header
    completion_ids  = reply 1 + <observation 2 as a user turn> + reply 2 + ...
    env_mask        = 1 on the model's reply tokens, 0 on observation tokens

Ids are concatenated, never re-tokenized, so the trainer scores exactly the
tokens the model conditioned on.

``history="none"`` plays the same games with a context of one decision: each
reply is generated from the current observation alone as one user turn (no
system prompt, no earlier turns; the prompt format of ``gamebridge train
recipe``). A game is then not one token sequence, so each game's training
sample is one of its decisions, drawn uniformly (seeded by the task and the
sample's place in the batch): ``prompt_ids`` that decision's context,
``completion_ids`` its reply, scored with the whole game's reward (an
unbiased, if noisier, estimate of the per-decision policy gradient).
``decisions_per_game=k`` (> 1) trains k decisions of each game instead: every
block of k consecutive prompts (TRL repeats each prompt ``num_generations``
times in a row, so k must divide it) plays one game, and the block's k
samples are k of its decisions (all of them when it has exactly k; drawn
without repeats when it has more, every one and then repeats drawn when
fewer), each scored with that game's reward. A GRPO group of
``num_generations`` prompts is then ``num_generations / k`` games. The game loop is ``core.Episode.step`` only;
the extra keys carry core's reward components (``component_key(name)``) and a
few episode statistics for logging.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.trl import COMPONENTS, component_key, task_of
from core import conversation as chat
from core.batch_stats import exploration_move, stat_columns, training_decisions
from core.episode import Episode
from core.parsing import format_reply
from core.players import legal_replies
from core.tasks import Task


def observation_suffix_ids(tokenizer: Any, observation: str) -> list[int]:
    """The tokens between the end of an assistant reply (its end-of-turn token
    included) and the next assistant header: the observation as a user turn,
    as the chat template renders it (TRL's own trick for tool replies)."""
    base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    prefix = tokenizer.apply_chat_template(base, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template(
        base + [{"role": "user", "content": observation}],
        tokenize=True,
        add_generation_prompt=True,
        return_dict=False,
    )
    eos = [i for i, t in enumerate(prefix) if t == tokenizer.eos_token_id]
    if eos:
        prefix = prefix[: eos[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise ValueError("the chat template is not prefix-preserving; cannot append observations")
    return list(full[len(prefix) :])


@dataclass
class Played:
    """A batch of games played by :meth:`TextRollout.play` (one row per task)."""

    episodes: list[Episode]
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    env_mask: list[list[int]]
    decisions: list[list[tuple[list[int], list[int]]]] | None = None
    """``history="none"``: every (context, reply) token pair of each game."""


def _generation_config(trainer: Any) -> Any:
    """The trainer's sampling settings (TRL builds none when vLLM generates)."""
    config = getattr(trainer, "generation_config", None)
    if config is not None:
        return config
    from transformers import GenerationConfig

    tokenizer = trainer.processing_class
    return GenerationConfig(
        do_sample=True,
        temperature=trainer.temperature,
        top_p=trainer.top_p,
        top_k=trainer.top_k,
        eos_token_id=list(trainer.eos_token_ids),
        pad_token_id=tokenizer.pad_token_id,
    )


class TextRollout:
    """A ``rollout_func``: ``TextRollout(max_new_tokens=32)(prompts, trainer) -> dict``.

    ``max_new_tokens`` caps one reply; the trainer's ``max_completion_length``
    caps the whole completion (replies and observations): a game that would
    exceed it is settled by core (``Episode.finish``) rather than cut silently.
    ``last_episodes`` keeps the batch's finished episodes for inspection.
    """

    HISTORIES = ("game", "none")
    GROUPS = ("game", "position")
    CONTINUATIONS = ("sample", "greedy")

    def __init__(
        self,
        max_new_tokens: int = 32,
        history: str = "game",
        decisions_per_game: int = 1,
        group: str = "game",
        continuation: str = "sample",
        explore_epsilon: float = 0.0,
        constrained: bool = False,
    ) -> None:
        if history not in self.HISTORIES:
            raise ValueError(f"history must be one of {self.HISTORIES}, not {history!r}")
        if isinstance(decisions_per_game, bool) or not isinstance(decisions_per_game, int):
            raise ValueError(f"decisions_per_game must be an int >= 1, got {decisions_per_game!r}")
        if decisions_per_game < 1 or (decisions_per_game > 1 and history != "none"):
            raise ValueError(
                f"decisions_per_game must be >= 1, and 1 unless history is 'none' "
                f"(got {decisions_per_game!r} with history {history!r})"
            )
        if group not in self.GROUPS or (group == "position" and history != "none"):
            raise ValueError(
                f"group must be one of {self.GROUPS} ('position' with history 'none'), "
                f"not {group!r} with history {history!r}"
            )
        if group == "position" and decisions_per_game != 1:
            raise ValueError("group 'position' trains one decision per game")
        if continuation not in self.CONTINUATIONS:
            raise ValueError(
                f"continuation must be one of {self.CONTINUATIONS}, not {continuation!r}"
            )
        if isinstance(explore_epsilon, bool) or not isinstance(explore_epsilon, (int, float)):
            raise ValueError(f"explore_epsilon must be a number in [0, 1], got {explore_epsilon!r}")
        if not 0.0 <= explore_epsilon <= 1.0:
            raise ValueError(f"explore_epsilon must be in [0, 1], got {explore_epsilon!r}")
        if not isinstance(constrained, bool):
            raise ValueError(f"constrained must be True or False, got {constrained!r}")
        self.constrained = constrained
        """Constrained decoding (an option): every reply is one of the legal replies core
        lists for its observation (``core.players.legal_replies``) followed by the end of
        turn (``rollouts.model.constrained``), in held-out play and in the GRPO games. The
        model is unchanged: a legal-move rate then says nothing about it. GRPO scores the
        constrained replies with the model's own (unconstrained) token probabilities.
        transformers ``generate`` only (refused under vLLM)."""
        self._tries: Any = None
        self.group = group
        self.continuation = continuation
        self.explore_epsilon = float(explore_epsilon)
        """Epsilon-greedy exploration of sampled games: each decision's reply is, with this
        chance, a uniformly drawn legal move written in the reply format
        (``core.batch_stats.exploration_move``, seeded by the task). A move the policy gives
        almost no probability (it never samples it) then still gets tried, and scored by
        its game. Greedy generation (evaluation) never explores."""
        self.vllm: Any = None
        """The trainer, while it generates with vLLM (``use_vllm``): replies come from
        its ``_generate_single_turn`` (TRL's own wiring: weight sync after each update,
        colocate or server mode); None: transformers ``generate`` (the tested CPU path)."""
        self.max_new_tokens = max_new_tokens
        self.history = history
        self.decisions_per_game = decisions_per_game
        self.last_episodes: list[Episode] = []

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        tasks = [task_of(p) for p in prompts]
        self.vllm = trainer if getattr(trainer, "use_vllm", False) else None
        if self.group == "position":
            size = getattr(trainer, "num_generations", 1)
            played = self.play_branches(
                trainer.accelerator.unwrap_model(trainer.model),
                trainer.processing_class,
                tasks,
                size,
                _generation_config(trainer),
                list(trainer.eos_token_ids),
            )
            self.last_episodes = played.episodes
            return self._columns(played)
        k = self.decisions_per_game
        if k > 1:
            groups = getattr(trainer, "num_generations", k)
            if groups % k or len(tasks) % k:
                raise ValueError(
                    f"decisions_per_game ({k}) must divide num_generations ({groups}) "
                    f"and the batch ({len(tasks)})"
                )
            tasks = tasks[::k]  # each block of k prompts: the same task, one game
        played = self.play(
            trainer.accelerator.unwrap_model(trainer.model),
            trainer.processing_class,
            tasks,
            _generation_config(trainer),
            list(trainer.eos_token_ids),
            trainer.max_completion_length,
        )
        self.last_episodes = played.episodes
        if played.decisions is not None:
            played = self.one_decision_each(played) if k == 1 else self.decisions_each(played, k)
        return self._columns(played)

    @staticmethod
    def _columns(played: Played) -> dict[str, Any]:
        """What ``rollout_func`` returns: the rows' tokens, core's reward components and
        episode statistics (one episode per row)."""
        out: dict[str, Any] = {
            "prompt_ids": played.prompt_ids,
            "completion_ids": played.completion_ids,
            "env_mask": played.env_mask,
            "logprobs": None,
        }
        for name in COMPONENTS:
            out[component_key(name)] = [
                e.reward().components.get(name, 0.0) for e in played.episodes
            ]
        return {**out, **stat_columns(played.episodes)}

    def generate(
        self,
        model: Any,
        tokenizer: Any,
        sequences: list[list[int]],
        generation_config: Any,
        eos_token_ids: Sequence[int],
        legal: Sequence[Sequence[str] | None] | None = None,
    ) -> list[list[int]]:
        """One reply per token sequence (batched, left-padded), each cut after
        its first end-of-turn token. Under a vLLM trainer the replies come from vLLM
        (sampled with the trainer's settings; a greedy ``generation_config`` is not
        honoured there). ``legal`` (constrained decoding): for each sequence the replies
        it may give (None: any), each then one of them followed by the tokenizer's end of
        turn (``rollouts.model.constrained``); None: generation as it is without."""
        if legal is not None and self.vllm is not None:
            raise ValueError("constrained decoding needs transformers generate, not vLLM")
        if self.vllm is not None:
            completions, _ = self.vllm._generate_single_turn(sequences, None, None, 1)
            return [_cut(list(c), eos_token_ids, self.max_new_tokens) for c in completions]
        import torch

        ids, mask = _left_padded(sequences, tokenizer.pad_token_id, model.device)
        width = ids.shape[1]
        config = copy.deepcopy(generation_config)
        config.max_new_tokens = self.max_new_tokens
        shared: dict[str, Any] = {}
        if legal is not None:
            from transformers import LogitsProcessorList

            constraint = self.reply_tries(tokenizer).constraint(legal, width, self.max_new_tokens)
            shared["logits_processor"] = LogitsProcessorList([constraint])
        with torch.no_grad():
            cache = _shared_prefill(model, sequences, tokenizer.pad_token_id)
            if cache is not None:
                shared["cache"] = cache
            out = model.generate(
                input_ids=ids, attention_mask=mask, generation_config=config, **shared
            )
        return [_cut(row, eos_token_ids, self.max_new_tokens) for row in out[:, width:].tolist()]

    def reply_tries(self, tokenizer: Any) -> Any:
        """The token tries of legal replies for ``tokenizer`` (``ReplyTries``, cached)."""
        if self._tries is None or self._tries.tokenizer is not tokenizer:
            from rollouts.model.constrained import ReplyTries

            self._tries = ReplyTries(tokenizer)
        return self._tries

    def legal(
        self, episodes: Sequence[Episode], observations: Sequence[str]
    ) -> list[list[str]] | None:
        """Under :attr:`constrained`, the legal replies to each episode's observation
        (core's ``legal_replies``); else None (unconstrained)."""
        if not self.constrained:
            return None
        return [legal_replies(ep.game, o) for ep, o in zip(episodes, observations, strict=True)]

    @staticmethod
    def one_decision_each(played: Played) -> Played:
        """Each game's training sample: one of its decisions, uniformly drawn
        (core's ``training_decisions``: seeded by the task seed and the game's place
        in the batch)."""
        return TextRollout.decisions_each(played, 1)

    @staticmethod
    def decisions_each(played: Played, k: int) -> Played:
        """Each game's k training samples (its episode repeated k times), as core's
        ``training_decisions`` draws them: its decisions if it has k, k of them drawn
        without repeats if more, all of them and the rest drawn if fewer."""
        episodes, prompts, completions = [], [], []
        for i, (ep, decisions) in enumerate(
            zip(played.episodes, played.decisions or [], strict=True)
        ):
            for context, reply in training_decisions(ep.task.seed, i, decisions, k):
                episodes.append(ep)
                prompts.append(context)
                completions.append(reply)
        return Played(episodes, prompts, completions, [[1] * len(c) for c in completions])

    def explored(
        self,
        tokenizer: Any,
        episode: Episode,
        index: int,
        turn: int,
        reply: list[int],
        generation_config: Any,
    ) -> list[int]:
        """``reply``, or under :attr:`explore_epsilon` (sampled generation only) the
        exploration move core draws for this decision, as reply tokens ending the turn."""
        if not self.explore_epsilon or not generation_config.do_sample:
            return reply
        legal = episode.game.legal_moves_text(episode.state)
        move = exploration_move(episode.task.seed, index, turn, legal, self.explore_epsilon)
        if move is None:
            return reply
        text = list(tokenizer(format_reply(move), add_special_tokens=False)["input_ids"])
        return text + [tokenizer.eos_token_id]

    def decision_prompt(self, tokenizer: Any, observation: str) -> list[int]:
        """The one-decision context: the observation as the only user turn."""
        return list(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": observation}],
                tokenize=True,
                add_generation_prompt=True,
                return_dict=False,
            )
        )

    def play_decisions(
        self,
        model: Any,
        tokenizer: Any,
        tasks: Sequence[Task],
        generation_config: Any,
        eos_token_ids: Sequence[int],
    ) -> Played:
        """``history="none"``: one game per task, each reply from the current
        observation alone, all games batched turn by turn."""
        episodes = [Episode(task) for task in tasks]
        observations = [ep.reset() for ep in episodes]
        contexts = [self.decision_prompt(tokenizer, o) for o in observations]
        decisions: list[list[tuple[list[int], list[int]]]] = [[] for _ in episodes]
        active = list(range(len(episodes)))
        while active:
            replies = self.generate(
                model,
                tokenizer,
                [contexts[i] for i in active],
                generation_config,
                eos_token_ids,
                self.legal([episodes[i] for i in active], [observations[i] for i in active]),
            )
            still = []
            for i, reply in zip(active, replies, strict=True):
                reply = self.explored(
                    tokenizer, episodes[i], i, len(decisions[i]), reply, generation_config
                )
                decisions[i].append((contexts[i], list(reply)))
                result = episodes[i].step(tokenizer.decode(reply, skip_special_tokens=True))
                if result.done:
                    continue
                observations[i] = result.observation
                contexts[i] = self.decision_prompt(tokenizer, result.observation)
                still.append(i)
            active = still
        first = [d[0] for d in decisions]
        return Played(
            episodes,
            [c for c, _ in first],
            [r for _, r in first],
            [[1] * len(r) for _, r in first],
            decisions,
        )

    def play_branches(
        self,
        model: Any,
        tokenizer: Any,
        tasks: Sequence[Task],
        size: int,
        generation_config: Any,
        eos_token_ids: Sequence[int],
    ) -> Played:
        """``group="position"``: a GRPO group of ``size`` rows is ``size`` replies sampled at
        one position, each played on to the end of its game. Per group (``size``
        consecutive rows of one task): a trunk game is played with the model; one of its
        decisions is drawn (``core.batch_stats.training_decisions``, seeded by the task and
        the group's place in the batch); ``size`` episodes replay the trunk's replies up to
        that decision through ``Episode.step`` (the opponent's choices depend only on the
        task seed and the position, so they meet the same position), then each samples its
        own reply there and plays on. The rows are that position's context and each
        episode's reply, scored with its own game's reward: the group's members differ only
        from the compared decision on, so its advantage is that decision's.

        ``continuation="greedy"``: the trunk games and every move after the compared reply
        are the model's greedy choices, so each reply is scored by its value under the
        greedy policy (what the held-out evaluation plays), not blurred by later sampled
        blunders; only the compared reply is sampled."""
        if size < 1 or len(tasks) % size:
            raise ValueError(f"the batch ({len(tasks)}) must be whole groups of {size}")
        heads = list(tasks[::size])
        later = generation_config
        if self.continuation == "greedy":
            later = copy.deepcopy(generation_config)
            later.do_sample, later.temperature, later.top_k, later.top_p = False, None, None, None
        trunk = self.play_decisions(model, tokenizer, heads, later, eos_token_ids)
        episodes: list[Episode] = []
        contexts: list[list[int]] = []
        observations: list[str] = []
        for g, (task, decisions) in enumerate(zip(heads, trunk.decisions or [], strict=True)):
            (at,) = training_decisions(task.seed, g, list(range(len(decisions))), 1)
            prefix = [tokenizer.decode(r, skip_special_tokens=True) for _, r in decisions[:at]]
            for _ in range(size):
                ep = Episode(task)
                observation = ep.reset()
                for reply in prefix:
                    observation = ep.step(reply).observation
                episodes.append(ep)
                observations.append(observation)
                contexts.append(self.decision_prompt(tokenizer, observation))
        first = [list(c) for c in contexts]
        replies: list[list[int] | None] = [None] * len(episodes)
        active = list(range(len(episodes)))
        while active:
            config = generation_config if replies[active[0]] is None else later
            generated = self.generate(
                model,
                tokenizer,
                [contexts[i] for i in active],
                config,
                eos_token_ids,
                self.legal([episodes[i] for i in active], [observations[i] for i in active]),
            )
            still = []
            for i, reply in zip(active, generated, strict=True):
                if replies[i] is None:
                    turn = len(episodes[i].events)
                    reply = self.explored(tokenizer, episodes[i], i, turn, reply, config)
                    replies[i] = list(reply)
                result = episodes[i].step(tokenizer.decode(reply, skip_special_tokens=True))
                if result.done:
                    continue
                observations[i] = result.observation
                contexts[i] = self.decision_prompt(tokenizer, result.observation)
                still.append(i)
            active = still
        completions = [r or [] for r in replies]
        return Played(episodes, first, completions, [[1] * len(c) for c in completions])

    def play(
        self,
        model: Any,
        tokenizer: Any,
        tasks: Sequence[Task],
        generation_config: Any,
        eos_token_ids: Sequence[int],
        budget: int,
    ) -> Played:
        """Play one game per task with ``model``, all games batched turn by turn."""
        if self.history == "none":
            return self.play_decisions(model, tokenizer, tasks, generation_config, eos_token_ids)
        eos_id = tokenizer.eos_token_id
        episodes = [Episode(task) for task in tasks]
        prompt_ids = []
        observations = []
        for ep in episodes:
            observations.append(ep.reset())
            messages = chat.opening(ep.system_prompt, observations[-1])
            prompt_ids.append(
                list(
                    tokenizer.apply_chat_template(
                        messages, tokenize=True, add_generation_prompt=True, return_dict=False
                    )
                )
            )
        completion: list[list[int]] = [[] for _ in episodes]
        env_mask: list[list[int]] = [[] for _ in episodes]
        active = list(range(len(episodes)))
        while active:
            replies = self.generate(
                model,
                tokenizer,
                [prompt_ids[i] + completion[i] for i in active],
                generation_config,
                eos_token_ids,
                self.legal([episodes[i] for i in active], [observations[i] for i in active]),
            )
            still = []
            for i, reply in zip(active, replies, strict=True):
                turn = len(episodes[i].events)
                reply = self.explored(tokenizer, episodes[i], i, turn, reply, generation_config)
                completion[i] += reply
                env_mask[i] += [1] * len(reply)
                if (
                    not reply or reply[-1] not in eos_token_ids
                ):  # cut by max_new_tokens: close the turn
                    completion[i].append(eos_id)
                    env_mask[i].append(0)
                result = episodes[i].step(tokenizer.decode(reply, skip_special_tokens=True))
                if result.done:
                    continue
                suffix = observation_suffix_ids(tokenizer, result.observation)
                if len(completion[i]) + len(suffix) + self.max_new_tokens > budget:
                    episodes[i].finish()  # out of completion budget: core settles the game
                    continue
                completion[i] += suffix
                env_mask[i] += [0] * len(suffix)
                observations[i] = result.observation
                still.append(i)
            active = still
        return Played(episodes, prompt_ids, completion, env_mask)


def _left_padded(sequences: Sequence[Sequence[int]], pad: int, device: Any) -> tuple[Any, Any]:
    """Token sequences as one left-padded batch: ``(input_ids, attention_mask)``."""
    import torch

    width = max(len(s) for s in sequences)
    ids = torch.tensor([[pad] * (width - len(s)) + list(s) for s in sequences], device=device)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], device=device)
    return ids, mask


def _shared_prefill(model: Any, sequences: Sequence[Sequence[int]], pad: int) -> Any:
    """The key-value cache of every sequence but its last token, computed once per
    distinct sequence and gathered to the batch's rows (a batch of games often asks the
    same position many times: the games of one task follow one line until a sampled
    move differs); None when every sequence differs. ``generate`` then reads only the
    last token of each row, so each row's replies are drawn from the same distribution,
    with the same random draws, as without the cache (prefix caching, as vLLM does)."""
    import torch

    distinct = {tuple(s): i for i, s in reversed(list(enumerate(sequences)))}
    if len(distinct) == len(sequences) or max(len(s) for s in sequences) < 2:
        return None
    first = sorted(distinct.values())
    index = {tuple(sequences[i]): k for k, i in enumerate(first)}
    ids, mask = _left_padded([sequences[i] for i in first], pad, model.device)
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
    out = model(
        input_ids=ids[:, :-1],
        attention_mask=mask[:, :-1],
        position_ids=positions[:, :-1],
        use_cache=True,
    )
    cache = out.past_key_values
    cache.reorder_cache(torch.tensor([index[tuple(s)] for s in sequences], device=model.device))
    return cache


def _cut(row: list[int], eos_token_ids: Sequence[int], limit: int) -> list[int]:
    """A generated row up to and with its first end-of-turn token, at most ``limit`` tokens."""
    eos = set(eos_token_ids)
    row = row[:limit]
    cut = next((i for i, t in enumerate(row) if t in eos), None)
    return row if cut is None else row[: cut + 1]


rollout_func = TextRollout()
"""A ready ``rollout_func`` with the default reply cap."""


__all__ = ["Played", "TextRollout", "observation_suffix_ids", "rollout_func"]
