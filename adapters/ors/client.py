"""Pointing openreward's own clients at a local ORS server (no openreward import here).

``EnvironmentsAPI(base_url=url)`` works as is. ``OpenReward(base_url=url)`` (which TRL's
``OpenRewardSpec`` and inspect-openreward build) sends sessions to
``sessions.<host>`` instead, a DNS failure for ``127.0.0.1``, unless
``OPENREWARD_SESSION_URL`` is set: :func:`use_local_server` sets it (and turns off the
PyPI update check), :func:`openreward_spec` does that and builds TRL's spec. The reward
function that trains through TRL's bridge is the trainer's side:
``rollouts.training.ors.settled_reward``.
"""

from __future__ import annotations

import os
from typing import Any

from adapters._lazy import needs

ENV_NAME = "gamebridge"


def use_local_server(url: str) -> None:
    """Make ``OpenReward(...)`` clients in this process open sessions at ``url``."""
    os.environ["OPENREWARD_SESSION_URL"] = url.rstrip("/")
    os.environ["OPENREWARD_DISABLE_UPDATE_CHECK"] = "1"


def openreward_spec(url: str, **kwargs: Any) -> Any:
    """TRL's ``OpenRewardSpec`` for the gamebridge server at ``url`` (the session URL
    set for it); ``kwargs`` as ``OpenRewardSpec``'s (``split``, ``num_tasks``, ...)."""
    use_local_server(url)
    with needs("openreward_spec", "TRL 1.16 and openreward", "ors,trl"):
        from trl.experimental.openreward import OpenRewardSpec
    return OpenRewardSpec(url.rstrip("/"), env_name=kwargs.pop("env_name", ENV_NAME), **kwargs)
