"""The pages read as a user types, on any machine.

* No page holds a path of a developer's machine (a home directory, a pytest
  temporary directory, the workspace the project was written in).
* Every shell command that runs a tool of the project's venv is written as a
  user types it after the README's set-up: ``.venv/bin/gamebridge``,
  ``.venv/bin/python`` and so on (the docs test puts ``.venv/bin`` first on
  PATH, so a bare ``gamebridge`` would pass there and fail for the reader). A
  block meant for another working directory (it says ``/path/to/gamebridge``)
  is exempt.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docblocks import pages, parse_page

ROOT = Path(__file__).resolve().parents[2]
PAGES = pages(ROOT)

MACHINE_PATH = re.compile(
    r"(?<![\w.])(/work/|/root/|/home/[a-z_][\w-]*/|/Users/\w|/tmp/pytest-|/private/var/folders/"
    r"|[A-Z]:\\Users\\)"
)
"""A path that exists only on someone's machine."""

VENV_TOOLS = ("gamebridge", "python", "python3", "pip", "vf-eval", "accelerate", "ray", "trl")
"""Console scripts of ``.venv`` that the pages run."""
BARE_TOOL = re.compile(
    r"(?:^|\$ |&& |; |\| |\( |timeout \d+ |nice -n \d+ |^\s+)(?:[A-Z_]+=\S+ )*"
    rf"({'|'.join(re.escape(t) for t in VENV_TOOLS)})(?=\s|$)"
)


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_no_path_of_a_developers_machine(page: Path) -> None:
    found = [
        f"{page.relative_to(ROOT)}:{i}: {m.group(0)!r} in {line.strip()[:120]}"
        for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        for m in MACHINE_PATH.finditer(line)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_commands_are_typed_as_after_the_readmes_setup(page: Path) -> None:
    blocks, _ = parse_page(page, ROOT)
    found = []
    for block in blocks:
        if block.lang not in ("sh", "bash", "console", "shell") or "/path/to/gamebridge" in (
            block.code
        ):
            continue
        for offset, line in enumerate(block.code.splitlines(), 1):
            if block.lang == "console" and not line.startswith("$ "):
                continue
            for m in BARE_TOOL.finditer(line):
                found.append(
                    f"{block.page}:{block.line + offset}: write .venv/bin/{m.group(1)}: {line.strip()}"
                )
    assert not found, "\n".join(found)


def test_the_checks_see_what_they_look_for() -> None:
    """Each pattern finds what it is meant to (so the tests above can fail)."""
    assert MACHINE_PATH.search("see /work/shared/FACTS.md")
    assert MACHINE_PATH.search("at /home/alice/gamebridge")
    assert not MACHINE_PATH.search("write to /tmp/nim.jsonl or runs/x")
    assert not MACHINE_PATH.search("https://example.org/work/x")
    for bare in (
        "gamebridge eval -n 2",
        "x | python -c 1",
        "A=1 gamebridge demo",
        "$ pip install x",
    ):
        assert BARE_TOOL.search(bare), bare
    for typed in (".venv/bin/gamebridge eval", "make demo", "echo gamebridge-openenv"):
        assert not BARE_TOOL.search(typed), typed
