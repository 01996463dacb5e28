"""Constrained decoding of legal moves (``gamebridge train recipe --constrained-decoding``):
the token trie of the legal replies core lists, the recipe's generation with it (held-out
play, the exact evaluation's replies, the GRPO games) and the table that says so."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

import pytest

from core.parsing import format_reply
from rollouts.model.constrained import ReplyConstraint, ReplyTries


class CharTokenizer:
    """A tokenizer of one token per character (ids from 10), end of turn 1: the trie's
    arithmetic without a trained vocabulary."""

    eos_token_id = 1

    def __call__(self, texts: list[str], add_special_tokens: bool = False) -> dict[str, Any]:
        return {"input_ids": [[10 + ord(c) - ord("a") for c in t] for t in texts]}


def allowed_next(constraint: ReplyConstraint, rows: list[list[int]], vocab: int = 40) -> list[Any]:
    """The tokens each row may take next (None: the row is left unconstrained)."""
    import torch

    scores = torch.zeros(len(rows), vocab)
    out = constraint(torch.tensor(rows), scores)
    return [
        None if bool((out[i] == 0).all()) else (out[i] == 0).nonzero().flatten().tolist()
        for i in range(len(rows))
    ]


def test_the_trie_allows_exactly_the_continuations_of_each_rows_replies() -> None:
    tries = ReplyTries(CharTokenizer())
    a, b, c, d = 10, 11, 12, 13  # "a" .. "d"
    # Row 0 may say "ab" or "ac", row 1 "b" or "bd", row 2 anything; prompts padded to 2.
    constraint = tries.constraint([["ab", "ac"], ["b", "bd"], None], 2, 8)
    assert allowed_next(constraint, [[0, 5], [5, 6], [5, 5]]) == [[a], [b], None]
    assert allowed_next(constraint, [[0, 5, a], [5, 6, b], [5, 5, 9]]) == [[b, c], [1, d], None]
    # After "ab" only the end of turn; after it the row is done and left alone.
    assert allowed_next(constraint, [[0, 5, a, b], [5, 6, b, d], [5, 5, 9, 9]]) == [
        [1],
        [1],
        None,
    ]
    assert allowed_next(constraint, [[0, 5, a, b, 1], [5, 6, b, 1, 0], [5, 5, 9, 9, 9]]) == [
        None,
        None,
        None,
    ]
    # Where the token limit would cut a longer reply, the one that still fits is taken.
    short = tries.constraint([["bd", "abcd"]], 0, 3)
    assert allowed_next(short, [[]]) == [[b]]
    assert tries.trie(["ab", "ac"]) is tries.trie(["ab", "ac"])  # built once per set
    with pytest.raises(ValueError, match="at least one reply"):
        tries.trie([])


@pytest.fixture(scope="module")
def untrained() -> tuple[Any, Any]:
    """An untrained tiny model and a tokenizer trained on a few teacher games of two games:
    its replies are noise, never a move."""
    from core.tasks import make_tasks
    from core.teacher import make_teacher
    from rollouts.training.recipe import decisions, play_teacher, sft_rows
    from rollouts.training.tiny import DECISION_CHAT_TEMPLATE, build_model, build_tokenizer

    rows = []
    for game in ("tictactoe", "connect_four"):
        games = play_teacher(make_teacher(game), make_tasks(4, seed=1, game=game))
        rows += sft_rows(decisions(games, {"win", "draw", "loss"}), 0, 0)
    tokenizer = build_tokenizer(rows, 300, DECISION_CHAT_TEMPLATE)
    model = build_model(
        tokenizer, seed=0, hidden_size=32, intermediate_size=64, num_hidden_layers=1
    )
    return model.eval(), tokenizer


def play(model: Any, tokenizer: Any, game: str, n: int, constrained: bool, temp: float) -> Any:
    import torch

    from core.tasks import make_tasks
    from rollouts.training.recipe import generation_config
    from rollouts.training.text_rollout import TextRollout

    rollout = TextRollout(12, history="none", constrained=constrained)
    torch.manual_seed(0)
    config = generation_config(tokenizer, 12, temp)
    tasks = make_tasks(n, seed=5, game=game, opening_plies=0)
    return rollout.play(model, tokenizer, tasks, config, [tokenizer.eos_token_id], 0)


@pytest.mark.parametrize("game", ["tictactoe", "connect_four"])
def test_an_untrained_model_constrained_plays_only_legal_moves(
    untrained: tuple[Any, Any], game: str
) -> None:
    from rollouts.training.recipe import summarize

    model, tokenizer = untrained
    for temp in (0.0, 1.0):
        free = summarize(play(model, tokenizer, game, 6, False, temp).episodes)
        assert free["legal_move_rate"] < 0.5  # noise, without the constraint
        played = play(model, tokenizer, game, 6, True, temp)
        held = summarize(played.episodes)
        assert held["legal_move_rate"] == 1.0 and held["format_rate"] == 1.0
        assert held["replies"] >= 6 * 3
        for ep in played.episodes:  # each reply is exactly a canonical legal reply
            assert all(e["reply"] == format_reply(e["move"]) for e in ep.events)
        assert all(ep.invalid_moves == 0 for ep in played.episodes)


def test_wordle_guesses_constrained_are_allowed_words(untrained: tuple[Any, Any]) -> None:
    from core.games.wordle import allowed

    model, tokenizer = untrained
    words = set(allowed())
    played = play(model, tokenizer, "wordle", 2, True, 1.0)
    guesses = [e["move"] for ep in played.episodes for e in ep.events]
    assert len(guesses) >= 2 and all(g in words for g in guesses)
    assert all(e["error"] is None for ep in played.episodes for e in ep.events)


def test_off_it_generates_as_plain_generate_does(untrained: tuple[Any, Any]) -> None:
    """Without the option the replies are ``model.generate``'s own, token for token,
    greedy and sampled (the recipe's generation before the option existed)."""
    import torch

    from rollouts.training.recipe import generation_config
    from rollouts.training.text_rollout import TextRollout, _cut, _left_padded

    model, tokenizer = untrained
    rollout = TextRollout(8, history="none")
    from core.episode import Episode
    from core.tasks import make_tasks

    observations = [Episode(t).reset() for t in make_tasks(4, seed=2, game="connect_four")]
    contexts = [rollout.decision_prompt(tokenizer, o) for o in observations[:3]]
    contexts.append(contexts[0][:-3])  # rows of different lengths: left padding
    eos = [tokenizer.eos_token_id]
    for temp in (0.0, 1.0):
        config = generation_config(tokenizer, 8, temp)
        torch.manual_seed(3)
        ours = rollout.generate(model, tokenizer, contexts, config, eos)
        torch.manual_seed(3)
        ids, mask = _left_padded(contexts, tokenizer.pad_token_id, model.device)
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config)
        plain = [_cut(r, eos, 8) for r in out[:, ids.shape[1] :].tolist()]
        assert ours == plain


def test_exact_replies_and_grpo_games_are_constrained(untrained: tuple[Any, Any]) -> None:
    """The exact evaluation's replies (``model_replies_to``) and the GRPO loops (groups of
    one position; a game as one token sequence) keep to the legal replies too."""
    from core.episode import Episode
    from core.players import legal_replies
    from core.tasks import make_tasks
    from rollouts.training.recipe import generation_config, model_replies_to
    from rollouts.training.recipe.evaluation import summarize
    from rollouts.training.text_rollout import TextRollout

    model, tokenizer = untrained
    tasks = make_tasks(4, seed=7, game="tictactoe")
    episodes = [Episode(t) for t in tasks]
    observations = [ep.reset() for ep in episodes]
    replies = model_replies_to(model, tokenizer, 8, game="tictactoe")(observations)
    assert all(
        r in legal_replies(ep.game, o)
        for r, ep, o in zip(replies, episodes, observations, strict=True)
    )
    free = model_replies_to(model, tokenizer, 8)(observations)
    assert not any(
        r in legal_replies(ep.game, o)
        for r, ep, o in zip(free, episodes, observations, strict=True)
    )
    config = generation_config(tokenizer, 8, 1.0)
    eos = [tokenizer.eos_token_id]
    branches = TextRollout(8, history="none", group="position", constrained=True)
    played = branches.play_branches(model, tokenizer, tasks[:2], 2, config, eos)
    assert summarize(played.episodes)["legal_move_rate"] == 1.0
    from trl.chat_template_utils import qwen2_5_chat_template

    decision = tokenizer.chat_template
    tokenizer.chat_template = qwen2_5_chat_template  # history="game": a prefix-preserving one
    try:
        whole = TextRollout(8, history="game", constrained=True)
        played = whole.play(model, tokenizer, tasks[:2], config, eos, 512)
    finally:
        tokenizer.chat_template = decision
    assert summarize(played.episodes)["legal_move_rate"] == 1.0


def test_vllm_generation_refuses_the_constraint() -> None:
    from rollouts.training.text_rollout import TextRollout

    rollout = TextRollout(8, constrained=True)
    rollout.vllm = object()
    with pytest.raises(ValueError, match="constrained decoding needs transformers generate"):
        rollout.generate(None, None, [[1]], None, [1], [["<move>0</move>"]])
    with pytest.raises(ValueError, match="constrained must be True or False"):
        TextRollout(8, constrained=1)  # type: ignore[arg-type]


def test_the_flag_parses_is_kept_and_the_table_says_so() -> None:
    from rollouts.training.recipe import RecipeSettings, add_arguments, markdown, resolve
    from rollouts.training.recipe.evaluation import summarize
    from rollouts.training.recipe.report import CONSTRAINED

    p = argparse.ArgumentParser()
    add_arguments(p)
    assert p.parse_args(["--constrained-decoding"]).constrained_decoding is True
    assert p.parse_args([]).constrained_decoding is False

    def results(on: bool) -> dict[str, Any]:
        s = resolve(RecipeSettings(quick=True, constrained_decoding=on))
        empty = {"random": summarize([]), "optimal": summarize([])}
        return {
            "settings": asdict(s),
            "timing": {
                "total_wall_seconds": 1.0,
                "process_cpu_seconds": 1.0,
                "cpus": 2,
                "load_average_1_5_15": {},
            },
            "model": {"parameters": 1, "vocab": 1, "sft_rows": 1, "prompt_tokens_mean": 1},
            "teacher": {"name": "t", "kept": 1, "games": 1, "decisions": 1, "held_out": empty},
            "stages": {"sft": {"label": "SFT", "greedy": empty, "sampled": empty}},
        }

    on, off = markdown(results(True)), markdown(results(False))
    assert results(True)["settings"]["constrained_decoding"] is True  # results.json's settings
    assert "--constrained-decoding`" in on and CONSTRAINED[1:] in on
    assert "Greedy decoding, constrained to legal moves:" in on
    assert "Sampled, constrained to legal moves (temperature 1):" in on
    assert "| legal moves (constrained) | format |" in on
    assert "constrained" not in off and "Greedy decoding:" in off

    from rollouts.training.recipe import line

    entry = {"label": "SFT", "greedy": {"random": summarize([])}}
    assert "constrained" not in line("sft", entry)
    assert "replies restricted to legal moves" in line("sft", {**entry, "constrained": True})


def test_serve_policy_can_constrain_a_checkpoints_replies_and_says_so(
    untrained: tuple[Any, Any], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve-policy --model-path --constrained-decoding``: the transformers backend's
    replies (text and tool calls) are legal replies of the conversation's game; its
    description (``/health``, the start line) names the option."""
    import json

    from core.episode import Episode
    from core.players import legal_replies
    from core.tasks import make_tasks
    from rollouts.cli import main
    from rollouts.model.policy_server import RequestError
    from rollouts.model.transformers_backend import TransformersModel
    from rollouts.training.tiny import save_tiny

    path = save_tiny(*untrained, tmp_path / "model")
    held = TransformersModel(path, constrained=True, max_new_tokens=8)
    free = TransformersModel(path, max_new_tokens=8)
    assert held.policy.endswith("constrained to legal moves") and "constrained" not in free.policy
    for game in ("tictactoe", "connect_four"):
        ep = Episode(make_tasks(1, seed=4, game=game)[0])
        messages = [
            {"role": "system", "content": ep.system_prompt},
            {"role": "user", "content": ep.reset()},
        ]
        legal = legal_replies(ep.game, messages[-1]["content"])
        assert held.answer(messages, False).text in legal
        assert free.answer(messages, False).text not in legal
        call = json.loads(held.answer(messages, True).arguments)
        assert f"<move>{call['move']}</move>" in legal
    with pytest.raises(RequestError, match="cannot list the legal moves"):
        held.answer([{"role": "user", "content": "hello"}], False)
    assert main(["serve-policy", "--constrained-decoding"]) == 2
    assert "--constrained-decoding needs --model-path" in capsys.readouterr().err
