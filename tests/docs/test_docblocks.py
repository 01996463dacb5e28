"""The Markdown block parser behind the docs test: markers, console commands, errors."""

from __future__ import annotations

from pathlib import Path

from docblocks import find_in, parse_page

PAGE = """# Title

<!-- docs-test: skip (needs a GPU) -->
```bash
train --gpu
```

<!-- docs-test: expect "IDENTICAL" -->
<!-- docs-test: timeout 30 -->
<!-- docs-test: exit 2 -->
```console
$ gamebridge compare \\
    --game nim
output line
$ echo done
```

- a list item:

  ```python
  print("indented")
  ```

<!-- docs-test: background port=8765 -->
```sh
gamebridge serve-policy --port 8765
```

<!-- docs-test: file core/games/nim.py -->
```python
START = (3, 4, 5)
```

```json
{"not": "run"}
```
"""


def _parse(tmp_path: Path, text: str):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(text)
    return parse_page(page, tmp_path)


def test_markers_and_kinds(tmp_path: Path) -> None:
    blocks, errors = _parse(tmp_path, PAGE)
    assert errors == []
    skip, console, indented, server, part, data = blocks
    assert (skip.id, skip.kind, skip.skip) == ("docs/page.md:L4", "shell", "needs a GPU")
    assert console.expect == ["IDENTICAL"] and console.timeout == 30 and console.exit_code == 2
    assert console.commands() == "gamebridge compare \\\n    --game nim\necho done\n"
    assert indented.kind == "python" and indented.code == 'print("indented")\n'
    assert server.background and server.port == 8765
    assert part.kind == "quote" and part.file_part == "core/games/nim.py"
    assert data.kind == "" and data.lang == "json"


def test_marker_errors_are_reported(tmp_path: Path) -> None:
    text = (
        "<!-- docs-test: skip -->\n```bash\nls\n```\n\n"  # no reason
        '<!-- docs-test: expct "x" -->\n```bash\nls\n```\n\n'  # unknown marker
        "<!-- docs-test: skip (x) -->\n\n```bash\nls\n```\n\n"  # blank line between
        "<!-- docs-test: background -->\n```python\npass\n```\n"  # python in background
        "```\nls\n```\n"  # no language: run or not?
    )
    _, errors = _parse(tmp_path, text)
    assert len(errors) == 5, errors
    assert "needs a reason" in errors[0]
    assert "unknown docs-test marker" in errors[1]
    assert "not directly above" in errors[2]
    assert "only a shell block" in errors[3]
    assert "without a language" in errors[4]


def test_find_in() -> None:
    hay = ["a", "b", "c", "b", "c"]
    assert find_in(hay, ["b", "c"]) == 1
    assert find_in(hay, ["b", "c"], 2) == 3
    assert find_in(hay, ["c", "a"]) == -1


def test_links_and_slugs(tmp_path: Path) -> None:
    from docblocks import broken_link, links, slug

    assert slug("Keeping it true") == "keeping-it-true"
    assert slug("The adapter, top to bottom (`adapters/gem/__init__.py`)") == (
        "the-adapter-top-to-bottom-adaptersgem__init__py"
    )
    (tmp_path / "src.py").write_text("a\nb\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n\n[ok](src.py#L1-L2) [far](src.py#L1-L3) [web](https://x.org)\n"
        "```\n[in code](nowhere.md)\n```\n[head](#top) [nohead](#nope) [gone](x.md)\n"
    )
    found = links(page)
    assert [t for _, t in found] == ["src.py#L1-L2", "src.py#L1-L3", "#top", "#nope", "x.md"]
    assert [broken_link(page, t) is None for _, t in found] == [True, False, True, False, False]


def test_output_block_attaches_to_the_block_above(tmp_path: Path) -> None:
    text = (
        "```python\nprint(1)\n```\n\n<!-- docs-test: output -->\n```text\n1\n```\n\n"
        "<!-- docs-test: output -->\n```text\norphan\n```\n"
    )
    blocks, errors = _parse(tmp_path, text)
    assert blocks[0].output == "1\n"
    assert len(errors) == 1 and "must follow the block it shows" in errors[0]


def test_runner_checks_exit_output_and_timeout(tmp_path: Path) -> None:
    """The runner behind test_block fails when it should (exit status, expected
    text, exact output, timeout) and passes otherwise."""
    import pytest
    import test_docs
    from docblocks import Block

    def run(lang: str, code: str, **kw: object) -> str | None:
        block = Block("docs/x.md", 1, lang, code, **kw)  # type: ignore[arg-type]
        try:
            test_docs._run(block, tmp_path)
        except pytest.fail.Exception as e:
            return str(e)
        return None

    assert run("python", "print('hello')\n", expect=["hello"], output="hello\n") is None
    assert "lacks ['bye']" in (run("python", "print('hello')\n", expect=["bye"]) or "")
    assert "differs" in (run("python", "print('hello')\n", output="hullo\n") or "")
    assert "exit status 3" in (run("bash", "exit 3\n") or "")
    assert run("bash", "exit 3\n", exit_code=3) is None
    assert "still running" in (run("bash", "sleep 30\n", timeout=1.0) or "")
