"""The step itself: where a core ``Episode.step`` spends its time, per game,
and what a step costs next to a model call.

The breakdown replays the benchmark's scripted games (``bench.steps``: random
policy, random opponent) twice per run, the two alternating:

* through ``Episode.step`` itself, the whole step timed;
* through the same calls ``Episode.step`` makes, in its order, each phase
  timed on its own: **parse** (``parse_reply`` and ``game.parse_move``),
  **apply** (``move_to_text``, ``game.apply``, ``game.is_terminal``),
  **opponent** (``Episode._opponent_turns``: the opponent's choice, its text
  and its move), **render** (the board the event records, ``game.render``,
  and the observation around that same text, ``prompts.turn_observation`` or
  ``final_observation``).
  **record** is the rest: the whole step minus those four (the event and info
  dicts, the ``StepResult``, the outcome and the rubric's score at the end).

Othello's memos are emptied before every game, as in ``bench.steps``; each
game's fastest play of ``PASSES`` counts; the cost of the timer calls
themselves is measured and taken off the phases.

The share of a model call: a step's cost (CPU time in process, wall-clock p50
over HTTP) over ``MODEL_CALL_MS``, from the rows ``bench.steps`` measured in
the same run.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Sequence

from bench.engine import clear_memos
from bench.report import Row
from bench.steps import STEP_GAMES, Game
from core import prompts
from core.episode import Episode
from core.parsing import parse_reply
from rollouts.frameworks import adapter_frameworks

PHASES = ("parse", "apply", "opponent", "render", "record")
PASSES = 3
"""Plays of each game per run and way; the fastest counts."""
MODEL_CALL_MS = 20.0
"""The model call a step is compared with (a small model's turn on a GPU)."""
SECTION = "The step itself"


def _whole(game: Game) -> float:
    """CPU seconds of ``Episode.step`` over the game's replies."""
    episode = Episode(game.task)
    episode.reset()
    clear_memos()
    step = episode.step
    replies = game.replies
    clock = time.process_time
    start = clock()
    for reply in replies:
        step(reply)
    return clock() - start


def _timer_cost() -> float:
    """CPU seconds one ``process_time`` call adds to a timed phase."""
    clock = time.process_time
    n = 2000
    start = clock()
    for _ in range(n):
        clock()
    return (clock() - start) / n


def _phased(game: Game, timer: float) -> list[float]:
    """CPU seconds of parse, apply, opponent and render over the game's
    replies, each the same calls ``Episode.step`` makes, in its order."""
    episode = Episode(game.task)
    episode.reset()
    clear_memos()
    rules = episode.game
    think = episode.task.think_required
    model = episode.task.model_player
    clock = time.process_time
    parse = apply = opponent = render = 0.0
    steps = 0
    for reply in game.replies:
        t0 = clock()
        text = parse_reply(reply, think_required=think).move
        move = rules.parse_move(episode.state, text)
        t1 = clock()
        rules.move_to_text(episode.state, move)
        episode.state = rules.apply(episode.state, move)
        over = rules.is_terminal(episode.state)
        t2 = clock()
        replies = [] if over else episode._opponent_turns()
        t3 = clock()
        board = rules.render(episode.state)
        if rules.is_terminal(episode.state):
            result = rules.outcome(episode.state)
            winner = "draw" if result is None else result.result_for(model)
            prompts.final_observation(
                rules, episode.state, winner, "game_over", replies, board=board
            )
        else:
            prompts.turn_observation(rules, episode.state, replies, board=board)
        t4 = clock()
        parse += t1 - t0
        apply += t2 - t1
        opponent += t3 - t2
        render += t4 - t3
        steps += 1
    # each phase's span holds one clock() call's cost, once per step
    off = timer * steps
    return [max(0.0, p - off) for p in (parse, apply, opponent, render)]


def _run(games: Sequence[Game], timer: float, flip: bool) -> dict[str, list[float]]:
    """Per game name: [parse, apply, opponent, render, record, whole] CPU
    seconds per step (fastest plays, summed over that game's tasks)."""
    totals: dict[str, list[float]] = {}
    steps: dict[str, int] = {}
    for game in games:
        whole = float("inf")
        phases = [float("inf")] * 4
        best_sum = float("inf")
        for p in range(PASSES):
            order = (p + flip) % 2
            if order:
                whole = min(whole, _whole(game))
            parts = _phased(game, timer)
            if sum(parts) < best_sum:
                best_sum, phases = sum(parts), parts
            if not order:
                whole = min(whole, _whole(game))
        name = game.task.game
        acc = totals.setdefault(name, [0.0] * 6)
        for i, value in enumerate(phases):
            acc[i] += value
        acc[4] += max(0.0, whole - sum(phases))
        acc[5] += whole
        steps[name] = steps.get(name, 0) + len(game.moves)
    return {name: [v / steps[name] for v in acc] for name, acc in totals.items()}


def breakdown_rows(runs: int, games: Sequence[Game]) -> list[Row]:
    """One row per game and phase (µs per step, with its share of the step),
    and the whole step per game."""
    timer = _timer_cost()
    for game in games:  # untimed: lazily built tables
        _whole(game)
        _phased(game, timer)
    per_run = [_run(games, timer, bool(i % 2)) for i in range(runs)]
    rows: list[Row] = []
    for name in STEP_GAMES:
        if name not in per_run[0]:
            continue
        n_games = sum(1 for g in games if g.task.game == name)
        n_steps = sum(len(g.moves) for g in games if g.task.game == name)
        whole = [r[name][5] * 1e6 for r in per_run]
        rows.append(
            Row(
                f"{SECTION}: where an `Episode.step` goes (random opponent)",
                f"{name}: whole step",
                f"{statistics.median(whole):.1f} µs/step",
                "",
                tuple(whole),
                "µs",
                None,
                f"{n_steps} steps a run ({n_games} games), `Episode.step(text)`",
            )
        )
        for i, phase in enumerate(PHASES):
            values = [r[name][i] * 1e6 for r in per_run]
            shares = [r[name][i] / r[name][5] * 100 if r[name][5] else 0.0 for r in per_run]
            rows.append(
                Row(
                    f"{SECTION}: where an `Episode.step` goes (random opponent)",
                    f"{name}: {phase}",
                    f"{statistics.median(values):.1f} µs/step",
                    "",
                    tuple(values),
                    "µs",
                    None,
                    f"{statistics.median(shares):.0f}% of the step",
                )
            )
    return rows


_NUMBER = re.compile(r"([0-9][0-9.,]*)\s*(µs|ms)")


def _per_step_us(text: str) -> float | None:
    """``"65.3 µs/step"`` -> 65.3 (µs); ``"0.84 ms"`` -> 840."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    return value * 1000 if match.group(2) == "ms" else value


def share_rows(rows: Sequence[Row]) -> tuple[list[Row], list[str]]:
    """A step's cost as a share of a ``MODEL_CALL_MS`` model call, for every
    framework the run measured: the in-process ones from the Episode and
    adapter rows (CPU time), the HTTP ones from their p50 latency rows (wall
    clock). Returns the rows and a note naming what was not measured."""
    section = f"{SECTION}: a step next to a {MODEL_CALL_MS:.0f} ms model call"
    out: list[Row] = []
    found: set[str] = set()

    def add(framework: str, what: str, values_us: Sequence[float], source: str) -> None:
        found.add(framework)
        shares = tuple(v / (MODEL_CALL_MS * 1e3) * 100 for v in values_us)
        out.append(
            Row(
                section,
                f"{framework}: {what}",
                f"{statistics.median(values_us):,.0f} µs/step",
                f"{MODEL_CALL_MS:.0f} ms",
                shares,
                "share %",
                None,
                f"share of the model call; from the row {source!r}",
            )
        )

    for row in rows:
        if row.name.startswith("Episode step") and row.unit == "µs":
            what = row.name[len("Episode step") :].strip(" ()") or "step"
            add("core Episode", what, row.values, row.name)
        elif row.name.endswith("overhead over the Episode"):
            us = _per_step_us(row.ours)
            if us is not None:  # the adapter's own µs/step (the per-run values are %)
                add(row.name[: -len(" overhead over the Episode")], "step", (us,), row.name)
        elif row.section.startswith("HTTP") and row.name.endswith("p50") and row.unit == "ms":
            framework = row.name.split(" step latency")[0]
            add(framework, "step p50 (wall clock)", [v * 1e3 for v in row.values], row.name)
    missing = [
        name
        for name in (fw.title for fw in adapter_frameworks())
        if not any(f.startswith(name) for f in found)
    ]
    note = (
        f"A step next to a {MODEL_CALL_MS:.0f} ms model call: measured "
        f"quantity = the step's cost (in process: CPU time, the adapter rows' own µs/step; "
        f"over HTTP: wall-clock p50) over {MODEL_CALL_MS:.0f} ms."
    )
    if missing:
        note += (
            " Not measured in this run, so not shown: "
            + ", ".join(missing)
            + " (Verifiers has no step outside its runtime; see the Verifiers note)."
        )
    return out, [note]
