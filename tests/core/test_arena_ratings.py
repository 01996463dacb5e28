"""core.arena (the schedule, a bot in the outside seat), core.stats.fit_ratings (Bradley-Terry
with Hessian intervals) and core.search.mcts (UCT for the native games)."""

from __future__ import annotations

import math
import random

import pytest

from core.arena import ArenaError, Bot, bot_reply, play_bots, round_robin, round_seed
from core.episode import Episode
from core.games import make_game
from core.opponents import make_opponent
from core.parsing import parse_reply
from core.rng import derive_rng
from core.search import mcts
from core.stats import ELO_PER_NAT, Z95, expected_score, fit_ratings
from core.tasks import Task

# --- bots and the schedule -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "fields"),
    [
        ("random", "random", ("random", 1, 0.0)),
        ("minimax:3", "minimax:3", ("minimax", 3, 0.0)),
        ("mcts:2", "mcts:2", ("mcts", 2, 0.0)),
        ("minimax:2+random:0.25", "minimax:2+random:0.25", ("minimax", 2, 0.25)),
    ],
)
def test_bot_parse_names_and_task_fields(text: str, name: str, fields: tuple) -> None:
    bot = Bot.parse(text)
    assert bot.name == name
    assert (bot.kind, bot.level, bot.random_move_prob) == fields
    assert (
        make_opponent(**dict(zip(("kind", "depth", "random_move_prob"), fields, strict=True))).name
        == name
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "minimax",
        "minimax:0",
        "minimax:13",
        "random:2",
        "alpha:1",
        "mcts:2+random:2",
        "minimax:1+noise:0.1",
    ],
)
def test_bot_parse_refuses(text: str) -> None:
    with pytest.raises(ArenaError):
        Bot.parse(text)


def test_round_robin_every_pair_both_seats_same_openings() -> None:
    players = ["random", "minimax:1", "minimax:2", "mcts:1"]
    pairings, skipped = round_robin(players, ["tictactoe", "connect_four"], rounds=3, seed=7)
    assert skipped == []
    assert len(pairings) == 2 * 3 * 4 * 3  # games x rounds x ordered pairs
    assert [p.index for p in pairings] == list(range(len(pairings)))
    seen = {(p.game, p.round, p.seats) for p in pairings}
    assert len(seen) == len(pairings)
    for p in pairings:
        assert (p.game, p.round, p.seats[::-1]) in seen  # both seats
        assert p.task.seed == round_seed(7, p.game, p.round)  # one opening per round
        assert p.task.opening_plies == 2
        assert p.task.model_player == p.outside
        # the first-listed player of the pair takes the outside seat; the other is the opponent
        first = min(p.seats, key=players.index)
        assert p.seats[p.outside] == first
        other = Bot.parse(p.seats[1 - p.outside])
        assert (p.task.opponent, p.task.depth) == (other.kind, other.level)
    assert len({round_seed(7, "tictactoe", k) for k in range(3)}) == 3


def test_round_robin_outside_players_take_the_outside_seat_and_two_share_a_game() -> None:
    players = ["random", "llm", "minimax:1", "other"]
    bots = {"random": Bot.parse("random"), "minimax:1": Bot.parse("minimax:1")}
    pairings, skipped = round_robin(players, ["tictactoe"], rounds=1, seed=0, bots=bots)
    assert skipped == []
    assert len(pairings) == 2 * 6
    for p in pairings:
        if set(p.seats) == {"llm", "other"}:  # two outside seats: seat 0 scores the game
            assert p.task.seats == "outside,outside" and p.outside == 0
            continue
        for name in ("llm", "other"):
            if name in p.seats:
                assert p.seats[p.outside] == name


@pytest.mark.parametrize(
    ("players", "games", "rounds"),
    [
        (["random"], ["tictactoe"], 1),
        (["random", "random"], ["tictactoe"], 1),
        (["random", "minimax:1"], ["wordle"], 1),
        (["random", "minimax:1"], ["tictactoe"], 0),
    ],
)
def test_round_robin_refuses(players: list[str], games: list[str], rounds: int) -> None:
    with pytest.raises(ArenaError):
        round_robin(players, games, rounds=rounds, seed=0)


def test_score_is_seat_zeros_from_the_outside_result() -> None:
    pairings, _ = round_robin(["random", "minimax:1"], ["tictactoe"], rounds=1, seed=0)
    for p in pairings:
        assert p.score("draw") == 0.5
        assert p.score("win") == (1.0 if p.outside == 0 else 0.0)


def test_bot_reply_is_a_well_formed_legal_move_and_needs_think_when_asked() -> None:
    for think in (False, True):
        episode = Episode(
            Task(game="connect_four", seed=3, think_required=think, opponent="random")
        )
        episode.reset()
        reply = bot_reply(episode, make_opponent("minimax", 2))
        parsed = parse_reply(reply, think_required=think)
        assert parsed.move in episode.game.legal_moves_text(episode.state)
        assert not episode.step(reply).info["error"]


def test_play_bots_is_deterministic_and_strength_shows() -> None:
    pairings, _ = round_robin(
        ["minimax:9", "random"], ["tictactoe"], rounds=4, seed=1, opening_plies=0
    )
    results = [play_bots(p).to_dict() for p in pairings]
    assert results == [play_bots(p).to_dict() for p in pairings]
    for p, traj in zip(pairings, results, strict=True):
        assert not any(e["error"] for e in traj["events"])  # a bot never errs
        perfect = p.seats.index("minimax:9")
        seat0 = p.score(traj["result"])
        # perfect play from the empty board never loses
        assert (seat0 if perfect == 0 else 1.0 - seat0) >= 0.5


# --- MCTS ---------------------------------------------------------------------------------


def test_mcts_takes_a_win_in_one_and_blocks_nothing_it_need_not() -> None:
    game = make_game("tictactoe")
    state = game.initial_state()
    for move in ("0", "3", "1", "4"):  # X on 0, 1; O on 3, 4: X to move wins at 2
        state = game.play(state, move)
    move = mcts(game, state, 160, random.Random(0))
    assert game.move_to_text(state, move) == "2"


def test_mcts_is_seeded_and_legal_on_every_native_game() -> None:
    for name in ("tictactoe", "connect_four", "othello", "nim"):
        game = make_game(name)
        state = game.initial_state(derive_rng(0, "initial", name))
        a = mcts(game, state, 20, derive_rng(1))
        assert a == mcts(game, state, 20, derive_rng(1))
        assert a in game.legal_moves(state)


def test_native_games_offer_mcts_tasks() -> None:
    episode = Episode(Task(game="connect_four", opponent="mcts", depth=2, seed=5))
    episode.reset()
    assert episode.opponent is not None and episode.opponent.name == "mcts:2"
    result = episode.step(episode.sample_reply())
    assert not result.info["error"] and len(result.info["opponent_moves"]) == 1


# --- ratings ------------------------------------------------------------------------------


def test_two_players_match_the_closed_form() -> None:
    """Two players, w wins of n, p virtual draws: the rating is the log-odds of
    (w + p/2) / (n - w + p/2), its variance 1 / (N q (1 - q)), N = n + p."""
    w, n, p = 7, 10, 1.0
    games = [("a", "r", 1.0)] * w + [("a", "r", 0.0)] * (n - w)
    table = fit_ratings(games, anchor="r", prior_draws=p)
    a = table.by_player()["a"]
    q = (w + p / 2) / (n + p)
    assert a.elo == pytest.approx(ELO_PER_NAT * math.log(q / (1 - q)), abs=1e-6)
    se = ELO_PER_NAT / math.sqrt((n + p) * q * (1 - q))
    assert a.high - a.elo == pytest.approx(Z95 * se, rel=1e-6)
    assert (a.games, a.score) == (n, w)
    assert table.by_player()["r"].elo == table.by_player()["r"].low == 0.0


def test_ratings_recover_known_strengths_and_ignore_order() -> None:
    true = {"r": 0.0, "a": 150.0, "b": 400.0, "c": 700.0}
    rng = random.Random(3)
    games = []
    for _ in range(4000):
        x, y = rng.sample(sorted(true), 2)
        u = rng.random()
        p = expected_score(true[x], true[y])
        games.append((x, y, 1.0 if u < p else 0.0))
    table = fit_ratings(games, anchor="r", prior_draws=0.01)
    for r in table.ratings:
        assert r.low <= true[r.player] <= r.high, r
    assert [r.player for r in table.ratings] == ["c", "b", "a", "r"]
    shuffled = games[:]
    rng.shuffle(shuffled)
    assert fit_ratings(shuffled, anchor="r", prior_draws=0.01) == table
    flipped = [(y, x, 1.0 - s) for x, y, s in games]
    assert fit_ratings(flipped, anchor="r", prior_draws=0.01).by_player()["b"].elo == pytest.approx(
        table.by_player()["b"].elo
    )


def test_draws_count_half_and_a_clean_sweep_stays_finite() -> None:
    even = fit_ratings([("a", "r", 0.5)] * 6, anchor="r")
    assert even.by_player()["a"].elo == pytest.approx(0.0, abs=1e-9)
    sweep = fit_ratings([("a", "r", 1.0)] * 8, anchor="r")
    assert sweep.by_player()["a"].elo == pytest.approx(400 * math.log10(17), rel=1e-6)


def test_ratings_refuse_what_they_cannot_fit() -> None:
    with pytest.raises(ValueError, match="anchor"):
        fit_ratings([("a", "b", 1.0)], anchor="r")
    with pytest.raises(ValueError, match="chain"):
        fit_ratings([("a", "r", 1.0), ("b", "c", 1.0)], anchor="r")
    with pytest.raises(ValueError, match="score"):
        fit_ratings([("a", "r", 0.7)], anchor="r")
