"""OpenSpiel's games of chance and hidden information, through the bridge and
``core.Episode`` with two outside seats (scripted players in both).

* Chance: every outcome comes from the RNG derived from (task seed, position):
  the same task deals the same cards whatever the replies' wording, other seeds
  deal other cards, and the deals follow the game's probabilities.
* Hidden information: a seat's observation depends on nothing but that seat's
  information state (pyspiel's ``information_state_string``): two positions the
  seat cannot tell apart give it the same observation, so no observation shows
  what the other seat hides. The playouts must meet such positions, or the check
  proves nothing (asserted).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

pytest.importorskip("pyspiel")

from core.episode import Episode
from core.games import make_game
from core.games.openspiel import SEAT_GAMES, left_out, openspiel_games
from core.players import ScriptedPlayer
from core.tasks import Task, TaskError

HIDDEN = ["kuhn_poker", "leduc_poker", "phantom_ttt", "dark_hex", "goofspiel(num_cards=4)"]


def _play(task: Task, policy: str = "random", seed: int = 1) -> tuple[Episode, list[Any]]:
    """Play ``task`` with the scripted player in every outside seat; return the
    episode and, before each reply, (seat, observation, what the seat knows, the
    position) for every outside seat. What a seat knows is its information state
    and whether it is asked to move (a seat learns that it is its turn, which in
    Phantom Tic-Tac-Toe says the other's try succeeded; OpenSpiel's information
    state leaves it out because a bot is only asked at its turn)."""
    episode = Episode(task)
    episode.reset()
    player = ScriptedPlayer(policy, seed=seed)
    game = episode.game
    seen = []
    while not episode.done:
        seat = episode.to_move
        assert seat is not None
        observation = episode.observation_for(seat)
        others = [s for s in episode.outside if s != seat]
        info = game.information_state(episode.state, seat)
        seen.append((seat, observation, ("to move", info), episode.state))
        for other in others:  # the waiting seat's view too
            seen.append(
                (
                    other,
                    episode.observation_for(other),
                    ("waiting", game.information_state(episode.state, other)),
                    episode.state,
                )
            )
        messages = [
            {"role": "system", "content": episode.system_prompt_for(seat)},
            {"role": "user", "content": observation},
        ]
        episode.step(player.reply(messages))
    return episode, seen


@pytest.mark.parametrize("short", HIDDEN)
def test_a_seats_observation_depends_only_on_what_that_seat_knows(short: str) -> None:
    views: dict[tuple[int, Any], set[str]] = {}
    states: dict[tuple[int, Any], set[Any]] = {}
    for seed in range(60 if short.startswith(("dark_hex", "goofspiel")) else 150):
        task = Task(game=f"openspiel:{short}", seed=seed, seats="outside,outside")
        _, seen = _play(task, seed=seed)
        for seat, observation, info, state in seen:
            views.setdefault((seat, info), set()).add(observation)
            states.setdefault((seat, info), set()).add(state)
    leaks = {key: obs for key, obs in views.items() if len(obs) > 1}
    assert not leaks, f"observations that differ for one information state: {leaks}"
    ambiguous = [key for key, s in states.items() if len(s) > 1]
    assert len(ambiguous) >= 5, "the playouts met too few positions a seat cannot tell apart"


def test_kuhn_observation_never_names_the_other_card() -> None:
    """Kuhn's observation string starts with the seat's own card: the other seat's
    card is never there, and the full state (both cards) is only in ``render``."""
    game = make_game("openspiel:kuhn_poker")
    for seed in range(40):
        episode = Episode(Task(game="openspiel:kuhn_poker", seed=seed, seats="outside,outside"))
        episode.reset()
        cards = episode.state.history[:2]  # the two deals
        for seat in (0, 1):
            first = episode.observation_for(seat).splitlines()
            board = next(line for line in first if line and line[0].isdigit())
            assert board[0] == str(cards[seat])
        assert f"{cards[0]} {cards[1]}" in game.render(episode.state)


def test_hidden_moves_are_not_reported_to_the_other_seat() -> None:
    for seed in range(10):
        episode, seen = _play(
            Task(game="openspiel:phantom_ttt", seed=seed, seats="outside,outside")
        )
        assert all("Opponent played" not in obs for _, obs, _, _ in seen)
        assert all("Opponent played" not in e.observation for e in episode.events)
    kuhn, _ = _play(Task(game="openspiel:kuhn_poker", seed=2, seats="outside,outside"))
    assert any("Opponent played:" in e.observation for e in kuhn.events)  # bets are public


@pytest.mark.parametrize("short", ["kuhn_poker", "backgammon", "leduc_poker"])
def test_chance_comes_from_the_task_seed_and_the_position(short: str) -> None:
    task = Task(game=f"openspiel:{short}", seed=11, seats="outside,outside")
    first, _ = _play(task, "random", seed=3)
    again, _ = _play(task, "random", seed=3)
    assert first.to_dict() == again.to_dict()
    # Other wording, same moves: the same dice and cards (a GRPO group meets them alike).
    reworded = Episode(task)
    reworded.reset()
    for event in first.events:
        reworded.step(f"<think>other words</think><move>{event.move}</move>")
    assert reworded.state == first.state
    assert reworded.results == first.results
    # Other seeds deal otherwise.
    starts = {
        Episode(Task(game=f"openspiel:{short}", seed=s, opponent="random")).reset()
        for s in range(12)
    }
    assert len(starts) > 1


def test_kuhn_deals_follow_the_game_probabilities() -> None:
    counts: Counter[int] = Counter()
    for seed in range(900):
        episode = Episode(Task(game="openspiel:kuhn_poker", seed=seed, opponent="random"))
        episode.reset()
        counts[episode.state.history[0]] += 1
    assert set(counts) == {0, 1, 2}
    assert all(250 <= n <= 350 for n in counts.values()), counts


@pytest.mark.parametrize("short", sorted(SEAT_GAMES))
def test_one_seat_against_each_offered_bot(short: str) -> None:
    game = make_game(f"openspiel:{short}")
    for kind in game.spec.opponents:
        for side in (0, 1):
            task = Task(
                game=f"openspiel:{short}", seed=5, model_player=side, opponent=kind, depth=1
            )
            episode, _ = _play(task)
            assert episode.done and episode.result is not None
            assert episode.termination == "game_over"


def test_zero_sum_results_and_rewards_per_seat() -> None:
    for seed in range(20):
        episode, _ = _play(Task(game="openspiel:kuhn_poker", seed=seed, seats="outside,outside"))
        assert episode.outcome is not None and sum(episode.outcome.scores) == 0
        results = {str(r) for r in episode.results.values()}
        assert results in ({"win", "loss"}, {"draw"})
        winner = [s for s, r in episode.results.items() if r == "win"]
        if winner:
            assert episode.reward_for(winner[0]).total > episode.reward_for(1 - winner[0]).total


def test_simultaneous_bids_are_collected_then_applied_together() -> None:
    """Goofspiel through OpenSpiel's turn-based form: seat 1 bids without seeing
    seat 0's bid of the round; both show once the round is played."""
    episode = Episode(
        Task(game="openspiel:goofspiel(num_cards=4)", seed=1, seats="outside,outside")
    )
    episode.reset()
    before = episode.observation_for(1)
    episode.step(f"<move>{episode.listed_moves[-1]}</move>")  # seat 0 bids its highest
    assert episode.to_move == 1

    def hands(text: str) -> list[str]:
        return [line for line in text.splitlines() if "hand:" in line or "Points:" in line]

    assert hands(episode.observation_for(1)) == hands(before)  # seat 0's bid unseen
    episode.step(f"<move>{episode.listed_moves[0]}</move>")  # seat 1 bids its lowest
    assert episode.to_move == 0
    assert hands(episode.observation_for(0)) != hands(before)  # the round is played


def test_which_games_stay_out_and_why() -> None:
    bridged = set(openspiel_games())
    assert {f"openspiel:{g}" for g in SEAT_GAMES} <= bridged
    out = left_out()
    assert out["oshi_zumo"] == "not sequential (simultaneous moves)"
    assert out["liars_dice"] == "has chance events"
    assert out["battleship"] in ("imperfect information", "not sequential (simultaneous moves)")
    assert not (set(out) & set(SEAT_GAMES))


def test_mcts_is_offered_only_where_it_cannot_see_hidden_cards() -> None:
    assert make_game("openspiel:kuhn_poker").spec.opponents == ("mcts", "random")  # ISMCTS
    assert make_game("openspiel:backgammon").spec.opponents == ("mcts", "random")
    assert make_game("openspiel:phantom_ttt").spec.opponents == ("random",)
    with pytest.raises(TaskError):
        Task(game="openspiel:phantom_ttt", opponent="mcts")


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_information_set_mcts_is_a_function_of_its_seed(game: str) -> None:
    """The same position and seed give the same move, call after call (pyspiel's C++
    ISMCTSBot did not: it resamples the hidden cards with an unseeded sampler)."""
    import random

    bridged = make_game(f"openspiel:{game}")
    episode = Episode(Task(game=f"openspiel:{game}", seed=3, seats="outside,outside"))
    episode.reset()
    state = episode.state
    moves = [[bridged.mcts(state, 2, random.Random(s)) for s in range(30)] for _ in range(3)]
    assert moves[0] == moves[1] == moves[2]
    assert len(set(moves[0])) > 1  # the seed matters: the check is not of a constant
