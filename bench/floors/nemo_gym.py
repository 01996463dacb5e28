"""NeMo Gym's floors: a minimal Tic-Tac-Toe resources server in each of its two styles,
written as NeMo Gym's own examples (nemo-gym 0.4.0).

* ``--style gymnasium`` follows ``resources_servers/example_multi_turn_gymnasium/app.py``:
  a ``GymnasiumServer`` subclass whose per-session state is a pydantic ``Dict`` field
  keyed by ``session_id``, with async ``reset(metadata, session_id) -> (obs, info)`` and
  ``step(action, metadata, session_id) -> (obs, reward, terminated, truncated, info)``,
  the reply read with ``extract_text``.
* ``--style tools`` follows ``resources_servers/example_session_state_mgmt/app.py``:
  a ``SimpleResourcesServer`` with a ``BaseResourcesServerConfig``, ``seed_session``
  keyed by ``request.session[SESSION_ID_KEY]``, one extra ``app.post`` tool route
  added in ``setup_webserver`` and ``verify``. The tool answers the board as plain
  text with a game-over header, as gamebridge's ``/make_move`` does, so that the same
  client session (``rollouts.drivers.nemo_gym.NemoGymToolsSession``) reads both.

Started as gamebridge's NeMo Gym server is (``adapters/nemo_gym/__main__.py`` and
``server.build_app``): the server object built with its config and a
``ServerClient``, ``setup_webserver()``, ``setup_liveness``, then uvicorn on
127.0.0.1 (``run_webserver`` needs ``ng_run``'s Ray cluster). Tic-Tac-Toe and the
random opponent are inline; nothing of gamebridge is imported.

    python -m bench.floors.nemo_gym --style gymnasium --port 8002
"""

from __future__ import annotations

import argparse
import random
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionRequest,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    SimpleResourcesServer,
)
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.openai_utils import NeMoGymResponse
from nemo_gym.server_utils import SESSION_ID_KEY, ServerClient
from omegaconf import OmegaConf
from pydantic import BaseModel, ConfigDict, Field
from resources_servers.gymnasium import GymnasiumServer, extract_text

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MOVE = re.compile(r"<move>\s*(\d)\s*</move>")
PROMPT = (
    "You are playing Tic-Tac-Toe as X against a random opponent. The cells are "
    "numbered 0-8. Reply with your move as <move>N</move>, N a free cell."
)
DONE_HEADER = "x-gamebridge-done"


class Game:
    """One game: the board, the opponent's RNG."""

    def __init__(self, seed: Any) -> None:
        self.board = [""] * 9
        self.rng = random.Random(seed)

    def play(self, cell: int) -> tuple[str, float, bool]:
        """X on ``cell``, the random reply; (board text, reward, done)."""
        if not 0 <= cell < 9 or self.board[cell] or self.outcome():
            return "Illegal move.\n" + self.render(), 0.0, False
        self.board[cell] = "X"
        if self.outcome() is None:
            self.board[self.rng.choice([i for i in range(9) if not self.board[i]])] = "O"
        result = self.outcome()
        return self.render(), {"X": 1.0, "O": -1.0}.get(result or "", 0.0), result is not None

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


def _seed(metadata: dict) -> Any:
    return (metadata.get("task") or {}).get("seed")


class TicTacToeGymnasiumServer(GymnasiumServer):
    games: dict[str, Any] = Field(default_factory=dict)  # pydantic fields: Any, not Game

    async def reset(self, metadata: dict, session_id: str | None = None) -> tuple[str | None, dict]:
        """Returns (observation, info)."""
        game = self.games[session_id] = Game(_seed(metadata))
        return game.render(), {"system_prompt": PROMPT}

    async def step(
        self, action: NeMoGymResponse, metadata: dict, session_id: str | None = None
    ) -> tuple[str | None, float, bool, bool, dict]:
        """Returns (observation, reward, terminated, truncated, info)."""
        match = MOVE.search(extract_text(action))
        text, reward, done = self.games[session_id].play(int(match[1]) if match else -1)
        return text, reward, done, False, {}

    async def close_session(self, session_id: str | None) -> None:
        self.games.pop(session_id, None)


class TicTacToeConfig(BaseResourcesServerConfig):
    pass


class SeedRequest(BaseSeedSessionRequest):
    model_config = ConfigDict(extra="allow")


class MoveRequest(BaseModel):
    move: str


class VerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")


class TicTacToeToolsServer(SimpleResourcesServer):
    config: TicTacToeConfig
    session_id_to_game: dict[str, Any] = Field(default_factory=dict)

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/make_move")(self.make_move)
        return app

    async def seed_session(self, request: Request, body: SeedRequest) -> BaseSeedSessionResponse:
        session_id = request.session[SESSION_ID_KEY]
        self.session_id_to_game[session_id] = Game(_seed(body.model_extra or {}))
        return BaseSeedSessionResponse()

    async def make_move(self, request: Request, body: MoveRequest) -> PlainTextResponse:
        game = self.session_id_to_game[request.session[SESSION_ID_KEY]]
        text, _, done = game.play(int(body.move) if body.move.isdigit() else -1)
        return PlainTextResponse(text, headers={DONE_HEADER: str(int(done))})

    async def verify(self, request: Request, body: VerifyRequest) -> BaseVerifyResponse:
        game = self.session_id_to_game.pop(request.session[SESSION_ID_KEY], None)
        result = game.outcome() if game is not None else None
        return BaseVerifyResponse(**body.model_dump(), reward=float(result == "X"))


def build_app(style: str, host: str, port: int) -> FastAPI:
    """The app, as ``run_webserver`` builds it but without ``ng_run``'s Ray cluster."""
    cls = {"gymnasium": TicTacToeGymnasiumServer, "tools": TicTacToeToolsServer}[style]
    config = TicTacToeConfig(host=host, port=port, entrypoint="app.py", name=f"tictactoe_{style}")
    client = ServerClient(
        head_server_config=BaseServerConfig(host=host, port=0),
        global_config_dict=OmegaConf.create({}),
    )
    server = cls(config=config, server_client=client)
    app = server.setup_webserver()
    server.setup_liveness(app)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--style", default="gymnasium", choices=("gymnasium", "tools"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    import uvicorn

    app = build_app(args.style, args.host, args.port)
    uvicorn.run(
        app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )


if __name__ == "__main__":
    main()
