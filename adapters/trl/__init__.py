"""The TRL adapter (GRPOTrainer 1.16): both multi-turn hooks over ``core.Episode``.

* ``environment_factory``: :class:`GameEnvironment` / :func:`environment_class`
  (tool calls to ``make_move``; ``get_reward`` is the rubric total), with
  ``make_dataset(tasks, tools=True)``; several games in one run (TRL's
  multi-environment mode): ``environment_factories(games)`` and
  ``make_dataset(tasks, environment=True)``.
* ``rollout_func``: ``make_dataset(tasks, tools=False)``: rows whose prompts carry
  their task (:func:`task_of`), for the rollout function of the training wing,
  ``rollouts.training.text_rollout.TextRollout`` (``<move>`` tags, generation with
  the trainer's model: the trainer's side, as in TRL's own examples).
* :func:`reward_functions` / :func:`reward_weights`: one reward column per core
  rubric component.

This package imports neither torch nor TRL at import time. See docs/trl.md.
"""

from adapters.trl import environment, rewards
from adapters.trl.environment import *  # noqa: F403 - the names of environment.__all__
from adapters.trl.rewards import *  # noqa: F403 - the names of rewards.__all__

__all__ = [*environment.__all__, *rewards.__all__]
