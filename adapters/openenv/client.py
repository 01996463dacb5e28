"""The OpenEnv client for gamebridge (the ``client`` module of ``openenv init``'s layout):
``GameEnvClient(base_url=...)``, or ``GameEnvClient.from_docker_image(image)`` for the
image built from ``server/Dockerfile``."""

from __future__ import annotations

import json
from typing import Any

from adapters._lazy import needs

with needs("adapters.openenv", "OpenEnv (openenv 0.10, or openenv-core 0.3)", "openenv"):
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient

from adapters.openenv.models import GameAction, GameObservation, GameState


# rosetta: rollout: the client loops `reset()` / `step(GameAction)` until `done` (rollouts/drivers/openenv.py)
class GameEnvClient(EnvClient[GameAction, GameObservation, GameState]):
    """The WebSocket client (async; ``.sync()`` for a blocking one)."""

    def _step_payload(self, action: GameAction) -> dict[str, Any]:
        # exclude_unset, not exclude_none: `arguments=None` is a tool call with null arguments.
        return action.model_dump(exclude_unset=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GameObservation]:
        obs = GameObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(observation=obs, reward=obs.reward, done=obs.done)

    def _parse_state(self, payload: dict[str, Any]) -> GameState:
        return GameState(**payload)

    # rosetta: tools: `call_tool("make_move", move=...)`: an MCP `tools/call` on this session's game (OpenEnv's `mcp` message)
    async def call_tool(self, name: str, **arguments: Any) -> Any:
        """An MCP ``tools/call`` on this session's game (OpenEnv's ``{"type": "mcp"}``
        WebSocket message): the tool's result, or ``RuntimeError`` with the server's
        JSON-RPC error. ``reset`` first: the game is the one it started."""
        return _result(await self._mcp("tools/call", {"name": name, "arguments": arguments}))

    async def list_tools(self) -> list[dict[str, Any]]:
        """MCP ``tools/list``: the ``make_move`` tool, with core's schema."""
        return list(_result(await self._mcp("tools/list", {}))["tools"])

    async def _mcp(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._calls = getattr(self, "_calls", 0) + 1
        rpc = {"jsonrpc": "2.0", "method": method, "params": params, "id": self._calls}
        reply = await self._send_and_receive({"type": "mcp", "data": rpc})
        return dict(reply.get("data") or {})


def _result(rpc: dict[str, Any]) -> Any:
    if rpc.get("error"):
        raise RuntimeError(f"MCP error: {json.dumps(rpc['error'])}")
    return rpc.get("result")
