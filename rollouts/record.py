"""One rollout record and what a failure records: the row every wing reads.

:class:`RolloutRecord` is one task run through one framework (a line of a
``runs/*.jsonl`` file); a failed task's ``error`` names what failed
(:data:`SOURCES`, :class:`DriverError`) with :func:`describe_failure`. The drivers
write records, the records file (``rollouts.evaluation.records``) stores them, and
compare, summaries, reports, export and the arena read them. Standard library only,
importing nothing of gamebridge (a leaf of the layers inside ``rollouts/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

MODEL_ENDPOINT = "model endpoint"
ENV_SERVER = "environment server"
FRAMEWORK = "framework"
SOURCES = (MODEL_ENDPOINT, ENV_SERVER, FRAMEWORK)
"""What a failed task's ``error["source"]`` names."""


class DriverError(RuntimeError):
    """A driver could not run a task (the framework failed, a server died...).

    ``source`` names what failed (one of :data:`SOURCES`); ``log`` holds the
    failing component's own log lines that say why."""

    source: str = FRAMEWORK

    def __init__(self, message: str, *, source: str | None = None, log: str = "") -> None:
        super().__init__(message)
        if source is not None:
            self.source = source
        self.log = log


@dataclass
class RolloutRecord:
    """One task run through one framework (the row of a ``runs/*.jsonl`` file)."""

    framework: str
    task: dict[str, Any]
    """``Task.to_dict()``."""
    trajectory: dict[str, Any]
    """``Episode.to_dict()`` of the episode that really ran (in the server, if any)."""
    reward: dict[str, Any]
    """``RewardBreakdown`` as a dict (total, components, weights)."""
    wall_seconds: float
    """The whole episode, model calls included."""
    env_seconds: float
    """Time inside the environment + framework (model calls excluded)."""
    steps: int
    """Model replies."""
    completion_tokens: int
    index: int | None = None
    """The task's position in the run's task list (set by :meth:`Driver.run`)."""
    error: dict[str, Any] | None = None
    """``None`` for a finished episode; for a task that failed: ``source`` (what failed:
    ``model endpoint``, ``environment server``, ``framework``), ``type``, ``message``
    and ``log`` (the failing component's own last log lines). The trajectory is then
    what was played so far."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (one JSONL line)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> RolloutRecord:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        required = {f.name for f in fields(cls) if f.default is MISSING}
        missing = required - row.keys()
        if missing:
            raise ValueError(f"rollout record lacks {sorted(missing)}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: row[k] for k in names if k in row})


def _source(exc: BaseException) -> str:
    """What failed, from the first ``source`` along the exception's cause chain."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        source = getattr(e, "source", None)
        if isinstance(source, str):
            return source
        e = e.__cause__ or e.__context__
    return FRAMEWORK


def describe_failure(exc: BaseException) -> dict[str, Any]:
    """A failed task's ``error`` dict: source, type, one-line message, log lines."""
    log = getattr(exc, "log", "") or "\n".join(getattr(exc, "__notes__", []) or [])
    message = " ".join(str(exc).split()) or type(exc).__name__
    return {
        "source": _source(exc),
        "type": type(exc).__name__,
        "message": message[:2000],
        "log": [line for line in str(log).splitlines() if line.strip()][-40:],
    }


def failure_line(error: dict[str, Any]) -> str:
    """One line naming what failed and why."""
    return f"{error.get('source', FRAMEWORK)} failed: {error.get('type')}: {error.get('message')}"


def trajectory_mode(trajectory: Mapping[str, Any]) -> str:
    """``"tools"`` if the model replied by tool call, else ``"text"``."""
    events = trajectory.get("events") or []
    return "tools" if any(e.get("kind") == "tool" for e in events) else "text"
