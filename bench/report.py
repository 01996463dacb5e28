"""Rows, statistics, the results table, the machine description, and the
generated section of docs/performance.md."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollouts.markers import replace_between, section_body

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- bench:begin (written by `make bench`; edits between these markers are lost) -->"
END = "<!-- bench:end -->"
COMMAND = "make bench"


class MismatchError(RuntimeError):
    """The two sides of a comparison did not do the same work (a count, the
    games played or a search value differ): its timing would mean nothing."""


@dataclass(frozen=True)
class Target:
    """A goal for one row: ``measured >= value`` (``at_least``) or ``<= value``."""

    value: float
    at_least: bool = True

    def met(self, measured: float) -> bool:
        return measured >= self.value if self.at_least else measured <= self.value

    def text(self, unit: str) -> str:
        return f"{'≥' if self.at_least else '≤'} {_fmt(self.value, unit)}"


@dataclass(frozen=True)
class Row:
    """One line of the table.

    ``values`` are the per-run measurements of the judged quantity (a ratio
    ``reference time / our time`` for ``unit == "x"``, an overhead in percent,
    a time in ms or µs); the table shows their median and min-max.
    """

    section: str
    name: str
    ours: str
    """Our figure in words (e.g. ``"1.52 M leaves/s"``)."""
    reference: str
    """The reference figure (OpenSpiel, or the bare Episode); ``""`` if none."""
    values: tuple[float, ...]
    unit: str
    target: Target | None = None
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def status(self) -> str:
        if self.target is None:
            return "—"
        return "met" if self.target.met(self.median) else "MISSED"

    def cells(self) -> list[str]:
        spread = (
            f"{_fmt(min(self.values), self.unit)} – {_fmt(max(self.values), self.unit)}"
            if len(self.values) > 1
            else "one run"
        )
        return [
            self.name,
            self.ours,
            self.reference or "—",
            _fmt(self.median, self.unit),
            spread,
            self.target.text(self.unit) if self.target else "—",
            self.status,
            self.note,
        ]


HEADERS = [
    "benchmark",
    "gamebridge",
    "reference",
    "measured",
    "min – max",
    "target",
    "status",
    "notes",
]


def _fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "share %":  # a share, not an overhead: no sign, two decimals
        return f"{value:.2f}%"
    if unit == "%":
        return f"{value:+.1f}%"
    if unit in ("ms", "µs"):
        return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{value:g} {unit}"


def rate(count: float, seconds: float, what: str) -> str:
    """``"1.52 M leaves/s"`` style."""
    per = count / seconds if seconds > 0 else float("inf")
    if per >= 1e6:
        return f"{per / 1e6:.2f} M {what}/s"
    if per >= 1e3:
        return f"{per / 1e3:.1f} k {what}/s"
    return f"{per:.0f} {what}/s"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def cpu_seconds(fn: Callable[[], object]) -> tuple[float, object]:
    """CPU time of one call (``time.process_time``: on a shared machine another
    process's load does not count, only ours)."""
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    section = None
    for row in rows:
        if row.section != section:
            section = row.section
            lines.append(f"| **{section}** |" + " |" * (len(HEADERS) - 1))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
    return "\n".join(lines)


def text_table(rows: Sequence[Row]) -> str:
    """The table for the terminal (aligned columns, no Markdown)."""
    body = [HEADERS] + [row.cells() for row in rows]
    widths = [max(len(r[i]) for r in body) for i in range(len(HEADERS))]
    out = []
    section = None
    for i, cells in enumerate(body):
        if i and rows[i - 1].section != section:
            section = rows[i - 1].section
            out.append(f"-- {section}")
        out.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(out)


# --- the machine -------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _venv_version(venv: str, dist: str) -> str:
    """``dist``'s version in the framework's own virtual environment."""
    python = ROOT / venv / "bin" / "python"
    if not python.exists():
        return f"not installed ({venv} missing)"
    probe = (
        "import importlib.metadata as m, sys; "
        f"print(m.version({dist!r}), '%d.%d' % sys.version_info[:2])"
    )
    try:
        out = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=True
        )
        version, py = out.stdout.split()
    except (OSError, subprocess.SubprocessError, ValueError):
        return "unknown"
    return f"{version} ({venv}, Python {py})"


def framework_versions() -> dict[str, str]:
    """Each framework's distribution and its version where it is installed (the
    framework manifest, ``rollouts.frameworks``)."""
    from rollouts.frameworks import FRAMEWORKS

    return {
        f.distribution: _version(f.distribution)
        if f.venv == ".venv"
        else _venv_version(f.venv, f.distribution)
        for f in FRAMEWORKS.values()
        if f.distribution
    }


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip()


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    return {
        "gamebridge commit": _commit(),
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "Python": platform.python_version(),
        "OS": f"{platform.system()} {platform.release()}",
        "open-spiel (pyspiel)": _version("open-spiel"),
        **framework_versions(),
    }


def generated_section(
    begin: str,
    end: str,
    *,
    date: str,
    command: str,
    skip: str,
    info: dict[str, str],
    legend: str,
    rows: Sequence[Row],
    missed: Sequence[str],
    notes: Sequence[str],
) -> str:
    """A generated part of docs/performance.md (``make bench``'s, ``bench.servers``'):
    the command that measured it (``skip``: why the docs test does not run it), the
    machine, the ``legend`` that says how to read the table, the table, the verdict
    (``missed``: the rows that missed their target) and the notes, between the markers."""
    machine_lines = "\n".join(f"| {k} | {v} |" for k, v in info.items())
    verdict = "Every target is met." if not missed else "Missed: " + "; ".join(missed) + "."
    note_lines = "\n".join(f"* {n}" for n in notes)
    return f"""{begin}

Measured {date} with:

<!-- docs-test: skip ({skip}) -->
```bash
{command}
```

| machine | |
|---|---|
{machine_lines}

{legend}

{markdown_table(rows)}

{verdict}

{note_lines}

{end}"""


def section_text(
    rows: Sequence[Row],
    info: dict[str, str],
    notes: Sequence[str],
    command: str,
    date: str,
) -> str:
    """The generated part of docs/performance.md (between the markers)."""
    return generated_section(
        BEGIN,
        END,
        date=date,
        command=command,
        skip="the full benchmark runs for minutes",
        info=info,
        legend="""*gamebridge* and *reference* are medians: the reference is OpenSpiel for the
engine rows and the bare `Episode` for the adapter rows. *measured* is the median over
the runs of the judged quantity (OpenSpiel's time over ours; an adapter's extra time
in percent; a time), *min – max* its range over the runs.""",
        rows=rows,
        missed=[
            f"{r.section}: {r.name} ({_fmt(r.median, r.unit)})"
            for r in rows
            if r.status == "MISSED"
        ],
        notes=notes,
    )


def write_doc(path: Path, section: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the text between the markers (``begin``, ``end``) of ``path`` (appending
    it, with the markers, when the file has none; creating the file when missing)."""
    text = path.read_text() if path.exists() else "# Performance\n"
    body = section_body(section, begin, end)
    new = replace_between(text, begin, end, body)
    path.write_text(text.rstrip("\n") + "\n\n" + section + "\n" if new is None else new)
