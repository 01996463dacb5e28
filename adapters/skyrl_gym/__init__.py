"""SkyRL Gym adapter: core.Episode as a ``skyrl_gym`` ``BaseTextEnv``.

>>> from adapters.skyrl_gym import register
>>> register()                      # idempotent; id "gamebridge", every game
>>> import skyrl_gym
>>> env = skyrl_gym.make("gamebridge", env_config={}, extras={"task": {"game": "tictactoe"}})
>>> messages, info = env.init([])   # system prompt + first observation
>>> env.step("<move>4</move>")["done"]
False

A SkyRL dataset row is ``{"prompt": [...], "env_class": "gamebridge", "task": {...}}``
(:func:`make_row`); SkyRL passes every column but the prompt to the env as
``extras``. The env builds the conversation itself from core, so the row's
prompt is only what SkyRL's tokenizer checks see.

SkyRL's generator puts its ``max_turns`` in ``extras`` and stops after that
many turns. A game must end itself: when the cap is reached before the game
ends, core settles it on that step (``Episode.cap``: termination
``stopped``, scored as ``turn_cap_result``, a loss by default) and returns
``done`` with the settled reward, never a silent cut. The task itself is left
as the row gives it. Keep ``generator.max_turns`` at or above the task's limit
to play whole games.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters._lazy import needs
from core import conversation as chat
from core.episode import Episode
from core.metrics import RATE_KEYS, outcome_rates
from core.tasks import Task

ENV_ID = "gamebridge"

with needs("adapters.skyrl_gym", "skyrl-gym", "skyrl"):
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput


def task_from_extras(extras: Mapping[str, Any], env_config: Any = None) -> Task:
    """The task in a row's ``task`` column (or the row's own task fields), its unset
    fields taken from ``env_config`` (SkyRL's ``environment.skyrl_gym.gamebridge``)."""
    raw = extras.get("task")
    defaults = dict(env_config or {})
    if isinstance(raw, Mapping):
        return Task.from_dict(raw, defaults=defaults)
    return Task.from_dict(
        {k: v for k, v in extras.items() if k != "max_turns"}, strict=False, defaults=defaults
    )


# rosetta: rollout: SkyRL's generator calls `init`, then `step` per turn (rollouts/drivers/skyrl_gym.py)
# rosetta: transport: in-process
class GameTextEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl_gym ships no type hints
    """One game of the task in ``extras``; the model's text replies are the actions."""

    # rosetta: session: one env per trajectory: `__init__(env_config, extras)`, extras = the dataset row
    # rosetta: config: `env_config` (YAML `environment.skyrl_gym.gamebridge.*`): defaults for the fields a row's task leaves unset
    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        self.episode = Episode(task_from_extras(extras, env_config))
        # rosetta: agents: none: one trajectory, one conversation: several outside seats play in it (self-play, each observation with the side to move, `metadata["to_move"]`); refused where the game hides information
        self.system_prompt = self.episode.shared_system_prompt()
        cap = extras.get("max_turns")
        # SkyRL's generator cap (its own turn count); the game's own limit otherwise.
        limit = self.episode.task.turn_limit() * len(self.episode.outside)
        self.max_turns = int(cap) if cap is not None else limit

    # rosetta: reset: `init(prompt) -> (messages, info)`: system prompt + first observation
    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Core's conversation (the row's ``prompt`` is not used): system + first observation."""
        observation = self.episode.reset()
        self.turns = 0
        messages = chat.opening(self.system_prompt, observation)
        return messages, {"task": self.episode.task.to_dict()}

    # rosetta: step: `step(action) -> BaseTextEnvStepOutput`
    # rosetta: action: the model's reply text
    # rosetta: tools: none: SkyRL's generator hands the env the model's text; replies use `<move>` tags
    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        # rosetta: truncation: SkyRL's `max_turns` reached: core settles the game on that step (`Episode.cap`)
        result, _ = self.episode.cap(self.episode.step(action), self.max_turns)
        metadata = dict(result.info)
        if result.done:
            # rosetta: state: the env holds the Episode; `metadata["trajectory"]` on the last step
            metadata["trajectory"] = self.episode.to_dict()
        # rosetta: observation: `observations=[{"role": "user", ...}]` (none at the end)
        observations = [] if result.done else [chat.observation(result.observation)]
        # rosetta: reward: `reward` (the rubric total, on the last step)
        # rosetta: termination: `done`
        return BaseTextEnvStepOutput(
            observations=observations, reward=result.reward, done=result.done, metadata=metadata
        )

    # rosetta: metrics: `get_metrics()`: reward components, turns and core's `outcome_rates` of the game (SkyRL averages them over a batch)
    def get_metrics(self) -> dict[str, Any]:
        """The reward breakdown and the result, once the game is over (numbers only,
        so SkyRL's default aggregation averages them)."""
        if not self.episode.done:
            return {"turns": self.turns}
        breakdown = self.episode.reward()
        return {
            "reward": breakdown.total,
            **{f"reward/{k}": v for k, v in breakdown.components.items()},
            "win": float(self.episode.result == "win"),
            "draw": float(self.episode.result == "draw"),
            "turns": self.turns,
            "invalid_moves": self.episode.invalid_moves,
            **{k: outcome_rates([self.episode.to_dict()])[k] for k in RATE_KEYS},
        }


# rosetta: registration: `skyrl_gym.register(id="gamebridge", entry_point=GameTextEnv)`; rows name it in `env_class`
# rosetta: packaging: `pip install gamebridge[skyrl]`, `register()` in the training entry point; the YAML fragment `adapters/skyrl_gym/gamebridge.yaml`
def register(env_id: str = ENV_ID) -> None:
    """Register :class:`GameTextEnv` with skyrl_gym (a second call is a no-op:
    skyrl_gym itself raises on a duplicate)."""
    import skyrl_gym
    from skyrl_gym.envs.registration import registry

    if env_id not in registry:
        skyrl_gym.register(id=env_id, entry_point=GameTextEnv)


def make_row(
    task: Task | Mapping[str, Any], env_id: str = ENV_ID, env_config: Any = None
) -> dict[str, Any]:
    """A SkyRL dataset row for ``task`` (prompt = the conversation ``init`` returns).
    A ``Task`` is written whole; a dict only with the fields it sets, so the rest
    come from ``env_config`` at training time (pass the same one here)."""
    written = dict(task) if isinstance(task, Mapping) else task.to_dict()
    episode = Episode(task_from_extras({"task": written}, env_config))
    prompt = chat.opening(episode.shared_system_prompt(), episode.reset())
    return {"prompt": prompt, "env_class": env_id, "task": written}
