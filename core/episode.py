"""The turn loop: the only one in gamebridge.

``Episode(task)`` plays one game between the model and the built-in opponent
(or the model alone, for one-player games). Adapters and drivers call
``reset()`` and ``step(reply)`` (or ``step_tool(arguments)`` for a tool call,
with the call's raw JSON arguments) and never apply moves, call the opponent,
judge a tool call or score a game themselves.

* The opponent replies inside ``step``; if it moves first, ``reset()`` already
  shows its move.
* A reply that is badly formatted, not a move or illegal leaves the position
  unchanged and costs a retry (``max_invalid_moves`` per game; one more
  forfeits the game, a loss) and a penalty (capped in the rubric).
* ``max_turns`` model replies end the game, settled as the task says.
* Every reply is recorded as a ``core.events.Event``, with the observation the
  model read before it; ``to_dict()`` is the JSON trajectory (``observation``:
  the one the model reads now, the last one once done; ``core.conversation``
  turns it into the chat), and ``Episode.replay(task, replies)`` rebuilds it
  exactly.
* The rubric scores the episode's ``ending()`` (the task's ``reward_weights``
  unless a ``rubric`` is given).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core import prompts
from core.events import TEXT, TOOL, Ending, EpisodeTermination, Event, Result
from core.games import make_game
from core.games.base import Game, GameError, IllegalMoveError, InvalidMoveError, Outcome
from core.opponents import NoMoveLeftError, Opponent, make_opponent, opponent_rng
from core.parsing import (
    FormatError,
    ToolArgumentsError,
    format_reply,
    parse_reply,
    parse_tool_arguments,
)
from core.rewards import RESULT_VALUE, RewardBreakdown, Rubric
from core.rng import derive_rng
from core.tasks import OUTSIDE, Task


class EpisodeError(RuntimeError):
    """The episode was used out of order."""


class SharedConversationError(EpisodeError, ValueError):
    """Several outside seats asked to share one conversation in a game with hidden
    information (each would read what the other hides)."""


class EpisodeNotStartedError(EpisodeError):
    """``step`` before ``reset``."""


class EpisodeFinishedError(EpisodeError):
    """``step`` after the episode ended; nothing was changed."""


@dataclass(frozen=True)
class StepResult:
    """What ``step`` returns: the next observation, whether the episode is over,
    the reward (the rubric total on the final step, 0.0 before) and details."""

    observation: str
    done: bool
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)


_JSON_SCALARS = (str, int, float, bool, type(None))
_MAX_DEPTH = 32
"""Tool arguments nested deeper are recorded as their ``repr`` from there on."""


def _recordable(value: Any) -> Any:
    """A text reply as the trajectory records it: JSON scalars as they are (so a
    replay hands the episode the same value and gets the same rejection),
    anything else (bytes, objects) as its ``repr``."""
    return value if isinstance(value, _JSON_SCALARS) else repr(value)


def _json_safe(value: Any, depth: int = 0) -> Any:
    """A tool call's arguments as the trajectory records them: JSON values as they
    are (objects with text keys, lists, scalars, finite numbers), so a replay
    gets the same rejection; anything else (bytes, tuples, NaN, objects) as its
    ``repr``, wherever it sits."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, _JSON_SCALARS):
        return value
    if depth < _MAX_DEPTH:
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {k: _json_safe(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [_json_safe(v, depth + 1) for v in value]
    return repr(value)


@dataclass(frozen=True)
class ToolCall:
    """A ``make_move`` call in a list of replies for ``Episode.replay``: its raw
    arguments (any JSON value). A plain mapping in that list means the same."""

    arguments: Any


def resolve_chance(game: Game[Any, Any], task: Task, state: Any) -> Any:
    """``state`` with every chance node from it on resolved: each outcome drawn
    by its probability from an RNG derived from the task seed and the position,
    so every rollout of a task meets the same dice and cards."""
    outcomes = game.chance_outcomes(state)
    while outcomes:
        point = derive_rng(task.seed, "chance", task.game, state).random()
        move = outcomes[-1][0]
        for candidate, probability in outcomes:
            point -= probability
            if point < 0:
                move = candidate
                break
        state = game.apply(state, move)
        outcomes = game.chance_outcomes(state)
    return state


def start_state(task: Task, game: Game[Any, Any] | None = None) -> Any:
    """The state ``task``'s game starts from, before any opening ply: the game's
    ``initial_state`` drawn from the task seed, chance resolved. ``Episode.reset``
    starts here, so this is the one place the draw is made; e.g. a Wordle task's
    hidden answer is ``start_state(task).answer``, known without playing.

    >>> from core.tasks import Task
    >>> start_state(Task(game="wordle", seed=7)).answer
    'yummy'
    """
    game = make_game(task.game) if game is None else game
    return resolve_chance(
        game, task, game.initial_state(derive_rng(task.seed, "initial", task.game))
    )


class Episode:
    """One game of ``task``, driven by the model's replies."""

    def __init__(
        self,
        task: Task | Mapping[str, Any],
        rubric: Rubric | None = None,
        opponent: Opponent | None = None,
    ) -> None:
        """``opponent``, when given, plays the other side instead of the one
        the task describes (a person at the play page: ``MoveListOpponent``)."""
        self.task = Task.from_dict(task, strict=False) if not isinstance(task, Task) else task
        self.game = make_game(self.task.game)
        self.rubric = rubric or Rubric(self.task.weights())
        self.opponent: Opponent | None = None
        task = self.task
        self.bots: dict[int, Opponent] = {}
        """The built-in player of each bot seat."""
        if task.seats is None:
            self.outside: tuple[int, ...] = (task.model_player,)
            if self.game.spec.num_players > 1:
                self.opponent = (
                    opponent
                    if opponent is not None
                    else make_opponent(task.opponent, task.depth, task.random_move_prob)
                )
                self.bots = {
                    p: self.opponent
                    for p in range(self.game.spec.num_players)
                    if p != task.model_player
                }
        else:
            roles = task.seat_roles()
            self.outside = (task.model_player,) + tuple(
                p for p, role in enumerate(roles) if role == OUTSIDE and p != task.model_player
            )
            for p, role in enumerate(roles):
                if role != OUTSIDE:
                    kind, _, level = role.partition(":")
                    self.bots[p] = (
                        opponent
                        if opponent is not None
                        else make_opponent(kind, int(level or 1), task.random_move_prob)
                    )
            self.opponent = next(iter(self.bots.values()), None)
        self.several = task.seats is not None
        """Whether the task names its seats (``Task.seats``): events then record
        their seat and the trajectory each seat's results."""
        self.system_prompt = prompts.system_prompt(self.game, self.task)
        self.tool_system_prompt = prompts.system_prompt(self.game, self.task, tools=True)
        self.tool_schema = prompts.tool_schema(self.game)
        self._started = False
        self._clear()

    def _clear(self) -> None:
        self.state: Any = None
        self.events: list[Event] = []
        self.opening: list[str] = []
        self.opponent_first: list[str] = []
        self.invalid_moves = 0
        self.done = False
        self.termination: EpisodeTermination | None = None
        self.result: Result | None = None
        self.outcome: Outcome | None = None
        self.observation = ""
        self.initial_board: str | None = None
        self._breakdown: RewardBreakdown | None = None
        self.results: dict[int, Result] = {}
        """Each outside seat's result once the episode is over."""
        self._breakdowns: dict[int, RewardBreakdown] = {}
        self._invalid: dict[int, int] = {seat: 0 for seat in self.outside}
        self._replies: dict[int, int] = {seat: 0 for seat in self.outside}
        self._seen: dict[int, list[str]] = {seat: [] for seat in self.outside}
        self._observations: dict[int, str] = {}

    # --- the loop ---------------------------------------------------------
    def reset(self) -> str:
        """Start (or restart) the game; return the first observation."""
        self._clear()
        self._started = True
        game, task = self.game, self.task
        state = start_state(task, game)
        opening_rng = derive_rng(task.seed, "opening", task.game)
        for _ in range(task.opening_plies):
            moves = list(game.legal_moves(state))
            if not moves:
                break
            move = opening_rng.choice(moves)
            nxt = self._chance(game.apply(state, move))
            if game.is_terminal(nxt):
                break
            self.opening.append(game.move_to_text(state, move))
            state = nxt
        self.state = state
        self.initial_board = game.observation(state, task.model_player)
        self.opponent_first = self._opponent_turns()
        seat = self._seat_to_move()
        self.observation = prompts.turn_observation(
            game,
            self.state,
            self._take_seen(seat),
            board=None if self.opponent_first or seat != task.model_player else self.initial_board,
            seat=seat,
        )
        self._observations[seat] = self.observation
        self._sample_rng = derive_rng(task.seed, "sample_reply", task.game)
        return self.observation

    def sample_reply(self, *, tools: bool = False) -> str:
        """A well-formed reply playing a random legal move (GEM's
        ``sample_random_action``, baselines, smoke tests): ``<move>..</move>``
        (with an empty ``<think>`` when the task requires one), or with ``tools``
        the bare move, a ``make_move`` argument. Nothing is played. The choices
        come from the task seed: one sequence per reset, the same every run."""
        self._check_open()
        move = self._sample_rng.choice(self.game.legal_moves_text(self.state))
        if tools:
            return move
        return format_reply(move, "" if self.task.think_required else None)

    def step(self, reply: str) -> StepResult:
        """Apply the model's text reply (``<move>...</move>``)."""
        self._check_open()
        try:
            parsed = parse_reply(reply, think_required=self.task.think_required)
        except FormatError as exc:
            return self._reject(_recordable(reply), "format", str(exc), format_ok=False, kind=TEXT)
        return self._apply(reply, parsed.move, format_ok=True, kind=TEXT)

    def step_tool(self, arguments: Any) -> StepResult:
        """Apply a ``make_move`` tool call, judged from its raw arguments: the JSON
        value the framework decoded from the model's call, unchanged (any type,
        missing or extra keys). Exactly ``{"move": "<text>"}`` plays that move text
        (no tags to parse); anything else is a format failure, rejected and charged
        like a badly formatted text reply, and recorded as the arguments came
        (JSON-safe; ``null``, no arguments at all, as ``{}``, the form TRL and
        OpenAI clients give it). A well-formed call's event records the move text."""
        self._check_open()
        if arguments is None:
            arguments = {}
        try:
            move = parse_tool_arguments(arguments)
        except ToolArgumentsError as exc:
            return self._reject(
                _json_safe(arguments), "format", str(exc), format_ok=False, kind=TOOL
            )
        return self._apply(move, move, format_ok=True, kind=TOOL)

    def step_move(self, move: Any) -> StepResult:
        """``step_tool({"move": move})``: a tool call's ``move`` argument alone."""
        return self.step_tool({"move": move})

    def answer_tool(self, arguments: Any) -> str:
        """The answer to one ``make_move`` call with these raw arguments: played
        (:meth:`step_tool`) while the game goes on, the next observation; a call after
        the game ended is not played and is answered with the final observation."""
        if not self.done:
            self.step_tool(arguments)
        return self.observation

    def settle(self) -> StepResult:
        """End an unfinished game now, because the framework or the model
        stopped (a model that stops calling tools, an agent's step limit).
        It is settled like a turn cap (``task.turn_cap_result``), never left
        unscored: stopping must not be a way out of a losing game."""
        self._check_open()
        self._finish(None, EpisodeTermination.STOPPED, self._settled())
        breakdown = self.reward()
        info: dict[str, Any] = {
            "valid": True,
            "format_ok": True,
            "error": None,
            "message": None,
            "move": None,
            "opponent_move": None,
            "opponent_moves": [],
            "invalid_moves": self.invalid_moves,
            "turn": len(self.events),
            "termination": str(self.termination),
            "result": str(self.result),
            "reward": breakdown.to_dict(),
        }
        if self.several:
            info["results"] = {str(s): str(r) for s, r in self.results.items()}
            info["rewards"] = {str(s): b.total for s, b in self._breakdowns.items()}
        return StepResult(self.observation, True, breakdown.total, info)

    def cap(self, result: StepResult, max_replies: int | None) -> tuple[StepResult, bool]:
        """After a step: a framework's own cap of ``max_replies`` replies (SkyRL's
        ``max_turns``, GEM's ``max_episode_steps``, an agent's ``max_steps``; ``None``:
        none), reached while the game goes on, ends it on this step: settled
        (:meth:`settle`), as the task's turn cap would be, never a silent cut. Returns
        the step's result (the settled one if the cap ended the game) and whether it did."""
        if result.done or max_replies is None or len(self.events) < max_replies:
            return result, False
        return self.settle(), True

    def finish(self) -> Episode:
        """The episode, finished: an unfinished one is settled (:meth:`settle`), a
        finished one is left as it is. For a framework that asks for the reward
        whether or not the game ended (a trainer's reward columns, a ``/verify``, a
        rollout out of budget): one call, never a second ending."""
        if not self.done:
            self.settle()
        return self

    # --- internals --------------------------------------------------------
    def _check_started(self) -> None:
        if not self._started:
            raise EpisodeNotStartedError("call reset() before step()")

    def _check_open(self) -> None:
        self._check_started()
        if self.done:
            raise EpisodeFinishedError(
                f"the episode is over ({self.termination}: {self.result}); call reset()"
            )

    def _apply(self, reply: str, text: str, *, format_ok: bool, kind: str) -> StepResult:
        game = self.game
        seat = self._seat_to_move()
        try:
            move = game.parse_move(self.state, text)
        except InvalidMoveError as exc:
            return self._reject(reply, "invalid_move", str(exc), format_ok=format_ok, kind=kind)
        except IllegalMoveError as exc:
            return self._reject(reply, "illegal_move", str(exc), format_ok=format_ok, kind=kind)
        except GameError as exc:  # any other typed rejection from a game
            return self._reject(reply, "invalid_move", str(exc), format_ok=format_ok, kind=kind)
        move_text = game.move_to_text(self.state, move)
        self._played(seat, move_text)
        self.state = self._chance(game.apply(self.state, move))
        replies: list[str] = []
        if not game.is_terminal(self.state):
            try:
                replies = self._opponent_turns()
            except NoMoveLeftError as exc:  # a person's turn (MoveListOpponent): say what
                exc.move = move_text  # the seat played before it was asked
                raise
        self._replies[seat] += 1
        event = self._event(seat, reply, kind, format_ok, move_text, None, None, replies)
        if game.is_terminal(self.state):
            self.outcome = game.outcome(self.state)
            if self.outcome is None:
                raise EpisodeError(f"{game.spec.name}: a terminal position has no outcome")
            outcome = self.outcome
            return self._finish(
                event,
                EpisodeTermination.GAME_OVER,
                {s: Result(outcome.result_for(s)) for s in self.outside},
            )
        if self._replies[seat] >= self.task.turn_limit():
            return self._finish(event, EpisodeTermination.TURN_CAP, self._settled())
        nxt = self._seat_to_move()
        self.observation = prompts.turn_observation(
            game,
            self.state,
            self._take_seen(nxt),
            board=event.board if nxt == seat else None,
            seat=nxt,
        )
        self._observations[nxt] = self.observation
        return StepResult(self.observation, False, 0.0, self._info(event))

    def _reject(
        self, reply: str, error: str, message: str, *, format_ok: bool, kind: str
    ) -> StepResult:
        seat = self._seat_to_move()
        self._invalid[seat] += 1
        self._replies[seat] += 1
        if seat == self.task.model_player:
            self.invalid_moves = self._invalid[seat]
        event = self._event(seat, reply, kind, format_ok, None, error, message, [])
        left = self.task.max_invalid_moves - self._invalid[seat]
        if left < 0:
            results = {s: Result.LOSS if s == seat else Result.WIN for s in self.outside}
            return self._finish(event, EpisodeTermination.FORFEIT, results, forfeit=seat)
        if self._replies[seat] >= self.task.turn_limit():
            return self._finish(event, EpisodeTermination.TURN_CAP, self._settled())
        self.observation = prompts.rejection_observation(
            self.game, self.state, error, message, left, board=event.board
        )
        self._observations[seat] = self.observation
        return StepResult(self.observation, False, 0.0, self._info(event))

    def _settled(self) -> dict[int, Result]:
        """Every outside seat's result when the game is cut (a turn cap, a stop)."""
        return {s: Result(self.task.turn_cap_result) for s in self.outside}

    def _chance(self, state: Any) -> Any:
        """``state`` with every chance node from it on resolved (:func:`resolve_chance`)."""
        return resolve_chance(self.game, self.task, state)

    def _seat_to_move(self) -> int:
        """The outside seat to move (the model's seat once the game is over)."""
        seat = int(self.game.to_play(self.state))
        return seat if seat in self._seen else self.task.model_player

    def _played(self, seat: int, text: str) -> None:
        """Tell every other outside seat that ``seat`` played ``text`` (nothing where
        the game hides its moves: the seat's own view shows what it learns)."""
        if not self.game.spec.public_moves:  # not even how many tries it took
            return
        for other in self.outside:
            if other != seat:
                self._seen[other].append(text)

    def _take_seen(self, seat: int) -> list[str]:
        """The moves ``seat`` has not been shown yet; from now on it has."""
        seen = self._seen[seat]
        self._seen[seat] = []
        return seen

    def _opponent_turns(self) -> list[str]:
        """Let the bot seats move until an outside seat is to move or the game ends."""
        played: list[str] = []
        game, task = self.game, self.task
        while not game.is_terminal(self.state):
            bot = self.bots.get(game.to_play(self.state))
            if bot is None:
                break
            rng = opponent_rng(task.seed, task.game, self.state)
            move = bot.choose(game, self.state, rng)
            text = game.move_to_text(self.state, move)
            played.append(text)
            self._played(game.to_play(self.state), text)
            self.state = self._chance(game.apply(self.state, move))
        return played

    def _event(
        self,
        seat: int,
        reply: str,
        kind: str,
        format_ok: bool,
        move: str | None,
        error: str | None,
        message: str | None,
        opponent_moves: list[str],
    ) -> Event:
        event = Event(
            turn=len(self.events) + 1,
            kind=kind,
            reply=reply,
            format_ok=format_ok,
            move=move,
            error=error,
            message=message,
            opponent_moves=tuple(opponent_moves),
            board=self.game.observation(self.state, seat),  # the observation shows it too
            invalid_moves=self._invalid[seat],
            observation=self.observation,  # not yet replaced: the one this reply answers
            seat=seat if self.several else None,
        )
        self.events.append(event)
        return event

    def _finish(
        self,
        event: Event | None,
        termination: EpisodeTermination,
        results: dict[int, Result],
        *,
        forfeit: int | None = None,
    ) -> StepResult:
        self.done = True
        self.termination = termination
        self.results = results
        primary = self.task.model_player
        self.result = results[primary]
        self._breakdowns = {s: self.rubric.score(self.ending(s)) for s in self.outside}
        self._breakdown = self._breakdowns[primary]
        acting = primary if event is None or event.seat is None else event.seat
        for seat in self.outside:
            reason = str(termination)
            if forfeit is not None and seat != forfeit:
                reason = "opponent_forfeit"
            self._observations[seat] = prompts.final_observation(
                self.game,
                self.state,
                results[seat],
                reason,
                self._take_seen(seat) if event is not None else [],
                board=event.board
                if event is not None and seat == acting
                else self.game.observation(self.state, seat),
            )
        self.observation = self._observations[acting]
        if event is None:
            return StepResult(self.observation, True, self._breakdown.total, {})
        return StepResult(self.observation, True, self._breakdowns[acting].total, self._info(event))

    def _info(self, event: Event) -> dict[str, Any]:
        info: dict[str, Any] = {
            "valid": event.error is None,
            "format_ok": event.format_ok,
            "error": event.error,
            "message": event.message,
            "move": event.move,
            "opponent_move": event.opponent_moves[-1] if event.opponent_moves else None,
            "opponent_moves": list(event.opponent_moves),
            "invalid_moves": event.invalid_moves,
            "turn": event.turn,
        }
        if self.several:
            info["seat"] = event.seat
            info["to_move"] = self.to_move
        if self._breakdown is not None:
            info.update(
                termination=str(self.termination),
                result=str(self.result),
                reward=self._breakdown.to_dict(),
            )
            if self.several:
                info["results"] = {str(s): str(r) for s, r in self.results.items()}
                info["rewards"] = {str(s): b.total for s, b in self._breakdowns.items()}
        return info

    # --- seats ------------------------------------------------------------
    def system_prompt_for(self, seat: int | None, *, tools: bool = False) -> str:
        """The system prompt of outside ``seat`` (``None``, and ``system_prompt``: the
        model's seat's, ``task.model_player``)."""
        return prompts.system_prompt(self.game, self.task, tools=tools, seat=seat)

    def seat_prompts(self, *, tools: bool = False) -> dict[str, Any]:
        """What a client playing several outside seats over one environment needs
        besides each step's ``info["to_move"]``: the seat to move now and each outside
        seat's system prompt (JSON keys: the seats as strings). Empty with one outside
        seat. An adapter hands it over with its reset (``info``, ``metadata``)."""
        if not self.several:
            return {}
        return {
            "to_move": self.to_move,
            "system_prompts": {
                str(s): self.system_prompt_for(s, tools=tools) for s in self.outside
            },
        }

    def shared_system_prompt(self, *, tools: bool = False) -> str:
        """The system prompt of the one conversation a framework keeps per rollout
        (SkyRL's generator, TRL's tool loop): the model's seat's, or with several
        outside seats one that plays them all (self-play), each observation saying
        whose turn it is. Several seats are refused in a game with hidden
        information: one conversation would show each seat what the other hides."""
        if len(self.outside) == 1:
            return self.tool_system_prompt if tools else self.system_prompt
        if self.game.spec.hidden_information:
            raise SharedConversationError(
                f"{self.game.spec.title} hides information: one conversation for "
                f"{len(self.outside)} outside seats would show each the other's; "
                "keep one conversation per seat"
            )
        return prompts.system_prompt(self.game, self.task, tools=tools, seats=self.outside)

    @property
    def to_move(self) -> int | None:
        """The seat whose reply ``step`` takes next: always an outside seat (bots and
        chance move inside ``step``), ``None`` once the episode is over."""
        if self.done or not self._started:
            return None
        return self._seat_to_move()

    def observation_for(self, seat: int) -> str:
        """What outside ``seat`` sees now: its turn's observation while it is to
        move, its final one once the game is over, and meanwhile the moves since its
        last turn and its own view of the position (never another seat's hidden
        information)."""
        if seat not in self.outside:
            raise EpisodeError(f"seat {seat} is not an outside seat; those are {self.outside}")
        self._check_started()
        if self.done or self._seat_to_move() == seat:
            return self._observations[seat]
        return prompts.waiting_observation(
            list(self._seen[seat]), self.game.observation(self.state, seat)
        )

    def reward_for(self, seat: int) -> RewardBreakdown:
        """The rubric's breakdown for outside ``seat`` of the finished episode."""
        if not self._breakdowns:
            raise EpisodeError("the episode is not finished; no reward yet")
        if seat not in self._breakdowns:
            raise EpisodeError(f"seat {seat} is not an outside seat; those are {self.outside}")
        return self._breakdowns[seat]

    def invalid_moves_of(self, seat: int) -> int:
        """Invalid replies ``seat`` has made so far."""
        return self._invalid[seat]

    # --- results ----------------------------------------------------------
    def require_result(self) -> Result:
        if self.result is None:
            raise EpisodeError("the episode is not finished")
        return self.result

    def ending(self, seat: int | None = None) -> Ending:
        """How the finished episode ended for outside ``seat`` (default: the
        model's, ``task.model_player``), as the rubric reads it."""
        if self.termination is None or self.result is None:
            raise EpisodeError("the episode is not finished")
        task = self.task
        seat = task.model_player if seat is None else seat
        margin = None
        if self.termination is EpisodeTermination.GAME_OVER:
            margin = float(self.game.margin(self.state, seat))
        events = [e for e in self.events if e.seat is None or e.seat == seat]
        return Ending(
            termination=self.termination,
            result=self.results.get(seat, self.result),
            margin=margin,
            replies=len(events),
            well_formed=sum(1 for e in events if e.format_ok),
            invalid_moves=self._invalid[seat],
            invalid_penalty=task.invalid_penalty,
            invalid_penalty_cap=task.invalid_penalty_cap,
        )

    def reward(self) -> RewardBreakdown:
        """The rubric's breakdown of the finished episode."""
        if self._breakdown is None:
            raise EpisodeError("the episode is not finished; no reward yet")
        return self._breakdown

    @property
    def searches(self) -> bool:
        """Whether a step may wait on a bot's search (minimax, MCTS: seconds at a
        high depth), so a server should run it off its event loop. ``False`` with
        random bots or none (a one-player game, outside seats only): a step costs
        microseconds, less than a hop to a worker thread."""
        return any(bot.searches for bot in self.bots.values())

    @property
    def listed_moves(self) -> list[str] | None:
        """The legal moves an observation lists now, in the game's notation: ``None``
        once the game is over, and for a game whose observations list none (Wordle)."""
        if self.done or not self.game.spec.list_legal_moves:
            return None
        return list(self.game.legal_moves_text(self.state))

    @property
    def replies(self) -> list[str]:
        return [e.reply for e in self.events]

    def to_dict(self) -> dict[str, Any]:
        """The trajectory as JSON-able data (with several outside seats, a
        ``seats`` entry: roles, each seat's invalid replies, result, reward and
        current observation)."""
        data: dict[str, Any] = {
            "task_id": self.task.task_id,
            "task": self.task.to_dict(),
            "game": self.task.game,
            "model_player": self.task.model_player,
            "system_prompt": self.system_prompt,
            "opening": list(self.opening),
            "initial_board": self.initial_board,
            "opponent_first": list(self.opponent_first),
            "events": [e.to_dict() for e in self.events],
            "done": self.done,
            "termination": None if self.termination is None else str(self.termination),
            "result": None if self.result is None else str(self.result),
            "outcome": None
            if self.outcome is None
            else {
                "termination": self.outcome.termination.value,
                "winner": self.outcome.winner,
                "scores": list(self.outcome.scores),
            },
            "reward": None if self._breakdown is None else self._breakdown.to_dict(),
            "observation": self.observation,
        }
        if self.several:
            data["seats"] = {
                "roles": list(self.task.seat_roles()),
                "outside": list(self.outside),
                "to_move": self.to_move,
                "invalid_moves": {str(s): n for s, n in self._invalid.items()},
                "results": {str(s): str(r) for s, r in self.results.items()},
                "rewards": {str(s): b.to_dict() for s, b in self._breakdowns.items()},
                "observations": {str(s): self.observation_for(s) for s in self.outside}
                if self._started
                else {},
            }
        return data

    @classmethod
    def replay(
        cls,
        task: Task | Mapping[str, Any],
        replies: Iterable[Any],
        rubric: Rubric | None = None,
        opponent: Opponent | None = None,
    ) -> Episode:
        """Rebuild an episode from its task and the model's replies: a dict is a
        tool call's arguments (``{"move": ...}``), a ``ToolCall`` a tool call
        with any arguments, anything else a text reply; ``opponent`` as in
        ``Episode(...)`` (a fresh one: it may keep a position in a list)."""
        episode = cls(task, rubric, opponent)
        episode.reset()
        for reply in replies:
            if episode.done:
                break
            if isinstance(reply, ToolCall):
                episode.step_tool(reply.arguments)
            elif isinstance(reply, dict):
                episode.step_tool(reply)
            else:
                episode.step(reply)
        return episode

    @staticmethod
    def recorded_replies(trajectory: Mapping[str, Any]) -> list[Any]:
        """The replies of a trajectory, for ``replay``: a text reply as it is, a
        tool call as a ``ToolCall`` (a rejected call's event records the arguments
        as they came; any other tool event records the move text)."""
        return [
            e["reply"]
            if e["kind"] == "text"
            else ToolCall(e["reply"] if e["error"] == "format" else {"move": e["reply"]})
            for e in trajectory["events"]
        ]

    @classmethod
    def from_trajectory(
        cls, trajectory: Mapping[str, Any], rubric: Rubric | None = None
    ) -> Episode:
        """Replay a trajectory produced by ``to_dict`` (text and tool replies)."""
        episode = cls.replay(trajectory["task"], cls.recorded_replies(trajectory), rubric)
        if trajectory.get("termination") == "stopped" and not episode.done:
            episode.settle()
        return episode


__all__ = [
    "RESULT_VALUE",
    "Ending",
    "Episode",
    "EpisodeError",
    "EpisodeFinishedError",
    "EpisodeNotStartedError",
    "EpisodeTermination",
    "Event",
    "Result",
    "StepResult",
    "ToolCall",
]
