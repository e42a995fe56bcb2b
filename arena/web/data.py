"""What the web pages show, read from one output folder: the results database (read-only), the
records and the live files of running games. Nothing here writes.

Secrets stay out: the master seed is read only once the arena has revealed it (``finished_at`` in
the meta table: every game played, as on the static leaderboard; for a league only once ``arena competition
close`` closed it); a game's deal
seed is never shown before that (the two games of a duplicate pair share it). A game's replay opens
only when **both games of its pair** are stored — a duplicate pair's share every deck, so the replay of
one would show the cards of the other while it is played (a pairing with a remote entrant deals its
two games independently: they are held back alike). A blind tournament's game whose pair's twin is not
stored yet is shown nowhere, as if not stored, while that twin is still to be played
(:mod:`arena.report.held`, :meth:`WebData.held`). Paths come from the database, never from
a URL, and must resolve inside the output folder.

What the pages derive from every stored game (the ratings' input, each bot's failures, the forfeits) is kept
between updates in the publication's cache (:class:`arena.report.cache.PublishCache`, one per
:class:`WebData`): an update reads only the games stored since the last, and a page while no game is stored
reads none.

Shapes: :meth:`WebData.game_row` is a games.jsonl row (:meth:`arena.tournament.store.GameResult.rating_row`)
without ``seed`` (unless revealed) and with ``replay_open``; :meth:`WebData.ratings` is the
ratings.json shape (:mod:`arena.ratings.publication`'s live or final ratings plus ``tournament``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypeAlias, TypedDict

from arena.ratings.fit import DEFAULT_BOOTSTRAP, RatingTable
from arena.ratings.publication import LivePublisher, final_ratings
from arena.report.cache import PublishCache, StoredGame
from arena.report.disqualified import mark_barred, rated, read_barred
from arena.report.held import Holding
from arena.tournament.result import GameFacts, GameResult, public_reason
from arena.tournament.runner import (
    CLOSED_KEY,
    DB_NAME,
    FACTS_KEY,
    LADDER_KEY,
    LEAGUE_KEY,
    LEFT_OUT_KEY,
    WAITING_KEY,
    TournamentFacts,
    left_out_facts,
    waiting_facts,
)
from arena.tournament.store import GamesReader
from arena.web.render import PAIR_NOTE, forfeits_by_bot
from referee.outcome import Termination

#: Games of one pair (arena/tournament/schedule.py): a duplicate pair's share the deal seed, hence every
#: deck; with a remote entrant the two are dealt independently (its bot could remember the first's cards).
PAIR_SIZE = 2
#: The termination kinds a stored seat can end with (docs/arena.md, Bot failures): the referee's and
#: the arena's own (:class:`referee.outcome.Termination`; not ``aborted``: an aborted match is never stored).
TERMINATIONS = tuple(t.value for t in Termination if t not in (Termination.UNSPECIFIED, Termination.ABORTED))
#: The published ratings in the output folder (:mod:`arena.report.publish`).
RATINGS_FILE = "ratings.json"
#: The tournament facts the store decides, whatever a ratings.json says (:meth:`WebData.published`).
_STORE_FACTS = ("master_seed", "league", "league_closed", "ladder", "left_out", "waiting")
#: Seconds of play the board's games per second looks back on, from the newest stored game (the speed
#: lately: not since a start days before, across a resume or a league at rest).
RATE_WINDOW_S = 600
#: Largest page of the games list.
MAX_PER_PAGE = 200
#: Games a page of the games list unless ``per_page`` says otherwise.
DEFAULT_PER_PAGE = 50
#: Highest page number of the games list (its offset must fit SQLite's 64-bit integers; a page past the
#: last is empty).
MAX_PAGE = 1_000_000

#: The version of the stored games (:meth:`WebData.version`).
_VERSION_SQL = "SELECT COUNT(*), COALESCE(MAX(stored_at), 0) FROM games"

_COLUMNS = (
    "game_id, match_id, pair_id, side0, side1, score0, score1, winner, reasons, record_path, seed, first_dealer,"
    " duration_s, extra"
)


#: A parameter of a query: text, a whole number or NULL.
SqlParam: TypeAlias = str | int | None


#: What :meth:`WebData.version` says of the stored games: (games stored, time of the last one).
Version: TypeAlias = tuple[int, float]
#: When the ratings were computed: :meth:`WebData.version`, :meth:`WebData.bootstrap_mark` and what was held
#: back (:class:`arena.report.held.Holding`).
RatingsKey: TypeAlias = tuple[Version, int | None, Holding, tuple[str, ...]]  # the last: the disqualified
#: Per bot, its seats' failure terminations and how many of each (:func:`arena.web.render.forfeits_by_bot`).
Forfeits: TypeAlias = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class _Read:
    """One read of the store (:meth:`WebData._read`): its ``version``, the ``holding`` it was read under,
    every game shown (``games``, oldest first), the forfeits over them and the ids ``held`` back."""

    version: Version
    holding: Holding
    games: list[StoredGame]
    forfeits: Forfeits
    held: frozenset[str]


class PublicGameRow(GameFacts):
    """:meth:`WebData.game_row`: a games.jsonl row without its ``referee`` (ever) and its ``seed`` (until
    the master seed is revealed), and ``replay_open`` (both games of its duplicate pair stored, or the
    seed revealed)."""

    seed: NotRequired[str]
    replay_open: bool


class LinkedGameRow(PublicGameRow):
    """A :class:`PublicGameRow` as the JSON API sends it: ``record`` the API's record link and ``viewer``
    the replay page, both ``None`` while the replay is closed."""

    viewer: str | None


class RatingsPage(RatingTable):
    """:meth:`WebData.ratings`, the ratings.json shape: the published :class:`RatingTable` and the
    ``tournament``'s public facts (:meth:`WebData.facts`)."""

    tournament: TournamentFacts


class GamesPage(TypedDict):
    """:meth:`WebData.games`: the ``games`` of the page (:meth:`WebData.game_row` rows, newest first),
    the ``total`` games the filter selects, this ``page`` (1-based), ``per_page`` and the ``pages``."""

    games: list[PublicGameRow]
    total: int
    page: int
    per_page: int
    pages: int


class NotFound(LookupError):
    """No such game (or record)."""


class NotYet(PermissionError):
    """The replay is closed until its duplicate twin is finished (message says which game)."""


class BadQuery(ValueError):
    """A games-list filter that makes no sense (one line, e.g. ``result=win needs bot=NAME``)."""


#: Seconds a page waits for a database another process holds locked (the results database, the competition's
#: book) before it answers 503 (:class:`Busy`), not sqlite's 30 s (the book's read) or 10 s (the results'):
#: the way ``arena run`` waits ``BAR_WAIT_S`` at each look. The results database is WAL (a writing arena does
#: not hold its readers), so only a process that locks it whole, or a host command holding the book, costs this.
BUSY_WAIT_S = 1.0
#: Seconds a 503 for a busy database asks the visitor to wait before trying again (``Retry-After``).
BUSY_RETRY_S = 5


class Busy(sqlite3.OperationalError):
    """A database another process held locked for :data:`BUSY_WAIT_S`: one line naming it (``busy, try again``).
    An :class:`sqlite3.OperationalError`, so what caught sqlite's own error still catches it."""

    @classmethod
    def of(cls, what: str, error: sqlite3.DatabaseError) -> sqlite3.DatabaseError:
        """``error`` as a :class:`Busy` naming ``what`` (e.g. "the competition's book") when it says the database
        was locked or busy, else ``error`` itself (to be raised by the caller). The line names no file (a
        visitor sees it)."""
        said = str(error)
        if "locked" not in said and "busy" not in said:
            return error
        how = "locked" if "locked" in said else "busy"
        return cls(f"{what} is busy (another process holds it: database is {how}); try again in {BUSY_RETRY_S} s")


@dataclass(frozen=True, slots=True)
class GamesQuery:
    """A filter and a page of the games list: ``bot`` (either side), ``result`` (``win``, ``loss`` —
    for ``bot`` — or ``draw``), ``termination`` (one of :data:`TERMINATIONS`, any seat), ``page``
    (1-based, at most :data:`MAX_PAGE`) of ``per_page`` games (at most :data:`MAX_PER_PAGE`)."""

    bot: str | None = None
    result: str | None = None
    termination: str | None = None
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    def check(self) -> None:
        """:raises BadQuery: for an unknown result or termination, a win/loss without a bot, or a bad page."""
        if self.result not in (None, "win", "loss", "draw"):
            raise BadQuery(f"result must be win, loss or draw, not {self.result!r}")
        if self.result in ("win", "loss") and not self.bot:
            raise BadQuery(f"result={self.result} needs bot=NAME")
        if self.termination is not None and self.termination not in TERMINATIONS:
            raise BadQuery(f"termination must be one of {', '.join(TERMINATIONS)}, not {self.termination!r}")
        if not 1 <= self.page <= MAX_PAGE or not 1 <= self.per_page <= MAX_PER_PAGE:
            raise BadQuery(f"page must be between 1 and {MAX_PAGE} and per_page between 1 and {MAX_PER_PAGE}")

    def where(self) -> tuple[str, list[SqlParam]]:
        """The SQL condition and its parameters."""
        cond: list[str] = []
        args: list[SqlParam] = []
        if self.bot:
            cond.append("(side0 = ? OR side1 = ?)")
            args += [self.bot, self.bot]
        if self.result == "draw":
            cond.append("winner IS NULL")
        elif self.result in ("win", "loss"):
            side = "CASE WHEN side0 = ? THEN 0 ELSE 1 END"
            cond.append(f"winner {'=' if self.result == 'win' else '!='} {side} AND winner IS NOT NULL")
            args.append(self.bot)
        if self.termination:
            cond.append("EXISTS (SELECT 1 FROM json_each(games.extra, '$.terminations') WHERE value = ?)")
            args.append(self.termination)
        return (" WHERE " + " AND ".join(cond)) if cond else "", args


class WebData:
    """Read access to one output folder, safe to share between threads (one connection a call).

    :param output: the arena's output folder (``arena.sqlite`` in it; it may not exist yet).
    :param bootstrap: bootstrap resamples for the ratings (as ``arena run --bootstrap``).
    :param publisher: where the ratings come from (see :meth:`ratings`); may be set later (the app sets
        its own when it starts, or shares the one of ``arena serve``).
    """

    def __init__(self, output: Path, bootstrap: int = DEFAULT_BOOTSTRAP, publisher: LivePublisher | None = None):
        self.output = output.resolve()
        self.bootstrap = bootstrap
        self.publisher = publisher
        self._lock = threading.Lock()
        # the last computed ratings: their key, the table and each bot's failures
        self._ratings: tuple[RatingsKey, RatingTable, dict[str, dict[str, int]]] | None = None
        self._published: tuple[tuple[int, int], dict[str, Any]] | None = None  # ratings.json, by (mtime, size)
        #: what the pages derive from each stored game, kept from one read of the store to the next (its
        #: lock held while it is used: it serves one reader at a time)
        self.cache = PublishCache()
        self._reading = threading.Lock()
        self._stored: _Read | None = None  # the last read of the store
        self._refit: tuple[tuple[object, ...], dict[str, Any]] | None = None  # a ladder board's last refit, by its key

    # ------------------------------------------------------------------ database
    def _connect(self) -> sqlite3.Connection | None:
        path = self.output / DB_NAME
        if not path.is_file():
            return None
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_WAIT_S, check_same_thread=False)
        db.execute("PRAGMA query_only = ON")
        return db

    def _query(self, sql: str, args: Sequence[SqlParam] = ()) -> list[tuple[Any, ...]]:
        db = self._connect()
        if db is None:
            return []
        try:
            return db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return []  # a database the arena has just created
            raise Busy.of("the results database", e) from None
        finally:
            db.close()

    def _meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def waiting(self) -> list[str]:
        """The remote bots (labels) whose games wait for their first worker, as the arena last wrote them
        (:data:`arena.tournament.runner.WAITING_KEY`); sorted, none when not written."""
        return waiting_facts(self._meta(WAITING_KEY))

    def version(self) -> Version:
        """(games stored, time of the last one): changes when a game finishes."""
        rows = self._query(_VERSION_SQL)
        return (int(rows[0][0]), float(rows[0][1])) if rows else (0, 0.0)

    def rate(self) -> float | None:
        """Games a second lately: the games stored within :data:`RATE_WINDOW_S` seconds before the newest
        one, over the time from the earliest of them starting (its stored time less its duration) to the
        newest stored; None without a game. (Not the stored times alone: a duplicate pair's two games,
        played side by side, end within a moment.)"""
        rows = self._query(
            "SELECT COUNT(*), MIN(stored_at - duration_s), MAX(stored_at) FROM games"
            " WHERE stored_at >= (SELECT MAX(stored_at) FROM games) - ?", (RATE_WINDOW_S,))
        count, start, last = rows[0] if rows else (0, None, None)
        return count / (last - start) if count and last - start > 0 else None

    def stored_ids(self, among: Iterable[str]) -> set[str]:
        """The ids in ``among`` of stored (finished) games (looked up by id: not every stored game read)."""
        ids = sorted(set(among))
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        return {r[0] for r in self._query(f"SELECT game_id FROM games WHERE game_id IN ({marks})", ids)}

    def pair_games(self, pair_id: str) -> set[str]:
        """The ids of the stored games of the pair ``pair_id`` (looked up by pair: not every stored game read)."""
        return {r[0] for r in self._query("SELECT game_id FROM games WHERE pair_id = ?", (pair_id,))}

    def stored(self) -> list[StoredGame]:
        """Every stored game shown (not held back: :meth:`held`) and what the pages derive from it, oldest
        first (by stored time, then id): the store is read only once a game was stored (:meth:`version`: not
        for each page; every open page reloads the board when a game is stored) or what is held changed, and
        then only the games not read before (:attr:`cache`)."""
        with self._reading:
            return self._read(self.version(), self.holding()).games

    def forfeits(self) -> Forfeits:
        """Per bot, its seats' failure terminations over every game shown (the board's forfeits table:
        :func:`arena.web.render.forfeits_by_bot`), counted again only once a game was stored."""
        with self._reading:
            return self._read(self.version(), self.holding()).forfeits

    def _read(self, seen: Version, holding: Holding) -> _Read:
        """The last read of the store when the store is still at version ``seen`` and ``holding`` the same,
        else a new one (its version as read, in the same read transaction as its games). :attr:`_reading`
        must be held."""
        if self._stored is not None and (self._stored.version, self._stored.holding) == (seen, holding):
            return self._stored
        read = self._read_store(holding)
        if read is None:  # no store (yet, or any more): no game, and none kept
            self.cache = PublishCache()
            read = _Read((0, 0.0), holding, [], {}, frozenset())
        self._stored = read
        return read

    def _read_store(self, holding: Holding) -> _Read | None:
        """The store's version and every stored game that ``holding`` does not hold back, oldest first, read
        through :attr:`cache` in one read transaction (they agree), with the ids held back; None without a
        database or its tables (one the arena has just created)."""
        db = self._connect()
        if db is None:
            return None
        try:
            db.execute("BEGIN")
            count, last = db.execute(_VERSION_SQL).fetchone()
            order = [r[0] for r in db.execute("SELECT game_id FROM games ORDER BY stored_at, game_id")]
            reader = GamesReader(db)
            self.cache.read(reader, order)
            held = holding.held(reader.lone_games()) if holding.on else frozenset()
            games = self.cache.hold(held)
            return _Read((int(count), float(last)), holding, games, forfeits_by_bot([g.row for g in games]), held)
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return None
            raise Busy.of("the results database", e) from None
        finally:
            db.close()

    # ------------------------------------------------------------------ tournament
    def holding(self) -> Holding:
        """What decides the games held back (:mod:`arena.report.held`: a blind tournament's), from :meth:`facts`."""
        return Holding.of(self._facts())

    def held(self, holding: Holding | None = None) -> frozenset[str]:
        """The ids of the stored games held back now (:mod:`arena.report.held`): the pages show them nowhere
        (as if not stored) until they are released; ``holding``: :meth:`holding`, when known. Those of the
        last read of the store (:meth:`_read`), read again only once a game was stored: not the lone games'
        query over every stored game for each request."""
        holding = self.holding() if holding is None else holding
        if not holding.on:
            return frozenset()
        with self._reading:
            return self._read(self.version(), holding).held

    def facts(self) -> TournamentFacts:
        """The public facts (name, players, bots {name: version}, rules, commitment, scheduled, played,
        ``ladder`` for a ladder (:data:`arena.tournament.runner.LADDER_KEY`), ``left_out``: the bots
        ``arena serve`` leaves out, each with its reason (:data:`arena.tournament.runner.LEFT_OUT_KEY`),
        ``waiting``: the remote bots whose games wait for their first worker (:meth:`waiting`), and
        ``master_seed`` — ``None`` until the arena has revealed it: ``finished_at`` is in the meta
        table, set by ``arena run`` when it publishes the seed, and by ``arena competition close``, which makes
        ``league_closed`` True; ``arena serve`` never reveals it, and its store's
        :data:`arena.tournament.runner.LEAGUE_KEY` makes ``league`` True while the seed is secret)."""
        facts = self._facts()
        facts["played"] = self.version()[0] - len(self.held(Holding.of(facts)))  # the games shown
        return facts

    def _facts(self) -> TournamentFacts:
        """:meth:`facts` but ``played``."""
        raw = self._meta(FACTS_KEY)
        facts: TournamentFacts = json.loads(raw) if raw else {}
        facts.setdefault("name", self.output.name)
        facts.setdefault("commitment", self._meta("commitment"))
        # revealed exactly when the arena revealed it: `arena run` sets finished_at when it publishes the
        # seed (every game played, or an SPRT decided); a league (`arena serve`) never does
        revealed = self._meta("finished_at") is not None
        facts["master_seed"] = self._meta("master_seed") if revealed else None
        if not revealed and self._meta(LEAGUE_KEY) is not None:
            facts["league"] = True
        if revealed and self._meta(CLOSED_KEY) is not None:  # `arena competition close` revealed it
            facts["league_closed"] = True
        board = self._meta(LADDER_KEY)
        if board:  # a ladder: standings, why the last pairs were chosen, why it stopped
            facts["ladder"] = json.loads(board)
        left_out = left_out_facts(self._meta(LEFT_OUT_KEY))  # arena serve: changes at a reload, without a game
        if left_out:
            facts["left_out"] = left_out
        waiting = self.waiting()  # a remote bot's first worker came: changes without a game
        if waiting:
            facts["waiting"] = waiting
        try:  # the host's disqualifications: at once, without a game
            barred = read_barred(self.output, BUSY_WAIT_S)
        except sqlite3.OperationalError as e:  # a page without them could rate the disqualified: none, a 503
            raise Busy.of("the competition's book", e) from None
        mark_barred(facts, barred, lambda board: self._refitted(board, barred, facts))
        return facts

    def _refitted(self, board: Mapping[str, Any], barred: Mapping[str, str], facts: TournamentFacts) -> dict[str, Any]:
        """A ladder ``board`` with the games of ``barred`` void, its standings and last pairs' figures fitted from the
        games shown (:func:`arena.formats.ladder_run.refitted_board`): again only once a game was stored, the board or
        ``barred`` changed, or a UTC day began (its ``games_today``)."""
        from arena.formats.ladder import DAY_S
        from arena.formats.ladder_run import refitted_board  # numpy and scipy: only for a ladder's board

        now, holding = time.time(), Holding.of(facts)
        key = (self.version(), holding, json.dumps(board, sort_keys=True), tuple(sorted(barred)), int(now // DAY_S))
        with self._lock:
            if self._refit is not None and self._refit[0] == key:
                return self._refit[1]
        with self._reading:
            shown = [g.result for g in self._read(key[0], holding).games]
        seed = bytes.fromhex(self._meta("master_seed") or "")
        refit = refitted_board(board, shown, seed, barred, now, blind=facts.get("blind_seats") is True)
        with self._lock:
            self._refit = (key, refit)
        return refit

    def blind(self) -> bool:
        """Whether the tournament's games are blind (``tournament.blind_seats``, in the facts the arena
        stored): its running games' pages then name no entrant (:func:`arena.report.live.shown_names`)."""
        return self.facts().get("blind_seats") is True

    def revealed(self) -> bool:
        """Whether the master seed (hence every deal seed) is public (see :meth:`facts`)."""
        return self.facts()["master_seed"] is not None

    def bootstrap_mark(self) -> int | None:
        """The games the newest background bootstrap covers (None: none yet, or no :attr:`publisher`):
        changes when a refresh finishes, so the live pages show its intervals."""
        done = self.publisher.refresher.latest() if self.publisher is not None else None
        return done.games if done is not None else None

    def ratings(self) -> RatingsPage:
        """The ratings.json shape for the games stored now: the published ratings.json itself when it is
        final and covers exactly these games (:meth:`published`: a finished ``arena run``, a league at
        rest: what its leaderboard.html and terminal showed), else computed (again only when a game was
        added or a background bootstrap finished) from :attr:`publisher` when set (live at once, marked
        ``"publication": "live"``; the bootstrap, ``"final"``, once the background refresh covers these
        games — as ``arena serve`` publishes), else the bootstrap now (``"final"``), with the facts and
        each bot's failures (``tournament.failures``)."""
        facts = self.facts()  # fresh each time: a ladder's board changes without a new game (it stopped)
        barred = {row["bot"]: row["why"] for row in facts.get("disqualified", [])}
        key: RatingsKey = (self.version(), self.bootstrap_mark(), Holding.of(facts), tuple(barred))
        published = self.published(facts.get("played", 0), facts)
        if published is not None:
            return published
        with self._lock:
            cached = self._ratings if self._ratings is not None and self._ratings[0] == key else None
        if cached is None:
            names = [n for n in facts.get("entrants") or list(facts.get("bots") or {}) if n not in barred]
            with self._reading:  # the cache's failures are those of its last read
                read = self._read(key[0], key[2])
                fails = {bot: f for bot, f in self.cache.failures(names).items() if bot not in barred}
            games = [g.game for g in rated(read.games, barred) if g.game is not None]
            publisher = self.publisher
            rating = final_ratings(games, names, bootstrap=self.bootstrap) if publisher is None else (
                publisher.ratings(games, names))
            cached = ((read.version, key[1], key[2], key[3]), rating, fails)
            with self._lock:
                self._ratings = cached
        return {**cached[1], "tournament": {**facts, "failures": cached[2]}}

    def published(self, played: int, facts: TournamentFacts) -> RatingsPage | None:
        """``ratings.json`` (:data:`RATINGS_FILE`) when it is a final publication of exactly the ``played``
        games stored now, of this store's commitment; None when missing, unreadable, live or of other
        games. What the store decides stays the store's (``facts``): whether the master seed is revealed
        (``master_seed``, ``league``: a file copied or restored beside another store reveals nothing) and a
        ladder's board (``ladder``: it changes when the ladder stops, without a game). A file published before a
        disqualification, or its undoing (``disqualified`` differs), rated other games: None."""
        page = self._ratings_file()
        told = page.get("tournament") if page is not None else None
        if (page is None or not isinstance(told, dict) or page.get("publication") != "final"
                or told.get("played") != played or told.get("commitment") != facts.get("commitment")
                or told.get("disqualified", []) != facts.get("disqualified", [])):  # rated with other games
            return None
        mine = {k: v for k, v in told.items() if k not in _STORE_FACTS}
        mine.update({k: facts[k] for k in _STORE_FACTS if k in facts})  # type: ignore[literal-required]
        return {**page, "tournament": mine}  # type: ignore[return-value]  # the arena wrote it (publish.py)

    def _ratings_file(self) -> dict[str, Any] | None:
        """:data:`RATINGS_FILE` parsed (read again only when its time or size changed); None if unreadable."""
        path = self.output / RATINGS_FILE
        try:
            st = path.stat()
            mark = (st.st_mtime_ns, st.st_size)
            with self._lock:
                if self._published is not None and self._published[0] == mark:
                    return self._published[1]
            # an older arena wrote Infinity and NaN (not JSON: the API's answers refuse them): null
            page = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda _: None)
        except (OSError, ValueError):
            return None
        if not isinstance(page, dict):
            return None
        with self._lock:
            self._published = (mark, page)
        return page

    # ------------------------------------------------------------------ games
    def _results(
        self, where: str, args: Sequence[SqlParam], tail: str = " ORDER BY stored_at, game_id"
    ) -> list[GameResult]:
        rows = self._query(f"SELECT {_COLUMNS} FROM games{where}{tail}", args)
        return [GameResult.from_stored((*r[:8], json.loads(r[8]), *r[9:13]), json.loads(r[13])) for r in rows]

    def _pair_done(self, pair_ids: list[str]) -> set[str]:
        if not pair_ids:
            return set()
        marks = ",".join("?" * len(pair_ids))
        rows = self._query(
            f"SELECT pair_id FROM games WHERE pair_id IN ({marks}) GROUP BY pair_id HAVING COUNT(*) >= ?",
            [*pair_ids, PAIR_SIZE],
        )
        return {r[0] for r in rows}

    def game_row(self, result: GameResult, pair_done: bool, revealed: bool) -> PublicGameRow:
        """The public row of one game (see the module docstring): no ``referee`` (the internal
        ``host:port`` of a referee, which takes the admin token: games.jsonl keeps it for the host), and
        reasons without a bot's last output (:func:`arena.tournament.result.public_reason`)."""
        row: PublicGameRow = {**result.rating_row(), "replay_open": pair_done or revealed}
        row.pop("referee", None)
        row["reasons"] = [public_reason(r) for r in row["reasons"]]
        if not revealed:
            del row["seed"]
        return row

    def games(self, q: GamesQuery) -> GamesPage:
        """A page of the games list, newest first: ``{"games": [row], "total", "page", "per_page", "pages"}``.

        :raises BadQuery: see :meth:`GamesQuery.check`.
        """
        q.check()
        where, args = q.where()
        held = sorted(self.held())
        if held:  # a blind tournament's games held back (arena.report.held): as if not stored
            where += f"{' AND' if where else ' WHERE'} game_id NOT IN ({','.join('?' * len(held))})"
            args += held
        counted = self._query(f"SELECT COUNT(*) FROM games{where}", args)
        total = int(counted[0][0]) if counted else 0
        tail = " ORDER BY stored_at DESC, game_id DESC LIMIT ? OFFSET ?"
        results = self._results(where, [*args, q.per_page, (q.page - 1) * q.per_page], tail)
        done = self._pair_done(sorted({r.pair_id for r in results}))
        revealed = self.revealed()
        return {
            "games": [self.game_row(r, r.pair_id in done, revealed) for r in results],
            "total": total,
            "page": q.page,
            "per_page": q.per_page,
            "pages": max(1, -(-total // q.per_page)),
        }

    def game(self, game_id: str) -> PublicGameRow:
        """One game's public row.

        :raises NotFound: for an unknown id.
        """
        results = self._results(" WHERE game_id = ?", [game_id])
        if not results or game_id in self.held():
            raise NotFound(f"no game {game_id!r}")
        r = results[0]
        return self.game_row(r, r.pair_id in self._pair_done([r.pair_id]), self.revealed())

    def record_path(self, game_id: str) -> Path:
        """The record file of a stored game whose replay is open, as the store names it (not resolved yet:
        :func:`record_file` resolves it, inside ``records/``).

        :raises NotFound: unknown game, or one without a record.
        :raises NotYet: its duplicate twin is not finished.
        """
        row = self.game(game_id)
        if not row["replay_open"]:
            raise NotYet(
                f"the replay of {game_id} opens when the other game of its pair {row['pair']} is finished (a "
                f"{PAIR_NOTE})"
            )
        rel = row.get("record")
        if not rel:
            raise NotFound(f"game {game_id!r} has no record")
        return self.output / str(rel)


def record_file(inside: Path, path: Path) -> Path:
    """``path`` resolved, which must be a file inside the folder ``inside``.

    :raises NotFound: outside that folder, or not a file.
    """
    real = path.resolve()
    if not real.is_relative_to(inside.resolve()) or not real.is_file():
        raise NotFound("no such record")
    return real


def read_record_file(inside: Path, path: Path) -> list[dict[str, Any]]:
    """Parse a record file that must resolve to a file inside the folder ``inside``.

    :raises NotFound: outside that folder, missing, or not JSON lines of objects.
    """
    return parse_record_text(record_file(inside, path).read_text(encoding="utf-8", errors="replace"))


def parse_record_text(text: str) -> list[dict[str, Any]]:
    """JSON lines of objects (blank lines skipped).

    :raises NotFound: on a line that is not a JSON object (says which).
    """
    out: list[dict[str, Any]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except json.JSONDecodeError as e:
            raise NotFound(f"line {n} of the record is not JSON: {e.msg}") from None
        if not isinstance(o, Mapping):
            raise NotFound(f"line {n} of the record is not a JSON object")
        out.append(dict(o))
    return out
