"""Pointing openreward's own clients at a local ORS server (no openreward import here).

``EnvironmentsAPI(base_url=url)`` works as is. ``OpenReward(base_url=url)`` (which TRL's
``OpenRewardSpec`` and inspect-openreward build) sends sessions to
``sessions.<host>`` instead, a DNS failure for ``127.0.0.1``, unless
``OPENREWARD_SESSION_URL`` is set: :func:`use_local_server` sets it (and turns off the
PyPI update check), :func:`openreward_spec` does that and builds TRL's spec.
"""

from __future__ import annotations

import os
from typing import Any

ENV_NAME = "gamebridge"


def use_local_server(url: str) -> None:
    """Make ``OpenReward(...)`` clients in this process open sessions at ``url``."""
    os.environ["OPENREWARD_SESSION_URL"] = url.rstrip("/")
    os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"


def openreward_spec(url: str, **kwargs: Any) -> Any:
    """TRL's ``OpenRewardSpec`` for the gamebridge server at ``url`` (the session URL
    set for it); ``kwargs`` as ``OpenRewardSpec``'s (``split``, ``num_tasks``, ...)."""
    use_local_server(url)
    try:
        from trl.experimental.openreward import OpenRewardSpec
    except ImportError as e:
        raise ImportError(
            "openreward_spec needs TRL 1.16 and openreward; install with: "
            "pip install -e '.[ors,trl]'"
        ) from e
    return OpenRewardSpec(url.rstrip("/"), env_name=kwargs.pop("env_name", ENV_NAME), **kwargs)


def _last_text(completion: Any) -> str:
    """The text of the last assistant message of a TRL completion (a message list)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if message.get("role") == "assistant":
            content = message.get("content") or ""
            return content if isinstance(content, str) else ""
    return ""


def settled_reward(environments: list[Any], completions: list[Any], **_: Any) -> list[float | None]:
    """A reward function for ``OpenRewardSpec`` rollouts that ORS itself would score.

    TRL's bridge ends a rollout when the model answers without a tool call, but never
    routes that answer into the environment's ``@terminal`` tool, as ORS harnesses
    do; an unfinished game then has no reward (``None``). This calls the terminal tool
    (with the model's last text, should it take one: gamebridge's takes none and
    core settles the game, scored like a turn cap), so every rollout gets core's
    reward. It reaches into TRL's rollout
    environment (``_session``, ``_call_ors_tool``, TRL 1.16) for the session."""
    rewards: list[float | None] = []
    for env, completion in zip(environments, completions, strict=True):
        if env.reward is None and not env.finished and env._session is not None:
            terminal = env._session.terminal_tool()
            if terminal is not None:
                arguments = {} if terminal.arg is None else {terminal.arg: _last_text(completion)}
                env._call_ors_tool(terminal.name, arguments)
        rewards.append(env.reward)
    return rewards
