"""adapters/_asgi.py's small helpers (the middleware is tested through every server in
tests/reliability): a request read whole and handed on, and the SSE cut."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters._asgi import replay, sse_chunks


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
