"""The Verifiers driver: tasks run through Verifiers' own eval machinery, in process.

It does what ``vf-eval gamebridge-verifiers`` does (``load_environment``, then
``env.serving()`` and ``env.run_slot`` per task, the interception server recording
every model call), minus the output directory, the dashboard and the upload. The
adapter's harness calls the model; the trajectory and the reward come back in
``trace.info`` (``episode`` and ``reward``), never recomputed here.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rollouts.drivers.base import (
    MODEL_ENDPOINT,
    Driver,
    DriverError,
    RolloutRecord,
    RunRequest,
    StepClock,
    failure_record,
    make_record,
)
from rollouts.drivers.seats import CHAT_PER_SEAT

if TYPE_CHECKING:
    from core.tasks import Task

API_KEY_VAR = "GAMEBRIDGE_VERIFIERS_API_KEY"
"""Verifiers reads the endpoint's key from an environment variable; the driver's
``api_key`` is put there (``OPENAI_API_KEY`` is used when it is ``None``)."""
CALL_TIMEOUT_VAR = "GAMEBRIDGE_MODEL_CALL_TIMEOUT"
"""Seconds the adapter's harness waits for one model call (the call policy's worst case
plus a margin: the gateway answers within it)."""


def _timeout_config(read: float) -> Any:
    from verifiers.v1.configs.client import ClientTimeoutConfig

    return ClientTimeoutConfig(connect=30.0, read=read, write=read, pool=read)


class VerifiersDriver(Driver):
    """``Env.run_slot`` per task, ``concurrency`` episodes at a time."""

    name = "verifiers"
    seats = CHAT_PER_SEAT  # Verifiers' multi-agent env: one agent per outside seat

    def run_batch(self, tasks: list[Task], request: RunRequest) -> list[RolloutRecord]:
        from rollouts.model.gateway import ModelGateway

        r = request
        if not tasks:
            return []
        # Verifiers' client calls the model: the gateway applies the one call policy.
        with ModelGateway(r.base_url, self.call_policy) as gateway:
            os.environ[CALL_TIMEOUT_VAR] = str(gateway.policy.worst_case_seconds() + 30.0)
            return asyncio.run(
                self._run(
                    tasks,
                    gateway,
                    r.model,
                    r.api_key,
                    max(1, r.concurrency),
                    r.progress,
                    r.on_record,
                    r.stop,
                )
            )

    async def _run(
        self,
        tasks: list[Task],
        gateway: Any,
        model: str,
        api_key: str | None,
        concurrency: int,
        progress: bool,
        on_record: Callable[[int, RolloutRecord], None] | None,
        stop: threading.Event | None,
    ) -> list[RolloutRecord]:
        try:
            import verifiers.v1 as vf
            from verifiers.v1.env import RunSlot

            from adapters.verifiers import TASKSET_ID
        except ImportError as e:
            raise ImportError(
                f"the verifiers driver needs verifiers: pip install -e '.[verifiers]' ({e})"
            ) from e
        if api_key is not None:
            os.environ[API_KEY_VAR] = api_key
        spec: dict[str, Any] = {"taskset": {"id": TASKSET_ID, "rows": [t.to_dict() for t in tasks]}}
        if self.framework_cap is not None:  # vf-eval's --env.player.max-turns (and opponent's)
            cap = {"max_turns": self.framework_cap, "runtime": {"type": "subprocess"}}
            spec["player"] = spec["opponent"] = cap
        config = vf.resolve_env_config(spec)
        env = vf.load_environment(config)
        read = gateway.policy.worst_case_seconds() + 30.0
        client = vf.EvalClientConfig(
            base_url=gateway.url,
            api_key_var=API_KEY_VAR if api_key is not None else "OPENAI_API_KEY",
            timeout=_timeout_config(read),
        )
        ctx = vf.ModelContext(model=model, client=client)
        gate = asyncio.Semaphore(concurrency)
        bar = _progress_bar(len(tasks)) if progress else None
        out: dict[int, RolloutRecord] = {}

        async def one(index: int, task: Task, vtask: Any) -> None:
            async with gate:
                if stop is not None and stop.is_set():
                    return
                clock = StepClock()
                failures_before = len(gateway.failures)
                try:
                    episode = await env.run_slot(RunSlot(vtask), ctx)
                    record = self._record(task, episode, clock)
                except Exception as e:  # one bad task never sinks the others
                    partial = getattr(e, "trajectory", None)
                    if len(gateway.failures) > failures_before:  # the gateway saw why
                        e = DriverError(
                            f"{task.task_id}: {gateway.failures[-1]}",
                            source=MODEL_ENDPOINT,
                            log=str(e),
                        )
                    record = failure_record(self.name, task, e, clock=clock, trajectory=partial)
            record.index = index
            out[index] = record
            if on_record is not None:
                on_record(index, record)
            if bar is not None:
                bar.update(1)

        try:
            async with env.serving():
                runs = [
                    one(i, t, v) for i, (t, v) in enumerate(zip(tasks, env.taskset, strict=True))
                ]
                await asyncio.gather(*runs)
                return [out[i] for i in sorted(out)]
        finally:
            if bar is not None:
                bar.close()

    def _record(self, task: Task, episode: Any, clock: StepClock) -> RolloutRecord:
        clock.stop()
        traces = episode.traces
        if task.seats is not None:  # one agent, one trace per outside seat: the model's
            traces = [t for t in traces if t.info.get("seat") == task.model_player] or traces
        if len(traces) != 1:
            raise DriverError(f"{task.task_id}: expected one trace, got {len(traces)}")
        trace = traces[0]
        info = trace.info
        if not episode.ok or "episode" not in info or "reward" not in info:
            errors = [f"{e.type}: {e.message}" for e in (*episode.errors, *trace.errors)]
            error = DriverError(
                f"{task.task_id}: the Verifiers rollout failed (stop={trace.stop_condition}): "
                + ("; ".join(errors) or "no trajectory in trace.info")
            )
            error.trajectory = info.get("episode")  # type: ignore[attr-defined]
            raise error
        every = episode.traces  # the model calls of every seat's agent
        clock.add_model_seconds(sum(call.time.duration for t in every for call in t.calls))
        return make_record(
            self.name,
            task,
            info["episode"],
            info["reward"],
            clock,
            sum(t.num_turns for t in every),
            sum(t.num_output_tokens for t in every),
        )

    def available(self) -> tuple[bool, str]:
        import importlib.util

        if importlib.util.find_spec("verifiers") is None:
            return False, "verifiers is not installed: pip install -e '.[verifiers]'"
        return True, ""


def _progress_bar(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # progress bars are a nicety, not a requirement
        return None
    return tqdm(total=total, desc="verifiers", unit="ep")
