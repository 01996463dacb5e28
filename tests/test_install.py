"""`make setup` built the environments pyproject.toml describes.

- Every exact pin (``name==version``) in the ``all`` and ``dev`` extras is the installed version.
- Each framework's entry module is importable (found, not imported: importing them all
  takes half a minute, the adapters' own tests do that).
- .venv-nemo holds nemo-gym 0.4.0 with the Gymnasium-style resources server, and `core`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rollouts.frameworks import FRAMEWORKS

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
NEMO_PY = ROOT / ".venv-nemo" / "bin" / "python"


def expand_extra(name: str) -> list[str]:
    """Requirement strings of an extra, with self-references (``gamebridge[a,b]``) expanded."""
    out: list[str] = []
    for req in EXTRAS[name]:
        m = re.fullmatch(r"gamebridge\[([\w,\s-]+)\]", req)
        if m:
            for sub in m.group(1).split(","):
                out.extend(expand_extra(sub.strip()))
        else:
            out.append(req)
    return out


def exact_pins(reqs: list[str]) -> dict[str, str]:
    """``{distribution: version}`` for requirements of the form ``name==version``."""
    pins = {}
    for req in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", req.strip())
        if m:
            pins[m.group(1)] = m.group(2)
    return pins


def test_expand_extra_follows_self_references() -> None:
    reqs = expand_extra("all")
    assert "verifiers==0.4.0" in reqs
    assert "torch==2.13.0" in reqs
    assert not any(r.startswith("gamebridge") for r in reqs)
    assert not any(r.startswith("nemo-gym") for r in reqs), "nemo cannot share .venv"


VENV_PINS = exact_pins(expand_extra("all") + expand_extra("dev"))


@pytest.mark.parametrize("dist", sorted(VENV_PINS))
def test_pinned_version_is_installed(dist: str) -> None:
    try:
        installed = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{dist} is not installed: run `make setup`")
    # torch's CPU wheel carries a local version label: 2.13.0+cpu.
    assert installed.split("+")[0] == VENV_PINS[dist], f"{dist}: {installed} != {VENV_PINS[dist]}"


FRAMEWORK_MODULES = [
    f.entry_module for f in FRAMEWORKS.values() if f.venv == ".venv" and f.entry_module
]
"""The entry module of every framework the project venv holds (the manifest's rows)."""


@pytest.mark.parametrize(
    "module",
    [
        *FRAMEWORK_MODULES,
        "transformers",
        "torch",
        "pyspiel",
        "fastapi",
        "uvicorn",
        "httpx",
        "aiohttp",
        "openai",
    ],
)
def test_framework_module_is_found(module: str) -> None:
    assert module_is_installed(module), f"{module} missing: run `make setup`"


def module_is_installed(dotted: str) -> bool:
    """True when ``dotted`` resolves to a module or package, without importing any of it.

    (``importlib.util.find_spec("a.b")`` imports ``a``, which takes seconds for some frameworks.)
    """
    top, *rest = dotted.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None:
        return False
    if not rest:
        return True
    for location in spec.submodule_search_locations or []:
        base = Path(location).joinpath(*rest)
        if (base / "__init__.py").is_file() or base.with_suffix(".py").is_file():
            return True
    return False


def test_module_is_installed_says_no_for_a_missing_submodule() -> None:
    assert module_is_installed("json.decoder")
    assert not module_is_installed("json.no_such_module")
    assert not module_is_installed("no_such_package_gamebridge")


@pytest.mark.nemo
def test_nemo_venv_has_nemo_gym_and_core() -> None:
    if not NEMO_PY.exists():
        pytest.skip(".venv-nemo not built (no Python >= 3.12 found by `make setup`)")
    probe = (
        "import importlib.metadata as md, importlib.util as u, sys\n"
        "print(sys.version_info[:2] >= (3, 12))\n"
        "print(md.version('nemo-gym'))\n"
        "print(u.find_spec('resources_servers.gymnasium') is not None)\n"
        "import core; print(core.__file__)\n"
    )
    result = subprocess.run(
        [str(NEMO_PY), "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    py312, version, has_gym, core_file = result.stdout.split()
    assert py312 == "True"
    assert version == exact_pins(EXTRAS["nemo"])["nemo-gym"]
    assert has_gym == "True"
    assert Path(core_file).resolve().parent == (ROOT / "core").resolve()


ORS_PY = ROOT / ".venv-ors" / "bin" / "python"


def test_ors_venv_has_openreward_trl_and_core() -> None:
    """.venv-ors: the ``ors``, ``trl`` and ``rollouts`` extras at their pins, and ``core``."""
    if not ORS_PY.exists():
        pytest.skip(".venv-ors not built (`make setup-ors`)")
    pins = exact_pins(expand_extra("ors") + expand_extra("trl"))
    probe = (
        "import importlib.metadata as md, json, sys\n"
        f"print(json.dumps({{d: md.version(d) for d in {sorted(pins)!r}}}, separators=(',', ':')))\n"
        "import core; print(core.__file__)\n"
    )
    result = subprocess.run(
        [str(ORS_PY), "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    versions, core_file = result.stdout.split()
    import json

    for dist, version in json.loads(versions).items():
        assert version.split("+")[0] == pins[dist], f"{dist}: {version} != {pins[dist]}"
    assert Path(core_file).resolve().parent == (ROOT / "core").resolve()


def test_ors_is_not_in_all() -> None:
    """openreward pins sse-starlette 2.3.6; Verifiers' mcp 2.0 needs >= 3 (docs/ors.md)."""
    assert not any(r.startswith("openreward") for r in expand_extra("all"))
    assert exact_pins(EXTRAS["ors"]) == {"openreward": "0.1.167"}


def test_current_openenv_is_not_in_all() -> None:
    """``openenv`` 0.10 needs fastmcp < 4 (mcp < 2); Verifiers 0.4.0 pins mcp==2.0.0
    (docs/openenv.md): .venv keeps ``openenv-core`` 0.3.0, .venv-openenv has 0.10."""
    reqs = expand_extra("all")
    assert not any(r.startswith("openenv==") for r in reqs)
    assert "openenv-core==0.3.0" in reqs
    assert exact_pins(EXTRAS["openenv"]) == {"openenv": "0.10.0"}


def test_this_is_the_project_venv() -> None:
    """The suite runs in a Python 3.11+ interpreter where gamebridge is installed (editable)."""
    assert sys.version_info >= (3, 11)
    assert importlib.metadata.version("gamebridge")
