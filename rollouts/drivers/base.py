"""The driver contract (docs/drivers.md) and helpers every driver shares.

A driver runs tasks through one framework against an OpenAI-compatible
endpoint and returns one :class:`RolloutRecord` per task, in task order.

Two ways to write one:

* override :meth:`Driver.run_batch` (a framework that runs a whole batch
  itself, e.g. ``vf-eval``; it gets the tasks and the :class:`RunRequest`);
* or override :meth:`Driver.open_session` (the framework's client session for
  one task, beside the driver in ``rollouts.drivers.<framework>``) and, when the framework needs set-up
  (a server, a registry), :meth:`Driver.session`: the default
  :meth:`Driver.run_task` plays the session with the one model<->environment
  loop (:meth:`Driver.play`), and the default :meth:`Driver.run` runs the tasks
  on a thread pool with a tqdm progress bar and keeps the order. A framework
  that runs its own loop overrides :meth:`Driver.run_task` or :meth:`Driver.run_batch`.

Every driver declares ``mode``: ``"text"`` (the model moves by reply) or
``"tools"`` (by ``make_move`` tool call; its reference is core's tool mode).

:class:`StepClock` splits wall time into model time and environment +
framework time (``env_seconds`` = wall - model calls).
"""

from __future__ import annotations

import importlib
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from core.prompts import TOOL_NAME
from rollouts.drivers.pool import run_parallel
from rollouts.record import (
    ENV_SERVER,
    FRAMEWORK,
    MODEL_ENDPOINT,
    SOURCES,
    DriverError,
    RolloutRecord,
    describe_failure,
    failure_line,
)

if TYPE_CHECKING:
    from core.tasks import Task
    from rollouts.model.client import ChatClient, Completion

__all__ = [  # the driver contract; the record and failure types are rollouts.record's
    "ENV_SERVER",
    "FRAMEWORK",
    "MODEL_ENDPOINT",
    "MODES",
    "SOURCES",
    "TEXT",
    "TOOLS",
    "ClientSession",
    "Driver",
    "DriverError",
    "Message",
    "RolloutRecord",
    "RunContext",
    "RunRequest",
    "StepClock",
    "Turn",
    "as_tasks",
    "describe_failure",
    "failure_line",
    "failure_record",
    "make_record",
    "run_parallel",
    "run_request",
    "task_dict",
]


@dataclass
class RunContext:
    """What :meth:`Driver.run_task` gets: the endpoint and a shared client,
    plus anything the driver's :meth:`Driver.session` set up in ``extra``."""

    base_url: str
    model: str
    api_key: str | None
    client: ChatClient
    extra: dict[str, Any] = field(default_factory=dict)
    framework_cap: int | None = None
    """The framework's own cap on model turns (Verifiers ``max_turns``, NeMo Gym's
    agent ``max_steps``, SkyRL's ``max_turns``, TRL's ``max_tool_calling_iterations``),
    set through that framework's own setting; ``None``: the driver's default."""


class StepClock:
    """Wall time of one episode, split into model calls and the rest.

    >>> clock = StepClock()
    >>> with clock.model():
    ...     pass
    >>> clock.wall_seconds >= clock.model_seconds >= 0.0
    True
    """

    _local = threading.local()

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._end: float | None = None
        self.model_seconds = 0.0
        self.steps = 0
        self.completion_tokens = 0
        self.messages: list[dict[str, Any]] | None = None
        """The conversation :meth:`ask` last sent (a failure record keeps it)."""
        self.partial: Callable[[], dict[str, Any]] | None = None
        """The trajectory so far, when the driver can tell (a failure record keeps it)."""
        StepClock._local.clock = self

    @classmethod
    def last(cls) -> StepClock | None:
        """The clock this thread made last (the failed task's, in a guard)."""
        clock: StepClock | None = getattr(cls._local, "clock", None)
        return clock

    @contextmanager
    def model(self) -> Iterator[None]:
        """Time spent inside this block counts as model time."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.model_seconds += time.perf_counter() - t0

    def ask(
        self,
        client: ChatClient,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """One model turn: call the model (timed as model time), count the step
        and its tokens, and append the reply to ``messages``."""
        self.messages = messages
        with self.model():
            completion = client.complete(messages, tools=tools)
        self.steps += 1
        self.completion_tokens += completion.completion_tokens
        messages.append(completion.assistant_message())
        return completion

    def add_model_seconds(self, seconds: float) -> None:
        """Model time measured elsewhere (e.g. reported by a framework)."""
        self.model_seconds += max(0.0, seconds)

    def stop(self) -> None:
        """Freeze the wall clock (idempotent)."""
        if self._end is None:
            self._end = time.perf_counter()

    @property
    def wall_seconds(self) -> float:
        end = self._end if self._end is not None else time.perf_counter()
        return end - self._start

    @property
    def env_seconds(self) -> float:
        return max(0.0, self.wall_seconds - self.model_seconds)


TEXT = "text"
TOOLS = "tools"
MODES = (TEXT, TOOLS)
Message = dict[str, Any]
"""One chat message (``role``, ``content``...), as the sessions hand them to the model."""


class Turn(NamedTuple):
    """What the environment said after one action."""

    observation: str
    """The text the model reads next (a user message, or the tool's answer)."""
    done: bool


class ClientSession(ABC):
    """One episode through one framework's client, driven from the client side
    (each framework's sits beside its driver, ``rollouts.drivers.<framework>``:
    ``CoreSession`` in ``rollouts.drivers.core``...; a framework is imported when a
    session opens, never at import).

    :meth:`open` gives the chat the model reads first (and, in tool mode, sets
    ``tools``); :meth:`send` takes the model's reply (text mode), :meth:`call` a
    ``make_move`` call's raw arguments (tool mode), :meth:`stop` the end of the
    model's play (no tool call, or the cap: core settles the game); each answers with
    the next :class:`Turn`. :meth:`result` is what the framework hands back at the
    end; :meth:`close` ends the client's side. No session judges anything: core
    does, inside the framework."""

    mode: str = TEXT
    own_cap: ClassVar[bool] = False
    """The framework ends the game at the cap itself (GEM's ``max_episode_steps``,
    SkyRL's ``max_turns``): the loop never has to stop it."""
    tools: list[dict[str, Any]] | None = None
    """The tools to offer the model (set by :meth:`open`; ``None`` in text mode)."""

    @abstractmethod
    def open(self, task: Task) -> list[dict[str, Any]]:
        """Start ``task``'s episode; the chat the model reads first."""

    def send(self, reply: str) -> Turn:
        """The model's reply (text mode)."""
        raise DriverError(f"{type(self).__name__} takes tool calls, not replies")

    def call(self, arguments: Any, name: str = TOOL_NAME) -> Turn:
        """A tool call's raw arguments, as decoded (core judges them)."""
        raise DriverError(f"{type(self).__name__} takes replies, not tool calls")

    def stop(self, text: str | None = None) -> Turn:
        """The model stopped playing (``text``: its last answer) or the cap was
        reached (``None``): the framework's way to end, core settles the game."""
        raise DriverError(f"{type(self).__name__} has no way to stop a game")

    @abstractmethod
    def result(self) -> tuple[dict[str, Any], Any]:
        """The finished episode's trajectory and reward breakdown, from the framework."""

    def partial(self) -> dict[str, Any] | None:
        """The trajectory so far, where the client can tell (core only)."""
        return None

    supports_seats: ClassVar[bool] = False
    """Whether the session plays a task with several outside seats (``Task.seats``):
    one conversation per seat (:meth:`seat`, :meth:`opening`; a tool call is answered
    with its seat's next observation), or, where the framework keeps one conversation
    per rollout, every seat in it (:meth:`seat` ``None``; core refuses that in a game
    with hidden information)."""

    def seat(self) -> int | None:
        """The outside seat to move, in a task with several; ``None``: one conversation."""
        return None

    def opening(self, seat: int) -> list[dict[str, Any]]:
        """The chat ``seat`` reads first (its system prompt and its own view)."""
        raise DriverError(f"{type(self).__name__} plays one seat")

    def close(self) -> None:  # noqa: B027 (most sessions hold nothing to close)
        """End the client's side of the episode (idempotent)."""

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_tasks(tasks: Iterable[Task | dict[str, Any]]) -> list[Task]:
    """Tasks from ``Task`` objects or their dicts."""
    from core.tasks import Task

    return [t if isinstance(t, Task) else Task.from_dict(t) for t in tasks]


def task_dict(task: Task | dict[str, Any]) -> dict[str, Any]:
    """``Task.to_dict()`` of a task or a task dict (normalised)."""
    from core.tasks import Task

    return (task if isinstance(task, Task) else Task.from_dict(task)).to_dict()


def make_record(
    framework: str,
    task: Task | dict[str, Any],
    trajectory: dict[str, Any],
    reward: dict[str, Any] | Any,
    clock: StepClock,
    steps: int,
    completion_tokens: int,
) -> RolloutRecord:
    """A record from the pieces a driver collected (``reward`` may be a
    ``RewardBreakdown`` or its dict)."""
    clock.stop()
    if not isinstance(reward, dict):
        to_dict = getattr(reward, "to_dict", None)
        reward = to_dict() if callable(to_dict) else asdict(reward)
    return RolloutRecord(
        framework=framework,
        task=task_dict(task),
        trajectory=trajectory,
        reward=reward,
        wall_seconds=clock.wall_seconds,
        env_seconds=clock.env_seconds,
        steps=steps,
        completion_tokens=completion_tokens,
    )


def failure_record(
    framework: str,
    task: Task | dict[str, Any],
    exc: BaseException,
    *,
    clock: StepClock | None = None,
    trajectory: dict[str, Any] | None = None,
) -> RolloutRecord:
    """The record of a task that failed: the error and the trajectory so far (what
    the driver knows: the core trajectory if it has one, else the conversation)."""
    row = task_dict(task)
    partial = getattr(exc, "trajectory", None) or trajectory
    if partial is None and clock is not None and clock.partial is not None:
        with suppress(Exception):  # best effort: the failure itself is what matters
            partial = clock.partial()
    if partial is None:
        partial = {"task_id": row.get("task_id"), "game": row.get("game"), "events": []}
        if clock is not None and clock.messages is not None:
            partial["messages"] = clock.messages
    partial = {**partial, "partial": True}
    if clock is None:
        clock = StepClock()
    clock.stop()
    return RolloutRecord(
        framework=framework,
        task=row,
        trajectory=partial,
        reward={},
        wall_seconds=clock.wall_seconds,
        env_seconds=clock.env_seconds,
        steps=clock.steps,
        completion_tokens=clock.completion_tokens,
        error=describe_failure(exc),
    )


@dataclass(frozen=True)
class RunRequest:
    """One run's settings, built once (the CLI builds it from its flags) and passed whole
    down to the driver: the model endpoint with its call policy, where and how many
    episodes run, and the run's hooks. What :meth:`Driver.run_batch` gets;
    ``rollouts.drivers.executors.run_tasks``, ``run_into_file``, compare and the arena
    take it too."""

    base_url: str
    model: str
    api_key: str | None = None
    concurrency: int = 1
    progress: bool = False
    on_record: Callable[[int, RolloutRecord], None] | None = None
    """Called with ``(index, record)`` as soon as each task is done (from a worker thread)."""
    stop: threading.Event | None = None
    """Once set, no new task starts."""
    call_policy: Any = None
    """The :class:`rollouts.model.client.CallPolicy` of every model call (``None``: the
    driver's own, by default the client's)."""
    executor: str = "thread"
    """Where the episodes run (``rollouts.drivers.executors``): ``thread`` or ``ray``."""
    ray_address: str | None = None
    """A Ray cluster to join (``ray`` only; ``None``: a local one for the run)."""


def run_request(request: RunRequest | None, settings: dict[str, Any]) -> RunRequest:
    """``request`` with ``settings`` (its fields as keywords) replacing its own, or a
    request of ``settings`` alone: the two ways a run is asked for."""
    return replace(request, **settings) if request is not None else RunRequest(**settings)


class Driver(ABC):  # noqa: B024 (abstract by contract: override run_batch or run_task)
    """Runs tasks through one framework. Subclasses set ``name`` and override
    :meth:`open_session` or :meth:`run_task` (+ :meth:`session` if needed), or
    :meth:`run_batch`."""

    name: ClassVar[str] = ""
    mode: str = TEXT
    """``"text"`` or ``"tools"`` (:data:`MODES`): how the model moves."""
    seats: ClassVar[str | None] = None
    """How the driver plays a task with several outside seats (``Task.seats``):
    ``rollouts.drivers.seats.CHAT_PER_SEAT`` or ``ONE_CHAT``, or ``None``: it plays one
    outside seat."""
    framework_cap: int | None = None
    """Set on an instance to cap model turns through the framework's own setting
    (``RunContext.framework_cap``); ``None``: each driver's default (whole games)."""
    registers: ClassVar[str | None] = None
    """An adapter module whose ``register()`` must run before the framework's
    ``make`` finds its env (GEM, SkyRL Gym): imported by :meth:`available`,
    registered once per :meth:`session`."""
    call_policy: Any = None
    """The :class:`rollouts.model.client.CallPolicy` of every model call (``None``: the
    default); a run's ``RunRequest.call_policy`` replaces it (:meth:`adopt`)."""

    def run(
        self,
        tasks: Iterable[Task | dict[str, Any]],
        request: RunRequest | None = None,
        **settings: Any,
    ) -> list[RolloutRecord]:
        """One record per task, in task order, each with its ``index``. A task that
        fails gets a failure record (``record.error``) and the others go on.

        The run's settings are ``request`` (a :class:`RunRequest`) or its fields as
        keywords (``base_url=..., model=...``), which replace the request's. Its
        ``on_record(index, record)`` is called as soon as each task is done (from a
        worker thread): eval writes the record there. Once its ``stop`` is set no new
        task starts (the list then holds only the tasks that ran). A driver whose
        framework runs the batch itself overrides :meth:`run_batch`, not this."""
        r = run_request(request, settings)
        self.adopt(r)
        return self.run_batch(as_tasks(tasks), r)

    def adopt(self, request: RunRequest) -> None:
        """Take the request's call policy (when it has one) for every model call of this
        driver: its client's, and the gateway's of a framework that calls the model
        itself. :meth:`run` calls it, and so does the Ray executor before it ships the
        driver to its workers."""
        if request.call_policy is not None:
            self.call_policy = request.call_policy

    def run_batch(self, tasks: list[Task], request: RunRequest) -> list[RolloutRecord]:
        """:meth:`run` with its arguments gathered: the tasks on a thread pool, each
        through :meth:`run_task` inside one :meth:`session`."""
        r = request
        self.prepare(tasks)
        with self.session(
            base_url=r.base_url, model=r.model, api_key=r.api_key, concurrency=r.concurrency
        ) as ctx:
            return run_parallel(
                list(enumerate(tasks)),
                lambda item: self.run_guarded(item[1], ctx, item[0]),
                concurrency=r.concurrency,
                progress=r.progress,
                desc=self.name or type(self).__name__,
                on_result=(lambda _i, rec: r.on_record(rec.index or 0, rec))
                if r.on_record
                else None,
                stop=r.stop,
            )

    def prepare(self, tasks: list[Task]) -> None:
        """Settings the whole run's tasks decide, before its :meth:`session` opens
        (default: none). :meth:`run_batch` calls it; so does the Ray executor, once,
        before it ships the driver to the workers that each keep one session."""
        return None  # a hook with a default, not an abstract method (ruff B027)

    def run_guarded(self, task: Task, ctx: RunContext, index: int) -> RolloutRecord:
        """:meth:`run_task`, with a failure record instead of an exception."""
        StepClock._local.clock = None
        try:
            record = self.run_task(task, ctx)
        except Exception as e:  # one bad task never sinks the others: it is recorded
            record = failure_record(self.name, task, e, clock=StepClock.last())
        record.index = index
        return record

    @contextmanager
    def session(
        self, *, base_url: str, model: str, api_key: str | None, concurrency: int = 1
    ) -> Iterator[RunContext]:
        """Set-up shared by all tasks of one :meth:`run` (default: a client)."""
        from rollouts.model.client import ChatClient

        if self.registers is not None:
            importlib.import_module(self.registers).register()
        client = ChatClient(base_url, model, api_key, policy=self.call_policy)
        try:
            yield RunContext(
                base_url=base_url,
                model=model,
                api_key=api_key,
                client=client,
                framework_cap=self.framework_cap,
            )
        finally:
            client.close()

    def open_session(self, task: Task, ctx: RunContext) -> ClientSession:
        """The framework's client session for ``task`` (not yet opened)."""
        raise NotImplementedError(
            f"{type(self).__name__} implements none of run, run_task, open_session"
        )

    def run_task(self, task: Task, ctx: RunContext) -> RolloutRecord:
        """Run one task: :meth:`play` the driver's session (or override this, or :meth:`run`)."""
        return self.play(self.open_session(task, ctx), task, ctx)

    def play(self, session: ClientSession, task: Task, ctx: RunContext) -> RolloutRecord:
        """The model<->environment loop: open ``session``, ask the model, hand the
        environment its reply (text mode) or its ``make_move`` call's raw arguments,
        until the game is over. In tool mode a reply without a tool call ends the
        model's play, as in TRL and NeMo Gym's agents (core settles the game); so
        does ``ctx.framework_cap`` model turns, unless the framework caps itself."""
        clock = StepClock()
        clock.partial = session.partial  # a failure record keeps the trajectory so far
        if getattr(task, "seats", None) is not None and not session.supports_seats:
            raise DriverError(f"{self.name} plays one outside seat")
        with session:
            messages = session.open(task)
            seat = session.seat()
            chats = {}  # several outside seats: one conversation per seat
            if seat is not None:
                messages = chats[seat] = session.opening(seat)
            # Per seat, its last reply's answer to come (a user turn, or the tool
            # message answering its call), sent with that seat's next observation.
            waiting: dict[int | None, dict[str, Any]] = {}
            done = False
            while not done:
                cap = ctx.framework_cap
                if cap is not None and not session.own_cap and clock.steps >= cap:
                    session.stop()
                    break
                completion = clock.ask(ctx.client, messages, tools=session.tools)
                call = next((c for c in completion.tool_calls if c.name == TOOL_NAME), None)
                if call is not None:
                    turn = session.call(call.arguments)
                    waiting[seat] = {"role": "tool", "tool_call_id": call.id}
                elif session.mode == TOOLS:
                    session.stop(completion.text)  # no tool call: the model stopped playing
                    break
                else:
                    turn = session.send(completion.text)
                    waiting[seat] = {"role": "user"}
                done = turn.done
                seat = session.seat()
                if not done and seat is not None and seat not in chats:
                    messages = chats[seat] = session.opening(seat)
                elif not done:
                    messages = messages if seat is None else chats[seat]
                    messages.append({**waiting.pop(seat), "content": turn.observation})
            trajectory, reward = session.result()
        return make_record(
            self.name, task, trajectory, reward, clock, clock.steps, clock.completion_tokens
        )

    def available(self) -> tuple[bool, str]:
        """Whether the framework is importable here, and why not (default: the
        ``registers`` adapter imports, which imports its framework)."""
        if self.registers is not None:
            try:
                importlib.import_module(self.registers)
            except ImportError as e:
                return False, str(e)
        return True, ""
