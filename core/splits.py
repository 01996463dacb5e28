"""Named splits of ``core.make_tasks`` rows, for frameworks that serve a task set
by split (ORS): ``train`` and ``test`` over every game, and ``<game>-train`` /
``<game>-test`` per game, each a seed offset of ``make_tasks``.

>>> split_names(["nim"])
['train', 'test', 'nim-train', 'nim-test']
>>> [row["game"] for row in split_rows("nim-test", ["nim", "tictactoe"], 2)]
['nim', 'nim']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from core.games import list_games
from core.tasks import TaskError, make_tasks

SPLIT_SEEDS = {"train": 0, "test": 1}
"""``make_tasks`` seed offsets of the splits (added to the task set's ``seed``)."""


def split_names(games: Iterable[str]) -> list[str]:
    """``train``, ``test``, then ``<game>-train``, ``<game>-test`` per game."""
    names = list(SPLIT_SEEDS)
    for game in games:
        names += [f"{game}-{kind}" for kind in SPLIT_SEEDS]
    return names


def split_games(games: Iterable[str] | None, tasks_per_game: int) -> tuple[str, ...]:
    """The games of a task set served by split (``None``: every core game), checked:
    ``ValueError`` for a game ``list_games()`` lacks, no game at all, or fewer than
    one task per game."""
    chosen = tuple(games) if games is not None else tuple(list_games())
    if not chosen or set(chosen) - set(list_games()):
        raise ValueError(f"games must be some of {list_games()}, got {list(chosen)}")
    if tasks_per_game < 1:
        raise ValueError(f"tasks_per_game must be >= 1, got {tasks_per_game}")
    return chosen


def split_rows(
    split: str, games: Sequence[str], tasks_per_game: int, seed: int = 0, num_groups: int = 1
) -> list[dict[str, Any]]:
    """The task rows (``Task.to_dict()``) of ``split``, game by game."""
    kind = split.rsplit("-", 1)[-1]
    if split not in split_names(games):
        raise TaskError(f"no split {split!r}: the splits are {split_names(games)}")
    chosen = games if split in SPLIT_SEEDS else (split.rsplit("-", 1)[0],)
    return [
        task.to_dict()
        for game in chosen
        for task in make_tasks(
            tasks_per_game, seed=seed + SPLIT_SEEDS[kind], game=game, num_groups=num_groups
        )
    ]


__all__ = ["SPLIT_SEEDS", "split_games", "split_names", "split_rows"]
