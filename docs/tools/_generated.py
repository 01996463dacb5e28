"""A generated section of a docs page: what the docs tools (``floors.py``,
``rosetta.py``) share. The section is the text between two marker comments; a tool
renders it and this module prints it, splices it into the page (``--write``) or
says, with a diff, that the page is stale (``--check``, exit 1).

Standard library only; the tools import it by path (they are scripts, not a package),
and it loads ``rollouts/markers.py`` (the one marker splice of the tree, a standard-library
leaf) by path too.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_mspec = importlib.util.spec_from_file_location("_markers", ROOT / "rollouts" / "markers.py")
assert _mspec is not None and _mspec.loader is not None
markers = sys.modules.setdefault("_markers", importlib.util.module_from_spec(_mspec))
_mspec.loader.exec_module(markers)


@dataclass(frozen=True)
class Section:
    """The section ``tool`` generates in ``page`` between ``begin`` and ``end``."""

    tool: str
    page: Path
    begin: str
    end: str
    fix: str
    """The command that refreshes the page, named when it is stale."""
    error: type[Exception] = ValueError
    """Raised for a page without the markers (a tool's own error type)."""

    @property
    def name(self) -> str:
        return str(self.page.relative_to(ROOT))

    def splice(self, page: str, table: str) -> str:
        """``page`` with its section replaced by ``table`` (which carries the markers)."""
        if markers.replace_between(page, self.begin, self.end, "") is None:
            raise self.error(f"{self.name} lacks the markers {self.begin!r} ... {self.end!r}")
        body = markers.section_body(table, self.begin, self.end)
        return str(markers.replace_between(page, self.begin, self.end, body))

    def parser(self, description: str) -> argparse.ArgumentParser:
        """``--write`` and ``--check`` (one at most); a tool may add its own flags."""
        parser = argparse.ArgumentParser(description=description)
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--write", action="store_true", help=f"refresh {self.name}")
        mode.add_argument("--check", action="store_true", help=f"exit 1 if {self.name} is stale")
        return parser

    def run(
        self,
        args: argparse.Namespace,
        render: Callable[[], str],
        explain: Callable[[str, str], str] | None = None,
    ) -> int:
        """Print the section, or ``--write`` it, or ``--check`` it (1: stale, with the
        first lines of the diff and ``explain(page, fresh)`` if given; 2: the tool's
        error, one line)."""
        try:
            table = render()
            if not (args.write or args.check):
                print(table)
                return 0
            page = self.page.read_text(encoding="utf-8")
            fresh = self.splice(page, table)
        except self.error as e:
            print(f"{self.tool}: {e}", file=sys.stderr)
            return 2
        if args.write and fresh != page:
            self.page.write_text(fresh, encoding="utf-8")
        if args.write or fresh == page:
            print(f"{self.tool}: {self.name} {'up to date' if fresh == page else 'updated'}")
            return 0
        if explain is not None:
            print(f"{self.tool}: {explain(page, fresh)}", file=sys.stderr)
        diff = difflib.unified_diff(
            page.splitlines(), fresh.splitlines(), self.name, "generated", lineterm="", n=0
        )
        for line in list(diff)[:12]:
            print(line if len(line) < 200 else line[:197] + "...", file=sys.stderr)
        print(f"{self.tool}: {self.name} is stale: run {self.fix}", file=sys.stderr)
        return 1
