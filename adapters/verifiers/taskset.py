"""core.Episode in Verifiers' v1 vocabulary: a Taskset of core task rows, a Task whose
rewards are the core rubric's components, an Env whose ``run()`` plays the Episode as
the model's user, and a tool-less in-process chat Harness (the built-in ``null`` one
runs ``uv sync`` and needs the network). Every game is served; the row names it."""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import ssl
from collections.abc import Iterator
from typing import Any

from adapters._lazy import needs

with needs("adapters.verifiers", "verifiers 0.4", "verifiers"):
    import httpx
    import verifiers.v1 as vf
    from pydantic import AliasChoices, Field
    from verifiers.v1.configs.task import RewardFunctionConfig
    from verifiers.v1.dialects.chat import message_to_wire

from core import DEFAULT_WEIGHTS, Episode, Task, conversation, make_tasks
from core.metrics import RATE_KEYS, outcome_rates

TASKSET_ID = "gamebridge-verifiers"
"""The id ``vf-eval`` takes; it imports the top-level shim module ``gamebridge_verifiers``."""


# rosetta: config: `--env.taskset.*` flags (or an `@ file.toml`): `core.make_tasks` arguments, task fields, `tools`
class GameTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: ``make_tasks(n, seed, game, ...)``, or explicit ``rows``."""

    game: str = "tictactoe"
    n: int = 64
    seed: int = 0
    min_random_move_prob: float = 0.0
    max_random_move_prob: float = 1.0
    """The opponent's random-move probability spans this range (``core.make_tasks``)."""
    num_groups: int = 1
    depth: int | None = Field(None, validation_alias=AliasChoices("depth", "minimax_depth"))
    """The opponent's search depth (``minimax_depth``, the walkthrough's name, works too)."""
    task_fields: dict[str, Any] = Field(default_factory=dict)
    """Any other task field for every row (``{"max_invalid_moves": 1}``)."""
    tools: bool = False
    """Tool mode: the model moves by calling ``make_move`` (core's tool prompt and schema)."""
    rows: list[dict[str, Any]] | None = None
    """Task rows (``Task.to_dict()``); when set, the fields above but ``tools`` are ignored."""


class GameData(vf.TaskData):
    row: dict[str, Any]
    """The core task row; the Env builds its Episode from it."""
    tools: list[dict[str, Any]] | None = None
    """Tool mode: core's ``make_move`` schema, which the harness offers the model."""


class GameTask(vf.Task[GameData, vf.State, vf.TaskConfig]):
    """Rewards: one ``@vf.reward`` per core rubric component (added below), each with
    the rubric's weight, reading the finished Episode's breakdown from ``trace.info``."""


# rosetta: reward: one `@vf.reward(weight=...)` per rubric component, read from `trace.info["reward"]`; `trace.reward` is the total
def _component(name: str, weight: float) -> Any:
    async def component(self: GameTask, trace: vf.Trace) -> float:
        reward = trace.info.get("reward")
        if reward is None:
            raise ValueError(f"the game did not finish ({trace.stop_condition}): no reward")
        return float(reward["components"].get(name, 0.0))  # a component the task leaves out: 0

    component.__name__ = component.__qualname__ = name
    return vf.reward(component, weight=weight)


for _name, _weight in DEFAULT_WEIGHTS.items():
    setattr(GameTask, _name, _component(_name, _weight))


# rosetta: metrics: one `@vf.metric` per outcome rate of `core.metrics.outcome_rates` (vf-eval averages them)
def _rate(name: str) -> Any:
    async def rate(self: GameTask, trace: vf.Trace) -> float:
        episode = trace.info.get("episode")
        return float(outcome_rates([episode] if episode else [])[name])

    rate.__name__ = rate.__qualname__ = name
    return vf.metric(rate)


for _name in RATE_KEYS:
    setattr(GameTask, _name, _rate(_name))


class GameTaskset(vf.Taskset[GameTask, GameTasksetConfig]):
    def load(self) -> Iterator[GameTask]:
        c = self.config
        fields = {**c.task_fields, **({} if c.depth is None else {"depth": c.depth})}
        # The config's fields named like make_tasks' arguments (n, seed, game, ...) are them.
        named = set(inspect.signature(make_tasks).parameters) & set(type(c).model_fields)
        tasks = (
            [Task.from_dict(r) for r in c.rows]
            if c.rows is not None
            else make_tasks(**c.model_dump(include=named), **fields)
        )
        for task in tasks:
            task, task_config = _weighted(task, c.task)
            episode = Episode(task)
            # rosetta: tools: `--env.taskset.tools true`: core's tool prompt, `make_move` offered, each call played by core (`conversation.answer_tool_calls`)
            data = GameData(
                id=task.task_id,
                name=task.task_id,
                prompt=None,
                system_prompt=episode.tool_system_prompt if c.tools else episode.system_prompt,
                row=task.to_dict(),
                tools=[episode.tool_schema] if c.tools else None,
            )
            yield GameTask(data, task_config)


class GameEnvConfig(vf.EnvConfig):
    # Local by default: the harness is an in-process chat loop, nothing to sandbox.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The model's seat (``task.model_player``)."""
    # rosetta: agents: multi-agent v1: one `vf.AgentConfig` field per outside seat (`player`, `opponent`: the same model unless `--env.opponent.model` says), one interaction and one trace each, every turn sent to the seat core says is to move
    opponent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The other outside seat of a task with two (``Task.seats``, e.g. self-play)."""


def _last_assistant(segment: vf.Segment) -> vf.AssistantMessage | None:
    return next((m for m in reversed(segment.messages) if isinstance(m, vf.AssistantMessage)), None)


# rosetta: action: the model's chat reply (the last assistant message, unstripped)
def _reply(segment: vf.Segment) -> str:
    """The model's last reply, unstripped (core judges the text as sent)."""
    message = _last_assistant(segment)
    return segment.last_reply if message is None else message.content or ""


# rosetta: session: one `run()` per episode, `--max-concurrent` episodes at a time
class GameEnv(vf.Env[GameEnvConfig]):
    """The Episode plays the user: each reply is a step, each observation a turn."""

    # rosetta: rollout: `GameEnv.run()`: the Episode plays the user, one `interaction.turn(observation)` per reply
    async def run(self, task: GameTask, agents: vf.Agents) -> None:
        episode = Episode(task.data.row)  # scored by the row's reward_weights
        if episode.several:
            return await _run_seats(episode, task, [agents.player, agents.opponent])
        # rosetta: reset: `Episode(task.data.row).reset()` in `run()`, sent as the first user turn
        observation = episode.reset()
        async with agents.player.interaction(task) as interaction:
            exchanged = False
            try:
                segment = await interaction.turn(observation)
                # rosetta: truncation: Verifiers' own caps (`max_turns`, token limits) end the exchange (`segment.terminated`): core settles the game (`Episode.settle`), scored in the reward slots
                while not segment.terminated:
                    if task.data.tools is not None:
                        answers = _play_tool_calls(episode, segment)
                        if episode.done:
                            break
                        segment = await interaction.turn(answers)
                        continue
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


# rosetta: reward: weights by argument: the task's `reward_weights`, re-weighted by Verifiers' own `--env.taskset.task.rewards.<name>.weight`; both sides score by the result
def _weighted(task: Task, config: vf.TaskConfig) -> tuple[Task, vf.TaskConfig]:
    """The task's reward weights (``Task.reward_weights``), re-weighted by Verifiers'
    own per-reward config (``--env.taskset.task.rewards.win.weight 2``), written back
    into the task (so core's rubric scores by them) and into the task's reward config
    (so Verifiers sums by them; a component the task leaves out weighs 0): the trace's
    weighted sum equals ``trace.info["reward"]["total"]``."""
    weights = task.weights()
    for name, entry in config.rewards.items():
        if name in DEFAULT_WEIGHTS and entry.fn is None and entry.weight is not None:
            weights[name] = float(entry.weight)
    if weights != task.weights():
        task = Task.from_dict({**task.to_dict(), "reward_weights": weights})
    rewards = {n: RewardFunctionConfig(weight=weights.get(n, 0.0)) for n in DEFAULT_WEIGHTS}
    rewards.update(config.rewards)
    return task, config.model_copy(update={"rewards": rewards})


async def _run_seats(episode: Episode, task: GameTask, agents: list[Any]) -> None:
    """Two outside seats, one agent each (``player``: the model's seat): each seat's
    interaction opens at its first turn with its own system prompt, and every turn is
    its own view (``Episode.observation_for``); at the end each trace holds the
    trajectory and its seat's reward. Text mode only: a tool call answered with the
    next seat's view would show it to the wrong seat."""
    if task.data.tools is not None or len(episode.outside) != 2:
        raise ValueError("Verifiers plays several outside seats with two seats in text mode")
    episode.reset()
    seat_agents = dict(zip(episode.outside, agents, strict=True))
    open_: dict[int, Any] = {}
    async with contextlib.AsyncExitStack() as stack:
        try:
            while (seat := episode.to_move) is not None:  # None: the game is over
                if seat not in open_:
                    data = task.data.model_copy(
                        update={"system_prompt": episode.system_prompt_for(seat)}
                    )
                    open_[seat] = await stack.enter_async_context(
                        seat_agents[seat].interaction(GameTask(data, task.config))
                    )
                segment = await open_[seat].turn(episode.observation_for(seat))
                if segment.terminated:  # a Verifiers cap: core settles the game
                    episode.settle()
                    break
                episode.step(_reply(segment))
        finally:  # each seat's trace: the trajectory so far, its own reward at the end
            for seat, interaction in open_.items():
                interaction.trace.info.update(episode=episode.to_dict(), seat=seat)
                if episode.done:
                    interaction.trace.info["reward"] = episode.reward_for(seat).to_dict()
                    interaction.trace.stop(str(episode.termination))


def _play_tool_calls(episode: Episode, segment: vf.Segment) -> list[dict[str, Any]]:
    """Tool mode: the last reply's ``make_move`` calls, played in order by core
    (``conversation.answer_tool_calls``: a reply without a call stopped playing, and
    core settles the game); the tool messages answering them."""
    message = _last_assistant(segment)
    calls = (message.tool_calls or []) if message is not None else []
    # The calls' raw arguments, as the model wrote them: core judges them.
    return conversation.answer_tool_calls(episode, [(c.id, c.arguments) for c in calls])


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
        messages = [conversation.system(system)] if system else []
        if isinstance(prompt, str):
            messages.append(conversation.observation(prompt))
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        # Bounded: the driver's gateway answers within its call policy's worst case and
        # puts that (plus a margin) here; a bare harness waits at most 10 minutes.
        timeout = float(os.environ.get("GAMEBRIDGE_MODEL_CALL_TIMEOUT") or 600.0)
        tools = getattr(data, "tools", None)
        async with httpx.AsyncClient(timeout=timeout, verify=_ssl_context()) as http:
            response = await http.post(
                f"{endpoint.rstrip('/')}/chat/completions",
                json={
                    "model": ctx.model,
                    "messages": messages,
                    **({"tools": tools} if tools else {}),
                },
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
