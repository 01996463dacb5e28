"""docs/add-a-framework.md, done: its adapter and driver blocks written as files (in a
scratch folder the packages search too), its manifest row added, and the toy framework
run through the conformance suite's check against core (every game, event by event)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import adapters
import rollouts.drivers
from core.games import list_games
from core.tasks import make_tasks
from rollouts.drivers import DRIVERS, driver_status, get_driver
from rollouts.drivers.core import CoreDriver
from rollouts.frameworks import FRAMEWORKS, TEXT, TOOLS, Framework

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "add-a-framework.md"
POLICY = "noisy:0.3/minimax:1"  # the conformance suite's: malformed and illegal replies too


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Framework]:
    adapter, driver, row = _blocks()
    (tmp_path / "adapters" / "toy").mkdir(parents=True)
    (tmp_path / "adapters" / "toy" / "__init__.py").write_text(adapter)
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "toy.py").write_text(driver)
    monkeypatch.setattr(adapters, "__path__", [*adapters.__path__, str(tmp_path / "adapters")])
    monkeypatch.setattr(
        rollouts.drivers, "__path__", [*rollouts.drivers.__path__, str(tmp_path / "drivers")]
    )
    framework = eval(row, {"Framework": Framework, "TEXT": TEXT, "TOOLS": TOOLS})
    monkeypatch.setitem(FRAMEWORKS, framework.id, framework)
    for name, target in framework.driver_names():
        monkeypatch.setitem(DRIVERS, name, target)
    yield framework
    for module in ("adapters.toy", "rollouts.drivers.toy"):
        sys.modules.pop(module, None)


def test_the_page_has_an_adapter_a_driver_and_a_row() -> None:
    adapter, driver, row = _blocks()
    assert "class ToyEnv" in adapter and "from rollouts" not in adapter
    assert "class ToyDriver(Driver)" in driver
    assert row.startswith("Framework(")


def test_the_toy_framework_passes_conformance(toy: Framework) -> None:
    from rollouts.cli import _framework
    from rollouts.model.policy_server import serve_in_thread

    assert _framework("toy") == "toy"  # the CLI takes it from the manifest
    assert driver_status("toy") == (True, "")
    tasks = [t for game in list_games() for t in make_tasks(2, seed=11, game=game)]
    with serve_in_thread(POLICY, seed=0) as url:
        reference = CoreDriver().run(tasks, base_url=url, model="scripted", concurrency=2)
        got = get_driver("toy").run(tasks, base_url=url, model="scripted", concurrency=2)
    assert len(got) == len(reference) == len(tasks)
    invalid: list[Any] = []
    for rec, ref in zip(got, reference, strict=True):
        assert rec.error is None, rec.error
        assert rec.framework == "toy" and rec.task == ref.task
        events, ref_events = rec.trajectory["events"], ref.trajectory["events"]
        assert len(events) == len(ref_events), ref.trajectory["task_id"]
        for i, (event, ref_event) in enumerate(zip(events, ref_events, strict=True)):
            assert event == ref_event, f"{ref.trajectory['task_id']}: event {i} differs"
        assert rec.trajectory == ref.trajectory
        assert rec.reward == ref.reward
        assert rec.steps == ref.steps
        invalid += [e for e in events if e["error"] is not None]
    assert invalid, "the noisy player sent no bad reply: the check saw no rejection"
