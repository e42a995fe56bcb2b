"""Publishing a tournament (:func:`publish_tournament`): rate every stored game, write the files in the
output folder and print the tables (:mod:`arena.report.terminal`).

Files written by :func:`write_outputs` (all UTF-8):

- ``games.jsonl`` — one line a stored game: the :mod:`arena.ratings.fit` input (``a``, ``b``,
  ``score``, ``pair``) plus ``game_id``, ``match_id``, ``scores``, ``winner``, ``reasons``,
  ``record``, ``seed``, ``first_dealer``, ``duration_s``, and for games played on a referee
  ``terminations`` (one per seat: ``normal``, ``timeout``, ``no_show``, …), ``referee`` and
  ``failures`` (one per seat: :class:`arena.report.failures.Failures` as a dict);
- ``ratings.json`` — the :func:`arena.ratings.fit.rate` result plus ``tournament`` (name, bots and
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
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

from rich.console import Console

from arena.formats.duplicate import precision_facts
from arena.formats.sprt_run import SprtRun
from arena.ratings.fit import games_from_mapping, history
from arena.ratings.publication import LivePublisher, final_ratings
from arena.report import failures
from arena.report.figures import history_chart, interval_note, interval_text, intervals_method, los_next, rating_chart
from arena.report.terminal import failure_rows, failures_table, ratings_table
from arena.tournament.runner import Tournament, public_facts
from arena.tournament.store import GameResult, games_rows


def write_outputs(
    output: Path,
    results: Sequence[GameResult],
    ratings: Mapping[str, Any],
    tournament: Mapping[str, Any],
) -> dict[str, Path]:
    """Write games.jsonl, ratings.json, ratings.csv and leaderboard.html into ``output``.

    :param ratings: the :func:`arena.ratings.fit.rate` result.
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


def _csv(ratings: Mapping[str, Any], tournament: Mapping[str, Any]) -> str:
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "bot", "version", "elo", "ci_low", "ci_high", "games", "score", "los_next", "ci_method"])
    versions = tournament.get("bots", {})
    los = los_next(ratings)
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


def _study_sections(ratings: Mapping[str, Any], tournament: Mapping[str, Any]) -> list[str]:
    """The SPRT verdict (``tournament["sprt"]``), the precision and duplicate efficiency
    (``tournament["precision"]``, see :func:`arena.formats.duplicate.precision_facts`) and the rating history
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
    note = interval_note(ratings)
    if note:
        out.append(f'<p class="meta">{html.escape(note)}</p>')
    out.extend(_failures_html(tournament, names))
    out.append("<h2>Ratings with 95% intervals</h2>")
    out.append(rating_chart(ratings))
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
    los = los_next(ratings)
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
            f"{interval_text(r, 1)}</td><td>{r['games']}</td>"
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
    rows = failure_rows(tournament)
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


def tournament_facts(t: Tournament, complete: bool) -> dict[str, Any]:
    """JSON-ready facts published with the ratings; the master seed only when ``complete``."""
    return {
        **public_facts(t.config, t.commitment, len(t.schedule)),
        "bots": {label: b.version for label, b in t.entrants.items()},
        "entrants": list(t.labels),
        "master_seed": t.master_seed.hex() if complete else None,
        "played": t.store.count(),
    }


def publish_tournament(
    t: Tournament,
    output: Path,
    bootstrap: int,
    console: Console | None,
    *,
    reveal: bool = True,
    publisher: LivePublisher | None = None,
) -> dict[str, Any]:
    """Rate every stored game and write the output files; print the table to ``console`` if given.

    The master seed is revealed once every scheduled game is played, unless ``reveal`` is False (a
    league served by ``arena serve`` has no last game: its seed stays secret).

    :param publisher: for a league that republishes after every game: the ratings come from
        :meth:`arena.ratings.publication.LivePublisher.ratings` (live at once, normal approximation; the bootstrap
        once its background refresh covers these games), and the rating history is published with the
        bootstrap only. ``None``: the bootstrap now (``arena run``), marked ``"publication": "final"``.
    :returns: the ratings result (see :func:`arena.ratings.publication.live_ratings` and ``final_ratings``).
    """
    results = t.store.results(order=[g.game_id for g in t.schedule])
    test = SprtRun(t.config, t.schedule, results) if t.config.sprt else None
    complete = reveal and (not t.store.pending(t.schedule) or (test is not None and test.test.decided))
    facts = tournament_facts(t, complete)
    if test is not None:
        facts["sprt"] = test.test.to_dict()
    facts["failures"] = {n: f.to_dict() for n, f in failures.tally(results, [b.name for b in t.config.bots]).items()}
    if complete and t.store.get_meta("finished_at") is None:
        t.store.set_meta("finished_at", f"{time.time():.3f}")
    rows = games_rows(results)
    games = games_from_mapping(rows)
    names = list(t.labels)
    live = publisher is not None
    ratings = publisher.ratings(games, names) if live else final_ratings(games, names, bootstrap=bootstrap)
    if ratings.get("publication") != "live":
        ratings = {**ratings, "history": history(games, names=names)}
    facts["precision"] = precision_facts(ratings, games)
    write_outputs(output, results, ratings, facts)
    if console is not None:
        console.print(ratings_table(ratings, facts))
        if test is not None:
            console.print(test.summary(), soft_wrap=True, highlight=False)
        console.print(failures_table(facts, list(ratings["ratings"])))
        console.print(
            f"output: {output}  (leaderboard.html, ratings.json, ratings.csv, games.jsonl)", soft_wrap=True
        )
        if complete:
            console.print(f"master seed (revealed): {t.master_seed.hex()}  sha256: {t.commitment}", soft_wrap=True)
    return ratings
