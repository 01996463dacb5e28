"""The Wordle recipe: held-out answers no training game had, and its RL stage.

The recipe splits core's answers once (``answer_split``: a fixed shuffle, 20% held out);
its held-out games play only held-out answers, its teacher games and GRPO tasks only
training answers. A one-player game's RL is one stage, labelled without an opponent's
random-move range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.episode import Episode, start_state
from core.games.wordle import answers
from core.tasks import make_tasks
from rollouts.training.grpo import make_train_tasks
from rollouts.training.recipe import RecipeSettings, eval_sets, resolve, teacher_tasks
from rollouts.training.recipe.data import (
    answer_split,
    answers_of,
    rl_tasks,
    split_tasks,
    task_answer,
)
from rollouts.training.recipe.stages import answer_facts, stage_label, stage_settings


def test_the_answer_split_is_fixed_disjoint_and_holds_out_a_fifth() -> None:
    split = answer_split("wordle")
    assert split is not None
    assert not split.train & split.held_out
    assert split.train | split.held_out == set(answers())
    assert (len(split.train), len(split.held_out)) == (1742, 436)
    assert split.held_out != set(answers()[:436])  # shuffled, not the list's first words
    answer_split.cache_clear()
    again = answer_split("wordle")
    assert again is not None and again.held_out == split.held_out
    assert answer_split("tictactoe") is None


def test_start_state_is_the_draw_the_episode_makes() -> None:
    for task in make_tasks(20, seed=5, game="wordle"):
        episode = Episode(task)
        episode.reset()
        assert start_state(task).answer == episode.state.answer == task_answer(task)
    assert len(answers_of(make_tasks(20, seed=5, game="wordle"))) > 10  # answers vary
    (othello,) = make_tasks(1, seed=5, game="othello", opening_plies=0)
    episode = Episode(othello)
    episode.reset()
    assert start_state(othello) == episode.state


def test_wordle_tasks_take_their_side_of_the_split_deterministically() -> None:
    s = resolve(RecipeSettings(game="wordle", eval_games=80, teacher_games=80, rl_steps=3))
    split = answer_split("wordle")
    assert split is not None
    held_out = eval_sets(s)["solve"]
    teacher = teacher_tasks(s)
    assert (len(held_out), len(teacher)) == (80, 80)
    assert answers_of(held_out) <= split.held_out
    assert answers_of(teacher) <= split.train
    grpo = stage_settings(s, 1)
    trained = rl_tasks(s, grpo)
    assert len(trained) == grpo.num_tasks == 3 * s.num_groups
    assert answers_of(trained) <= split.train
    # the same tasks every time, and a prefix of core's own tasks, those it drops aside
    assert [t.seed for t in eval_sets(s)["solve"]] == [t.seed for t in held_out]
    made = make_tasks(400, seed=1_000_003 + s.seed, game="wordle")
    assert [t for t in made if task_answer(t) in split.held_out][:80] == held_out
    facts = answer_facts(s, {"solve": held_out})
    assert facts is not None and facts["disjoint"]
    assert facts["held_out"] == len(answers_of(held_out))
    assert facts["train"] >= len(answers_of(teacher))
    # the other games' tasks are core's, untouched
    ttt = resolve(RecipeSettings(teacher_games=30, rl_steps=2))
    assert rl_tasks(ttt, stage_settings(ttt, 1)) == make_train_tasks(stage_settings(ttt, 1))
    assert split_tasks("connect_four", "train", lambda n: make_tasks(n), 7) == make_tasks(7)
    assert answer_facts(ttt, eval_sets(ttt)) is None


def test_a_one_player_game_trains_one_stage_without_a_random_move_range() -> None:
    wordle = resolve(RecipeSettings(game="wordle"))
    assert wordle.rl_stages == "0-0"
    assert stage_label(wordle, 1, (0.0, 0.0)) == "RL1"
    assert resolve(RecipeSettings(game="wordle", rl_stages="0-1,0-1")).rl_stages == "0-1,0-1"
    ttt = resolve(RecipeSettings())
    assert stage_label(ttt, 1, (0.2, 0.7)) == "RL1 (0.2-0.7)"
    assert resolve(RecipeSettings(game="wordle")).rl_steps == 0  # the plan's, for now


@pytest.mark.timeout(600)
def test_a_tiny_wordle_recipe_with_rl_has_an_rl_row(tmp_path: Path) -> None:
    from rollouts.training.recipe import markdown, run_recipe

    s = RecipeSettings(
        game="wordle",
        quick=True,
        teacher_games=12,
        sft_steps=2,
        rl_steps=2,
        eval_games=6,
        num_groups=2,
        num_generations=2,
        hidden_size=32,
        num_layers=1,
        output_dir=str(tmp_path),
    )
    results = run_recipe(s)
    assert list(results["stages"]) == ["base", "sft", "rl1"]
    rl = results["stages"]["rl1"]
    assert rl["label"] == "RL1"
    assert len([h for h in results["logs"]["rl1"] if "loss" in h]) >= 1
    solve = rl["greedy"]["solve"]
    assert solve["games"] == 6 and "legal_move_rate" in solve and "mean_guesses" in solve
    assert results["answers"]["disjoint"] and results["answers"]["held_out"] >= 1
    page = markdown(results)
    assert "| RL1 |" in page and "mean guesses" in page
    assert "on held-out answers disjoint from the training answers" in page
    assert "one stage, no opponent to stage" in page
    assert json.loads((tmp_path / "results.json").read_text())["answers"] == results["answers"]
