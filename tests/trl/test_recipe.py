"""``gamebridge train recipe``: a reduced run of every stage, and its parts.

The reduced run (``--quick`` budgets, smaller still) must show SFT raising the
legal-move rate and the win rate against a random opponent well above the
untrained model's, measured by the recipe's own held-out evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rollouts.training.recipe import (
    MODEL_CONFIG,
    RecipeSettings,
    decisions,
    eval_sets,
    exact_evaluation,
    exhaustive_teacher_games,
    hard_phase,
    interval95,
    marker,
    model_config,
    parse_stages,
    play_teacher,
    resolve,
    sft_rows,
    stage_learning_rates,
    teacher_replies,
    teacher_replies_to,
    teacher_tasks,
    write_docs,
)


@pytest.mark.timeout(2400)  # a few minutes idle; far more on a loaded shared machine
def test_reduced_recipe_sft_learns_to_play_and_rl_goes_beyond_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The weak teacher's recipe, reduced (the 0.37M model, 400 SFT steps, 6 GRPO updates
    of 256 games): SFT makes the untrained model play, then RL raises the exact non-loss
    against the optimal opponent above the SFT student's. Measured at these settings:
    SFT 62.26%, then 72.66% after 6 updates (76.19% after 24); with 8 games an update
    (``--quick``'s batch) the same RL took it to 6.67%, so the batch here is the recipe's."""
    from rollouts.training.recipe import run_recipe

    docs = tmp_path / "doc.md"
    marks = marker("tictactoe-weak"), marker("tictactoe-weak", end=True)
    docs.write_text(f"before\n{marks[0]}\nold\n{marks[1]}\nafter\n")
    results = run_recipe(
        RecipeSettings(
            teacher="weak",
            teacher_games=1000,
            sft_steps=400,
            rl_stages="0-0.25",
            rl_steps=6,
            eval_every=3,
            eval_games=40,
            sampled=False,
            hidden_size=96,  # the 0.37M model: half the cost a step of the recipe's 0.83M
            num_layers=3,
            threads=1,
            output_dir=str(tmp_path / "run"),
            docs=str(docs),
        )
    )
    stages = results["stages"]
    base, sft = stages["base"]["greedy"], stages["sft"]["greedy"]
    # An untrained model never plays a legal move; SFT makes it play.
    assert base["random"]["legal_move_rate"] < 0.05
    assert sft["random"]["legal_move_rate"] > 0.9
    assert sft["random"]["win_rate"] > base["random"]["win_rate"] + 0.3
    # RL goes beyond the SFT student against the optimal opponent, exactly.
    before = stages["sft"]["exact"]["optimal"]["non_loss_rate"]
    after = stages["rl1"]["exact"]["optimal"]["non_loss_rate"]
    assert after >= before + 0.04, (before, after)
    curve = results["curve"]["rl1"]
    assert [p["update"] for p in curve] == [3, 6]
    assert curve[-1]["optimal"] == stages["rl1"]["exact"]["optimal"]  # the same model
    assert len(stages["sft"]["exact"]["optimal"]["sides"]) == 2
    out = tmp_path / "run"
    for name in ("results.md", "results.json", "plot.svg", "model/config.json", "sft-model"):
        assert (out / name).exists(), name
    saved = json.loads((out / "results.json").read_text())
    assert saved["stages"]["sft"]["greedy"]["random"]["games"] == 40
    text = docs.read_text()
    assert "old" not in text and "| SFT |" in text and text.endswith("after\n")
    assert "Learning curve" in text and "first / second" in text
    # the machine the figures' floating point depends on is named beside the wall time
    assert f"torch {saved['timing']['machine']['torch']}" in text
    # --no-progress (the default) keeps the log to the run's figures: no dataset bars
    # (``datasets`` drew a bar per tokenizing pass of every SFT and GRPO stage)
    err = capfd.readouterr().err
    assert "Tokenizing train dataset" not in err and "examples/s" not in err


def test_teacher_games_keep_wins_and_draws() -> None:
    s = resolve(RecipeSettings(teacher_games=40, quick=True))
    tasks = teacher_tasks(s)
    assert {t.model_player for t in tasks} == {0, 1}
    probs = [t.random_move_prob for t in tasks]
    assert min(probs) < 0.1 and max(probs) > 0.9
    games = play_teacher(__import__("core.teacher").teacher.make_teacher("tictactoe"), tasks)
    assert all(g.result in ("win", "draw") for g in games)  # the teacher never loses here
    pairs = decisions(games, {"win", "draw"})
    assert len(pairs) == sum(len(g.events) for g in games)
    obs, reply = pairs[0]
    assert "Your move." in obs and reply.startswith("<move>")
    rows = sft_rows(pairs, 2, 0)
    assert len(rows) == 2 * len(set(pairs)) + len(pairs)
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant"]


def test_exhaustive_games_answer_every_opponent_reply() -> None:
    """The teacher against every reply: never loses, and every position the
    teacher reaches has each opponent move answered (as O: all 9 openings)."""
    from core.teacher import make_teacher

    s = resolve(RecipeSettings())
    assert s.exhaustive == "yes"  # Tic-Tac-Toe's default
    games = exhaustive_teacher_games(make_teacher("tictactoe"), s)
    assert games and all(g.done and g.result in ("win", "draw") for g in games)
    as_o = [g for g in games if g.task.model_player == 1]
    assert {g.opponent_first[0] for g in as_o} == {str(c) for c in range(9)}
    # Each position after a teacher move of X is continued by every legal O reply.
    seconds: dict[str, set[str]] = {}
    for g in games:
        if g.task.model_player == 0 and len(g.events) > 1:
            first = g.events[0]
            seconds.setdefault(str(first.reply), set()).add(g.events[1].observation.split(".")[0])
    assert seconds and all(len(v) == 8 for v in seconds.values())
    sampled = decisions(play_teacher(make_teacher("tictactoe"), teacher_tasks(s)[:200]), {"win"})
    every = decisions(games, {"win", "draw"})
    assert {o for o, _ in sampled} <= {o for o, _ in every}  # the sampled games are covered
    rows = sft_rows(sampled, 2, 0, coverage=every)
    assert len(rows) == 2 * len(set(every) | set(sampled)) + len(sampled)


def test_teacher_replies_are_read_as_core_reads_a_reply() -> None:
    pairs = [
        ("board a", "<move>4</move>"),
        ("board a", "<move> 0 </move>"),
        ("board b", "<move>8</move>"),
    ]
    assert teacher_replies(pairs) == {"board a": {"4", "0"}, "board b": {"8"}}


@pytest.mark.timeout(600)
def test_hard_phase_finds_the_students_errors_and_trains_on_them(tmp_path: Path) -> None:
    """An untrained model gets every board wrong (its replies are not moves): the
    phase adds each wrong decision ``hard_repeats`` times and trains on the mix."""
    from core.teacher import make_teacher
    from rollouts.training.recipe import Clock, kept_results
    from rollouts.training.tiny import PLAIN_CHAT_TEMPLATE, build_model, build_tokenizer

    s = resolve(
        RecipeSettings(
            teacher_games=6, quick=True, hard_steps=2, sft_batch_size=4, output_dir=str(tmp_path)
        )
    )
    games = play_teacher(make_teacher("tictactoe"), teacher_tasks(s))
    pairs = decisions(games, kept_results(s.game))
    rows = sft_rows(pairs, 1, 0)
    tokenizer = build_tokenizer(rows, 256, PLAIN_CHAT_TEMPLATE)
    model = build_model(
        tokenizer, seed=0, hidden_size=32, intermediate_size=64, num_hidden_layers=1
    )
    results: dict = {"logs": {}}
    hard_phase(s, model, tokenizer, rows, pairs, results, Clock())
    hard = results["hard"]
    boards = len({o for o, _ in pairs})
    assert hard["boards"] == boards and hard["wrong_before"] == boards
    assert hard["rows_added"] == s.hard_repeats * len(set(pairs))
    assert hard["steps"] == 2 and "sft-hard" in results["logs"]


def test_exact_evaluation_agrees_with_the_teachers_own_chances() -> None:
    """Two computations of one figure: the teacher's expected score against random
    play (core.teacher's recursion) and its branches played through core.Episode."""
    from core.games import make_game
    from core.teacher import make_teacher

    s = resolve(RecipeSettings())
    teacher, game = make_teacher("tictactoe"), make_game("tictactoe")
    start = game.initial_state()
    as_x = max(teacher.move_chances(game, start).values())
    firsts = game.legal_moves(start)
    as_o = sum(max(teacher.move_chances(game, game.apply(start, m)).values()) for m in firsts)
    expected_win = ((2 * as_x - 1) + (2 * as_o / len(firsts) - 1)) / 2  # never loses: 2c - 1
    exact = exact_evaluation(s, teacher_replies_to(teacher, "tictactoe"))
    assert exact["random"]["win_rate"] == round(expected_win, 4) and 0.95 < expected_win < 0.96
    first, second = exact["random"]["sides"]  # each side alone, by the same recursion
    assert first["win_rate"] == round(2 * as_x - 1, 4)
    assert second["win_rate"] == round(2 * as_o / len(firsts) - 1, 4)
    assert exact["random"]["non_loss_rate"] == 1.0 == exact["optimal"]["non_loss_rate"]
    assert exact["optimal"]["win_rate"] == 0.0
    nonsense = exact_evaluation(
        s, lambda observations: ["no move"] * len(observations)
    )  # forfeits at once
    lost = {"win_rate": 0.0, "draw_rate": 0.0, "loss_rate": 1.0, "non_loss_rate": 0.0}
    first, second = nonsense["random"]["sides"]
    assert nonsense["random"] == {**lost, "sides": [first, second]}
    forfeit = "? ? ? ?"  # four invalid replies (core's default allows three)
    assert first == {**lost, "losing_lines": [[forfeit, 1.0]]}
    ninth = round(1 / 9, 4)  # after each of random's nine first moves
    assert second["losing_lines"] == [[f"{m} {forfeit}", ninth] for m in "012"]
    assert all(
        side["losing_lines"] == [] for e in exact.values() for side in e["sides"]
    )  # the teacher never loses


def test_the_table_names_where_the_last_stage_loses() -> None:
    """The exact evaluation keeps each side's likeliest lost games; the table shows the
    last stage's, as played through ``core.Episode``."""
    from rollouts.training.recipe.report import losing_lines

    s = resolve(RecipeSettings())

    def corner_only(observations: list[str]) -> list[str]:  # cell 0 whenever it is free
        return [
            "<move>0</move>" if "Legal moves: 0," in o else "<move>8</move>" for o in observations
        ]

    exact = exact_evaluation(s, corner_only)
    results = {"stages": {"rl1": {"label": "RL1", "exact": exact}}}
    lines = losing_lines(results, ["rl1"])
    assert lines[1].startswith("Where RL1 loses")
    optimal_second = [x for x in lines if "optimal opponent, moving second" in x]
    assert optimal_second and "`" in optimal_second[0]
    worst = exact["optimal"]["sides"][1]["losing_lines"][0]
    assert f"`{worst[0]}` {100 * worst[1]:.2f}%" in optimal_second[0]
    assert losing_lines({"stages": {"sft": {"label": "SFT"}}}, ["sft"]) == []


def test_held_out_sets_differ_from_training_and_alternate_sides() -> None:
    s = resolve(RecipeSettings(eval_games=20, teacher_games=200))
    sets = eval_sets(s)
    assert set(sets) == {"random", "optimal"}
    assert {t.opponent for t in sets["optimal"]} == {"minimax"}
    assert {t.depth for t in sets["optimal"]} == {9}
    assert {t.random_move_prob for t in sets["optimal"]} == {0.0}
    assert [t.model_player for t in sets["random"][:4]] == [0, 1, 0, 1]
    train = {t.seed for t in teacher_tasks(s)}
    assert not train & {t.seed for ts in sets.values() for t in ts}


def test_settings_checks() -> None:
    assert parse_stages("0.2-0.7,0-0.25") == [(0.2, 0.7), (0.0, 0.25)]
    with pytest.raises(ValueError, match="bad RL stage"):
        parse_stages("0.7-0.2")
    with pytest.raises(ValueError, match="recipe knows"):
        resolve(RecipeSettings(game="nim"))
    with pytest.raises(ValueError, match="sft_loss"):
        resolve(RecipeSettings(sft_loss="reply"))
    with pytest.raises(ValueError, match="teacher must be"):
        resolve(RecipeSettings(teacher="average"))
    with pytest.raises(ValueError, match="two-player"):
        resolve(RecipeSettings(game="wordle", teacher="weak"))
    with pytest.raises(ValueError, match="exhaustive"):
        resolve(RecipeSettings(teacher="weak", exhaustive="yes"))
    with pytest.raises(ValueError, match="rl_group"):
        resolve(RecipeSettings(rl_group="batch"))
    with pytest.raises(ValueError, match="exhaustive"):
        resolve(RecipeSettings(game="connect_four", exhaustive="yes"))
    with pytest.raises(ValueError, match="rl_decisions_per_game"):
        resolve(RecipeSettings(rl_decisions_per_game=0))
    with pytest.raises(ValueError, match="sft_assistant_weight"):
        resolve(RecipeSettings(sft_assistant_weight=-1.0))
    assert resolve(RecipeSettings(game="connect_four")).exhaustive == "no"
    othello = resolve(RecipeSettings(game="othello"))  # the plan's own RL defaults
    assert (othello.rl_stages, othello.rl_learning_rate) == ("0.5-1", 1e-4)
    assert (
        resolve(RecipeSettings(game="othello", rl_stages="0-1")).rl_stages == "0-1"
    )  # a flag wins
    weak = resolve(RecipeSettings(teacher="weak"))
    assert (weak.exhaustive, weak.hard_steps, weak.output_dir) == (
        "no",
        0,
        "runs/recipe-tictactoe-weak",
    )
    assert resolve(RecipeSettings(teacher="weak", sft_steps=7)).sft_steps == 7  # a flag wins
    assert model_config(resolve(RecipeSettings(hidden_size=64, num_layers=2))) == {
        **MODEL_CONFIG,
        "hidden_size": 64,
        "intermediate_size": 192,
        "num_hidden_layers": 2,
    }
    assert stage_learning_rates(weak) == [1e-4, 5e-5]  # one per stage of its own
    one = resolve(RecipeSettings(teacher="weak", rl_stages="0-0.25"))
    assert stage_learning_rates(one) == [one.rl_learning_rate]  # stages given: one rate
    with pytest.raises(ValueError, match="2 rates for 1 stages"):
        resolve(RecipeSettings(rl_stages="0-1", rl_stage_learning_rates="1e-4,1e-5"))
    with pytest.raises(ValueError, match="numbers like"):
        resolve(RecipeSettings(rl_stage_learning_rates="fast"))
    lo, hi = interval95(190, 200)
    assert lo < 0.95 < hi and lo > 0.9


def test_write_docs_needs_markers(tmp_path: Path) -> None:
    p = tmp_path / "x.md"
    p.write_text("no markers\n")
    assert not write_docs(p, "tictactoe", "table\n")
    assert p.read_text() == "no markers\n"


def test_cli_rejects_bad_settings(capsys: pytest.CaptureFixture[str]) -> None:
    from rollouts.cli import main

    assert main(["train", "recipe", "--rl-stages", "1-0"]) == 2
    assert "bad RL stage" in capsys.readouterr().err


def test_levers_change_one_setting_at_equal_compute() -> None:
    """``train levers``: every variant plays as many games as the weak recipe (games an
    update x updates x stages) and names one learning rate per stage; the learning-rate
    lever moves every stage's rate."""
    from dataclasses import replace

    from rollouts.training.levers import variants

    base = resolve(RecipeSettings(teacher="weak", docs=""))
    games = (
        base.num_groups * base.num_generations * base.rl_steps * len(parse_stages(base.rl_stages))
    )
    rates = {}
    for v in variants(base):
        s = replace(base, **v.changes)  # as `train levers` runs them: no second resolve
        stages = parse_stages(s.rl_stages)
        assert s.num_groups * s.num_generations * s.rl_steps * len(stages) == games, v.name
        rates[v.name] = stage_learning_rates(s)
        assert len(rates[v.name]) == len(stages), v.name
    assert rates["learning rate x3"] == pytest.approx(
        [3 * r for r in rates["the recipe's settings"]]
    )


def test_bad_exploration_is_refused_before_training(capsys: pytest.CaptureFixture[str]) -> None:
    """``--explore-epsilon`` outside [0, 1] (or with TRL's tool loop) is one clear line and
    exit 2, before a teacher game is played."""
    from rollouts.cli import main

    assert main(["train", "recipe", "--explore-epsilon", "1.5"]) == 2
    assert "explore_epsilon must be in [0, 1]" in capsys.readouterr().err
    assert main(["train", "grpo", "--model", "x", "--explore-epsilon", "0.1"]) == 2
    assert "explore_epsilon needs --mode rollout_func" in capsys.readouterr().err
