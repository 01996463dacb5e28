"""The embedded OpenAI-compatible policy server: JSON, SSE, Responses API,
tool calls, and 4xx (never 5xx) on bad requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from core.episode import Episode
from core.players import ScriptedPlayer
from core.tasks import Task
from rollouts.model.policy_server import count_tokens, serve_in_thread

pytestmark = pytest.mark.server

POLICY = "minimax:2"
SEED = 5


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(POLICY, SEED, max_body_bytes=64 * 1024) as base:
        yield base


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


def conversation(seed: int = 11, tools: bool = False) -> tuple[Episode, list[dict[str, Any]]]:
    ep = Episode(Task(game="tictactoe", seed=seed, model_player=1))
    system = ep.tool_system_prompt if tools else ep.system_prompt
    return ep, [{"role": "system", "content": system}, {"role": "user", "content": ep.reset()}]


def sse_data(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


# --- chat completions -----------------------------------------------------------------


def test_chat_json_is_the_scripted_reply(url: str, http: httpx.Client) -> None:
    _, messages = conversation()
    r = http.post(f"{url}/chat/completions", json={"model": "scripted", "messages": messages})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    expected = ScriptedPlayer(POLICY, SEED).reply(messages)
    assert choice["message"] == {"role": "assistant", "content": expected}
    assert choice["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == count_tokens(expected)
    assert body["usage"]["prompt_tokens"] == sum(count_tokens(m["content"]) for m in messages)
    # deterministic for (seed, conversation), ids included
    again = http.post(f"{url}/chat/completions", json={"messages": messages}).json()
    assert again["choices"] == body["choices"] and again["id"] == body["id"]


def test_chat_json_plays_a_whole_game(url: str, http: httpx.Client) -> None:
    ep, messages = conversation(seed=2)
    while not ep.done:
        r = http.post(f"{url}/chat/completions", json={"messages": messages})
        reply = r.json()["choices"][0]["message"]["content"]
        messages.append({"role": "assistant", "content": reply})
        res = ep.step(reply)
        messages.append({"role": "user", "content": res.observation})
    assert ep.result in ("win", "draw", "loss")
    assert all(e["error"] is None for e in ep.events)  # minimax:2 without noise is always legal


def test_chat_content_parts_are_accepted(url: str, http: httpx.Client) -> None:
    _, messages = conversation()
    parts = [{**m, "content": [{"type": "text", "text": m["content"]}]} for m in messages]
    a = http.post(f"{url}/chat/completions", json={"messages": messages}).json()
    b = http.post(f"{url}/chat/completions", json={"messages": parts}).json()
    assert a["choices"][0]["message"] == b["choices"][0]["message"]


def test_chat_stream_sse(url: str, http: httpx.Client) -> None:
    _, messages = conversation()
    r = http.post(
        f"{url}/chat/completions",
        json={"messages": messages, "stream": True, "stream_options": {"include_usage": True}},
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    data = sse_data(r.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == ScriptedPlayer(POLICY, SEED).reply(messages)
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "stop" and all(f is None for f in finishes[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_chat_tool_call_json_and_stream(url: str, http: httpx.Client) -> None:
    ep, messages = conversation(tools=True)
    payload = {"messages": messages, "tools": [ep.tool_schema]}
    body = http.post(f"{url}/chat/completions", json=payload).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "make_move"
    move = ScriptedPlayer(POLICY, SEED).move(messages)
    assert json.loads(call["function"]["arguments"]) == {"move": move}
    assert not ep.step_move(move).info["error"]

    stream = http.post(f"{url}/chat/completions", json={**payload, "stream": True})
    data = sse_data(stream.text)
    assert data[-1] == "[DONE]"
    deltas = [json.loads(d)["choices"][0] for d in data[:-1]]
    calls = [tc for d in deltas for tc in d["delta"].get("tool_calls") or []]
    assert calls[0]["function"]["name"] == "make_move"
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"move": move}
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_tool_choice_none_and_other_tools_give_text(url: str, http: httpx.Client) -> None:
    ep, messages = conversation()
    none = http.post(
        f"{url}/chat/completions",
        json={"messages": messages, "tools": [ep.tool_schema], "tool_choice": "none"},
    ).json()
    other = {"type": "function", "function": {"name": "look_around", "parameters": {}}}
    unrelated = http.post(
        f"{url}/chat/completions", json={"messages": messages, "tools": [other]}
    ).json()
    for body in (none, unrelated):
        assert "<move>" in body["choices"][0]["message"]["content"]


def test_tool_result_messages_continue_the_game(url: str, http: httpx.Client) -> None:
    ep, messages = conversation(tools=True)
    tools = [ep.tool_schema]
    while not ep.done:
        msg = http.post(
            f"{url}/chat/completions", json={"messages": messages, "tools": tools}
        ).json()["choices"][0]["message"]
        messages.append(msg)
        call = msg["tool_calls"][0]
        res = ep.step_move(json.loads(call["function"]["arguments"])["move"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": res.observation})
    assert ep.result is not None and all(e["kind"] == "tool" for e in ep.events)


# --- responses API ----------------------------------------------------------------------


def test_responses_text(url: str, http: httpx.Client) -> None:
    _, messages = conversation()
    r = http.post(
        f"{url}/responses",
        json={
            "model": "scripted",
            "instructions": messages[0]["content"],
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_text", "text": messages[1]["content"]}],
                }
            ],
        },
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "response" and body["status"] == "completed"
    (item,) = body["output"]
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"][0]["type"] == "output_text"
    assert item["content"][0]["text"] == ScriptedPlayer(POLICY, SEED).reply(messages)
    assert body["usage"]["output_tokens"] == count_tokens(item["content"][0]["text"])


def test_responses_function_calls_round_trip(url: str, http: httpx.Client) -> None:
    ep, messages = conversation(tools=True)
    schema = ep.tool_schema["function"]
    tools = [
        {
            "type": "function",
            "name": schema["name"],
            "description": schema["description"],
            "parameters": schema["parameters"],
        }
    ]
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": messages[1]["content"]}
    ]
    player = ScriptedPlayer(POLICY, SEED)
    while not ep.done:
        body = http.post(
            f"{url}/responses",
            json={"instructions": messages[0]["content"], "input": items, "tools": tools},
        ).json()
        (call,) = body["output"]
        assert call["type"] == "function_call" and call["name"] == "make_move"
        move = json.loads(call["arguments"])["move"]
        assert move == player.move(messages)
        messages.append({"role": "assistant", "content": ""})
        res = ep.step_move(move)
        messages.append({"role": "tool", "content": res.observation})
        items += [
            call,
            {"type": "function_call_output", "call_id": call["call_id"], "output": res.observation},
        ]
    assert ep.result is not None


def test_responses_stream_events(url: str, http: httpx.Client) -> None:
    _, messages = conversation()
    r = http.post(
        f"{url}/responses",
        json={
            "input": messages[1]["content"],
            "instructions": messages[0]["content"],
            "stream": True,
        },
    )
    events = [json.loads(d) for d in sse_data(r.text)]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert deltas == events[-1]["response"]["output"][0]["content"][0]["text"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_openai_sdk_parses_every_shape(url: str) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
    ep, messages = conversation(tools=True)
    reply = client.chat.completions.create(model="scripted", messages=messages)
    assert "<move>" in (reply.choices[0].message.content or "")
    streamed = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="scripted", messages=messages, stream=True)
        if c.choices
    )
    assert streamed == reply.choices[0].message.content
    tool = client.chat.completions.create(
        model="scripted", messages=messages, tools=[ep.tool_schema]
    )
    assert tool.choices[0].message.tool_calls[0].function.name == "make_move"
    resp = client.responses.create(
        model="scripted", instructions=messages[0]["content"], input=messages[1]["content"]
    )
    assert "<move>" in resp.output_text
    assert [m.id for m in client.models.list().data] == ["scripted"]


# --- the rest -----------------------------------------------------------------------------


def test_models_and_health(url: str, http: httpx.Client) -> None:
    models = http.get(f"{url}/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == "scripted"
    health = http.get(url.removesuffix("/v1") + "/health").json()
    assert health == {"status": "ok", "policy": POLICY, "seed": SEED, "model": "scripted"}


GOOD = conversation()[1]
BAD_CHAT: list[tuple[Any, int]] = [
    (b"{not json", 400),
    (b"", 400),
    (b"\xff\xfe", 400),
    (b'{"messages": [], "temperature": NaN}', 400),
    (json.dumps({"messages": GOOD, "temperature": 1e999}).encode(), 400),
    ([1, 2], 400),
    ({}, 400),
    ({"messages": []}, 400),
    ({"messages": "hello"}, 400),
    ({"messages": [1]}, 400),
    ({"messages": [{"role": "wizard", "content": "x"}]}, 400),
    ({"messages": [{"role": "user", "content": 5}]}, 400),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}, 400),
    ({"messages": GOOD, "stream": "yes"}, 400),
    ({"messages": GOOD, "n": 0}, 400),
    ({"messages": GOOD, "n": True}, 400),
    ({"messages": GOOD, "model": 3}, 400),
    ({"messages": GOOD, "tools": "make_move"}, 400),
    ({"messages": GOOD, "tools": [7]}, 400),
    ({"messages": [{"role": "user", "content": "let's chat"}]}, 422),
    (
        {
            "messages": [
                {"role": "system", "content": "You are playing Tic-Tac-Toe as X, "},
                {"role": "user", "content": "no board here"},
            ]
        },
        422,
    ),
]


@pytest.mark.parametrize(
    ("payload", "status"), BAD_CHAT, ids=[str(i) for i in range(len(BAD_CHAT))]
)
def test_bad_chat_requests_are_4xx_json(
    url: str, http: httpx.Client, payload: Any, status: int
) -> None:
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    r = http.post(
        f"{url}/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"] and err["type"] == "invalid_request_error"


BAD_RESPONSES: list[Any] = [
    {},
    {"input": 5},
    {"input": []},
    {"input": [3]},
    {"input": "hi", "instructions": 4},
    {"input": [{"type": "mystery"}]},
    {"input": [{"role": "tool", "content": "x"}]},
    {"input": [{"type": "function_call_output", "call_id": "c", "output": {"a": 1}}]},
    {"input": "hi", "tools": [{"type": "function", "name": "make_move"}], "stream": 1},
]


@pytest.mark.parametrize("payload", BAD_RESPONSES, ids=[str(i) for i in range(len(BAD_RESPONSES))])
def test_bad_responses_requests_are_4xx(url: str, http: httpx.Client, payload: Any) -> None:
    r = http.post(f"{url}/responses", json=payload)
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["error"]["message"]


def test_body_limit_and_routes(url: str, http: httpx.Client) -> None:
    big = {"messages": [*GOOD, {"role": "user", "content": "x" * (65 * 1024)}]}
    r = http.post(f"{url}/chat/completions", json=big)
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no content-length: the streamed size is checked
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(80):
            yield b"y" * 1024
        yield b'"}]}'

    r = http.post(f"{url}/chat/completions", content=chunks())
    assert r.status_code == 413
    assert http.get(f"{url}/nowhere").status_code == 404
    r = http.get(f"{url}/chat/completions")
    assert r.status_code == 405 and r.json()["error"]["message"]


def test_fuzzed_payloads_never_5xx(url: str, http: httpx.Client) -> None:
    """Random JSON in every field the server reads: 2xx or 4xx, never 5xx."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20)
    )
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    )
    message = st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant", "tool", "x"]),
            "content": values | st.text(max_size=40),
        }
    )
    chat = st.fixed_dictionaries(
        {},
        optional={
            "messages": st.lists(message, max_size=3) | values | st.just(GOOD),
            "stream": values,
            "n": values,
            "tools": values,
            "tool_choice": values,
            "model": values,
            "stream_options": values,
        },
    )
    responses = st.fixed_dictionaries(
        {},
        optional={
            "input": st.just(GOOD[1]["content"])
            | values
            | st.lists(
                st.dictionaries(
                    st.sampled_from(["type", "role", "content", "call_id", "output", "arguments"]),
                    values,
                    max_size=4,
                ),
                max_size=3,
            ),
            "instructions": values | st.just(GOOD[0]["content"]),
            "tools": values,
            "stream": values,
            "tool_choice": values,
        },
    )

    @hypothesis.settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(chat, responses)
    def check(chat_body: dict[str, Any], resp_body: dict[str, Any]) -> None:
        for path, body in (("chat/completions", chat_body), ("responses", resp_body)):
            r = http.post(f"{url}/{path}", json=body)
            assert r.status_code < 500, (path, body, r.text)

    check()


def test_listening_socket_gets_nodelay_connections() -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only if the listener's proto is
    IPPROTO_TCP; without it every keep-alive request waited ~40 ms (Nagle + delayed ACK)."""
    import socket

    from rollouts.model.policy_server import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
