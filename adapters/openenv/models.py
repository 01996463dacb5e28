"""OpenEnv's typed messages for gamebridge (the ``models`` module of ``openenv init``'s
layout): the action the model sends, the observation it reads, the session state."""

from __future__ import annotations

from typing import Any

from adapters._lazy import needs

with needs("adapters.openenv", "OpenEnv (openenv 0.10, or openenv-core 0.3)", "openenv"):
    from openenv.core.env_server import Action, Observation, State
    from pydantic import Field, model_validator
    from pydantic_core import PydanticCustomError


# rosetta: action: `GameAction(reply=text)`, or `GameAction(arguments=...)`: a tool call's raw JSON arguments (core judges them)
class GameAction(Action):
    """Exactly one of: the model's reply text (``<move>..</move>``), a ``make_move``
    call's raw ``arguments`` (the JSON value the model wrote, unchanged: any type,
    missing or extra keys; core judges it, ``Episode.step_tool``), ``move``, a
    shortcut for ``arguments={"move": move}`` (any JSON value too), or
    ``stop=True``: the client stops the game here (the model stopped calling the
    tool, or the trainer's own turn or token cap was reached), and core settles
    it (``Episode.settle``), scored, never left unfinished."""

    reply: str | None = None
    arguments: Any = None
    move: Any = None
    stop: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> GameAction:
        fields = ("reply", "arguments", "move", "stop")
        given = [k for k in fields if k in self.model_fields_set]
        if len(given) > 1:  # a full dump sets the others to None/False: those were not given
            given = [
                k for k in given if getattr(self, k) is not None and getattr(self, k) is not False
            ]
        if given == ["stop"] and not self.stop:
            given = []
        if len(given) != 1:
            # PydanticCustomError, not ValueError: OpenEnv's WebSocket error reply must
            # serialise the validation error (a ValueError in its ctx closed the session).
            raise PydanticCustomError(
                "one_of",
                "a GameAction carries exactly one of `reply`, `arguments`, `move` and `stop=True`",
            )
        return self

    def tool_arguments(self) -> Any:
        """The tool call's raw arguments (``move`` given: ``{"move": move}``)."""
        if "arguments" in self.model_fields_set and (
            self.arguments is not None or "move" not in self.model_fields_set
        ):
            return self.arguments
        return {"move": self.move}


# rosetta: observation: `GameObservation`: `text`, `legal_moves`, `info`, `done`, `reward`
class GameObservation(Observation):
    """What the model reads next, plus ``done``/``reward`` (the rubric total at the
    end); ``reward_breakdown`` is set on the final observation only."""

    text: str = ""
    legal_moves: list[str] | None = None
    """In the game's notation; ``None`` where the game does not list them (Wordle)."""
    info: dict[str, Any] = Field(default_factory=dict)
    """``StepResult.info`` (valid, error, move, opponent_move, turn, ...)."""
    reward_breakdown: dict[str, Any] | None = None
    system_prompt: str | None = None
    """The system prompt, on the reset observation only."""
    tools: list[dict[str, Any]] | None = None
    """With ``reset(tools=True)``: the ``make_move`` tool schema (reset observation only)."""


class GameState(State):
    """``episode_id``, ``step_count`` (model replies), the task row and the trajectory."""

    task: dict[str, Any] | None = None
    trajectory: dict[str, Any] | None = None
