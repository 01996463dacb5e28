"""OpenEnv's typed messages for gamebridge (the ``models`` module of ``openenv init``'s
layout): the action the model sends, the observation it reads, the session state."""

from __future__ import annotations

from typing import Any

try:
    from openenv.core.env_server import Action, Observation, State
    from pydantic import Field, model_validator
    from pydantic_core import PydanticCustomError
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "adapters.openenv needs openenv-core 0.3; install with: pip install -e '.[openenv]'"
    ) from e


# rosetta: action: `GameAction(reply=text)` or `GameAction(move=...)` (a tool call's argument)
class GameAction(Action):
    """The model's reply text (``<move>..</move>``), or a structured ``move`` (a tool
    call's argument); exactly one."""

    reply: str | None = None
    move: str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> GameAction:
        if (self.reply is None) == (self.move is None):
            # PydanticCustomError, not ValueError: OpenEnv's WebSocket error reply must
            # serialise the validation error (a ValueError in its ctx closed the session).
            raise PydanticCustomError(
                "one_of", "a GameAction carries exactly one of `reply` and `move`"
            )
        return self


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
