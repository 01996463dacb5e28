"""Code blocks of the Markdown docs and their ``docs-test`` markers.

tests/docs/test_docs.py runs every ```bash / ```sh / ```console / ```python
block of README.md and docs/*.md. A block may carry markers: HTML comments on
the lines right above its opening fence (no blank line in between), one marker
per comment, invisible on the rendered page but visible in the source:

    <!-- docs-test: skip (why it must not run in tests) -->
    <!-- docs-test: expect "IDENTICAL" -->          output must contain this (repeatable)
    <!-- docs-test: timeout 300 -->                  seconds (default 120)
    <!-- docs-test: exit 2 -->                       expected exit status (default 0)
    <!-- docs-test: background port=8765 -->         start it, wait for the port, keep it
                                                     running for the page's later blocks
    <!-- docs-test: quote core/games/__init__.py --> the block appears verbatim in the file
    <!-- docs-test: file core/games/nim.py -->       one part of a whole-file quote: the
                                                     page's parts, in order, are the file
    <!-- docs-test: output -->                       (on a ```text block) the output of the
                                                     block just above, exactly

Quoted blocks (``quote``/``file``) are compared with the source instead of
being run. See docs/docs-tests.md.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

RUN_LANGS = {
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "console": "console",
    "python": "python",
    "py": "python",
    "python3": "python",
}
DEFAULT_TIMEOUT = 120.0

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*?)[ \t]*$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_LOOSE_MARKER = re.compile(r"docs-test", re.IGNORECASE)


class MarkerError(ValueError):
    """A ``docs-test`` marker that cannot be read (typo, missing reason, no block below)."""


@dataclass
class Block:
    """One fenced code block and its markers."""

    page: str  # path relative to the repo root, e.g. "docs/rewards.md"
    line: int  # 1-based line of the opening fence
    lang: str  # the info string's first word, lower-cased ("" if none)
    code: str  # the block's text, fence indentation removed, ending "\n"
    skip: str | None = None  # the reason, when the block must not run
    expect: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT
    exit_code: int = 0
    background: bool = False
    port: int | None = None
    quote: str | None = None  # path of a file the block quotes verbatim
    file_part: str | None = None  # path of a file the page quotes whole, in parts
    output: str | None = None  # the exact output shown in the ```text block below it
    is_output: bool = False  # this block shows the output of the block above

    @property
    def id(self) -> str:
        return f"{self.page}:L{self.line}"

    @property
    def kind(self) -> str:
        """``shell``, ``console``, ``python``, ``quote`` or ``""`` (not executed)."""
        if self.quote or self.file_part:
            return "quote"
        return RUN_LANGS.get(self.lang, "")

    def commands(self) -> str:
        """The shell script a shell/console block stands for (console: the ``$``
        lines and their ``\\`` continuations; other lines are output)."""
        if self.kind != "console":
            return self.code
        out: list[str] = []
        lines = self.code.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.startswith("$ "):
                continue
            cmd = [line[2:]]
            while cmd[-1].endswith("\\") and i < len(lines):
                cmd.append(lines[i])
                i += 1
            out.append("\n".join(cmd))
        return "\n".join(out) + "\n"


def _apply_marker(block: Block, body: str, where: str) -> None:
    word, _, rest = body.partition(" ")
    rest = rest.strip()
    if word in ("skip", "skip:"):
        reason = rest
        if reason.startswith("(") and reason.endswith(")"):
            reason = reason[1:-1].strip()
        if not reason:
            raise MarkerError(f"{where}: `skip` needs a reason: <!-- docs-test: skip (why) -->")
        block.skip = reason
    elif word == "expect":
        try:
            parts = shlex.split(rest)
        except ValueError as e:
            raise MarkerError(f"{where}: bad expect {rest!r}: {e}") from e
        if len(parts) != 1 or not parts[0]:
            raise MarkerError(f'{where}: use <!-- docs-test: expect "some text" --> (one string)')
        block.expect.append(parts[0])
    elif word == "timeout":
        try:
            block.timeout = float(rest)
        except ValueError as e:
            raise MarkerError(f"{where}: timeout needs seconds, got {rest!r}") from e
    elif word == "exit":
        if not rest.isdigit():
            raise MarkerError(f"{where}: exit needs a status number, got {rest!r}")
        block.exit_code = int(rest)
    elif word == "background":
        block.background = True
        for opt in rest.split():
            key, _, value = opt.partition("=")
            if key != "port" or not value.isdigit():
                raise MarkerError(f"{where}: background takes only port=N, got {opt!r}")
            block.port = int(value)
    elif word == "output":
        if rest:
            raise MarkerError(f"{where}: output takes no argument")
        block.is_output = True
    elif word in ("quote", "file"):
        if not rest or " " in rest:
            raise MarkerError(f"{where}: {word} needs one repo-relative path, got {rest!r}")
        if word == "quote":
            block.quote = rest
        else:
            block.file_part = rest
    else:
        raise MarkerError(
            f"{where}: unknown docs-test marker {body!r} "
            "(skip, expect, timeout, exit, background, quote, file, output)"
        )


def parse_page(path: Path, root: Path) -> tuple[list[Block], list[str]]:
    """Every fenced block of ``path`` with its markers, and the marker errors."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    errors: list[str] = []
    pending: list[tuple[int, str]] = []  # markers waiting for their block
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line)
        if marker:
            pending.append((i + 1, marker["body"]))
            i += 1
            continue
        if _LOOSE_MARKER.search(line) and line.lstrip().startswith("<!--"):
            errors.append(
                f"{page}:L{i + 1}: malformed marker {line.strip()!r} "
                "(write <!-- docs-test: ... --> on one line)"
            )
        fence = _FENCE.match(line)
        if fence is None:
            if pending:
                errors.append(
                    f"{page}:L{pending[0][0]}: docs-test marker not directly above a code block"
                )
                pending = []
            i += 1
            continue
        indent, mark = fence["indent"], fence["fence"]
        info = fence["info"].strip()
        lang = info.split()[0].lower().strip("{}.") if info else ""
        body: list[str] = []
        j = i + 1
        closer = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
        while j < len(lines) and not closer.match(lines[j]):
            text = lines[j]
            body.append(text[len(indent) :] if text.startswith(indent) else text.lstrip())
            j += 1
        block = Block(page, i + 1, lang, "\n".join(body) + "\n")
        for at, text in pending:
            try:
                _apply_marker(block, text, f"{page}:L{at}")
            except MarkerError as e:
                errors.append(str(e))
        if block.background and block.kind not in ("shell", "console"):
            errors.append(f"{block.id}: only a shell block can run in the background")
        if not lang:
            errors.append(
                f"{block.id}: a code block without a language; name one (bash, python: run; "
                "text, json, yaml, ...: shown only)"
            )
        if block.is_output:
            prev = blocks[-1] if blocks else None
            if prev is None or prev.kind not in ("shell", "console", "python") or prev.background:
                errors.append(f"{block.id}: an output block must follow the block it shows")
            else:
                prev.output = block.code
        elif pending and block.kind == "":
            errors.append(
                f"{block.id}: docs-test markers on a ```{lang or '(no language)'} "
                "block, which is never run"
            )
        pending = []
        blocks.append(block)
        i = j + 1
    if pending:
        errors.append(f"{page}:L{pending[0][0]}: docs-test marker at the end of the page")
    return blocks, errors


def find_in(haystack: list[str], needle: list[str], start: int = 0) -> int:
    """Index of the first run of ``needle`` lines in ``haystack`` at or after
    ``start``; -1 if none."""
    n = len(needle)
    for k in range(start, len(haystack) - n + 1):
        if haystack[k : k + n] == needle:
            return k
    return -1


def pages(root: Path) -> list[Path]:
    """README.md and docs/*.md."""
    found = [root / "README.md"] if (root / "README.md").exists() else []
    return found + sorted((root / "docs").glob("*.md"))


_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def links(path: Path) -> list[tuple[int, str]]:
    """Relative link targets of a page (outside code blocks), with their lines."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            mark = m["fence"]
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not m["info"]:
                fence = None
            continue
        if fence is not None:
            continue
        for link in _LINK.finditer(line):
            target = link["target"]
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                out.append((n, target))
    return out


def broken_link(page: Path, target: str) -> str | None:
    """Why a relative link from ``page`` is broken, or None."""
    path_part, _, frag = target.partition("#")
    dest = (page.parent / path_part).resolve() if path_part else page
    if not dest.exists():
        return f"{target}: no such file"
    if not frag:
        return None
    if dest.suffix == ".md":
        headings = [
            slug(ln.lstrip("#"))
            for ln in dest.read_text(encoding="utf-8").splitlines()
            if re.match(r"^#{1,6} ", ln)
        ]
        return None if frag in headings else f"{target}: no heading #{frag} in {dest.name}"
    lines = re.fullmatch(r"L(\d+)(?:-L(\d+))?", frag)
    if lines is None:
        return None
    last = int(lines[2] or lines[1])
    size = len(dest.read_text(encoding="utf-8").splitlines())
    return None if last <= size else f"{target}: {dest.name} has only {size} lines"
