"""A bounded slice of the fuzzers (``make fuzz`` runs 100k inputs): hostile replies
(tests/fuzz/fuzz_inputs.py) through the parser, every game and the Episode.

Invariants: only ``FormatError`` / ``InvalidMoveError`` / ``IllegalMoveError``
leave ``parse_reply``, ``Game.parse_move`` and ``Game.play``; ``Episode.step``
never raises for a ``str`` reply and records it; a rejected reply leaves the
position unchanged; the invalid count equals the events with an error; the
episode ends within ``task.turn_limit()`` replies and replays exactly.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

import fuzz_inputs as fz
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.episode import Episode
from core.games import list_games, make_game
from core.parsing import FormatError, parse_reply

GAMES = list_games()
FAST = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@FAST
@given(st.data(), st.sampled_from(GAMES), st.integers(0, 2**16))
def test_parser_raises_only_format_errors(data: Any, game_name: str, seed: int) -> None:
    ch = fz.HypothesisChooser(data)
    game = make_game(game_name)
    state = fz.random_state(ch, game, seed)
    fz.check_parse(fz.hostile_reply(ch, game, state, huge=False))


@FAST
@given(st.data(), st.sampled_from(GAMES), st.integers(0, 2**16))
def test_games_refuse_with_typed_errors_and_keep_the_state(
    data: Any, game_name: str, seed: int
) -> None:
    ch = fz.HypothesisChooser(data)
    game = make_game(game_name)
    state = fz.random_state(ch, game, seed)
    reply = fz.hostile_reply(ch, game, state, huge=False)
    fz.check_game(game, state, reply)
    for token in fz.move_tokens(game, state, fz.legal_texts(ch, game, state)):
        fz.check_game(game, state, token)
    try:
        move = parse_reply(reply).move
    except FormatError:
        return
    fz.check_game(game, state, move)


@FAST
@given(st.data(), st.sampled_from(GAMES), st.integers(0, 2**16))
def test_episode_survives_hostile_replies(data: Any, game_name: str, seed: int) -> None:
    ch = fz.HypothesisChooser(data)
    checker = fz.EpisodeChecker(fz.random_task(ch, game_name, seed))
    for _ in range(checker.limit):
        ep = checker.episode
        reply = fz.hostile_reply(ch, ep.game, ep.state, huge=False)
        checker.step(reply, tool=ch.choice([False, False, True]))
        if ep.done:
            break
    assert checker.episode.done, "the episode outlived task.turn_limit() replies"


@pytest.mark.parametrize("game_name", GAMES)
@pytest.mark.parametrize(
    "reply",
    [
        "x" * fz.MB,
        "<move>" * (fz.MB // 6),
        "<think>" + "\x00\ud800" * (fz.MB // 2) + "</think><move>1</move>",
        "<move>" + "a" * fz.MB + "</move>",
        "\u202e\u200b" * (fz.MB // 2),
    ],
    ids=["plain", "open-tags", "nul-surrogates-in-think", "huge-move", "rtl-zero-width"],
)
def test_a_megabyte_reply_is_one_rejected_or_played_step(game_name: str, reply: str) -> None:
    task = fz.random_task(fz.RandomChooser(random.Random(1)), game_name, 1)
    checker = fz.EpisodeChecker(task)
    before = checker.episode.state
    kind = checker.step(reply)
    if kind != "valid":
        assert checker.episode.state == before


def test_a_step_after_done_raises_the_typed_error_and_changes_nothing() -> None:
    from core.episode import EpisodeFinishedError
    from core.tasks import Task

    ep = Episode(Task(game="tictactoe", max_invalid_moves=0))
    ep.reset()
    assert ep.step("nonsense").done
    snapshot = ep.to_dict()
    with pytest.raises(EpisodeFinishedError):
        ep.step("<move>4</move>")
    assert ep.to_dict() == snapshot


def _load_runner() -> Any:
    path = Path(__file__).with_name("run.py")
    spec = importlib.util.spec_from_file_location("gamebridge_fuzz_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_make_fuzz_runner_on_a_slice(capsys: pytest.CaptureFixture[str]) -> None:
    """``tests/fuzz/run.py`` (``make fuzz``) on 1,500 seeded inputs: no finding, figures printed."""
    runner = _load_runner()
    assert runner.main(["--inputs", "1500", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "engine random: 1500 inputs" in out and "findings: 0" in out
    for layer in ("parse_reply", "Game.play(reply)", "Episode.step"):
        assert layer in out


@pytest.mark.parametrize("game_name", GAMES)
@pytest.mark.parametrize("text", ["٣", "３", "𝟑", "²", "ｃ４", "Ⅳ", "3\u200b", "\u202e3"])
def test_look_alike_notations_are_not_moves(game_name: str, text: str) -> None:
    """Unicode digits and fullwidth forms pass ``int()``/``isdigit`` in Python; no game
    may take them for a move (docs/reliability.md)."""
    from core.games import InvalidMoveError

    game = make_game(game_name)
    state = game.initial_state(random.Random(0))
    with pytest.raises(InvalidMoveError):
        game.parse_move(state, text)


@pytest.mark.parametrize("game_name", GAMES)
def test_no_move_parses_on_a_finished_game(game_name: str) -> None:
    """``parse_move`` on a terminal position: a typed error for every token, never a
    move (legal_moves is empty there). Found by the fuzzer: Wordle took 'crane'."""
    from core.games import IllegalMoveError, InvalidMoveError

    game = make_game(game_name)
    rng = random.Random(5)
    state = game.initial_state(rng)
    while not game.is_terminal(state):
        state = game.apply(state, rng.choice(list(game.legal_moves(state))))
    for text in (*game.spec.move_examples, "crane", "1", "a1", "pass", "4"):
        with pytest.raises((InvalidMoveError, IllegalMoveError)):
            game.parse_move(state, text)
