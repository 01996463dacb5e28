"""The house's import rules, checked.

- ``import core`` (and every core submodule) loads nothing outside the standard library.
- No source file under ``core/`` imports anything but the standard library and ``core``,
  even lazily inside a function; the one exception is the OpenSpiel bridge
  (``core/games/openspiel.py``), which imports ``pyspiel`` inside a function, when a
  bridged game is made, never at module level.
- An adapter imports no other adapter and nothing from ``rollouts``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STDLIB = frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names)


def _module_name(path: Path) -> str:
    """Dotted module name of a source file under ROOT (``core/games/__init__.py`` -> ``core.games``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module a source file imports, absolute and dotted, with its line number.

    Relative imports are resolved against ``module`` (the file's own dotted name);
    ``is_package`` says whether the file is a package's ``__init__.py``.
    Imports nested in functions, classes and ``if``/``try`` blocks count too.
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                keep = len(package) - (node.level - 1)
                base = ".".join(package[: max(keep, 0)])
                if node.module:
                    base = f"{base}.{node.module}" if base else node.module
            # `from pkg import name` may import the submodule pkg.name: record both.
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _sources(top: str) -> list[Path]:
    return sorted((ROOT / top).rglob("*.py")) if (ROOT / top).is_dir() else []


def _file_imports(path: Path) -> list[tuple[int, str]]:
    return imported_modules(
        path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py"
    )


def core_violations(imports: list[tuple[int, str]]) -> list[str]:
    """Imports a core file may not make: anything outside the standard library and core."""
    bad = []
    for line, name in imports:
        top = name.split(".")[0]
        if top != "core" and top not in STDLIB and top != "__future__":
            bad.append(f"line {line}: {name}")
    return bad


def adapter_violations(imports: list[tuple[int, str]], own: str | None) -> list[str]:
    """Imports an adapter file may not make: another adapter, or rollouts.

    ``own`` is the adapter's name (``adapters/<own>/...``), None for files directly in adapters/.
    """
    bad = []
    for line, name in imports:
        parts = name.split(".")
        if parts[0] == "rollouts":
            bad.append(f"line {line}: {name} (adapters never import rollouts)")
        elif (
            parts[0] == "adapters"
            and len(parts) > 1
            and parts[1] != own
            and not parts[1].startswith("_")
        ):  # adapters/_*.py: shared stdlib helpers
            bad.append(f"line {line}: {name} (adapters never import another adapter)")
    return bad


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


# --- the checkers catch what they must (so the scans below can fail) -----------------------


def test_checkers_flag_forbidden_imports() -> None:
    src = textwrap.dedent(
        """
        import os, json
        from collections import abc
        from . import rng
        from ..games import base
        def f():
            import numpy
            from ..rollouts import cli
        """
    )
    imports = imported_modules(src, "core.games.othello", is_package=False)
    names = {name for _, name in imports}
    assert {"os", "json", "collections", "core.games.rng", "core.games.base", "numpy"} <= names
    assert "core.rollouts.cli" in names  # relative: still inside core, resolved correctly
    assert core_violations(imports) == ["line 7: numpy"]

    adapter_src = textwrap.dedent(
        """
        from core import Episode
        from adapters.gem import env
        from ..verifiers import env as venv
        from . import helpers
        import rollouts.model.client
        """
    )
    imports = imported_modules(adapter_src, "adapters.gem.env", is_package=False)
    bad = adapter_violations(imports, own="gem")
    assert any("adapters.verifiers" in b for b in bad)
    assert any("rollouts" in b for b in bad)
    assert not any("adapters.gem" in b for b in bad)


def test_relative_import_in_package_init_resolves_to_the_package() -> None:
    imports = imported_modules("from .base import Game", "core.games", is_package=True)
    assert (1, "core.games.base") in imports


# --- the scans -------------------------------------------------------------------------------

CORE_FILES = _sources("core")
ADAPTER_FILES = _sources("adapters")


def test_core_has_sources() -> None:
    assert CORE_FILES, "core/ has no Python sources: the scan below would check nothing"


LAZY_THIRD_PARTY = {"core/games/openspiel.py": frozenset({"pyspiel", "open_spiel", "numpy"})}
"""Core files allowed one optional engine, imported inside a function only (the
open-spiel distribution: ``pyspiel``, its Python algorithms ``open_spiel.python`` for
the seeded information-set MCTS, and ``numpy``, which it requires)."""


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        for sub in ast.walk(node) if not isinstance(node, ast.FunctionDef | ast.ClassDef) else ():
            if isinstance(sub, ast.Import):
                names.update(alias.name for alias in sub.names)
            elif isinstance(sub, ast.ImportFrom) and sub.module:
                names.add(sub.module)
    return names


@pytest.mark.parametrize("path", CORE_FILES, ids=_ids(CORE_FILES))
def test_core_source_imports_only_stdlib(path: Path) -> None:
    allowed = LAZY_THIRD_PARTY.get(str(path.relative_to(ROOT)), frozenset())
    imports = _file_imports(path)
    bad = [b for b in core_violations(imports) if b.split(": ", 1)[1].split(".")[0] not in allowed]
    assert not bad, f"{path.relative_to(ROOT)} imports outside the standard library: {bad}"
    eager = {name.split(".")[0] for name in _module_level_imports(path)} & allowed
    assert not eager, f"{path.relative_to(ROOT)} imports {sorted(eager)} at module level"


def test_the_openspiel_bridge_imports_pyspiel_lazily() -> None:
    """The one allowed engine import is really there, and really inside a function
    (so the allowance above cannot go stale unnoticed)."""
    path = ROOT / "core" / "games" / "openspiel.py"
    assert "pyspiel" in {name for _, name in _file_imports(path)}
    assert "pyspiel" not in _module_level_imports(path)


@pytest.mark.parametrize("path", ADAPTER_FILES, ids=_ids(ADAPTER_FILES))
def test_adapter_imports_no_other_adapter_nor_rollouts(path: Path) -> None:
    parts = path.relative_to(ROOT / "adapters").parts
    own = parts[0] if len(parts) > 1 else None
    bad = adapter_violations(_file_imports(path), own)
    assert not bad, f"{path.relative_to(ROOT)}: {bad}"


SHARED_ADAPTER_HELPERS = sorted((ROOT / "adapters").glob("_*.py"))


@pytest.mark.parametrize("path", SHARED_ADAPTER_HELPERS, ids=_ids(SHARED_ADAPTER_HELPERS))
def test_shared_adapter_helpers_import_only_stdlib(path: Path) -> None:
    """``adapters/_*.py`` may be imported by any adapter, so they hold no framework.
    One may build on another (``_websocket`` on ``_asgi``): each is checked here."""
    shared = {f"adapters.{p.stem}" for p in SHARED_ADAPTER_HELPERS}
    imports = [
        (line, name)
        for line, name in _file_imports(path)
        if not any(name == m or name.startswith(m + ".") for m in shared)
    ]
    bad = core_violations(imports)
    assert not bad, f"{path.relative_to(ROOT)} imports outside the standard library: {bad}"


IMPORT_CORE = """
import importlib, pkgutil, sys
before = set(sys.modules)
import core
for info in pkgutil.walk_packages(core.__path__, "core."):
    importlib.import_module(info.name)
stdlib = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] not in stdlib | {"core"})
print("\\n".join(loaded))
"""


def test_import_core_loads_only_stdlib() -> None:
    """Importing core and all its submodules in a fresh interpreter loads no third-party module."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_CORE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = result.stdout.split()
    assert not loaded, f"import core loaded non-stdlib modules: {loaded}"


# --- no import circle ----------------------------------------------------------------------

PROJECT_FILES = [p for top in ("core", "adapters", "rollouts", "bench") for p in _sources(top)]


def import_graph(files: list[Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports, lazily or not.

    ``from pkg import name`` counts as an import of ``pkg.name`` when that is a module
    of the project, else of ``pkg``; a module importing its own package's ``__init__``
    is not an edge (Python runs that ``__init__`` first in any case)."""
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, target in _file_imports(path):
            if target not in modules:
                continue
            if name.startswith(target + "."):
                continue
            graph[name].add(target)
    # `from pkg import name` recorded both pkg and pkg.name: keep the submodule only
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


KNOWN_CYCLES: list[list[str]] = []
"""Import circles accepted for now: none (issue 13's ``Rubric.score(ending)`` broke the
last one, core.episode <-> core.rewards)."""


def test_no_import_circle_anywhere() -> None:
    """No two project modules import each other, directly or round a loop, even lazily."""
    cycles = [c for c in import_cycles(import_graph(PROJECT_FILES)) if c not in KNOWN_CYCLES]
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)
