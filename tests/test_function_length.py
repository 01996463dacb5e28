"""No function under core/ or rollouts/ is over 80 lines, except those docs/code.md
names in its "Long functions" table with why, and no module under rollouts/ is over
600 lines (issue 31).

A function's length runs from its ``def`` (or its first decorator) to its last line,
docstring, comments and blank lines included; a nested function counts on its own
and inside the one around it. The table's entries are ``path::qualified.name``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 80
TOPS = ("core", "rollouts")
DOC = ROOT / "docs" / "code.md"


def long_functions(source: str, path: str, limit: int = LIMIT) -> dict[str, int]:
    """``path::qualname`` -> lines of every function over ``limit`` lines in ``source``."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    lines = (child.end_lineno or child.lineno) - first + 1
                    if lines > limit:
                        found[f"{path}::{name}"] = lines
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def documented() -> set[str]:
    """The entries of docs/code.md's "Long functions" table."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Long functions") :]
    section = section[: section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    return set(re.findall(r"^\| `([^`]+::[^`]+)` \|", section, re.MULTILINE))


def tree_long_functions() -> dict[str, int]:
    found: dict[str, int] = {}
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            found.update(long_functions(path.read_text(encoding="utf-8"), rel))
    return found


def test_every_long_function_says_why_in_docs_code_md() -> None:
    found = tree_long_functions()
    listed = documented()
    undocumented = sorted(f"{name} ({found[name]} lines)" for name in set(found) - listed)
    assert not undocumented, (
        f"functions over {LIMIT} lines that docs/code.md's 'Long functions' table does not "
        "name (split them, or add a row saying why):\n" + "\n".join(undocumented)
    )
    stale = sorted(listed - set(found))
    assert not stale, (
        "docs/code.md's 'Long functions' table names functions that are gone or no longer "
        f"over {LIMIT} lines (drop their rows):\n" + "\n".join(stale)
    )


MODULE_LIMIT = 600


def test_no_rollouts_module_is_over_600_lines() -> None:
    over = {
        path.relative_to(ROOT).as_posix(): n
        for path in sorted((ROOT / "rollouts").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LIMIT
    }
    assert not over, f"modules over {MODULE_LIMIT} lines (split them by responsibility): {over}"


def test_the_measure_counts_decorators_and_nested_functions() -> None:
    inner = "".join(f"        x{i} = {i}\n" for i in range(5))
    outer = "".join(f"    y{i} = {i}\n" for i in range(5))
    source = f"@dec\ndef outer():\n    def inner():\n{inner}{outer}"
    assert long_functions(source, "m.py", limit=5) == {"m.py::outer": 13, "m.py::outer.inner": 6}
    method = "class C:\n    def f(self):\n" + inner
    assert long_functions(method, "m.py", limit=5) == {"m.py::C.f": 6}
    assert long_functions(method, "m.py", limit=6) == {}
