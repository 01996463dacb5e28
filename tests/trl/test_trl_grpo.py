"""CI smoke of both GRPOTrainer hooks with the tiny local model: two GRPO
steps each, finite loss, games of at least two turns, one reward column per
core rubric component in the logs."""

from __future__ import annotations

import math
from typing import Any

import pytest

from adapters.trl import COMPONENTS
from core.episode import Episode
from core.tasks import Task
from rollouts.training.text_rollout import TextRollout, observation_suffix_ids


def _settings(mode: str, tmp: Any) -> Any:
    from rollouts.training.grpo import GRPOSettings

    return GRPOSettings(
        game="tictactoe",
        mode=mode,
        num_tasks=8,
        opponent="random",
        num_groups=2,
        num_generations=2,
        max_steps=2,
        learning_rate=1e-3,
        max_completion_length=512,
        max_new_tokens=16,
        cpu=True,
        output_dir=str(tmp / mode),
        logging_steps=1,
    )


def _check_logs(trainer: Any, extra_columns: set[str], min_turns: float) -> None:
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2
    for h in logs:
        assert math.isfinite(h["loss"])
        for name in COMPONENTS:
            assert f"rewards/reward_{name}/mean" in h
        for column in extra_columns:
            assert f"rewards/{column}/mean" in h
        assert h["game/turns"] >= min_turns


def test_rollout_func_two_steps(tiny_copy: tuple[Any, Any], tmp_path: Any) -> None:
    from rollouts.training.grpo import train_grpo

    model, tokenizer = tiny_copy
    rollout = TextRollout(max_new_tokens=16)
    trainer = train_grpo(
        _settings("rollout_func", tmp_path),
        model=model,
        tokenizer=tokenizer,
        rollout=rollout,
        progress=False,
    )
    _check_logs(trainer, set(), min_turns=2)  # every text game: >= 2 replies
    episodes = rollout.last_episodes
    assert len(episodes) == 4 and all(ep.done for ep in episodes)
    assert all(len(ep.events) >= 2 for ep in episodes)
    # The game really went through core: each reply replays to the same trajectory.
    for ep in episodes:
        assert Episode.from_trajectory(ep.to_dict()).to_dict() == ep.to_dict()


def test_env_factory_two_steps(tiny_copy: tuple[Any, Any], tmp_path: Any) -> None:
    from rollouts.training.grpo import train_grpo

    model, tokenizer = tiny_copy
    trainer = train_grpo(
        _settings("env_factory", tmp_path), model=model, tokenizer=tokenizer, progress=False
    )
    # A sampled reply without a tool call ends a rollout early (settled by core),
    # so the mean is lower than in text mode; some games go on for several calls.
    _check_logs(trainer, {"GameEnvironment_tictactoe"}, min_turns=1.25)
    envs = trainer.environments
    assert len(envs) == 4
    # The warmed-up model calls make_move: multi-turn games through the tool loop.
    tool_calls = [sum(e["kind"] == "tool" for e in env.episode.events) for env in envs]
    assert max(tool_calls) >= 2, tool_calls
    assert all(env.episode.done for env in envs)
    assert any(h.get("tools/call_frequency", 0) > 0 for h in trainer.state.log_history)


def test_rollout_masks_and_ids(tiny_copy: tuple[Any, Any]) -> None:
    """prompt_ids + completion_ids is one conversation: model tokens masked 1,
    observation tokens 0, every reply closed by the end-of-turn token."""
    from transformers import GenerationConfig

    model, tokenizer = tiny_copy
    tasks = [Task(game="tictactoe", seed=s, opponent="random") for s in range(3)]
    config = GenerationConfig(
        do_sample=True,
        max_new_tokens=16,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    played = TextRollout(16).play(model, tokenizer, tasks, config, [tokenizer.eos_token_id], 4096)
    eos = tokenizer.eos_token_id
    for ep, prompt, completion, mask in zip(
        played.episodes, played.prompt_ids, played.completion_ids, played.env_mask, strict=True
    ):
        assert len(completion) == len(mask)
        assert completion[-1] == eos
        # One model segment per reply, separated by observation segments.
        segments = sum(1 for i, m in enumerate(mask) if m == 1 and (i == 0 or mask[i - 1] == 0))
        assert segments == len(ep.events)
        text = tokenizer.decode(prompt + completion)
        for obs_turn in ep.to_dict()["events"][:-1]:
            assert obs_turn["board"].splitlines()[0] in text
        # The suffix of an observation is exactly what the mask marks 0 after a reply.
        first_obs_start = mask.index(0) if 0 in mask else len(mask)
        if len(ep.events) > 1:
            reply_end = first_obs_start
            if completion[reply_end - 1] != eos:
                reply_end += 1  # a cut reply: its closing eos is masked 0
            replay = Episode(ep.task)
            replay.reset()
            obs = replay.step(ep.events[0]["reply"]).observation
            suffix = observation_suffix_ids(tokenizer, obs)
            assert completion[reply_end : reply_end + len(suffix)] == suffix


def test_observation_suffix_is_a_user_turn(tiny_copy: tuple[Any, Any]) -> None:
    _, tokenizer = tiny_copy
    suffix = observation_suffix_ids(tokenizer, "Your move.")
    text = tokenizer.decode(suffix)
    assert text.startswith("\n<|im_start|>user\nYour move.<|im_end|>")
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("mode", ["env_factory", "rollout_func"])
def test_grpo_config_batch_spans_the_groups(mode: str, tmp_path: Any) -> None:
    from rollouts.training.grpo import GRPOSettings, grpo_config, make_train_tasks

    s = GRPOSettings(
        mode=mode,
        num_groups=4,
        num_generations=8,
        per_device_batch_size=8,
        num_tasks=16,
        cpu=True,
        output_dir=str(tmp_path),
    )
    args = grpo_config(s, progress=False)
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps == 32
    assert args.shuffle_dataset is False
    tasks = make_train_tasks(s)
    for block in range(0, 16, 4):  # each generation batch's 4 groups span [0, 1]
        probs = [t.random_move_prob for t in tasks[block : block + 4]]
        assert [int(p * 4) for p in probs] == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        grpo_config(GRPOSettings(mode="vllm", output_dir=str(tmp_path)), progress=False)


def test_gpu_defaults_give_256_games_per_update(tmp_path: Any) -> None:
    import argparse

    from rollouts.training.grpo import GPU_DEFAULTS, add_arguments, grpo_config, settings_from

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    s = settings_from(
        parser.parse_args(["--model", "m", "--gpu-defaults", "--output-dir", str(tmp_path)])
    )
    assert s.num_groups * s.num_generations >= 256
    assert s.bf16 and s.learning_rate == GPU_DEFAULTS["learning_rate"]
    # An explicit flag wins over the GPU defaults.
    s = settings_from(parser.parse_args(["--model", "m", "--gpu-defaults", "--num-groups", "64"]))
    assert s.num_groups == 64 and s.num_generations == 8
    s.cpu, s.bf16 = True, False
    s.output_dir = str(tmp_path)
    args = grpo_config(s, progress=False)
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps == 64 * 8


def test_generation_config_without_one_from_trl() -> None:
    """With vLLM, TRL builds no transformers generation config: the rollout
    function builds one from the trainer's sampling settings."""
    from types import SimpleNamespace

    from rollouts.training.text_rollout import _generation_config

    trainer = SimpleNamespace(
        temperature=0.7,
        top_p=0.9,
        top_k=5,
        eos_token_ids=[2],
        processing_class=SimpleNamespace(pad_token_id=0),
    )
    config = _generation_config(trainer)
    assert (config.do_sample, config.temperature, config.top_p, config.top_k) == (True, 0.7, 0.9, 5)
    assert config.eos_token_id == [2] and config.pad_token_id == 0
    trainer.generation_config = "trl's"
    assert _generation_config(trainer) == "trl's"


def test_reward_weights_travel_on_the_tasks_and_into_the_columns(tmp_path: Any) -> None:
    """``--reward-weights`` reaches every training task (so the environment's
    reward uses them) and, in rollout_func mode, TRL's per-component weights."""
    from rollouts.training.grpo import GRPOSettings, grpo_config, make_train_tasks

    s = GRPOSettings(
        mode="rollout_func",
        num_tasks=4,
        reward_weights="win=1,format=0.5",
        cpu=True,
        output_dir=str(tmp_path),
    )
    assert {t.weights()["format"] for t in make_train_tasks(s)} == {0.5}
    assert all(t.weights().get("margin", 0.0) == 0.0 for t in make_train_tasks(s))
    weights = dict(zip(COMPONENTS, grpo_config(s, progress=False).reward_weights, strict=True))
    assert weights == {"win": 1.0, "margin": 0.0, "format": 0.5, "invalid": 0.0}
    default = GRPOSettings(mode="rollout_func", cpu=True, output_dir=str(tmp_path))
    assert grpo_config(default, progress=False).reward_weights != list(weights.values())


def test_every_train_flag_says_what_it_does() -> None:
    """``gamebridge train grpo|recipe --help``: each flag has a help text (the
    settings field's docstring), and a bad weight is one usage line, exit 2."""
    import argparse

    from rollouts.training import grpo, recipe

    for module in (grpo, recipe):
        parser = argparse.ArgumentParser()
        module.add_arguments(parser)
        bare = [a.dest for a in parser._actions if a.option_strings and not a.help]
        assert bare == [], f"{module.__name__}: flags without help: {bare}"
    parser = argparse.ArgumentParser()
    grpo.add_arguments(parser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--model", "m", "--reward-weights", "win=abc"])
    assert exit_.value.code == 2


def test_decisions_per_game_trains_several_decisions_of_each_game(
    tiny_copy: tuple[Any, Any], tmp_path: Any
) -> None:
    """history="none", decisions_per_game=2: each block of two prompts plays one
    game and its two samples are two of that game's own decisions (distinct when
    it has two or more), scored with that game's reward."""
    from dataclasses import replace

    from rollouts.training.grpo import train_grpo

    model, tokenizer = tiny_copy
    rollout = TextRollout(max_new_tokens=16, history="none", decisions_per_game=2)
    trainer = train_grpo(
        replace(_settings("rollout_func", tmp_path), num_generations=4),
        model=model,
        tokenizer=tokenizer,
        rollout=rollout,
        progress=False,
    )
    assert all(math.isfinite(h["loss"]) for h in trainer.state.log_history if "loss" in h)
    assert len(rollout.last_episodes) == 4  # 2 groups x 4 samples / 2 decisions a game

    from transformers import GenerationConfig

    config = GenerationConfig(
        do_sample=True,
        max_new_tokens=16,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    tasks = [Task(game="tictactoe", seed=s, opponent="random") for s in range(4)]
    played = rollout.play(model, tokenizer, tasks, config, [tokenizer.eos_token_id], 0)
    assert played.decisions is not None
    slots = TextRollout.decisions_each(played, 3)
    assert len(slots.episodes) == 12
    for g, (ep, decisions) in enumerate(zip(played.episodes, played.decisions, strict=True)):
        block = list(
            zip(
                slots.prompt_ids[3 * g : 3 * g + 3],
                slots.completion_ids[3 * g : 3 * g + 3],
                strict=True,
            )
        )
        assert all(slot_ep is ep for slot_ep in slots.episodes[3 * g : 3 * g + 3])
        assert all(pair in decisions for pair in block)
        distinct = {(tuple(c), tuple(r)) for c, r in block}
        assert len(distinct) == min(3, len({(tuple(c), tuple(r)) for c, r in decisions}))
    with pytest.raises(ValueError, match="decisions_per_game"):
        TextRollout(16, history="game", decisions_per_game=2)
    with pytest.raises(ValueError, match="decisions_per_game"):
        TextRollout(16, history="none", decisions_per_game=0)
