"""``gamebridge compare`` and ``gamebridge demo`` end to end: each game's tasks run
through the frameworks (``rollouts.evaluation.compare``, the running wing), then
summarised and checked for identity against the core driver
(``rollouts.evaluation.summary``) and written as one HTML report
(``rollouts.evaluation.report``, the analysis wing). It joins the two wings, so it
sits above both, in the CLI's.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rollouts.evaluation.compare import (
    REFERENCE_TOOLS,
    CompareSettings,
    GameComparison,
    _out,
    endpoint,
    label,
    make_tasks,
    run_compare,
)
from rollouts.evaluation.report import GameSection, write_report
from rollouts.evaluation.summary import check_identity, format_comparison, summarize


def summarize_comparison(result: GameComparison) -> dict[str, Any]:
    """Each framework's summary (the ones that ran, in order), then the tool-mode
    reference's when it ran."""
    summaries = {
        name: summarize(records, elapsed=result.elapsed[name])
        for name, records in result.records.items()
    }
    if REFERENCE_TOOLS in result.elapsed:
        summaries[REFERENCE_TOOLS] = summarize(
            result.references["tools"], elapsed=result.elapsed[REFERENCE_TOOLS]
        )
    return summaries


def analyse_game(game: str, result: GameComparison, problems: list[str]) -> GameSection:
    """One game's run read: the summaries table printed, divergences from the identity
    reference and failures added to ``problems``, and the report's section."""
    summaries = summarize_comparison(result)
    divergences = check_identity(result.records, result.references) if result.records else []
    if summaries:
        _out(
            format_comparison(
                {
                    label(name, result.modes.get(name, "?")): summary
                    for name, summary in summaries.items()
                }
            )
        )
    for d in divergences:
        problems.append(f"DIVERGENT: {game}: {d.describe()}")
    for name, err in result.failures.items():
        problems.append(f"FAILED: {game}: {name}: {err[:300]}")
    finished = {k: [r for r in v if r.error is None] for k, v in result.records.items()}
    ran_here = {k: v for k, v in summaries.items() if k in result.records}
    return GameSection(game, finished, ran_here, divergences)


def report_meta(
    games: Sequence[str], s: CompareSettings, skipped: dict[str, str] | None
) -> dict[str, Any]:
    """The report's settings table."""
    meta: dict[str, Any] = {
        "games": ", ".join(games),
        "tasks per game": s.n,
        "policy": s.policy if not s.request.base_url else s.request.model,
        "seed": s.seed,
        "opponent": (s.opponent or "the game's default")
        + (f" (depth {s.depth})" if s.depth is not None else ""),
    }
    if skipped:
        meta["skipped"] = "; ".join(f"{k}: {v[:120]}" for k, v in skipped.items())
    return meta


def compare_games(
    games: Sequence[str],
    frameworks: Sequence[str],
    settings: CompareSettings,
    out_dir: Path,
    *,
    title: str,
    skipped: dict[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Compare over several games; write the report. ``skipped``: frameworks left
    out and why (said before the run, and in the report). Returns (exit code,
    verdict lines)."""
    s = settings
    for name, why in (skipped or {}).items():
        _out(f"skipping {name}: {why[:200]}")
    sections = []
    problems: list[str] = []
    stop = s.request.stop or threading.Event()
    with endpoint(s.request.base_url or None, s.policy, s.seed) as url:
        request = replace(s.request, base_url=url, stop=stop)
        for game in games:
            tasks = make_tasks(
                game, s.n, s.seed, s.min_rmp, s.max_rmp, opponent=s.opponent, depth=s.depth
            )
            _out(f"{game}: {len(tasks)} tasks x {len(frameworks)} frameworks")
            result = run_compare(
                game,
                tasks,
                frameworks,
                request,
                out_dir=out_dir,
                resume=s.resume,
                policy_name=s.policy_name,
            )
            if stop.is_set():
                break
            sections.append(analyse_game(game, result, problems))
    ran = sorted({n for sec in sections for n in sec.records})
    if problems:
        verdict = (
            problems[0] if len(problems) == 1 else f"{problems[0]} (+{len(problems) - 1} more)"
        )
    else:
        verdict = f"IDENTICAL across {len(ran)} frameworks ({', '.join(ran)})"
    meta = report_meta(games, s, skipped)
    report = write_report(
        out_dir / "report.html",
        sections,
        title=title,
        verdict=verdict,
        verdict_ok=not problems,
        meta=meta,
    )
    for line in problems:
        _out(line)
    _out(f"report: {report.resolve()}")
    _out(verdict)
    if skipped:
        _out(f"skipped {len(skipped)} frameworks that cannot run here: {', '.join(skipped)}")
    return (1 if problems else 0), [verdict, *problems]
