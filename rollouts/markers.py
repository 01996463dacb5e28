"""Generated text between two markers of a docs file: the one place that finds the
markers and replaces what lies between them.

The recipe's tables (``rollouts.training.recipe``), the arena's ratings
(``rollouts.evaluation.ratings``) and the benchmarks' sections (``bench``) are written
into Markdown pages between a start and an end marker; each names its own markers and
calls these. Standard library only, importing nothing of gamebridge (a leaf every wing
may read).

>>> replace_between("a\\n<!-- s -->\\nold\\n<!-- e -->\\nb", "<!-- s -->", "<!-- e -->", "\\nnew\\n")
'a\\n<!-- s -->\\nnew\\n<!-- e -->\\nb'
>>> replace_between("no markers", "<!-- s -->", "<!-- e -->", "x") is None
True
"""

from __future__ import annotations

from pathlib import Path


def replace_between(doc: str, start: str, end: str, text: str) -> str | None:
    """``doc`` with what lies between the first ``start`` and the first ``end`` after it
    replaced by ``text`` (both markers kept); ``None`` when ``doc`` lacks either."""
    i = doc.find(start)
    if i < 0:
        return None
    j = doc.find(end, i + len(start))
    if j < 0:
        return None
    return doc[: i + len(start)] + text + doc[j:]


def write_between(path: str | Path, start: str, end: str, text: str) -> bool:
    """:func:`replace_between` in the file ``path`` (UTF-8); False, and nothing
    written, when the file or either marker is missing."""
    p = Path(path)
    if not p.exists():
        return False
    doc = replace_between(p.read_text(encoding="utf-8"), start, end, text)
    if doc is None:
        return False
    p.write_text(doc, encoding="utf-8")
    return True


def section_body(section: str, start: str, end: str) -> str:
    """What lies between the markers of a whole generated ``section`` (one that begins
    with ``start`` and ends with ``end``, as the benchmarks write theirs)."""
    if not (section.startswith(start) and section.endswith(end)):
        raise ValueError(f"a section must begin with {start!r} and end with {end!r}")
    return section[len(start) : len(section) - len(end)]
