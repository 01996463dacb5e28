"""core.Episode in the OpenReward Standard's vocabulary (``openreward`` 0.1.167).

One ``Environment`` class, served as ``gamebridge``, plays every core game:

* splits and tasks: ``core.make_tasks`` rows (``train``/``test`` over every game,
  and ``<game>-train``/``<game>-test`` per game); a session may also carry any task
  row itself (``task_spec``);
* the prompt: core's tool-mode system prompt and the first observation;
* the ``make_move`` tool (per task: its schema is core's ``tool_schema(game)``),
  whose raw arguments go to core unchanged (``Episode.step_tool``), and a hidden
  ``@terminal`` tool for a plain reply: ORS ends the rollout there, so core settles
  a game still going on, as core's tool mode does when the model stops calling;
* ``ToolOutput.reward`` only on the call that ends the game (the rubric total; the
  breakdown and the trajectory in ``metadata``), ``finished`` from core.

No game rule, prompt text or reward formula lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from adapters._lazy import needs
from adapters._sessions import play

with needs("adapters.ors", "openreward 0.1.167", "ors"):
    from openreward.environments import (
        Environment,
        ListToolsOutput,
        Message,
        Split,
        TextBlock,
        ToolOutput,
        ToolSpec,
        terminal,
        tool,
    )
    from pydantic import BaseModel, ConfigDict

from core import Episode, StepResult, Task, list_games
from core.inputs import unwrap_arguments
from core.splits import split_games, split_names, split_rows

ENV_NAME = "gamebridge"
"""The name the server serves the environment under (its class name, lowercased)."""
DEFAULT_TASKS_PER_GAME = 32
"""Tasks per game in each split."""


# rosetta: action: a `make_move` call's arguments, any JSON (the `move` goes to core unchanged)
class MoveArguments(BaseModel):
    """``make_move``'s input: any JSON object. Nothing is checked here (no ``str``
    field that would refuse a number before core sees it): core judges ``move``."""

    model_config = ConfigDict(extra="allow")

    move: Any = None


# rosetta: rollout: the client opens a session, reads the prompt and tools, calls tools until `finished` (rollouts/drivers/ors.py)
class GameBridge(Environment):
    """One ``core.Episode`` per ORS session; no game logic here.

    ``environment_class(...)`` makes a copy with other games, split sizes or seed.
    """

    games: ClassVar[tuple[str, ...]] = tuple(list_games())
    tasks_per_game: ClassVar[int] = DEFAULT_TASKS_PER_GAME
    seed: ClassVar[int] = 0
    num_groups: ClassVar[int] = 1
    """``make_tasks``' difficulty strata (a block of ``num_groups`` tasks spans every level)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # openreward caches splits and tasks on the class with hasattr(), which also
        # finds a parent's cache: give each subclass its own before the first request.
        cls._splits_cache = cls.list_splits()
        cls._tasks_cache = {}
        cls._tasks_cache_locks = {}

    # rosetta: registration: `Server([GameBridge])` serves it as `gamebridge`: splits and tasks are `make_tasks` rows
    @classmethod
    def list_splits(cls) -> Sequence[Split | str]:
        return [
            Split(name=name, type="train" if name.endswith("train") else "test")
            for name in split_names(cls.games)
        ]

    @classmethod
    def list_tasks(cls, split: str) -> Sequence[dict[str, Any]]:
        """The split's task rows (``Task.to_dict()``), game by game (``core.splits``)."""
        return split_rows(split, cls.games, cls.tasks_per_game, cls.seed, cls.num_groups)

    # rosetta: session: one `GameBridge(task_spec)` per ORS session (`/create`), freed at `/delete` or when idle
    def __init__(self, task_spec: Any = None, secrets: Any = None) -> None:
        super().__init__(task_spec or {}, secrets or {})
        # strict: an unknown field is a TaskError (the server answers 422)
        self.episode = Episode(Task.from_dict(task_spec if task_spec is not None else {}))
        self.first_observation: str | None = None
        self.busy = 0
        """Tool calls running now (openreward serialises them per session): a session
        busy in a long opponent search is not idle (``adapters.ors.server``'s reaper)."""

    # rosetta: reset: `setup()` (the server runs it once per session): `Episode.reset()`
    def setup(self) -> None:
        """Start the game (the opponent may move first; runs in a worker thread)."""
        self.first_observation = self.episode.reset()

    # rosetta: observation: the prompt (`get_messages`: core's system prompt, the first observation), then each tool's text block
    def get_messages(self) -> Sequence[Message]:
        """Core's tool-mode system prompt, then the first observation."""
        system, first = self._prompt()
        # rosetta: agents: none: one session plays every outside seat: each tool output is the seat to move's own view, `metadata["info"]["to_move"]` names it (the first message's block `detail` each seat's system prompt); the client keeps one conversation per seat
        seats = self.episode.seat_prompts(tools=True) or None
        return [
            Message(role="system", blocks=[TextBlock(text=system)]),
            Message(role="user", blocks=[TextBlock(text=first, detail=seats)]),
        ]

    def get_prompt(self) -> Sequence[TextBlock]:
        """The same two texts as blocks (harnesses that read ``/prompt`` only, such as
        TRL's OpenReward bridge, put them in one user message)."""
        return [TextBlock(text=text) for text in self._prompt()]

    def _prompt(self) -> tuple[str, str]:
        if self.first_observation is None:  # setup() not run yet (a direct instance)
            self.setup()
        seat = self.episode.to_move if self.episode.several else None  # the first to move
        return self.episode.system_prompt_for(seat, tools=True), str(self.first_observation)

    # rosetta: tools: ORS is tool calls end to end: `make_move` listed per session (`/task_tools`) with core's schema
    def list_task_tools(self) -> ListToolsOutput:
        """``make_move`` with core's schema for this task's game (examples differ per game)."""
        function = self.episode.tool_schema["function"]
        spec = ToolSpec(
            name=function["name"],
            description=function["description"],
            input_schema=function["parameters"],
        )
        return ListToolsOutput(tools=[spec])

    # rosetta: step: the `make_move` tool -> `Episode.step_tool(raw arguments)`
    @tool(shared=False)
    async def make_move(self, arguments: MoveArguments) -> ToolOutput:
        """Core's ``make_move`` (listed per task by ``list_task_tools``, never twice): in a
        worker thread when the opponent searches, else here (the thread hop cost ~0.5 ms
        of CPU a call, a third of a Tic-Tac-Toe call on ORS's own minimal server)."""
        # As they came (no default filled in; unwrapped if not an object): core judges them.
        raw = unwrap_arguments(arguments.model_dump(exclude_unset=True))
        self.busy += 1
        try:
            return self._output(await play(self.episode, self.episode.step_tool, raw))
        finally:
            self.busy -= 1

    # rosetta: truncation: a plain reply (or a client's cap) ends an ORS rollout through `@terminal`: core settles the game (`Episode.settle`)
    @terminal
    @tool
    async def final_reply(self) -> ToolOutput:
        """The model answered without a tool call: it stopped playing. Settling searches
        nothing: it runs here, not in a worker thread."""
        # As core's tool mode: a game the model stops playing is settled; its text
        # is not a move (openreward refuses any call once a game has finished).
        return self._output(self.episode.settle())

    # rosetta: reward: `ToolOutput.reward` on the call that ends the game (the rubric total); breakdown in `metadata["reward"]`
    # rosetta: termination: `ToolOutput.finished` = core's `done` (the server then refuses further calls)
    # rosetta: state: the session's `GameBridge.episode`; the trajectory in the final `metadata["trajectory"]`
    def _output(self, result: StepResult) -> ToolOutput:
        metadata: dict[str, Any] = {"info": result.info}
        if result.done:
            metadata["reward"] = self.episode.reward().to_dict()
            metadata["trajectory"] = self.episode.to_dict()
        return ToolOutput(
            blocks=[TextBlock(text=result.observation)],
            metadata=metadata,
            # the model seat's total (with several outside seats, not the last mover's)
            reward=metadata["reward"]["total"] if result.done else None,
            finished=result.done,
        )


# rosetta: config: `environment_class(games, tasks_per_game, seed, num_groups)` (`python -m adapters.ors --games ...`); a session's `task_spec` may be any row
def environment_class(
    games: Iterable[str] | None = None,
    tasks_per_game: int = DEFAULT_TASKS_PER_GAME,
    seed: int = 0,
    num_groups: int = 1,
) -> type[GameBridge]:
    """A ``GameBridge`` serving ``games`` (default: every core game), with
    ``tasks_per_game`` tasks per game and split, from ``make_tasks(seed=...)``."""
    namespace = {
        "games": split_games(games, tasks_per_game),  # checked by core
        "tasks_per_game": tasks_per_game,
        "seed": seed,
        "num_groups": num_groups,
        "__qualname__": "GameBridge",
        "__module__": __name__,
    }
    cls: type[GameBridge] = type("GameBridge", (GameBridge,), namespace)
    return cls
