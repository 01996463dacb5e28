"""core.Episode in OpenEnv's vocabulary: typed Action / Observation / State, an
``Environment`` (one Episode per WebSocket session), the FastAPI app and an
``EnvClient``. Every game is served: ``reset(task=row)`` names it (or
``reset(seed=..., **fields)`` with the server's default game)."""

from __future__ import annotations

import functools
import uuid
from typing import Any

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import Action, Environment, Observation, State, create_app
    from pydantic import Field, model_validator
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "adapters.openenv needs openenv-core 0.3; install with: pip install -e '.[openenv]'"
    ) from e

from core import Episode, EpisodeNotStartedError, Task


# rosetta: action: `GameAction(reply=text)` or `GameAction(move=...)` (a tool call's argument)
class GameAction(Action):
    """The model's reply text (``<move>..</move>``), or a structured ``move`` (a tool
    call's argument); exactly one."""

    reply: str | None = None
    move: str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> GameAction:
        if (self.reply is None) == (self.move is None):
            raise ValueError("a GameAction carries exactly one of `reply` and `move`")
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


class GameEnvironment(Environment[GameAction, GameObservation, GameState]):
    """One ``core.Episode`` per session; no game logic here."""

    # rosetta: session: one `GameEnvironment` per WebSocket session (up to `max_concurrent_envs`)
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, game: str = "tictactoe") -> None:
        super().__init__()
        self.default_game = game
        self.episode: Episode | None = None
        self.episode_id: str | None = None

    # rosetta: reset: `reset(seed, episode_id, task=row)` -> `GameObservation`
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              task: dict[str, Any] | None = None, tools: bool = False,
              **fields: Any) -> GameObservation:
        """Start ``task`` (a ``Task.to_dict()`` row), or the default game with
        ``seed`` and any other task ``fields``. ``tools``: the model will move by
        ``make_move`` tool call (``GameAction(move=...)``); the reset observation then
        carries core's tool system prompt and the tool schema."""
        if task is not None and fields:
            raise TypeError(f"pass a task row or task fields, not both (got {sorted(fields)})")
        row = dict(task) if task is not None else {
            "game": self.default_game, **({} if seed is None else {"seed": seed}), **fields}
        self.episode = Episode(Task.from_dict(row))  # strict: an unknown field is an error
        self.episode_id = episode_id or uuid.uuid4().hex
        obs = self._observe(self.episode, self.episode.reset(), {})
        ep = self.episode
        obs.system_prompt = ep.tool_system_prompt if tools else ep.system_prompt
        obs.tools = [ep.tool_schema] if tools else None
        return obs

    # rosetta: step: `step(GameAction)` -> `GameObservation`
    def step(self, action: GameAction, timeout_s: float | None = None,
             **kwargs: Any) -> GameObservation:
        if self.episode is None:
            raise EpisodeNotStartedError("call reset() before step()")
        result = (self.episode.step(action.reply) if action.reply is not None
                  else self.episode.step_move(str(action.move)))
        return self._observe(self.episode, result.observation, result.info, result.reward)

    # rosetta: reward: `obs.reward` (the total, on the final observation) and `obs.reward_breakdown`
    # rosetta: termination: `obs.done`
    # rosetta: truncation: no flag: `done` with `info["termination"] == "turn_cap"`
    @staticmethod
    def _observe(ep: Episode, text: str, info: dict[str, Any], reward: float = 0.0,
                 ) -> GameObservation:
        legal = (None if ep.done or not ep.game.spec.list_legal_moves
                 else list(ep.game.legal_moves_text(ep.state)))
        return GameObservation(text=text, legal_moves=legal, info=info, done=ep.done,
                               reward=reward,
                               reward_breakdown=ep.reward().to_dict() if ep.done else None)

    # rosetta: state: the `state` property: `GameState(task, trajectory)`
    @property
    def state(self) -> GameState:
        ep = self.episode
        return GameState(episode_id=self.episode_id, step_count=0 if ep is None else len(ep.events),
                         task=None if ep is None else ep.task.to_dict(),
                         trajectory=None if ep is None else ep.to_dict())


# rosetta: registration: none: `create_app(factory, GameAction, GameObservation)`, served by `python -m adapters.openenv`
# rosetta: transport: HTTP + WebSocket server (`/ws`; plain HTTP `/reset` and `/step` are stateless)
def create_game_app(game: str = "tictactoe", max_sessions: int = 64) -> Any:
    """The FastAPI app (``/ws`` sessions, ``/health``, ``/schema``, ...)."""
    factory = functools.partial(GameEnvironment, game=game)
    return create_app(factory, GameAction, GameObservation, max_concurrent_envs=max_sessions)


# rosetta: rollout: the client loops `reset()` / `step(GameAction)` until `done` (rollouts/drivers/openenv.py)
class GameEnvClient(EnvClient[GameAction, GameObservation, GameState]):
    """The WebSocket client (async; ``.sync()`` for a blocking one)."""

    def _step_payload(self, action: GameAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GameObservation]:
        obs = GameObservation(**payload.get("observation", {}), done=payload.get("done", False),
                              reward=payload.get("reward"))
        return StepResult(observation=obs, reward=obs.reward, done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> GameState:
        return GameState(**payload)
