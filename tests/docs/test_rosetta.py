"""docs/frameworks.md's Rosetta table is what docs/tools/rosetta.py generates now."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("rosetta", ROOT / "docs" / "tools" / "rosetta.py")
assert _spec is not None and _spec.loader is not None
rosetta = importlib.util.module_from_spec(_spec)
sys.modules["rosetta"] = rosetta
_spec.loader.exec_module(rosetta)


def test_table_is_current() -> None:
    """Fails after an adapter edit moved its anchors: run docs/tools/rosetta.py --write."""
    assert rosetta.main(["--check"]) == 0, (
        "docs/frameworks.md is stale: run `make docs` (python docs/tools/rosetta.py --write)"
    )


def test_every_anchor_links_its_statement() -> None:
    found = rosetta.collect()
    assert sum(len(v) for v in found.values()) > 0
    for anchors in found.values():
        for a in anchors:
            lines = (ROOT / a.path).read_text().splitlines()
            assert 1 <= a.first <= a.last <= len(lines)
            above = lines[a.first - 2].strip()  # the anchor block ends right above
            assert above.startswith("# rosetta:"), (a, above)


def test_anchor_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rosetta, "ROOT", tmp_path)
    src = tmp_path / "a.py"
    src.write_text(
        "class Env:\n"
        "    # rosetta: reset: `reset()`\n"
        "    # rosetta: session: one per game\n"
        "    @staticmethod\n"
        "    def reset():\n"
        "        return 1\n"
        "\n"
        "    # rosetta: step: `step()`\n"
        "    x = 2\n"
    )
    anchors = rosetta.anchors_in("gem", src)
    assert [(a.concept, a.first, a.last) for a in anchors] == [
        ("reset", 4, 6),
        ("session", 4, 6),
        ("step", 9, 9),
    ]
    assert anchors[0].link() == "[`a.py:4-6`](../a.py#L4-L6)"
    src.write_text("# rosetta: resett: typo\nx = 1\n")
    with pytest.raises(rosetta.RosettaError, match="unknown concept"):
        rosetta.anchors_in("gem", src)
    src.write_text("x = (\n    # rosetta: reset: inside an expression\n    1)\n")
    with pytest.raises(rosetta.RosettaError, match="not right above a statement"):
        rosetta.anchors_in("gem", src)


def test_stale_page_is_detected() -> None:
    page = f"intro\n{rosetta.BEGIN}\nold table\n{rosetta.END}\nafter\n"
    fresh = rosetta.splice(page, f"{rosetta.BEGIN}\nnew\n{rosetta.END}")
    assert fresh == f"intro\n{rosetta.BEGIN}\nnew\n{rosetta.END}\nafter\n"
    with pytest.raises(rosetta.RosettaError, match="lacks the markers"):
        rosetta.splice("no markers", "x")


def test_code_lines_skip_blanks_comments_docstrings(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        '"""Doc\nstring."""\n\n# comment\nx = 1  # trailing\n\n\ndef f():\n'
        '    """Doc."""\n    return (\n        x\n    )\n'
    )
    assert rosetta.code_lines(src) == 5  # x = 1; def f(); return (; x; )
