"""Verifiers' floor: a minimal Tic-Tac-Toe taskset written as Verifiers' own game taskset.

It follows ``verifiers/v1/tasksets/textarena/taskset.py`` (verifiers 0.4.0, "the game
engine playing the user"): a ``TasksetConfig``, a ``TaskData`` with ``info`` (the
seed), a ``Task`` subclass, an ``EnvConfig`` with a ``player`` agent, an ``Env`` whose
``run(task, agents)`` opens ``agents.player.interaction(task)``, takes the model's
first move with a bare ``turn()`` (the board is the task's prompt), steps the game
host-side on ``segment.last_reply`` and answers each move with
``interaction.turn(observation)`` until the game is over, then
``trace.record_reward(...)``; and a ``Taskset`` whose ``load()`` yields the tasks.
``__all__`` exports the Taskset, the Env and a Harness, so one taskset id resolves
all three. Verifiers' built-in harnesses need the network (``uv sync``) or Prime's
sandbox; the harness here is the small offline chat harness of Verifiers' docs
(one chat completion per launch through the interception endpoint, ``SUPPORTS_RESUME``),
the same code as gamebridge's, so the two differ in the environment only. Tic-Tac-Toe
and the random opponent are inline; nothing of gamebridge is imported.

The taskset id is a top-level module name: ``bench.servers`` registers this module
as ``tictactoe_floor`` before ``vf.load_environment``.
"""

from __future__ import annotations

import functools
import itertools
import random
import re
import ssl
from collections.abc import Iterator
from typing import Any

import httpx
import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MOVE = re.compile(r"<move>\s*(\d)\s*</move>")
SYSTEM_PROMPT = (
    "You are playing Tic-Tac-Toe as X against a random opponent. The cells are "
    "numbered 0-8. Reply with your move as <move>N</move>, N a free cell."
)


class Game:
    """One game: the board, the opponent's RNG."""

    def __init__(self, seed: int) -> None:
        self.board = [""] * 9
        self.rng = random.Random(seed)

    def step(self, reply: str) -> tuple[str, float | None]:
        """X where the reply says, the random reply; (board text, reward once over)."""
        match = MOVE.search(reply)
        cell = int(match[1]) if match else -1
        if not 0 <= cell < 9 or self.board[cell] or self.outcome():
            return "Illegal move.\n" + self.render(), None
        self.board[cell] = "X"
        if self.outcome() is None:
            self.board[self.rng.choice([i for i in range(9) if not self.board[i]])] = "O"
        result = self.outcome()
        return self.render(), None if result is None else {"X": 1.0, "O": 0.0}.get(result, 0.5)

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


class TicTacToeConfig(vf.TasksetConfig):
    n: int = 64
    seed: int = 0


class TicTacToeData(vf.TaskData):
    info: dict
    """The opponent's RNG seed."""


class TicTacToeTask(vf.Task[TicTacToeData, vf.State, vf.TaskConfig]):
    pass


class TicTacToeEnvConfig(vf.EnvConfig):
    # Local: the harness is an in-process chat loop, nothing to sandbox.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class TicTacToeEnv(vf.Env[TicTacToeEnvConfig]):
    async def run(self, task, agents):  # type: ignore[no-untyped-def]
        game = Game(task.data.info["seed"])
        reward = 0.0
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                observation, outcome = game.step(segment.last_reply)
                if outcome is not None:
                    reward = outcome
                    break  # game over: end the exchange
                segment = await interaction.turn(observation)
        interaction.trace.record_reward("game_reward", reward, 1.0)


class TicTacToeTaskset(vf.Taskset[TicTacToeTask, TicTacToeConfig]):
    def load(self) -> Iterator[TicTacToeTask]:
        for i in itertools.islice(itertools.count(self.config.seed), self.config.n):
            yield TicTacToeTask(
                TicTacToeData(
                    name=f"tictactoe#{i}",
                    prompt=Game(i).render(),
                    system_prompt=SYSTEM_PROMPT,
                    info={"seed": i},
                ),
                self.config.task,
            )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class ChatHarness(vf.Harness[vf.HarnessConfig]):
    """One chat completion per segment through the interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(  # type: ignore[no-untyped-def]
        self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_: Any
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        async with httpx.AsyncClient(timeout=600.0, verify=_ssl_context()) as http:
            response = await http.post(
                f"{endpoint.rstrip('/')}/chat/completions",
                json={"model": ctx.model, "messages": messages},
                headers={"Authorization": f"Bearer {secret}"},
            )
        ok = response.status_code < 400
        return vf.ProgramResult(0 if ok else 1, "", "" if ok else response.text[-2000:])


__all__ = ["ChatHarness", "TicTacToeEnv", "TicTacToeTaskset"]
