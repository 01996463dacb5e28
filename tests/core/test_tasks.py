"""Tasks: validated records, reproducible and stratified task sets."""

import json

import pytest

from core.tasks import Task, TaskError, make_tasks


def test_round_trip_through_json() -> None:
    task = Task(
        game="othello", seed=5, model_player=1, depth=3, random_move_prob=0.25, opening_plies=2
    )
    row = json.loads(json.dumps(task.to_dict()))
    assert Task.from_dict(row) == task
    assert Task.from_dict(row).task_id == task.task_id


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ({"game": "chess"}, "game must be one of"),
        ({"seed": "1"}, "seed must be an int"),
        ({"seed": True}, "seed must be an int"),
        ({"model_player": 2}, "model_player"),
        ({"game": "wordle", "model_player": 1}, "model_player"),
        ({"opponent": "god"}, "opponent"),
        ({"depth": 0}, "depth"),
        ({"random_move_prob": 1.5}, "random_move_prob"),
        ({"random_move_prob": float("nan")}, "random_move_prob"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_invalid_moves": -1}, "max_invalid_moves"),
        ({"turn_cap_result": "win"}, "turn_cap_result"),
        ({"think_required": 1}, "think_required"),
        ({"sed": 3}, "unknown task fields"),
    ],
)
def test_bad_rows_get_typed_errors(row: dict[str, object], match: str) -> None:
    with pytest.raises(TaskError, match=match):
        Task.from_dict(row)


def test_non_strict_rows_ignore_framework_columns() -> None:
    task = Task.from_dict(
        {"game": "tictactoe", "seed": 3, "prompt": [{"role": "user"}]}, strict=False
    )
    assert task == Task(game="tictactoe", seed=3)


def test_make_tasks_is_reproducible_from_its_seed() -> None:
    assert make_tasks(20, seed=7, game="connect_four") == make_tasks(
        20, seed=7, game="connect_four"
    )
    assert make_tasks(20, seed=7) != make_tasks(20, seed=8)
    assert len({t.task_id for t in make_tasks(200, seed=1)}) == 200


def test_every_block_spans_the_difficulty_range_evenly() -> None:
    groups = 4
    tasks = make_tasks(
        40,
        seed=3,
        game="tictactoe",
        min_random_move_prob=0.2,
        max_random_move_prob=0.6,
        num_groups=groups,
    )
    for start in range(0, 40, groups):
        block = tasks[start : start + groups]
        for j, task in enumerate(block):
            low = 0.2 + 0.4 * j / groups
            assert low - 1e-6 <= task.random_move_prob <= low + 0.4 / groups + 1e-6


def test_sides_alternate_by_block_and_othello_gets_an_opening() -> None:
    tasks = make_tasks(8, seed=0, game="othello", num_groups=2)
    assert [t.model_player for t in tasks] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert all(t.opening_plies == 2 for t in tasks)
    assert all(t.opening_plies == 0 for t in make_tasks(4, game="tictactoe"))


def test_rows_form_a_columnar_table() -> None:
    rows = [t.to_dict() for t in make_tasks(5, seed=0)]
    assert all(set(r) == set(rows[0]) for r in rows)
    assert all(
        v is None or isinstance(v, (int, float, str, bool)) for r in rows for v in r.values()
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": -1}, "n must"),
        ({"n": 3, "num_groups": 0}, "num_groups"),
        ({"n": 3, "min_random_move_prob": 0.9, "max_random_move_prob": 0.1}, "min_random"),
    ],
)
def test_make_tasks_rejects_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(TaskError, match=match):
        make_tasks(**kwargs)  # type: ignore[arg-type]


def test_split_games_are_core_games_with_at_least_one_task_each() -> None:
    from core.games import list_games
    from core.splits import split_games

    assert split_games(None, 1) == tuple(list_games())
    assert split_games(["nim", "tictactoe"], 3) == ("nim", "tictactoe")
    for games, per_game in ((["chess"], 1), ([], 1), (["nim"], 0)):
        with pytest.raises(ValueError):
            split_games(games, per_game)
