"""OpenEnv as its users install it today: ``openenv`` 0.10 (the renamed
``openenv-core``), which cannot share ``.venv`` with Verifiers 0.4.0 (it needs
fastmcp < 4, so mcp < 2; Verifiers pins mcp==2.0.0). ``make setup-openenv`` builds
``.venv-openenv``; there the adapter's own tests and the conformance suite's
OpenEnv rows run unchanged (the same files ``.venv`` runs on ``openenv-core``
0.3.0): the same trajectories and rewards as core, event by event."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPENENV_PY = ROOT / ".venv-openenv" / "bin" / "python"
PIN = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]["openenv"]
needs_venv = pytest.mark.skipif(
    not OPENENV_PY.exists(), reason="no .venv-openenv (make setup-openenv)"
)
SUITE = [
    "tests/adapters/test_openenv.py",
    "tests/adapters/test_openenv_idioms.py",
    "tests/conformance",
]


def test_the_extra_is_the_current_package() -> None:
    assert PIN == ["openenv==0.10.0"]


@needs_venv
def test_the_venv_holds_openenv_not_openenv_core() -> None:
    probe = (
        "import importlib.metadata as md, importlib.util as u, json\n"
        "def v(d):\n"
        "    try: return md.version(d)\n"
        "    except md.PackageNotFoundError: return None\n"
        "print(json.dumps({'openenv': v('openenv'), 'openenv-core': v('openenv-core'),"
        " 'fastmcp': v('fastmcp'), 'mcp': v('mcp'), 'verifiers': v('verifiers')}))\n"
    )
    done = subprocess.run(
        [str(OPENENV_PY), "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["openenv"] == PIN[0].split("==")[1]
    assert found["openenv-core"] is None  # both install the `openenv` package
    assert found["verifiers"] is None
    assert int(found["fastmcp"].split(".")[0]) == 3 and int(found["mcp"].split(".")[0]) == 1


@needs_venv
def test_the_adapter_and_conformance_pass_on_current_openenv() -> None:
    done = subprocess.run(
        [str(OPENENV_PY), "-m", "pytest", *SUITE, "-k", "openenv",
         "-o", "addopts=--strict-markers", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )  # fmt: skip
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", tail))
    assert counts.get("failed", 0) == 0 and counts.get("error", 0) == 0, tail
    # The adapter's two files (20 tests) and the conformance rows of both OpenEnv
    # drivers for every game: nothing skipped for want of the framework.
    assert counts.get("passed", 0) >= 70, tail
    assert counts.get("skipped", 0) == 0, tail
