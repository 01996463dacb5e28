"""A self-contained HTML report of a compare (or eval) run.

One file, no CDN, no external asset: the side-by-side table, reward
distributions and win rate by difficulty as inline SVG, the identity verdict,
and a board-by-board replay of any episode (prev/next buttons, arrow keys)
built from the rendered boards stored in each trajectory.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.stats import DEFAULT_BUCKETS, RESULTS, RatingTable, bucket_label, wilson_interval
from rollouts.evaluation.ratings import GameRatings, rating_rows
from rollouts.evaluation.summary import (
    Divergence,
    Summary,
    summarize,
    summary_rows,
    trajectory_mode,
)
from rollouts.record import RolloutRecord

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


@dataclass
class GameSection:
    """One game's part of the report."""

    game: str
    records: dict[str, list[RolloutRecord]]
    summaries: dict[str, Summary] = field(default_factory=dict)
    divergences: list[Divergence] = field(default_factory=list)

    def __post_init__(self) -> None:
        for name, recs in self.records.items():
            if name not in self.summaries:
                self.summaries[name] = summarize(recs)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


# --- SVG charts ---------------------------------------------------------------------


def reward_histograms_svg(records: Mapping[str, Sequence[RolloutRecord]], bins: int = 12) -> str:
    """Small multiples: one histogram of reward totals per framework, shared bins."""
    totals = {k: [float(r.reward.get("total", 0.0)) for r in v] for k, v in records.items()}
    values = [x for xs in totals.values() for x in xs]
    if not values:
        return "<p>No episodes.</p>"
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    width, height, pad = 220, 134, 22
    charts = []
    for idx, (name, xs) in enumerate(totals.items()):
        counts = [0] * bins
        for x in xs:
            counts[min(bins - 1, int((x - lo) / (hi - lo) * bins))] += 1
        top = max(counts) or 1
        bar_w = (width - 2 * pad) / bins
        bars = []
        for i, c in enumerate(counts):
            h = (height - 2 * pad) * c / top
            x = pad + i * bar_w
            y = height - pad - h
            left = lo + (hi - lo) * i / bins
            bars.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 1:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[idx % len(PALETTE)]}"><title>[{left:.2f}, '
                f"{left + (hi - lo) / bins:.2f}): {c}</title></rect>"
            )
        charts.append(
            f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="reward histogram {_e(name)}">'
            f'<text x="{width / 2}" y="14" text-anchor="middle" class="t">{_e(name)}</text>'
            f"{''.join(bars)}"
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
            f'stroke="#555"/>'
            f'<text x="{pad}" y="{height - pad + 12}" class="s">{lo:.2f}</text>'
            f'<text x="{width - pad}" y="{height - pad + 12}" text-anchor="end" class="s">'
            f"{hi:.2f}</text>"
            f'<text x="{width / 2}" y="{height - 2}" text-anchor="middle" class="s axis">'
            f"reward total</text>"
            f'<text x="10" y="{height / 2}" text-anchor="middle" class="s axis" '
            f'transform="rotate(-90 10 {height / 2})">episodes (max {top})</text>'
            f"</svg>"
        )
    return '<div class="charts">' + "".join(charts) + "</div>"


def win_rate_by_difficulty_svg(records: Mapping[str, Sequence[RolloutRecord]]) -> str:
    """Grouped bars: win rate (with 95% Wilson interval) per difficulty bucket
    of ``random_move_prob`` and framework."""
    names = list(records)
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for name, recs in records.items():
        for r in recs:
            b = bucket_label(float(r.task.get("random_move_prob", 0.0)))
            wins, n = table.setdefault(b, {}).get(name, (0, 0))
            table[b][name] = (wins + (r.trajectory.get("result") == "win"), n + 1)
    if not table:
        return "<p>No episodes.</p>"
    # Every bucket, those without an episode too (marked n=0: not missing data, not 0 wins).
    every = [bucket_label(lo) for lo in DEFAULT_BUCKETS[:-1]]
    buckets = sorted(set(every) | set(table))
    for b in buckets:
        table.setdefault(b, {})
    width = max(360, 60 + len(buckets) * (len(names) * 14 + 30))
    height, pad_l, pad_b, pad_t = 220, 44, 40, 20
    plot_h = height - pad_b - pad_t
    group_w = (width - pad_l - 10) / len(buckets)
    bar_w = max(4.0, min(18.0, (group_w - 16) / max(1, len(names))))
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="win rate by difficulty">'
    ]
    for frac in (0.0, 0.5, 1.0):
        y = pad_t + plot_h * (1 - frac)
        parts.append(
            f'<line x1="{pad_l}" y1="{y:.1f}" x2="{width - 10}" y2="{y:.1f}" '
            f'stroke="#ddd"/><text x="{pad_l - 4}" y="{y + 4:.1f}" text-anchor="end" '
            f'class="s">{frac:.1f}</text>'
        )
    for gi, b in enumerate(buckets):
        gx = pad_l + gi * group_w + 8
        for ni, name in enumerate(names):
            wins, n = table[b].get(name, (0, 0))
            if n == 0:  # no episode in this bucket: say so (an empty bar reads as 0 wins)
                parts.append(
                    f'<text x="{gx + ni * bar_w + (bar_w - 1) / 2:.1f}" y="{pad_t + plot_h - 3:.1f}" '
                    f'text-anchor="middle" class="s empty">n=0<title>{_e(name)} {_e(b)}: '
                    f"no episodes</title></text>"
                )
                continue
            rate = wins / n
            low, high = wilson_interval(wins, n)
            x = gx + ni * bar_w
            y = pad_t + plot_h * (1 - rate)
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 1:.1f}" '
                f'height="{plot_h * rate:.1f}" fill="{PALETTE[ni % len(PALETTE)]}">'
                f"<title>{_e(name)} {_e(b)}: {wins}/{n} = {rate:.2f} "
                f"[{low:.2f}, {high:.2f}]</title></rect>"
            )
            cx = x + (bar_w - 1) / 2
            parts.append(
                f'<line x1="{cx:.1f}" y1="{pad_t + plot_h * (1 - high):.1f}" '
                f'x2="{cx:.1f}" y2="{pad_t + plot_h * (1 - low):.1f}" stroke="#333"/>'
            )
        parts.append(
            f'<text x="{gx + len(names) * bar_w / 2:.1f}" y="{height - pad_b + 16}" '
            f'text-anchor="middle" class="s">{_e(b)}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle" class="s axis">'
        f"opponent random_move_prob (difficulty bucket)</text>"
    )
    parts.append(
        f'<text x="10" y="{pad_t + plot_h / 2:.1f}" text-anchor="middle" class="s axis" '
        f'transform="rotate(-90 10 {pad_t + plot_h / 2:.1f})">win rate (95% CI)</text>'
    )
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><span class="sw" style="background:{PALETTE[i % len(PALETTE)]}">'
        f"</span>{_e(n)}</span>"
        for i, n in enumerate(names)
    )
    return f'<div>{"".join(parts)}<div class="legend">{legend}</div></div>'


def ratings_svg(table: RatingTable) -> str:
    """A forest plot: each player's Elo (dot) and 95% interval (line), best on top."""
    rows = table.ratings
    if not rows:
        return "<p>No games.</p>"
    lo = min(min(r.low for r in rows), 0.0)
    hi = max(max(r.high for r in rows), 0.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 100.0, hi + 100.0
    span = hi - lo
    lo, hi = lo - 0.05 * span, hi + 0.05 * span
    pad_l, pad_r, row_h, top = 150, 20, 22, 14
    width = 560
    height = top + row_h * len(rows) + 36
    plot_w = width - pad_l - pad_r

    def x(v: float) -> float:
        return pad_l + plot_w * (v - lo) / (hi - lo)

    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="ratings with 95% intervals">'
    ]
    step = next(  # a round step giving at most 8 grid lines
        m * 10**k for k in range(0, 7) for m in (1, 2, 5) if (hi - lo) / (m * 10**k) <= 8
    )
    tick = math.ceil(lo / step) * step
    bottom = top + row_h * len(rows)
    while tick <= hi:
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" y2="{bottom}" stroke="#eee"/>'
            f'<text x="{x(tick):.1f}" y="{bottom + 14}" text-anchor="middle" class="s">'
            f"{tick:g}</text>"
        )
        tick += step
    parts.append(
        f'<line x1="{x(0.0):.1f}" y1="{top}" x2="{x(0.0):.1f}" y2="{bottom}" stroke="#999" '
        f'stroke-dasharray="3,3"/>'
    )
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        colour = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<text x="{pad_l - 8}" y="{y + 4:.1f}" text-anchor="end" class="t">{_e(r.player)}'
            f"</text>"
            f'<line x1="{x(r.low):.1f}" y1="{y:.1f}" x2="{x(r.high):.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{x(r.elo):.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
            f"<title>{_e(r.player)}: {r.elo:.0f} [{r.low:.0f}, {r.high:.0f}], "
            f"{r.games} games</title></circle>"
        )
    parts.append(
        f'<text x="{pad_l + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" class="s">'
        f"Elo ({_e(table.anchor)} = 0), 95% interval</text></svg>"
    )
    return "".join(parts)


def ratings_html(ratings: Sequence[GameRatings]) -> str:
    """The ratings section: per game the table, the plot and the head-to-head scores."""
    body = ["<h2>Ratings</h2>"]
    for g in ratings:
        header, rows = rating_rows(g)
        head = "".join(f"<th>{_e(h)}</th>" for h in header)
        cells = "".join(
            "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        names = [r.player for r in g.table.ratings]
        h2h = "".join(
            f"<tr><td>{_e(a)}</td>"
            + "".join(
                "<td></td>"
                if a == b or (a, b) not in g.head_to_head
                else "<td>{:g}/{}</td>".format(*g.head_to_head[(a, b)])
                for b in names
            )
            + "</tr>"
            for a in names
        )
        body.append(
            f"<h3>{_e(g.game)}</h3>"
            f'<p class="meta">{g.table.games} games; Bradley-Terry Elo relative to '
            f"{_e(g.table.anchor)} (= 0); 95% intervals from the Hessian; "
            f"{g.table.prior_draws:g} virtual draw per pair that met.</p>"
            f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>'
            f"{ratings_svg(g.table)}"
            f'<p class="meta">Score of the row against the column (points/games):</p>'
            f'<table class="summary"><thead><tr><th></th>'
            + "".join(f"<th>{_e(n)}</th>" for n in names)
            + f"</tr></thead><tbody>{h2h}</tbody></table>"
        )
    return "".join(body)


def replay_episodes(records: Sequence[RolloutRecord], file: str) -> list[dict[str, Any]]:
    """The replay's episodes from one records file's records (an arena's), labelled
    by their seats."""
    episodes = []
    for r in records:
        traj = r.trajectory
        seats = (traj.get("arena") or {}).get("seats") or ["?", "?"]
        episodes.append(
            {
                "label": f"{r.task.get('game')} #{r.index}: {seats[0]} vs {seats[1]} "
                f"({traj.get('result')} for {seats[(traj.get('arena') or {}).get('outside', 0)]})",
                "frames": replay_frames(traj),
                "file": file,
                "index": r.index,
            }
        )
    return episodes


# --- tables -----------------------------------------------------------------------


def summary_table_html(summaries: Mapping[str, Summary]) -> str:
    """The side-by-side table as HTML."""
    header, rows = summary_rows(summaries)
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# --- replay -------------------------------------------------------------------------


def replay_frames(trajectory: Mapping[str, Any]) -> list[dict[str, str]]:
    """Board-by-board frames of one trajectory: ``{"board", "caption"}``."""
    frames = []
    caption = "Start position."
    if trajectory.get("opening"):
        caption += " Opening plies: " + ", ".join(trajectory["opening"]) + "."
    if trajectory.get("opponent_first"):
        caption += " Then the opponent played: " + ", ".join(trajectory["opponent_first"]) + "."
    frames.append({"board": str(trajectory.get("initial_board") or ""), "caption": caption})
    for event in trajectory.get("events") or []:
        reply = str(event.get("reply", ""))
        if len(reply) > 300:
            reply = reply[:297] + "..."
        if event.get("error"):
            msg = str(event.get("message") or "").splitlines()[0:1]
            what = f"rejected ({event['error']}{': ' + msg[0] if msg else ''})"
        else:
            what = f"played {event.get('move')}"
        cap = f"Turn {event.get('turn')}: {event.get('kind', 'text')} reply {reply!r} -> {what}."
        if event.get("opponent_moves"):
            cap += " Opponent: " + ", ".join(event["opponent_moves"]) + "."
        frames.append({"board": str(event.get("board") or ""), "caption": cap})
    if trajectory.get("done"):
        reward = trajectory.get("reward") or {}
        frames[-1]["caption"] += (
            f" Game over: {trajectory.get('result')} ({trajectory.get('termination')}),"
            f" reward {float(reward.get('total', 0.0)):.3f}."
        )
    return frames


def _replay_data(sections: Sequence[GameSection]) -> list[dict[str, Any]]:
    episodes = []
    for section in sections:
        for name, recs in section.records.items():
            for i, r in enumerate(recs):
                traj = r.trajectory
                episodes.append(
                    {
                        "label": f"{section.game} / {name} / #{i} {traj.get('task_id', '')} "
                        f"({traj.get('result')}, rmp {r.task.get('random_move_prob')})",
                        "frames": replay_frames(traj),
                        # compare/demo write each framework's records beside the report
                        "file": f"{section.game}-{name}.jsonl",
                        "index": i,
                    }
                )
    return episodes


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}
table.summary{border-collapse:collapse;font-size:.9em}
table.summary td,table.summary th{border:1px solid #ccc;padding:3px 8px;text-align:right;
white-space:nowrap}
table.summary td:first-child,table.summary th:first-child{text-align:left}
.verdict{font-weight:bold;padding:8px 12px;border-radius:4px;display:inline-block}
.ok{background:#e3f4e1;color:#1d5e1a}.bad{background:#fbe3e3;color:#8a1c1c}
.charts{display:flex;flex-wrap:wrap;gap:8px}.chart text.t{font-size:12px}
.chart text.s,.chart .s{font-size:10px;fill:#555}.chart text.axis{fill:#333}
.chart text.empty{fill:#999;font-style:italic}.modes{max-width:900px}
.legend{font-size:.85em}.key{margin-right:12px}.sw{display:inline-block;width:10px;height:10px;
margin-right:4px}
pre.board{font-family:ui-monospace,Menlo,Consolas,monospace;background:#f7f7f7;padding:10px;
border:1px solid #ddd;display:inline-block;min-width:240px;line-height:1.25}
#caption{max-width:900px;min-height:3em}select{max-width:100%}button{margin:0 4px}
.meta{color:#666;font-size:.85em}
"""

_JS = """
(function(){
  var episodes = JSON.parse(document.getElementById('replay-data').textContent);
  var sel = document.getElementById('episode');
  var board = document.getElementById('board');
  var caption = document.getElementById('caption');
  var pos = document.getElementById('pos');
  var cur = 0, frame = 0;
  episodes.forEach(function(ep, i){
    var opt = document.createElement('option');
    opt.value = String(i); opt.textContent = ep.label; sel.appendChild(opt);
  });
  var urlBox = document.getElementById('play-url');
  function playUrl(){
    var u = (urlBox.value || PLAY_URL).trim();
    return u.charAt(u.length - 1) === '/' ? u : u + '/';
  }
  function show(){
    if (!episodes.length) { caption.textContent = 'No episodes.'; return; }
    var frames = episodes[cur].frames;
    frame = Math.max(0, Math.min(frame, frames.length - 1));
    board.textContent = frames[frame].board;
    var link = document.getElementById('play-link');
    var path = decodeURIComponent(location.pathname);
    var dir = path.slice(0, path.lastIndexOf('/') + 1);
    link.href = playUrl() + '#replay=' + encodeURIComponent(dir + episodes[cur].file) +
      '&episode=' + episodes[cur].index + '&frame=' + frame;
    caption.textContent = frames[frame].caption;
    pos.textContent = (frame + 1) + ' / ' + frames.length;
  }
  sel.addEventListener('change', function(){ cur = parseInt(sel.value, 10); frame = 0; show(); });
  document.getElementById('prev').addEventListener('click', function(){ frame -= 1; show(); });
  document.getElementById('next').addEventListener('click', function(){ frame += 1; show(); });
  document.getElementById('first').addEventListener('click', function(){ frame = 0; show(); });
  document.getElementById('last').addEventListener('click', function(){ frame = 1e9; show(); });
  document.addEventListener('keydown', function(ev){
    if (ev.key === 'ArrowLeft') { frame -= 1; show(); }
    else if (ev.key === 'ArrowRight') { frame += 1; show(); }
  });
  // #episode=I&frame=J opens that frame (links, and the headless browser test)
  var hash = {};
  location.hash.replace(/^#/, '').split('&').forEach(function(kv){
    var p = kv.split('='); if (p.length === 2 && p[0] !== 'play') { hash[p[0]] = parseInt(p[1], 10); }
  });
  if (hash.episode >= 0 && hash.episode < episodes.length) { cur = hash.episode; sel.value = String(cur); }
  if (hash.frame >= 0) { frame = hash.frame; }
  var given = /(?:^#|&)play=([^&]+)/.exec(location.hash);
  var saved = null;
  try { saved = localStorage.getItem('gamebridge-play-url'); } catch (e) { saved = null; }
  urlBox.value = given ? decodeURIComponent(given[1]) : (saved || PLAY_URL);
  urlBox.addEventListener('input', function(){
    try { localStorage.setItem('gamebridge-play-url', urlBox.value); } catch (e) { /* no storage */ }
    show();
  });
  show();
  document.body.setAttribute('data-replay-ready', String(episodes.length));
})();
"""


PLAY_URL = "http://127.0.0.1:8765/"
"""Where ``gamebridge play`` listens by default (rollouts.play.DEFAULT_PORT)."""


def _json_for_script(data: Any) -> str:
    """JSON safe inside a ``<script>`` element."""
    return (
        json.dumps(data, ensure_ascii=True)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def mode_label(name: str, records: Sequence[RolloutRecord]) -> str:
    """``name [text]`` or ``name [tools]``: a framework as the report names it
    (a name that says its mode already is kept)."""
    if "[" in name:
        return name
    tools = any(trajectory_mode(r.trajectory) == "tools" for r in records)
    return f"{name} [{'tools' if tools else 'text'}]"


MODES_NOTE = (
    "[text]: the model replies with &lt;move&gt; tags; [tools]: it calls the make_move tool. "
    "The two modes are different conversations (another prompt, another reply format), so "
    "their results may differ; identity is checked within a mode: each framework against "
    "core in the same mode."
)


def render_report(
    sections: Sequence[GameSection],
    *,
    title: str = "gamebridge compare",
    verdict: str | None = None,
    verdict_ok: bool = True,
    meta: Mapping[str, Any] | None = None,
    play_url: str = PLAY_URL,
    ratings: Sequence[GameRatings] = (),
    episodes: list[dict[str, Any]] | None = None,
) -> str:
    """The whole report as one HTML string. Its replay links each episode to the
    play page at ``play_url`` (``gamebridge play``'s default address). ``ratings``:
    an arena's ratings section, first; ``episodes``: the replay's episodes
    (:func:`replay_episodes`) instead of the sections'."""
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    meta_line = " | ".join(f"{_e(k)}: {_e(v)}" for k, v in (meta or {}).items())
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">generated {now}' + (f" | {meta_line}" if meta_line else "") + "</p>",
    ]
    if verdict:
        body.append(f'<p class="verdict {"ok" if verdict_ok else "bad"}">{_e(verdict)}</p>')
    if ratings:
        body.append(ratings_html(ratings))
    for s in sections:
        names = {n: mode_label(n, recs) for n, recs in s.records.items()}
        records = {names[n]: recs for n, recs in s.records.items()}
        summaries = {names.get(n, n): sm for n, sm in s.summaries.items()}
        body.append(f"<h2>{_e(s.game)}</h2>")
        if s.divergences:
            items = "".join(f"<li>{_e(d.describe())}</li>" for d in s.divergences)
            body.append(f'<div class="bad"><b>Trajectories differ:</b><ul>{items}</ul></div>')
        elif len(s.records) > 1:
            tools = [
                n
                for n, recs in s.records.items()
                if any(trajectory_mode(r.trajectory) == "tools" for r in recs)
            ]
            note = (
                f" Tool-calling frameworks ({', '.join(tools)}) were checked against core "
                "driven with the make_move tool."
                if tools
                else ""
            )
            body.append(
                f'<p class="ok">Trajectories and rewards identical across '
                f"{len(s.records)} frameworks.{_e(note)}</p>"
            )
        body.append(summary_table_html(summaries))
        if len({n.rsplit("[", 1)[-1] for n in summaries}) > 1:
            body.append(f'<p class="meta modes">{MODES_NOTE}</p>')
        counts = "; ".join(
            f"{_e(n)}: " + ", ".join(f"{r} {sm.results[r].count}" for r in RESULTS)
            for n, sm in summaries.items()
        )
        body.append(f'<p class="meta">{counts}</p>')
        body.append("<h3>Reward distribution</h3>" + reward_histograms_svg(records))
        body.append("<h3>Win rate by difficulty</h3>" + win_rate_by_difficulty_svg(records))
    body.append(
        '<h2>Replay</h2><p><select id="episode" aria-label="episode"></select></p>'
        '<p><button id="first">|&lt;</button><button id="prev">&lt; prev</button>'
        '<span id="pos"></span><button id="next">next &gt;</button>'
        '<button id="last">&gt;|</button> <span class="meta">(arrow keys work too)</span></p>'
        '<pre class="board" id="board"></pre><p id="caption"></p>'
        '<p class="meta"><a id="play-link" href="#">Step through this episode in '
        "gamebridge play</a> (start it first: <code>gamebridge play</code>, from the folder "
        "that holds <code>runs/</code>): the board, each observation the model read, its raw "
        "replies and what core made of them. "
        '<label>The play page is at <input id="play-url" size="28" aria-label="play page URL">'
        "</label> (the address <code>gamebridge play --port N</code> printed; kept in this "
        "browser; <code>#play=URL</code> in this page's address sets it too).</p>"
    )
    data = _json_for_script(_replay_data(sections) if episodes is None else episodes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "".join(body)
        + f'<script type="application/json" id="replay-data">{data}</script>'
        + f"<script>var PLAY_URL = {_json_for_script(play_url)};{_JS}</script></body></html>\n"
    )


def write_report(path: str | Path, sections: Sequence[GameSection], **kwargs: Any) -> Path:
    """Write :func:`render_report` to ``path`` (parents created); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(sections, **kwargs), encoding="utf-8")
    return out
