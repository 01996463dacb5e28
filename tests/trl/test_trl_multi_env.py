"""TRL 1.16's multi-environment mode: a dict ``environment_factory`` and an
``environment`` column, one GRPO run over Tic-Tac-Toe and Connect Four rows together
(the tiny local model, CPU, two steps)."""

from __future__ import annotations

import math
from typing import Any

from adapters.trl import (
    COMPONENTS,
    environment_factories,
    make_dataset,
    reward_functions,
    reward_weights,
)
from core.episode import Episode
from core.tasks import Task


def test_rows_name_their_game_and_each_factory_its_schema() -> None:
    from transformers.utils import get_json_schema

    tasks = [Task(game="tictactoe", seed=1), Task(game="connect_four", seed=2)]
    dataset = make_dataset(tasks, environment=True)
    assert dataset["environment"] == ["tictactoe", "connect_four"]
    factories = environment_factories(["tictactoe", "connect_four", "tictactoe"])
    assert list(factories) == ["tictactoe", "connect_four"]
    for game, factory in factories.items():
        schema = get_json_schema(factory().make_move)
        assert schema == Episode(Task(game=game)).tool_schema


def test_grpo_run_over_two_games_at_once(tiny_copy: tuple[Any, Any], tmp_path: Any) -> None:
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer = tiny_copy
    games = ["tictactoe", "connect_four"]
    # Rows alternate games; each generation batch (2 groups x 2 generations) holds both.
    tasks = [Task(game=games[i % 2], seed=i, opponent="random") for i in range(4)]
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        learning_rate=1e-3,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=384,
        shuffle_dataset=False,
        reward_weights=reward_weights("env_factory"),
        max_tool_calling_iterations=max(Task(game=g).turn_limit() for g in games) + 1,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_functions(),
        args=args,
        train_dataset=make_dataset(tasks, environment=True),
        processing_class=tokenizer,
        environment_factory=environment_factories(games),
    )
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2
    for h in logs:
        assert math.isfinite(h["loss"])
        for name in COMPONENTS:
            assert f"rewards/reward_{name}/mean" in h
        # TRL's own column per environment class (the rubric total of its games)
        for game in games:
            assert math.isfinite(h[f"rewards/GameEnvironment_{game}/mean"])
    played = {env.episode.task.game: env for env in trainer.environments}
    assert set(played) == set(games)  # the last batch played both games
    for env in trainer.environments:
        assert type(env).__name__ == f"GameEnvironment_{env.episode.task.game}"
        assert env.episode.done
        assert Episode.from_trajectory(env.episode.to_dict()).to_dict() == env.episode.to_dict()
