"""Statistics over rollout records, and the trajectory identity check.

``summarize(records)`` gives a :class:`Summary`: win/draw/loss counts with 95%
Wilson intervals, the mean of each reward component, invalid-reply and
format-failure rates (per reply), turns, tokens, throughput and the
environment + framework time per step, plus the same broken down by the
difficulty bucket of ``random_move_prob``. The counting, the intervals and the
buckets are :mod:`core.stats`'s; this module gathers them per record set and
formats them.

``check_identity(by_framework, references)`` compares trajectories across
frameworks task by task and names the first divergent task and step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from core.stats import (
    DEFAULT_BUCKETS,
    RESULTS,
    Rate,
    ReplyCounts,
    ResultCounts,
    by_difficulty,
    share,
)
from rollouts.record import RolloutRecord, trajectory_mode


@dataclass(frozen=True)
class Summary:
    """Aggregate statistics of a set of records (one framework, one game)."""

    episodes: int
    results: dict[str, Rate]
    reward_mean: float
    components: dict[str, float]
    replies: int
    invalid_rate: float
    """Share of replies rejected for any reason (format, not a move, illegal)."""
    format_error_rate: float
    """Share of replies that broke the ``<move>`` format."""
    illegal_rate: float
    mean_turns: float
    mean_tokens: float
    total_tokens: int
    wall_seconds: float
    episodes_per_second: float
    env_ms_per_step: float
    """Environment + framework time per model reply, in milliseconds."""
    terminations: dict[str, int]
    by_difficulty: dict[str, Summary] = field(default_factory=dict)
    failed: int = 0
    """Tasks that did not finish (the model endpoint, an environment server or the
    framework failed): counted apart, never as lost games. ``episodes`` and every
    rate above are over finished episodes only."""
    failed_by_source: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["by_difficulty"] = {k: v.to_dict() for k, v in self.by_difficulty.items()}
        return data


def _mean(values: Sequence[float]) -> float:
    return share(sum(values), len(values))


def _as_record(r: RolloutRecord | Mapping[str, Any]) -> RolloutRecord:
    return r if isinstance(r, RolloutRecord) else RolloutRecord.from_dict(dict(r))


def _all_one_player(records: Sequence[RolloutRecord]) -> bool:
    """True when every record is of a one-player game (no opponent, so no
    difficulty from ``random_move_prob``)."""
    from core.games import make_game

    try:
        return all(make_game(str(r.task.get("game"))).spec.num_players == 1 for r in records)
    except KeyError:  # an unknown game: keep the breakdown
        return False


def summarize(
    records: Iterable[RolloutRecord | Mapping[str, Any]],
    *,
    elapsed: float | None = None,
    buckets: Sequence[float] | None = DEFAULT_BUCKETS,
) -> Summary:
    """Statistics of ``records``. ``elapsed``: the run's wall time (for
    episodes/s with concurrency); default the sum of episode wall times.
    ``buckets=None`` skips the difficulty breakdown (so do one-player games,
    which have no opponent)."""
    everything = [_as_record(r) for r in records]
    recs = [r for r in everything if r.error is None]
    failures = [r for r in everything if r.error is not None]
    failed_by_source: dict[str, int] = {}
    for r in failures:
        src = str((r.error or {}).get("source", "framework"))
        failed_by_source[src] = failed_by_source.get(src, 0) + 1
    n = len(recs)
    games = ResultCounts.of(r.trajectory for r in recs)
    replies = ReplyCounts.of(e for r in recs for e in r.trajectory.get("events", []))
    terminations: dict[str, int] = {}
    component_values: dict[str, list[float]] = {}
    for rec in recs:
        term = str(rec.trajectory.get("termination"))
        terminations[term] = terminations.get(term, 0) + 1
        for name, value in (rec.reward.get("components") or {}).items():
            component_values.setdefault(name, []).append(float(value))
    wall = sum(r.wall_seconds for r in recs)
    run_time = elapsed if elapsed is not None else wall
    steps = sum(r.steps for r in recs)
    breakdown: dict[str, Summary] = {}
    if buckets is not None and n and not _all_one_player(recs):
        groups = by_difficulty(recs, lambda r: r.task, buckets)
        breakdown = {k: summarize(v, buckets=None) for k, v in groups.items()}
    return Summary(
        episodes=n,
        results={k: Rate.of(games.count(k), n) for k in RESULTS},
        reward_mean=_mean([float(r.reward.get("total", 0.0)) for r in recs]),
        components={k: _mean(v) for k, v in sorted(component_values.items())},
        replies=replies.replies,
        invalid_rate=replies.invalid_rate,
        format_error_rate=replies.format_error_rate,
        illegal_rate=replies.illegal_rate,
        mean_turns=_mean([float(r.steps) for r in recs]),
        mean_tokens=_mean([float(r.completion_tokens) for r in recs]),
        total_tokens=sum(r.completion_tokens for r in recs),
        wall_seconds=run_time,
        episodes_per_second=n / run_time if run_time > 0 else 0.0,
        env_ms_per_step=1000.0 * sum(r.env_seconds for r in recs) / steps if steps else 0.0,
        terminations=dict(sorted(terminations.items())),
        by_difficulty=breakdown,
        failed=len(failures),
        failed_by_source=dict(sorted(failed_by_source.items())),
    )


# --- text tables ----------------------------------------------------------------


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False))
    out = [line, "  ".join("-" * w for w in widths)]
    for row in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)))
    return "\n".join(out)


def summary_rows(summaries: Mapping[str, Summary]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the side-by-side table (one column per summary)."""
    names = list(summaries)
    comps = sorted({c for s in summaries.values() for c in s.components})
    metrics: list[tuple[str, Any]] = [
        ("episodes", lambda s: str(s.episodes)),
        ("failed tasks", lambda s: str(s.failed)),
        *[(f"{r} rate [95% CI]", lambda s, r=r: str(s.results[r])) for r in RESULTS],
        ("reward (mean)", lambda s: f"{s.reward_mean:.3f}"),
        *[(f"  {c}", lambda s, c=c: f"{s.components.get(c, float('nan')):.3f}") for c in comps],
        ("invalid replies", lambda s: f"{s.invalid_rate:.3f}"),
        ("format failures", lambda s: f"{s.format_error_rate:.3f}"),
        ("illegal moves", lambda s: f"{s.illegal_rate:.3f}"),
        ("turns (mean)", lambda s: f"{s.mean_turns:.2f}"),
        ("tokens (mean)", lambda s: f"{s.mean_tokens:.1f}"),
        ("episodes/s", lambda s: f"{s.episodes_per_second:.2f}"),
        ("env+fw ms/step", lambda s: f"{s.env_ms_per_step:.2f}"),
    ]
    rows = [[label, *[fn(summaries[n]) for n in names]] for label, fn in metrics]
    return ["metric", *names], rows


def format_summary(summary: Summary, title: str = "") -> str:
    """A printable summary with its difficulty breakdown."""
    header, rows = summary_rows({"all": summary, **summary.by_difficulty})
    header = ["metric", "all", *[f"rmp {k}" for k in summary.by_difficulty]]
    text = _table(header, rows)
    terms = ", ".join(f"{k}: {v}" for k, v in summary.terminations.items())
    parts = [title] if title else []
    parts += [text, f"terminations: {terms}"]
    if summary.failed:
        why = ", ".join(f"{k}: {v}" for k, v in summary.failed_by_source.items())
        parts.append(f"failed tasks: {summary.failed} ({why}); not counted as games")
    return "\n".join(parts)


def format_comparison(summaries: Mapping[str, Summary]) -> str:
    """The side-by-side table of several frameworks' summaries."""
    header, rows = summary_rows(summaries)
    return _table(header, rows)


# --- identity across frameworks --------------------------------------------------

TOOL_NEUTRAL_EVENT_KEYS = ("turn", "move", "error", "opponent_moves", "board", "invalid_moves")
"""Event fields compared when one side replied by text and the other by tool call."""


@dataclass(frozen=True)
class Divergence:
    """Where a framework's trajectory first differs from the reference's."""

    framework: str
    reference: str
    task_index: int
    task_id: str
    step: int | None
    """1-based model reply (event) where they part, or ``None`` for a field
    outside the events."""
    field: str
    expected: Any
    got: Any

    def describe(self) -> str:
        where = f"step {self.step}" if self.step is not None else "trajectory"
        return (
            f"{self.framework} diverges from {self.reference} on task #{self.task_index} "
            f"({self.task_id}) at {where}, field {self.field!r}: expected "
            f"{_short(self.expected)}, got {_short(self.got)}"
        )


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_difference(
    expected: Mapping[str, Any], got: Mapping[str, Any]
) -> tuple[int | None, str, Any, Any] | None:
    """``(step, field, expected, got)`` of the first difference between two
    trajectories, or ``None`` if they are the same. Events are compared first,
    in order; when one event is a text reply and the other a tool call, only
    :data:`TOOL_NEUTRAL_EVENT_KEYS` are compared for it (and the system prompt,
    which names the tool, is skipped)."""
    e_events = list(expected.get("events") or [])
    g_events = list(got.get("events") or [])
    mixed = False
    for i, (a, b) in enumerate(zip(e_events, g_events, strict=False)):
        if a.get("kind") != b.get("kind"):
            mixed = True
            keys: Iterable[str] = TOOL_NEUTRAL_EVENT_KEYS
        else:
            keys = sorted(set(a) | set(b))
        for key in keys:
            if a.get(key) != b.get(key):
                return (i + 1, key, a.get(key), b.get(key))
    if len(e_events) != len(g_events):
        step = min(len(e_events), len(g_events)) + 1
        return (step, "events (count)", len(e_events), len(g_events))
    skip = {"events"} | ({"system_prompt"} if mixed else set())
    for key in sorted((set(expected) | set(got)) - skip):
        if expected.get(key) != got.get(key):
            return (None, key, expected.get(key), got.get(key))
    return None


def check_identity(
    by_framework: Mapping[str, Sequence[RolloutRecord]],
    references: Mapping[str, Sequence[RolloutRecord]] | None = None,
    *,
    reference: str | None = None,
) -> list[Divergence]:
    """Every framework's trajectories and rewards against a reference run.

    ``references`` maps a mode (``"text"``, ``"tools"``, see
    :func:`trajectory_mode`) to reference records for the same tasks; a
    framework is checked against the reference of its own mode (a tool-calling
    framework against core driven with tools). When ``references`` is ``None``
    the first framework (or ``reference``) is the reference for every mode.
    Returns one :class:`Divergence` per framework that differs (its first
    difference), in framework order.
    """
    names = list(by_framework)
    if not names:
        return []
    if references is None:
        ref_records = by_framework[reference or names[0]]
        references = {"text": ref_records, "tools": ref_records}
    out = []
    for name in names:
        div = _first_divergence(name, by_framework[name], references)
        if div is not None:
            out.append(div)
    return out


def _by_index(records: Sequence[RolloutRecord]) -> dict[int, RolloutRecord]:
    """Records keyed by task index (their position when they carry none)."""
    return {(r.index if r.index is not None else i): r for i, r in enumerate(records)}


def _first_divergence(
    name: str,
    records: Sequence[RolloutRecord],
    references: Mapping[str, Sequence[RolloutRecord]],
) -> Divergence | None:
    """Failed tasks are skipped (they are reported as failures, not divergences)."""
    modes = {trajectory_mode(r.trajectory) for r in records if r.error is None} or {"text"}
    ref_maps = {mode: _by_index(refs) for mode, refs in references.items()}
    own = _by_index(records)
    for i in sorted(own):
        rec = own[i]
        if rec.error is not None:
            continue
        mode = trajectory_mode(rec.trajectory)
        task_id = str(rec.trajectory.get("task_id"))
        refs = references.get(mode)
        if refs is None:
            return Divergence(
                name, "?", i, task_id, None, "mode", f"one of {sorted(references)}", mode
            )
        if refs is records:
            return None  # the reference itself
        label = f"{refs[0].framework}[{mode}]" if refs else f"?[{mode}]"
        ref = ref_maps[mode].get(i)
        if ref is None:
            return Divergence(name, label, i, task_id, None, "task count", len(refs), len(records))
        if ref.task != rec.task:
            return Divergence(
                name, label, i, str(ref.trajectory.get("task_id")), None, "task", ref.task, rec.task
            )
        diff = first_difference(ref.trajectory, rec.trajectory)
        if diff is None and ref.reward != rec.reward:
            diff = (None, "reward", ref.reward, rec.reward)
        if diff is not None:
            step, key, a, b = diff
            return Divergence(name, label, i, str(ref.trajectory.get("task_id")), step, key, a, b)
    refs = references.get(min(modes))
    if refs is not None and refs is not records:
        missing = sorted(set(ref_maps[min(modes)]) - set(own))
        if missing:
            ref = ref_maps[min(modes)][missing[0]]
            return Divergence(
                name,
                refs[0].framework,
                missing[0],
                str(ref.trajectory.get("task_id")),
                None,
                "task count",
                len(refs),
                len(records),
            )
    return None
