"""What the servers expose: they listen on 127.0.0.1 unless told otherwise, and no
endpoint evaluates code or reads files (the route lists are pinned: a new route must
be added here on purpose; the server modules call no eval/exec/open/subprocess)."""

from __future__ import annotations

import ast
import inspect
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from reliability_servers import server_params

from rollouts.frameworks import FRAMEWORKS

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it

ROUTES = {
    "openenv": {
        "/health", "/mcp", "/metadata", "/reset", "/schema", "/sessions", "/state", "/step",
    },
    "nemo_gym": {"/aggregate_metrics", "/reset", "/sessions", "/step"},
    "nemo_gym_tools": {
        "/aggregate_metrics", "/make_move", "/seed_session", "/sessions", "/verify",
    },
    "ors": {
        "/create", "/create_session", "/delete", "/delete_session", "/health",
        "/list_environments", "/ping", "/version", "/{env_name}/call", "/{env_name}/messages",
        "/{env_name}/num_tasks", "/{env_name}/prompt", "/{env_name}/score_group",
        "/{env_name}/splits", "/{env_name}/task", "/{env_name}/task_range",
        "/{env_name}/task_tools", "/{env_name}/tasks", "/{env_name}/tools",
    },
}  # fmt: skip
"""OpenAPI paths; besides these, FastAPI's /docs, /redoc, /openapi.json (read-only
schema pages), OpenEnv's /ws, NeMo Gym's / (liveness) and ORS's GET /sessions (served
by adapters/ors/server.py's middleware, before openreward's routing)."""

SERVER_MODULES = [
    "adapters/_asgi.py",
    "adapters/openenv/env.py",
    "adapters/openenv/limits.py",
    "adapters/_websocket.py",
    "adapters/_reclaim.py",
    "adapters/openenv/__main__.py",
    "adapters/nemo_gym/server.py",
    "adapters/_sessions.py",
    "adapters/nemo_gym/__main__.py",
    "adapters/nemo_gym/rows/__init__.py",
    "adapters/nemo_gym/rows/__main__.py",
    "adapters/ors/__init__.py",
    "adapters/ors/env.py",
    "adapters/ors/server.py",
    "adapters/ors/__main__.py",
    "rollouts/model/policy_server.py",
    "rollouts/model/openai_wire.py",
    "rollouts/model/chat_api.py",
    "rollouts/model/responses_api.py",
]
FORBIDDEN_NAMES = {"eval", "exec", "compile", "open", "__import__", "breakpoint"}
"""Builtins that run code or open files."""
FORBIDDEN_ATTRIBUTES = {
    "system", "popen", "Popen", "check_output", "execv", "execvp", "spawnv",
    "open", "read_text", "read_bytes", "load_module", "import_module",
}  # fmt: skip
"""Methods that run processes, import modules or read files (``re.compile`` is fine)."""
FORBIDDEN_IMPORTS = {"subprocess", "pickle", "marshal", "shelve", "importlib"}


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of IPv4/IPv6 sockets listening on ``port`` (Linux /proc/net)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A = LISTEN
                found.add(address)
    return found


@pytest.mark.server
@pytest.mark.parametrize("server", server_params())
def test_servers_listen_on_loopback_by_default(
    server: str, reliability_servers: dict[str, Any]
) -> None:
    if server not in reliability_servers:
        pytest.skip(f"{server} is not running here")
    running = reliability_servers[server]
    assert "--host" not in running.process.args, "started with its default host"
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp on this system")
    assert _listening_addresses(running.port) == {LOOPBACK}


@pytest.mark.server
@pytest.mark.parametrize("server", server_params())
def test_route_lists_are_pinned(server: str, reliability_servers: dict[str, Any]) -> None:
    if server not in reliability_servers:
        pytest.skip(f"{server} is not running here")
    url = reliability_servers[server].base_url
    paths = set(httpx.get(url + "/openapi.json", timeout=30).json()["paths"])
    assert paths == ROUTES[server]
    if server == "openenv":
        # One MCP tool, make_move (a move in the session's game, nothing else), no Gradio UI.
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        mcp = httpx.post(url + "/mcp", json=listing, timeout=30).json()
        assert [tool["name"] for tool in mcp["result"]["tools"]] == ["make_move"]
        assert httpx.get(url + "/web", timeout=30).status_code == 404
    if server == "ors":
        # No toolsets (openreward's built-in ones add shell, file and web tools), and the
        # one tool listed per session is core's make_move.
        spec = {"task_spec": {"game": "tictactoe"}, "toolset_name": "claude-code"}
        refused = httpx.post(url + "/create", json=spec, headers={"X-Session-ID": "t"})
        assert refused.status_code == 400
        assert httpx.get(url + "/gamebridge/tools", timeout=30).json()["tools"] == []


def test_policy_server_routes_and_default_host() -> None:
    from rollouts import cli
    from rollouts.model.policy_server import create_app, serve, serve_in_thread

    paths = {getattr(r, "path", "") for r in create_app("random").routes}
    assert paths == {
        "/health", "/openapi.json", "/v1/chat/completions", "/v1/models", "/v1/responses",
    }  # fmt: skip
    for function in (serve, serve_in_thread):
        assert inspect.signature(function).parameters["host"].default == "127.0.0.1"
    assert cli.build_parser().parse_args(["serve-policy"]).host == "127.0.0.1"
    with serve_in_thread("random") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        if Path("/proc/net/tcp").exists():
            assert _listening_addresses(port) == {LOOPBACK}


def test_server_clis_default_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m adapters.openenv`` / ``nemo_gym`` / ``ors`` without ``--host`` bind
    127.0.0.1 (their flags are ``adapters._serve.server_parser``'s; ``launch`` gets them)."""
    import importlib

    class Launched(Exception):
        pass

    def launch(args: Any, **_: Any) -> None:
        served.append(args)
        raise Launched

    served: list[Any] = []
    for name in [f.adapter for f in FRAMEWORKS.values() if f.transport == "http"]:
        module = importlib.import_module(f"{name}.__main__")
        monkeypatch.setattr(module, "launch", launch)
        with pytest.raises(Launched):
            module.main(["--port", "0"])
    assert [args.host for args in served] == ["127.0.0.1"] * 3


@pytest.mark.parametrize("module", SERVER_MODULES)
def test_server_modules_evaluate_no_code_and_read_no_files(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text(), filename=module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                assert func.id not in FORBIDDEN_NAMES, f"{module}:{node.lineno} calls {func.id}"
            if isinstance(func, ast.Attribute):
                bad = func.attr in FORBIDDEN_ATTRIBUTES
                assert not bad, f"{module}:{node.lineno} calls .{func.attr}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            roots = {n.split(".")[0] for n in names}
            assert not roots & FORBIDDEN_IMPORTS, f"{module}:{node.lineno} imports {roots}"


def test_the_proc_net_check_sees_a_loopback_socket() -> None:
    """Sanity of the check above: a socket bound to 127.0.0.1 shows as LOOPBACK."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        if Path("/proc/net/tcp").exists():
            assert _listening_addresses(sock.getsockname()[1]) == {LOOPBACK}
