"""The pages rendered with the Jinja templates, in and out of a request: the leaderboard's board is one
template (``_board.html``) shown by the live page (``leaderboard.html``, refreshed from ``/_board``)
and by the static file ``leaderboard.html`` that ``arena run`` writes (:func:`leaderboard_html`,
``leaderboard_file.html``: the same board, every game with its record and static replay linked, the
stylesheet inline, no script), so both show the same ratings the same way.

Every template autoescapes; what goes in as markup is built here from numbers and escaped names
(the SVG charts, :mod:`arena.report.figures`) or JSON made safe by :func:`script_json`.
"""

from __future__ import annotations

import functools
import json
import urllib.parse
from collections.abc import Collection, Mapping, Sequence
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from arena.formats.sprt import elo_text
from arena.report.failures import Failures
from arena.report.figures import (
    history_chart,
    interval_note,
    interval_text,
    intervals_method,
    ranks,
    rating_chart,
)
from arena.report.terminal import failure_rows
from arena.tournament.result import public_reason
from arena.web.frames import compact_frames
from referee.outcome import NOT_A_FORFEIT
from referee.rules.seats import side_of

if TYPE_CHECKING:
    from arena.ratings.fit import HistoryPoint, RatingTable
    from arena.tournament.result import GameFacts, GameRow
    from arena.tournament.runner import TournamentFacts

#: games.jsonl terminations that are not a failure of the seat
_NOT_FAILURES = frozenset(t.value for t in NOT_A_FORFEIT)

HERE = Path(__file__).parent
#: What the pages say of the two games of a pair, true of both kinds (one clause; the data layer's refusal of a
#: closed replay says it too: :class:`arena.web.data.NotYet`).
PAIR_NOTE = ("duplicate pair deals both games the same cards; with a remote bot in the pairing its two games are "
             "dealt independently, and held back alike")


def script_json(value: object) -> str:
    """JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` as ``\\u`` escapes."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def replay_json(replay: Mapping[str, Any]) -> str:
    """The viewer's data (:class:`arena.web.frames.Replay`, or a spectator's) as its page carries them:
    :func:`script_json` with the frames compact (:func:`arena.web.frames.compact_frames`;
    ``"frames_compact": true`` tells ``viewer.js`` to expand them)."""
    return script_json({**replay, "frames": compact_frames(replay["frames"]), "frames_compact": True})


@functools.cache
def templates() -> jinja2.Environment:
    """The Jinja2 environment of the pages (autoescape on; ``script_json`` as a filter; ``pair_note``, what
    the pages say of a pair's two games: :data:`PAIR_NOTE`). One for the process: it compiles each
    template once (a league publishes its leaderboard again and again)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["script_json"] = lambda v: jinja2.utils.markupsafe.Markup(script_json(v))
    env.filters["replay_json"] = lambda v: jinja2.utils.markupsafe.Markup(replay_json(v))
    env.filters["elo_text"] = elo_text
    env.globals["pair_note"] = PAIR_NOTE
    return env


def forfeits_by_bot(rows: Sequence[GameFacts]) -> dict[str, dict[str, int]]:
    """Per bot, how many times one of its seats ended with each failure termination (``timeout``,
    ``no_show``, …; ``normal`` and ``other_seat_forfeited`` are not failures)."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        sides = (r["a"], r["b"])
        for seat, term in enumerate(r.get("terminations", [])):
            if term in _NOT_FAILURES:
                continue
            bot = out.setdefault(sides[side_of(seat)], {})
            bot[term] = bot.get(term, 0) + 1
    return out


def board_context(
    ratings: RatingTable,
    facts: TournamentFacts,
    forfeits: Mapping[str, Mapping[str, int]],
    running: Sequence[Mapping[str, Any]] | None = (),
    rate: float | None = None,
    hidden: Collection[str] = (),
) -> dict[str, Any]:
    """What ``_board.html`` shows: the ratings (a :func:`arena.ratings.fit.rate` result with its
    publication marks), the tournament's public ``facts`` (name, players, bots, commitment, scheduled,
    played, master seed; and when published: failures, sprt, precision; ``left_out``: the bots ``arena serve``
    leaves out, with why, its "Left out" table; ``waiting``: the remote bots whose games wait for their first
    worker, marked "waiting for its workers"), the ``forfeits`` (:func:`forfeits_by_bot`
    of the games.jsonl rows), and for a live league the ``running`` games (None: not read now, too many reads
    of running games at once: :mod:`arena.web.livereads`) and ``rate`` (games a second).
    ``hidden``: entrants left out of the tables, the charts, the failures and the forfeits (a
    competition's older versions, unless asked for)."""
    names = [n for n in ratings["ratings"] if n not in hidden]
    shown: RatingTable = {**ratings, "ratings": {n: ratings["ratings"][n] for n in names}}  # the chart's bots
    order = {name: k for k, name in enumerate(names)}
    failures = sorted((row for row in failure_rows(facts) if row[0] not in hidden),
                      key=lambda row: order.get(row[0], len(order)))
    history: list[HistoryPoint] = [{"games": p["games"], "ratings": {n: r for n, r in p["ratings"].items()
                                                                     if n not in hidden}}
                                   for p in ratings.get("history") or []]
    return {
        "ratings": ratings,
        "facts": facts,
        "names": names,
        "ranks": ranks(ratings, names),
        "interval": lambda r: interval_text(r, 1),
        "intervals_method": intervals_method(ratings),
        "interval_note": interval_note(shown),
        # the LOS against the bot ranked next, only where that bot is shown: against a hidden version it
        # would read as a comparison with the next row
        "los": {e["better"]: e["los"] for e in ratings.get("los", []) if e["worse"] not in hidden},
        "chart": jinja2.utils.markupsafe.Markup(rating_chart(shown)),
        "history_chart": jinja2.utils.markupsafe.Markup(history_chart(history)) if history else None,
        "failure_kinds": [f.name for f in dataclass_fields(Failures)],
        "failures": failures,
        "forfeits": {bot: kinds for bot, kinds in forfeits.items() if bot not in hidden},
        "rate": rate,
        "running": None if running is None else list(running),
        "hidden": len(hidden),
        "waiting": [w for w in facts.get("waiting", []) if w not in hidden],
    }


def _href(path: str) -> str:
    """A relative link to ``path`` (a file below the output folder), URL-encoded: game ids carry the
    tournament's name, which may hold ``#``, ``?`` or ``%``."""
    return urllib.parse.quote(path, safe="/")


class GameRowsHtml:
    """The rows of the static leaderboard's games table (``_game_row.html``), each kept from one page to the
    next while its game shows the same values and links: a league's publications render only the new games.
    Each :meth:`render` keeps the rows of the games it was given, and no others."""

    def __init__(self) -> None:
        self._rows: dict[tuple[object, ...], jinja2.utils.markupsafe.Markup] = {}

    def render(self, games: Sequence[GameRow], replays: Mapping[str, str]) -> jinja2.utils.markupsafe.Markup:
        """The rows of ``games`` (games.jsonl rows), in their order, each on a line of its own: the game,
        its sides, score, first dealer and reasons, its record and, from ``replays`` (game id -> the
        static viewer page, :mod:`arena.web.export`), its replay linked."""
        template = templates().get_template("_game_row.html")
        kept, out = self._rows, []
        self._rows = {}
        for g in games:
            g = {**g, "reasons": [public_reason(str(r)) for r in g["reasons"]]}  # the bot's output is private
            gid = str(g["game_id"])
            link = {"record": _href(str(g["record"])) if g.get("record") else "",
                    "replay": _href(replays[gid]) if gid in replays else ""}
            key = (g["game_id"], g["a"], g["b"], tuple(g["scores"]), g["first_dealer"], tuple(g["reasons"]),
                   link["record"], link["replay"])
            row = kept.get(key)
            if row is None:
                row = jinja2.utils.markupsafe.Markup(template.render(g=g, link=link))
            self._rows[key] = row
            out.append(row)
        return jinja2.utils.markupsafe.Markup("".join(f"\n{row}\n" for row in out))


def leaderboard_html(
    ratings: RatingTable,
    tournament: TournamentFacts,
    games: Sequence[GameRow],
    replays: Mapping[str, str] | None = None,
    rows: GameRowsHtml | None = None,
) -> str:
    """The static, self-contained leaderboard page: the live page's board (:func:`board_context`) and
    every game of ``games`` (games.jsonl rows) with its record and, from ``replays`` (game id -> the
    static viewer page, :mod:`arena.web.export`), its replay linked; the stylesheet inline, no script,
    nothing fetched. Every name is HTML-escaped. ``rows``: the games' rows kept from the last page (a
    league's publications); without it, every row is rendered."""
    facts: TournamentFacts = {
        **tournament,
        "name": tournament.get("name", "tournament"),
        "played": tournament.get("played", len(games)),
        "scheduled": tournament.get("scheduled", len(games)),
    }
    table = (rows or GameRowsHtml()).render(games, replays or {})
    css = jinja2.utils.markupsafe.Markup((HERE / "static" / "app.css").read_text(encoding="utf-8"))
    page = templates().get_template("leaderboard_file.html")
    board = board_context(ratings, facts, forfeits_by_bot(games))
    return page.render(**board, games_table=table, inline_css=css, static_copy=True)
