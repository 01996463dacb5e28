"""``gamebridge arena``'s run: a round robin into one records file, resumable.

The players are built-in bots (``random``, ``minimax:D``, ``mcts:L``, each
optionally ``+random:P``), OpenAI-compatible endpoints (``endpoint:MODEL@URL``:
vLLM, an API, ``gamebridge serve-policy`` with a checkpoint) and the embedded
scripted policy server (``scripted:POLICY``), each optionally named
(``NAME=SPEC``). The schedule and the games are core's
(``core.arena.round_robin``, ``core.arena.play_bots``); an endpoint's games go
through the core driver, one ``Episode`` each, the bot as its opponent.

The records file is ``eval``'s (``rollouts.evaluation.records``): a header, then one
whole line per game as it ends, each with its schedule ``index``; ``--resume``
checks the header (players, schedule) and plays only the games the file lacks
(or that failed). A game's result depends only on its task seed and its players,
so a resumed run has the records, and so the ratings, of an uninterrupted one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.arena import ArenaError, Bot, Pairing, is_bot, play_bots
from rollouts.drivers.base import (
    RolloutRecord,
    RunContext,
    StepClock,
    failure_record,
    make_record,
    run_parallel,
)

FRAMEWORK = "arena"
"""The records' ``framework`` (and the header's)."""
RECORDS = "arena.jsonl"
"""The records file's name in an arena's output folder."""


@dataclass(frozen=True)
class ArenaPlayer:
    """One player: a bot, an endpoint or the embedded scripted server."""

    name: str
    bot: Bot | None = None
    model: str | None = None
    """An endpoint's model name."""
    base_url: str | None = None
    policy: str | None = None
    """The embedded scripted policy server's policy (``core.players``)."""

    @classmethod
    def parse(cls, text: str) -> ArenaPlayer:
        """``[NAME=]SPEC``; raises ``ArenaError`` for a spec that names no player."""
        text = text.strip()
        label, eq, rest = text.partition("=")
        name: str | None = None
        if eq and label and not any(c in label for c in ":/@"):
            name, text = label.strip(), rest.strip()
        if text.startswith("endpoint:"):
            model, at, url = text[len("endpoint:") :].rpartition("@")
            if not at or not model or not url.startswith(("http://", "https://")):
                raise ArenaError(f"an endpoint is endpoint:MODEL@http(s)://HOST/v1, not {text!r}")
            return cls(name or f"{model}@{url}", model=model, base_url=url)
        if text.startswith("scripted:"):
            from core.players import Policy

            policy = text[len("scripted:") :]
            try:
                Policy.parse(policy)
            except ValueError as e:
                raise ArenaError(f"{text!r}: {e}") from None
            return cls(name or text, policy=policy)
        try:
            bot = Bot.parse(text)
        except ArenaError:
            raise ArenaError(
                f"not a player: {text!r}; a player is [NAME=]SPEC, SPEC one of random, "
                "minimax:D, mcts:L (optionally +random:P), endpoint:MODEL@URL, scripted:POLICY"
            ) from None
        return cls(name or bot.name, bot=bot)

    @property
    def spec(self) -> str:
        """What the records' header says of it (an endpoint's model, not its URL,
        which may change between a run and its resume)."""
        if self.bot is not None:
            return self.bot.name
        if self.policy is not None:
            return f"scripted:{self.policy}"
        return f"endpoint:{self.model}"


def parse_players(text: str) -> list[ArenaPlayer]:
    """Comma-separated players; raises ``ArenaError``."""
    players = [ArenaPlayer.parse(part) for part in text.split(",") if part.strip()]
    names = [p.name for p in players]
    if len(set(names)) != len(names):
        raise ArenaError(f"two players have one name: {names} (name them: NAME=SPEC)")
    return players


def bots_of(players: Sequence[ArenaPlayer]) -> dict[str, Bot]:
    return {p.name: p.bot for p in players if p.bot is not None}


def arena_header(
    players: Sequence[ArenaPlayer], pairings: Sequence[Pairing], **extra: Any
) -> dict[str, Any]:
    """The records' header: ``--resume`` refuses a file with other players or another schedule."""
    from rollouts.evaluation.records import run_header

    header = run_header(
        FRAMEWORK,
        [p.to_dict() for p in pairings],
        policy=",".join(f"{p.name}={p.spec}" for p in players),
    )
    header.update(players=[p.name for p in players], **extra)
    return header


@dataclass
class ArenaRun:
    records: dict[int, RolloutRecord]
    """Every game's record by schedule index: earlier ones (resume) and this run's."""
    elapsed: float
    ran: int
    stopped: bool


def _label(record: RolloutRecord, pairing: Pairing) -> RolloutRecord:
    record.framework = FRAMEWORK
    record.index = pairing.index
    record.trajectory = {
        **record.trajectory,
        "arena": {"seats": list(pairing.seats), "outside": pairing.outside, "round": pairing.round},
    }
    return record


def play_bot_record(pairing: Pairing, bots: Mapping[str, Bot]) -> RolloutRecord:
    """A game between two bots as a record (a failure record if it raised)."""
    clock = StepClock()
    try:
        episode = play_bots(pairing, bots)
        record = make_record(
            FRAMEWORK,
            pairing.task,
            episode.to_dict(),
            episode.reward(),
            clock,
            len(episode.events),
            0,
        )
    except Exception as e:  # recorded, as a driver records a failed task
        record = failure_record(FRAMEWORK, pairing.task, e, clock=clock)
    return _label(record, pairing)


def play_endpoints_record(pairing: Pairing, contexts: Sequence[RunContext]) -> RolloutRecord:
    """A game between two outside players (``contexts[seat]``: each seat's
    endpoint): one ``Episode`` with two outside seats, each player reading its own
    conversation (its system prompt, its observations, its replies)."""
    from core.conversation import observation, opening
    from core.episode import Episode

    clock = StepClock()
    try:
        episode = Episode(pairing.task)
        episode.reset()
        chats: dict[int, list[dict[str, Any]]] = {}
        while not episode.done:
            seat = episode.to_move
            if seat is None:  # not reached: an unfinished episode names the seat to move
                break
            seen = episode.observation_for(seat)
            if seat in chats:
                chats[seat].append(observation(seen))
            else:
                chats[seat] = opening(episode.system_prompt_for(seat), seen)
            episode.step(clock.ask(contexts[seat].client, chats[seat]).text)
        record = make_record(
            FRAMEWORK,
            pairing.task,
            episode.to_dict(),
            episode.reward(),
            clock,
            clock.steps,
            clock.completion_tokens,
        )
    except Exception as e:  # recorded, as a driver records a failed task
        record = failure_record(FRAMEWORK, pairing.task, e, clock=clock)
    return _label(record, pairing)


@contextmanager
def _endpoints(
    players: Sequence[ArenaPlayer],
    *,
    seed: int,
    api_key: str | None,
    concurrency: int,
    call_policy: Any,
) -> Iterator[dict[str, tuple[Any, RunContext]]]:
    """For each outside player: the core driver and its open session (an
    embedded scripted server started for a ``scripted:`` player)."""
    from rollouts.drivers.core import CoreDriver

    with ExitStack() as stack:
        sessions: dict[str, tuple[Any, RunContext]] = {}
        for p in players:
            if p.bot is not None:
                continue
            url, model = p.base_url, p.model or "scripted"
            if p.policy is not None:
                from rollouts.model.policy_server import serve_in_thread

                url = stack.enter_context(serve_in_thread(p.policy, seed))
            if url is None:
                raise ArenaError(f"{p.name}: no endpoint URL")
            driver = CoreDriver()
            driver.call_policy = call_policy
            ctx = stack.enter_context(
                driver.session(base_url=url, model=model, api_key=api_key, concurrency=concurrency)
            )
            sessions[p.name] = (driver, ctx)
        yield sessions


def run_arena(
    players: Sequence[ArenaPlayer],
    pairings: Sequence[Pairing],
    out: Path,
    header: dict[str, Any],
    *,
    resume: bool,
    stop: threading.Event,
    seed: int = 0,
    api_key: str | None = None,
    concurrency: int = 1,
    call_policy: Any = None,
    on_record: Any = None,
) -> ArenaRun:
    """Play the games ``out`` lacks, appending each record as it ends.

    Raises ``rollouts.evaluation.records.RecordFileError`` when ``resume`` finds
    another run's file (or a file another process writes)."""
    from rollouts.evaluation.compare import check_header
    from rollouts.evaluation.records import RecordWriter, check_unlocked, read_run

    check_unlocked(out)
    done: dict[int, RolloutRecord] = {}
    appending = resume and out.exists() and out.stat().st_size > 0
    if appending:
        run = read_run(out)
        check_header(out, run.header, header)
        done = run.finished()
    elif out.exists() and out.stat().st_size:
        keep = out.with_name(out.name + ".prev")
        out.replace(keep)
    todo = [p for p in pairings if p.index not in done]
    bots = bots_of(players)
    outside = {name for p in todo for name in p.seats if name not in bots}
    new: dict[int, RolloutRecord] = {}
    t0 = time.perf_counter()
    with (
        _endpoints(
            [p for p in players if p.name in outside],
            seed=seed,
            api_key=api_key,
            concurrency=concurrency,
            call_policy=call_policy,
        ) as sessions,
        RecordWriter(out, header, resume=appending) as writer,
    ):

        def play(pairing: Pairing) -> RolloutRecord:
            if pairing.task.seats is not None:  # two outside players
                return play_endpoints_record(pairing, [sessions[n][1] for n in pairing.seats])
            name = pairing.seats[pairing.outside]
            if name in bots:
                return play_bot_record(pairing, bots)
            driver, ctx = sessions[name]
            return _label(driver.run_guarded(pairing.task, ctx, pairing.index), pairing)

        def written(_i: int, record: RolloutRecord) -> None:
            writer.write(record)
            new[int(record.index or 0)] = record
            if on_record is not None:
                on_record(record)

        run_parallel(todo, play, concurrency=concurrency, on_result=written, stop=stop)
    return ArenaRun({**done, **new}, time.perf_counter() - t0, len(new), stop.is_set())


__all__ = [
    "FRAMEWORK",
    "RECORDS",
    "ArenaError",
    "ArenaPlayer",
    "ArenaRun",
    "arena_header",
    "bots_of",
    "is_bot",
    "parse_players",
    "play_bot_record",
    "play_endpoints_record",
    "run_arena",
]
