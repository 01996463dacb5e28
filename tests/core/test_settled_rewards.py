"""Stopping or capping never beats losing (docs/rewards.md, "What each end scores").

A game settled before its end (the task's turn cap, a framework's cap, or a
model that stops: ``Episode.settle``) is scored as the task's ``turn_cap_result``
with that result's worst margin: -1 for a loss (as a forfeit), 0 for a draw.
So for the same replies so far, settling can never score above playing the
game out, legally, to the same result: the win component is the same, the
margin can only be higher, the share of well-formed replies can only grow and
no invalid penalty is added. If it could, GRPO would learn to stall.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from core import Episode, Task
from core.games import list_games, make_game

POSITIONS_PER_GAME = 40
PLAYOUTS_PER_POSITION = 6
BAD_TEXT = ["I'll think about it", "<move>zz</move>", "<move>1</move><move>2</move>", ""]


def _random_task(game: str, rng: random.Random, settled: str) -> Task:
    num_players = make_game(game).spec.num_players
    return Task(
        game=game,
        seed=rng.randrange(2**31),
        model_player=rng.randrange(num_players),
        opponent=rng.choice(["random", "minimax"]),
        depth=rng.choice([1, 2]),
        random_move_prob=rng.choice([0.0, 0.3, 1.0]),
        max_invalid_moves=rng.randrange(0, 4),
        turn_cap_result=settled,
    )


def _legal_reply(episode: Episode, rng: random.Random) -> str | dict[str, Any]:
    """A legal move, as a text reply or as a tool call's arguments."""
    move = rng.choice(episode.game.legal_moves_text(episode.state))
    return f"<move>{move}</move>" if rng.random() < 0.5 else {"move": move}


def _prefix(task: Task, rng: random.Random) -> list[str | dict[str, Any]]:
    """Replies that leave the game unfinished: legal moves and some invalid ones."""
    episode = Episode(task)
    episode.reset()
    replies: list[str | dict[str, Any]] = []
    for _ in range(rng.randrange(0, task.turn_limit())):
        bad = rng.random() < 0.2 and episode.invalid_moves < task.max_invalid_moves
        reply = rng.choice(BAD_TEXT) if bad else _legal_reply(episode, rng)
        probe = Episode.replay(task, replies + [reply])
        if probe.done:
            break
        replies.append(reply)
        episode = probe
    return replies


def _settled(task: Task, replies: list[str | dict[str, Any]]) -> Episode:
    episode = Episode.replay(task, replies)
    assert not episode.done
    episode.settle()
    return episode


def _play_out(task: Task, replies: list[str | dict[str, Any]], rng: random.Random) -> Episode:
    episode = Episode.replay(task, replies)
    while not episode.done:
        reply = _legal_reply(episode, rng)
        if isinstance(reply, dict):
            episode.step_move(reply["move"])
        else:
            episode.step(reply)
    return episode


@pytest.mark.parametrize("settled", ["loss", "draw"])
@pytest.mark.parametrize("game", list_games())
def test_settling_never_beats_playing_out_to_the_same_result(game: str, settled: str) -> None:
    rng = random.Random(f"settle-{game}-{settled}")
    compared = 0
    for _ in range(POSITIONS_PER_GAME):
        task = _random_task(game, rng, settled)
        replies = _prefix(task, rng)
        stopped = _settled(task, replies)
        margin = stopped.reward().components["margin"]
        assert stopped.result == settled and margin == (-1.0 if settled == "loss" else 0.0)
        for _ in range(PLAYOUTS_PER_POSITION):
            played = _play_out(task, replies, rng)
            if played.result != settled:
                continue
            compared += 1
            assert stopped.reward().total <= played.reward().total, (
                f"{task.task_id} after {len(replies)} replies: settling scores "
                f"{stopped.reward().to_dict()}, playing out to a {settled} "
                f"{played.reward().to_dict()} ({played.termination})"
            )
    # Random play-outs lose often; they draw often only in Tic-Tac-Toe (Nim and
    # Wordle have no draws, Connect Four and Othello draws are rare).
    least = POSITIONS_PER_GAME // 2 if settled == "loss" else 5 if game == "tictactoe" else 0
    assert compared >= least, f"only {compared} play-outs ended in a {settled}"


def _every_loss(task: Task, replies: list[str | dict[str, Any]]) -> list[Episode]:
    """Every legal way to play the game out from ``replies`` that ends in a loss."""
    episode = Episode.replay(task, replies)
    if episode.done:
        return [episode] if episode.result == "loss" else []
    losses = []
    for move in episode.game.legal_moves_text(episode.state):
        losses += _every_loss(task, replies + [f"<move>{move}</move>"])
    return losses


def test_tictactoe_settling_scores_at_most_the_worst_legal_loss() -> None:
    """Exhaustively, for Tic-Tac-Toe: from random unfinished positions, the settled
    loss is at most the lowest-scoring legal way of losing the game."""
    rng = random.Random("settle-exhaustive")
    for _ in range(12):
        task = _random_task("tictactoe", rng, "loss")
        replies = _prefix(task, rng)
        stopped = _settled(task, replies).reward().total
        losses = _every_loss(task, replies)
        if losses:
            assert stopped <= min(e.reward().total for e in losses)


@pytest.mark.parametrize(("game", "seed"), [("tictactoe", 7), ("connect_four", 3)])
def test_stopping_just_before_a_loss_does_not_pay(game: str, seed: int) -> None:
    """The case that was found: against a deep opponent, a model that stopped one
    reply before it lost scored +0.2 (margin 0), one that played on -0.8."""
    task = Task(game=game, seed=seed, depth=9)
    replies: list[str | dict[str, Any]] = []
    episode = Episode.replay(task, replies)
    while not episode.done:
        replies.append(f"<move>{episode.game.legal_moves_text(episode.state)[0]}</move>")
        episode = Episode.replay(task, replies)
    assert episode.result == "loss"
    played = episode.reward().total
    for n in range(len(replies)):
        assert _settled(task, replies[:n]).reward().total <= played
