"""The report: Markdown tables, the verdict against the targets, the SVG plot and
the docs writer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rollouts.training.recipe.ladder import ladder_svg, ladder_table, pooled_rate
from rollouts.training.recipe.plan import RecipeSettings, is_ladder_game, one_player, run_name
from rollouts.training.recipe.targets import game_verdict


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def stage_table(results: dict[str, Any], decoding: str, keys: Sequence[str]) -> list[str]:
    """One Markdown table: a row per stage, W/D/L in percent per held-out set."""
    stages = results["stages"]
    sets = list(next(iter(stages.values()))["greedy"])
    head = ["stage"]
    for name in sets:
        if name == "solve":
            head += ["solved % [95% CI]", "mean guesses"]
        else:
            head += [f"vs {name} W/D/L %", "win [95% CI]", "non-loss [95% CI]"]
    constrained = results.get("settings", {}).get("constrained_decoding")
    head += ["legal moves (constrained)" if constrained else "legal moves", "format"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(label: str, per_set: dict[str, Any]) -> str:
        c = [label]
        for name in sets:
            e = per_set[name]
            if name == "solve":
                c += [
                    f"{_pct(e['win_rate'])} {_ci(e['win_ci'])}",
                    str(e.get("mean_guesses") or "-"),
                ]
            else:
                n = max(e["games"], 1)
                c += [
                    f"{_pct(e['wins'] / n)}/{_pct(e['draws'] / n)}/{_pct(e['losses'] / n)}",
                    f"{e['win_rate']:.3f} {_ci(e['win_ci'])}",
                    f"{e['non_loss_rate']:.3f} {_ci(e['non_loss_ci'])}",
                ]
        played = {name: per_set[name] for name in sets}
        c += [f"{pooled_rate(played, key):.3f}" for key in ("legal_move_rate", "format_rate")]
        return "| " + " | ".join(c) + " |"

    if decoding == "greedy" and "teacher" in results:
        rows.append(
            cells(
                f"teacher ({results['teacher']['name']}), ceiling", results["teacher"]["held_out"]
            )
        )
    for key in keys:
        entry = stages.get(key)
        if entry and decoding in entry:
            rows.append(cells(entry["label"], entry[decoding]))
    return rows


def by_side(e: dict[str, Any], key: str) -> str:
    """``key`` of an exact evaluation for each side, in percent ("-" for a run written
    before sides were kept)."""
    if "sides" not in e:
        return "-"
    return " / ".join(f"{100 * side[key]:.2f}%" for side in e["sides"])


def exact_table(results: dict[str, Any], keys: Sequence[str]) -> list[str]:
    """The exact expectations of the teacher and the greedy stages (games small enough
    to enumerate): W/D/L in percent against each opponent."""
    rows = [("teacher, ceiling", results["teacher"].get("exact"))]
    rows += [(results["stages"][k]["label"], results["stages"][k].get("exact")) for k in keys]
    rows = [(label, e) for label, e in rows if e]
    if not rows:
        return []

    def wdl(e: dict[str, float]) -> str:
        parts = (e["win_rate"], e.get("draw_rate"), e.get("loss_rate"))
        if parts[1] is None or parts[2] is None:  # a run written before draws were kept
            return f"{100 * e['win_rate']:.2f} / - / -"
        return " / ".join(f"{100 * x:.2f}" for x in parts)

    return [
        "",
        f"Exact expectation, {decoding(results, 'greedy')} (the teacher as it plays, with its ties and random "
        "moves): every move each side may play enumerated with its probability (the random "
        "opponent's legal moves, the optimal one's tied best moves, each equally likely), "
        "both sides averaged (and each side: the model moving first, then second), every "
        "branch through `core.Episode`; no sampling, so no interval (the held-out games "
        "above are a sample of these):",
        "",
        "| stage | vs random W / D / L % | vs optimal W / D / L % | vs optimal non-loss "
        "| vs random win, first / second | vs optimal non-loss, first / second |",
        "|---|---|---|---|---|---|",
        *(
            f"| {label} | {wdl(e['random'])} | {wdl(e['optimal'])} "
            f"| {100 * e['optimal']['non_loss_rate']:.2f}% "
            f"| {by_side(e['random'], 'win_rate')} | {by_side(e['optimal'], 'non_loss_rate')} |"
            for label, e in rows
        ),
    ]


def losing_lines(results: dict[str, Any], keys: Sequence[str]) -> list[str]:
    """The last exactly evaluated stage's likeliest lost games, per opponent and side."""
    exact = [(results["stages"][k]["label"], results["stages"][k].get("exact")) for k in keys]
    exact = [(label, e) for label, e in exact if e]
    if not exact:
        return []
    label, e = exact[-1]
    found = [
        f"- against the {name} opponent, moving {('first', 'second')[i]}: "
        + ", ".join(f"`{line}` {100 * p:.2f}%" for line, p in side["losing_lines"])
        for name, entry in e.items()
        for i, side in enumerate(entry.get("sides", []))
        if side.get("losing_lines")
    ]
    if not found:
        return []
    return [
        "",
        f"Where {label} loses (exact, greedy): the likeliest lost games, the moves in the "
        "order played from the empty board, with each one's chance:",
        "",
        *found,
    ]


def curve_table(results: dict[str, Any]) -> list[str]:
    """The RL stages' learning curve (``--eval-every``): exact figures every few updates."""
    points = [(stage, p) for stage, ps in results.get("curve", {}).items() for p in ps]
    if not points:
        return []
    return [
        "",
        "Learning curve (exact, greedy, every "
        f"{results['settings'].get('eval_every')} updates of each RL stage):",
        "",
        "| stage | update | vs random win | vs optimal non-loss | vs optimal non-loss, "
        "first / second |",
        "|---|---|---|---|---|",
        *(
            f"| {results['stages'].get(stage, {}).get('label', stage)} | {p['update']} "
            f"| {100 * p['random']['win_rate']:.2f}% "
            f"| {100 * p['optimal']['non_loss_rate']:.2f}% "
            f"| {by_side(p['optimal'], 'non_loss_rate')} |"
            for stage, p in points
        ),
    ]


CONSTRAINED = (
    "constrained decoding: replies restricted to legal moves (an option; legal-move rates "
    "then say nothing about the model)"
)
"""What the table says of a run with ``--constrained-decoding``."""


def decoding(results: dict[str, Any], kind: str) -> str:
    """A table's decoding, as its heading names it (``Greedy``, ``Sampled (temperature
    1)``), with ", constrained to legal moves" when the run constrained its replies."""
    constrained = results["settings"].get("constrained_decoding")
    return kind + (", constrained to legal moves" if constrained else "")


def method_line(results: dict[str, Any]) -> str:
    """The run's method in one sentence: the command, model, data, SFT and RL settings."""
    s = results["settings"]
    m = results["model"]
    games = {name: e["games"] for name, e in results["teacher"]["held_out"].items()}
    return (
        f"`gamebridge train recipe --game {s['game']}"
        f"{' --teacher weak' if s.get('teacher') == 'weak' else ''}"
        f"{' --constrained-decoding' if s.get('constrained_decoding') else ''}`"
        f"{' --quick' if s['quick'] else ''}: "
        + (
            f"**{CONSTRAINED[0].upper()}{CONSTRAINED[1:]}**; "
            if s.get("constrained_decoding")
            else ""
        )
        + f"tiny Qwen2 of {m['parameters']:,} parameters (vocab {m['vocab']}), "
        f"{results['teacher']['kept']} of {results['teacher']['games']} teacher games kept "
        f"({results['teacher']['decisions']} decisions)"
        + (
            f" plus {results['teacher']['exhaustive_games']} against an exhaustive opponent "
            f"({results['teacher']['unique_decisions_trained']} unique decisions in all)"
            if results["teacher"].get("exhaustive_games")
            else ""
        )
        + f", {m['sft_rows']} SFT rows (prompts {m['prompt_tokens_mean']:g} tokens on average), "
        f"{s['sft_steps']} SFT steps of {s['sft_batch_size']} ({s['sft_loss']} loss"
        + (
            f" + {s['sft_assistant_weight']:g} x replies"
            if s.get("sft_assistant_weight") and s["sft_loss"] == "sequence"
            else ""
        )
        + ")"
        + (
            f", then {h['steps']} hard-example steps (replies only, lr "
            f"{s['hard_learning_rate']:g}; trained boards the student got wrong: "
            f"{h['wrong_before']} -> {h['wrong_after']} of {h['boards']})"
            if (h := results.get("hard"))
            else ""
        )
        + ", "
        + (
            f"RL {s['rl_steps']} updates x {s['num_groups']}x{s['num_generations']} games per "
            + (
                f"stage ({stages_text(s)}, no opponent to stage: one player; "
                if one_player(s["game"])
                else f"stage (stages {s['rl_stages']}; "
            )
            + (
                "groups of one position, greedy continuations"
                if s.get("rl_group", "game") == "position"
                else f"groups of one task's games, {s['rl_decisions_per_game']} decisions of each"
            )
            + ")"
            + f", loss `{s['loss_type']}`, lr "
            f"{s.get('rl_stage_learning_rates') or format(s['rl_learning_rate'], 'g')}, "
            f"temperature {s['temperature']:g}"
            if s["rl_steps"] > 0
            else "no RL stage"
        )
        + f". Held-out games per set: {games}"
        + ("" if one_player(s["game"]) else ", sides alternating")
        + answers_clause(results)
        + ", through `core.Episode`."
    )


def stages_text(s: dict[str, Any]) -> str:
    """How many RL stages the settings name, in words: ``one stage``, ``2 stages``."""
    from rollouts.training.recipe.plan import parse_stages

    n = len(parse_stages(s["rl_stages"]))
    return "one stage" if n == 1 else f"{n} stages"


def answers_clause(results: dict[str, Any]) -> str:
    """Wordle's held-out answers against the training answers, for the method line."""
    a = results.get("answers")
    if not a:
        return ""
    return (
        f", on held-out answers {'disjoint from' if a['disjoint'] else '**overlapping**'} "
        f"the training answers (held out: {a['held_out']} distinct answers, of the split's "
        f"{a['split_held_out']:,}; trained on: {a['train']:,} distinct in the teacher games "
        f"and GRPO tasks, of the split's {a['split_train']:,})"
    )


def machine_clause(m: dict[str, str] | None) -> str:
    """``; CPU ..., torch ..., transformers ...``: what the figures' floating point depends
    on beyond the seed (a rerun elsewhere may differ), or nothing for an older run."""
    if not m:
        return ""
    return f"; {m['cpu']}, torch {m['torch']}, transformers {m['transformers']}"


def markdown(results: dict[str, Any]) -> str:
    """The results page: the method, timing, verdict and the tables."""
    s = results["settings"]
    t = results["timing"]
    main = list(results["stages"])
    load = t["load_average_1_5_15"]
    lines = [
        method_line(results),
        "",
        f"Wall {t['total_wall_seconds']:.0f} s with {s['threads']} torch threads on "
        f"{t['cpus']} shared cores (process CPU {t['process_cpu_seconds']:.0f} s; "
        f"load average at the end {load.get(list(load)[-1]) if load else '-'})"
        + machine_clause(t.get("machine"))
        + ".",
        "",
        *(
            []
            if results.get("complete", True)
            else [
                f"**Partial run**: written after each stage; stages so far: "
                f"{', '.join(results['stages'][k]['label'] for k in main)}.",
                "",
            ]
        ),
        *verdict(results),
    ]
    ladder = is_ladder_game(s["game"])
    if ladder:
        lines += [
            f"The ladder ({decoding(results, 'greedy')}): the teacher and each stage against "
            "random, then "
            "alpha-beta at rising depths; every rung plays the same seeded openings, "
            "sides alternating, through `core.Episode`:",
            "",
            *ladder_table(results, "greedy"),
        ]
    else:
        lines += [
            f"{decoding(results, 'Greedy decoding')}:",
            "",
            *stage_table(results, "greedy", main),
        ]
    lines += [*exact_table(results, main), *losing_lines(results, main), *curve_table(results)]
    if any("sampled" in results["stages"][k] for k in main):
        lines += [
            "",
            f"{decoding(results, 'Sampled')} (temperature {s['eval_temperature']:g}):",
            "",
            *(
                ladder_table(results, "sampled")
                if ladder
                else stage_table(results, "sampled", main)
            ),
        ]
    return "\n".join(lines) + "\n"


TARGETS: dict[str, dict[str, float]] = {
    "strong": {"random_win": 0.95, "optimal_non_loss": 0.99},
    "weak": {"random_win": 0.90, "optimal_non_loss": 0.97},
}
"""Tic-Tac-Toe's targets per teacher (exact, greedy, after the last stage)."""


def verdict(results: dict[str, Any]) -> list[str]:
    """The run read against its targets, in words the command writes (exact figures;
    games small enough to enumerate only): the teacher, SFT and the last stage."""
    stages = results["stages"]
    s = results["settings"]
    exact = {k: e["exact"] for k, e in stages.items() if e.get("exact")}
    teacher = results.get("teacher", {}).get("exact")
    if not exact or not teacher or "sft" not in exact:
        return game_verdict(results)
    last = list(exact)[-1]
    kind = s.get("teacher", "strong")
    goal = TARGETS[kind]

    def pct(e: dict[str, Any], name: str, key: str) -> str:
        return f"{100 * e[name][key]:.2f}%"

    def met(ok: bool) -> str:
        return "met" if ok else "**missed**"

    out = ["**Read against the targets** (exact, greedy; written by the command):", ""]
    t, f, end = teacher, exact["sft"], exact[last]
    out.append(
        f"- teacher: {pct(t, 'random', 'win_rate')} wins against random, "
        f"{pct(t, 'optimal', 'non_loss_rate')} non-loss against optimal."
    )
    if kind == "weak":
        above = max(
            f["random"]["win_rate"] - t["random"]["win_rate"],
            f["optimal"]["non_loss_rate"] - t["optimal"]["non_loss_rate"],
        )
        out.append(
            f"- SFT: {pct(f, 'random', 'win_rate')} and {pct(f, 'optimal', 'non_loss_rate')}: "
            f"at most {100 * above:+.2f} points from the teacher on either opponent "
            f"(imitation alone at most 5 above: {met(above <= 0.05)})."
        )
    if last != "sft":
        w, n = end["random"]["win_rate"], end["optimal"]["non_loss_rate"]
        out.append(
            f"- after {stages[last]['label']}: {pct(end, 'random', 'win_rate')} wins against "
            f"random (target {100 * goal['random_win']:.0f}%: {met(w >= goal['random_win'])}), "
            f"{pct(end, 'optimal', 'non_loss_rate')} non-loss against optimal (target "
            f"{100 * goal['optimal_non_loss']:.0f}%: {met(n >= goal['optimal_non_loss'])}); "
            f"RL moved them {100 * (w - f['random']['win_rate']):+.2f} and "
            f"{100 * (n - f['optimal']['non_loss_rate']):+.2f} points from SFT"
            + (
                f"; beyond the teacher by {100 * (w - t['random']['win_rate']):+.2f} and "
                f"{100 * (n - t['optimal']['non_loss_rate']):+.2f}."
                if kind == "weak"
                else "."
            )
        )
    else:
        w, n = f["random"]["win_rate"], f["optimal"]["non_loss_rate"]
        out.append(
            f"- no RL stage ran: SFT's {pct(f, 'random', 'win_rate')} (target "
            f"{100 * goal['random_win']:.0f}%: {met(w >= goal['random_win'])}) and "
            f"{pct(f, 'optimal', 'non_loss_rate')} (target "
            f"{100 * goal['optimal_non_loss']:.0f}%: {met(n >= goal['optimal_non_loss'])})."
        )
    minutes = results["timing"]["total_wall_seconds"] / 60
    out += [f"- the whole command: {minutes:.1f} minutes wall.", ""]
    return out


def svg_plot(results: dict[str, Any]) -> str:
    """Win rate (and non-loss rate) per stage and held-out set, with 95% intervals (a
    ladder game: the ladder, :func:`rollouts.training.recipe.ladder.ladder_svg`)."""
    if is_ladder_game(results["settings"]["game"]):
        return ladder_svg(results)
    series = []
    keys = list(results["stages"])
    sets = list(results["stages"][keys[0]]["greedy"])
    for name in sets:
        metric = "win" if name != "optimal" else "non_loss"
        series.append((f"{metric.replace('_', '-')} vs {name}", name, metric))
    width, height, left, bottom = 120 + 90 * len(keys), 320, 60, 260
    colours = ["#1f77b4", "#d62728", "#2ca02c"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
        f'<line x1="{left}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="20" x2="{left}" y2="{bottom}" stroke="black"/>',
    ]
    for tick in range(0, 11, 2):
        y = bottom - tick * 24
        parts.append(f'<text x="{left - 30}" y="{y + 4}">{tick / 10:.1f}</text>')
        parts.append(f'<line x1="{left}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#eee"/>')
    for i, key in enumerate(keys):
        x = left + 50 + 90 * i
        parts.append(
            f'<text x="{x - 30}" y="{bottom + 16}">{results["stages"][key]["label"][:14]}</text>'
        )
        for j, (_, name, metric) in enumerate(series):
            e = results["stages"][key]["greedy"][name]
            rate, (lo, hi) = e[f"{metric}_rate"], e[f"{metric}_ci"]
            xx, c = x + 8 * j, colours[j % 3]
            parts.append(
                f'<line x1="{xx}" y1="{bottom - 240 * lo}" x2="{xx}" y2="{bottom - 240 * hi}" stroke="{c}"/>'
            )
            parts.append(f'<circle cx="{xx}" cy="{bottom - 240 * rate}" r="3" fill="{c}"/>')
    for j, (label, _, _) in enumerate(series):
        parts.append(
            f'<text x="{left + 10 + 170 * j}" y="{bottom + 40}" fill="{colours[j % 3]}">{label} (greedy, 95% CI)</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def marker(game: str, end: bool = False) -> str:
    return f"<!-- recipe-table: {game} {'end' if end else 'start'} -->"


def write_docs(path: str | Path, game: str, text: str) -> bool:
    """Replace the text between the game's recipe markers in ``path``; False if absent."""
    from rollouts.markers import write_between

    return write_between(path, marker(game), marker(game, end=True), "\n" + text)


def write_results(s: RecipeSettings, results: dict[str, Any]) -> None:
    out = Path(s.output_dir)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    md = markdown(results)
    (out / "results.md").write_text(md)
    (out / "plot.svg").write_text(svg_plot(results))
    results["docs_written"] = bool(s.docs) and write_docs(s.docs, run_name(s), md)
