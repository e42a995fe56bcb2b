"""Publishing a tournament: files in the output folder, a terminal table and a live progress bar.

Files written by :func:`write_outputs` (all UTF-8):

- ``games.jsonl`` — one line a stored game: the :mod:`arena.ratings` input (``a``, ``b``,
  ``score``, ``pair``) plus ``game_id``, ``match_id``, ``scores``, ``winner``, ``reasons``,
  ``record``, ``seed``, ``first_dealer``, ``duration_s``, and for games played on a referee
  ``terminations`` (one per seat: ``normal``, ``timeout``, ``no_show``, …), ``referee`` and
  ``failures`` (one per seat: :class:`arena.failures.Failures` as a dict);
- ``ratings.json`` — the :func:`arena.ratings.rate` result plus ``tournament`` (name, bots and
  versions, config fingerprint, master seed commitment, ``failures`` per bot, and the revealed
  ``master_seed`` once every game is played — ``null`` before);
- ``ratings.csv`` — rank, bot, version, elo, ci_low, ci_high, games, score, los_next, ci_method;
- ``leaderboard.html`` — self-contained (inline CSS and SVG, no scripts or external assets): the
  table with intervals (each marked with how it was computed), the bots' failures, a chart of
  ratings with error bars, the pairwise score matrix, and every game with its termination reasons
  and links to its record file and its static replay viewer (``replays/<game id>.html``,
  :mod:`arena.web.export`; URL-encoded: game ids carry the tournament's name).
"""

from __future__ import annotations

import csv
import html
import json
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from arena import failures
from arena.store import GameResult


def games_rows(results: Sequence[GameResult]) -> list[dict[str, Any]]:
    """The games.jsonl rows of ``results`` (see :meth:`arena.store.GameResult.rating_row`)."""
    return [r.rating_row() for r in results]


def write_outputs(
    output: Path,
    results: Sequence[GameResult],
    ratings: Mapping[str, Any],
    tournament: Mapping[str, Any],
) -> dict[str, Path]:
    """Write games.jsonl, ratings.json, ratings.csv and leaderboard.html into ``output``.

    :param ratings: the :func:`arena.ratings.rate` result.
    :param tournament: JSON-ready facts about the tournament (name, bots {name: version}, commitment,
        master_seed or None, fingerprint, scheduled/played counts).
    :returns: ``{"games", "ratings_json", "ratings_csv", "leaderboard"}`` -> path written.
    :raises OSError: if the folder cannot be written.
    """
    output.mkdir(parents=True, exist_ok=True)
    paths = {
        "games": output / "games.jsonl",
        "ratings_json": output / "ratings.json",
        "ratings_csv": output / "ratings.csv",
        "leaderboard": output / "leaderboard.html",
    }
    rows = games_rows(results)
    _atomic_write(paths["games"], "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    _atomic_write(
        paths["ratings_json"], json.dumps({**ratings, "tournament": dict(tournament)}, indent=2) + "\n"
    )
    _atomic_write(paths["ratings_csv"], _csv(ratings, tournament))
    from arena.web.export import write_static_replays

    replays = write_static_replays(output, rows)
    _atomic_write(paths["leaderboard"], leaderboard_html(ratings, tournament, rows, replays))
    return paths


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _los_next(ratings: Mapping[str, Any]) -> dict[str, float]:
    return {e["better"]: e["los"] for e in ratings.get("los", [])}


def _csv(ratings: Mapping[str, Any], tournament: Mapping[str, Any]) -> str:
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "bot", "version", "elo", "ci_low", "ci_high", "games", "score", "los_next", "ci_method"])
    versions = tournament.get("bots", {})
    los = _los_next(ratings)
    for k, (name, r) in enumerate(ratings["ratings"].items(), start=1):
        w.writerow(
            [
                k,
                name,
                versions.get(name, ""),
                r["elo"],
                r["ci"][0],
                r["ci"][1],
                r["games"],
                r["score"],
                los.get(name, ""),
                r.get("ci_method", ""),
            ]
        )
    return buf.getvalue()


#: The mark of an interval for which the bootstrap alone was not trusted (see :func:`arena.ratings.rate`).
MARK = "*"


def _interval_note(ratings: Mapping[str, Any]) -> str:
    """The footnote for intervals marked :data:`MARK` ('' if none is), with each bot's method and reason."""
    marked = [(n, r) for n, r in ratings["ratings"].items() if r.get("ci_note")]
    if not marked:
        return ""
    needed = ratings.get("bootstrap_min_units", 5)
    whys = "; ".join(f"{n}: {r.get('ci_method', '')}, {r['ci_note']}" for n, r in marked)
    return (
        f"{MARK} the bootstrap cannot estimate the spread from fewer than {needed} duplicate pairs in a pairing, "
        "or when it finds none: shown is the wider of the bootstrap and the normal-approximation interval "
        f"(Fisher information of the fit) — {whys}"
    )


def _interval(r: Mapping[str, Any], digits: int) -> str:
    mark = MARK if r.get("ci_note") else ""
    return f"[{r['ci'][0]:.{digits}f}, {r['ci'][1]:.{digits}f}]{mark}"


# ------------------------------------------------------------------------------------------ html

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:70rem;
color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #ddd;
text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.meta{color:#555;font-size:.9rem}.mono{font-family:ui-monospace,monospace;font-size:.85rem;word-break:break-all}
.win{background:#e7f5e7}.loss{background:#fbeaea}svg text{font-size:12px}
"""


def _chart(ratings: Mapping[str, Any]) -> str:
    items = list(ratings["ratings"].items())
    if not items:
        return "<p>No ratings.</p>"
    lo = min(r["ci"][0] for _, r in items)
    hi = max(r["ci"][1] for _, r in items)
    if hi - lo < 1:
        lo, hi = lo - 50, hi + 50
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    left, width, row = 160, 560, 28
    height = row * len(items) + 40

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * width

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
        f'role="img" aria-label="Ratings with 95% intervals">'
    ]
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        parts.append(f'<line x1="{x(v):.1f}" y1="10" x2="{x(v):.1f}" y2="{height - 25}" stroke="#eee"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{height - 8}" text-anchor="middle" fill="#666">{v:.0f}</text>')
    for k, (name, r) in enumerate(items):
        y = 25 + k * row
        parts.append(f'<text x="{left - 10}" y="{y + 4}" text-anchor="end">{html.escape(name)}</text>')
        parts.append(
            f'<line x1="{x(r["ci"][0]):.1f}" y1="{y}" x2="{x(r["ci"][1]):.1f}" y2="{y}" '
            'stroke="#4a6fa5" stroke-width="2"/>'
        )
        for end in r["ci"]:
            parts.append(
                f'<line x1="{x(end):.1f}" y1="{y - 6}" x2="{x(end):.1f}" y2="{y + 6}" stroke="#4a6fa5" '
                'stroke-width="2"/>'
            )
        parts.append(
            f'<circle cx="{x(r["elo"]):.1f}" cy="{y}" r="5" fill="#c0392b">'
            f"<title>{html.escape(name)}: {r['elo']:.1f} [{r['ci'][0]:.1f}, {r['ci'][1]:.1f}]</title>"
            "</circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
_COLOURS = ("#4a6fa5", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b")


def history_chart(points: Sequence[Mapping[str, Any]]) -> str:
    """An inline SVG of each bot's rating after every checkpoint of :func:`arena.ratings.history`, with
    its 95% interval as a shaded band (colours repeat after eight bots; hover a line for its name)."""
    if len(points) < 2:
        return "<p class=meta>The history needs two checkpoints or more.</p>"
    bots = list(points[-1]["ratings"])
    values = [v for p in points for r in p["ratings"].values() for v in r["ci"]]
    lo, hi = min(values), max(values)
    if hi - lo < 1:
        lo, hi = lo - 50, hi + 50
    left, width, top, height = 60, 640, 10, 260
    last = points[-1]["games"]

    def x(n: float) -> float:
        return left + n / last * width

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * height

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{top + height + 40}" '
        'role="img" aria-label="Rating history with 95% intervals">'
    ]
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + width}" y2="{y(v):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#666">{v:.0f}</text>')
    parts.append(
        f'<text x="{left + width / 2}" y="{top + height + 32}" text-anchor="middle" fill="#666">'
        f"games (0 to {last})</text>"
    )
    for k, bot in enumerate(bots):
        colour = _COLOURS[k % len(_COLOURS)]
        seen = [p for p in points if bot in p["ratings"]]
        upper = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['ci'][1]):.1f}" for p in seen)
        lower = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['ci'][0]):.1f}" for p in reversed(seen))
        line = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['elo']):.1f}" for p in seen)
        parts.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.12"/>')
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{html.escape(bot)}</title></polyline>"
        )
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="color:{_COLOURS[k % len(_COLOURS)]}">&#9632;</span>&nbsp;{html.escape(b)}'
        for k, b in enumerate(bots)
    )
    return "".join(parts) + f"<p class=meta>{legend}</p>"


def _study_sections(ratings: Mapping[str, Any], tournament: Mapping[str, Any]) -> list[str]:
    """The SPRT verdict (``tournament["sprt"]``), the precision and duplicate efficiency
    (``tournament["precision"]``, see :func:`arena.duplicate.precision_facts`) and the rating history
    (``ratings["history"]``), each only when present."""
    e = html.escape
    out = []
    sprt = tournament.get("sprt")
    if sprt:
        state = (
            f"decided <b>{e(str(sprt['decision']))}</b> after {sprt['stopped_at_pair']} duplicate pairs"
            if sprt.get("stopped_at_pair")
            else f"undecided after {sum(sprt['pentanomial'])} duplicate pairs"
        )
        out.append(
            f"<h2>SPRT: is {e(str(sprt['candidate']))} stronger than {e(str(sprt['baseline']))}?</h2>"
            f"<p>H0: {sprt['elo0']:g} Elo, H1: {sprt['elo1']:g} Elo ({e(str(sprt['model']))}), "
            f"alpha {sprt['alpha']:g}, beta {sprt['beta']:g}: {state}. LLR {sprt['llr']:.3f} in "
            f"[{sprt['lower']:.3f}, {sprt['upper']:.3f}]; pentanomial {sprt['pentanomial']}; Elo {sprt['elo']:.1f} "
            f"[{sprt['elo_ci'][0]:.1f}, {sprt['elo_ci'][1]:.1f}] (95%).</p>"
        )
    precision = tournament.get("precision")
    if precision:
        out.append("<h2>Precision and the duplicate format</h2>")
        out.extend(f"<p class=meta>{e(line)}</p>" for line in precision.get("lines", []))
    points = ratings.get("history")
    if points:
        out.append(
            "<h2>Rating history</h2><p class=meta>Ratings after every "
            f"{points[0]['games']} games, with 95% intervals (normal approximation).</p>"
        )
        out.append(history_chart(points))
    return out




def leaderboard_html(
    ratings: Mapping[str, Any],
    tournament: Mapping[str, Any],
    games: Sequence[Mapping[str, Any]],
    replays: Mapping[str, str] | None = None,
) -> str:
    """A self-contained HTML leaderboard (see the module docstring). Every name is HTML-escaped.

    :param replays: game id -> static viewer page (relative path, :mod:`arena.web.export`), linked.
    """
    names = list(ratings["ratings"])
    title = html.escape(str(tournament.get("name", "tournament")))
    out = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>{title} — leaderboard</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{title} — leaderboard</h1>",
    ]
    out.extend(_meta_html(ratings, tournament, games))
    out.extend(_ratings_table_html(ratings, tournament, names))
    note = _interval_note(ratings)
    if note:
        out.append(f'<p class="meta">{html.escape(note)}</p>')
    out.extend(_failures_html(tournament, names))
    out.append("<h2>Ratings with 95% intervals</h2>")
    out.append(_chart(ratings))
    out.extend(_study_sections(ratings, tournament))
    out.extend(_pairwise_html(ratings, names))
    out.extend(_games_html(games, replays))
    out.append("</table></body></html>\n")
    return "\n".join(out)


def _meta_html(ratings: Mapping[str, Any], tournament: Mapping[str, Any],
               games: Sequence[Mapping[str, Any]]) -> list[str]:
    """The leaderboard's lines under its title: games played, the method, the master seed."""
    e = html.escape
    out: list[str] = []
    seed = tournament.get("master_seed")
    out.append(
        f'<p class="meta">{tournament.get("played", len(games))} of '
        f"{tournament.get('scheduled', len(games))} games"
        f" · {e(str(tournament.get('players', '')))} players · Bradley–Terry maximum-likelihood Elo"
        f" (pool mean 1500 unless anchored) · 95% intervals: {e(intervals_method(ratings))}"
        f" · LOS: {e(ratings.get('los_method', ''))}"
        + (
            " · <b>prior used</b> (some bot won or lost every game, or groups never met)"
            if ratings.get("prior")
            else ""
        )
        + "</p>"
    )
    out.append(
        f'<p class="meta mono">master seed commitment (SHA-256): {e(str(tournament.get("commitment", "")))}'
        f"<br>master seed: {e(seed) if seed else '(revealed when every game is played)'}</p>"
    )

    return out


def _ratings_table_html(ratings: Mapping[str, Any], tournament: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The "Ratings" table: rank, bot, version, Elo, interval, games, score, LOS against the next."""
    e = html.escape
    versions = tournament.get("bots", {})
    los = _los_next(ratings)
    out: list[str] = []
    out.append(
        "<h2>Ratings</h2><table><tr><th>#</th><th class=l>bot</th><th class=l>version</th><th>Elo</th>"
        "<th>95% interval</th><th>games</th><th>score</th><th>LOS vs next</th></tr>"
    )
    for k, name in enumerate(names, start=1):
        r = ratings["ratings"][name]
        lv = los.get(name)
        out.append(
            f"<tr><td>{k}</td><td class=l>{e(name)}</td><td class=l>{e(str(versions.get(name, '')))}</td>"
            f'<td>{r["elo"]:.1f}</td><td title="{e(r.get("ci_note", r.get("ci_method", "")))}">'
            f"{_interval(r, 1)}</td><td>{r['games']}</td>"
            f"<td>{r['score']:g}</td><td>{'' if lv is None else f'{lv:.1%}'}</td></tr>"
        )
    out.append("</table>")
    return out


def _pairwise_html(ratings: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The "Pairwise scores" table: each row bot's score against each column bot."""
    e = html.escape
    out: list[str] = []
    out.append(
        "<h2>Pairwise scores</h2><p class=meta>Row bot's score against the column bot "
        "(wins + half the draws) / games.</p><table><tr><th></th>"
    )
    out.extend(f"<th>{e(n)}</th>" for n in names)
    out.append("</tr>")
    matrix = ratings.get("matrix", {})
    for a in names:
        out.append(f"<tr><th class=l>{e(a)}</th>")
        for b in names:
            cell = matrix.get(a, {}).get(b)
            if a == b or cell is None:
                out.append("<td>—</td>")
            else:
                cls = "win" if cell["pct"] > 0.5 else "loss" if cell["pct"] < 0.5 else ""
                out.append(f'<td class="{cls}">{cell["score"]:g}/{cell["games"]} ({cell["pct"]:.0%})</td>')
        out.append("</tr>")
    out.append("</table>")

    return out


def _games_html(games: Sequence[Mapping[str, Any]], replays: Mapping[str, str] | None) -> list[str]:
    """The "Games" table (left open: the caller closes it), each game's record and replay linked."""
    e = html.escape
    out: list[str] = []
    out.append(
        "<h2>Games</h2><table><tr><th class=l>game</th><th class=l>side 0</th><th class=l>side 1</th>"
        "<th>score</th><th>dealer</th><th class=l>termination</th><th class=l>record</th></tr>"
    )
    for g in games:
        rec = g.get("record")
        href = urllib.parse.quote(str(rec), safe="/") if rec else ""
        link = f'<a href="{e(href, quote=True)}">record</a>' if rec else ""
        replay = (replays or {}).get(str(g["game_id"]))
        if replay:
            link += f' <a class="replay" href="{e(urllib.parse.quote(replay, safe="/"), quote=True)}">replay</a>'
        out.append(
            f"<tr><td class=l>{e(str(g['game_id']))}</td><td class=l>{e(g['a'])}</td>"
            f"<td class=l>{e(g['b'])}</td><td>{g['scores'][0]}–{g['scores'][1]}</td>"
            f"<td>{g.get('first_dealer', '')}</td><td class=l>{e('; '.join(g.get('reasons', [])))}</td>"
            f"<td class=l>{link}</td></tr>"
        )
    return out


def _failures_html(tournament: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    """The leaderboard's "Bot failures" table (see :func:`failures_table`)."""
    e = html.escape
    names = [f.name for f in dataclass_fields(failures.Failures)]
    rows = _failure_rows(tournament)
    if not rows:
        return []
    rank = {name: k for k, name in enumerate(order)}
    out = [
        "<h2>Bot failures</h2><p class=meta>Forfeited games; exceptions raised in the bot's own code and "
        "fallback moves its SDK sent instead (self-reported); actions the referee rejected; timeouts; "
        "crashes of its process.</p><table><tr><th class=l>bot</th>"
        + "".join(f"<th>{n}</th>" for n in names)
        + "</tr>"
    ]
    for name, counts in sorted(rows, key=lambda x: rank.get(x[0], len(rank))):
        cells = "".join(f'<td class="{"loss" if getattr(counts, n) else ""}">{getattr(counts, n)}</td>' for n in names)
        out.append(f"<tr><td class=l>{e(name)}</td>{cells}</tr>")
    out.append("</table>")
    return out


def intervals_method(ratings: Mapping[str, Any]) -> str:
    """How the 95% intervals of ``ratings`` were made, one line (the leaderboards show it): the normal
    approximation (marked live when published before the bootstrap, :mod:`arena.publication`) or the
    bootstrap with its resamples."""
    n = ratings.get("bootstrap", 0)
    if ratings.get("publication") == "live":  # arena.publication.live_ratings: published before a bootstrap
        last = ratings.get("last_bootstrap")
        after = f"; the last bootstrap covered {last['games']} games" if last else ""
        return f"normal approximation (live: bootstrap intervals follow in the background{after})"
    if not n:
        return "normal approximation"
    text = f"bootstrap over duplicate pairs ({n} resamples)"
    if any(r.get("ci_note") for r in ratings["ratings"].values()):
        text += f"; where marked {MARK}, the wider of that and the normal approximation"
    return text


# -------------------------------------------------------------------------------------- terminal


def ratings_table(ratings: Mapping[str, Any], tournament: Mapping[str, Any] | None = None) -> Table:
    """A rich table of the ranking: rank, bot, version, Elo, 95% interval, games, score, LOS vs next.

    Intervals are whole Elo points and never wrapped (a pipe or CI log gets one line a bot); an
    interval the bootstrap alone could not estimate is marked ``*`` and explained in the caption.
    """
    versions = (tournament or {}).get("bots", {})
    los = _los_next(ratings)
    note = _interval_note(ratings)
    table = Table(title=str((tournament or {}).get("name", "ratings")), caption=note or None, caption_justify="left")
    for col, just, wrap in (
        ("#", "right", False),
        ("bot", "left", True),
        ("version", "left", True),
        ("Elo", "right", False),
        ("95% interval", "right", False),
        ("games", "right", False),
        ("score", "right", False),
        ("LOS next", "right", False),
    ):
        table.add_column(col, justify=just, no_wrap=not wrap)  # type: ignore[arg-type]
    for k, (name, r) in enumerate(ratings["ratings"].items(), start=1):
        lv = los.get(name)
        table.add_row(
            str(k),
            name,
            str(versions.get(name, "")),
            f"{r['elo']:.1f}",
            _interval(r, 0),
            str(r["games"]),
            f"{r['score']:g}",
            "" if lv is None else f"{lv:.1%}",
        )
    return table


def _failure_rows(tournament: Mapping[str, Any] | None) -> list[tuple[str, failures.Failures]]:
    """(bot, counts) in the ratings' order, from the ``failures`` facts (see :mod:`arena.failures`)."""
    out = []
    for name, data in (tournament or {}).get("failures", {}).items():
        counts = failures.Failures()
        counts.add(data)
        out.append((name, counts))
    return out


def failures_table(tournament: Mapping[str, Any] | None, order: Sequence[str] = ()) -> Table:
    """A rich table of each bot's failures (forfeited games, exceptions in its ``act``, fallback moves,
    rejected actions, timeouts, crashes), bots in ``order`` first."""
    table = Table(title="bot failures")
    names = [f.name for f in dataclass_fields(failures.Failures)]
    table.add_column("bot", justify="left")
    for n in names:
        table.add_column(n, justify="right", no_wrap=True)
    rank = {name: k for k, name in enumerate(order)}
    for name, counts in sorted(_failure_rows(tournament), key=lambda x: rank.get(x[0], len(rank))):
        table.add_row(escape(name), *(str(getattr(counts, n)) for n in names))
    return table


@contextmanager
def progress_bar(
    total: int, done: int = 0, console: Console | None = None, enabled: bool = True
) -> Iterator[Any]:
    """A live progress bar (games done / total, rate, elapsed, ETA, the bots' failures so far); yields
    ``advance(n=1, failures=None)`` (``failures``: a one-line summary shown at the end of the bar).

    ``done`` games (from an earlier run) start the bar. With ``enabled=False`` nothing is drawn.
    """
    if not enabled:
        yield lambda n=1, failures=None: None
        return
    prog = Progress(
        TextColumn("[bold]games"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("[yellow]{task.fields[failures]}"),
        console=console,
        transient=False,
    )
    import time

    start = time.monotonic()
    base = done
    with prog:
        task = prog.add_task("games", total=total, completed=done, rate="", failures="")

        def advance(n: int = 1, failures: str | None = None) -> None:
            nonlocal done
            done += n
            elapsed = max(time.monotonic() - start, 1e-9)
            extra = {} if failures is None else {"failures": escape(failures)}
            prog.update(task, advance=n, rate=f"{(done - base) / elapsed:.2f} games/s", **extra)

        yield advance
