"""Every gamebridge server against its framework's floor, in the same run.

    python -m bench.servers                      # 5 rounds; rewrites docs/performance.md's section
    python -m bench.servers --rounds 2 --episodes 1 --servers openenv --no-doc

For each server (OpenEnv's WebSocket server, NeMo Gym's gymnasium and tool servers,
ORS) the adapter and the framework's floor (``bench/floors/``: a minimal Tic-Tac-Toe
environment written as the framework's own examples, started the same way) run side by
side; each round measures both, their order alternating:

* p50 and p99 step latency (client-measured, one reply or tool call -> observation)
  with 1 client playing games one after the other;
* steps/s with ``--sessions`` (64) concurrent client sessions.

Both sides are driven by the same client session (``rollouts.drivers.<framework>``) and
the same scripted player (``core.players.ScriptedPlayer``, random legal moves, seeded
per client) on Tic-Tac-Toe tasks against a random opponent. Each row is the ratio
adapter / floor per round (median, min-max over the rounds): a latency ratio above 1
or a throughput ratio below 1 is what the adapter costs. OpenEnv's adapter also runs
started without ``adapters._reclaim.SERVER_ENV`` (pymalloc), for the allocator's cost.

``make load`` (after the load test) and ``make bench`` run this and rewrite the
``servers:`` section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from bench.report import (
    DOC,
    ROOT,
    Row,
    Target,
    generated_section,
    load_average,
    machine,
    write_doc,
)

LABELS = {
    "openenv": "OpenEnv (WebSocket)",
    "nemo_gym": "NeMo Gym gymnasium (HTTP)",
    "nemo_gym_tools": "NeMo Gym tools (HTTP)",
    "ors": "ORS (HTTP + SSE)",
    "verifiers": "Verifiers (in process, interception server)",
}
SERVERS = tuple(LABELS)
"""The servers measured against their floor: one label each (driver names of the
framework manifest, ``rollouts.frameworks``)."""
VERIFIERS_FLOOR_ID = "tictactoe-floor"
"""The Verifiers floor's taskset id (``bench.floors.verifiers``, registered as the
top-level module ``tictactoe_floor``: Verifiers imports a taskset id as one)."""
BEGIN = "<!-- servers:begin (written by `make load` and `make bench`; edits between these markers are lost) -->"
END = "<!-- servers:end -->"
POLICY = "random"
"""Random legal moves: every step does the whole work (parse, apply, reply, render)."""
P50_TARGET = Target(1.10, at_least=False)
RATE_TARGET = Target(0.90)


@dataclass(frozen=True)
class Sizes:
    rounds: int = 5
    latency_games: int = 30
    """Games the single client plays per round and side (about 4 steps each)."""
    sessions: int = 64
    episodes: int = 3
    """Games each of the concurrent sessions plays per round and side."""


QUICK = Sizes(rounds=1, latency_games=1, sessions=2, episodes=1)


@dataclass
class Run:
    """One measurement of one side."""

    latencies: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def percentile(self, q: float) -> float:
        data = sorted(self.latencies)
        return data[min(len(data) - 1, int(q * len(data)))] * 1000 if data else float("nan")

    server_cpu: float = 0.0
    """CPU seconds the server process used during the run (``/proc``; 0 where unknown)."""

    @property
    def rate(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    @property
    def cpu_per_step(self) -> float:
        """Server CPU milliseconds per step (load from other processes barely moves it)."""
        return self.server_cpu / self.steps * 1000 if self.steps else float("nan")


def process_cpu(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) so far; 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the sides --------------------------------------------------------------------------


def floor_manager(server: str, cap: int) -> AbstractContextManager[Any]:
    """The floor of ``server``, started as its adapter is (``load.server_manager``)."""
    from rollouts.model.servers import start_server

    if server == "openenv":
        from adapters._reclaim import SERVER_ENV

        argv = [sys.executable, "-m", "bench.floors", "openenv", "--port", "{port}"]
        argv += ["--max-sessions", str(cap)]
        return start_server(argv, "/health", SERVER_ENV, cwd=ROOT)
    if server == "ors":
        from rollouts.drivers.ors import server_python

        argv = ["python", "-m", "bench.floors", "ors", "--port", "{port}"]
        return start_server(argv, "/health", {"PYTHONUNBUFFERED": "1"}, server_python(), cwd=ROOT)
    from rollouts.drivers.nemo_gym import nemo_python

    style = "tools" if server == "nemo_gym_tools" else "gymnasium"
    argv = ["python", "-m", "bench.floors", "nemo_gym", "--style", style, "--port", "{port}"]
    return start_server(argv, "/", {"PYTHONUNBUFFERED": "1"}, str(nemo_python()), cwd=ROOT)


@contextmanager
def _policy_server() -> Iterator[Any]:
    """Verifiers runs its env in process, as the Verifiers driver does: what is started
    is the scripted model endpoint (core's ``ScriptedPlayer``, random moves)."""
    from rollouts.model.policy_server import serve_in_thread

    with serve_in_thread(POLICY, seed=0) as url:
        yield SimpleNamespace(base_url=url, process=SimpleNamespace(pid=os.getpid()))


def sides(server: str, sessions: int) -> dict[str, Callable[[], AbstractContextManager[Any]]]:
    """``{"adapter": ..., "floor": ...}`` (and OpenEnv's adapter under pymalloc)."""
    from rollouts.evaluation.load import server_manager

    if server == "verifiers":
        return {"adapter": _policy_server, "floor": _policy_server}

    cap = 3 * sessions + 8
    out: dict[str, Callable[[], AbstractContextManager[Any]]] = {
        "adapter": lambda: server_manager(server, sessions, 600.0, cap),
        "floor": lambda: floor_manager(server, cap),
    }
    if server == "openenv":
        out["pymalloc"] = lambda: server_manager(server, sessions, 600.0, cap, system_malloc=False)
    return out


# --- playing ----------------------------------------------------------------------------


def _client(server: str, side: str, url: str, index: int, episodes: int, run: Run) -> None:
    """One client: ``episodes`` Tic-Tac-Toe games through ``server``'s client session."""
    import httpx

    from core.players import ScriptedPlayer
    from core.tasks import Task
    from rollouts.drivers.nemo_gym import NemoGymSession, NemoGymToolsSession, nemo_response
    from rollouts.drivers.openenv import OpenEnvSession
    from rollouts.drivers.ors import ORSWireSession
    from rollouts.evaluation.load import LoadReport, _counter, _play

    report = LoadReport(server, 1)
    player = ScriptedPlayer(POLICY, seed=index)
    shared = httpx.Client(base_url=url, timeout=120) if server in ("nemo_gym", "ors") else None
    try:
        for j in range(episodes):
            task = Task(game="tictactoe", seed=index * 1000 + j, opponent="random", model_player=0)
            session: Any
            if server == "openenv":
                session = OpenEnvSession(url)
            elif server == "ors":
                name = "tictactoe" if side == "floor" else "gamebridge"
                session = ORSWireSession(
                    url, http=shared, on_response=_counter(report), env_name=name
                )
            else:
                make = NemoGymSession if server == "nemo_gym" else NemoGymToolsSession
                session = make(url, http=shared, on_response=_counter(report))
            try:
                with session:
                    _play(report, session, task, player)
                    if isinstance(session, ORSWireSession):
                        session.delete()  # ORS's end of a session
                    elif isinstance(session, NemoGymToolsSession):
                        # NeMo Gym's agent ends with /verify (the floor's answer has no trajectory)
                        end = {**session.row, "response": nemo_response("")}
                        session._post("/verify", json=end).raise_for_status()
            except Exception as exc:  # counted; the client goes on
                run.errors.append(f"{side} {task.task_id}: {type(exc).__name__}: {exc}")
    finally:
        if shared is not None:
            shared.close()
    with run.lock:
        run.latencies += report.latencies
        run.steps += report.steps


def measure(
    server: str, side: str, url: str, clients: int, episodes: int, pid: int | None = None
) -> Run:
    """``clients`` concurrent clients (threads) playing ``episodes`` games each (and the
    CPU the server process ``pid`` spent meanwhile)."""
    if server == "verifiers":
        return _measure_verifiers(side, url, clients, episodes)
    run = Run()
    cpu = process_cpu(pid)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients, thread_name_prefix="floors") as pool:
        futures = [
            pool.submit(_client, server, side, url, i, episodes, run) for i in range(clients)
        ]
        for future in futures:
            future.result()
    run.seconds = time.perf_counter() - start
    run.server_cpu = process_cpu(pid) - cpu
    return run


def _verifiers_env(side: str, count: int, base: int) -> Any:
    """The adapter's or the floor's Verifiers env for ``count`` Tic-Tac-Toe tasks."""
    import verifiers.v1 as vf

    if side == "floor":
        import bench.floors.verifiers as floor

        sys.modules.setdefault(VERIFIERS_FLOOR_ID.replace("-", "_"), floor)
        spec: dict[str, Any] = {"id": VERIFIERS_FLOOR_ID, "n": count, "seed": base}
    else:
        from adapters.verifiers import TASKSET_ID
        from core.tasks import Task

        rows = [
            Task(game="tictactoe", seed=base + i, opponent="random", model_player=0).to_dict()
            for i in range(count)
        ]
        spec = {"id": TASKSET_ID, "rows": rows}
    return vf.load_environment(vf.resolve_env_config({"taskset": spec}))


def _measure_verifiers(side: str, url: str, clients: int, episodes: int) -> Run:
    """``clients`` episodes at a time, ``clients * episodes`` in all, as the Verifiers
    driver runs them (``env.serving()``, ``run_slot`` per task). A step's latency is the
    time from the end of one model call to the start of the next, both as the trace
    records them: the environment's step, the interception hop and the harness (the
    game's last step starts no call, so it is not among them)."""
    import asyncio

    import verifiers.v1 as vf
    from verifiers.v1.env import RunSlot

    run = Run()
    env = _verifiers_env(side, clients * episodes, 0)
    ctx = vf.ModelContext(
        model="scripted", client=vf.EvalClientConfig(base_url=url, api_key_var="NO_KEY")
    )

    async def main() -> list[Any]:
        gate = asyncio.Semaphore(clients)

        async def one(task: Any) -> Any:
            async with gate:
                return await env.run_slot(RunSlot(task), ctx)

        async with env.serving():
            start, cpu = time.perf_counter(), time.process_time()
            out = await asyncio.gather(*(one(t) for t in env.taskset))
            run.seconds, run.server_cpu = time.perf_counter() - start, time.process_time() - cpu
        return list(out)

    for episode in asyncio.run(main()):
        if not episode.ok:
            run.errors.append(f"{side}: {[e.message for e in episode.errors]}")
            continue
        calls = episode.traces[0].calls
        run.steps += len(calls)
        run.latencies += [b.time.start - a.time.end for a, b in itertools.pairwise(calls)]
    return run


# --- rounds and rows ----------------------------------------------------------------------


@dataclass
class Result:
    """Per side, each round's 1-client run and many-session run."""

    server: str
    single: dict[str, list[Run]] = field(default_factory=dict)
    many: dict[str, list[Run]] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        return [
            e
            for runs in (*self.single.values(), *self.many.values())
            for r in runs
            for e in r.errors
        ]


def compare(server: str, sizes: Sizes, say: Callable[[str], None] = lambda _: None) -> Result:
    """Start every side of ``server``, warm each up, then ``sizes.rounds`` rounds."""
    from rollouts.drivers.nemo_gym import _start_together

    makers = sides(server, sizes.sessions)
    names = list(makers)
    result = Result(server, {n: [] for n in names}, {n: [] for n in names})
    with ExitStack() as stack:
        managers = [makers[n]() for n in names]
        running = _start_together(managers)
        for manager in managers:
            stack.push(manager.__exit__)
        urls = {n: s.base_url for n, s in zip(names, running, strict=True)}
        pids = {n: s.process.pid for n, s in zip(names, running, strict=True)}
        for n in names:  # untimed: first connections, lazily built tables
            measure(server, n, urls[n], 2, 1)
        for r in range(sizes.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for n in order:
                result.single[n].append(
                    measure(server, n, urls[n], 1, sizes.latency_games, pids[n])
                )
            for n in order:
                many = measure(server, n, urls[n], sizes.sessions, sizes.episodes, pids[n])
                result.many[n].append(many)
            say(
                f"{server} round {r + 1}: "
                + ", ".join(
                    f"{n} p50 {result.single[n][-1].percentile(0.5):.2f} ms, "
                    f"{result.many[n][-1].rate:.0f} steps/s, "
                    f"{result.many[n][-1].cpu_per_step:.2f} ms CPU/step"
                    for n in names
                )
            )
    return result


def _ratio_row(
    section: str,
    name: str,
    mine: Sequence[float],
    base: Sequence[float],
    unit: str,
    target: Target | None,
    note: str,
) -> Row:
    ratios = tuple(m / b if b else float("nan") for m, b in zip(mine, base, strict=True))
    fmt = (lambda v: f"{v:.2f} ms") if unit == "ms" else (lambda v: f"{v:,.0f} steps/s")
    if unit == "cpu":
        fmt = lambda v: f"{v * 1000:.0f} µs CPU/step"  # noqa: E731
    return Row(
        section,
        name,
        fmt(statistics.median(mine)),
        fmt(statistics.median(base)),
        ratios,
        "x",
        target,
        note,
    )


def rows(result: Result, sizes: Sizes) -> list[Row]:
    """The ratio rows of one server: adapter / floor (and OpenEnv's malloc on / off)."""
    label = LABELS[result.server]
    section = "Servers against their framework's floor (adapter / floor, same run)"
    out = []
    pairs = [("adapter", "floor", "adapter / floor")]
    if "pymalloc" in result.single:
        pairs.append(("adapter", "pymalloc", "PYTHONMALLOC=malloc / pymalloc"))
    for mine, base, what in pairs:
        prefix = label if base == "floor" else f"{label} adapter, {what}"
        single = {n: result.single[n] for n in (mine, base)}
        many = {n: result.many[n] for n in (mine, base)}
        steps = statistics.median(r.steps for r in single[mine])
        sessions = sizes.sessions
        out += [
            _ratio_row(
                section,
                f"{prefix}: p50 step latency, 1 client",
                [r.percentile(0.5) for r in single[mine]],
                [r.percentile(0.5) for r in single[base]],
                "ms",
                P50_TARGET if base == "floor" else None,
                f"{what}; ~{steps:.0f} steps a round ({sizes.latency_games} games, one at a time)",
            ),
            _ratio_row(
                section,
                f"{prefix}: p99 step latency, 1 client",
                [r.percentile(0.99) for r in single[mine]],
                [r.percentile(0.99) for r in single[base]],
                "ms",
                None,
                what,
            ),
            _ratio_row(
                section,
                f"{prefix}: steps/s, {sessions} sessions",
                [r.rate for r in many[mine]],
                [r.rate for r in many[base]],
                "rate",
                RATE_TARGET if base == "floor" else None,
                f"{what}; {sessions} concurrent sessions x {sizes.episodes} games a round",
            ),
            _ratio_row(
                section,
                f"{prefix}: server CPU per step, {sessions} sessions",
                [r.cpu_per_step for r in many[mine]],
                [r.cpu_per_step for r in many[base]],
                "cpu",
                None,
                f"{what}; the server process's CPU time (/proc) over the steps/s run's steps",
            ),
        ]
    return out


def available(servers: Sequence[str]) -> tuple[list[str], list[str]]:
    """The servers that can run here, and a note for each that cannot."""
    from rollouts.drivers.nemo_gym import ROOT as NEMO_ROOT
    from rollouts.drivers.nemo_gym import nemo_python
    from rollouts.drivers.ors import ORSDriver

    ok, notes = [], []
    for server in servers:
        if server.startswith("nemo") and not nemo_python().exists():
            where = nemo_python()
            shown = where.relative_to(NEMO_ROOT) if where.is_relative_to(NEMO_ROOT) else where
            notes.append(f"{LABELS[server]}: not measured, {shown} is missing (make setup-nemo)")
        elif server == "ors" and not ORSDriver().available()[0]:
            notes.append(f"{LABELS[server]}: not measured, {ORSDriver().available()[1]}")
        elif server == "verifiers" and importlib.util.find_spec("verifiers") is None:
            notes.append(f"{LABELS[server]}: not measured, verifiers is not installed")
        else:
            ok.append(server)
    return ok, notes


def run(
    servers: Sequence[str],
    sizes: Sizes,
    log: bool = True,
    done: Callable[[list[Row], list[str]], None] | None = None,
) -> tuple[list[Row], list[str], list[Result]]:
    """Every server's comparison: rows, notes, the raw results (``done`` is called with
    the rows and notes so far after each server, so a long run shows them as it goes)."""

    def say(text: str) -> None:
        if log:
            print(f"[servers {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    chosen, notes = available(servers)
    out: list[Row] = []
    results = []
    for server in chosen:
        say(f"{server}: starting the adapter and the floor")
        result = compare(server, sizes, say)
        results.append(result)
        out += rows(result, sizes)
        if result.errors:
            notes.append(
                f"{LABELS[server]}: {len(result.errors)} errors, first: {result.errors[0]}"
            )
        if done is not None:
            done(out, notes)
    return out, notes, results


def section_text(
    rows_: Sequence[Row], info: dict[str, str], notes: Sequence[str], command: str, date: str
) -> str:
    return generated_section(
        BEGIN,
        END,
        date=date,
        command=command,
        skip="the full comparison runs for minutes",
        info=info,
        legend="""*gamebridge* is the adapter's median figure, *reference* the floor's; *measured* is the
median over the rounds of adapter / floor, measured back to back in each round (order
alternating), *min – max* its range. Latency ratios above 1 and throughput ratios below 1
are what the adapter costs; the targets: p50 within 10% of the floor, steps/s within 10%.""",
        rows=rows_,
        missed=[f"{r.name} ({r.median:.2f}x)" for r in rows_ if r.status == "MISSED"],
        notes=notes,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.servers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"comma-separated, of {', '.join(SERVERS)}"
    )
    parser.add_argument("--rounds", type=int, default=Sizes.rounds)
    parser.add_argument("--latency-games", type=int, default=Sizes.latency_games)
    parser.add_argument("--sessions", type=int, default=Sizes.sessions)
    parser.add_argument("--episodes", type=int, default=Sizes.episodes)
    parser.add_argument("--no-doc", action="store_true", help="print only; do not rewrite the doc")
    args = parser.parse_args(argv)
    from rollouts.evaluation.load import chosen_servers

    servers = chosen_servers(parser, args.servers, SERVERS)
    if min(args.rounds, args.latency_games, args.sessions, args.episodes) < 1:
        parser.error("--rounds, --latency-games, --sessions and --episodes must be >= 1")
    sizes = Sizes(args.rounds, args.latency_games, args.sessions, args.episodes)
    before = load_average()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    defaults = Sizes()
    flags = [
        f"--{k.replace('_', '-')} {v}" for k, v in vars(sizes).items() if v != getattr(defaults, k)
    ]
    flags += [f"--servers {','.join(servers)}"] * (tuple(servers) != SERVERS)
    command = " ".join([".venv/bin/python -m bench.servers", *flags])

    def write(rows_: list[Row], notes_: list[str]) -> None:
        if args.no_doc:
            return
        info = machine()
        info["load average (1/5/15 min) before, now"] = f"{before}; {load_average()}"
        write_doc(DOC, section_text(rows_, info, notes_, command, started), BEGIN, END)
        print(f"wrote {DOC}", file=sys.stderr)

    out, notes, _ = run(servers, sizes, done=write)
    from bench.report import text_table

    print(text_table(out))
    for note in notes:
        print(f"* {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
