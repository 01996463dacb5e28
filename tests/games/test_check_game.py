"""``core.check_game``: the public game contract, over every registered game, and
over broken games that it must refuse (each with the rule it breaks named)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from core import GameContractError, check_game, list_games, make_game
from core.games.nim import Nim, NimState


@pytest.mark.parametrize("name", list_games())
def test_every_registered_game_meets_the_contract(name: str) -> None:
    report = check_game(make_game(name))
    assert report.game == name and report.games == 6
    assert report.positions > 6 and report.moves_round_tripped > report.positions
    assert report.skipped == ()  # every built-in game reads its board back and has a view


@dataclass
class MutableState:  # not frozen
    piles: tuple[int, ...]
    to_play: int

    def __hash__(self) -> int:
        return hash((self.piles, self.to_play))


class UnfrozenNim(Nim):
    def initial_state(self, rng: random.Random | None = None) -> Any:
        return MutableState((3, 4, 5), 0)

    def apply(self, state: Any, move: tuple[int, int]) -> Any:
        after = super().apply(NimState(state.piles, state.to_play), move)
        return MutableState(after.piles, after.to_play)

    def to_play(self, state: Any) -> int:
        return int(state.to_play)

    def parse_board(self, text: str) -> Any:
        raise NotImplementedError


class ShuffledNim(Nim):
    def legal_moves(self, state: NimState) -> Sequence[tuple[int, int]]:
        moves = list(super().legal_moves(state))
        random.shuffle(moves)  # a new order on every call
        return moves


class MiswrittenNim(Nim):
    def move_to_text(self, state: NimState, move: tuple[int, int]) -> str:
        return f"{move[1]}:{move[0]}"  # count and pile swapped


class CrashingParserNim(Nim):
    def parse_move(self, state: NimState, text: str) -> tuple[int, int]:
        if not text:
            raise IndexError("empty")  # not a GameError
        return super().parse_move(state, text)


class EndlessOutcomeNim(Nim):
    def is_terminal(self, state: NimState) -> bool:
        return False  # while outcome() says the game is over


class ForgetfulBoardNim(Nim):
    def parse_board(self, text: str) -> NimState:
        state = super().parse_board(text)
        return NimState(state.piles, 0)  # loses whose turn it is


class RandomStartNim(Nim):
    def initial_state(self, rng: random.Random | None = None) -> NimState:
        return NimState((3, 4, random.randint(5, 9)), 0)  # global randomness


class LooseJunkNim(Nim):
    def parse_move(self, state: NimState, text: str) -> tuple[int, int]:
        if text == "99999":
            return (9, 9)  # "parses" junk into a move that is not legal
        return super().parse_move(state, text)


@pytest.mark.parametrize(
    ("game", "problem"),
    [
        (UnfrozenNim(), "dataclass that is not frozen"),
        (ShuffledNim(), "legal_moves changed between two calls"),
        (MiswrittenNim(), "which parses back as"),
        (CrashingParserNim(), "parse_move('') raised IndexError"),
        (EndlessOutcomeNim(), "is_terminal is False but outcome is"),
        (ForgetfulBoardNim(), "parse_board(render(s)) is not s"),
        (RandomStartNim(), "initial_state differs for the same seed"),
        (LooseJunkNim(), "parse_move('99999') gave (9, 9)"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Nim) else "",
)
def test_broken_games_are_refused_with_the_rule_named(game: Nim, problem: str) -> None:
    with pytest.raises(GameContractError) as caught:
        check_game(game)
    assert any(problem in p for p in caught.value.problems), caught.value.problems
    assert "nim breaks the game contract" in str(caught.value)


def test_a_game_past_its_max_plies_is_refused() -> None:
    class ShortSpecNim(Nim):
        spec = dataclasses.replace(Nim.spec, max_plies=3)

    with pytest.raises(GameContractError, match=r"went past spec\.max_plies"):
        check_game(ShortSpecNim())


def test_bridged_openspiel_games_meet_the_contract() -> None:
    """Every OpenSpiel game the bridge offers, one game each, cut at 30 plies
    (chess variants and Go take minutes to the end)."""
    pytest.importorskip("pyspiel")
    from core.games.openspiel import openspiel_games

    for name in openspiel_games():
        assert check_game(make_game(name), games=1, plies=30).skipped == ("board_view",)
