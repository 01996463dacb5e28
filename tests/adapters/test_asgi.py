"""adapters/_asgi.py's small helpers (the middleware is tested through every server in
tests/reliability): a request read whole and handed on, the SSE cut, and the refusal
the servers' exception handlers answer with."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from adapters._asgi import refusal, replay, sse_chunks


@pytest.mark.parametrize(
    ("text", "size", "pieces"),
    [
        ("", 4, [""]),
        ("abcdefgh", 4, ["abcd", "efgh"]),
        ("abcdefghi", 4, ["abcd", "efgh", "i"]),
        ("abcd efgh", 4, ["abc", "d ef", "gh"]),  # no piece begins with a space
        ("ab\tcdefgh", 2, ["a", "b\t", "cd", "ef", "gh"]),  # nor a tab
        (
            "abc" + " " * 6 + "b",
            3,
            ["ab", "c      b"],
        ),  # blanks longer than a piece: the rest whole
    ],
)
def test_sse_chunks_never_begin_with_a_blank(text: str, size: int, pieces: list[str]) -> None:
    got = list(sse_chunks(text, size))
    assert got == pieces and "".join(got) == text
    assert all(len(p) <= size for p in got[:-1])
    assert not any(p[:1] in (" ", "\t") for p in got[1:])


def test_replay_gives_the_message_then_the_stream() -> None:
    later: list[dict[str, Any]] = [{"type": "http.disconnect"}]

    async def receive() -> dict[str, Any]:
        return later.pop()

    async def run() -> list[Any]:
        replayed = replay({"type": "http.request", "body": b"{}"}, receive)
        return [await replayed(), await replayed()]

    first, second = asyncio.run(run())
    assert first == {"type": "http.request", "body": b"{}"} and second == {
        "type": "http.disconnect"
    }


@pytest.mark.parametrize("message", ["plain", "bad row: 'é' \u2603", 'quote " and \\'])
def test_refusal_answers_as_starlettes_json_response(message: str) -> None:
    """Through a Starlette app, the same status, headers and bytes as the
    ``JSONResponse({"detail": ...})`` handlers the servers used to write each."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    def fail(_: Any) -> Any:
        raise LookupError(message)

    async def by_hand(_: Any, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"{exc} (hint)"}, status_code=409)

    answers = []
    for handler in (refusal(409, " (hint)"), by_hand):
        app = Starlette(routes=[Route("/", fail)])
        app.add_exception_handler(LookupError, handler)
        answer = TestClient(app).get("/")
        answers.append((answer.status_code, sorted(answer.headers.items()), answer.content))
    assert answers[0] == answers[1]
    assert answers[0][0] == 409 and json.loads(answers[0][2]) == {"detail": f"{message} (hint)"}
