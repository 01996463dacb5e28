"""The records file of a run: written as it goes, read back whole lines only.

A ``runs/*.jsonl`` file written by ``gamebridge eval``/``compare`` is:

* a first line ``{"gamebridge_run": {...}}``, the run's header: framework, policy or
  model, and a fingerprint of the task list (``--resume`` checks them);
* then one :class:`RolloutRecord` per finished (or failed) episode, each appended
  at once as one whole line and flushed, in the order they finish; each carries its
  task ``index``.

:class:`RecordWriter` holds an exclusive ``fcntl`` lock on the file for the run: a
second process writing the same file is refused (:class:`RecordFileLocked`).
:func:`read_run` reads such a file, skipping a torn last line (a write cut by a
kill) and saying so; when a task has several lines (a failure, then a resumed
success) the last one wins. A resumed run that ends (normally, or stopped by Ctrl-C
or SIGTERM) compacts its file: the superseded lines are dropped, so each task index
has one line and a raw JSONL reader counts each task once (the rewrite goes to a
temporary file first and replaces the file atomically; a run killed before that
leaves the longer file, which the next ``--resume`` compacts).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
>>> with RecordWriter(path, {"framework": "core"}) as w:
...     w.write(RolloutRecord("core", {}, {}, {"total": 1.0}, 0.0, 0.0, 1, 0, index=0))
>>> run = read_run(path)
>>> run.header["framework"], sorted(run.records), run.torn
('core', [0], False)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rollouts.record import RolloutRecord

HEADER_KEY = "gamebridge_run"
FORMAT_VERSION = 1


class RecordFileError(ValueError):
    """A records file cannot be used (locked, not a records file, another run's)."""


class RecordFileLocked(RecordFileError):
    """Another process is writing this records file."""


def tasks_fingerprint(tasks: Sequence[Any]) -> str:
    """sha256 of the task rows (``Task.to_dict()``), in order."""
    rows = [t if isinstance(t, Mapping) else t.to_dict() for t in tasks]
    blob = json.dumps(rows, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def run_header(framework: str, tasks: Sequence[Any], *, policy: str) -> dict[str, Any]:
    """The header of a run: ``policy`` names the model side (the embedded
    server's policy, or ``model@base_url``)."""
    return {
        "version": FORMAT_VERSION,
        "framework": framework,
        "policy": policy,
        "tasks": len(tasks),
        "tasks_sha256": tasks_fingerprint(tasks),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_records(path: str | Path, records: Sequence[RolloutRecord]) -> Path:
    """Records as JSONL, one a line, no header (parents created): a plain file of
    records, as ``gamebridge export`` reads and ``make eval-ray`` compares."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.to_dict()) + "\n")
    return out


def unique_path(directory: str | Path, stem: str, suffix: str = ".jsonl") -> Path:
    """``directory/stem-YYYYmmdd-HHMMSS-PID-N{suffix}``, fixed at the start of a run
    and unique (created exclusively, so two runs started in the same second differ)."""
    base = Path(directory)
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = base / f"{stem}-{stamp}-{os.getpid()}-{n}{suffix}"
        try:
            if suffix:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            else:
                path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RecordFileError(f"no free name for {stem} in {base}")  # pragma: no cover


def check_unlocked(path: str | Path) -> None:
    """Raise :class:`RecordFileLocked` if another process is writing ``path``."""
    p = Path(path)
    if not p.exists():
        return
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RecordFileLocked(f"{p} is being written by another gamebridge process") from None
    finally:
        os.close(fd)


@dataclass
class RunFile:
    """What :func:`read_run` found."""

    path: Path
    header: dict[str, Any] | None
    records: dict[int, RolloutRecord] = field(default_factory=dict)
    """The last record of each task index."""
    unindexed: list[RolloutRecord] = field(default_factory=list)
    """Records without an index (files written before indexes)."""
    torn: bool = False
    """The last line was cut short (and skipped)."""
    good_bytes: int = 0
    """Length of the file up to the end of its last whole line."""

    def ordered(self) -> list[RolloutRecord]:
        """Records by task index, then any unindexed ones in file order."""
        return [self.records[i] for i in sorted(self.records)] + self.unindexed

    def finished(self) -> dict[int, RolloutRecord]:
        """Indexed records of episodes that finished (no failure)."""
        return {i: r for i, r in self.records.items() if r.error is None}


def read_run(path: str | Path, *, warn: bool = True) -> RunFile:
    """Read a records file; a torn last line is skipped (with one line on stderr
    when ``warn``). A bad line elsewhere raises :class:`RecordFileError`."""
    p = Path(path)
    data = p.read_bytes()
    run = RunFile(path=p, header=None)
    pos = 0
    lineno = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        last = end == -1
        chunk = data[pos:] if last else data[pos:end]
        lineno += 1
        nxt = len(data) if last else end + 1
        if not chunk.strip():
            pos = nxt
            if not last:
                run.good_bytes = pos
            continue
        try:
            row = json.loads(chunk)
            if not isinstance(row, dict):
                raise ValueError(f"a line must be a JSON object, not {type(row).__name__}")
            if HEADER_KEY in row:
                if lineno != 1:
                    raise ValueError("a run header after the first line")
                run.header = dict(row[HEADER_KEY])
            else:
                rec = RolloutRecord.from_dict(row)
                if rec.index is None:
                    run.unindexed.append(rec)
                else:
                    run.records[int(rec.index)] = rec
        except (ValueError, TypeError) as e:
            if nxt >= len(data):  # the last line: a write cut by a kill
                run.torn = True
                if warn:
                    print(
                        f"gamebridge: {p}: skipped a torn last line ({len(chunk)} bytes, "
                        "a write cut short)",
                        file=sys.stderr,
                    )
                break
            raise RecordFileError(f"{p}:{lineno}: not a rollout record: {e}") from e
        if last:  # a whole record without its newline: keep it, the writer adds one
            run.good_bytes = len(data)
            break
        pos = nxt
        run.good_bytes = pos
    return run


def compact(path: str | Path) -> int:
    """Drop the lines of ``path`` that a later line of the same task index supersedes
    (the header and the order of the rest kept); the number dropped. Atomic: the new
    file is written and fsync'd beside, then renamed over ``path``. A file with a line
    that does not parse is left as it is."""
    p = Path(path)
    lines = p.read_bytes().splitlines(keepends=True)
    last: dict[int, int] = {}
    for n, line in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError:
            return 0
        if isinstance(row, dict) and isinstance(row.get("index"), int):
            last[row["index"]] = n
    wanted = set(last.values())
    keep = [line for n, line in enumerate(lines) if n in wanted or not _indexed(line)]
    dropped = len(lines) - len(keep)
    if dropped:
        tmp = p.with_name(p.name + ".compact.tmp")
        with open(tmp, "wb") as fh:
            fh.writelines(keep)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    return dropped


def _indexed(line: bytes) -> bool:
    row = json.loads(line)
    return isinstance(row, dict) and isinstance(row.get("index"), int)


class RecordWriter:
    """Append records to ``path`` as they come, one whole line each, flushed;
    fsync'd on :meth:`close`. Thread-safe.

    ``resume=False`` starts the file afresh (header first); ``resume=True``
    appends to an existing run (cutting a torn last line first). The file is
    locked (``fcntl.flock``) until :meth:`close`: another writer gets
    :class:`RecordFileLocked`."""

    def __init__(
        self, path: str | Path, header: Mapping[str, Any], *, resume: bool = False
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RecordFileLocked(
                f"{self.path} is being written by another gamebridge process"
            ) from None
        self._fd: int | None = fd
        self.written = 0
        self._compact = resume
        if resume:
            run = read_run(self.path, warn=False)
            os.ftruncate(fd, run.good_bytes)
            os.lseek(fd, run.good_bytes, os.SEEK_SET)
            if run.good_bytes and not self.path.read_bytes().endswith(b"\n"):
                os.write(fd, b"\n")
        else:
            os.ftruncate(fd, 0)
            self._write_line({HEADER_KEY: dict(header)})

    def _write_line(self, row: Mapping[str, Any]) -> None:
        data = (json.dumps(row) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return  # closed (a late failure after a hard stop): nothing to keep it in
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]

    def write(self, record: RolloutRecord) -> None:
        """Append one record (one line, written through to the OS at once)."""
        self._write_line(record.to_dict())
        self.written += 1

    def close(self) -> None:
        """fsync, compact a resumed file (:func:`compact`), release the lock (idempotent)."""
        with self._lock:
            if self._fd is None:
                return
            try:
                os.fsync(self._fd)
                if self._compact:
                    compact(self.path)  # still under the lock: no writer can come between
            finally:
                os.close(self._fd)  # closing releases the flock
                self._fd = None

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
