"""Bad requests to every server get a clear 4xx (never a 500, never a hang), and the
server keeps serving: a normal episode completes afterwards.

Servers: OpenEnv (plain HTTP and the /ws WebSocket), NeMo Gym (gymnasium and tool
style), ORS (openreward's HTTP + server-sent events), all real processes (conftest.py),
and the policy server (in a thread).
Cases: malformed JSON, wrong types, an oversize body (the documented limits), text holding a
lone UTF-16 surrogate, unknown routes/methods, an unknown or expired session, a step
after done, storms of resets and of sessions. docs/reliability.md tabulates them.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from reliability_servers import (
    HAVE_NEMO,
    HAVE_ORS,
    IDLE_TIMEOUT,
    MAX_SESSIONS,
    NEMO_MARKS,
    ORS_MARKS,
)

from adapters.nemo_gym.rows import DONE_HEADER, make_row
from core.episode import Episode
from core.tasks import Task
from rollouts.drivers.ors import ORSWireSession
from rollouts.evaluation.load import (
    LoadReport,
    _counter,
    _nemo_session,
    _nemo_tools_session,
    _openenv_session,
    _ors_session,
    nemo_response,
    sse_events,
)

pytestmark = pytest.mark.server
LIMIT = {
    "openenv": 16 << 20,
    "nemo_gym": 32 << 20,
    "nemo_gym_tools": 32 << 20,
    "ors": 16 << 20,
    "policy": 4 << 20,
}
"""The servers' default body limits (docs/reliability.md)."""
BIG = object()
"""In the tables: a JSON body just over the server's limit (built when sent)."""


def _big(server: str, body: Any) -> Any:
    if body is not BIG:
        return body
    return b'{"x": "' + b"a" * (LIMIT[server] + 1024) + b'"}'


NESTED = b"[" * 100_000
"""100,000 nested ``[``: Python's ``json`` raised RecursionError (a 500) before every
server refused nesting past ``adapters._asgi.MAX_JSON_DEPTH``."""
SEED_RULE = "seed must be an int in 0.."
"""core's one seed rule (``core.tasks.MAX_SEED``), the same words from every server."""
SURROGATE = b'{"reply": "\\ud800", "move": "\\udfff", "action": {"reply": "\\ud800"}}'
TIMEOUT = 30.0  # a hang fails the test
ROW = make_row(Task(game="tictactoe", seed=1))
TOOLS_ROW = make_row(Task(game="tictactoe", seed=1), "tools")
BAD_ROW = {**ROW, "task": {**ROW["task"], "game": "chess"}}
BAD_TOOLS_ROW = {**TOOLS_ROW, "task": {**TOOLS_ROW["task"], "game": "chess"}}


def _url(servers: dict[str, Any], name: str) -> str:
    if name not in servers:
        pytest.skip(f"{name} is not running here")
    return str(servers[name].base_url)


def _post(
    base: str, path: str, body: Any, method: str = "POST", headers: dict[str, str] | None = None
) -> httpx.Response:
    raw = body if isinstance(body, bytes) else None
    # Redirects followed: ORS sends an unknown first path segment to its default env (308).
    with httpx.Client(base_url=base, timeout=TIMEOUT, follow_redirects=True) as client:
        return client.request(
            method,
            path,
            content=raw,
            json=None if raw is not None or body is None else body,
            headers={"content-type": "application/json", **(headers or {})},
        )


def _normal_episode_completes(server: str, url: str) -> None:
    runner = {
        "openenv": _openenv_session,
        "nemo_gym": _nemo_session,
        "nemo_gym_tools": _nemo_tools_session,
        "ors": _ors_session,
    }[server]
    report = LoadReport(server, 1)
    asyncio.run(runner(url, 97, 1, report))
    assert report.errors == [] and report.status_5xx == 0
    assert report.episodes == 1 and report.cross_talk == 0


# --- plain HTTP: one table over the three environment servers -----------------------------

OE, GYM, TOOLS, ORS = "openenv", "nemo_gym", "nemo_gym_tools", "ors"
HTTP_CASES: list[tuple[str, str, str, Any, int, str]] = [
    (OE, "POST", "/reset", b"{not json", 422, "JSON decode error"),
    (OE, "POST", "/reset", [1, 2], 422, "valid dictionary"),
    (OE, "POST", "/reset", {"seed": "x"}, 422, "valid integer"),
    (OE, "POST", "/reset", {"task": {"game": "chess"}}, 422, "game must be one of"),
    (OE, "POST", "/reset", {"task": {"game": "nim", "depth": 99}}, 422, "depth must be"),
    (OE, "POST", "/reset", {"bogus": 1}, 422, "unknown task fields"),
    (OE, "POST", "/reset", {"task": {"game": "nim"}, "depth": 3}, 422, "not both"),
    (OE, "POST", "/reset", {"task": "tictactoe"}, 422, "task must be a task row"),
    (OE, "POST", "/reset", {"seed": -1}, 422, "greater than or equal to 0"),  # OpenEnv's own
    (OE, "POST", "/reset", {"task": {"game": "nim", "seed": -1}}, 422, SEED_RULE),
    (OE, "POST", "/reset", {"seed": 2**70}, 422, SEED_RULE),
    (OE, "POST", "/reset", NESTED, 400, "deeper than 64"),
    (OE, "POST", "/reset", b'{"seed": NaN}', 400, "NaN, Infinity"),  # the error reply raised
    (OE, "POST", "/reset", b'{"task": {"seed": 1e999}}', 400, "beyond a float"),
    (OE, "POST", "/step", {"action": {"reply": "<move>4</move>"}}, 409, "call reset"),
    (OE, "POST", "/step", {"action": {"reply": 1}}, 422, "valid string"),
    (OE, "POST", "/step", {"action": {"reply": "a", "move": "b"}}, 422, "exactly one"),
    (OE, "POST", "/step", {}, 422, "Field required"),
    (OE, "POST", "/reset", BIG, 413, "exceeds the limit"),
    (OE, "POST", "/step", BIG, 413, "exceeds the limit"),
    (OE, "POST", "/step", SURROGATE, 400, "lone UTF-16 surrogate"),
    (OE, "POST", "/reset", SURROGATE, 400, "lone UTF-16 surrogate"),
    (OE, "GET", "/no-such-route", None, 404, "Not Found"),
    (OE, "PUT", "/reset", None, 405, "Method Not Allowed"),
    (GYM, "POST", "/reset", b"{not json", 422, "JSON decode error"),
    (GYM, "POST", "/reset", [1, 2], 422, "valid dictionary"),
    (GYM, "POST", "/reset", {}, 422, "Field required"),
    (GYM, "POST", "/reset", BAD_ROW, 422, "game must be one of"),
    (GYM, "POST", "/reset", {**ROW, "task": "tictactoe"}, 422, "task must be a task row"),
    (GYM, "POST", "/reset", {**ROW, "task": {**ROW["task"], "seed": -1}}, 422, SEED_RULE),
    (GYM, "POST", "/reset", NESTED, 400, "deeper than 64"),
    (GYM, "POST", "/step", b'{"task": {"seed": Infinity}, "response": 1}', 400, "NaN, Infinity"),
    (GYM, "POST", "/step", {**ROW, "response": 5}, 422, "response"),
    (
        GYM,
        "POST",
        "/step",
        {**ROW, "response": nemo_response("<move>1</move>")},
        404,
        "no game in this session",
    ),
    (GYM, "POST", "/reset", BIG, 413, "exceeds the limit"),
    (GYM, "POST", "/step", SURROGATE, 400, "lone UTF-16 surrogate"),
    (GYM, "GET", "/no-such-route", None, 404, "Not Found"),
    (GYM, "POST", "/aggregate_metrics", {"verify_responses": [{"x": 1}]}, 422, "must be /verify"),
    (GYM, "POST", "/aggregate_metrics", {"verify_responses": 5}, 422, "valid list"),
    (TOOLS, "POST", "/seed_session", b"{not json", 422, "JSON decode error"),
    (TOOLS, "POST", "/seed_session", BAD_TOOLS_ROW, 422, "game must be one of"),
    (TOOLS, "POST", "/seed_session", {**TOOLS_ROW, "task": 5}, 422, "task must be a task row"),
    (
        TOOLS,
        "POST",
        "/seed_session",
        {**TOOLS_ROW, "task": {**TOOLS_ROW["task"], "seed": 2**70}},
        422,
        SEED_RULE,
    ),
    (TOOLS, "POST", "/make_move", {"move": "4"}, 404, "no game in this session"),
    # /make_move's body is the call's raw arguments, any JSON (core judges them, issue
    # 12): a list is a move to judge, so without a game it is the missing session.
    (TOOLS, "POST", "/make_move", [1], 404, "no game in this session"),
    (
        TOOLS,
        "POST",
        "/verify",
        {**TOOLS_ROW, "response": nemo_response("x")},
        404,
        "no game in this session",
    ),
    (TOOLS, "POST", "/verify", {**TOOLS_ROW, "response": "x"}, 422, "response"),
    (TOOLS, "POST", "/make_move", BIG, 413, "exceeds the limit"),
    (TOOLS, "POST", "/make_move", SURROGATE, 400, "lone UTF-16 surrogate"),
    (
        TOOLS,
        "POST",
        "/aggregate_metrics",
        {"verify_responses": [{"reward": None}]},
        422,
        "must be /verify",
    ),
    (ORS, "POST", "/create", {"task_spec": {"game": "tictactoe"}}, 400, "X-Session-ID"),
    (ORS, "POST", "/create", BIG, 413, "exceeds the limit"),
    (ORS, "POST", "/create", SURROGATE, 400, "lone UTF-16 surrogate"),
    (ORS, "POST", "/create", NESTED, 400, "deeper than 64"),
    (ORS, "POST", "/gamebridge/tasks", {"split": "nope"}, 400, "Invalid split"),
    (ORS, "POST", "/gamebridge/tasks", [1], 422, "valid dictionary"),
    (ORS, "POST", "/gamebridge/tasks", {}, 422, "Field required"),
    (ORS, "POST", "/gamebridge/task", {"split": "train", "index": 10**9}, 400, "Invalid index"),
    (ORS, "GET", "/nope/tools", None, 404, "Not Found"),
    (ORS, "GET", "/no-such-route", None, 404, "Not Found"),
    (ORS, "POST", "/gamebridge/call", {"name": "make_move", "input": {}}, 400, "X-Session-ID"),
    (ORS, "POST", "/gamebridge/score_group", {"candidates": []}, 400, "X-Session-ID"),
    (ORS, "PUT", "/create", None, 405, "Method Not Allowed"),
]


def _marks(server: str) -> list[Any]:
    return NEMO_MARKS if server.startswith("nemo") else ORS_MARKS if server == ORS else []


def _case_id(case: tuple[str, str, str, Any, int, str]) -> str:
    server, method, path, body, status, _ = case
    kind = (
        "big" if body is BIG else "surrogate" if body is SURROGATE else "nested" if body is NESTED
        else "malformed" if isinstance(body, bytes) else type(body).__name__
    )  # fmt: skip
    return f"{server}-{method}{path}-{kind}-{status}"


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=_case_id(c), marks=_marks(c[0])) for c in HTTP_CASES],
)
def test_bad_http_request_gets_a_clear_4xx(
    case: tuple[str, str, str, Any, int, str], reliability_servers: dict[str, Any]
) -> None:
    server, method, path, body, status, message = case
    response = _post(_url(reliability_servers, server), path, _big(server, body), method)
    assert response.status_code == status, response.text[:500]
    assert message in response.text
    assert len(response.content) < 100_000, "the error must not echo a huge body"


@pytest.mark.parametrize("server", [OE, GYM, TOOLS, ORS])
def test_servers_keep_serving_after_bad_requests(
    server: str, reliability_servers: dict[str, Any]
) -> None:
    if server.startswith("nemo") and not HAVE_NEMO:
        pytest.skip("no .venv-nemo")
    if server == ORS and not HAVE_ORS:
        pytest.skip("no .venv-ors")
    url = _url(reliability_servers, server)
    for case in HTTP_CASES:
        if case[0] == server:
            assert _post(url, case[2], _big(server, case[3]), case[1]).status_code < 500
    if server == ORS:
        for method, path, headers, body, _, _ in ORS_SESSION_CASES:
            assert _post(url, path, body, method, _headers(headers)).status_code < 500
    _normal_episode_completes(server, url)
    if server.startswith("nemo"):  # and NeMo Gym's own aggregation still answers well-formed input
        rows = [{"_ng_task_index": 0, "_ng_rollout_index": i, "reward": float(i)} for i in (0, 1)]
        aggregate = _post(url, "/aggregate_metrics", {"verify_responses": rows})
        assert aggregate.status_code == 200, aggregate.text[:300]


# --- OpenEnv WebSocket ---------------------------------------------------------------------


def _ws_url(servers: dict[str, Any]) -> str:
    return _url(servers, OE).replace("http://", "ws://") + "/ws"


def _ask(ws: Any, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return dict(json.loads(ws.recv(timeout=TIMEOUT)))


def _error(reply: dict[str, Any], code: str, text: str) -> None:
    assert reply["type"] == "error", reply
    assert reply["data"]["code"] == code, reply
    assert text in reply["data"]["message"] or text in json.dumps(reply["data"]), reply


def test_openenv_ws_errors_are_replies_and_the_session_survives(
    reliability_servers: dict[str, Any],
) -> None:
    from websockets.sync.client import connect

    with connect(_ws_url(reliability_servers), max_size=None) as ws:
        _error(_ask(ws, "{not json"), "INVALID_JSON", "Invalid JSON")
        _error(_ask(ws, "[1, 2]"), "INVALID_JSON", "must be a JSON object, not list")
        _error(_ask(ws, "5"), "INVALID_JSON", "must be a JSON object, not int")
        _error(_ask(ws, NESTED.decode()), "INVALID_JSON", "at most 64 deep")
        _error(_ask(ws, '{"type": "reset", "data": {"seed": NaN}}'), "INVALID_JSON", "NaN")
        _error(_ask(ws, '{"type": "reset", "data": ' + "[" * 99_000), "INVALID_JSON", "64 deep")
        ws.send(b'{"type": "state"}')
        _error(json.loads(ws.recv(timeout=TIMEOUT)), "INVALID_JSON", "text frame")
        _error(_ask(ws, {"type": "fly"}), "UNKNOWN_TYPE", "fly")
        step = {"type": "step", "data": {"reply": "<move>4</move>"}}
        _error(_ask(ws, step), "EXECUTION_ERROR", "call reset")
        bad_task = {"type": "reset", "data": {"task": {"game": "chess"}}}
        _error(_ask(ws, bad_task), "EXECUTION_ERROR", "game must be one of")
        _error(_ask(ws, {"type": "reset", "data": {"seed": "x"}}), "EXECUTION_ERROR", "seed")
        task = Task(game="tictactoe", seed=3, max_invalid_moves=1)
        assert _ask(ws, {"type": "reset", "data": {"task": task.to_dict()}})["type"] == (
            "observation"
        )
        _error(_ask(ws, {"type": "step", "data": {"reply": 1}}), "VALIDATION_ERROR", "string")
        both = {"type": "step", "data": {"reply": "x", "move": "1"}}
        _error(_ask(ws, both), "VALIDATION_ERROR", "exactly one")
        lone = '{"type": "step", "data": {"reply": "\\ud800"}}'
        _error(_ask(ws, lone), "EXECUTION_ERROR", "lone UTF-16 surrogate")
        # None of these touched the game: a reply now is turn 1, and State still serialises.
        played = _ask(ws, step)
        assert played["type"] == "observation"
        assert played["data"]["observation"]["info"]["turn"] == 1
        state = _ask(ws, {"type": "state"})["data"]
        assert state["trajectory"] == Episode.replay(task, ["<move>4</move>"]).to_dict()
        # Two invalid replies forfeit (budget 1): then a step after done is an error.
        for _ in range(2):
            last = _ask(ws, {"type": "step", "data": {"reply": "nonsense"}})
        assert last["data"]["done"] is True
        _error(_ask(ws, step), "EXECUTION_ERROR", "the episode is over")
        # A storm of resets on one connection: each one a fresh game.
        for i in range(100):
            reset = {"type": "reset", "data": {"task": Task(seed=i).to_dict()}}
            assert _ask(ws, reset)["type"] == "observation"
        assert _ask(ws, step)["data"]["observation"]["info"]["turn"] == 1
    _normal_episode_completes(OE, _url(reliability_servers, OE))


def test_openenv_ws_oversize_message_is_that_steps_error(
    reliability_servers: dict[str, Any],
) -> None:
    """Over the limit: an error reply, and the session goes on (issue 15; it used to
    close the connection with 1009, which ended the run)."""
    from websockets.sync.client import connect

    with connect(_ws_url(reliability_servers), max_size=None) as ws:
        reset = {"type": "reset", "data": {"task": Task(seed=1).to_dict()}}
        assert _ask(ws, reset)["type"] == "observation"
        big = {"type": "step", "data": {"reply": "x" * (LIMIT[OE] + 1)}}
        _error(_ask(ws, big), "MESSAGE_TOO_LARGE", "over the server's limit")
        step = {"type": "step", "data": {"reply": "<move>4</move>"}}
        assert _ask(ws, step)["type"] == "observation"
    _normal_episode_completes(OE, _url(reliability_servers, OE))


def test_openenv_session_storm_over_the_cap_is_refused_then_served(
    reliability_servers: dict[str, Any],
) -> None:
    from contextlib import ExitStack

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = _url(reliability_servers, OE)

    def active() -> int:
        return int(httpx.get(url + "/sessions", timeout=TIMEOUT).json()["active"])

    with ExitStack() as stack:
        for _ in range(MAX_SESSIONS[OE] - active()):  # fill every slot
            stack.enter_context(connect(_ws_url(reliability_servers), max_size=None))
        deadline = time.monotonic() + TIMEOUT
        while active() < MAX_SESSIONS[OE] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert active() == MAX_SESSIONS[OE]
        # One more: OpenEnv refuses it at once (an error message, then a close).
        extra = stack.enter_context(connect(_ws_url(reliability_servers), max_size=None))
        refused = json.loads(extra.recv(timeout=TIMEOUT))
        _error(refused, "CAPACITY_REACHED", "")
        with pytest.raises(ConnectionClosed):
            extra.recv(timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while active() > 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert active() == 0
    _normal_episode_completes(OE, url)


def test_openenv_idle_session_expires_with_a_clear_error(
    reliability_servers: dict[str, Any],
) -> None:
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    url = _url(reliability_servers, OE)
    with connect(_ws_url(reliability_servers), max_size=None) as ws:
        assert _ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        # Issue 15: the idle session's connection is closed (OpenEnv's reaper freed the
        # game but kept the socket), with a close code and a reason that say why.
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=IDLE_TIMEOUT[OE] + 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408
    assert "idle longer than the session timeout" in closed.value.rcvd.reason
    assert httpx.get(url + "/sessions").json()["idle_timeout_s"] == IDLE_TIMEOUT[OE]
    _normal_episode_completes(OE, url)


# --- NeMo Gym: sessions ---------------------------------------------------------------------


@pytest.mark.nemo
def test_nemo_gymnasium_step_after_done_and_reset_storms(
    reliability_servers: dict[str, Any],
) -> None:
    url = _url(reliability_servers, GYM)
    row = make_row(Task(game="tictactoe", seed=2, max_invalid_moves=0))
    with httpx.Client(base_url=url, timeout=TIMEOUT) as env:
        before = env.get("/sessions").json()["active"]
        for _ in range(50):  # one cookie: every reset replaces the same session's game
            assert env.post("/reset", json=row).status_code == 200
        assert env.get("/sessions").json()["active"] == before + 1
        step = {**row, "response": nemo_response("no move")}
        out = env.post("/step", json=step).json()
        assert out["terminated"] is True  # budget 0: forfeit, the session is released
        after = env.post("/step", json=step)
        assert after.status_code == 404 and "no game in this session" in after.text
    # No cookie: each reset is a new session, up to max_sessions; then 429. (A burst:
    # the idle timeout is short, so a slow storm would see its first games expire.)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        storm = list(pool.map(lambda _: _post(url, "/reset", row), range(2 * MAX_SESSIONS[GYM])))
    statuses = [r.status_code for r in storm]
    assert set(statuses) == {200, 429}, statuses
    refused = next(r for r in storm if r.status_code == 429)
    assert "max_sessions" in refused.text
    time.sleep(IDLE_TIMEOUT[GYM] + 0.5)  # the storm's games expire
    assert httpx.get(url + "/sessions").json()["active"] == 0
    _normal_episode_completes(GYM, url)


@pytest.mark.nemo
def test_nemo_tools_step_after_done_verify_twice_and_expiry(
    reliability_servers: dict[str, Any],
) -> None:
    url = _url(reliability_servers, TOOLS)
    row = make_row(Task(game="tictactoe", seed=2, max_invalid_moves=0), "tools")
    verify = {**row, "response": nemo_response("done")}
    with httpx.Client(base_url=url, timeout=TIMEOUT) as env:
        assert env.post("/seed_session", json=row).status_code == 200
        move = env.post("/make_move", json={"move": "zz"})
        assert move.status_code == 200 and move.headers[DONE_HEADER] == "1"
        again = env.post("/make_move", json={"move": "4"})
        assert again.status_code == 409 and "the episode is over" in again.text
        assert env.post("/verify", json=verify).status_code == 200
        twice = env.post("/verify", json=verify)
        assert twice.status_code == 404 and "no game in this session" in twice.text
    with httpx.Client(base_url=url, timeout=TIMEOUT) as env:
        assert env.post("/seed_session", json=row).status_code == 200
        time.sleep(IDLE_TIMEOUT[TOOLS] + 0.5)
        expired = env.post("/make_move", json={"move": "4"})
        assert expired.status_code == 404 and "expired" in expired.text
    _normal_episode_completes(TOOLS, url)


# --- ORS: requests that carry a session id ---------------------------------------------------

NEW_SID = {"X-Session-ID": "{new}"}
"""In the table: a fresh session id per request (``/create`` would refuse a reused one)."""
SPEC = {"task_spec": Task(game="tictactoe", seed=1).to_dict()}
ORS_SESSION_CASES: list[tuple[str, str, dict[str, str], Any, int, str]] = [
    ("POST", "/create", NEW_SID, {"task_spec": {"game": "chess"}}, 422, "game must be one of"),
    ("POST", "/create", NEW_SID, {"task_spec": {"bogus": 1}}, 422, "unknown task fields"),
    ("POST", "/create", NEW_SID, {"task_spec": {"depth": 99}}, 422, "depth must be"),
    ("POST", "/create", NEW_SID, {"task_spec": {"seed": -1}}, 422, SEED_RULE),
    ("POST", "/create", NEW_SID, {"task_spec": {"seed": 2**70}}, 422, SEED_RULE),
    ("POST", "/create", NEW_SID, {"task_spec": [1, 2]}, 422, "valid dictionary"),
    ("POST", "/create", NEW_SID, {}, 422, "Provide either task_spec"),
    ("POST", "/create", NEW_SID, {"split": "train"}, 422, "Provide either task_spec"),
    ("POST", "/create", NEW_SID, {"split": "nope", "index": 0}, 400, "Invalid split"),
    ("POST", "/create", NEW_SID, {"split": "train", "index": 10**6}, 400, "Invalid index"),
    ("POST", "/create", NEW_SID, b"{not json", 422, "JSON decode error"),
    ("POST", "/create", NEW_SID, {**SPEC, "toolset_name": "claude-code"}, 400, "no toolsets"),
    ("POST", "/create", {**NEW_SID, "X-Secrets": "!!"}, SPEC, 400, "X-Secrets must be"),
    ("POST", "/gamebridge/call", NEW_SID, {"name": "make_move", "input": {}}, 404, "not found"),
    ("GET", "/gamebridge/prompt", NEW_SID, None, 404, "not found"),
    ("POST", "/ping", NEW_SID, None, 404, "not found"),
]


def _headers(headers: dict[str, str]) -> dict[str, str]:
    import uuid

    return {k: v.replace("{new}", uuid.uuid4().hex) for k, v in headers.items()}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=f"ors-{c[0]}{c[1]}-{c[4]}-{i}") for i, c in enumerate(ORS_SESSION_CASES)],
)
@pytest.mark.skipif(not HAVE_ORS, reason="no .venv-ors (make setup-ors)")
def test_ors_bad_session_request_gets_a_clear_4xx(
    case: tuple[str, str, dict[str, str], Any, int, str], reliability_servers: dict[str, Any]
) -> None:
    method, path, headers, body, status, message = case
    response = _post(_url(reliability_servers, ORS), path, body, method, _headers(headers))
    assert response.status_code == status, response.text[:500]
    assert message in response.text


def _ors_result(response: httpx.Response) -> dict[str, Any]:
    events = sse_events(response.text)
    assert events and events[-1][0] == "end", response.text[:500]
    return dict(json.loads("".join(d for e, d in events if e in ("chunk", "end"))))


@pytest.mark.skipif(not HAVE_ORS, reason="no .venv-ors (make setup-ors)")
def test_ors_odd_calls_step_after_done_expiry_and_storm(
    reliability_servers: dict[str, Any],
) -> None:
    url = _url(reliability_servers, ORS)
    task = Task(game="tictactoe", seed=2, max_invalid_moves=1)

    async def play() -> None:
        report = LoadReport(ORS, 1)
        async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as http:
            played = ORSWireSession(url, on_response=_counter(report), timeout=TIMEOUT)
            played.open(task)
            sid = played.sid
            duplicate = await http.post("/create", json=SPEC, headers={"X-Session-ID": sid})
            assert duplicate.status_code == 400 and "already exists" in duplicate.text
            call = {"name": "fly", "input": {}}
            unknown = _ors_result(
                await http.post("/gamebridge/call", json=call, headers={"X-Session-ID": sid})
            )
            assert unknown["ok"] is False and unknown["reason"] == "not_found"
            for bad in ({"name": "make_move", "input": [1]}, {"name": 5}):
                refused = await http.post(
                    "/gamebridge/call", json=bad, headers={"X-Session-ID": sid}
                )
                assert refused.status_code == 422, refused.text[:300]
            # Odd arguments are core's to judge: recorded, penalised, the game goes on...
            played.call({"move": 4})
            out = played.output
            assert out["finished"] is False and out["reward"] is None
            assert out["metadata"]["info"]["error"] == "format"
            # ...and the second invalid reply (budget 1) forfeits: the reward comes inline.
            played.call({"square": "4"})
            out = played.output
            assert out["finished"] is True
            replayed = Episode.replay(task, [{"move": 4}, {"square": "4"}])
            assert out["metadata"]["trajectory"] == replayed.to_dict()
            assert out["reward"] == replayed.reward().total == out["metadata"]["reward"]["total"]
            call = {"name": "make_move", "input": {"move": "4"}}
            after = _ors_result(
                await http.post("/gamebridge/call", json=call, headers={"X-Session-ID": sid})
            )
            assert after["ok"] is False and after["reason"] == "episode_finished"
            # A session left alone (no /ping, no call) is deleted after the idle timeout.
            left = ORSWireSession(url, on_response=_counter(report), timeout=TIMEOUT)
            left.open(task)
            idle = left.sid
            await asyncio.sleep(IDLE_TIMEOUT[ORS] + 2.5)
            gone = await http.post("/ping", headers={"X-Session-ID": idle})
            assert gone.status_code == 404 and "not found" in gone.text
            played.close()
            left.close()
        assert report.status_5xx == 0 and report.errors == []

    asyncio.run(play())
    # A storm of sessions: up to max_sessions, then 429 with the reason; all freed by /delete.
    live = httpx.get(url + "/sessions", timeout=TIMEOUT).json()
    assert live["max"] == MAX_SESSIONS[ORS] and live["idle_timeout_s"] == IDLE_TIMEOUT[ORS]
    sids: list[str] = []
    refused: list[httpx.Response] = []
    for i in range(MAX_SESSIONS[ORS] + 3):
        sid = f"storm-{i}-{time.monotonic_ns()}"
        response = _post(url, "/create", SPEC, headers={"X-Session-ID": sid})
        assert response.status_code in (200, 429), response.text[:300]
        if response.status_code == 200:
            sids.append(sid)
        else:
            refused.append(response)
    assert refused and all("max_sessions" in r.text for r in refused)
    for sid in sids:
        assert _post(url, "/delete", None, headers={"X-Session-ID": sid}).status_code == 200
    deadline = time.monotonic() + TIMEOUT
    while httpx.get(url + "/sessions", timeout=TIMEOUT).json()["active"] > 0:
        assert time.monotonic() < deadline, "sessions left after /delete"
        time.sleep(0.1)
    _normal_episode_completes(ORS, url)


# --- the policy server ----------------------------------------------------------------------

POLICY_CASES: list[tuple[str, str, Any, int, str]] = [
    ("POST", "/v1/chat/completions", b"{not json", 400, "not valid JSON"),
    ("POST", "/v1/chat/completions", b"", 400, "empty request body"),
    ("POST", "/v1/chat/completions", [1], 400, "JSON object"),
    ("POST", "/v1/chat/completions", {"messages": "hi"}, 400, "messages must be"),
    (
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}]},
        422,
        "",
    ),
    ("POST", "/v1/chat/completions", {"messages": [{"role": "x"}]}, 400, "chat role"),
    ("POST", "/v1/chat/completions", BIG, 413, "exceeds the limit"),
    ("POST", "/v1/chat/completions", NESTED, 400, "deeper than 64"),
    ("POST", "/v1/responses", {"input": 5}, 400, "input must be"),
    (
        "POST",
        "/v1/responses",
        b'{"input": "hi", "instructions": "\\ud800"}',
        400,
        "lone UTF-16 surrogate",
    ),
    ("POST", "/v1/chat/completions", b'{"model": "\\udfff", "messages": []}', 400, ""),
    ("GET", "/v1/nope", None, 404, "no route"),
    ("PUT", "/v1/chat/completions", None, 405, "not allowed"),
]


def test_policy_server_bad_requests_get_4xx_then_it_serves() -> None:
    from rollouts.model.policy_server import serve_in_thread

    task = Task(game="connect_four", seed=4)
    episode = Episode(task)
    messages = [
        {"role": "system", "content": episode.system_prompt},
        {"role": "user", "content": episode.reset()},
    ]
    with serve_in_thread("random", seed=0) as url:
        base = url.removesuffix("/v1")
        for method, path, body, status, message in POLICY_CASES:
            response = _post(base, path, _big("policy", body), method)
            assert response.status_code == status, (path, body, response.text[:300])
            assert message in response.json()["error"]["message"], response.text[:300]
        ok = _post(base, "/v1/chat/completions", {"messages": messages})
        assert ok.status_code == 200
        assert "<move>" in ok.json()["choices"][0]["message"]["content"]


# --- a slow game does not stall the others ---------------------------------------------------

DEEP = Task(game="othello", seed=3, depth=10, model_player=1, opening_plies=12)
"""A task row asking for a deep search: the opponent's first move takes about 10 s
of CPU (depth 9 took about 2.5 s, which a normal episode under CI load could exceed)."""


@pytest.mark.parametrize(
    "server", [OE, pytest.param(GYM, marks=NEMO_MARKS), pytest.param(ORS, marks=ORS_MARKS)]
)
def test_a_deep_search_game_does_not_stall_other_sessions(
    server: str, reliability_servers: dict[str, Any]
) -> None:
    """While one session's opponent searches (in a worker thread), another session
    plays a whole game: it finishes first."""
    import threading

    url = _url(reliability_servers, server)
    finished: list[str] = []

    def deep() -> None:
        if server == OE:
            from adapters.openenv import GameEnvClient

            with GameEnvClient(base_url=url, message_timeout_s=300).sync() as env:
                env.reset(task=DEEP.to_dict())
        elif server == ORS:
            headers = {"X-Session-ID": f"deep-{time.monotonic_ns()}"}
            created = _post(url, "/create", {"task_spec": DEEP.to_dict()}, headers=headers)
            assert created.status_code == 200, created.text
            while True:  # the prompt waits for setup (the opponent's first move)...
                prompt = httpx.get(url + "/gamebridge/prompt", headers=headers, timeout=300)
                if prompt.status_code != 503:  # ...answering 503 "still starting" after 25 s
                    break
            assert prompt.status_code == 200, prompt.text
            _post(url, "/delete", None, headers=headers)
        else:
            response = httpx.post(url + "/reset", json=make_row(DEEP), timeout=300)
            assert response.status_code == 200
        finished.append("deep")

    thread = threading.Thread(target=deep)
    thread.start()
    try:
        time.sleep(0.5)  # the deep reset is in the server's hands
        _normal_episode_completes(server, url)
        finished.append("normal")
    finally:
        thread.join(timeout=300)
    assert finished == ["normal", "deep"]
