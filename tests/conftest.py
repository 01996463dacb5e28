"""The order ``make test``'s two pytest-xdist workers take the files in.

``make pytest`` runs ``-n 2 --dist loadfile --no-loadscope-reorder``: each file
runs whole on one worker (a file's module fixtures, servers among them, start
once, and the docs blocks that build on each other stay in order), and the files
are handed out in collection order. Files that take a minute or more go first,
longest first, so the run does not end with one worker alone on ``make demo``
(longest-processing-time-first scheduling), ranked by their wall time in a
serial ``make test`` (``--durations``); a file not listed keeps its place after
them. Order changes nothing a test asserts.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = (
    "tests/docs/test_docs.py",
    "tests/conformance/test_conformance.py",
    "tests/test_make_demo.py",
    "tests/conformance/test_edges.py",
    "tests/faults/test_faults.py",
    "tests/reliability/test_bad_requests.py",
    "tests/adapters/test_openenv_current.py",
    "tests/trl/test_recipe.py",
    "tests/trl/test_reduced_othello.py",
    "tests/trl/test_reduced_connect_four.py",
    "tests/trl/test_reduced_wordle.py",
    "tests/trl/test_policy_model.py",
    "tests/trl/test_trl_learning.py",
    "tests/trl/test_trl_ddp.py",
    "tests/faults/test_openenv_sessions.py",
    "tests/trl/test_trl_openreward.py",
    "tests/test_bench_servers.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
