"""What OpenEnv users reach for: the MCP tool path (``/mcp`` and the session's ``mcp``
message), real ``/metadata``, the ``openenv init`` layout (``openenv.yaml``,
``server/Dockerfile``, ``server/app.py``, client and models modules) checked statically
and run from the Dockerfile's own entry point, and the web interface."""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("openenv", reason="openenv-core is not installed")

from core import Episode, Task, make_game

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "server" / "Dockerfile").read_text(encoding="utf-8")


def _rpc(method: str, params: dict[str, Any], rpc_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": rpc_id}


def _cmd() -> list[str]:
    match = re.search(r"^CMD (\[.*\])$", DOCKERFILE, flags=re.M)
    assert match, "server/Dockerfile has no exec-form CMD"
    return list(json.loads(match[1]))


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The server started by the Docker image's own CMD (``python -m server.app ...``),
    from the repository root (the image's WORKDIR holds the same files), on 127.0.0.1."""
    from rollouts.model.servers import start_server

    argv = _cmd()
    assert argv[:3] == ["python", "-m", "server.app"]
    argv[argv.index("--host") + 1] = "127.0.0.1"
    argv[argv.index("--port") + 1] = "{port}"
    argv += ["--game", "connect_four"]
    with start_server(argv, "/health", {"PYTHONPATH": str(ROOT)}, sys.executable, cwd=ROOT) as s:
        yield s.base_url


# --- MCP ------------------------------------------------------------------------------------


@pytest.mark.server
def test_mcp_tools_list_is_core_s_make_move_schema(server: str) -> None:
    out = httpx.post(f"{server}/mcp", json=_rpc("tools/list", {}), timeout=30).json()
    (tool,) = out["result"]["tools"]
    function = Episode(Task(game="connect_four")).tool_schema["function"]
    assert tool["name"] == function["name"] == "make_move"
    assert tool["description"] == function["description"]
    assert tool["inputSchema"] == function["parameters"]


@pytest.mark.server
def test_mcp_make_move_plays_the_session_s_game(server: str) -> None:
    from adapters.openenv import GameEnvClient

    task = Task(game="tictactoe", seed=3)
    moves = ["4", "0", "zz", "8", "2", "6", "1", "3", "5", "7"]

    async def play() -> tuple[list[str], Any, list[dict[str, Any]]]:
        async with GameEnvClient(base_url=server) as env:
            await env.reset(task=task.to_dict(), tools=True)
            tools = await env.list_tools()
            texts = []
            for move in moves:
                texts.append(await env.call_tool("make_move", move=move))
                state = await env.state()
                if state.trajectory["done"]:
                    break
            return texts, state, tools

    texts, state, tools = asyncio.run(play())
    played = [{"move": m} for m in moves[: len(texts)]]
    reference = Episode.replay(task, played)
    assert state.trajectory == reference.to_dict()  # core judged each call, "zz" included
    assert texts[-1] == reference.observation and reference.done
    assert [t["name"] for t in tools] == ["make_move"]


@pytest.mark.server
def test_mcp_without_a_game_is_a_clear_json_rpc_error(server: str) -> None:
    out = httpx.post(
        f"{server}/mcp",
        json=_rpc("tools/call", {"name": "make_move", "arguments": {"move": "4"}}),
        timeout=30,
    ).json()
    assert "no game in this session" in out["error"]["message"]


# --- metadata -------------------------------------------------------------------------------


@pytest.mark.server
def test_metadata_names_the_game_and_carries_its_doc(server: str) -> None:
    import core.games.connect_four as module

    meta = httpx.get(f"{server}/metadata", timeout=30).json()
    spec = make_game("connect_four").spec
    assert meta["name"] == "gamebridge-connect_four"
    assert spec.title in meta["description"] and spec.rules in meta["description"]
    assert meta["readme_content"] == module.__doc__.strip()
    assert "GameEnvironment environment" not in json.dumps(meta)


@pytest.mark.server
def test_openenv_validate_passes_on_the_running_server(server: str) -> None:
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(server, timeout_s=30)
    failed = [c for c in report["criteria"] if c.get("required", True) and not c["passed"]]
    assert report["passed"], failed


# --- the openenv init layout, statically ----------------------------------------------------


def test_openenv_yaml_points_at_the_dockerfile_s_app() -> None:
    text = (ROOT / "openenv.yaml").read_text(encoding="utf-8")
    manifest = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    assert manifest["spec_version"] == "1" and manifest["runtime"] == "fastapi"
    assert manifest["app"] == "server.app:app"
    assert manifest["port"] == "8000" and "EXPOSE 8000" in DOCKERFILE
    assert _cmd()[-2:] == ["--port", manifest["port"]]
    code = "import server.app as m; print(type(m.app).__name__, callable(m.main))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["FastAPI", "True"], out.stderr[-2000:]


def _dockerignored(path: str, patterns: list[str]) -> bool:
    parts = Path(path).parts
    return any(
        fnmatch.fnmatch(path, p.removeprefix("**/"))
        or any(fnmatch.fnmatch(part, p.removeprefix("**/")) for part in parts)
        for p in patterns
    )


def test_the_image_s_build_context_holds_what_the_dockerfile_copies_and_installs() -> None:
    """The build context is the repository root: every COPY source exists there and is
    not excluded by .dockerignore; the pip install gets every package pyproject.toml
    names; the entry point's imports are all in the copied tree."""
    ignore = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied: list[str] = []
    for line in DOCKERFILE.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            *sources, _dest = shlex.split(line)[1:]
            for source in sources:
                assert (ROOT / source).exists(), source
                assert not _dockerignored(source, ignore), f"{source} is .dockerignored"
                copied.append(source)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    includes = project["tool"]["setuptools"]["packages"]["find"]["include"]
    for pattern in includes:
        assert pattern.rstrip("*") in copied, f"package {pattern} is not copied"
    for module in project["tool"]["setuptools"]["py-modules"]:
        assert f"{module}.py" in copied
    assert project["project"]["readme"] in copied
    assert re.search(r'pip install [^\n]*"\.\[openenv\]"', DOCKERFILE)
    assert "openenv" in project["project"]["optional-dependencies"]
    # The package's own imports (core, adapters/openenv, server) need nothing outside it.
    for source in ("server/app.py", "adapters/openenv/env.py"):
        imports = re.findall(r"^\s*from (\w+)[.\w]* import", (ROOT / source).read_text(), re.M)
        local = {i for i in imports if (ROOT / i).is_dir() or (ROOT / f"{i}.py").exists()}
        assert local <= {c.rstrip("/") for c in copied}, (source, local)


def test_client_and_models_modules() -> None:
    from adapters.openenv import client, models

    assert {"GameAction", "GameObservation", "GameState"} <= set(vars(models))
    assert hasattr(client.GameEnvClient, "from_docker_image")  # OpenEnv's EnvClient


# --- the web interface ----------------------------------------------------------------------


def test_web_interface_plays_a_game() -> None:
    code = """
import os
os.environ["ENABLE_WEB_INTERFACE"] = "true"
from fastapi.testclient import TestClient
import server.app
c = TestClient(server.app.app)
page = c.get("/web/")
reset = c.post("/web/reset", json={}).json()
step = c.post("/web/step", json={"action": {"reply": "<move>4</move>"}}).json()
print(page.status_code, "Legal moves" in reset["observation"]["text"], step["observation"]["info"]["move"])
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.stdout.split()[-3:] == ["200", "True", "4"], out.stderr[-3000:]
