"""The records file: whole lines as they come, a torn tail skipped, one writer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rollouts.drivers.base import RolloutRecord
from rollouts.evaluation.records import (
    RecordFileLocked,
    RecordWriter,
    read_run,
    run_header,
    unique_path,
)


def _rec(i: int, error: dict[str, str] | None = None) -> RolloutRecord:
    return RolloutRecord(
        "core", {"seed": i}, {"events": [i]}, {"total": float(i)}, 0.1, 0.1, 1, 2, i, error
    )


def test_each_record_is_on_disk_at_once_and_a_torn_tail_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path, run_header("core", [], policy="p"))
    writer.write(_rec(0))
    writer.write(_rec(1))
    assert sorted(read_run(path).records) == [0, 1]  # before close: already readable
    writer.close()
    with open(path, "ab") as fh:
        fh.write(b'{"framework": "core", "ta')  # a write cut by a kill
    run = read_run(path)
    assert run.torn and sorted(run.records) == [0, 1]
    assert "skipped a torn last line" in capsys.readouterr().err
    with RecordWriter(path, {}, resume=True) as again:  # resume cuts the torn tail first
        again.write(_rec(2, {"source": "model endpoint"}))
        again.write(_rec(2))
    run = read_run(path)
    assert not run.torn and sorted(run.records) == [0, 1, 2] and run.header is not None
    assert run.records[2].error is None  # the last line of a task wins


def test_a_second_writer_is_refused_even_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RecordWriter(path, {}):
        with pytest.raises(RecordFileLocked, match="another gamebridge process"):
            RecordWriter(path, {}, resume=True)
        code = (
            "import sys\nfrom rollouts.evaluation.records import RecordWriter, RecordFileLocked\n"
            "try:\n    RecordWriter(sys.argv[1], {})\nexcept RecordFileLocked:\n    sys.exit(3)\n"
        )
        assert subprocess.run([sys.executable, "-c", code, str(path)]).returncode == 3
    RecordWriter(path, {}).close()  # free again once the first writer closed


def test_default_names_are_unique_and_made_at_the_start(tmp_path: Path) -> None:
    names = {unique_path(tmp_path, "eval-core-tictactoe") for _ in range(5)}
    assert len(names) == 5 and all(p.exists() for p in names)


def test_a_resumed_file_is_compacted_to_one_line_per_task(tmp_path: Path) -> None:
    """A failure line superseded by its resumed success is dropped when the resumed run
    ends: a raw JSONL reader counts each task once (it counted the failed task twice)."""
    import json

    path = tmp_path / "run.jsonl"
    header = {"framework": "core"}
    with RecordWriter(path, header) as w:
        w.write(_rec(0))
        w.write(_rec(1, {"source": "model endpoint", "type": "ModelError", "message": "x"}))
    with RecordWriter(path, header, resume=True) as w:
        w.write(_rec(1))
        w.write(_rec(2))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert "gamebridge_run" in rows[0]
    assert [r["index"] for r in rows[1:]] == [0, 1, 2]
    assert all(r["error"] is None for r in rows[1:])
    run = read_run(path)
    assert sorted(run.records) == [0, 1, 2] and not run.torn
    assert not list(tmp_path.glob("*.tmp"))
