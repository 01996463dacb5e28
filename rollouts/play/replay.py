"""Replay a ``runs/*.jsonl`` record (eval, compare, demo) step by step.

Each recorded episode is replayed through ``core.Episode`` from its task and
its replies, frame by frame: the board (``Game.board_view``), the observation
the model read before the turn, its raw reply, what core made of it, the
invalid-move budget left, and at the end the reward breakdown. Whether the
replay reproduces the recorded trajectory exactly is reported too
(``verified``).

Files are read only inside the allowed roots (``gamebridge play --runs DIR``,
default ``runs``): the page names a file, never an arbitrary path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.episode import Episode
from core.games import make_game
from rollouts.play.session import PlayError

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_LISTED = 500


def list_runs(roots: list[Path]) -> list[dict[str, Any]]:
    """The ``*.jsonl`` files under each root, newest first (at most ``MAX_LISTED``)."""
    found = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*.jsonl"):
            if path.is_file() and _looks_like_records(path):
                found.append((path.stat().st_mtime, path))
    found.sort(key=lambda x: (-x[0], str(x[1])))
    return [{"path": str(p), "name": _display(p, roots)} for _, p in found[:MAX_LISTED]]


def _looks_like_records(path: Path) -> bool:
    """Whether the file's first line is a records header or a record (an exported
    dataset, an arena game file or another JSONL is not listed)."""
    import json

    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
        row = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(row, dict) and ("tasks_sha256" in row or "trajectory" in row)


def _display(path: Path, roots: list[Path]) -> str:
    for root in roots:
        try:
            return str(Path(root.name) / path.relative_to(root))
        except ValueError:
            continue
    return str(path)


def resolve(name: str, roots: list[Path]) -> Path:
    """``name`` (absolute, or relative to a root or its parent) as a file inside a root."""
    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise PlayError("name a runs/*.jsonl file")
    raw = Path(name.strip())
    candidates = (
        [raw] if raw.is_absolute() else [r / raw for r in roots] + [r.parent / raw for r in roots]
    )
    for cand in candidates:
        try:
            path = cand.resolve()
        except OSError:
            continue
        if not any(path == r or r in path.parents for r in roots):
            continue
        if path.suffix != ".jsonl":
            raise PlayError(f"{name!r} is not a .jsonl file")
        if path.is_file():
            return path
    where = ", ".join(str(r) for r in roots)
    raise PlayError(
        f"no records file {name!r} inside {where} (start gamebridge play with --runs DIR "
        "to open files elsewhere)",
        status=404,
    )


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The records of a run file (``rollouts.evaluation.records.read_run``: the header line
    skipped, a torn last line skipped), in task order: the order of the report's
    replay, so its links name the same episode."""
    from rollouts.evaluation.records import RecordFileError, read_run

    if path.stat().st_size > MAX_FILE_BYTES:
        raise PlayError(f"{path} is over {MAX_FILE_BYTES} bytes", status=413)
    not_records = PlayError(
        f"{path.name} is not a records file (the JSONL that gamebridge eval, compare or "
        "demo writes)"
    )
    try:
        run = read_run(path, warn=False)
        records = run.ordered()
    except (RecordFileError, ValueError, TypeError, KeyError) as e:
        raise not_records from e
    rows = [r.to_dict() for r in records]
    if not rows:
        if run.header is None:
            raise not_records
        raise PlayError(f"{path.name} holds no finished episode to replay")
    return rows


def label(i: int, row: dict[str, Any]) -> str:
    traj = row.get("trajectory") or {}
    return (
        f"#{i} {row.get('framework', '?')} {traj.get('task_id', '')} "
        f"({traj.get('result')}, {traj.get('termination')})"
    )


def _board(game: Any, state: Any) -> dict[str, Any]:
    """The board view's JSON (a generic one, the text only, for a bridged game)."""
    from rollouts.play.session import board_view

    view, generic = board_view(game, state)
    return {**view.to_dict(), "generic": generic, "other_moves": []}


def frames(trajectory: dict[str, Any]) -> dict[str, Any]:
    """Every frame of one recorded episode, replayed through core."""
    if not isinstance(trajectory, dict) or not trajectory.get("task"):
        raise PlayError("this record has no trajectory to replay (a failed episode?)")
    try:
        task = trajectory["task"]
        events = list(trajectory.get("events") or [])
        episode = Episode(task)
    except (KeyError, TypeError, ValueError) as e:
        raise PlayError(f"the record has no playable task: {e}") from e
    game = make_game(episode.task.game)
    max_invalid = episode.task.max_invalid_moves
    observation = episode.reset()
    out = [
        {
            "turn": 0,
            "board": _board(game, episode.state),
            "board_text": game.render(episode.state),
            "observation": None,
            "reply": None,
            "move": None,
            "error": None,
            "message": None,
            "opponent_moves": list(episode.opponent_first),
            "opening": list(episode.opening),
            "invalid_left": max_invalid,
        }
    ]
    for event in events:
        if episode.done:
            break
        seen = observation
        reply = event.get("reply")
        result = episode.step_move(reply) if event.get("kind") == "tool" else episode.step(reply)
        observation = result.observation
        info = result.info
        out.append(
            {
                "turn": info["turn"],
                "board": _board(game, episode.state),
                "board_text": game.render(episode.state),
                "observation": seen,
                "reply": reply,
                "kind": event.get("kind", "text"),
                "move": info["move"],
                "error": info["error"],
                "message": info["message"],
                "opponent_moves": info["opponent_moves"],
                "invalid_left": max_invalid - info["invalid_moves"],
            }
        )
    if trajectory.get("termination") == "stopped" and not episode.done:
        episode.settle()
    replayed = episode.to_dict()
    return {
        "frames": out,
        "system_prompt": episode.system_prompt,
        "final_observation": observation,
        "result": replayed["result"],
        "termination": replayed["termination"],
        "reward": replayed["reward"],
        "verified": replayed == trajectory,
        "game": {"name": game.spec.name, "title": game.spec.title},
        "model_player": episode.task.model_player,
    }
