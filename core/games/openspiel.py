"""The OpenSpiel bridge: any sequential, deterministic, perfect-information
OpenSpiel game for one or two players, as a gamebridge ``Game``; and the games
of chance or hidden information in ``SEAT_GAMES`` (Kuhn and Leduc poker,
backgammon, Phantom Tic-Tac-Toe, Dark Hex).

Chance and hidden information
-----------------------------
A chance node's outcomes come from ``chance_outcomes`` and the episode draws
them (core's RNG from the task seed and the position), never pyspiel. In a
hidden-information game ``observation(state, player)`` is pyspiel's observation
string for that player and a status line, without the history (which holds the
other's cards); ``render`` is the full state, for logs. Information-set MCTS
(OpenSpiel's ``ISMCTSBot``, seeded) is the MCTS opponent where pyspiel can resample a state
from a player's view (``ISMCTS_GAMES``); elsewhere only ``random`` is offered.

Overview
--------
``make_game("openspiel:chess")``, ``make_game("openspiel:hex(board_size=7)")``:
the text after ``openspiel:`` is an OpenSpiel game string (a registered short
name, optionally with parameters), loaded by ``pyspiel.load_game``. pyspiel is
imported here, when such a game is made, never by ``import core``; without it
the error names the extra to install. ``openspiel_games()`` lists the
registered games the bridge accepts (``EXCLUDED`` says why the others are out).

Moves
-----
A move is an OpenSpiel action id (an ``int``), written as OpenSpiel's
``action_to_string`` writes it for the player to move (``e4``/``Nf3`` in
chess, ``a2a3`` in Breakthrough, ``B d4`` in Go; surrounding spaces dropped).
``parse_move`` is strict: the text must be exactly one legal action's text,
case and notation as OpenSpiel writes it. Legal moves come in OpenSpiel's
order (increasing action id).

State
-----
``OpenSpielState(history)``: the tuple of action ids played from the start.
It is immutable and hashable and its ``repr`` is stable across processes, so
the opponent's seed may derive from it. The pyspiel state for a history is
rebuilt from its parent's (an LRU cache keeps the recent ones).

Rendering
---------
OpenSpiel's observation string of the position, a status line (who moves, or
the result) and the history as action ids, which ``parse_board`` reads back
(the scripted players play from the observation alone, as a model would).
The prompt adds the legal moves.

Scoring
-------
The outcome comes from OpenSpiel's returns: the player with the higher return
wins, equal returns are a draw. One-player games are won only at the game's
maximum utility (lost otherwise). ``margin`` is the model's return scaled to
[-1, 1] by the game's utility range once the game is over (+1/-1 in the
win/loss games), 0 before. There is no heuristic evaluation, so alpha-beta is
not offered as an opponent; MCTS (pyspiel's ``MCTSBot`` with random rollouts)
and random are.
"""

from __future__ import annotations

import random
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.games.base import (
    Game,
    GameError,
    GameSpec,
    IllegalMoveError,
    InvalidMoveError,
    Outcome,
    Termination,
)

PREFIX = "openspiel:"
INSTALL_HINT = "install OpenSpiel with: pip install -e '.[openspiel]' (open-spiel==2.0.2)"

EXCLUDED: dict[str, str] = {
    "efg_game": "loads a game tree from a file; nothing to play by default",
}
"""Registered games that meet the criteria but are left out, and why (the
criteria themselves exclude chance, simultaneous-move, imperfect-information
and more-than-two-player games)."""

SEAT_GAMES: dict[str, str] = {
    "kuhn_poker": "chance (the deal), hidden cards, public bets",
    "leduc_poker": "chance (the deal, the public card), hidden cards, public bets",
    "backgammon": "chance (the dice), perfect information",
    "phantom_ttt": "hidden board: each player sees only its own marks and failed tries",
    "dark_hex": "hidden board: each player sees only its own stones and failed tries",
    "goofspiel": "simultaneous bids, collected one seat at a time (OpenSpiel's turn-based form)",
}
"""Games with chance or hidden information that the bridge offers, each checked
by a test (tests/games/test_openspiel_seats.py: seeded chance, and for hidden
information that no seat's observation shows what the other seat hides). Other
chance and imperfect-information games stay out until they are checked the
same way (``left_out`` says so)."""

HIDDEN_MOVES = frozenset({"phantom_ttt", "dark_hex", "goofspiel"})
"""Seat games in which a player does not see the other's moves."""

ISMCTS_GAMES = frozenset({"kuhn_poker", "leduc_poker"})
"""Hidden-information games whose pyspiel states resample from a seat's view, so
information-set MCTS (OpenSpiel's ``ISMCTSBot``, seeded) can play them; the others (Phantom
Tic-Tac-Toe, Dark Hex: ``ResampleFromInfostate`` not implemented) get only the
random opponent."""
"""Seat games in which a player does not see the other's moves."""

OBSERVATION_NOTES: dict[str, str] = {
    "kuhn_poker": (
        "The deck is Jack (0), Queen (1), King (2); each player antes 1 chip and is dealt "
        "one card. Your observation shows your card, then the chips player 0 and player 1 "
        "have put in the pot. Pass checks or folds, Bet bets or calls one chip; the higher "
        "card wins a showdown."
    ),
    "leduc_poker": (
        "A six-card deck (two suits of Jack, Queen, King); two betting rounds, a public card "
        "dealt before the second. Your observation shows your private card and, in round 2, "
        "the public card; a pair with the public card wins, else the higher card."
    ),
    "phantom_ttt": (
        "You see only your own marks and the cells you found taken; a try on a taken cell "
        "shows it to you and you move again."
    ),
    "dark_hex": (
        "You see only your own stones and the cells you found taken; a try on a taken cell "
        "shows it to you and you move again."
    ),
    "goofspiel": (
        "Both players bid for the current point card at once: you bid without seeing the "
        "other's bid of this round; the higher bid wins the card's points, equal bids "
        "discard it. Most points wins."
    ),
}
"""A sentence on how to read a seat game's observation string (OpenSpiel's are terse)."""

DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    "twixt": {"ansi_color_output": False},
}
"""Parameters set unless the name sets them: colour escapes do not belong in a
model's observation."""

PLAYER_NAMES: dict[str, tuple[str, str]] = {
    "chess": ("Black", "White"),
    "antichess": ("Black", "White"),
    "crazyhouse": ("Black", "White"),
    "go": ("Black", "White"),
    "othello": ("Black", "White"),
    "tic_tac_toe": ("x", "o"),
    "connect_four": ("x", "o"),
    "hex": ("x", "o"),
}
"""How the prompt names OpenSpiel's players 0 and 1 where the game's own
board says so (OpenSpiel's chess numbers Black 0 and White, who moves first,
1); elsewhere ``Player 0`` and ``Player 1``."""

MCTS_UCT_C = 2.0
"""The exploration constant of the MCTS opponent (OpenSpiel's default)."""
MCTS_MAX_MEMORY_MB = 100
MCTS_BASE_SIMULATIONS = 10
"""``mcts_simulations(level) = 10 * 2 ** (level - 1)``: level 1 runs 10
simulations, each level doubles them (the task's ``depth`` is the level)."""
CACHE_SIZE = 8192
"""pyspiel states kept per game (each apply builds one from its parent's)."""

_HISTORY_LINE = re.compile(r"^History \(OpenSpiel action ids\):((?: \d+)*)$", re.MULTILINE)
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\(.*\))?$")


def mcts_simulations(level: int) -> int:
    """Simulations the MCTS opponent runs per move at difficulty ``level``."""
    return int(MCTS_BASE_SIMULATIONS * 2 ** (level - 1))


def _pyspiel() -> Any:
    try:
        import pyspiel  # type: ignore[import-not-found,unused-ignore]  # optional, no stubs
    except ImportError as exc:
        raise ImportError(f"OpenSpiel games need pyspiel: {INSTALL_HINT}") from exc
    return pyspiel


def _qualifies(game_type: Any, pyspiel: Any) -> str | None:
    """Why a registered game type is not bridged, or ``None`` if it is."""
    t = pyspiel.GameType
    if game_type.short_name in SEAT_GAMES:
        return None
    if game_type.dynamics != t.Dynamics.SEQUENTIAL:
        return "not sequential (simultaneous moves)"
    if game_type.chance_mode != t.ChanceMode.DETERMINISTIC:
        return "has chance events"
    if game_type.information != t.Information.PERFECT_INFORMATION:
        return "imperfect information"
    if game_type.min_num_players > 2:
        return f"needs {game_type.min_num_players} or more players"
    if not game_type.provides_observation_string:
        return "provides no observation string"
    return EXCLUDED.get(game_type.short_name)


def openspiel_games() -> list[str]:
    """Every bridged game, as ``openspiel:<short name>``, sorted (imports pyspiel)."""
    pyspiel = _pyspiel()
    return sorted(
        PREFIX + gt.short_name
        for gt in pyspiel.registered_games()
        if _qualifies(gt, pyspiel) is None
    )


def left_out() -> dict[str, str]:
    """Every registered OpenSpiel game the bridge does not offer, with the reason."""
    pyspiel = _pyspiel()
    return {
        gt.short_name: why
        for gt in pyspiel.registered_games()
        if (why := _qualifies(gt, pyspiel)) is not None
    }


class OpenSpielState(NamedTuple):
    """A position: the action ids played from the start."""

    history: tuple[int, ...]


@dataclass
class _Node:
    """A cached pyspiel state and what has been read from it."""

    state: Any
    legal: tuple[int, ...] | None = None
    texts: dict[int, str] | None = None
    chance: tuple[tuple[int, float], ...] | None = None


class OpenSpielGame(Game[OpenSpielState, int]):
    """One OpenSpiel game behind the gamebridge contract (see the module docstring)."""

    def __init__(self, game_string: str) -> None:
        pyspiel = _pyspiel()
        text = game_string.strip()
        if not _NAME.match(text):
            raise GameError(
                f"{PREFIX}{game_string!r} is not an OpenSpiel game string such as "
                f"'chess' or 'hex(board_size=7)'"
            )
        short = text.partition("(")[0]
        types = {gt.short_name: gt for gt in pyspiel.registered_games()}
        if short not in types:
            raise GameError(
                f"unknown OpenSpiel game {short!r}; bridged games: "
                f"{', '.join(n[len(PREFIX) :] for n in openspiel_games())}"
            )
        why = _qualifies(types[short], pyspiel)
        if why is not None:
            raise GameError(f"OpenSpiel game {short!r} cannot be bridged: {why}")
        try:
            params = dict(_load_quietly(pyspiel, text).get_parameters()) if "(" in text else {}
            given = set(params)
            for key, value in DEFAULT_PARAMS.get(short, {}).items():
                params.setdefault(key, value)
            if types[short].max_num_players > 2 and "players" not in given:
                params["players"] = 2
            self._game = (
                _load_quietly(pyspiel, short, params) if params else _load_quietly(pyspiel, short)
            )
            if self._game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
                # Both seats' moves collected, then applied together: OpenSpiel's
                # turn-based wrapper asks one seat, then the other, and hides the
                # first's move until the round is played.
                self._game = pyspiel.convert_to_turn_based(self._game)
        except pyspiel.SpielError as exc:
            raise GameError(f"OpenSpiel cannot load {text!r}: {exc}") from exc
        self._pyspiel = pyspiel
        game_type = self._game.get_type()
        players = self._game.num_players()
        if players not in (1, 2):
            raise GameError(f"OpenSpiel game {text!r} has {players} players; 1 or 2 are bridged")
        self._min_u = float(self._game.min_utility())
        self._max_u = float(self._game.max_utility())
        self._scale = max(abs(self._min_u), abs(self._max_u)) or 1.0
        self._cache: OrderedDict[tuple[int, ...], _Node] = OrderedDict()
        self._lock = threading.Lock()
        self._mcts_ok = game_type.reward_model == pyspiel.GameType.RewardModel.TERMINAL
        self._hidden = game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION
        self._has_chance = game_type.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC
        if self._hidden:
            # Plain MCTS would search the true state and see the other seat's cards;
            # information-set MCTS needs pyspiel to resample a state from a seat's view.
            self._mcts_ok = self._mcts_ok and short in ISMCTS_GAMES
        root = self.initial_state()
        while self.chance_outcomes(root):  # the first decision, for the examples
            root = self.apply(root, self.chance_outcomes(root)[0][0])
        examples = tuple(dict.fromkeys(self.legal_moves_text(root)[:3]))
        names = PLAYER_NAMES.get(short, ("Player 0", "Player 1"))[:players]
        if players == 1:
            names = ("Player",)
        title = f"{types[short].long_name} ({PREFIX}{text})"
        first = names[self._to_play(root)]
        self.spec = GameSpec(
            name=PREFIX + text,
            title=title,
            num_players=players,
            player_names=names,
            board_shape=_board_shape(self._game.get_parameters()),
            max_plies=int(self._game.max_game_length())
            + (int(self._game.max_chance_nodes_in_history()) if self._has_chance else 0),
            move_syntax=(
                "Write one legal move exactly as listed under 'Legal moves' "
                "(OpenSpiel's notation, same case and spacing)."
            ),
            move_examples=examples or ("?",),
            rules=(
                f"The rules of {types[short].long_name} as OpenSpiel implements them "
                f"({short}). "
                + (
                    f"{first} moves first. The player with the higher final score wins; "
                    "equal scores draw."
                    if players == 2
                    else f"Reach the best score, {self._max_u:g}, to win."
                )
                + (f" {OBSERVATION_NOTES[short]}" if short in OBSERVATION_NOTES else "")
            ),
            opponents=(("mcts", "random") if self._mcts_ok else ("random",))
            if players == 2
            else (),
            hidden_information=self._hidden,
            public_moves=short not in HIDDEN_MOVES,
            chance=self._has_chance,
        )
        self._short = short

    # --- pyspiel states -----------------------------------------------------
    def _node(self, history: tuple[int, ...]) -> _Node:
        """The cached pyspiel state for ``history`` (built from its parent's)."""
        with self._lock:
            node = self._cache.get(history)
            if node is not None:
                self._cache.move_to_end(history)
                return node
            parent = self._cache.get(history[:-1]) if history else None
        if not history:
            state = self._game.new_initial_state()
        elif parent is not None:
            state = parent.state.child(history[-1])
        else:
            state = self._game.new_initial_state()
            for action in history:
                state.apply_action(action)
        node = _Node(state)
        with self._lock:
            self._cache[history] = node
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return node

    def _to_play(self, state: OpenSpielState) -> int:
        player = int(self._node(state.history).state.current_player())
        return max(player, 0)

    def _texts(self, node: _Node) -> dict[int, str]:
        if node.texts is None:
            legal = self._legal(node)
            player = node.state.current_player()
            node.texts = {a: node.state.action_to_string(player, a).strip() for a in legal}
        return node.texts

    def _legal(self, node: _Node) -> tuple[int, ...]:
        if node.legal is None:
            node.legal = () if node.state.is_terminal() else tuple(node.state.legal_actions())
        return node.legal

    # --- positions ----------------------------------------------------------
    def initial_state(self, rng: random.Random | None = None) -> OpenSpielState:
        """The empty history (``rng`` is ignored: the games are deterministic)."""
        return OpenSpielState(())

    def to_play(self, state: OpenSpielState) -> int:
        """OpenSpiel's current player (0 once the game is over)."""
        return self._to_play(state)

    def legal_moves(self, state: OpenSpielState) -> tuple[int, ...]:
        """OpenSpiel's legal action ids, increasing; empty when terminal."""
        return self._legal(self._node(state.history))

    def apply(self, state: OpenSpielState, move: int) -> OpenSpielState:
        """The history with ``move`` appended (unchecked)."""
        return OpenSpielState((*state.history, move))

    def chance_outcomes(self, state: OpenSpielState) -> tuple[tuple[int, float], ...]:
        """OpenSpiel's chance outcomes and probabilities at a chance node (a card
        dealt, dice rolled), in its order; empty elsewhere."""
        if not self._has_chance:
            return ()
        node = self._node(state.history)
        if node.chance is None:
            node.chance = (
                tuple((int(a), float(p)) for a, p in node.state.chance_outcomes())
                if node.state.is_chance_node()
                else ()
            )
        return node.chance

    def observation(self, state: OpenSpielState, player: int) -> str:
        """``player``'s view. Perfect information: ``render``. Hidden information:
        OpenSpiel's observation string for ``player`` and the status line, and no
        history (it holds the other seat's cards)."""
        if not self._hidden:
            return self.render(state)
        node = self._node(state.history)
        board = str(node.state.observation_string(player)).rstrip()
        return f"{board}\n{self._status(state)}"

    def information_state(self, state: OpenSpielState, player: int) -> str:
        """OpenSpiel's information state string of ``player``: everything that
        player knows (its cards, its own and the public moves). Tests check that a
        seat's observation depends on nothing else. Perfect information: the
        history, which every player knows."""
        if not self._hidden:
            return " ".join(str(a) for a in state.history)
        return str(self._node(state.history).state.information_state_string(player))

    def is_terminal(self, state: OpenSpielState) -> bool:
        return bool(self._node(state.history).state.is_terminal())

    def returns(self, state: OpenSpielState) -> tuple[float, ...]:
        """OpenSpiel's returns of the position, one per player."""
        return tuple(float(r) for r in self._node(state.history).state.returns())

    def outcome(self, state: OpenSpielState) -> Outcome | None:
        """From the returns: the higher one wins, equal ones draw; a one-player
        game is won at the maximum utility, lost otherwise."""
        if not self.is_terminal(state):
            return None
        scores = self.returns(state)
        if len(scores) == 1:
            if scores[0] >= self._max_u:
                return Outcome(Termination.WIN, 0, scores)
            return Outcome(Termination.LOSS, None, scores)
        if scores[0] == scores[1]:
            return Outcome(Termination.DRAW, None, scores)
        return Outcome(Termination.WIN, 0 if scores[0] > scores[1] else 1, scores)

    # --- notation -----------------------------------------------------------
    def move_to_text(self, state: OpenSpielState, move: int) -> str:
        """OpenSpiel's ``action_to_string`` for the player to move, stripped."""
        node = self._node(state.history)
        texts = self._texts(node)
        if move in texts:
            return texts[move]
        player = max(int(node.state.current_player()), 0)
        return str(node.state.action_to_string(player, move)).strip()

    def parse_move(self, state: OpenSpielState, text: str) -> int:
        """The legal action whose text is exactly ``text`` (surrounding spaces
        ignored). ``IllegalMoveError`` when the text was a legal move earlier
        in this game (a taken cell, a moved piece's old move), or the game is
        over; ``InvalidMoveError`` otherwise."""
        if not isinstance(text, str):
            raise InvalidMoveError(f"a move must be text, not {type(text).__name__}")
        wanted = text.strip()
        node = self._node(state.history)
        if node.state.is_terminal():
            raise IllegalMoveError(f"the game is over; no move is legal\n{self.render(state)}")
        matches = [a for a, t in self._texts(node).items() if t == wanted]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:  # OpenSpiel wrote two legal actions alike
            raise InvalidMoveError(
                f"{wanted!r} names {len(matches)} legal moves\n{self.render(state)}"
            )
        if wanted and self._was_legal(state.history, wanted):
            raise IllegalMoveError(f"{wanted!r} is not legal here\n{self.render(state)}")
        raise InvalidMoveError(
            f"{text!r} is not a {self.spec.title} move: write one of the legal moves exactly\n"
            f"{self.render(state)}"
        )

    def _was_legal(self, history: tuple[int, ...], text: str) -> bool:
        """Whether ``text`` named a legal move at some earlier position of this
        game (a real move of the game, no longer legal). OpenSpiel is not asked
        to name actions that are not legal: some games crash on it."""
        return any(
            text in self._texts(self._node(history[:ply])).values()
            for ply in range(len(history) - 1, -1, -1)
        )

    def render(self, state: OpenSpielState) -> str:
        """OpenSpiel's observation string, a status line and the history."""
        node = self._node(state.history)
        if self._hidden:  # every seat's cards: for logs, never a seat's observation
            board = str(node.state).rstrip()
        else:
            board = str(node.state.observation_string(self._to_play(state))).rstrip()
        history = "".join(f" {a}" for a in state.history)
        return f"{board}\n{self._status(state)}\nHistory (OpenSpiel action ids):{history}"

    def _status(self, state: OpenSpielState) -> str:
        result = self.outcome(state)
        names = self.spec.player_names
        if result is None:
            status = f"{names[self._to_play(state)]} to move."
        elif len(names) == 1:
            status = f"Game over: score {result.scores[0]:g}."
        elif result.winner is None:
            status = "Game over: draw."
        else:
            status = f"Game over: {names[result.winner]} wins."
        return status

    def parse_board(self, text: str) -> OpenSpielState:
        """The position whose history line ``text`` shows (replayed, checked)."""
        found = _HISTORY_LINE.findall(text)
        if len(found) != 1:
            raise GameError(f"no {self.spec.title} history line found in:\n{text}")
        state = self.initial_state()
        for action in (int(a) for a in found[0].split()):
            if action not in self.legal_moves(state):
                raise GameError(f"the history plays an illegal action {action} in:\n{text}")
            state = self.apply(state, action)
        return state

    def state_to_json(self, state: OpenSpielState) -> Any:
        return list(state.history)

    # --- scoring ------------------------------------------------------------
    def margin(self, state: OpenSpielState, player: int) -> float:
        """``player``'s return over the utility range's largest magnitude once
        the game is over, 0 before."""
        if not self.is_terminal(state):
            return 0.0
        value = self.returns(state)[player] / self._scale
        return max(-1.0, min(1.0, value))

    def solve(self, state: OpenSpielState, rng: random.Random) -> int:
        """One-player games: a random legal move (the bridge has no solver)."""
        return rng.choice(self.legal_moves(state))

    def mcts(self, state: OpenSpielState, level: int, rng: random.Random) -> int:
        """pyspiel's ``MCTSBot`` move (random rollouts, ``mcts_simulations(level)``
        simulations), seeded from ``rng`` so the reply is deterministic."""
        if not self._mcts_ok:
            raise NotImplementedError(f"{self.spec.name} has rewards before the end; no MCTS")
        seed = rng.getrandbits(31)
        pyspiel = self._pyspiel
        evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
        if self._hidden:  # information-set MCTS: searches states resampled from the seat's view
            return _ismcts(self._game, self._node(state.history).state, level, seed)
        bot = pyspiel.MCTSBot(
            self._game,
            evaluator,
            MCTS_UCT_C,
            mcts_simulations(level),
            MCTS_MAX_MEMORY_MB,
            False,
            seed,
            False,
        )
        return int(bot.step(self._node(state.history).state))


def _ismcts(game: Any, state: Any, level: int, seed: int) -> int:
    """OpenSpiel's information-set MCTS (its Python ``ISMCTSBot``, random rollouts)
    with every random choice from one ``numpy`` generator seeded by ``seed``.

    Not ``pyspiel.ISMCTSBot``, nor the Python bot's default resampler: both resample
    the other seat's cards with an unseeded sampler, so the visit counts, and the
    move, changed from call to call for one state and seed (in Kuhn Poker about 1
    seed in 8 at 20 simulations): one task's rollouts met different opponents
    (tests/games/test_openspiel_seats.py checks the move is a function of the seed)."""
    import numpy as np
    from open_spiel.python.algorithms import ismcts, mcts  # type: ignore[import-untyped]  # no stubs

    random_state = np.random.RandomState(seed)
    bot = ismcts.ISMCTSBot(
        game,
        mcts.RandomRolloutEvaluator(1, random_state),
        MCTS_UCT_C,
        mcts_simulations(level),
        random_state=random_state,
        final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
    )
    # Its default resampler draws from an unseeded pyspiel.UniformProbabilitySampler.
    bot.set_resampler(
        lambda sampled, player: sampled.resample_from_infostate(player, random_state.uniform)
    )
    return int(bot.step(state.clone()))


def _board_shape(params: Mapping[str, Any]) -> tuple[int, int]:
    """Rows and columns from the usual parameter names (0 where there are none)."""
    for rows_key, cols_key in (("rows", "columns"), ("num_rows", "num_cols"), ("m", "n")):
        if rows_key in params and cols_key in params:
            return int(params[rows_key]), int(params[cols_key])
    for key in ("board_size", "size"):
        if key in params:
            return int(params[key]), int(params[key])
    return (0, 0)


def make_openspiel_game(game_string: str) -> OpenSpielGame:
    """The bridged game ``openspiel:<game_string>``."""
    return OpenSpielGame(game_string)


_STDERR_LOCK = threading.Lock()


def _load_quietly(pyspiel: Any, *args: Any) -> Any:
    """``pyspiel.load_game(*args)`` without the line OpenSpiel's C++ writes to
    file descriptor 2 before raising ``SpielError`` ("OpenSpiel exception: ..."):
    the error is raised as usual, and said once, by the caller."""
    import os
    import sys

    with _STDERR_LOCK:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):  # no file descriptor 2: nothing to hide
            return pyspiel.load_game(*args)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 2)
            finally:
                os.close(devnull)
            return pyspiel.load_game(*args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
