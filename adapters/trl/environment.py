"""``GRPOTrainer(environment_factory=...)``: one game per environment instance.

TRL builds one instance per rollout with no arguments, calls
``reset(**dataset_row)`` and appends the returned text (the first observation)
to the row's last prompt message, exposes every public method as a tool, and
calls ``get_reward()`` once the rollout ends. So the environment has exactly
three public methods: ``reset``, the one tool ``make_move`` and
``get_reward``. Nothing public lets the model change anything but the board
through a legal game move (a tool that set the result would be a reward hack;
tests/trl/test_environment.py lists the public methods).

The tool's description is core's (``core.prompts``): ``environment_class(game)``
gives a subclass whose ``make_move`` docstring renders to exactly
``core.prompts.tool_schema(game)``; the base ``GameEnvironment`` shows the
default task's game (Tic-Tac-Toe) examples, so train other games with
``environment_factory=environment_class(game)``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from adapters._lazy import needs
from core import conversation as chat
from core.episode import Episode
from core.games import make_game
from core.prompts import TOOL_ARGUMENT_DESCRIPTION, TOOL_DESCRIPTION, TOOL_NAME
from core.tasks import Task

TASK_KEY = "gamebridge_task"
"""Rollout-function mode: the key of the system message that carries the task
row as JSON (chat templates ignore unknown message keys)."""


class EnvironmentNotResetError(RuntimeError):
    """The environment was used before ``reset``."""


def _tool_doc(examples: Iterable[str]) -> str:
    """A Google docstring that transformers' ``get_json_schema`` turns into
    core's ``make_move`` schema."""
    argument = TOOL_ARGUMENT_DESCRIPTION.format(examples=", ".join(examples))
    return f"{TOOL_DESCRIPTION}\n\nArgs:\n    move: {argument}\n"


_SELF = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
_MOVE = inspect.Parameter("move", inspect.Parameter.KEYWORD_ONLY, annotation=str)


def _as_tool(func: Callable[..., Any], examples: Iterable[str]) -> Callable[..., Any]:
    """``func(self, **arguments)`` dressed as ``make_move(self, move: str)`` for
    transformers' ``get_json_schema`` (the schema TRL shows the model), while the
    call itself takes any keyword arguments: TRL calls ``tool(**arguments)``, and
    core, not a Python signature, judges a missing ``move`` or an extra key (a
    TypeError would be a free tool error, no game event, no penalty)."""
    func.__signature__ = inspect.Signature([_SELF, _MOVE])  # type: ignore[attr-defined]
    func.__annotations__ = {"move": str}
    func.__doc__ = _tool_doc(examples)
    return func


# rosetta: rollout: factory: TRL's own tool-calling loop
# rosetta: transport: in-process (TRL calls the environment's methods in the trainer's process)
class GameEnvironment:
    """One gamebridge game for TRL's ``environment_factory``."""

    # rosetta: session: TRL builds one `GameEnvironment()` per rollout
    def __init__(self) -> None:
        self._episode: Episode | None = None

    # rosetta: reset: factory: `reset(**row) -> str`, appended to the prompt by TRL
    def reset(self, **row: Any) -> str:
        """Start the game of this dataset row (its task fields; other columns
        such as ``prompt`` are ignored) and return the first observation."""
        episode = Episode(Task.from_dict(row, strict=False))
        # rosetta: agents: none: one rollout, one conversation: the trained model plays every outside seat in it (self-play, each observation with the side to move); refused where the game hides information
        episode.shared_system_prompt(tools=True)  # several outside seats: refused if hidden
        self._episode = episode
        return episode.reset()

    # rosetta: step: factory: the `make_move` tool
    # rosetta: action: factory: a `make_move(move)` tool call
    # rosetta: observation: factory: the tool's return string
    # rosetta: tools: factory: `make_move` is the tool (its docstring renders to core's schema); TRL runs the tool loop
    def make_move(self, **arguments):  # type: ignore[no-untyped-def]  # no return hint: core's schema has none
        # The signature and docstring the model sees are set below (_as_tool, core.prompts).
        # The arguments go to core as TRL decoded them: core judges their shape (a call
        # after the game ended is answered with the final observation, not played).
        return self._require().answer_tool(arguments)

    make_move = _as_tool(make_move, make_game(Task().game).spec.move_examples)

    # rosetta: reward: factory: `get_reward()`, the rubric total
    # rosetta: termination: the game ends in core; a model that stops early is settled by core (`Episode.finish`)
    # rosetta: truncation: factory: TRL's caps (`max_completion_length`, `max_tool_calling_iterations`) end the rollout: `get_reward()` settles the game (`Episode.finish`)
    def get_reward(self) -> float:
        """The core rubric's total for the finished game. A game the model stopped
        playing (no further tool call, or TRL's completion budget ran out) is settled
        first by core's ``Episode.finish``: scored like a turn cap
        (``task.turn_cap_result``), so stopping is never a way out of a losing game."""
        return self._require().finish().reward().total

    # rosetta: state: factory: `env.episode` (a read-only property, not a tool)
    @property
    def episode(self) -> Episode:
        """The current episode (read-only; a property, so TRL does not expose it as a tool)."""
        return self._require()

    def _require(self) -> Episode:
        if self._episode is None:
            raise EnvironmentNotResetError("call reset(**row) first")
        return self._episode


_CLASSES: dict[str, type[GameEnvironment]] = {}


# rosetta: registration: none: `GRPOTrainer(environment_factory=environment_class(game))` or `rollout_func=TextRollout()`
# rosetta: packaging: `pip install gamebridge[trl]`; the classes and datasets go straight into `GRPOTrainer`
def environment_class(game: str) -> type[GameEnvironment]:
    """A ``GameEnvironment`` subclass whose tool schema names ``game``'s
    example moves exactly as ``core.prompts.tool_schema(game)`` does."""
    if game not in _CLASSES:
        spec = make_game(game).spec

        def make_move(self, **arguments):  # type: ignore[no-untyped-def]  # get_json_schema reads every hint
            return GameEnvironment.make_move(self, **arguments)

        make_move = _as_tool(make_move, spec.move_examples)
        name = f"GameEnvironment_{game}"
        _CLASSES[game] = type(
            name,
            (GameEnvironment,),
            {
                TOOL_NAME: make_move,
                "__qualname__": name,
                "__doc__": f"GameEnvironment for {spec.title}.",
            },
        )
    return _CLASSES[game]


ENVIRONMENT_COLUMN = "environment"
"""TRL's multi-environment mode: the column naming each row's environment."""


# rosetta: config: multi-environment: `environment_factory=environment_factories(games)` (a dict) and an `environment` column naming each row's game
def environment_factories(games: Iterable[str]) -> dict[str, type[GameEnvironment]]:
    """TRL's multi-environment mode: ``environment_factory=`` this dict (one
    :func:`environment_class` per game, so each row's prompt shows its own game's
    tool schema), with rows from ``dataset_rows(tasks, environment=True)``."""
    return {game: environment_class(game) for game in dict.fromkeys(games)}


def prompt_messages(task: Task, *, tools: bool) -> list[dict[str, str]]:
    """The ``prompt`` column of one row.

    ``tools=True`` (environment_factory): the tool-mode system prompt and an
    empty user message that TRL fills with ``reset()``'s observation.
    ``tools=False`` (rollout_func): the text-mode system prompt, carrying the
    task under ``TASK_KEY``, and the first observation.
    """
    episode = Episode(task)
    if tools:
        return chat.opening(episode.shared_system_prompt(tools=True), "")
    system, first = chat.opening(episode.system_prompt, episode.reset())
    return [
        {**system, TASK_KEY: json.dumps(task.to_dict(), sort_keys=True)},
        {**first, TASK_KEY: ""},
    ]


# rosetta: rollout: rollout_func: each row's prompt carries its task (`TASK_KEY`, read back by `task_of`); `rollouts.training.text_rollout.TextRollout` plays the batch with the trainer's model
def task_of(prompt: Sequence[dict[str, Any]]) -> Task:
    """The task a ``tools=False`` prompt carries (``TASK_KEY`` on one of its messages)."""
    for message in prompt:
        raw = message.get(TASK_KEY) if isinstance(message, dict) else None
        if raw:
            return Task.from_dict(json.loads(raw))
    raise ValueError(
        f"the prompt carries no {TASK_KEY!r}; build the dataset with "
        "adapters.trl.make_dataset(tasks, tools=False)"
    )


def dataset_rows(
    tasks: Iterable[Task | Mapping[str, Any]], *, tools: bool = True, environment: bool = False
) -> list[dict[str, Any]]:
    """Rows for ``GRPOTrainer``: every task field plus ``prompt`` (see
    :func:`prompt_messages`); ``environment``: plus the ``environment`` column
    (the game) of TRL's multi-environment mode (:func:`environment_factories`)."""
    rows = []
    for t in tasks:
        task = Task.from_dict(t)
        row = {**task.to_dict(), "prompt": prompt_messages(task, tools=tools)}
        rows.append({**row, ENVIRONMENT_COLUMN: task.game} if environment else row)
    return rows


def make_dataset(
    tasks: Iterable[Task | Mapping[str, Any]], *, tools: bool = True, environment: bool = False
) -> Any:
    """:func:`dataset_rows` as a ``datasets.Dataset``."""
    with needs("make_dataset", "datasets", "trl"):
        import datasets
    rows = dataset_rows(tasks, tools=tools, environment=environment)
    # Arrow wants one type per column: max_turns is None or int across rows.
    return datasets.Dataset.from_list(rows)


__all__ = [
    "ENVIRONMENT_COLUMN",
    "TASK_KEY",
    "EnvironmentNotResetError",
    "GameEnvironment",
    "dataset_rows",
    "environment_class",
    "environment_factories",
    "make_dataset",
    "prompt_messages",
    "task_of",
]
