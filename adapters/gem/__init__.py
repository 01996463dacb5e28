"""GEM adapter: core.Episode as a ``gem.Env``, one id per game (``gamebridge/othello``).

>>> from adapters.gem import register
>>> register()                             # idempotent
>>> import gem
>>> env = gem.make("gamebridge/tictactoe", task={"game": "tictactoe", "seed": 3})
>>> obs, info = env.reset()                # info["system_prompt"] goes first in the chat
>>> obs, reward, terminated, truncated, info = env.step("<move>4</move>")

The task comes from the constructor (``task=`` a task dict, or ``seed=`` plus
any task field, as ``gem.make_vec`` passes ``seed=seed+idx``);
``reset(seed=s)`` plays the same task with seed ``s``; ``reset()`` replays the
task as it is (deterministic: same seed, same game). GEM's own ``reset(seed)``
seeds the global ``random`` and numpy, so it is never called: every random
choice comes from the task seed in core.

At the end, ``info`` holds ``result``, ``reward`` (the breakdown) and
``trajectory``. ``terminated`` is true at every end; ``truncated`` too when the
task's turn cap ended the game. GEM's vector envs (autoreset) replace a
finished env's ``info`` with the next reset's: read the outcome from the
single-env step, or keep the env objects.

``import gem`` calls ``logging.basicConfig(INFO)``; this module imports it on
first use and puts the root logger back as it was.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from core.episode import Episode
from core.games import list_games
from core.tasks import Task

ID_PREFIX = "gamebridge/"


def _import_gem() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import gem
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "adapters.gem needs gem-llm; install with: pip install -e '.[gem]'"
        ) from e
    finally:
        root.handlers[:], root.level = handlers, level
    return gem


# rosetta: rollout: the caller loops `reset` / `step` (rollouts/drivers/gem.py)
# rosetta: transport: in-process
class GameEnv(_import_gem().Env):  # type: ignore[misc]  # gem has no type stubs
    """One game per episode; actions are the model's text replies."""

    # rosetta: session: one env per game; `gem.make_vec` passes `seed=seed+idx`
    # rosetta: config: `gem.make(id, task=row)` or `gem.make(id, seed=..., **task_fields)`; `make_vec(..., vec_kwargs=[...])` per env
    def __init__(
        self,
        game: str = "tictactoe",
        task: Mapping[str, Any] | Task | None = None,
        seed: int | None = None,
        **task_fields: Any,
    ) -> None:
        super().__init__()
        if isinstance(task, Task):
            self.task = task
        elif task is not None:
            self.task = Task.from_dict(task)
        else:
            self.task = Task.from_dict({"game": game, "seed": seed or 0, **task_fields})
        self.episode = Episode(self.task)  # stepping before reset raises core's error

    # rosetta: reset: `reset(seed=None) -> (obs, info)`; never `super().reset(seed)` (global RNGs)
    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        if seed is not None:  # not super().reset(seed): that seeds the global RNGs
            self.task = dataclasses.replace(self.task, seed=seed)
        self.episode = Episode(self.task)
        observation = self.episode.reset()
        return observation, {**self._prefix(), "task": self.task.to_dict()}

    def _prefix(self) -> dict[str, str]:
        """The system prompt, as ``system_prompt`` and as GEM's ``prefix``: GEM's
        observation wrappers (``concat``, ``concat_with_action``, ...) put ``info["prefix"]``
        before the history they build, and read nothing else from ``info``."""
        prompt = self.episode.system_prompt
        return {"system_prompt": prompt, "prefix": prompt + "\n"}

    def sample_random_action(self) -> str:
        """A well-formed reply with a random legal move (seeded by the task, not the
        global ``random``); call ``reset`` first."""
        return self.episode.sample_reply()

    def spawn(self, same_state: bool = False, **kwargs: Any) -> GameEnv:
        """A new env for this task (``kwargs`` override task fields, e.g. ``seed``).
        ``same_state``: it continues this game from where it is (core replays the
        replies so far), unless ``kwargs`` change the task."""
        child = GameEnv(task={**self.task.to_dict(), **kwargs})
        if same_state and not kwargs and self.episode.initial_board is not None:
            child.episode = Episode.from_trajectory(self.episode.to_dict())
        return child

    # rosetta: step: `step(action) -> (obs, reward, terminated, truncated, info)`
    # rosetta: action: the reply text
    # rosetta: observation: a string
    # rosetta: tools: none: a GEM action is text (`<move>` tags); `sample_random_action()` gives a legal one (core's `Episode.sample_reply`)
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.episode.step(action)
        info = {**result.info, **self._prefix()}
        if result.done:
            # rosetta: state: `info["trajectory"]` on the last step
            # rosetta: metrics: none: GEM has no aggregation; the final `info` holds `result`, the reward breakdown and the trajectory
            info["trajectory"] = self.episode.to_dict()
        # rosetta: truncation: `truncated`: the task's turn cap ended it (`terminated` too)
        truncated = result.done and self.episode.termination == "turn_cap"
        # rosetta: reward: `reward` (the rubric total, at the end)
        # rosetta: termination: `terminated` at every end
        return result.observation, result.reward, result.done, truncated, info


# rosetta: registration: `gem.register("gamebridge/<game>", GameEnv, game=game)`
# rosetta: packaging: `pip install gamebridge[gem]`, then `register()`: every game as `gamebridge/<game>`
def register() -> None:
    """Register ``gamebridge/<game>`` for every core game (again: no-op; GEM
    raises on a duplicate id)."""
    gem = _import_gem()
    from gem.envs.registration import ENV_REGISTRY

    for game in list_games():
        if ID_PREFIX + game not in ENV_REGISTRY:
            gem.register(ID_PREFIX + game, GameEnv, game=game)
