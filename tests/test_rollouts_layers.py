"""The layers inside rollouts/ (../shared/ARCHITECTURE.md, "Layers inside rollouts/"),
checked like the floors between core, adapters and rollouts (tests/test_imports.py):

    leaves < model < drivers < records < running < analysis < play < training < cli

A module imports only from its own layer and the layers below, even lazily inside a
function. The leaves (the framework manifest, the docs marker splice, the rollout
record) import nothing of gamebridge. ``analysis`` (summary, report, export) only reads
records: from rollouts it imports the record types, the leaves and the other analysis
modules, nothing that runs episodes.
No arrow points up (the last four went in issue 31); a new one fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # (layer, dotted prefixes of its modules; the longest matching prefix wins)
    ("leaves", ("rollouts.frameworks", "rollouts.markers", "rollouts.record")),
    ("model", ("rollouts.model",)),
    ("drivers", ("rollouts.drivers",)),
    ("records", ("rollouts.evaluation.records",)),
    (
        "running",
        (
            "rollouts.evaluation.compare",
            "rollouts.evaluation.load",
            "rollouts.evaluation.load_sessions",
            "rollouts.evaluation.arena",
            "rollouts.evaluation.ray_check",
        ),
    ),
    ("analysis", ("rollouts.evaluation",)),
    ("play", ("rollouts.play",)),
    ("training", ("rollouts.training",)),
    ("cli", ("rollouts",)),
)
RECORD_TYPES = ("rollouts.record", "rollouts.evaluation.records")
"""What analysis may read besides the leaves: ``RolloutRecord`` and the records file."""


def layer_of(module: str) -> int | None:
    """The rank of the layer ``module`` belongs to (None outside rollouts)."""
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), rank)
    return best[1] if best else None


def _submodule(base: str, name: str) -> str:
    """``base.name`` if that is a module or package in the tree, else ``base``."""
    path = ROOT.joinpath(*base.split("."), name)
    return f"{base}.{name}" if path.with_suffix(".py").is_file() or path.is_dir() else base


def rollouts_imports(source: str, module: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every rollouts module a file imports, lazily or not
    (``from a.b import c`` counts as ``a.b.c`` where that is a module, else ``a.b``).
    ``module`` is the file's own dotted name, as a package's ``__init__``'s is
    ``pkg.__init__``, for relative imports."""
    package = module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                keep = package[: max(len(package) - (node.level - 1), 0)]
                base = ".".join([*keep, *([node.module] if node.module else [])])
            names = [_submodule(base, alias.name) for alias in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in dict.fromkeys(names) if n.split(".")[0] == "rollouts"]
    return found


def _imports(path: Path) -> list[tuple[int, str]]:
    dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return rollouts_imports(path.read_text(encoding="utf-8"), dotted)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _upward_arrows() -> list[tuple[str, int, str, str, str]]:
    arrows = []
    for path in sorted((ROOT / "rollouts").rglob("*.py")):
        own = layer_of(_module(path))
        assert own is not None, path
        for line, target in _imports(path):
            rank = layer_of(target)
            if rank is not None and rank > own:
                rel = path.relative_to(ROOT).as_posix()
                arrows.append((rel, line, target, LAYERS[own][0], LAYERS[rank][0]))
    return arrows


def test_no_new_upward_import_inside_rollouts() -> None:
    new = [
        f"{rel}:{line}: {low} imports {high} ({target})"
        for rel, line, target, low, high in _upward_arrows()
    ]
    assert not new, "an import points up a layer:\n" + "\n".join(new)


def test_analysis_only_reads_records() -> None:
    bad = []
    for path in sorted((ROOT / "rollouts" / "evaluation").glob("*.py")):
        if LAYERS[layer_of(_module(path)) or 0][0] != "analysis":
            continue
        for line, target in _imports(path):
            is_record = any(target == t or target.startswith(t + ".") for t in RECORD_TYPES)
            rank = layer_of(target)
            if not is_record and (rank is None or LAYERS[rank][0] not in ("leaves", "analysis")):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not bad, "analysis imports something other than records:\n" + "\n".join(bad)


PROJECT = ("core", "adapters", "rollouts", "bench", "server")


def test_leaves_import_nothing_of_gamebridge() -> None:
    """A leaf (standard library only) may be read by every wing, bench and the docs
    tools, which load some of them by path."""
    bad = []
    for path in sorted((ROOT / "rollouts").rglob("*.py")):
        if layer_of(_module(path)) != 0:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = ["." * node.level + (node.module or "")]
            else:
                continue
            bad += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {name}"
                for name in names
                if name.startswith(".") or name.split(".")[0] in PROJECT
            ]
    assert not bad, "a leaf imports gamebridge:\n" + "\n".join(bad)


def test_layers_and_the_scan_itself() -> None:
    assert layer_of("rollouts.evaluation.summary") == 5
    assert layer_of("rollouts.evaluation.compare") == 4
    assert layer_of("rollouts.cli") == len(LAYERS) - 1
    assert layer_of("core.episode") is None
    source = (
        "from __future__ import annotations\n"
        "import rollouts.model.client\n"
        "def f():\n"
        "    from ..training import tiny\n"
        "    from .base import RolloutRecord\n"
    )
    assert rollouts_imports(source, "rollouts.drivers.executors") == [
        (2, "rollouts.model.client"),
        (4, "rollouts.training.tiny"),
        (5, "rollouts.drivers.base"),
    ]
    assert rollouts_imports("from . import base, DRIVERS", "rollouts.drivers.__init__") == [
        (1, "rollouts.drivers.base"),
        (1, "rollouts.drivers"),
    ]
