"""Rollout records -> a supervised fine-tuning dataset in chat format.

Each kept episode becomes one row whose ``messages`` are exactly what the
model saw and said: the conversation is rebuilt by replaying the recorded
replies through ``core.Episode`` (``reset``/``step``/``step_move``), so every
word comes from core and the replayed trajectory is checked against the
recorded one. Text replies become assistant messages; tool replies become
assistant ``tool_calls`` to ``make_move`` answered by ``tool`` messages.

Written as a Hugging Face ``datasets`` folder (``save_to_disk``; read it with
``datasets.load_from_disk(DIR)``) plus ``DIR/data.jsonl`` with the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rollouts.drivers.base import RolloutRecord

KEEP_CHOICES = {"wins": "win", "draws": "draw", "losses": "loss"}


class ExportError(ValueError):
    """A record cannot be exported (e.g. its trajectory does not replay)."""


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
    """The chat messages of one recorded episode, rebuilt through core."""
    from core.episode import Episode

    events = list(trajectory.get("events") or [])
    tools = any(e.get("kind") == "tool" for e in events)
    episode = Episode(trajectory["task"])
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": episode.tool_system_prompt if tools else episode.system_prompt,
        },
        {"role": "user", "content": episode.reset()},
    ]
    for i, event in enumerate(events):
        if episode.done:
            raise ExportError(f"{trajectory.get('task_id')}: episode ended before event {i + 1}")
        reply = event["reply"]
        if event.get("kind") == "tool":
            call_id = f"call_{i + 1}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": "make_move",
                                "arguments": json.dumps({"move": reply}),
                            },
                        }
                    ],
                }
            )
            result = episode.step_move(reply)
            if not result.done:
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": result.observation}
                )
        else:
            messages.append({"role": "assistant", "content": reply})
            result = episode.step(reply)
            if not result.done:
                messages.append({"role": "user", "content": result.observation})
    replayed = episode.to_dict()
    if replayed.get("events") != events or replayed.get("result") != trajectory.get("result"):
        raise ExportError(
            f"{trajectory.get('task_id')}: the trajectory does not replay "
            "identically through core.Episode"
        )
    return messages


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
    arguments as objects."""
    out = []
    for m in messages:
        calls = None
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    args = json.loads(args) if args.strip() else {}
                calls.append(
                    {"type": "function", "function": {"name": fn.get("name"), "arguments": args}}
                )
        out.append({"role": m["role"], "content": m.get("content") or "", "tool_calls": calls})
    return out


def chat_row(
    messages: Sequence[Mapping[str, Any]], *, game: str, trajectory: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One training row: ``messages`` (normalised) and, for tool-mode games,
    ``tools`` (JSON text) and, given the ``trajectory``, the closing turn."""
    from core.episode import Episode
    from core.games import make_game
    from core.prompts import tool_schema

    msgs = normalize_messages(messages)
    row: dict[str, Any] = {"messages": msgs}
    if any(m["tool_calls"] for m in msgs):
        row["tools"] = json.dumps([tool_schema(make_game(game))])
        if trajectory is not None and trajectory.get("done"):
            final = Episode.from_trajectory(trajectory).observation
            msgs += [
                {"role": "tool", "content": final, "tool_calls": None},
                {"role": "assistant", "content": "", "tool_calls": None},
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


def write_records(path: str | Path, records: Sequence[RolloutRecord]) -> Path:
    """Records as JSONL (parents created)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.to_dict()) + "\n")
    return out


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
