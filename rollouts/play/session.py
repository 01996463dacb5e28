"""One game at the play page (or the terminal): who sits where, and every turn
through ``core.Episode``.

The episode's seat (``task.model_player``) is the side a model would play:

* **play, against the built-in opponent**: the person sits in the seat and
  moves with ``Episode.step_move`` (a click is a structured move, like a tool
  call); the built-in opponent answers inside ``step``.
* **play, against a model**: the model sits in the seat and replies with text
  (``Episode.step``); the person is the opponent, a ``MoveListOpponent`` of the
  moves clicked so far. When the episode asks it for a move it does not have
  yet (``NoMoveLeftError``), the page shows that position and waits; the next
  click is added and the episode is replayed from the task (every reply and
  every click so far), so its state is always core's replay of the same moves.
* **watch**: the model in the seat against the built-in opponent, one model
  turn per ``step()``; or, with ``other="model"``, the model against itself
  (``Task.seats`` ``"outside,outside"``): each ``step()`` one turn of the seat core
  says is to move, answered from that seat's own conversation
  (``core.conversation.messages(trajectory, seat=...)``: its own view only).

Nothing here knows a rule: boards come from ``Game.board_view``, legality
from ``parse_move``, turns, budgets and rewards from the episode.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from core import conversation as chat
from core.episode import Episode
from core.games import make_game
from core.games.base import BoardView, GameError
from core.opponents import MoveListOpponent, NoMoveLeftError, Opponent, make_opponent
from core.tasks import Task, TaskError

Mode = Literal["play", "watch"]
Other = Literal["opponent", "model"]


class PlayError(ValueError):
    """A request the session cannot carry out (the page shows the message);
    ``status`` is the HTTP status the app answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Model(Protocol):
    """A model: the conversation so far in, the raw reply text out."""

    name: str

    def reply(self, messages: list[dict[str, Any]]) -> str: ...


class ScriptedModel:
    """The scripted policy (``core.players.ScriptedPlayer``, the one behind the
    policy server): reads the conversation as a model would."""

    def __init__(self, policy: str, seed: int = 0) -> None:
        from core.players import PolicyError, ScriptedPlayer

        try:
            self.player = ScriptedPlayer(policy, seed)
        except PolicyError as e:
            raise PlayError(str(e)) from e
        self.name = f"scripted {policy}"

    def reply(self, messages: list[dict[str, Any]]) -> str:
        try:
            return self.player.reply(messages)
        except ValueError as e:  # ConversationError: it cannot read this conversation
            raise PlayError(f"the scripted model cannot answer: {e}", status=502) from e


class EndpointModel:
    """Any OpenAI-compatible chat endpoint (vLLM serving a trained model, an API)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        from rollouts.model.client import ChatClient

        self.client = ChatClient(base_url, model, api_key, max_retries=1)
        self.name = f"{model} at {base_url}"

    def reply(self, messages: list[dict[str, Any]]) -> str:
        import httpx

        from rollouts.model.client import ModelError

        try:
            return self.client.complete(messages).text
        except (ModelError, httpx.HTTPError) as e:
            raise PlayError(f"the model endpoint failed: {e}", status=502) from e


class CheckpointModel:
    """A trained checkpoint loaded in this process (``gamebridge play --model-path``),
    answering through serve-policy's transformers backend (``TransformersModel``, text
    mode): the reply it would serve, without a server; one backend for every session."""

    def __init__(self, backend: Any, name: str) -> None:
        self.backend = backend
        self.name = name

    @classmethod
    def load(
        cls, path: str, *, context: str = "observation", constrained: bool = False
    ) -> CheckpointModel:
        """The checkpoint in ``path``, greedy; ``constrained``: replies restricted to the
        legal moves core lists (constrained decoding, an option: its name says so). A
        folder that holds no model is a :class:`PlayError` (one line)."""
        try:
            from rollouts.model.transformers_backend import ModelPathError, TransformersModel
        except ImportError as e:  # pragma: no cover - the backend imports torch lazily
            raise PlayError(str(e)) from e
        try:
            backend = TransformersModel(path, context=context, constrained=constrained)
        except (ModelPathError, ValueError, ImportError) as e:
            raise PlayError(str(e)) from e
        name = f"checkpoint {path}" + (", constrained to legal moves" if constrained else "")
        return cls(backend, name)

    def reply(self, messages: list[dict[str, Any]]) -> str:
        from rollouts.model.policy_server import RequestError

        try:
            return str(self.backend.answer(messages, False).text)
        except RequestError as e:  # it cannot read this conversation (constrained decoding)
            raise PlayError(f"the checkpoint cannot answer: {e}", status=502) from e


@dataclass(frozen=True)
class Setup:
    """What the page's form chose."""

    game: str = "tictactoe"
    mode: Mode = "play"
    side: int = 0
    """play: the person's side; watch: the model's side."""
    other: Other = "opponent"
    """Who plays the other side: play, the person's (the opponent or the model);
    watch, the model's (the opponent, or the model itself: self-play)."""
    opponent: str = "minimax"
    depth: int = 2
    random_move_prob: float = 0.0
    seed: int = 0
    max_invalid_moves: int = 3

    def person_plays(self) -> bool:
        return self.mode == "play"

    def model_in_seat(self) -> bool:
        return self.mode == "watch" or self.other == "model"


def _task(setup: Setup) -> Task:
    game = make_game(setup.game) if _known(setup.game) else None
    if game is None:
        from core.games import list_games

        raise PlayError(
            f"unknown game {setup.game!r}; known: {', '.join(list_games())}, or openspiel:NAME"
        )
    players = game.spec.num_players
    if not (isinstance(setup.side, int) and 0 <= setup.side < players):
        raise PlayError(f"side must be in 0..{players - 1} for {setup.game}, got {setup.side!r}")
    seat = setup.side
    if setup.mode == "play" and setup.other == "model" and players > 1:
        seat = 1 - setup.side  # the model sits in the seat; the person is its opponent
    self_play = setup.mode == "watch" and setup.other == "model" and players > 1
    try:
        return Task(
            game=setup.game,
            seed=setup.seed,
            model_player=seat,
            seats=",".join(["outside"] * players) if self_play else None,
            opponent=setup.opponent,
            depth=setup.depth,
            random_move_prob=setup.random_move_prob,
            max_invalid_moves=setup.max_invalid_moves,
        )
    except TaskError as e:
        raise PlayError(str(e)) from e


def _known(name: str) -> bool:
    """A game ``make_game`` can make: a native one, or a bridged one (``openspiel:NAME``)."""
    if not isinstance(name, str):
        return False
    try:
        make_game(name)
    except (KeyError, GameError, ImportError):
        return False
    return True


def default_opponent(game: str) -> str:
    """The built-in opponent a game gets unless one is chosen: minimax where the
    game offers it, else MCTS (the OpenSpiel bridge)."""
    from core.tasks import DEFAULT_OPPONENT

    offered = make_game(game).spec.opponents
    if "minimax" in offered:
        return "minimax"
    return DEFAULT_OPPONENT if DEFAULT_OPPONENT in offered else offered[0]


_FLIP = {"win": "loss", "loss": "win", "draw": "draw"}


class Recorder(Opponent):
    """An opponent that plays as ``inner`` does and remembers the position it
    was last asked in and its move (the page marks the last move)."""

    def __init__(self, inner: Opponent) -> None:
        self.inner = inner
        self.name = inner.name
        self.searches = inner.searches
        self.last: tuple[Any, Any] | None = None

    def choose(self, game: Any, state: Any, rng: Any) -> Any:
        move = self.inner.choose(game, state, rng)
        self.last = (state, move)
        return move


def changed_cells(game: Any, before: Any, after: Any) -> list[list[int]]:
    """The cells whose text or mark differs between two positions' board views
    (a move's placed piece, Othello's flips, Nim's taken stones); none for a
    game without a board view."""
    try:
        a, b = game.board_view(before), game.board_view(after)
    except NotImplementedError:
        return []
    if a.shape != b.shape:
        return []
    rows, cols = a.shape
    return [
        [r, c]
        for r in range(rows)
        for c in range(cols)
        if a.cells[r][c] != b.cells[r][c] or a.marks[r][c] != b.marks[r][c]
    ]


def board_view(game: Any, state: Any) -> tuple[BoardView, bool]:
    """The game's own :class:`BoardView`, or (a game without one: the OpenSpiel
    bridge) a generic one: no cells, every legal move in ``other_moves`` (the page
    shows the board's text and the moves to pick from). Second: generic or not."""
    try:
        return game.board_view(state), False
    except NotImplementedError:
        over = game.is_terminal(state)
        return (
            BoardView(
                cells=(),
                marks=(),
                other_moves=() if over else tuple(game.legal_moves_text(state)),
                to_play=None if over else game.to_play(state),
            ),
            True,
        )


@dataclass
class Turn:
    """One reply in the seat as the page shows it (an episode event, or the
    model's reply whose opponent answer, the person's, is still to come)."""

    who: str
    reply: Any
    move: str | None
    error: str | None
    message: str | None
    opponent_moves: list[str] = field(default_factory=list)


class GameSession:
    """One game. Thread-safe: every public method holds the session's lock."""

    def __init__(self, setup: Setup, model: Model | None = None) -> None:
        if (
            setup.mode == "play"
            and _known(setup.game)
            and make_game(setup.game).spec.num_players == 1
        ):
            setup = dataclasses.replace(setup, other="opponent")  # one player: nobody else
        self.setup = setup
        self.task = _task(setup)
        self.game = make_game(setup.game)
        self.two_players = self.game.spec.num_players > 1
        self.self_play = self.task.seats is not None
        """watch: the model in every seat, each seat its own conversation."""
        if setup.model_in_seat() and model is None:
            raise PlayError("this game needs a model; choose one")
        self.model = model if setup.model_in_seat() else None
        self.lock = threading.Lock()
        self.created = self.last_used = time.monotonic()
        self.person_moves: list[str] = []
        """play vs model: the person's moves, in order (the MoveListOpponent's list)."""
        self.replies: list[Any] = []
        """The seat's replies: the model's text, or the person's {"move": ...}."""
        self.observations: list[str] = []
        self.waiting: Any = None
        """play vs model: the position where the person is to move, else None."""
        self.pending_move: str | None = None
        self.episode = Episode(self.task)
        self._rebuild()
        self._model_turns_if_playing()

    # --- the episode ------------------------------------------------------------------
    def _rebuild(self) -> None:
        """The episode from the task and every reply and move so far."""
        person_opponent = self.setup.mode == "play" and self.setup.other == "model"
        inner: Opponent | None = None
        if person_opponent:
            inner = MoveListOpponent(self.person_moves)
        elif self.two_players and not self.self_play:
            task = self.task
            inner = make_opponent(task.opponent, task.depth, task.random_move_prob)
        self.recorder = Recorder(inner) if inner is not None else None
        episode = Episode(self.task, opponent=self.recorder)
        observations: list[str] = []
        self.waiting, self.pending_move = None, None
        self.start_state = None
        try:
            observations.append(episode.reset())
            self.start_state = episode.state
            for reply in self.replies:
                result = (
                    episode.step_move(reply["move"])
                    if isinstance(reply, dict)
                    else episode.step(reply)
                )
                observations.append(result.observation)
        except NoMoveLeftError as e:
            self.waiting = e.state
            self.pending_move = e.move
        self.episode = episode
        self.observations = observations

    def _step_live(self, reply: Any) -> None:
        """Apply one seat reply to the live episode (no replay needed: no person
        is waited for inside ``step``)."""
        episode = self.episode
        result = (
            episode.step_move(reply["move"]) if isinstance(reply, dict) else episode.step(reply)
        )
        self.replies.append(reply)
        self.observations.append(result.observation)

    def messages(self) -> list[dict[str, Any]]:
        """The conversation the model in the seat has seen (text mode); in self-play,
        the conversation of the seat to move, its own view only."""
        if self.self_play:
            return chat.messages(self.episode.to_dict(), seat=self.episode.to_move)
        msgs: list[dict[str, Any]] = [chat.system(self.episode.system_prompt)]
        for i, obs in enumerate(self.observations):
            msgs.append(chat.observation(obs))
            if i < len(self.replies):
                msgs.append(chat.assistant_text(str(self.replies[i])))
        return msgs

    def _model_turn(self) -> None:
        if self.model is None:
            raise PlayError("nobody is to move here but you", status=409)
        reply = self.model.reply(self.messages())
        if self.setup.mode == "play":  # the person is the opponent: replay with them
            self.replies.append(reply)
            self._rebuild()
        else:
            self._step_live(reply)

    def _model_turns_if_playing(self) -> None:
        """play vs model: let the model reply until it is the person's turn."""
        if self.setup.mode != "play" or self.setup.other != "model":
            return
        limit = self.task.turn_limit() + 1
        while self.model_to_move() and limit > 0:
            self._model_turn()
            limit -= 1

    # --- whose turn -------------------------------------------------------------------
    def person_to_move(self) -> bool:
        if self.setup.mode != "play" or self.episode.done:
            return False
        if self.setup.other == "model" and self.two_players:
            return self.waiting is not None
        return True

    def model_to_move(self) -> bool:
        if self.model is None or self.episode.done:
            return False
        return self.waiting is None

    # --- actions ----------------------------------------------------------------------
    def move(self, text: Any) -> None:
        """The person's move (a click or typed text)."""
        if not isinstance(text, str) or not text.strip():
            raise PlayError("a move must be non-empty text")
        if self.episode.done:
            raise PlayError("the game is over; start a new one", status=409)
        if not self.person_to_move():
            raise PlayError("it is not your turn", status=409)
        if self.setup.other == "model" and self.two_players:
            # The person is the episode's opponent: an opponent's move must be legal.
            try:
                move = self.game.parse_move(self.waiting, text)
            except GameError as e:
                raise PlayError(str(e).splitlines()[0]) from e
            self.person_moves.append(self.game.move_to_text(self.waiting, move))
            self._rebuild()
            self._model_turns_if_playing()
        else:
            # The person is in the seat: any text goes to the episode, which judges it
            # (a typo costs an invalid-move retry, as it would cost a model).
            self._step_live({"move": text.strip()})

    def step(self) -> None:
        """watch: one model turn (and the opponent's answer)."""
        if self.setup.mode != "watch":
            raise PlayError("step is for watch mode; click the board to play", status=409)
        if self.episode.done:
            raise PlayError("the game is over; start a new one", status=409)
        self._model_turn()

    # --- what the page shows ----------------------------------------------------------
    def last_move(self) -> dict[str, Any] | None:
        """The last move of the person's opponent (the built-in opponent, or the
        model when the person plays against it): who, its text, the cells it
        changed. ``None`` before it has moved."""
        game, rec = self.game, self.recorder
        if self.setup.mode == "play" and self.setup.other == "model" and self.two_players:
            # The model sits in the seat; its last move led to the current position.
            turns = [t for t in self._turns() if t.move is not None]
            if not turns:
                return None
            after = self.waiting if self.waiting is not None else self.episode.state
            if rec is not None and rec.last is not None:
                before = game.apply(rec.last[0], rec.last[1])  # after the person's last move
            else:
                before = self.start_state
            if before is None:
                return None
            return {
                "by": "model",
                "move": turns[-1].move,
                "cells": changed_cells(game, before, after),
            }
        if rec is None or rec.last is None:
            return None
        state, move = rec.last
        return {
            "by": "opponent",
            "move": game.move_to_text(state, move),
            "cells": changed_cells(game, state, game.apply(state, move)),
        }

    MAX_PREVIEWED = 64
    """Positions with more legal moves get no hover preview (it costs two board views a move)."""

    def _effects(self, state: Any, board: BoardView) -> dict[str, list[list[int]]]:
        """Each clickable move's changed cells (Nim: every stone it takes; Othello: the
        disc and its flips), for the page's hover preview."""
        if not board.moves or len(board.moves) > self.MAX_PREVIEWED:
            return {}
        game = self.game
        out = {}
        for text, _cells in board.moves:
            try:
                after = game.apply(state, game.parse_move(state, text))
            except GameError:
                continue
            out[text] = changed_cells(game, state, after)
        return out

    def _turns(self) -> list[Turn]:
        seat_who = "model" if self.setup.model_in_seat() else "you"
        names = self.game.spec.player_names
        turns = [
            Turn(
                f"model ({names[e['seat']]})" if self.self_play else seat_who,
                e["reply"],
                e["move"],
                e["error"],
                e["message"],
                list(e["opponent_moves"]),
            )
            for e in self.episode.events
        ]
        if self.waiting is not None and len(self.replies) > len(turns):
            turns.append(Turn(seat_who, self.replies[-1], self.pending_move, None, None))
        return turns

    def _hidden(self) -> tuple[bool, bool]:
        """Whether the person plays a game that hides information, still going (then
        the page shows only the person's own view, as core shows each seat its own),
        and whether the other side's moves are hidden too (``spec.public_moves``)."""
        spec = self.game.spec
        hidden = spec.hidden_information and self.setup.mode == "play" and not self.episode.done
        return hidden, hidden and not spec.public_moves

    def _redacted(self, turns: list[Turn]) -> list[Turn]:
        """The turns as the person may see them: in a game whose moves are hidden, the
        model's replies and the opponent's moves are left out until the end."""
        model_seat = self.setup.other == "model" and self.two_players
        return [
            Turn(t.who, "(hidden until the game ends)", None, t.error, None, [])
            if model_seat
            else dataclasses.replace(t, opponent_moves=[])
            for t in turns
        ]

    def view(self) -> dict[str, Any]:
        """The JSON the page draws."""
        out = self._view()
        hidden, moves_hidden = self._hidden()
        if hidden:  # the person's own view only (the episode judges as ever)
            state = self.waiting if self.waiting is not None else self.episode.state
            out["board_text"] = self.game.observation(state, self.setup.side)
            if self.setup.other == "model" and self.two_players:
                out["observation"] = None  # the model's view: its cards
        if moves_hidden:
            out["turns"] = [t.__dict__ for t in self._redacted(self._turns())]
            out["last_move"] = None
            if self.setup.other == "model":
                out["replies"] = []
        return out

    def _view(self) -> dict[str, Any]:
        ep, game, spec = self.episode, self.game, self.game.spec
        state = self.waiting if self.waiting is not None else ep.state
        board, generic = board_view(game, state)
        your_turn = self.person_to_move()
        out: dict[str, Any] = {
            "setup": self.setup.__dict__,
            "task": self.task.to_dict(),
            "game": {"name": spec.name, "title": spec.title, "players": list(spec.player_names)},
            "model": self.model.name if self.model is not None else None,
            "opponent": (
                "the model itself"
                if self.self_play
                else "you"
                if self.setup.mode == "play" and self.setup.other == "model"
                else f"{self.task.opponent}"
                + (f" depth {self.task.depth}" if self.task.opponent == "minimax" else "")
                + (
                    f", random-move probability {self.task.random_move_prob:g}"
                    if self.task.random_move_prob
                    else ""
                )
            )
            if self.two_players
            else None,
            "seat": self.task.model_player,
            "you": self.setup.side if self.setup.mode == "play" else None,
            "board": {**board.to_dict(), "generic": generic},
            "effects": self._effects(state, board) if your_turn and not generic else {},
            "board_text": game.render(state),
            "your_turn": your_turn,
            "model_to_move": self.model_to_move(),
            "legal_moves": (game.legal_moves_text(state) if your_turn and not board.typed else []),
            "system_prompt": ep.system_prompt,
            "observation": ep.observation,
            "turns": [t.__dict__ for t in self._turns()],
            "last_move": self.last_move(),
            "invalid_moves": ep.invalid_moves,
            "invalid_left": self.task.max_invalid_moves - ep.invalid_moves,
            "max_invalid_moves": self.task.max_invalid_moves,
            "done": ep.done,
            "person_moves": list(self.person_moves),
            "replies": list(self.replies),
        }
        if ep.done:
            result = str(ep.result)
            person_is_opponent = (
                self.setup.mode == "play" and self.setup.other == "model" and self.two_players
            )
            out.update(
                your_result=(
                    None
                    if self.setup.mode != "play"
                    else _FLIP.get(result, result)
                    if person_is_opponent
                    else result
                ),
                reward_of="model" if self.setup.model_in_seat() else "you",
                answer=getattr(ep.state, "answer", None) or None,
                result=ep.result,
                termination=ep.termination,
                reward=ep.reward().to_dict(),
                trajectory=ep.to_dict(),
            )
        return out
