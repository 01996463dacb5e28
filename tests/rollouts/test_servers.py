"""start_server (subprocess lifecycle) and ChatClient (retries, errors)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from rollouts.model.client import ChatClient, ModelError, parse_completion
from rollouts.model.servers import ServerStartError, free_port, start_server

pytestmark = pytest.mark.server


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0); look at its state
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] == "Z"
    except FileNotFoundError:
        return True


CHILD = (
    "import subprocess, sys, http.server, functools\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
    "open(sys.argv[2], 'w').write(str(child.pid))\n"
    "http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler, port=int(sys.argv[1]),"
    " bind='127.0.0.1')\n"
)


def test_start_server_waits_then_stops_process_and_children(tmp_path) -> None:
    pid_file = tmp_path / "child.pid"
    argv = ["python", "-c", CHILD, "{port}", str(pid_file)]
    with start_server(argv, "/", cwd=tmp_path, timeout=60) as srv:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}"
        assert srv.process.poll() is None
        child = int(pid_file.read_text())
        assert not _gone(child)
        server_pid = srv.process.pid
    assert srv.process.poll() is not None
    deadline = time.monotonic() + 10
    while not (_gone(child) and _gone(server_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "the server's child survived"


def test_start_server_reports_exit_with_log_tail() -> None:
    argv = ["python", "-c", "import sys; sys.stderr.write('kaput: no config\\n'); sys.exit(3)"]
    with pytest.raises(ServerStartError) as info, start_server(argv, "/health", timeout=30):
        pass
    assert "code 3" in str(info.value) and "kaput: no config" in str(info.value)


def test_start_server_times_out_and_kills() -> None:
    argv = ["python", "-c", "import time, sys; print('sleeping', flush=True); time.sleep(60)"]
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as info, start_server(argv, "/health", timeout=1.5):
        pass
    assert "not healthy" in str(info.value) and "sleeping" in str(info.value)
    assert time.monotonic() - t0 < 30


def test_start_server_env_and_interpreter(tmp_path) -> None:
    script = (
        "import os, sys, http.server\n"
        "assert os.environ['GB_PORT'] == sys.argv[1]\n"
        "http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler,"
        " port=int(sys.argv[1]), bind='127.0.0.1')\n"
    )
    with start_server(
        ["{python}", "-c", script, "{port}"],
        "/",
        env={"GB_PORT": "{port}"},
        python=sys.executable,
        cwd=tmp_path,
        timeout=60,
    ) as srv:
        assert srv.process.args[0] == sys.executable


def test_chat_client_unreachable_raises_after_retries() -> None:
    port = free_port()
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "m", max_retries=2, backoff=0.01)
    with pytest.raises(ModelError, match="cannot reach"):
        client.complete([{"role": "user", "content": "hi"}])


def test_chat_client_4xx_is_not_retried_and_api_key_sent(monkeypatch) -> None:
    from rollouts.model.policy_server import serve_in_thread

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with serve_in_thread("random", 0) as url:
        client = ChatClient(url, "scripted", max_retries=3, backoff=5.0)
        assert client.api_key == "sk-test"
        t0 = time.monotonic()
        with pytest.raises(ModelError, match="422"):
            client.complete([{"role": "user", "content": "no game here"}])
        assert time.monotonic() - t0 < 5.0  # a retry would have slept 5 s


def test_parse_completion_shapes() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "make_move", "arguments": '{"move": "a1"}'},
                        },
                        {"function": {"name": "make_move", "arguments": "not json"}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"completion_tokens": 7},
    }
    c = parse_completion(body)
    assert c.text == "" and c.completion_tokens == 7
    # Decoded, not normalised: text that is not JSON stays text, for core to reject.
    assert c.tool_calls[0].arguments == {"move": "a1"} and c.tool_calls[1].arguments == "not json"
    assert c.assistant_message()["tool_calls"][0]["function"]["arguments"] == '{"move": "a1"}'
    with pytest.raises(ModelError):
        parse_completion({"error": "x"})


def test_async_client_matches_sync() -> None:
    import asyncio

    from core.episode import Episode
    from core.tasks import Task
    from rollouts.model.client import AsyncChatClient
    from rollouts.model.policy_server import serve_in_thread

    ep = Episode(Task(game="connect_four", seed=2))
    messages = [
        {"role": "system", "content": ep.system_prompt},
        {"role": "user", "content": ep.reset()},
    ]

    async def ask(url: str) -> list[str]:
        async with AsyncChatClient(url, "scripted") as client:
            done = await asyncio.gather(*(client.complete(messages) for _ in range(4)))
        return [c.text for c in done]

    with serve_in_thread("minimax:1", 0) as url:
        sync = ChatClient(url, "scripted").complete(messages)
        texts = asyncio.run(ask(url))
    assert texts == [sync.text] * 4 and "<move>" in sync.text


def test_error_inside_block_carries_server_log(tmp_path) -> None:
    script = (
        "import sys, http.server\n"
        "print('server says: config xyz loaded', flush=True)\n"
        "http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler,"
        " port=int(sys.argv[1]), bind='127.0.0.1')\n"
    )
    with (
        pytest.raises(RuntimeError) as info,
        start_server(["python", "-c", script, "{port}"], "/", cwd=tmp_path, timeout=60) as srv,
    ):
        raise RuntimeError("driver failed")
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "config xyz loaded" in notes
    assert srv.log_path.exists()
    srv.log_path.unlink()
