"""``core.players.legal_replies``: every legal reply to an observation, read back from the
observation alone (what a constrained decoder chooses from)."""

from __future__ import annotations

import random

import pytest

from core.episode import Episode
from core.games import make_game
from core.parsing import format_reply, parse_reply
from core.players import ConversationError, legal_replies
from core.tasks import make_tasks


@pytest.mark.parametrize("name", ["tictactoe", "connect_four", "othello"])
def test_the_replies_are_the_positions_legal_moves_and_each_one_plays(name: str) -> None:
    """Over random games through ``core.Episode``: at every decision the replies are the
    true position's legal moves (read from the observation only), each parses back to a
    move ``game.play`` accepts, and a reply drawn from them is never an invalid move."""
    decisions = 0
    for task in make_tasks(6, seed=3, game=name, opening_plies=2, max_random_move_prob=1.0):
        ep = Episode(task)
        observation = ep.reset()
        rng = random.Random(task.seed)
        while not ep.done:
            replies = legal_replies(ep.game, observation)
            expected = [format_reply(t) for t in ep.game.legal_moves_text(ep.state)]
            assert replies == expected and replies
            for reply in replies:
                ep.game.play(ep.state, parse_reply(reply).move)  # raises if not legal
            result = ep.step(rng.choice(replies))
            decisions += 1
            observation = result.observation
        assert all(event["error"] is None for event in ep.events)
    assert decisions >= 12  # at least two decisions a game


def test_known_counts_and_a_finished_game() -> None:
    ttt, c4, oth = make_game("tictactoe"), make_game("connect_four"), make_game("othello")
    assert len(legal_replies(ttt, ttt.render(ttt.initial_state()))) == 9
    assert len(legal_replies(c4, c4.render(c4.initial_state()))) == 7
    first = legal_replies(oth, oth.render(oth.initial_state()))
    assert sorted(first) == sorted(format_reply(m) for m in ("c4", "d3", "e6", "f5"))
    state = ttt.initial_state()
    for cell in (0, 3, 1, 4, 2):  # X wins along the top row
        state = ttt.apply(state, cell)
    assert ttt.is_terminal(state) and legal_replies(ttt, ttt.render(state)) == []


def test_an_othello_pass_is_the_only_reply_where_it_is_the_only_move() -> None:
    game = make_game("othello")
    rng = random.Random(5)
    found = 0
    for _ in range(40):
        state = game.initial_state()
        while not game.is_terminal(state):
            if game.legal_moves_text(state) == ["pass"]:
                assert legal_replies(game, game.render(state)) == ["<move>pass</move>"]
                found += 1
            state = game.apply(state, rng.choice(list(game.legal_moves(state))))
    assert found  # random games of Othello pass now and then


def test_wordle_replies_are_every_allowed_word_at_every_guess() -> None:
    from core.games.wordle import allowed

    task = make_tasks(1, seed=2, game="wordle")[0]
    ep = Episode(task)
    observation = ep.reset()
    for guess in ("crane", "moist"):
        replies = legal_replies(ep.game, observation)
        assert len(replies) == len(allowed()) == 11_392
        assert replies[0] == format_reply(allowed()[0])
        assert format_reply(guess) in replies and format_reply("xxxxx") not in replies
        for reply in replies[:: len(replies) // 50]:  # a spread of them play
            ep.game.play(ep.state, parse_reply(reply).move)
        observation = ep.step(format_reply(guess)).observation


def test_an_observation_without_a_board_is_refused() -> None:
    with pytest.raises(ConversationError, match="cannot read a Connect Four board"):
        legal_replies(make_game("connect_four"), "no board here")
