"""Kuhn Poker through OpenSpiel for self-play training: the 12 information states as core
shows them, a ``TabularPolicy`` of a model's move probabilities, OpenSpiel's own
exploitability, and the tiny student RL starts from. See :mod:`rollouts.training.selfplay`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.episode import Episode
from core.parsing import format_reply
from core.tasks import Task
from rollouts.training.selfplay.rollout import SELF_SEATS
from rollouts.training.text_rollout import TextRollout

KUHN = "openspiel:kuhn_poker"
KUHN_WEIGHTS = "win=0,margin=1,format=0.2,invalid=1"
"""Kuhn's reward: the chips won (core's ``margin``: the return over its largest
magnitude, 2), so the trained objective is the zero-sum game whose exploitability is
measured (core's default adds a win bonus that values +1 chip nearly as +2)."""


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


__all__ = [
    "KUHN",
    "KUHN_START_TICKS",
    "KUHN_WEIGHTS",
    "InfoState",
    "kuhn_figures",
    "kuhn_information_states",
    "kuhn_start_policy",
    "kuhn_student",
    "model_kuhn_policy",
    "policy_table",
]
