"""Every command and code block in README.md and docs/*.md runs (or says why not).

* ```python blocks: each in a fresh ``.venv`` Python subprocess, the repo on
  PYTHONPATH, cwd the repo root.
* ```bash / ```sh / ```console blocks: ``bash -euo pipefail`` with ``.venv/bin``
  first on PATH, cwd the repo root (console blocks: the ``$`` lines only).
* Blocks under a ``quote`` / ``file`` marker are compared with the source file.
* Markers (``<!-- docs-test: ... -->``, see tests/docs/docblocks.py and
  docs/docs-tests.md) skip a block with a reason, expect output, change the
  timeout or exit status, or start a server for the page's later blocks.

Test ids are ``docs/rewards.md:L42`` (the line of the opening fence). Run one
page with ``pytest tests/docs -k add-a-game``; a page's blocks run in order.
"""

from __future__ import annotations

import difflib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from docblocks import Block, broken_link, find_in, links, pages, parse_page

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable

PAGES = pages(ROOT)
PARSED = {p.relative_to(ROOT).as_posix(): parse_page(p, ROOT) for p in PAGES}
BLOCKS = [b for blocks, _ in PARSED.values() for b in blocks if b.kind]
LAST_OF_PAGE = {
    blocks[-1].id for blocks in ([b for b in bs if b.kind] for bs, _ in PARSED.values()) if blocks
}
WHOLE_FILES = sorted({(b.page, b.file_part) for b in BLOCKS if b.file_part})

pytestmark = pytest.mark.docs  # `-m "not docs"` leaves the pages out (a few minutes)

_background: dict[str, list[subprocess.Popen[bytes]]] = defaultdict(list)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = (
        f"{ROOT}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(ROOT)
    )
    env["VIRTUAL_ENV"] = str(ROOT / ".venv")
    env.pop("PYTHONHOME", None)
    return env


def _group_alive(proc: subprocess.Popen[bytes]) -> bool:
    proc.poll()  # reap the leader, so a finished leader does not count
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group of a block this test started (its own id): SIGINT
    first, so Python code runs its cleanup (``start_server`` stops the servers
    it started in their own sessions), then SIGTERM, then SIGKILL, until no
    process of the group is left (a ``cmd &`` inside a block included)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(proc):
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(proc):
            time.sleep(0.1)


@pytest.fixture(scope="session", autouse=True)
def _stop_leftovers():
    yield
    for procs in _background.values():
        for proc in procs:
            _stop(proc)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _argv(block: Block, tmp: Path) -> list[str]:
    if block.kind == "python":
        script = tmp / "block.py"
        script.write_text(block.code, encoding="utf-8")
        return [PYTHON, str(script)]
    return ["bash", "-euo", "pipefail", "-c", block.commands()]


def _start_background(block: Block, tmp: Path) -> None:
    if block.port is not None and _port_open(block.port):
        pytest.fail(
            f"{block.id}: port {block.port} is already in use on this machine; "
            "stop whatever holds it and rerun"
        )
    log = open(tmp / "background.log", "wb")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        _argv(block, tmp),
        cwd=ROOT,
        env=_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _background[block.page].append(proc)
    deadline = time.monotonic() + block.timeout
    while block.port is not None and not _port_open(block.port):
        if proc.poll() is not None:
            pytest.fail(
                f"{block.id}: the background command exited ({proc.returncode}) "
                f"before port {block.port} opened:\n"
                + (tmp / "background.log").read_text(errors="replace")[-3000:]
            )
        if time.monotonic() > deadline:
            pytest.fail(f"{block.id}: port {block.port} not open after {block.timeout:.0f}s")
        time.sleep(0.2)


def _run(block: Block, tmp: Path) -> None:
    proc = subprocess.Popen(
        _argv(block, tmp),
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=block.timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        out, _ = proc.communicate()
        pytest.fail(
            f"{block.id}: still running after {block.timeout:.0f}s "
            f"(raise it with <!-- docs-test: timeout N -->)\n"
            + out.decode(errors="replace")[-3000:]
        )
    text = out.decode(errors="replace")
    if proc.returncode != block.exit_code:
        pytest.fail(
            f"{block.id}: exit status {proc.returncode}, expected {block.exit_code}\n"
            f"--- block ---\n{block.code}--- output (tail) ---\n{text[-4000:]}"
        )
    if block.output is not None and _lines(text) != _lines(block.output):
        diff = "\n".join(
            difflib.unified_diff(_lines(block.output), _lines(text), "page", "actual", lineterm="")
        )
        pytest.fail(f"{block.id}: the output differs from the page's output block\n{diff}")
    missing = [e for e in block.expect if e not in text]
    if missing:
        pytest.fail(f"{block.id}: output lacks {missing}\n--- output (tail) ---\n{text[-4000:]}")


def _lines(text: str) -> list[str]:
    """Output lines, trailing spaces and blank edges ignored."""
    return [ln.rstrip() for ln in text.strip("\n").splitlines()]


def _check_quote(block: Block) -> None:
    path = block.quote or block.file_part
    assert path is not None
    source = ROOT / path
    if not source.exists():
        pytest.fail(f"{block.id}: quotes {path}, which does not exist")
    lines = source.read_text(encoding="utf-8").splitlines()
    quoted = block.code.splitlines()
    if find_in(lines, quoted) < 0:
        pytest.fail(
            f"{block.id}: this block is no longer a verbatim part of {path}; "
            f"copy the current text from the file:\n{block.code}"
        )


@pytest.mark.parametrize("page", sorted(PARSED))
def test_markers_are_well_formed(page: str) -> None:
    errors = PARSED[page][1]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block: Block, tmp_path: Path) -> None:
    try:
        if block.skip is not None:
            pytest.skip(f"docs-test: skip ({block.skip})")
        if block.kind == "quote":
            _check_quote(block)
        elif block.background:
            _start_background(block, tmp_path)
        else:
            _run(block, tmp_path)
    finally:
        if block.id in LAST_OF_PAGE:
            for proc in _background.pop(block.page, []):
                _stop(proc)


@pytest.mark.parametrize("page,path", WHOLE_FILES, ids=[f"{p}:{f}" for p, f in WHOLE_FILES])
def test_whole_file_quote(page: str, path: str) -> None:
    """The page's ``file`` parts, read in order, are the whole file (blank lines aside):
    a reader who copies every part gets exactly the file."""
    parts = [b for b in PARSED[page][0] if b.file_part == path]
    quoted = [ln for b in parts for ln in b.code.splitlines() if ln.strip()]
    actual = [ln for ln in (ROOT / path).read_text(encoding="utf-8").splitlines() if ln.strip()]
    if quoted != actual:
        at = next(
            (i for i, (q, a) in enumerate(zip(quoted, actual, strict=False)) if q != a),
            min(len(quoted), len(actual)),
        )
        pytest.fail(
            f"{page} quotes {path} in {len(parts)} parts, but they differ from the file "
            f"at non-blank line {at + 1}:\n  page: "
            f"{quoted[at] if at < len(quoted) else '(end)'}\n  file: "
            f"{actual[at] if at < len(actual) else '(end)'}"
        )


@pytest.mark.parametrize("page", sorted(PARSED))
def test_relative_links_resolve(page: str) -> None:
    """Every relative link points at a file that exists (and a heading or line range in it)."""
    path = ROOT / page
    broken = [
        f"{page}:L{n}: {why}"
        for n, target in links(path)
        if (why := broken_link(path, target)) is not None
    ]
    assert not broken, "\n".join(broken)


def test_index_links_every_page() -> None:
    """docs/index.md links every page in docs/ (no orphan pages)."""
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for _, target in links(index)}
    orphans = [
        p.name
        for p in sorted((ROOT / "docs").glob("*.md"))
        if p.name != "index.md" and p.resolve() not in linked
    ]
    assert not orphans, f"docs/index.md does not link: {orphans}"


def test_pages_found() -> None:
    """The collector sees the pages and their blocks (guards against a parser that finds none)."""
    assert "README.md" in PARSED
    assert any(b.kind == "python" for b in BLOCKS)
    assert any(b.kind in ("shell", "console") for b in BLOCKS)
