"""GEM adapter: core.Episode as a ``gem.Env``, one id per game (``gamebridge/othello``).

>>> from adapters.gem import register
>>> register()                             # idempotent
>>> import gem
>>> env = gem.make("gamebridge/tictactoe", task={"game": "tictactoe", "seed": 3})
>>> obs, info = env.reset()                # the rules and the board, as GEM's games do
>>> obs.startswith("You are playing Tic-Tac-Toe"), "<move>" in info["suffix"]
(True, True)
>>> obs, reward, terminated, truncated, info = env.step("<move>4</move>")

What the model must know reaches it the way GEM's own games send it (their
reset observation holds the instructions; ``info["suffix"]``, on reset and
on every step, the reminder of the answer format): the reset observation is
core's system prompt (rules, notation, the ``<move>`` format), a blank line and
the first observation (the board); ``info["suffix"]`` is the prompt's answer
line (``core.prompts.reply_instruction``). So ``gem.make`` plus GEM's
observation wrappers (``concat``, ``concat_chat``, ...) show the model
everything. A chat loop of your own may instead send ``info["system_prompt"]``
as the system message and ``info["observation"]`` (the board alone) as the
first user message, as core does; do not send both.

The task comes from the constructor (``task=`` a task dict, or ``seed=`` plus
any task field, as ``gem.make_vec`` passes ``seed=seed+idx``);
``reset(seed=s)`` plays the same task with seed ``s``; ``reset()`` replays the
task as it is (deterministic: same seed, same game). GEM's own ``reset(seed)``
seeds the global ``random`` and numpy, so it is never called: every random
choice comes from the task seed in core.

At the end, ``info`` holds ``result``, ``reward`` (the breakdown) and
``trajectory``. ``terminated`` is true at every end of the game itself;
``truncated`` is true when a cap ended it: the task's turn cap (``terminated``
too), or the env's ``max_episode_steps`` (Gymnasium's ``TimeLimit`` name, a
``gem.make`` keyword): on that step core settles the game (``Episode.cap``,
a loss by default) and the step's reward is the settled total. GEM's vector envs (autoreset) replace a
finished env's ``info`` with the next reset's: read the outcome from the
single-env step, or keep the env objects.

``import gem`` calls ``logging.basicConfig(INFO)``; this module imports it on
first use and puts the root logger back as it was.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from adapters._lazy import needs
from core import prompts
from core.episode import Episode
from core.games import list_games
from core.tasks import Task

ID_PREFIX = "gamebridge/"


def _import_gem() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with needs("adapters.gem", "gem-llm", "gem"):
            import gem
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
        max_episode_steps: int | None = None,
        **task_fields: Any,
    ) -> None:
        super().__init__()
        if max_episode_steps is not None and (
            not isinstance(max_episode_steps, int) or max_episode_steps < 1
        ):
            raise ValueError(f"max_episode_steps must be an int >= 1, got {max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        if isinstance(task, Task):
            self.task = task
        elif task is not None:
            self.task = Task.from_dict(task)
        else:
            self.task = Task.from_dict({"game": game, "seed": seed or 0, **task_fields})
        self.episode = Episode(self.task)  # stepping before reset raises core's error
        if len(self.episode.outside) > 1:
            raise ValueError("several outside seats: use GameMultiAgentEnv, one agent per seat")

    # rosetta: reset: `reset(seed=None) -> (obs, info)`; never `super().reset(seed)` (global RNGs)
    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        if seed is not None:  # not super().reset(seed): that seeds the global RNGs
            self.task = dataclasses.replace(self.task, seed=seed)
        self.episode = Episode(self.task)
        observation = self.episode.reset()
        return f"{self.episode.system_prompt}\n\n{observation}", {
            "suffix": self._suffix(),
            "system_prompt": self.episode.system_prompt,
            "observation": observation,
            "task": self.task.to_dict(),
        }

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

    def _suffix(self) -> str:
        return prompts.reply_instruction(self.episode.game, self.task)

    # rosetta: step: `step(action) -> (obs, reward, terminated, truncated, info)`
    # rosetta: action: the reply text
    # rosetta: observation: a string
    # rosetta: tools: none: a GEM action is text (`<move>` tags); `sample_random_action()` gives a legal one (core's `Episode.sample_reply`)
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result, capped = self.episode.cap(self.episode.step(action), self.max_episode_steps)
        info = {**result.info, "suffix": self._suffix()}
        if result.done:
            # rosetta: state: `info["trajectory"]` on the last step
            # rosetta: metrics: none: GEM has no aggregation; the final `info` holds `result`, the reward breakdown and the trajectory
            info["trajectory"] = self.episode.to_dict()
        # rosetta: truncation: `truncated`: a cap ended it: the task's turn cap (`terminated` too), or `max_episode_steps` (core settles the game on that step)
        truncated = capped or (result.done and self.episode.termination == "turn_cap")
        # rosetta: reward: `reward` (the rubric total, at the end)
        # rosetta: termination: `terminated` when the game itself ended (not at `max_episode_steps`)
        return result.observation, result.reward, result.done and not capped, truncated, info


# rosetta: registration: `gem.register("gamebridge/<game>", GameEnv, game=game)`
# rosetta: packaging: `pip install gamebridge[gem]`, then `register()`: every game as `gamebridge/<game>`
def register(games: Iterable[str] = ()) -> None:
    """Register ``gamebridge/<game>`` for every core game and for ``games``
    (names not listed by ``list_games``, such as ``openspiel:chess``); again:
    no-op (GEM raises on a duplicate id)."""
    gem = _import_gem()
    from gem.envs.registration import ENV_REGISTRY

    for game in (*list_games(), *games):
        if ID_PREFIX + game not in ENV_REGISTRY:
            gem.register(ID_PREFIX + game, GameEnv, game=game)


def _multi_agent_base() -> Any:
    _import_gem()
    from gem.multiagent import AgentSelector, MultiAgentEnv

    return AgentSelector, MultiAgentEnv


_AgentSelector, _MultiAgentEnv = _multi_agent_base()


def agent_name(seat: int) -> str:
    """GEM's name of an outside seat: ``player_0``, ``player_1``."""
    return f"player_{seat}"


class _SeatToMove(_AgentSelector):  # type: ignore[misc]  # gem has no type stubs
    """GEM's turn order, answered by core: the one active agent is the seat core
    says is to move (a seat may move twice running: a retry after an invalid reply,
    Phantom Tic-Tac-Toe's try on a taken cell), never a fixed rotation."""

    def __init__(self, env: GameMultiAgentEnv) -> None:
        super().__init__([], mode="sequential")
        self._env = env

    def get_active_agents(self) -> list[str]:
        seat = self._env.episode.to_move
        return [] if seat is None else [agent_name(seat)]

    def next(self) -> None:  # core, not a rotation, says who moves next
        pass


# rosetta: agents: `gem.multiagent.MultiAgentEnv` (`GameMultiAgentEnv`): one agent per outside seat, `step({agent: reply})` for the seat to move (core's `AgentSelector`), `observe(agent)` its own view, per-agent rewards
class GameMultiAgentEnv(_MultiAgentEnv):  # type: ignore[misc]  # gem has no type stubs
    """A game with several outside seats as GEM's multi-agent env (its
    PettingZoo-style ``MultiAgentEnv``): ``possible_agents`` are the task's outside
    seats (``player_0``, ``player_1``), ``step({agent: reply})`` takes the reply of
    the one active agent (the seat core says is to move), ``observe(agent)`` is that
    seat's own view (``Episode.observation_for``: never the other's cards). Rewards
    are 0 until the end, then each seat's rubric total (zero-sum where the game
    is). The task needs ``seats`` (e.g. ``"outside,outside"``)."""

    def __init__(self, task: Mapping[str, Any] | Task) -> None:
        super().__init__()
        self.task = task if isinstance(task, Task) else Task.from_dict(task)
        if self.task.seats is None:
            raise ValueError("a multi-agent env needs a task with seats, e.g. 'outside,outside'")
        self.episode = Episode(self.task)
        self.possible_agents = [agent_name(s) for s in self.episode.outside]
        self.agent_selector = _SeatToMove(self)

    def _seat(self, agent: str) -> int:
        return self.episode.outside[self.possible_agents.index(agent)]

    def reset(self, seed: int | None = None) -> tuple[dict[str, str], dict[str, Any]]:
        if seed is not None:  # not GEM's seeding: every random choice comes from the task
            self.task = dataclasses.replace(self.task, seed=seed)
        self.episode = Episode(self.task)
        self.episode.reset()
        observations, _ = super().reset()
        infos = {
            agent: {
                "system_prompt": self.episode.system_prompt_for(self._seat(agent)),
                "to_move": self.episode.to_move,
            }
            for agent in self.agents
        }
        return observations, infos

    def observe(self, agent: str) -> str:
        return self.episode.observation_for(self._seat(agent))

    def _process_actions(
        self, actions: dict[str, str]
    ) -> tuple[dict[str, str], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        (agent, reply), *rest = actions.items()
        if rest:  # GEM checked that only the active agent acted
            raise ValueError(f"one seat moves at a time, got actions for {sorted(actions)}")
        result = self.episode.step(reply)
        done = result.done
        agents = list(self.agents)
        rewards = {a: self.episode.reward_for(self._seat(a)).total if done else 0.0 for a in agents}
        infos: dict[str, Any] = {a: {"to_move": self.episode.to_move} for a in agents}
        infos[agent].update(result.info)
        if done:
            trajectory = self.episode.to_dict()
            for a in agents:
                infos[a]["trajectory"] = trajectory
                infos[a]["result"] = str(self.episode.results[self._seat(a)])
        observations = {a: self.observe(a) for a in agents}
        self.terminations = dict.fromkeys(agents, done)
        truncated = done and self.episode.termination == "turn_cap"
        self.truncations = dict.fromkeys(agents, truncated)
        return observations, rewards, dict(self.terminations), dict(self.truncations), infos
