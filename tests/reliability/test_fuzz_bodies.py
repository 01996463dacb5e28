"""A bounded run of ``make fuzz``'s body fuzzer (tests/fuzz/bodies.py): random bodies on
every POST route of every server (random JSON, wrong types, mutated good bodies, deep
nesting, JSON cut short, bytes that are not UTF-8, lone surrogates, 1e999/NaN, long
strings) get an answer under 500, and the servers keep serving."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from rollouts.evaluation.load import SERVERS

pytestmark = pytest.mark.server
BODIES = 25
"""Per route and server here; ``make fuzz`` sends 300."""


def _bodies_module() -> Any:
    # By path: tests/fuzz is not a package, and its run.py would shadow tests/faults/run.py.
    path = Path(__file__).resolve().parents[1] / "fuzz" / "bodies.py"
    spec = importlib.util.spec_from_file_location("fuzz_bodies", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_bodies", module)
    spec.loader.exec_module(module)
    return module


BODIES_MODULE = _bodies_module()


@pytest.mark.parametrize("server", [*SERVERS, "policy"])
def test_random_bodies_get_4xx_never_5xx(server: str, reliability_servers: dict[str, Any]) -> None:
    if server == "policy":
        from rollouts.model.policy_server import serve_in_thread

        with serve_in_thread("random") as url, httpx.Client(timeout=60) as http:
            _check(server, url.removesuffix("/v1"), http)
        return
    if server not in reliability_servers:
        pytest.skip(f"{server} is not running here")
    with httpx.Client(timeout=60) as http:
        _check(server, str(reliability_servers[server].base_url), http)


def _check(server: str, base: str, http: httpx.Client) -> None:
    statuses, findings = BODIES_MODULE.fuzz_server(server, base, BODIES, 0, http.post)
    assert findings == [], "\n".join(findings[:5])
    assert sum(statuses.values()) == BODIES * len(BODIES_MODULE.ROUTES[server])
    alive = "/health" if server == "policy" else "/sessions"  # every env server has /sessions
    assert http.get(base + alive).status_code == 200  # still serving
