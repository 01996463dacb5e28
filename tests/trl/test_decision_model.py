"""A recipe checkpoint plays behind any server: its chat template shows one decision.

``DECISION_CHAT_TEMPLATE`` renders a framework's whole chat (system prompt, every
turn, text or tool mode) as the last observation alone, token for token the prompt
the recipe trains on; so ``serve-policy --context chat`` (or vLLM, or any server that
applies the checkpoint's template) answers as ``--context observation`` does. And the
training commands continue such a checkpoint in its own format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import conversation as chat
from core.episode import Episode
from core.parsing import format_reply
from core.tasks import make_tasks


def _decision_tokenizer(game: str = "tictactoe") -> Any:
    from rollouts.training.tiny import DECISION_CHAT_TEMPLATE, build_tokenizer

    rows = []
    for task in make_tasks(6, seed=3, game=game):
        ep = Episode(task)
        obs = ep.reset()
        rows.append(
            {"messages": [{"role": "user", "content": obs}, chat.assistant_text("<move>4</move>")]}
        )
    return build_tokenizer(rows, 400, DECISION_CHAT_TEMPLATE)


def _played_chats(game: str = "tictactoe") -> list[list[dict[str, Any]]]:
    """Whole chats as the frameworks send them (text and tool mode), mid-game."""
    chats = []
    for tools in (False, True):
        for task in make_tasks(4, seed=11, game=game, opponent="random"):
            ep = Episode(task)
            ep.reset()
            for _ in range(2):
                if ep.done:
                    break
                move = ep.game.move_to_text(ep.state, ep.game.legal_moves(ep.state)[0])
                if tools:
                    ep.step_move(move)
                else:
                    ep.step(format_reply(move))
            if not ep.done:
                chats.append(chat.messages(ep.to_dict()))
    return chats


GAMES = ("tictactoe", "connect_four", "othello")
"""Two-player games a recipe trains (a chat per game: its system prompt and observations)."""


@pytest.mark.parametrize("game", GAMES)
def test_the_whole_chat_renders_as_the_last_observation(game: str) -> None:
    pytest.importorskip("transformers")
    from rollouts.training.tiny import PLAIN_CHAT_TEMPLATE, is_decision_model

    tok = _decision_tokenizer(game)
    assert is_decision_model(tok)
    chats = _played_chats(game)
    assert any(m["role"] == "tool" for c in chats for m in c)  # tool mode is covered
    for messages in chats:
        last = next(m for m in reversed(messages) if m["role"] in ("user", "tool"))
        whole = tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=False)
        alone = tok.apply_chat_template(
            [{"role": "user", "content": last["content"]}],
            add_generation_prompt=True,
            return_dict=False,
        )
        assert list(whole) == list(alone)
        assert messages[0]["role"] == "system" and len(messages) > 2
    # an SFT row (observation, reply) renders as the plain template renders it
    row = [{"role": "user", "content": "board"}, {"role": "assistant", "content": "<move>4</move>"}]
    plain = tok.apply_chat_template(row, tokenize=False)
    tok.chat_template = PLAIN_CHAT_TEMPLATE
    assert tok.apply_chat_template(row, tokenize=False) == plain
    assert not is_decision_model(tok)


@pytest.mark.parametrize("game", GAMES)
def test_served_with_the_whole_chat_it_answers_as_with_the_observation(
    tmp_path: Path, game: str
) -> None:
    """The policy server's model backend: ``--context chat`` and ``--context observation``
    give the same reply to every chat (greedy), text and tool mode. (Whole games through a
    framework against the recipe's own evaluation: tests/trl/test_served_back.py.)"""
    pytest.importorskip("transformers")
    from rollouts.model.transformers_backend import TransformersModel
    from rollouts.training.tiny import build_model, save_tiny

    tok = _decision_tokenizer(game)
    save_tiny(build_model(tok, seed=5, hidden_size=32, intermediate_size=64), tok, tmp_path)
    by_chat = TransformersModel(tmp_path, context="chat", max_new_tokens=6)
    by_observation = TransformersModel(tmp_path, context="observation", max_new_tokens=6)
    for messages in _played_chats(game):
        for use_tool in (False, True):
            a = by_chat.answer(messages, use_tool)
            b = by_observation.answer(messages, use_tool)
            assert (a.text, a.arguments, a.prompt_tokens) == (b.text, b.arguments, b.prompt_tokens)


def test_training_commands_continue_a_decision_model_in_its_format() -> None:
    pytest.importorskip("transformers")
    from rollouts.training.grpo import resolve_history
    from rollouts.training.sft import training_rows

    tok = _decision_tokenizer()
    assert resolve_history("auto", tok) == "none"
    assert resolve_history("game", tok) == "game"
    messages = _played_chats()[0]
    rows = training_rows([{"messages": messages, "game": "tictactoe"}], decision_model=True)
    assert [r["messages"][0]["role"] for r in rows] == ["user"] * len(rows)
    assert [r["messages"][1]["content"] for r in rows] == [
        m["content"] for m in messages if m["role"] == "assistant"
    ]
    whole = training_rows([{"messages": messages, "game": "tictactoe"}], decision_model=False)
    assert len(whole) == 1 and whole[0]["messages"][0]["role"] == "system"


def test_rollouts_generate_through_a_vllm_trainer() -> None:
    """Under ``use_vllm`` the rollout asks the trainer's own generation (TRL's
    ``_generate_single_turn``: weight sync, colocate or server) for every turn's replies,
    each cut at its end-of-turn token; games still go through ``core.Episode``. A
    stand-in trainer here (no GPU, no vLLM on these machines)."""
    pytest.importorskip("transformers")
    from rollouts.training.text_rollout import TextRollout

    tok = _decision_tokenizer()
    move = tok("<move>4</move>", add_special_tokens=False)["input_ids"]
    asked: list[int] = []

    class VLLMTrainer:
        use_vllm = True

        def _generate_single_turn(
            self, prompt_ids: list[list[int]], images: Any, fields: Any, n: int
        ) -> tuple[list[list[int]], None]:
            asked.append(len(prompt_ids))
            return [move + [tok.eos_token_id, 7, 7] for _ in prompt_ids], None

    rollout = TextRollout(8, history="none")
    rollout.vllm = VLLMTrainer()
    tasks = make_tasks(3, seed=5, game="tictactoe", opponent="random")
    played = rollout.play(None, tok, tasks, None, [tok.eos_token_id], 64)
    assert asked and asked[0] == 3
    assert all(ep.events[0]["move"] == "4" for ep in played.episodes)
    assert all(reply[-1] == tok.eos_token_id for _, reply in (played.decisions or [[]])[0])


def test_a_position_group_compares_replies_at_one_position() -> None:
    """``TextRollout(group="position")``: each group's rows share one context (a position
    of the trunk game, reached again through ``Episode.step``), each row's episode played
    on from there; a stand-in generator answers (a different cell per call)."""
    pytest.importorskip("transformers")
    from rollouts.training.text_rollout import TextRollout

    tok = _decision_tokenizer()
    calls = {"n": 0}

    class Generator:
        use_vllm = True

        def _generate_single_turn(
            self, prompt_ids: list[list[int]], images: Any, fields: Any, n: int
        ) -> tuple[list[list[int]], None]:
            out = []
            for _ in prompt_ids:
                calls["n"] += 1
                cell = tok(f"<move>{calls['n'] % 9}</move>", add_special_tokens=False)
                out.append(cell["input_ids"] + [tok.eos_token_id])
            return out, None

    rollout = TextRollout(8, history="none", group="position")
    rollout.vllm = Generator()
    tasks = [
        t for t in make_tasks(2, seed=9, game="tictactoe", opponent="random") for _ in range(4)
    ]
    played = rollout.play_branches(None, tok, tasks, 4, None, [tok.eos_token_id])
    assert len(played.episodes) == len(played.prompt_ids) == 8
    for g in (0, 4):
        group = played.prompt_ids[g : g + 4]
        assert all(p == group[0] for p in group)  # one position per group
        assert all(ep.done for ep in played.episodes[g : g + 4])
    assert len({tuple(r) for r in played.completion_ids[:4]}) > 1  # replies compared
    with pytest.raises(ValueError, match="whole groups"):
        rollout.play_branches(None, tok, tasks[:3], 4, None, [tok.eos_token_id])


@pytest.mark.parametrize("sample", [False, True])
def test_a_shared_prefill_gives_the_replies_plain_generate_gives(
    tiny: tuple[Any, Any], sample: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that asks a few positions many times (a group's games early on) is
    prefilled once per distinct position; the replies, greedy or sampled from one seed,
    are token for token those of ``generate`` over the whole batch."""
    import torch

    from rollouts.training import text_rollout as T
    from rollouts.training.recipe.evaluation import generation_config

    model, tok = tiny
    rollout = T.TextRollout(16, history="none")
    tasks = make_tasks(3, seed=2, game="tictactoe", opponent="random")
    prompts = []
    for task in tasks:
        episode = Episode(task)
        episode.reset()
        prompts.append(rollout.decision_prompt(tok, episode.observation))
    batch = [prompts[i % 3] for i in range(24)] + [prompts[0][:-1]]  # one shorter row too
    config = generation_config(tok, 16, 1.0 if sample else 0.0)
    assert T._shared_prefill(model, batch, tok.pad_token_id) is not None
    replies = []
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(T, "_shared_prefill", lambda *a: None)
        torch.manual_seed(3)
        replies.append(rollout.generate(model, tok, batch, config, [tok.eos_token_id]))
    assert replies[0] == replies[1]
    assert len({tuple(r) for r in replies[0]}) > 1


@pytest.mark.parametrize("history", ["none", "game"])
def test_exploration_plays_cores_drawn_moves_in_sampled_games_only(
    tiny: tuple[Any, Any], history: str
) -> None:
    """``TextRollout(explore_epsilon=1)``: every decision of a sampled game is core's
    exploration move, written as a reply that ends the turn, so every game is legal
    throughout whatever the untrained model says; the draws repeat from the task seeds;
    greedy generation (evaluation) never explores."""
    from rollouts.training.recipe.evaluation import generation_config
    from rollouts.training.text_rollout import TextRollout

    model, tok = tiny
    tasks = make_tasks(4, seed=2, game="tictactoe", opponent="random")
    eos = [tok.eos_token_id]

    def config(sample: bool) -> Any:
        return generation_config(tok, 8, 1.0 if sample else 0.0)

    exploring = TextRollout(8, history=history, explore_epsilon=1.0)
    played = [exploring.play(model, tok, tasks, config(True), eos, 512) for _ in range(2)]
    moves = [[[ev["move"] for ev in ep.events] for ep in p.episodes] for p in played]
    assert moves[0] == moves[1]
    for ep in played[0].episodes:
        assert ep.done and ep.events
        assert all(ev["error"] is None for ev in ep.events)
    plain = TextRollout(8, history=history).play(model, tok, tasks, config(False), eos, 512)
    greedy = exploring.play(model, tok, tasks, config(False), eos, 512)
    assert greedy.completion_ids == plain.completion_ids
    assert any(ev["error"] is not None for ep in plain.episodes for ev in ep.events)
    with pytest.raises(ValueError, match="explore_epsilon"):
        TextRollout(8, explore_epsilon=1.5)
