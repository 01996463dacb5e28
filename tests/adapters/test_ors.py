"""The ORS adapter. openreward lives in .venv-ors (its sse-starlette pin clashes with
Verifiers'), so the in-process checks (tests/adapters/ors_inprocess.py) run there;
the server is tested as a process by tests/reliability and tests/conformance."""

from __future__ import annotations

import subprocess

import pytest

from rollouts.drivers.ors import ROOT, ors_python


@pytest.mark.skipif(not ors_python().exists(), reason="no .venv-ors (make setup-ors)")
def test_in_process_checks_pass_in_the_ors_venv() -> None:
    done = subprocess.run(
        [str(ors_python()), "-m", "pytest", "tests/adapters/ors_inprocess.py", "-o",
         "addopts=--strict-markers", "-q",
         "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "9 passed" in done.stdout, done.stdout[-2000:]


def test_the_driver_is_registered_and_the_adapter_imports_lazily() -> None:
    from rollouts.drivers import DRIVERS, get_driver

    assert DRIVERS["ors"] == "rollouts.drivers.ors:ORSDriver"
    assert get_driver("ors").name == "ors"
    import adapters.ors

    with pytest.raises(AttributeError):
        adapters.ors.no_such_name  # noqa: B018
