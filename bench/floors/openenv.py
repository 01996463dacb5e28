"""OpenEnv's floor: a minimal Tic-Tac-Toe environment written as OpenEnv's own template.

It follows the layout ``openenv init`` writes (openenv-core 0.3.0,
``openenv/cli/templates/openenv_env``): an ``Action`` and an ``Observation`` subclass
(``models.py``), an ``Environment`` with ``SUPPORTS_CONCURRENT_SESSIONS = True``,
``reset``/``step`` and a ``state`` property (``server/<env>_environment.py``), and
``create_app(EnvClass, ActionCls, ObservationCls, env_name=..., max_concurrent_envs=N)``
served by ``uvicorn.run(app, host=..., port=...)`` (``server/app.py``). The template's
echo logic is replaced by Tic-Tac-Toe with a random opponent; nothing of gamebridge
is imported. The field names (``reply`` in, ``text``/``system_prompt`` out) are the
ones gamebridge's client session sends and reads, so the very same client
(``rollouts.drivers.openenv.OpenEnvSession``) plays both servers.

    python -m bench.floors.openenv --port 8001
"""

from __future__ import annotations

import argparse
import random
import re
from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MOVE = re.compile(r"<move>\s*(\d)\s*</move>")
PROMPT = (
    "You are playing Tic-Tac-Toe as X against a random opponent. The cells are "
    "numbered 0-8. Reply with your move as <move>N</move>, N a free cell."
)


class TicTacToeAction(Action):
    """The model's reply, e.g. ``<move>4</move>``."""

    reply: str = Field(..., description="The model's reply")


class TicTacToeObservation(Observation):
    """The board the model reads next."""

    text: str = Field(default="", description="The board and whose move it is")
    system_prompt: str | None = Field(default=None, description="On reset only")


class TicTacToeEnvironment(Environment):
    """Tic-Tac-Toe against a random opponent, one game per WebSocket session."""

    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self.board = [""] * 9
        self.rng = random.Random()

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TicTacToeObservation:
        task = kwargs.get("task") or {}
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self.board = [""] * 9
        self.rng = random.Random(task.get("seed", seed))
        return TicTacToeObservation(
            text=self.render(), system_prompt=PROMPT, done=False, reward=0.0
        )

    def step(self, action: TicTacToeAction) -> TicTacToeObservation:  # type: ignore[override]
        self._state.step_count += 1
        match = MOVE.search(action.reply)
        cell = int(match[1]) if match else -1
        if not 0 <= cell < 9 or self.board[cell] or self.outcome():
            return TicTacToeObservation(text="Illegal move.\n" + self.render(), reward=0.0)
        self.board[cell] = "X"
        if self.outcome() is None:
            self.board[self.rng.choice([i for i in range(9) if not self.board[i]])] = "O"
        result = self.outcome()
        reward = {"X": 1.0, "O": -1.0}.get(result or "", 0.0)
        return TicTacToeObservation(text=self.render(), done=result is not None, reward=reward)

    def outcome(self) -> str | None:
        """``"X"``, ``"O"``, ``"draw"`` or ``None`` (still going)."""
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

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-sessions", type=int, default=64)
    args = parser.parse_args()
    app = create_app(
        TicTacToeEnvironment,
        TicTacToeAction,
        TicTacToeObservation,
        env_name="tictactoe",
        max_concurrent_envs=args.max_sessions,
    )
    import uvicorn

    # As gamebridge's server (adapters/openenv/__main__.py): one worker, warnings only.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
