"""core.Episode in Verifiers' v1 vocabulary: a Taskset of core task rows, a Task whose
rewards are the core rubric's components, an Env whose ``run()`` plays the Episode as
the model's user, and a tool-less in-process chat Harness (the built-in ``null`` one
runs ``uv sync`` and needs the network). Every game is served; the row names it."""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Iterator
from typing import Any

try:
    import httpx
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import message_to_wire
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "adapters.verifiers needs verifiers 0.4; install with: pip install -e '.[verifiers]'"
    ) from e

from core import DEFAULT_WEIGHTS, Episode, Task, make_tasks

TASKSET_ID = "gamebridge-verifiers"
"""The id ``vf-eval`` takes; it imports the top-level shim module ``gamebridge_verifiers``."""


class GameTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: ``make_tasks(n, seed, game)``, or explicit ``rows``."""

    game: str = "tictactoe"
    n: int = 64
    seed: int = 0
    rows: list[dict[str, Any]] | None = None
    """Task rows (``Task.to_dict()``); when set, ``game``/``n``/``seed`` are ignored."""


class GameData(vf.TaskData):
    row: dict[str, Any]
    """The core task row; the Env builds its Episode from it."""


class GameTask(vf.Task[GameData, vf.State, vf.TaskConfig]):
    """Rewards: one ``@vf.reward`` per core rubric component (added below), each with
    the rubric's weight, reading the finished Episode's breakdown from ``trace.info``."""


# rosetta: reward: one `@vf.reward(weight=...)` per rubric component, read from `trace.info["reward"]`; `trace.reward` is the total
def _component(name: str, weight: float) -> Any:
    async def component(self: GameTask, trace: vf.Trace) -> float:
        reward = trace.info.get("reward")
        if reward is None:
            raise ValueError(f"the game did not finish ({trace.stop_condition}): no reward")
        return float(reward["components"][name])

    component.__name__ = component.__qualname__ = name
    return vf.reward(component, weight=weight)


for _name, _weight in DEFAULT_WEIGHTS.items():
    setattr(GameTask, _name, _component(_name, _weight))


class GameTaskset(vf.Taskset[GameTask, GameTasksetConfig]):
    def load(self) -> Iterator[GameTask]:
        c = self.config
        tasks = (
            [Task.from_dict(r) for r in c.rows]
            if c.rows is not None
            else make_tasks(c.n, seed=c.seed, game=c.game)
        )
        for task in tasks:
            data = GameData(
                id=task.task_id,
                name=task.task_id,
                prompt=None,
                system_prompt=Episode(task).system_prompt,
                row=task.to_dict(),
            )
            yield GameTask(data, c.task)


class GameEnvConfig(vf.EnvConfig):
    # Local by default: the harness is an in-process chat loop, nothing to sandbox.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


# rosetta: action: the model's chat reply (the last assistant message, unstripped)
def _reply(segment: vf.Segment) -> str:
    """The model's last reply, unstripped (core judges the text as sent)."""
    for message in reversed(segment.messages):
        if isinstance(message, vf.AssistantMessage):
            return message.content or ""
    return segment.last_reply


# rosetta: session: one `run()` per episode, `--max-concurrent` episodes at a time
class GameEnv(vf.Env[GameEnvConfig]):
    """The Episode plays the user: each reply is a step, each observation a turn."""

    # rosetta: rollout: `GameEnv.run()`: the Episode plays the user, one `interaction.turn(observation)` per reply
    async def run(self, task: GameTask, agents: vf.Agents) -> None:
        episode = Episode(task.data.row)
        # rosetta: reset: `Episode(task.data.row).reset()` in `run()`, sent as the first user turn
        observation = episode.reset()
        async with agents.player.interaction(task) as interaction:
            exchanged = False
            try:
                segment = await interaction.turn(observation)
                # rosetta: truncation: Verifiers' own caps (`max_turns`, token limits) end the exchange (`segment.terminated`): core settles the game (`Episode.settle`), scored in the reward slots
                while not segment.terminated:
                    # rosetta: step: `episode.step(reply)` in `run()`
                    result = episode.step(_reply(segment))
                    if result.done:
                        break
                    # rosetta: observation: the next user turn, `interaction.turn(result.observation)`
                    segment = await interaction.turn(result.observation)
                exchanged = True
            finally:  # a failed turn still leaves the trajectory so far
                trace = interaction.trace
                capped = not episode.done
                if exchanged and capped and not trace.errors:
                    # A Verifiers limit (max_turns, a token cap) or a @stop ended the
                    # exchange first: its stop condition stays the trace's, and core
                    # scores the game as settled. A failed model call is an error, not a cap.
                    episode.settle()
                # rosetta: state: `Episode` local to `run()`; the trajectory in `trace.info["episode"]`
                trace.info["episode"] = episode.to_dict()
            if episode.done:
                trace.info["reward"] = episode.reward().to_dict()
            if not capped:
                # rosetta: termination: `trace.stop(episode.termination)` (`game_over`, `forfeit`, `turn_cap`); a Verifiers cap keeps its own stop condition
                trace.stop(str(episode.termination))


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Built once: loading the CA store costs ~70 ms, more than a whole game step."""
    return ssl.create_default_context()


# rosetta: transport: env in process; each model call over HTTP through Verifiers' interception server
class ChatHarness(vf.Harness[vf.HarnessConfig]):
    """One chat completion per segment, in process, through the interception endpoint
    (so the trace records it); ``resume`` replays the whole conversation."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        **_: Any,
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        # Bounded: the driver's gateway answers within its call policy's worst case and
        # puts that (plus a margin) here; a bare harness waits at most 10 minutes.
        timeout = float(os.environ.get("GAMEBRIDGE_MODEL_CALL_TIMEOUT") or 600.0)
        async with httpx.AsyncClient(timeout=timeout, verify=_ssl_context()) as http:
            response = await http.post(
                f"{endpoint.rstrip('/')}/chat/completions",
                json={"model": ctx.model, "messages": messages},
                headers={"Authorization": f"Bearer {secret}"},
            )
        ok = response.status_code < 400
        return vf.ProgramResult(0 if ok else 1, "", "" if ok else response.text[-2000:])


# rosetta: registration: `__all__` exports the Taskset, Env and Harness found from the taskset id
__all__ = [
    "TASKSET_ID",
    "ChatHarness",
    "GameData",
    "GameEnv",
    "GameEnvConfig",
    "GameTask",
    "GameTaskset",
    "GameTasksetConfig",
]
