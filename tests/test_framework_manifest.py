"""The framework manifest (rollouts/frameworks.py) is the one place frameworks are
listed: its rows match the tree, and no other file holds a list of their names."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from rollouts.frameworks import FRAMEWORKS, aliases, driver_table, framework_of, servers

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("core", "adapters", "rollouts", "bench", "docs/tools", "server", "tests")
ALLOWED: dict[str, str] = {
    # path -> why a literal list of framework names is right there
    "tests/rollouts/test_ray_executor.py": "asserts a fact of four named drivers "
    "(they run their own batch), not a registry",
    "tests/test_framework_manifest.py": "the check's own examples",
}


def _names() -> set[str]:
    """Every way a framework is named: id, driver names, title, aliases, adapter."""
    names: set[str] = set()
    for f in FRAMEWORKS.values():
        names |= {f.id, f.title, *f.aliases, *(name for name, _ in f.driver_names())}
        if f.adapter:
            names.add(f.adapter)
    names.discard("core")  # also the name of the floor below everything
    return names


def _stray_lists(source: str, names: set[str]) -> list[tuple[int, list[str]]]:
    """``(line, names)`` of each list, tuple or set literal naming three frameworks or
    more. Dicts are per-framework facts (labels, budgets, routes), not lists."""
    tree = ast.parse(source)
    unpacked = {  # ``A, B, C = "openenv", "nemo_gym", "ors"``: short names, not a list
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set) and id(node) not in unpacked:
            named = sorted(
                {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names}
            )
            if len(named) >= 3:
                found.append((node.lineno, named))
    return found


def test_no_list_of_framework_names_outside_the_manifest() -> None:
    names = _names()
    stray = []
    paths = [ROOT / "gamebridge_verifiers.py"]
    for top in SCANNED:
        paths += sorted((ROOT / top).rglob("*.py"))
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        if rel == "rollouts/frameworks.py" or rel in ALLOWED or "__pycache__" in rel:
            continue
        stray += [f"{rel}:{line}: {named}" for line, named in _stray_lists(path.read_text(), names)]
    assert not stray, "list the frameworks from rollouts.frameworks instead:\n" + "\n".join(stray)


def test_the_stray_list_check_finds_one() -> None:
    names = _names()
    source = (
        'SERVERS = ("openenv", "nemo_gym", "ors")\nLABELS = {"openenv": 1, "gem": 2, "trl": 3}\n'
    )
    assert _stray_lists(source, names) == [(1, ["nemo_gym", "openenv", "ors"])]
    assert _stray_lists('X = ["GEM", "SkyRL Gym", "TRL"]', names) == [
        (1, ["GEM", "SkyRL Gym", "TRL"])
    ]
    assert _stray_lists('X = ("core", "gem")', names) == []
    assert _stray_lists('A, B, C = "openenv", "nemo_gym", "ors"', names) == []


def test_every_row_points_at_code_that_exists() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for f in FRAMEWORKS.values():
        for _, target in f.drivers:
            module, _, cls = target.partition(":")
            path = ROOT / (module.replace(".", "/") + ".py")
            assert f"class {cls}" in path.read_text(), target
        for rel in f.adapter_paths:
            assert (ROOT / rel).exists(), rel
        if f.extra:
            assert f.extra in extras, f"{f.id}: no extra {f.extra!r} in pyproject.toml"
        if f.floor:
            assert (ROOT / (f.floor.replace(".", "/") + ".py")).is_file(), f.floor
        assert (ROOT / f.venv).name.startswith(".venv")


def test_every_adapter_folder_has_a_row() -> None:
    folders = {
        p.name
        for p in (ROOT / "adapters").iterdir()
        if p.is_dir() and not p.name.startswith(("_", "."))
    }
    assert folders == {f.adapter.split(".")[1] for f in FRAMEWORKS.values() if f.adapter}


def test_readers_take_their_lists_from_the_manifest() -> None:
    from rollouts import cli
    from rollouts.drivers import DRIVERS
    from rollouts.evaluation.load import SERVERS

    assert driver_table() == DRIVERS
    assert list(DRIVERS)[:3] == ["core", "verifiers", "openenv"]
    assert cli.FRAMEWORK_ALIASES == aliases() == {"skyrl": "skyrl_gym"}
    assert set(SERVERS) <= set(servers())
    assert framework_of("openenv_tools").title == "OpenEnv"
    assert framework_of("nemo_gym").install_hint() == "make setup-nemo"
    assert framework_of("skyrl_gym").install_hint() == "pip install -e '.[skyrl]'"
