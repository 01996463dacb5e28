"""NeMo Gym's own ``GymnasiumAgent``, served without ``ng_run``.

``python -m adapters.nemo_gym.agent --port N --resources-url URL --model-url URL``

The agent is NeMo Gym's code: ``POST /run`` with a dataset row
calls the resources server's ``/reset``, then alternates the model
(``POST {model}/v1/responses``) and ``/step`` until the game ends, and answers
the summed reward with the last step's ``info`` (where the gamebridge server
puts the trajectory). One addition: the row it hands the server carries the
agent's ``max_steps`` (``gamebridge_max_steps``), so the server settles a game
at the agent's cap (core's ``Episode.settle``) instead of it ending unscored. ``ng_run`` hands a child server its global config in the
``NEMO_GYM_CONFIG_DICT`` environment variable; this module does the same, with
the two servers' addresses, so no head server and no Ray are needed.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any
from urllib.parse import urlsplit

from adapters._lazy import needs

RESOURCES = "gamebridge_resources"
MODEL = "policy_model"


def _address(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise ValueError(f"need http://host:port[/v1], got {url!r}")
    return {"host": parts.hostname, "port": parts.port}


# rosetta: rollout: NeMo Gym's own `GymnasiumAgent` (`POST /run`): `/v1/responses`, then `/step`, until done
def build_agent_app(
    port: int, resources_url: str, model_url: str, max_steps: int = 100, host: str = "127.0.0.1"
) -> Any:
    """The agent's FastAPI app. ``model_url`` is an OpenAI-compatible base URL
    (``http://host:port/v1``): the agent posts to ``{host:port}/v1/responses``."""
    agent = {
        "host": host,
        "port": port,
        "entrypoint": "app.py",
        "max_steps": max_steps,
        "resources_server": {"type": "resources_servers", "name": RESOURCES},
        "model_server": {"type": "responses_api_models", "name": MODEL},
    }
    global_config = {
        "gamebridge_agent": {"responses_api_agents": {"gymnasium_agent": agent}},
        RESOURCES: {"resources_servers": {"gamebridge": _address(resources_url)}},
        MODEL: {"responses_api_models": {"openai_model": _address(model_url)}},
    }
    os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(global_config)
    with needs("the NeMo Gym agent", "nemo-gym (Python >= 3.12)", "nemo"):
        from aiohttp import ClientResponseError
        from responses_api_agents.gymnasium_agent.app import GymnasiumAgent, GymnasiumAgentConfig
    from adapters.nemo_gym.server import MAX_STEPS_KEY, app_without_ng_run

    class GameGymnasiumAgent(GymnasiumAgent):  # type: ignore[misc, valid-type]
        """NeMo Gym's agent, telling the server its cap (the server cannot see it)."""

        async def run(self, request: Any, body: Any) -> Any:
            body = body.model_copy(update={MAX_STEPS_KEY: self.config.max_steps})
            return await super().run(request, body)

        # FastAPI reads the route's parameters from the signature: keep NeMo Gym's own.
        run.__signature__ = inspect.signature(GymnasiumAgent.run)  # type: ignore[attr-defined]

    config = GymnasiumAgentConfig(name="gamebridge_agent", **agent)
    app = app_without_ng_run(GameGymnasiumAgent, config, global_config)
    app.add_exception_handler(ClientResponseError, _upstream_error)
    return app


async def _upstream_error(request: Any, exc: Exception) -> Any:
    """The agent's call to the resources or model server failed: answer with that
    server's reason (its 4xx status and detail, a 502 for its 5xx), not the bare
    500 "Internal Server Error" the unchanged agent gives."""
    from fastapi.responses import JSONResponse

    status = getattr(exc, "status", 0)
    raw = getattr(exc, "response_content", b"") or b""
    try:
        detail: Any = json.loads(raw).get("detail", raw.decode("utf-8", "replace"))
    except (ValueError, AttributeError):
        detail = raw.decode("utf-8", "replace")[:2000]
    url = getattr(getattr(exc, "request_info", None), "real_url", "")
    return JSONResponse(
        {"detail": detail, "upstream": str(url), "upstream_status": status},
        status_code=status if 400 <= status < 500 else 502,
    )
