"""``make frameworks-latest``: each framework's newest release, in a scratch venv of
its own, against the project's tests for it; a table of pinned and newest versions
with the outcome, written into docs/frameworks.md.

For each row below: ask the package index (``pip index versions``, from the
interpreter the row needs, so a release whose ``Requires-Python`` excludes it is
not offered) for each package's newest version, and the index's newest for any
Python (``--python-version 3.14``). Where every package's newest equals the pin,
the row is the project's own venv, which ``make test`` runs (``--all`` builds it
anyway). Otherwise a venv is built under ``.frameworks-latest/<row>`` with
``-e .[rollouts,openspiel]`` and the newest versions, and the row's test files
plus the conformance suite's rows for its drivers run there
(``pytest <files> tests/conformance -k <drivers>``): the same trajectories and
rewards as core, event by event. Not part of ``make test`` (minutes per row).

    python docs/tools/frameworks_latest.py              # build what differs, write the table
    python docs/tools/frameworks_latest.py --all        # build every row
    python docs/tools/frameworks_latest.py --only trl   # one row (the table keeps the others)
    python docs/tools/frameworks_latest.py --no-doc     # print only
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "frameworks.md"
RESULTS = ROOT / "runs" / "frameworks-latest" / "results.json"
VENVS = ROOT / ".frameworks-latest"
BEGIN = "<!-- frameworks-latest:begin (written by `make frameworks-latest`; edits between these markers are lost) -->"
END = "<!-- frameworks-latest:end -->"
TEST_TOOLS = ["pytest", "pytest-timeout", "hypothesis"]


@dataclass(frozen=True)
class Row:
    """One framework: the extra holding its pins, the packages whose newest release
    is tried, the Python it needs, its test files and its conformance drivers."""

    name: str
    extra: str
    packages: tuple[str, ...]
    python: str
    tests: tuple[str, ...]
    drivers: tuple[str, ...]
    also: tuple[str, ...] = field(default=())
    """Installed at their pins beside the newest packages (torch's local CPU wheel)."""
    no_scratch: str = ""
    """Why the row is never built in a scratch venv (its newest versions are still read)."""


ROWS = (
    Row("verifiers", "verifiers", ("verifiers",), "3.11", ("tests/adapters/test_verifiers.py",), ("verifiers",)),
    Row("openenv", "openenv", ("openenv",), "3.11", ("tests/adapters/test_openenv.py", "tests/adapters/test_openenv_idioms.py"), ("openenv", "openenv_tools")),
    Row("nemo", "nemo", ("nemo-gym",), "3.12", (), (), no_scratch="its drivers run from .venv and start .venv-nemo's servers"),
    Row("skyrl", "skyrl", ("skyrl-gym",), "3.11", ("tests/adapters/test_skyrl_gym.py",), ("skyrl_gym",)),
    Row("gem", "gem", ("gem-llm",), "3.11", ("tests/adapters/test_gem.py",), ("gem",)),
    Row("ors", "ors", ("openreward",), "3.11", ("tests/adapters/ors_inprocess.py",), ("ors",)),
    Row("trl", "trl", ("trl", "transformers"), "3.11", (), ("trl",), also=("torch",)),
)  # fmt: skip


def pins(extra: str) -> dict[str, str]:
    """``{package: version}`` of an extra's exact pins in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {}
    for req in project["optional-dependencies"][extra]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", req.strip())
        if m:
            found[m.group(1)] = m.group(2)
    return found


def find_python(version: str) -> str | None:
    done = subprocess.run(
        [str(ROOT / ".ci" / "find-python"), version], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None


def newest(python: str, package: str, *, any_python: bool = False) -> str | None:
    """The index's newest release of ``package`` that ``python`` can install (or, with
    ``any_python``, for Python 3.14: whatever its ``Requires-Python``)."""
    argv = [python, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
    if any_python:
        argv += ["--python-version", "3.14", "--only-binary=:all:"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    m = re.search(rf"^{re.escape(package)} \(([^)]+)\)", done.stdout, re.MULTILINE | re.IGNORECASE)
    return m.group(1) if m else None


def run(argv: list[str], log: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=timeout
    )
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}\n")
    return done


def counts(text: str) -> dict[str, int]:
    """pytest's summary line as ``{"passed": n, "failed": n, ...}``."""
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", text)}


def check(row: Row, build_all: bool, logs: Path) -> dict[str, object]:
    """Versions of ``row`` and, where a newest release differs or ``build_all``, its
    tests' outcome in a scratch venv."""
    pinned = pins(row.extra)
    python = find_python(row.python)
    result: dict[str, object] = {"row": row.name, "python": row.python, "pinned": pinned}
    if python is None:
        return {**result, "outcome": f"not run: no Python {row.python} here"}
    latest = {p: newest(python, p) for p in row.packages}
    anywhere = {p: newest(python, p, any_python=True) for p in row.packages}
    result |= {"newest": latest, "newest_any_python": anywhere}
    unreachable = {p: v for p, v in anywhere.items() if v and v != latest.get(p)}
    note = "; ".join(
        f"{p} {v} needs a newer Python than {row.python} (not installable here)"
        for p, v in unreachable.items()
    )
    if any(v is None for v in latest.values()):
        return {**result, "outcome": f"not run: the index offers no {row.packages} here"}
    same = all(latest[p] == pinned.get(p) for p in row.packages)
    if row.no_scratch:
        outcome = f"not built ({row.no_scratch}); " + (
            "newest = pinned: `make test` runs it" if same else "NEWER than pinned"
        )
        return {**result, "outcome": f"{outcome}; {note}" if note else outcome}
    if same and not build_all:
        outcome = "newest = pinned: `make test` runs it"
        return {**result, "outcome": f"{outcome}; {note}" if note else outcome}
    venv = VENVS / row.name
    log = logs / f"{row.name}.log"
    log.unlink(missing_ok=True)
    t0 = time.perf_counter()
    if venv.exists():
        shutil.rmtree(venv)
    run([python, "-m", "venv", str(venv)], log, 300)
    py = str(venv / "bin" / "python")
    wanted = [f"{p}=={v}" for p, v in latest.items()]
    wanted += [f"{p}=={pinned[p]}" for p in row.also if p in pinned]
    install = run(
        [py, "-m", "pip", "install", "--disable-pip-version-check", "-e", ".[rollouts,openspiel]",
         *wanted, *TEST_TOOLS],
        log,
        1800,
    )  # fmt: skip
    if install.returncode != 0:
        lines = [ln for ln in install.stderr.splitlines() if "ERROR" in ln]
        return {**result, "outcome": f"install failed: {lines[-1] if lines else 'see ' + str(log)}"}
    k = " or ".join(row.drivers)
    test = run(
        [py, "-m", "pytest", *row.tests, "tests/conformance", "-k", k,
         "-o", "addopts=--strict-markers", "-q", "-p", "no:cacheprovider"],
        log,
        3600,
    )  # fmt: skip
    n = counts(test.stdout[-3000:])
    seconds = round(time.perf_counter() - t0)
    ok = test.returncode == 0 and not n.get("failed") and n.get("passed")
    summary = ", ".join(f"{v} {k}" for k, v in n.items()) or "no tests ran"
    outcome = f"{'pass' if ok else 'FAIL'} ({summary}; {seconds}s with the install)"
    return {**result, "outcome": f"{outcome}; {note}" if note else outcome, "ok": bool(ok)}


def table(results: list[dict[str, object]]) -> str:
    lines = [
        BEGIN,
        "",
        f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `make frameworks-latest`.",
        "",
        "| framework | Python | pinned | newest installable here | newest on the index (any Python; - none with wheels) | outcome |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        pinned = r.get("pinned") or {}
        newest_here = r.get("newest") or {}
        newest_any = r.get("newest_any_python") or {}
        assert isinstance(pinned, dict) and isinstance(newest_here, dict)
        assert isinstance(newest_any, dict)
        names = list(newest_here) or list(pinned)

        def cell(versions: dict[str, object], names: list[str] = names) -> str:
            return ", ".join(f"{p} {versions.get(p) or '-'}" for p in names)

        lines.append(
            f"| {r['row']} | {r['python']} | {cell(pinned)} | {cell(newest_here)} "
            f"| {cell(newest_any)} | {r['outcome']} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def write_page(text: str) -> None:
    spec = importlib.util.spec_from_file_location("_markers", ROOT / "rollouts" / "markers.py")
    assert spec is not None and spec.loader is not None
    markers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(markers)  # the one marker splice (a standard-library leaf)
    page = markers.replace_between(
        PAGE.read_text(encoding="utf-8"), BEGIN, END, markers.section_body(text, BEGIN, END)
    )
    if page is None:
        raise SystemExit(f"{PAGE} has no frameworks-latest markers")
    PAGE.write_text(page, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python docs/tools/frameworks_latest.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--all", action="store_true", help="build every row, newest = pinned too")
    parser.add_argument("--only", action="append", choices=[r.name for r in ROWS])
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    logs = RESULTS.parent
    logs.mkdir(parents=True, exist_ok=True)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    kept = {r["row"]: r for r in previous}
    for row in ROWS:
        if args.only and row.name not in args.only:
            continue
        print(f"frameworks-latest: {row.name} ...", flush=True)
        kept[row.name] = check(row, args.all, logs)
        print(f"frameworks-latest: {row.name}: {kept[row.name]['outcome']}", flush=True)
    results = [kept[r.name] for r in ROWS if r.name in kept]
    RESULTS.write_text(json.dumps(results, indent=1))
    text = table(results)
    print(text)
    if not args.no_doc:
        write_page(text)
        print(f"frameworks-latest: wrote {PAGE}")
    return 1 if any(r.get("ok") is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
