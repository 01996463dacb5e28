"""ORS's floor: a minimal Tic-Tac-Toe environment written as openreward's SDK README shows.

It follows the README of openreward 0.1.167 ("Core concepts"): an ``Environment``
subclass implementing ``list_splits()``, ``list_tasks(split)`` and ``get_prompt()``
(the instructions as ``TextBlock``s), its state set up from the session's
``task_spec`` in ``__init__``, one ``async`` ``@tool`` taking a pydantic model and
returning ``ToolOutput(blocks, reward, finished)``, and ``Server([Env])`` serving it
(under its lowercased class name, ``tictactoe``). Started as gamebridge's ORS server
is (``adapters/ors/__main__.py``): ``uvicorn.run(Server([...]).app, ...)`` on
127.0.0.1, one worker, ``timeout_keep_alive=60`` as ``Server.run`` sets it, warnings
only, no update check. Tic-Tac-Toe and the random opponent are inline; nothing of
gamebridge is imported.

    python -m bench.floors.ors --port 8003
"""

from __future__ import annotations

import argparse
import os
import random

from pydantic import BaseModel

os.environ.setdefault("OPENREWARD_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")

from openreward.environments import (  # after the environment variables
    Environment,
    Server,
    TextBlock,
    ToolOutput,
    tool,
)

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
PROMPT = (
    "You are playing Tic-Tac-Toe as X against a random opponent. The cells are "
    "numbered 0-8. Call make_move with the number of a free cell."
)


class MoveParams(BaseModel):
    move: str


class TicTacToe(Environment):
    """Tic-Tac-Toe against a random opponent, one game per session."""

    def __init__(self, task_spec: dict = {}, secrets: dict = {}) -> None:  # noqa: B006 (as the base class)
        super().__init__(task_spec, secrets)
        self.board = [""] * 9
        self.rng = random.Random(task_spec.get("seed"))

    @classmethod
    def list_splits(cls) -> list[str]:
        return ["train", "test"]

    @classmethod
    def list_tasks(cls, split: str) -> list[dict]:
        return [{"seed": i} for i in range(32)]

    def get_prompt(self) -> list[TextBlock]:
        return [TextBlock(text=PROMPT), TextBlock(text=self.render())]

    @tool
    async def make_move(self, params: MoveParams) -> ToolOutput:
        """Put an X on a free cell (0-8); the opponent answers."""
        cell = int(params.move) if params.move.isdigit() else -1
        if not 0 <= cell < 9 or self.board[cell] or self.outcome():
            return ToolOutput(blocks=[TextBlock(text="Illegal move.\n" + self.render())])
        self.board[cell] = "X"
        if self.outcome() is None:
            self.board[self.rng.choice([i for i in range(9) if not self.board[i]])] = "O"
        result = self.outcome()
        return ToolOutput(
            blocks=[TextBlock(text=self.render())],
            reward={"X": 1.0, "O": -1.0}.get(result or "", 0.0),
            finished=result is not None,
        )

    def outcome(self) -> str | None:
        for a, b, c in LINES:
            if self.board[a] and self.board[a] == self.board[b] == self.board[c]:
                return self.board[a]
        return "draw" if all(self.board) else None

    def render(self) -> str:
        rows = [
            " " + " | ".join(self.board[i] or str(i) for i in range(r, r + 3)) for r in (0, 3, 6)
        ]
        result = self.outcome()
        status = (
            "X to move."
            if result is None
            else "Game over: draw."
            if result == "draw"
            else f"Game over: {result} wins."
        )
        return "\n---+---+---\n".join(rows) + "\n" + status


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    import uvicorn

    app = Server([TicTacToe]).app
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_keep_alive=60,
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
