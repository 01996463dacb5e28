"""The recipe's ladder (``rollouts.training.recipe.ladder``): its rungs and tasks, a
scripted player climbing it, and its table and plot. Seconds: scripted players only."""

from __future__ import annotations

import pytest

from core.episode import Episode
from core.opponents import RandomOpponent
from core.teacher import make_teacher
from rollouts.training.recipe import (
    RecipeSettings,
    climb,
    eval_sets,
    is_ladder_game,
    ladder_sets,
    ladder_svg,
    ladder_table,
    markdown,
    resolve,
    rungs,
    svg_plot,
)


def test_every_two_player_recipe_game_but_the_exact_one_climbs_the_ladder() -> None:
    assert [r.name for r in rungs("connect_four")] == [
        "random",
        "minimax:1",
        "minimax:2",
        "minimax:3",
        "minimax:4",
    ]
    assert [r.name for r in rungs("othello")][-1] == "minimax:3+random:0-0.25"
    assert is_ladder_game("connect_four")
    assert not is_ladder_game("tictactoe")  # exact instead
    assert not is_ladder_game("wordle")  # one player


def test_rungs_share_openings_and_sides_and_seeds_vary_openings() -> None:
    sets = ladder_sets("connect_four", 12, seed=5, opening_plies=2)
    seeds = [[t.seed for t in tasks] for tasks in sets.values()]
    assert all(s == seeds[0] for s in seeds)  # task i: one seed on every rung
    for name, tasks in sets.items():
        assert [t.model_player for t in tasks] == [0, 1] * 6  # sides alternate
        assert {t.opening_plies for t in tasks} == {2}
        opponent = {(t.opponent, t.depth if t.opponent == "minimax" else 0) for t in tasks}
        assert opponent == ({("random", 0)} if name == "random" else {("minimax", int(name[-1]))})
    boards = {Episode(t).reset() for t in sets["random"]}
    assert len(boards) > 6  # the seed draws the opening
    other = ladder_sets("connect_four", 12, seed=6, opening_plies=2)
    assert [t.seed for t in other["random"]] != seeds[0]
    seed_rung = ladder_sets("othello", 20, seed=5, opening_plies=2)["minimax:3+random:0-0.25"]
    probs = [t.random_move_prob for t in seed_rung]
    assert {t.depth for t in seed_rung} == {3} and len(set(probs)) > 10
    assert all(0.0 <= p <= 0.25 for p in probs)


def test_random_against_random_is_about_even_and_intervals_hold_the_rate() -> None:
    sets = ladder_sets("connect_four", 100, seed=11, opening_plies=2)
    e = climb(RandomOpponent(), {"random": sets["random"]})["random"]
    assert e["games"] == 100 and e["wins"] + e["draws"] + e["losses"] == 100
    assert 0.3 < e["win_rate"] < 0.7, e
    lo, hi = e["win_ci"]
    assert lo < e["win_rate"] < hi and hi - lo < 0.25
    sides = e["sides"]
    assert [s["games"] for s in sides] == [50, 50]  # both sides played
    assert sum(s["wins"] for s in sides) == e["wins"]
    assert sum(s["losses"] for s in sides) == e["losses"]


def test_the_teacher_beats_random_and_depth_one() -> None:
    sets = ladder_sets("connect_four", 10, seed=3, opening_plies=2)
    ladder = climb(make_teacher("connect_four"), {k: sets[k] for k in ("random", "minimax:1")})
    assert ladder["random"]["win_rate"] >= 0.9, ladder["random"]
    assert ladder["minimax:1"]["win_rate"] > 0.5, ladder["minimax:1"]
    assert ladder["random"]["sides"][0]["wins"] > 0 and ladder["random"]["sides"][1]["wins"] > 0


def test_the_recipe_evaluates_connect_four_and_othello_on_the_ladder() -> None:
    s = resolve(RecipeSettings(game="connect_four", ladder_games=6))
    sets = eval_sets(s)
    assert list(sets) == [r.name for r in rungs("connect_four")]
    assert all(len(tasks) == 6 for tasks in sets.values())
    othello = eval_sets(resolve(RecipeSettings(game="othello", ladder_games=4)))
    assert list(othello) == [r.name for r in rungs("othello")] and len(othello) == 6
    assert {t.opening_plies for tasks in othello.values() for t in tasks} == {4}
    assert list(eval_sets(resolve(RecipeSettings(game="tictactoe")))) == ["random", "optimal"]
    assert resolve(RecipeSettings(game="connect_four", quick=True)).ladder_games == 10
    with pytest.raises(ValueError, match="ladder_games"):
        resolve(RecipeSettings(game="connect_four", ladder_games=1))


def test_ladder_rungs_keeps_the_named_rungs_in_the_ladders_order() -> None:
    whole = eval_sets(resolve(RecipeSettings(game="othello", ladder_games=4)))
    s = resolve(RecipeSettings(game="othello", ladder_games=4, ladder_rungs="minimax:1, random"))
    kept = eval_sets(s)
    assert list(kept) == ["random", "minimax:1"]
    assert all(kept[n] == whole[n] for n in kept)  # the same tasks as on the whole ladder
    with pytest.raises(ValueError, match="ladder_rungs"):
        resolve(RecipeSettings(game="othello", ladder_rungs="random,minimax:9"))


def _results() -> dict:
    sets = ladder_sets("connect_four", 4, seed=1, opening_plies=2)
    teacher = climb(make_teacher("connect_four", depth=2), sets)
    player = climb(RandomOpponent(), sets)
    stage = {"label": "SFT", "greedy": player}
    return {
        "settings": {"game": "connect_four"},
        "teacher": {"name": "teacher:2/1", "held_out": teacher},
        "stages": {"base": {"label": "base", "greedy": player}, "sft": stage},
    }


def test_the_table_and_the_plot_show_every_rung_for_every_player() -> None:
    results = _results()
    table = ladder_table(results, "greedy")
    assert table[0].count("vs minimax:") == 4 and "vs random" in table[0]
    rows = [r for r in table if r.startswith("| teacher") or r.startswith("| SFT")]
    assert len(rows) == 4  # the W/D/L table and the sides table
    wins = results["teacher"]["held_out"]["random"]["wins"]
    assert f"win {wins / 4:.3f}" in rows[0]
    assert ladder_table(results, "sampled") == []  # no stage was sampled
    svg = ladder_svg(results)
    assert svg.count("<circle") == 2 * 5  # teacher and SFT (not base) on five rungs
    assert svg_plot(results) == svg


def test_markdown_writes_the_ladder_for_a_ladder_game() -> None:
    results = _results()
    results["settings"].update(
        quick=True,
        threads=1,
        sft_steps=1,
        sft_batch_size=1,
        sft_loss="sequence",
        rl_steps=0,
        eval_temperature=1.0,
    )
    results["teacher"].update(kept=1, games=1, decisions=1)
    results["model"] = {"parameters": 1, "vocab": 1, "sft_rows": 1, "prompt_tokens_mean": 1}
    results["timing"] = {
        "total_wall_seconds": 1.0,
        "process_cpu_seconds": 1.0,
        "load_average_1_5_15": {},
        "cpus": 2,
    }
    text = markdown(results)
    assert "The ladder (greedy)" in text and "vs minimax:4 W/D/L %" in text
    assert "| teacher (teacher:2/1), ceiling |" in text and "Wins % by side" in text
