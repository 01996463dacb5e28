"""``check_game(game)``: the contract every game meets, as a function anyone can run
(Gymnasium's ``check_env``, PettingZoo's ``api_test``). The test suite runs it over
every registered game; run it over your own before ``register_game``.

It plays ``games`` seeded random games to the end and, at every position, checks:

* **the spec**: a frozen :class:`~core.games.base.GameSpec` with one or two
  players, ``max_plies`` at least the length of every game played, a well-formed
  first ``move_examples`` entry;
* **determinism**: the same seed gives the same start, the same legal moves,
  the same boards and the same game, move for move;
* **immutable, hashable states**: a state hashes, no list/dict/set and no
  unfrozen dataclass, and neither ``apply`` nor ``play`` changes the state it is
  given;
* **legal moves in one fixed order**: the same sequence on every call, no
  repeats, sorted where the moves compare;
* **move text round trips**: ``parse_move(move_to_text(m)) == m`` for every
  legal move (a seeded sample of ``moves_per_position`` where there are more),
  no two moves written alike, ``play(text) == apply(move)``, and junk text
  raises :class:`~core.games.base.InvalidMoveError` or
  :class:`~core.games.base.IllegalMoveError` (never another exception);
* **terminal outcomes**: ``is_terminal`` exactly when ``outcome`` is set and no
  move is legal; the outcome has one score per player and a winner in range (or
  none); ``margin`` in [-1, 1]; ``play`` refuses any move after the end;
  ``to_play`` names a player while the game goes on;
* **render and parse**: ``render`` is text; where the game reads its board back,
  ``parse_board`` finds it among other lines, renders to the same text, and (a
  two-player game before its end, which hides nothing) gives back the state;
  ``state_to_json`` is JSON;
* **the board view**, where the game has one: every legal move on a cell or in
  ``other_moves``, or the view ``typed``.

Every problem found is collected; :class:`GameContractError` lists them all.

>>> from core import make_game
>>> report = check_game(make_game("nim"), games=2)
>>> report.games, report.positions > 10
(2, True)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from core.games.base import Game, GameError, GameSpec, IllegalMoveError, InvalidMoveError

JUNK_TEXTS = ("", "zz not a move", "<move></move>", "\x00", "-1", "99999", "pass pass", "á")
"""Text no game reads as a move (or reads as a legal one, never as a crash)."""
MAX_PROBLEMS = 20
"""Stop after this many problems (one broken rule tends to break every position)."""


class GameContractError(AssertionError):
    """A game breaks the contract; ``problems`` holds one line per problem found."""

    def __init__(self, name: str, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"{name} breaks the game contract ({len(self.problems)}):\n{lines}")


@dataclass(frozen=True)
class CheckReport:
    """What ``check_game`` looked at, when it found nothing wrong."""

    game: str
    games: int
    positions: int
    """Positions visited, terminal ones included."""
    moves_round_tripped: int
    skipped: tuple[str, ...] = ()
    """Optional parts the game does not offer (``parse_board``, ``board_view``)."""


@dataclass
class _Checker:
    game: Game[Any, Any]
    rng: random.Random
    moves_per_position: int
    problems: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    positions: int = 0
    round_trips: int = 0

    def fail(self, where: str, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{where}: {what}")

    def guard(self, where: str, what: str, call: Callable[[], Any]) -> Any:
        """``call()``, or ``None`` with a problem noted if it raises."""
        try:
            return call()
        except Exception as exc:  # a broken game may raise anything; report it
            self.fail(where, f"{what} raised {type(exc).__name__}: {exc}")
            return None

    # --- the spec -----------------------------------------------------------------
    def check_spec(self) -> GameSpec | None:
        spec = getattr(self.game, "spec", None)
        if not isinstance(spec, GameSpec):
            self.fail("spec", f"game.spec is {type(spec).__name__}, not a GameSpec")
            return None
        if spec.num_players not in (1, 2):
            self.fail("spec", f"num_players is {spec.num_players}; 1 or 2 are supported")
        if len(spec.player_names) != spec.num_players:
            self.fail("spec", "player_names has not one name per player")
        if spec.max_plies < 1:
            self.fail("spec", "max_plies is below 1")
        if not spec.move_examples:
            self.fail("spec", "move_examples is empty")
        return spec

    # --- one position -------------------------------------------------------------
    def check_state(self, where: str, state: Any, spec: GameSpec) -> None:
        game = self.game
        self.positions += 1
        if isinstance(state, list | dict | set | bytearray):
            self.fail(where, f"the state is a mutable {type(state).__name__}")
        params = getattr(type(state), "__dataclass_params__", None)
        if params is not None and not params.frozen:
            self.fail(where, "the state is a dataclass that is not frozen")
        if (
            not isinstance(state, Hashable)
            or self.guard(where, "hash(state)", lambda: hash(state)) is None
        ):
            self.fail(where, "the state does not hash")
            return
        before = (hash(state), repr(state))
        moves = self.guard(where, "legal_moves", lambda: list(game.legal_moves(state)))
        if moves is None:
            return
        if self.guard(where, "legal_moves", lambda: list(game.legal_moves(state))) != moves:
            self.fail(where, "legal_moves changed between two calls")
        if len(set(moves)) != len(moves):
            self.fail(where, "legal_moves lists a move twice")
        try:
            if moves != sorted(moves):
                self.fail(where, "legal_moves is not in sorted order")
        except TypeError:  # moves that do not compare: the fixed order is checked above
            pass
        terminal = self.check_ending(where, state, moves, spec)
        self.check_text(where, state, moves, terminal, spec)
        self.check_board(where, state, terminal, spec)
        if (hash(state), repr(state)) != before:
            self.fail(where, "checking the position changed it (apply or play mutates its input)")

    def check_ending(self, where: str, state: Any, moves: list[Any], spec: GameSpec) -> bool:
        game = self.game
        terminal = bool(self.guard(where, "is_terminal", lambda: game.is_terminal(state)))
        outcome = self.guard(where, "outcome", lambda: game.outcome(state))
        if terminal != (outcome is not None):
            self.fail(where, f"is_terminal is {terminal} but outcome is {outcome!r}")
        if terminal == bool(moves):
            self.fail(where, f"is_terminal is {terminal} with {len(moves)} legal moves")
        for player in range(spec.num_players):
            margin = self.guard(where, "margin", partial(game.margin, state, player))
            if margin is not None and not -1.0 <= margin <= 1.0:
                self.fail(where, f"margin for player {player} is {margin}, outside [-1, 1]")
        if outcome is not None:
            if len(outcome.scores) != spec.num_players:
                self.fail(where, f"outcome has {len(outcome.scores)} scores")
            if outcome.winner is not None and not 0 <= outcome.winner < spec.num_players:
                self.fail(where, f"outcome names player {outcome.winner} the winner")
            try:
                game.play(state, spec.move_examples[0])
                self.fail(where, "play accepted a move after the end")
            except IllegalMoveError:
                pass
            except Exception as exc:  # a broken game may raise anything; report it
                self.fail(
                    where, f"play after the end raised {type(exc).__name__}, not IllegalMoveError"
                )
        elif not terminal:
            player = self.guard(where, "to_play", lambda: game.to_play(state))
            if player is not None and not 0 <= player < spec.num_players:
                self.fail(where, f"to_play is {player}")
        return terminal

    def check_text(
        self, where: str, state: Any, moves: list[Any], terminal: bool, spec: GameSpec
    ) -> None:
        game = self.game
        if not terminal:
            texts = self.guard(where, "legal_moves_text", lambda: game.legal_moves_text(state))
            if texts is not None and len(set(texts)) != len(texts):
                self.fail(where, "two legal moves are written alike")
        sample = moves
        if len(moves) > self.moves_per_position:
            sample = self.rng.sample(moves, self.moves_per_position)
        for move in sample:
            text = self.guard(where, "move_to_text", partial(game.move_to_text, state, move))
            if not isinstance(text, str):
                self.fail(where, f"move_to_text({move!r}) is not text")
                continue
            back = self.guard(where, f"parse_move({text!r})", partial(game.parse_move, state, text))
            if back != move:
                self.fail(where, f"{move!r} is written {text!r}, which parses back as {back!r}")
            self.round_trips += 1
            played = self.guard(where, f"play({text!r})", partial(game.play, state, text))
            if played != game.apply(state, move):
                self.fail(where, f"play({text!r}) and apply({move!r}) give different states")
        for junk in JUNK_TEXTS:
            try:
                move = game.parse_move(state, junk)
            except (InvalidMoveError, IllegalMoveError):
                continue
            except Exception as exc:  # a broken game may raise anything; report it
                self.fail(
                    where, f"parse_move({junk!r}) raised {type(exc).__name__}, not a GameError"
                )
                continue
            if move not in moves:
                self.fail(where, f"parse_move({junk!r}) gave {move!r}, which is not legal")

    def check_board(self, where: str, state: Any, terminal: bool, spec: GameSpec) -> None:
        game = self.game
        text = self.guard(where, "render", lambda: game.render(state))
        if not isinstance(text, str) or not text.strip():
            self.fail(where, "render gave no text")
            return
        if (
            self.guard(where, "state_to_json", lambda: json.dumps(game.state_to_json(state)))
            is None
        ):
            self.fail(where, "state_to_json is not JSON")
        try:
            read = game.parse_board(f"Your move.\n{text}\nLegal moves: ...")
        except NotImplementedError:
            self.skipped.add("parse_board")
        except GameError as exc:
            self.fail(where, f"parse_board could not read render's board: {exc}")
        except Exception as exc:  # a broken game may raise anything; report it
            self.fail(where, f"parse_board raised {type(exc).__name__}: {exc}")
        else:
            if game.render(read) != text:
                self.fail(where, "render(parse_board(render(s))) differs from render(s)")
            if spec.num_players == 2 and not terminal and read != state:
                self.fail(where, "parse_board(render(s)) is not s")
        try:
            view = game.board_view(state)
        except NotImplementedError:
            self.skipped.add("board_view")
            return
        except Exception as exc:  # a broken game may raise anything; report it
            self.fail(where, f"board_view raised {type(exc).__name__}: {exc}")
            return
        if not view.typed and not terminal:
            shown = [t for t, _ in view.moves] + list(view.other_moves)
            if sorted(shown) != sorted(game.legal_moves_text(state)):
                self.fail(where, "board_view's moves are not the legal moves")

    # --- whole games ----------------------------------------------------------------
    def play_out(
        self, seed: int, spec: GameSpec, plies: int | None, *, check: bool = True
    ) -> list[str]:
        """One seeded random game, checked at every position (unless ``check`` is
        false: a replay); its boards and legal moves, in order."""
        game = self.game
        state = self.guard(
            f"seed {seed}", "initial_state", lambda: game.initial_state(random.Random(seed))
        )
        if state is None:
            return []
        again = self.guard(
            f"seed {seed}", "initial_state", lambda: game.initial_state(random.Random(seed))
        )
        if again != state:
            self.fail(f"seed {seed}", "initial_state differs for the same seed")
        pick = random.Random(f"check_game:{seed}")
        boards: list[str] = []
        for ply in range(spec.max_plies + 1):
            where = f"seed {seed}, ply {ply}"
            if check:
                self.check_state(where, state, spec)
            boards.append(f"{game.render(state)}\n{game.legal_moves_text(state)[:50]}")
            moves = list(game.legal_moves(state))
            if not moves or len(self.problems) >= MAX_PROBLEMS or ply == plies:
                return boards
            state = game.play(state, game.move_to_text(state, pick.choice(moves)))
        self.fail(f"seed {seed}", f"the game went past spec.max_plies ({spec.max_plies})")
        return boards


def check_game(
    game: Game[Any, Any],
    *,
    games: int = 6,
    seed: int = 0,
    moves_per_position: int = 200,
    plies: int | None = None,
) -> CheckReport:
    """Check ``game`` against the contract above over ``games`` seeded random games
    (each cut after ``plies`` moves if given: quicker for long games, but then the
    ends and ``max_plies`` go unchecked).

    Returns a :class:`CheckReport` when nothing is wrong; raises
    :class:`GameContractError` listing every problem found otherwise."""
    checker = _Checker(game, random.Random(seed), moves_per_position)
    name = str(getattr(getattr(game, "spec", None), "name", type(game).__name__))
    spec = checker.check_spec()
    if spec is not None:
        for i in range(games):
            first = checker.play_out(seed + i, spec, plies)
            if checker.problems:
                break
            if checker.play_out(seed + i, spec, plies, check=False) != first:
                checker.fail(f"seed {seed + i}", "the same seed played a different game")
    if checker.problems:
        raise GameContractError(name, checker.problems)
    return CheckReport(
        game=name,
        games=games,
        positions=checker.positions,
        moves_round_tripped=checker.round_trips,
        skipped=tuple(sorted(checker.skipped)),
    )


__all__ = ["CheckReport", "GameContractError", "check_game"]
