"""``make fuzz``, second part: random request bodies against every server: 4xx, never 5xx.

    python tests/fuzz/bodies.py                 # 300 bodies per route, seed 0
    python tests/fuzz/bodies.py --bodies 50 --seed 3

Servers: OpenEnv (``/reset``, ``/step``), NeMo Gym gymnasium and tools style, ORS
(``/create`` and the session calls), each started as its driver starts it (NeMo Gym
with ``.venv-nemo``, ORS with ``.venv-ors``), and the policy server in a thread. Each
body is one of: a random JSON value; the route's fields with random values; a good
body with one leaf replaced; nesting 10 to 100,000 levels deep; JSON cut short;
bytes that are not UTF-8; lone surrogates; numbers no float holds (``1e999``,
``NaN``); strings up to 64 KB. Any answer of 500 or more (or no answer) is a
finding: printed with the body, exit 1. Prints the answers' statuses per server.
``tests/reliability/test_fuzz_bodies.py`` runs a bounded version in ``make test``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.tasks import Task  # noqa: E402

TASK = Task(game="tictactoe", seed=1).to_dict()
ROUTES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "openenv": [
        ("/reset", {"seed": 1, "task": TASK}),
        ("/step", {"action": {"reply": "<move>4</move>"}}),
    ],
    "nemo_gym": [
        ("/reset", {"task": TASK, "responses_create_params": {"input": []}}),
        ("/step", {"task": TASK, "response": {"output": []}}),
        ("/aggregate_metrics", {"verify_responses": [{"reward": 1.0}]}),
    ],
    "nemo_gym_tools": [
        ("/seed_session", {"task": TASK, "responses_create_params": {"input": []}}),
        ("/make_move", {"move": "4"}),
        ("/verify", {"task": TASK, "response": {"output": []}}),
    ],
    "ors": [
        ("/create", {"task_spec": TASK}),
        ("/gamebridge/call", {"name": "make_move", "input": {"move": "4"}}),
        ("/gamebridge/tasks", {"split": "train"}),
        ("/gamebridge/task", {"split": "train", "index": 0}),
        ("/delete", {}),
    ],
    "policy": [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
        ("/v1/responses", {"input": "hi", "instructions": "x"}),
    ],
}
"""Each server's POST routes, with a well-formed body to mutate."""


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**63, 2**70, -(2**70), rng.randrange(-99, 99)])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e-320, 3.14])
    if kind in (4, 5):
        return _text(rng)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["task", "seed", "game", "move", "reply", "action", "input", "name", "messages"]
    return {
        rng.choice([*keys, _text(rng)]): _value(rng, depth + 1) for _ in range(rng.randrange(4))
    }


def _text(rng: random.Random) -> str:
    pieces = ["<move>4</move>", "4", "", " ", "\u0000", "\u202e", "é", "🂡", "\\", '"', "{", "["]
    if rng.random() < 0.05:
        return "x" * rng.choice([1024, 65536])
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(6)))


def _mutate(rng: random.Random, good: Any) -> Any:
    if isinstance(good, dict) and good and rng.random() < 0.8:
        key = rng.choice(list(good))
        return {**good, key: _mutate(rng, good[key])}
    if isinstance(good, list) and good and rng.random() < 0.8:
        i = rng.randrange(len(good))
        return [*good[:i], _mutate(rng, good[i]), *good[i + 1 :]]
    return _value(rng)


def bodies(rng: random.Random, good: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
    """Endless ``(kind, body)`` pairs for a route whose good body is ``good``."""
    while True:
        kind = rng.choice(
            ["value", "fields", "mutated", "deep", "cut", "bytes", "surrogate", "number"]
        )
        if kind == "value":
            body = json.dumps(_value(rng)).encode()
        elif kind == "fields":
            body = json.dumps({k: _value(rng) for k in good}).encode()
        elif kind == "mutated":
            body = json.dumps(_mutate(rng, good)).encode()
        elif kind == "deep":
            n = rng.choice([10, 63, 64, 65, 100, 1000, 100_000])
            opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
            body = (opener * n + "1" + closer * (n if rng.random() < 0.5 else 0)).encode()
        elif kind == "cut":
            whole = json.dumps(good).encode()
            body = whole[: rng.randrange(len(whole))]
        elif kind == "bytes":
            body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif kind == "surrogate":
            body = json.dumps(good).replace('"4"', '"\\ud800"').replace('"hi"', '"\\udfff"')
            body = body.encode() if "\\ud" in body else b'{"move": "\\udc00"}'
        else:
            number = rng.choice(["1e999", "-1e999", "NaN", "Infinity", "1" * 5000])
            body = json.dumps(good).replace("1", number, 1).encode()
        yield kind, body


def fuzz_server(
    name: str, base: str, n: int, seed: int, post: Callable[..., Any]
) -> tuple[Counter[int], list[str]]:
    """``n`` bodies on each of ``name``'s routes: statuses and findings (5xx, no answer)."""
    statuses: Counter[int] = Counter()
    findings: list[str] = []
    rng = random.Random(f"{seed}-{name}")
    for path, good in ROUTES[name]:
        source = bodies(rng, good)
        for _ in range(n):
            kind, body = next(source)
            headers = {"content-type": "application/json"}
            if name == "ors":
                headers["X-Session-ID"] = str(uuid.UUID(int=rng.getrandbits(128)))
            try:
                status = post(base + path, content=body, headers=headers).status_code
            except Exception as e:  # no answer at all is a finding too
                status = 599
                kind += f" ({type(e).__name__})"
            statuses[status] += 1
            if status >= 500:
                findings.append(f"{name} POST {path} [{kind}] -> {status}: {body[:200]!r}")
    return statuses, findings


def main(argv: list[str] | None = None) -> int:
    import httpx

    from rollouts.drivers.nemo_gym import _start_together
    from rollouts.evaluation.load import SERVERS, server_manager
    from rollouts.model.policy_server import serve_in_thread

    sys.path.insert(0, str(ROOT / "tests" / "reliability"))
    from reliability_servers import can_start

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bodies", type=int, default=300, help="bodies per route")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    names = [s for s in SERVERS if can_start(s)]
    findings: list[str] = []
    with ExitStack() as stack, httpx.Client(timeout=60) as http:
        managers = [server_manager(n, 8, 60.0, 256) for n in names]
        running = _start_together(managers)
        for manager in managers:
            stack.callback(manager.__exit__, None, None, None)
        urls = {n: str(s.base_url) for n, s in zip(names, running, strict=True)}
        urls["policy"] = stack.enter_context(serve_in_thread("random")).removesuffix("/v1")
        for name, base in urls.items():
            statuses, found = fuzz_server(name, base, args.bodies, args.seed, http.post)
            findings += found
            shown = ", ".join(f"{s}: {c}" for s, c in sorted(statuses.items()))
            print(f"{name:15s} {sum(statuses.values()):6d} bodies  {shown}", flush=True)
    for line in findings[:20]:
        print("FINDING", line)
    print(f"{len(findings)} findings (5xx or no answer): {'none' if not findings else 'FAIL'}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
