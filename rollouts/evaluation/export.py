"""Rollout records -> a supervised fine-tuning dataset in chat format.

Each kept episode becomes one row whose ``messages`` are exactly what the
model saw and said: ``core.conversation`` reads them off the trajectory (each
event records the observation its reply answered), so every word comes from
core and nothing is replayed. Text replies become assistant messages; tool
replies become assistant ``tool_calls`` to ``make_move`` answered by ``tool``
messages.

Written as a Hugging Face ``datasets`` folder (``save_to_disk``; read it with
``datasets.load_from_disk(DIR)``) plus ``DIR/data.jsonl`` with the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rollouts.evaluation.records import write_records  # noqa: F401 (its home: the records file)
from rollouts.record import RolloutRecord

KEEP_CHOICES = {"wins": "win", "draws": "draw", "losses": "loss"}


class ExportError(ValueError):
    """A record cannot be exported (e.g. its trajectory records no observations)."""


def parse_keep(text: str) -> set[str]:
    """``"wins,draws"`` -> ``{"win", "draw"}`` (``"all"`` keeps everything).

    >>> sorted(parse_keep("wins,draws"))
    ['draw', 'win']
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts == ["all"]:
        return set(KEEP_CHOICES.values())
    out = set()
    for p in parts:
        if p not in KEEP_CHOICES:
            raise ValueError(f"--keep takes {', '.join(KEEP_CHOICES)} or all, not {p!r}")
        out.add(KEEP_CHOICES[p])
    if not out:
        raise ValueError("--keep is empty")
    return out


def conversation(trajectory: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chat messages of one recorded episode (``core.conversation.messages``:
    every word from the record, nothing replayed)."""
    from core.conversation import ConversationError, messages

    try:
        return messages(trajectory)
    except ConversationError as e:
        raise ExportError(str(e)) from e


def export_rows(records: Iterable[RolloutRecord], keep: set[str]) -> list[dict[str, Any]]:
    """One SFT row per kept record: ``messages`` plus identifying columns."""
    rows = []
    for rec in records:
        traj = rec.trajectory
        if traj.get("result") not in keep:
            continue
        rows.append(
            {
                "messages": conversation(traj),
                "task_id": str(traj.get("task_id")),
                "game": str(traj.get("game")),
                "framework": rec.framework,
                "result": str(traj.get("result")),
                "reward": float(rec.reward.get("total", 0.0)),
            }
        )
    return rows


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages with one schema (role, content, tool_calls) and tool-call
    arguments as objects (``core.conversation.as_turns``)."""
    from core.conversation import as_turns

    return as_turns(messages)


def chat_row(
    messages: Sequence[Mapping[str, Any]], *, game: str, trajectory: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One training row: ``messages`` (normalised) and, for tool-mode games,
    ``tools`` (JSON text) and, given the ``trajectory``, the closing turn (the
    final observation it records, and an empty assistant turn)."""
    from core.conversation import ASSISTANT, TOOL_ROLE, final_observation
    from core.games import make_game
    from core.prompts import tool_schema

    msgs = normalize_messages(messages)
    row: dict[str, Any] = {"messages": msgs}
    if any(m["tool_calls"] for m in msgs):
        row["tools"] = json.dumps([tool_schema(make_game(game))])
        if trajectory is not None and trajectory.get("done"):
            msgs += [
                {"role": TOOL_ROLE, "content": final_observation(trajectory), "tool_calls": None},
                {"role": ASSISTANT, "content": "", "tool_calls": None},
            ]
    return row


def read_records(path: str | Path) -> list[RolloutRecord]:
    """Records from a JSONL file written by ``gamebridge eval``/``compare``: the
    last record of each task, by task index (``rollouts.evaluation.records.read_run``; a torn
    last line is skipped, with a warning)."""
    from rollouts.evaluation.records import RecordFileError, read_run

    try:
        return read_run(path).ordered()
    except RecordFileError as e:
        raise ExportError(str(e)) from e


def _arrow_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with one message schema for Arrow: every message has role,
    content, tool_calls (possibly None) and tool_call_id (possibly None)."""
    out = []
    for row in rows:
        msgs = [
            {
                "role": m["role"],
                "content": m.get("content", ""),
                "tool_calls": m.get("tool_calls"),
                "tool_call_id": m.get("tool_call_id"),
            }
            for m in row["messages"]
        ]
        out.append({**row, "messages": msgs})
    return out


def export_dataset(
    records: Sequence[RolloutRecord], out_dir: str | Path, keep: set[str]
) -> tuple[Path, int, bool]:
    """Write ``out_dir/data.jsonl`` and (when ``datasets`` is installed) a
    ``save_to_disk`` dataset in ``out_dir``. Returns (dir, rows, saved_hf)."""
    rows = export_rows(records, keep)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = False
    try:
        import datasets
    except ImportError:
        pass
    else:
        if rows:
            ds = datasets.Dataset.from_list(_arrow_rows(rows))
        else:
            ds = datasets.Dataset.from_dict(
                {k: [] for k in ("messages", "task_id", "game", "framework", "result", "reward")}
            )
        ds.save_to_disk(str(out))  # datasets.load_from_disk(out) reads it back
        saved = True
    with open(out / "data.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return out, len(rows), saved
