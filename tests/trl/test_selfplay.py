"""Self-play training's mechanics (``rollouts.training.selfplay``), in seconds: both seats'
turns become rows, one seat per GRPO group (so TRL's group normalisation is per role),
the snapshot refresh, and Kuhn Poker's exploitability through OpenSpiel.

A stand-in generator answers each turn (a legal move read from the observation, seeded),
so no model is trained here; ``make train-selfplay`` runs the real comparison."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.trl import TASK_KEY
from core.episode import Episode
from core.parsing import format_reply, parse_reply
from core.tasks import make_tasks

KUHN = "openspiel:kuhn_poker"


def _tokenizer() -> Any:
    from rollouts.training.selfplay import kuhn_information_states
    from rollouts.training.tiny import DECISION_CHAT_TEMPLATE, build_tokenizer

    rows = [
        {
            "messages": [
                {"role": "user", "content": s.observation},
                {"role": "assistant", "content": format_reply(m)},
            ]
        }
        for s in kuhn_information_states()
        for m in s.moves
    ]
    for task in make_tasks(4, seed=3, game="tictactoe"):
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": Episode(task).reset()},
                    {"role": "assistant", "content": format_reply("4")},
                ]
            }
        )
    return build_tokenizer(rows, 400, DECISION_CHAT_TEMPLATE)


def _legal(observation: str) -> list[str]:
    line = next(x for x in observation.splitlines() if x.startswith("Legal moves:"))
    return [m.strip() for m in line.split(":", 1)[1].split(",")]


def _rollout(tok: Any, choose: Any, **kwargs: Any) -> Any:
    """A ``SelfPlayRollout`` whose replies come from ``choose(model, observation)``;
    every call's (model, observation) is kept in ``asked``."""
    from rollouts.training.selfplay import SelfPlayRollout

    class Scripted(SelfPlayRollout):
        asked: list[tuple[Any, str]]

        def generate(
            self, model: Any, tokenizer: Any, sequences: Any, config: Any, eos: Any
        ) -> Any:
            out = []
            for seq in sequences:
                text = tokenizer.decode(seq, skip_special_tokens=True)
                observation = text.split("user\n", 1)[1].rsplit("\nassistant", 1)[0].strip()
                self.asked.append((model, observation))
                reply = format_reply(choose(model, observation))
                out.append(tok(reply, add_special_tokens=False)["input_ids"] + [tok.eos_token_id])
            return out

    rollout = Scripted(8, **kwargs)
    rollout.asked = []
    return rollout


def _batch(game: str, groups: int, size: int, seed: int = 5) -> list[Any]:
    """What TRL hands over: ``groups`` tasks, each repeated ``size`` times in a row."""
    return [t for t in make_tasks(groups, seed=seed, game=game) for _ in range(size)]


def test_both_seats_turns_are_rows_one_seat_per_group() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("pyspiel")
    tok = _tokenizer()
    rng = random.Random(0)
    rollout = _rollout(tok, lambda m, o: rng.choice(_legal(o)), games_per_group=4)
    size = rollout.group_size
    tasks = _batch(KUHN, 4, size)  # two pairs of groups
    played = rollout.play_pairs("M", None, tok, tasks, None, [tok.eos_token_id])
    assert len(played.prompt_ids) == len(tasks) == 16
    assert rollout.games == 8 and played.seats == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    assert rollout.turns == sum(len(ep.events) for ep in set(played.episodes))
    for g in range(4):  # a pair's two groups: the same four games, seat 0's then seat 1's
        block = played.episodes[g * size : (g + 1) * size]
        assert len({id(ep) for ep in block}) == 4
        assert {ep.task.seed for ep in block} == {tasks[(g // 2) * 2 * size].seed}
    for ep, seat, prompt, reply in zip(
        played.episodes, played.seats, played.prompt_ids, played.completion_ids, strict=True
    ):
        assert ep.done and ep.task.seats == "outside,outside"
        observation = tok.decode(prompt, skip_special_tokens=True)
        assert f"Player {seat} to move" in observation  # the row's context is its seat's turn
        move = parse_reply(tok.decode(reply, skip_special_tokens=True)).move
        assert move in [e.move for e in ep.events if e.seat == seat]
    columns = rollout.columns(played)
    for i, (ep, seat) in enumerate(zip(played.episodes, played.seats, strict=True)):
        assert columns["margin_reward"][i] == ep.reward_for(seat).components["margin"]
        assert columns["game_result"][i] == ep.results[seat]
    margins = {
        (id(ep), s): columns["margin_reward"][i]
        for i, (ep, s) in enumerate(zip(played.episodes, played.seats, strict=True))
    }
    for ep in set(played.episodes):  # zero-sum: what one seat wins the other loses
        assert margins[(id(ep), 0)] == -margins[(id(ep), 1)]
    with pytest.raises(ValueError, match="whole pairs"):
        rollout.play_pairs("M", None, tok, tasks[:size], None, [tok.eos_token_id])


def test_advantages_are_normalised_per_role() -> None:
    """Both seats play the first legal cell, so X always wins (0, 2, 4, 6 against 1, 3, 5):
    per role every reward in a group is the same and no row gets an advantage; a group
    that mixed the seats would push X's moves up and O's down for the seat alone."""
    pytest.importorskip("transformers")
    pytest.importorskip("pyspiel")
    from rollouts.training.selfplay import group_advantages

    tok = _tokenizer()
    rollout = _rollout(tok, lambda m, o: _legal(o)[0], games_per_group=2, decisions_per_seat=2)
    tasks = _batch("tictactoe", 2, rollout.group_size)
    played = rollout.play_pairs("M", None, tok, tasks, None, [tok.eos_token_id])
    columns = rollout.columns(played)
    rewards = [w + m for w, m in zip(columns["win_reward"], columns["margin_reward"], strict=True)]
    assert [str(r) for r in columns["game_result"]] == ["win"] * 4 + ["loss"] * 4
    assert group_advantages(rewards, rollout.group_size) == [0.0] * 8
    mixed = group_advantages(rewards, 2 * rollout.group_size)
    assert all(a > 0.5 for a in mixed[:4]) and all(a < -0.5 for a in mixed[4:])


def test_the_tictactoe_arms_take_the_weak_recipes_first_stage() -> None:
    """The fixed arm is the weak recipe's RL as its first stage runs it (the recipe has two
    stages, 0-0.25 then 0-1: ``train selfplay`` failed to start while it read one)."""
    from rollouts.training.selfplay.arms import tictactoe_setup

    g = tictactoe_setup()
    assert (g.min_random, g.max_random) == (0.0, 0.25)
    assert g.learning_rate == 1e-4 and g.num_groups * g.games_per_group == 256


def test_the_snapshot_computes_with_its_own_weights_under_a_trainer(tmp_path: Path) -> None:
    """A real GRPO trainer prepares the learner (accelerate sets a ``forward`` on the
    instance, bound to it): the snapshot must still be a separate model, unmoved when the
    learner's weights move (``copy.deepcopy`` kept the bound ``forward``, so a deep copy
    computed with the learner's weights and the snapshot arm played the live learner)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from rollouts.training.grpo import build_trainer, staged_settings
    from rollouts.training.tiny import build_model

    tok = _tokenizer()
    settings = staged_settings(
        updates=1,
        num_groups=2,
        max_new_tokens=8,
        game="tictactoe",
        num_generations=3,
        output_dir=str(tmp_path),
    )
    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    rollout = _rollout(tok, lambda m, o: _legal(o)[0], opponent="snapshot", games_per_group=3)
    trainer = build_trainer(
        settings, model=build_model(tok, **small), tokenizer=tok, rollout=rollout, progress=False
    )
    learner = trainer.accelerator.unwrap_model(trainer.model)
    snapshot = rollout.refresh(learner, 0)
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        before = snapshot(ids).logits.clone()
        for p in learner.parameters():
            p.add_(1.0)
        assert not torch.allclose(learner(ids).logits, before)
        assert torch.equal(snapshot(ids).logits, before)


def test_trainer_call_and_the_snapshot_refresh() -> None:
    """Against a snapshot: the learner sits in seat 0 for the pair's first games and seat 1
    for the rest, only its turns are rows, the snapshot answers the other seat, and the
    snapshot is a frozen copy refreshed every ``refresh_every`` updates."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("pyspiel")
    tok = _tokenizer()
    learner = torch.nn.Linear(2, 2)
    rng = random.Random(1)
    rollout = _rollout(
        tok,
        lambda m, o: rng.choice(_legal(o)),
        opponent="snapshot",
        refresh_every=2,
        games_per_group=3,
    )
    trainer = SimpleNamespace(
        num_generations=3,
        use_vllm=False,
        model=learner,
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        processing_class=tok,
        eos_token_ids=[tok.eos_token_id],
        generation_config=object(),
        state=SimpleNamespace(global_step=0),
    )
    prompts = [
        [{"role": "system", "content": "x", TASK_KEY: json.dumps(t.to_dict())}]
        for t in _batch(KUHN, 2, 3)
    ]
    weights_at: dict[int, Any] = {}
    turns = (0, 0)
    for step in range(5):
        turns = (rollout.turns, rollout.snapshot_turns)
        trainer.state.global_step = step
        with torch.no_grad():
            learner.weight += 1.0  # an update
        weights_at[step] = learner.weight.detach().clone()
        out = rollout(prompts, trainer)
        assert len(out["prompt_ids"]) == 6 and out["logprobs"] is None
        assert torch.equal(rollout.snapshot.weight, weights_at[rollout.refreshes[-1]])
    assert rollout.refreshes == [0, 2, 4]
    assert rollout.snapshot is not learner and not rollout.snapshot.training
    assert rollout.games == 5 * 6 and rollout.turns + rollout.snapshot_turns == len(rollout.asked)
    # the last call: 6 games, the learner in seat 0 of the first 3 and seat 1 of the rest;
    # its rows are its own turns only, and the snapshot answered every other turn
    episodes = rollout.last_episodes
    assert out["env_mask"] and [ep.task.seats for ep in episodes] == ["outside,outside"] * 6
    seat_of = dict(zip(map(id, episodes), [0, 0, 0, 1, 1, 1], strict=True))
    games = {id(ep): ep for ep in episodes}
    mine = sum(e.seat == seat_of[g] for g, ep in games.items() for e in ep.events)
    theirs = sum(e.seat != seat_of[g] for g, ep in games.items() for e in ep.events)
    assert len(games) == 6 and (rollout.turns, rollout.snapshot_turns) == (
        turns[0] + mine,
        turns[1] + theirs,
    )
    assert sum(m is learner for m, _ in rollout.asked) == rollout.turns
    assert sum(m is rollout.snapshot for m, _ in rollout.asked) == rollout.snapshot_turns
    trainer.num_generations = 4
    with pytest.raises(ValueError, match="num_generations"):
        rollout(prompts, trainer)


def test_kuhn_exploitability_through_openspiel() -> None:
    """The 12 information states as core shows them, and OpenSpiel's figures for known
    policies: the uniform one is exploitable by 11/24; an equilibrium (alpha = 1/3) by
    nothing, and there the first player's value is -1/18."""
    pytest.importorskip("pyspiel")
    from rollouts.training.selfplay import (
        kuhn_figures,
        kuhn_information_states,
        kuhn_start_policy,
        policy_table,
    )

    states = kuhn_information_states()
    assert len(states) == 12
    for s in states:
        card, bets = s.key[0], s.key[1:]
        assert s.seat == len(bets) % 2
        assert f"Player {s.seat} to move" in s.observation
        board = next(x for x in s.observation.splitlines() if x[:1].isdigit())
        assert board[0] == card  # the seat's own card, and nothing of the other's
        assert set(s.moves) == {"Pass", "Bet"}
    uniform = kuhn_figures({s.key: {"Pass": 1.0, "Bet": 1.0} for s in states})
    assert uniform["exploitability"] == pytest.approx(11 / 24)
    assert uniform["value_vs_random"] == pytest.approx(0.0)
    a = 1 / 3
    bet = {"0": a, "1": 0, "2": 3 * a, "0pb": 0, "1pb": a + 1 / 3, "2pb": 1}
    bet |= {"0b": 0, "1b": 1 / 3, "2b": 1, "0p": 1 / 3, "1p": 0, "2p": 1}
    nash = kuhn_figures({k: {"Bet": p, "Pass": 1 - p} for k, p in bet.items()})
    assert nash["exploitability"] == pytest.approx(0.0, abs=1e-9)
    assert nash["first_player_value"] == pytest.approx(-1 / 18)
    # always bet (and call): a best response folds the Jack and calls with the Queen, as
    # either seat, and wins (-1 + 0 + 2) / 3 = 1/3 a deal in each seat
    always = kuhn_figures({s.key: {"Bet": 1.0} for s in states})
    assert always["exploitability"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="every Kuhn information state"):
        policy_table({"0": {"Bet": 1.0}})
    start = kuhn_start_policy(0)  # the Kuhn student's target: one probability a state
    assert start == kuhn_start_policy(0) != kuhn_start_policy(1)
    assert set(start) == {s.key for s in states} and len(set(start.values())) > 3
    assert all(0.2 <= p <= 0.8 and (20 * p).is_integer() for p in start.values())


def test_model_probabilities_define_a_policy() -> None:
    """A model's move probabilities at each state (its well-formed replies' chances,
    normalised) make a table OpenSpiel reads; an untrained model spreads its mass."""
    pytest.importorskip("pyspiel")
    pytest.importorskip("transformers")
    from rollouts.training.selfplay import kuhn_figures, model_kuhn_policy
    from rollouts.training.tiny import build_model

    tok = _tokenizer()
    model = build_model(tok, seed=0, hidden_size=32, intermediate_size=64, num_hidden_layers=1)
    probs, least = model_kuhn_policy(model, tok)
    assert len(probs) == 12 and 0.0 < least < 1.0
    assert all(sum(p.values()) == pytest.approx(1.0) for p in probs.values())
    assert 0.0 <= kuhn_figures(probs)["exploitability"] <= 2.0
