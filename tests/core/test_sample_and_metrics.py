"""Episode.sample_reply (a random legal reply) and core.metrics.outcome_rates."""

import pytest

from core import Episode, EpisodeFinishedError, EpisodeNotStartedError, Task, list_games
from core.metrics import RATE_KEYS, outcome_rates
from core.parsing import parse_reply


@pytest.mark.parametrize("game", list_games())
def test_sampled_replies_are_well_formed_and_legal_to_the_end(game: str) -> None:
    episode = Episode(Task(game=game, seed=5))
    episode.reset()
    while not episode.done:
        reply = episode.sample_reply()
        assert parse_reply(reply).move in episode.game.legal_moves_text(episode.state)
        result = episode.step(reply)
        assert result.info["valid"], result.info
    assert episode.invalid_moves == 0
    assert episode.reward().components["format"] == 1.0


def test_sampling_plays_nothing_and_follows_the_task_seed() -> None:
    def sampled(seed: int) -> list[str]:
        episode = Episode(Task(game="connect_four", seed=seed))
        episode.reset()
        board = episode.game.render(episode.state)
        replies = [episode.sample_reply() for _ in range(20)]
        assert episode.game.render(episode.state) == board and not episode.events
        return replies

    assert sampled(3) == sampled(3)
    assert sampled(3) != sampled(4)
    assert len(set(sampled(3))) > 1  # random, not the first legal move


def test_sampling_obeys_think_required_and_tool_mode() -> None:
    episode = Episode(Task(game="tictactoe", seed=1, think_required=True))
    episode.reset()
    reply = episode.sample_reply()
    assert parse_reply(reply, think_required=True).think == ""
    move = episode.sample_reply(tools=True)
    assert move in episode.game.legal_moves_text(episode.state)
    assert episode.step_move(move).info["valid"]


def test_sampling_needs_a_live_game() -> None:
    episode = Episode(Task(game="tictactoe", seed=1, max_turns=1))
    with pytest.raises(EpisodeNotStartedError):
        episode.sample_reply()
    episode.reset()
    episode.step(episode.sample_reply())
    with pytest.raises(EpisodeFinishedError):
        episode.sample_reply()


def _finished(replies: list[str], **fields: object) -> dict:
    return Episode.replay(Task(game="tictactoe", **fields), replies).to_dict()  # type: ignore[arg-type]


def test_outcome_rates_count_results_and_reply_judgements() -> None:
    # seed 0 vs a depth-2 minimax: the model wins nothing by playing 0, 1, 2 ...
    forfeit = _finished(["no tag", "<move>x9</move>", "<move>zz</move>", "oops"])
    capped = _finished(["<move>4</move>"], seed=1, max_turns=1, turn_cap_result="draw")
    assert forfeit["termination"] == "forfeit" and capped["result"] == "draw"
    rates = outcome_rates([forfeit, capped])
    assert rates["games"] == 2 and rates["replies"] == 5
    assert rates["loss_rate"] == 0.5 and rates["draw_rate"] == 0.5 and rates["win_rate"] == 0
    assert rates["invalid_move_rate"] == 4 / 5
    assert rates["format_error_rate"] == 2 / 5
    assert rates["forfeit_rate"] == 0.5
    assert set(RATE_KEYS) <= set(rates)


def test_outcome_rates_of_nothing_are_zero() -> None:
    assert all(v == 0.0 for v in outcome_rates([]).values())
