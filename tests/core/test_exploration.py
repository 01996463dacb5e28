"""Epsilon-greedy exploration's draw (``core.batch_stats.exploration_move``): a legal
move with chance epsilon, seeded by the task, the game's place and the turn."""

from __future__ import annotations

from core.batch_stats import exploration_move

LEGAL = ["0", "2", "5", "7"]


def test_it_explores_about_epsilon_of_the_decisions_with_legal_moves_only() -> None:
    draws = [exploration_move(seed, 0, 1, LEGAL, 0.25) for seed in range(4000)]
    explored = [d for d in draws if d is not None]
    assert 0.22 < len(explored) / len(draws) < 0.28
    assert set(explored) == set(LEGAL)  # every legal move, nothing else


def test_it_repeats_for_one_decision_and_differs_across_games_and_turns() -> None:
    assert exploration_move(7, 3, 2, LEGAL, 0.5) == exploration_move(7, 3, 2, LEGAL, 0.5)
    across = {exploration_move(7, i, t, LEGAL, 1.0) for i in range(8) for t in range(4)}
    assert len(across) > 1


def test_no_epsilon_or_no_legal_move_means_no_exploration() -> None:
    assert all(exploration_move(s, 0, 0, LEGAL, 0.0) is None for s in range(200))
    assert exploration_move(1, 0, 0, [], 1.0) is None
