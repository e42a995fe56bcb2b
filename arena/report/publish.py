"""Publishing a tournament (:func:`publish_tournament`): rate every stored game, write the files in the
output folder and print the tables (:mod:`arena.report.terminal`).

Files written by :func:`write_outputs` (all UTF-8):

- ``games.jsonl`` — one line a stored game: the :mod:`arena.ratings.fit` input (``a``, ``b``,
  ``score``, ``pair``) plus ``game_id``, ``match_id``, ``scores``, ``winner``, ``reasons``,
  ``record``, ``seed``, ``first_dealer``, ``duration_s``, and for games played on a referee
  ``terminations`` (one per seat: ``normal``, ``timeout``, ``no_show``, …), ``referee`` and
  ``failures`` (one per seat: :class:`arena.report.failures.Failures` as a dict);
- ``ratings.json`` — the :func:`arena.ratings.fit.rate` result plus ``tournament`` (name, bots and
  versions, config fingerprint, master seed commitment, ``failures`` per bot, the revealed
  ``master_seed`` once every game is played — ``null`` before — and for a ladder ``ladder``: its
  standings, the last pairs chosen with their reasons and why it stopped,
  :meth:`arena.formats.ladder_run.LadderRun.board`; ``left_out``, when ``arena serve`` leaves bots out:
  ``[{"bot", "why"}]``, each reason one public line, :func:`arena.tournament.league.public_why`; ``waiting``, when
  remote bots' games wait for their first worker: their labels, sorted (the board marks them "waiting for its
  workers"), as of the publication;
  ``disqualified``, when the host disqualified a competitor: ``[{"bot", "why": "disqualified: REASON"}]``, whose
  games are left out of the ratings, kept in games.jsonl and the replays, :mod:`arena.report.disqualified`);
- ``ratings.csv`` — rank (shared by equal ratings: 1, 2, 2, 4), bot, version, elo, ci_low, ci_high, games,
  score, los_next, ci_method;
- ``leaderboard.html`` — self-contained (inline CSS and SVG, no scripts or external assets), rendered
  by :func:`arena.web.render.leaderboard_html` with the live page's templates: the table with
  intervals (each marked with how it was computed), the bots' failures, a chart of ratings with
  error bars, the SPRT, precision and rating history when present, the pairwise score matrix, and
  every game with its termination reasons and links to its record file and its static replay viewer
  (``replays/<game id>.html``, :mod:`arena.web.export`; URL-encoded: game ids carry the tournament's
  name).
"""

from __future__ import annotations

import csv
import json
import math
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from arena.formats.duplicate import precision_facts
from arena.formats.ladder_run import FINAL_STOPS, refitted_board
from arena.formats.sprt_run import SprtRun
from arena.ratings.fit import RatingTable
from arena.ratings.publication import LivePublisher, final_ratings
from arena.report.cache import PublishCache, StoredGame
from arena.report.disqualified import mark_barred, rated, read_barred
from arena.report.figures import los_next, ranks
from arena.report.held import Holding
from arena.report.terminal import failures_table, left_out_table, ratings_table
from arena.tournament.result import GameResult
from arena.tournament.runner import (
    CLOSED_KEY,
    LADDER_KEY,
    LEFT_OUT_KEY,
    WAITING_KEY,
    Tournament,
    TournamentFacts,
    left_out_facts,
    public_facts,
    scheduled_count,
    waiting_facts,
)
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import StorageError

if TYPE_CHECKING:
    from arena.web.render import GameRowsHtml


class PublishError(StorageError, OSError):
    """The output files could not be written (a full disk, a folder not writable); the stored games
    are untouched. ``str()`` names the folder (and the file, when the system says which)."""


def write_outputs(
    output: Path,
    games: Sequence[StoredGame],
    ratings: RatingTable,
    tournament: TournamentFacts,
    warn: Callable[[str], None] | None = None,
    rows: GameRowsHtml | None = None,
) -> dict[str, Path]:
    """Write games.jsonl, ratings.json, ratings.csv, leaderboard.html and the static replay pages into ``output``.

    :param games: the stored games, in the order the files list them (:meth:`PublishCache.read`).
    :param ratings: the :func:`arena.ratings.fit.rate` result.
    :param tournament: JSON-ready facts about the tournament (name, bots {name: version}, commitment,
        master_seed or None, fingerprint, scheduled/played counts).
    :param warn: gets one line for each game whose record cannot be read (it has no replay page).
    :param rows: the leaderboard's games table as the last publication rendered it (:attr:`PublishCache.rows`).
    :returns: ``{"games", "ratings_json", "ratings_csv", "leaderboard"}`` -> path written.
    :raises PublishError: if the folder cannot be written (one line naming it).
    """
    try:
        return _write_outputs(output, games, ratings, tournament, warn, rows)
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        raise PublishError(f"cannot publish the results in {output}: {e.strerror or e}{where}; the stored games "
                           "are kept: run the same command to publish them") from e


def _write_outputs(
    output: Path,
    games: Sequence[StoredGame],
    ratings: RatingTable,
    tournament: TournamentFacts,
    warn: Callable[[str], None] | None,
    rows: GameRowsHtml | None,
) -> dict[str, Path]:
    """:func:`write_outputs`, raising plain :class:`OSError`."""
    output.mkdir(parents=True, exist_ok=True)
    paths = {
        "games": output / "games.jsonl",
        "ratings_json": output / "ratings.json",
        "ratings_csv": output / "ratings.csv",
        "leaderboard": output / "leaderboard.html",
    }
    _atomic_write(paths["games"], "".join(g.line for g in games))
    _atomic_write(paths["ratings_json"], strict_json({**ratings, "tournament": dict(tournament)}) + "\n")
    _atomic_write(paths["ratings_csv"], _csv(ratings, tournament))
    from arena.web.export import write_static_replays
    from arena.web.render import leaderboard_html

    table = [g.row for g in games]
    replays = write_static_replays(output, table, warn)
    _atomic_write(paths["leaderboard"], leaderboard_html(ratings, tournament, table, replays, rows))
    return paths


def finite(value: object) -> object:
    """``value`` (JSON-ready: dicts, lists, numbers, text) with every float that is not a finite number
    (``inf``, ``nan``: an efficiency ratio without variance, say) as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def strict_json(value: object) -> str:
    """``value`` as JSON (indented) that any parser reads: :func:`finite` first (JSON has no ``Infinity``
    nor ``NaN``, which a browser's JSON.parse and jq refuse)."""
    return json.dumps(finite(value), indent=2, allow_nan=False)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


#: What makes a spreadsheet read a CSV cell as a formula (``=cmd|' /C calc'!A0``: CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A text cell of a CSV file a spreadsheet may open: one starting as a formula would
    (:data:`_FORMULA_START`) gets a leading ``'``, which makes it text (OWASP's advice)."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def _csv(ratings: RatingTable, tournament: TournamentFacts) -> str:
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "bot", "version", "elo", "ci_low", "ci_high", "games", "score", "los_next", "ci_method"])
    versions = tournament.get("bots", {})
    los, rank = los_next(ratings), ranks(ratings)
    for name, r in ratings["ratings"].items():
        w.writerow(
            [
                rank[name],
                csv_text(name),
                csv_text(str(versions.get(name, ""))),
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


def tournament_facts(t: Tournament, complete: bool) -> TournamentFacts:
    """JSON-ready facts published with the ratings (but ``played``, the games published); the master seed
    only when ``complete``."""
    return {
        **public_facts(t.config, t.commitment, scheduled_count(t.schedule, t.store)),
        "bots": dict(t.versions),  # every entrant's, by label: a retired one's row shows its version too
        "entrants": list(t.labels),
        # local process bots the organiser trusted to run outside the sandbox (sandbox = "none")
        "unsandboxed": [label for label, b in t.entrants.items() if b.sandbox == "none" and not b.in_container
                        and b.mode != "remote"],
        # the entrants the config schedules now, and the remote ones among them: the second game of each of
        # their pairs is dealt from a seed of its own (an entrant no longer scheduled: not said)
        "active": list(t.entrants),
        "remote": [label for label, b in t.entrants.items() if b.mode == "remote"],
        "master_seed": t.master_seed.hex() if complete else None,
        **listed_of(t),
        **({"league_closed": True} if _closed(t) else {}),
    }


def _closed(t: Tournament) -> bool:
    """Whether ``t`` is a league ``arena competition close`` ended for good (:data:`CLOSED_KEY`): its seed is
    revealed, and it plays no more games."""
    return t.store.get_meta(CLOSED_KEY) is not None


def listed_of(t: Tournament) -> TournamentFacts:
    """What the store lists of ``t``'s bots, each key only when its list is not empty: ``left_out``
    (``[{"bot", "why"}]``: the bots ``arena serve`` leaves out, :data:`LEFT_OUT_KEY`) and ``waiting`` (the
    remote bots whose games wait for their first worker, sorted labels, :data:`WAITING_KEY`: as of this
    publication; the web's pages read the store's list anew)."""
    rows = left_out_facts(t.store.get_meta(LEFT_OUT_KEY))
    waiting = waiting_facts(t.store.get_meta(WAITING_KEY))
    return {**({"left_out": rows} if rows else {}), **({"waiting": waiting} if waiting else {})}


def publish_tournament(
    t: Tournament,
    output: Path,
    bootstrap: int,
    console: Console | None,
    *,
    reveal: bool = True,
    publisher: LivePublisher | None = None,
    cache: PublishCache | None = None,
) -> RatingTable:
    """Rate every stored game and write the output files; print the table to ``console`` if given.

    The master seed is revealed once every scheduled game is played, unless ``reveal`` is False (a
    league served by ``arena serve`` has no last game: its seed stays secret), and in a league closed for
    good (:func:`_closed`, ``tournament.league_closed``), whatever is left unplayed.

    :param publisher: for a league that republishes after every game: the ratings come from
        :meth:`arena.ratings.publication.LivePublisher.ratings` (live at once, normal approximation; the bootstrap
        once its background refresh covers these games), and the rating history is published with the
        bootstrap only. ``None``: the bootstrap now (``arena run``), marked ``"publication": "final"``.
    :param cache: what the last publication of this output folder derived from its games, to use and
        keep (:mod:`arena.report.cache`: a league's publications read and render only the new games);
        ``None``: a new one. The files are the same either way.
    :returns: the ratings result (see :func:`arena.ratings.publication.live_ratings` and ``final_ratings``).
    :raises PublishError: the files cannot be written (one line naming the folder; the games stay stored).

    With a ``console``, each game whose record cannot be read (missing, cut short) gets a line
    ``warning: game G: its record records/G.jsonl cannot be read (why); …`` (:mod:`arena.web.export`).
    """
    cache = cache if cache is not None else PublishCache()
    stored = cache.read(t.store, [g.game_id for g in t.schedule])
    results = [g.result for g in stored]
    test = SprtRun(t.config, t.schedule, results) if t.config.sprt else None
    board = json.loads(t.store.get_meta(LADDER_KEY) or "null") if t.config.ladder else None
    complete = _closed(t) or (reveal and _complete(t, board, test))
    facts = tournament_facts(t, complete)
    stored = cache.hold(Holding.of(facts).held(t.store.lone_games()))  # a blind tournament's: arena.report.held
    facts["played"] = len(stored)  # the games published
    if not reveal:
        facts["league"] = True
    if board is not None:
        facts["ladder"] = board
    if test is not None:
        facts["sprt"] = test.test.to_dict()
    facts["failures"] = cache.failures([b.name for b in t.config.bots])
    if complete and t.store.get_meta("finished_at") is None:
        t.store.set_meta("finished_at", f"{time.time():.3f}")
    barred = _barred(output, facts, t, [g.result for g in stored])
    counted = rated(stored, barred)
    games = [g.game for g in counted if g.game is not None]
    names = [name for name in t.labels if name not in barred]
    ratings = final_ratings(games, names, bootstrap=bootstrap) if publisher is None else publisher.ratings(games, names)
    if ratings.get("publication") != "live":
        played = [g.game for g in _history_order(counted, t.schedule) if g.game is not None]
        ratings = {**ratings, "history": cache.history(played, names)}
    facts["precision"] = precision_facts(ratings, cache.efficiency(games))
    write_outputs(output, stored, ratings, facts, None if console is None else _warner(console), cache.rows)
    if console is not None:
        _print_publication(console, output, ratings, facts, test, t if complete else None)
    return ratings


def _barred(output: Path, facts: TournamentFacts, t: Tournament, shown: list[GameResult]) -> dict[str, str]:
    """The disqualified entrants of the competition in ``output`` (:func:`read_barred`: their games are not
    rated), listed in ``facts`` (``disqualified``) and left out of its ``failures`` and a ladder's board (its
    standings and last pairs' figures refitted from the games ``shown`` when written with others void:
    :func:`mark_barred`).

    :raises PublishError: the competition's book stayed busy (another process holding it) past sqlite's wait:
        one line naming it; nothing is written, the games stay stored (publish again: ``arena run`` of the config).
    """
    try:
        barred = read_barred(output)
    except sqlite3.Error as e:  # a board without the host's disqualifications would rate the disqualified
        raise PublishError(f"the board in {output} is not published: the competition's book could not be read "
                           f"({e}); the games stay stored: publish again once it is free (`arena run` of the "
                           "config)") from e
    mark_barred(facts, barred, lambda board: refitted_board(board, shown, t.master_seed, barred, time.time(),
                                                            blind=t.config.blind_seats))
    if barred:
        facts["failures"] = {bot: f for bot, f in facts["failures"].items() if bot not in barred}
    return barred


def _history_order(games: Sequence[StoredGame], schedule: Sequence[ScheduledGame]) -> list[StoredGame]:
    """The games in the order the rating history counts them: the schedule's in its order (whatever an
    interruption or concurrency did to the order they were played, so a resumed run publishes what an
    uninterrupted one does), then those without a place in it (a ladder's, chosen as it went) in the
    order they were stored; ``games`` holds the schedule's first, in its order (:meth:`PublishCache.read`)."""
    scheduled = {g.game_id for g in schedule}
    rest = sorted((g for g in games if g.result.game_id not in scheduled), key=lambda g: g.result.stored_at or 0.0)
    return [g for g in games if g.result.game_id in scheduled] + rest


def _complete(t: Tournament, board: dict[str, Any] | None, test: SprtRun | None) -> bool:
    """Whether ``t`` is over (its master seed then revealed): a ladder (its ``board``) once it stopped for good
    with nothing left to play; else every scheduled game played, or the SPRT ``test`` decided."""
    if board is not None:
        return board["stop"] in [s.value for s in FINAL_STOPS] and not board["plan"]
    return not t.store.pending(t.schedule) or (test is not None and test.test.decided)


def _print_publication(console: Console, output: Path, ratings: RatingTable, facts: TournamentFacts,
                       test: SprtRun | None, revealed: Tournament | None) -> None:
    """The terminal's account of a publication: the ratings table, the SPRT's summary, the failures table,
    where the files are, and the master seed of a ``revealed`` (complete) tournament."""
    console.print(ratings_table(ratings, facts))
    if test is not None:
        console.print(test.summary(), soft_wrap=True, highlight=False)
    console.print(failures_table(facts, list(ratings["ratings"])))
    left_out = left_out_table(facts)
    if left_out is not None:
        console.print(left_out)
    console.print(f"output: {output}  (leaderboard.html, ratings.json, ratings.csv, games.jsonl)", soft_wrap=True)
    if revealed is not None:
        console.print(f"master seed (revealed): {revealed.master_seed.hex()}  sha256: {revealed.commitment}",
                      soft_wrap=True)


def _warner(console: Console) -> Callable[[str], None]:
    """Prints each warning of the publication as one line ``warning: …`` on ``console``."""
    return lambda m: console.print(f"[yellow]warning:[/yellow] {escape(m)}", soft_wrap=True, highlight=False)
