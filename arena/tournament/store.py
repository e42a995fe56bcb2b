"""Tournament results in SQLite: one row per game, written once; the basis of resume.

The database (``<output>/arena.sqlite``) runs in WAL mode with ``synchronous=FULL``, so a row whose
``INSERT`` committed survives a kill of the arena (or a power cut) at any later moment. Each game row
is keyed by the schedule's game id (primary key) and the referee's match id (unique). Writing a game
that is already stored is a no-op: :meth:`Store.record` returns False and nothing is counted twice.
A rerun asks :meth:`Store.pending` for the games of the schedule that have no row yet and plays only
those. A game that was being played when the arena died has no row; it is played again from its
scheduled seed (a new match id), which is the same deal.

Tournament meta (key/value): ``fingerprint`` (of the config, see
:meth:`arena.config.TournamentConfig.fingerprint`), ``commitment`` (SHA-256 of the master seed),
``entrants`` (every bot ever entered, see :meth:`Store.entrants`), ``master_seed`` (hex; kept here
so a rerun without a seed in the config resumes the same schedule; published only after the last
game), ``identity`` (JSON: the config fields the fingerprint covers, so a changed config can be told
which fields changed), ``created_at``, ``finished_at``, ``passed_checks`` (JSON: entrant label -> the
fingerprint of its passed check, :mod:`arena.play.fingerprint`; ``arena serve`` does not check such a bot again).

Remote bots' tokens (``bot_tokens``): only each token's SHA-256, the bot's name, when it was made and
when it was revoked (:meth:`Store.add_token`, :meth:`Store.revoke_tokens`, :meth:`Store.token_digests`; an undone
disqualification makes the ones it revoked valid again, :meth:`Store.revoke_digests`, :meth:`Store.restore_tokens`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from arena.tournament.result import GameResult, GameRow
from arena.tournament.schedule import ScheduledGame

#: The store's storage schema (its ``meta`` row ``schema``): raise it with any change an older arena would
#: misread; a store of another version is refused (:func:`check_schema`).
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS games (
    game_id      TEXT PRIMARY KEY,
    match_id     TEXT NOT NULL UNIQUE,
    pair_id      TEXT NOT NULL,
    side0        TEXT NOT NULL,
    side1        TEXT NOT NULL,
    score0       INTEGER NOT NULL,
    score1       INTEGER NOT NULL,
    winner       INTEGER,            -- 0, 1, or NULL for no winner (both sides forfeited: not rated)
    reasons      TEXT NOT NULL,      -- JSON list of termination reasons
    record_path  TEXT,
    seed         TEXT NOT NULL,      -- hex match seed
    first_dealer INTEGER NOT NULL,
    duration_s   REAL NOT NULL,
    extra        TEXT NOT NULL,      -- JSON object: the result's details (GameResult.details)
    stored_at    REAL NOT NULL
);
-- what a page or a publication looks up among a growing league's games, so none reads the whole table: the
-- newest games and the rate lately (stored_at), a pair's games (pair_id), a bot's games (side0, side1)
CREATE INDEX IF NOT EXISTS games_by_stored ON games (stored_at, game_id);
CREATE INDEX IF NOT EXISTS games_by_pair ON games (pair_id);
CREATE INDEX IF NOT EXISTS games_by_side0 ON games (side0, stored_at);
CREATE INDEX IF NOT EXISTS games_by_side1 ON games (side1, stored_at);
CREATE TABLE IF NOT EXISTS bot_tokens (
    digest       TEXT PRIMARY KEY,   -- SHA-256 hex of a remote bot's token (the token itself is never stored)
    bot          TEXT NOT NULL,
    created_at   REAL NOT NULL,
    revoked_at   REAL                -- NULL while valid
);
"""



def prepare_private_database(path: Path) -> None:
    """Make ``path``'s folder (0700) and the SQLite file itself (0600, empty) unless it is there, and
    set it 0600 if it is: SQLite gives the -wal and -shm files the database file's permissions.

    The file is created with ``os.open`` only when absent, never opened and closed when present:
    closing any descriptor of the file drops every POSIX lock this process holds on it, also those of
    an open connection here (``arena serve``'s, or the old store's while SIGHUP opens the new):
    another process's close then takes itself for the last one and deletes the WAL under that
    connection, which goes on alone on the deleted file (sqlite.org/howtocorrupt.html, 2.2).
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)


def recovery_advice(name: str) -> str:
    """What to do about the damaged or lost database file ``name`` of an output folder (a phrase)."""
    return f"restore {name} (with its -wal file) from a backup, or use a new output folder"


class StorageError(Exception):
    """A file of the output folder that cannot be read or written: ``str()`` is one line naming the file
    (or the folder) and what to do. The commands print it as it is (exit status 1)."""


class DatabaseUnreadable(StorageError, sqlite3.DatabaseError):
    """A database file that cannot be opened: damaged, not a database, unreadable."""


#: SQLite's names of the errors that mean a damaged file (a backup helps, waiting does not).
_DAMAGED = ("SQLITE_NOTADB", "SQLITE_CORRUPT")


class SchemaMismatch(StorageError):
    """A database written by an arena of another storage schema (its ``meta`` row ``schema``)."""


def check_schema(db: sqlite3.Connection, path: Path, version: str) -> None:
    """Refuse the database ``path`` (open as ``db``) unless it is new or of schema ``version``: a store
    of another schema would be misread (a column renamed or meaning something else), or written into
    in a form its own arena then misreads; there is no migration, so the arena that wrote it reads it.

    :raises SchemaMismatch: one line naming the file and both versions.
    """
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new database
        return
    if row is None or str(row[0]) == version:
        return
    stored = str(row[0])
    newer = stored.isdigit() and version.isdigit() and int(stored) > int(version)
    raise SchemaMismatch(
        f"{path}: written by {'a newer' if newer else 'another'} arena (storage schema {stored}; this arena "
        f"reads schema {version} only): run the arena version that wrote it; nothing was changed")


def check_store_file(path: Path, version: str = SCHEMA_VERSION) -> None:
    """For a reader that opens the store ``path`` read-only (``arena web``): refuse one of another schema
    (:func:`check_schema`) before reading it; a file that is missing or no database is left to the reader.

    :raises SchemaMismatch: one line naming the file and both versions.
    """
    if not path.is_file():
        return
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10.0)
    try:
        check_schema(db, path, version)
    except sqlite3.DatabaseError:
        return
    finally:
        db.close()


#: Seconds a statement waits for another process's lock on one of the arena's databases (sqlite's busy timeout)
#: unless its caller asks for less (``arena web``'s pages, ``arena run``'s look at the book).
LOCK_WAIT_S = 30.0


def open_private_database(
    path: Path, schema: str, check_same_thread: bool = True, schema_version: str | None = None,
    wait_s: float = LOCK_WAIT_S,
) -> sqlite3.Connection:
    """A connection to the private database ``path`` (:func:`prepare_private_database`; WAL,
    ``synchronous=FULL``, autocommit) with ``schema`` (SQL, ``CREATE … IF NOT EXISTS``) applied; with
    ``schema_version``, a database of another version is refused before anything is written
    (:func:`check_schema`) and a new one (or one from before versions were kept) is marked with it
    (``meta`` row ``schema``; the schema must make a ``meta (key, value)`` table). ``wait_s``: the seconds any
    statement waits for another process's lock (sqlite's busy timeout).

    :raises DatabaseUnreadable: naming the file (a damaged one: how to recover).
    :raises SchemaMismatch: a database of another ``schema_version``.
    """
    prepare_private_database(path)
    db = sqlite3.connect(str(path), isolation_level=None, timeout=wait_s, check_same_thread=check_same_thread)
    try:
        if schema_version is not None:
            check_schema(db, path, schema_version)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(schema)
        if schema_version is not None:
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (schema_version,))
    except SchemaMismatch:
        db.close()
        raise
    except sqlite3.DatabaseError as e:
        db.close()
        fix = f": {recovery_advice(path.name)}" if getattr(e, "sqlite_errorname", None) in _DAMAGED else ""
        raise DatabaseUnreadable(f"{path}: {e}{fix}") from e
    return db


class StoreMismatch(RuntimeError):
    """The output folder holds a different tournament (its config fingerprint differs).

    ``stored_identity`` is the identity the store was claimed with (see :meth:`Store.claim`), or None
    for a store written before identities were kept."""

    def __init__(self, message: str, stored_identity: dict[str, Any] | None = None):
        super().__init__(message)
        self.stored_identity = stored_identity


@dataclass(frozen=True, slots=True)
class Entrant:
    """A bot as the league knows it: ``number`` (stable, in order of arrival; ids and deals use it),
    ``label`` (its name in results and ratings: the bot's name, or ``name@version`` for a later version
    of a name already entered), and the config's ``name`` and ``version``."""

    number: int
    label: str
    name: str
    version: str


class Lone(NamedTuple):
    """A stored game whose duplicate pair has no other game stored (:meth:`GamesReader.lone_games`): its id,
    its pair's id and the entrants on its sides."""

    game_id: str
    pair_id: str
    sides: tuple[str, str]


class GamesReader:
    """The stored games of a connection to a results database, by stamp: the store's own (:class:`Store`) or a
    read-only one (the web's, :class:`arena.web.data.WebData`). What a reader that keeps stored games between
    reads (:class:`arena.report.cache.PublishCache`) asks of a store."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def stamps(self) -> dict[str, tuple[str, float]]:
        """Every stored game's id -> its match id and when it was stored, which tell one storing of a game
        from another (a game played again after its store was restored from a backup), without reading the games."""
        return {r[0]: (r[1], r[2]) for r in self._db.execute("SELECT game_id, match_id, stored_at FROM games")}

    def lone_games(self) -> list[Lone]:
        """The stored games whose pair has no other game stored (one query, by id)."""
        rows = self._db.execute("SELECT game_id, pair_id, side0, side1 FROM games WHERE pair_id IN"
                                " (SELECT pair_id FROM games GROUP BY pair_id HAVING COUNT(*) = 1) ORDER BY game_id")
        return [Lone(r[0], r[1], (r[2], r[3])) for r in rows]

    def results_of(self, game_ids: Iterable[str]) -> list[GameResult]:
        """The stored results of ``game_ids`` (those stored; in no particular order)."""
        ids, out = list(game_ids), []
        for k in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[k : k + _IDS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT {_RESULT_COLUMNS} FROM games WHERE game_id IN ({marks})", chunk)
            out += [_stored_result(r) for r in rows]
        return out


class Store(GamesReader):
    """An open results database. Not thread-safe: use it from one thread (the arena's main loop).

    The file is created with permissions 0600 (and an existing one is set to 0600): it holds the
    master seed.

    :raises DatabaseUnreadable: if the file cannot be opened or is not a database (naming it).
    :raises SchemaMismatch: a store of another storage schema (:data:`SCHEMA_VERSION`).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # the file holds the master seed (every deck derives from it): readable by its owner only
        super().__init__(open_private_database(self.path, _SCHEMA, schema_version=SCHEMA_VERSION))

    def close(self) -> None:
        """Close the connection (committed rows are already durable)."""
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- meta
    def get_meta(self, key: str) -> str | None:
        """The value stored for ``key``, or None."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set ``key`` to ``value`` (overwrites)."""
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def claim(
        self, fingerprint: str, master_seed_hex: str, commitment: str, identity: Mapping[str, object] | None = None
    ) -> str:
        """Bind this store to one tournament, or check that it already is; returns the master seed hex.

        On first use the fingerprint, master seed, commitment, ``identity`` (the JSON-ready fields the
        fingerprint is taken of, kept to name what changed in a later config) and ``created_at`` are
        written in one transaction. Later, the stored master seed wins (so a config without a seed resumes the same
        schedule) and ``master_seed_hex`` is ignored unless the config fixed it (then the fingerprints
        agree only if the seeds do).

        :raises StoreMismatch: if the store belongs to a tournament with another fingerprint.
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            existing = self.get_meta("fingerprint")
            if existing is None:
                for k, v in (
                    ("fingerprint", fingerprint),
                    ("master_seed", master_seed_hex),
                    ("commitment", commitment),
                    ("created_at", f"{time.time():.3f}"),
                    ("identity", json.dumps(identity, sort_keys=True)),
                ):
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, v))
            elif existing != fingerprint:
                stored = self.get_meta("identity")
                raise StoreMismatch(
                    f"{self.path} holds another tournament (config fingerprint {existing[:12]}…, this config "
                    f"{fingerprint[:12]}…); use another output folder or restore the original config",
                    json.loads(stored) if stored else None,
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        seed = self.get_meta("master_seed")
        assert seed is not None
        return seed

    # ---------------------------------------------------------------- entrants
    def entrants(self, bots: Sequence[tuple[str, str]] = ()) -> list[Entrant]:
        """Every entrant, in order of arrival, after entering the ``(name, version)`` pairs not seen yet.

        A new pair gets the next number and the label ``name`` (or ``name@version`` when an entrant of
        that name exists already: a new version is a new entrant; the old one keeps its results).
        Written in one transaction (meta ``entrants``: JSON ``[[label, name, version], ...]``).
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            rows = json.loads(self.get_meta("entrants") or "[]")
            known = {(r[1], r[2]) for r in rows}
            for name, version in bots:
                if (name, version) not in known:
                    taken = any(r[1] == name for r in rows)
                    rows.append([f"{name}@{version}" if taken else name, name, version])
                    known.add((name, version))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('entrants', ?)", (json.dumps(rows),))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return [Entrant(k, r[0], r[1], r[2]) for k, r in enumerate(rows)]

    # ---------------------------------------------------------------- remote bots' tokens
    def add_token(self, bot: str, digest: str) -> None:
        """Keep the SHA-256 hex ``digest`` of a new token of ``bot``."""
        self._db.execute("INSERT INTO bot_tokens VALUES (?, ?, ?, NULL)", (digest, bot, time.time()))

    def revoke_tokens(self, bot: str) -> int:
        """Revoke every valid token of ``bot``; returns how many."""
        cur = self._db.execute(
            "UPDATE bot_tokens SET revoked_at = ? WHERE bot = ? AND revoked_at IS NULL", (time.time(), bot)
        )
        return cur.rowcount

    def revoke_digests(self, digests: Sequence[str]) -> int:
        """Revoke the valid tokens of ``digests`` (SHA-256 hex; a disqualification's, which it holds to give back:
        :meth:`restore_tokens`); returns how many were valid and are revoked now."""
        now = time.time()
        return sum(self._db.execute("UPDATE bot_tokens SET revoked_at = ? WHERE digest = ? AND revoked_at IS NULL",
                                    (now, digest)).rowcount for digest in digests)

    def restore_tokens(self, digests: Sequence[str], since: float | None = None) -> int:
        """Make the revoked tokens of ``digests`` (SHA-256 hex) valid again (an undone disqualification's, which
        :meth:`revoke_digests` revoked), those revoked at or after ``since`` only when given; returns how many were
        revoked and are valid now."""
        return sum(self._db.execute("UPDATE bot_tokens SET revoked_at = NULL WHERE digest = ? AND revoked_at IS NOT "
                                    "NULL AND (? IS NULL OR revoked_at >= ?)", (digest, since, since)).rowcount
                   for digest in digests)

    def token_digests(self, bot: str | None = None) -> dict[str, list[str]]:
        """The valid token digests, per bot (of one ``bot`` when given)."""
        rows = self._db.execute(
            "SELECT bot, digest FROM bot_tokens WHERE revoked_at IS NULL AND (? IS NULL OR bot = ?)"
            " ORDER BY created_at",
            (bot, bot),
        ).fetchall()
        out: dict[str, list[str]] = {}
        for b, d in rows:
            out.setdefault(b, []).append(d)
        return out

    # ---------------------------------------------------------------- games
    def record(self, result: GameResult, at: float | None = None) -> bool:
        """Store ``result`` once, its ``stored_at`` ``at`` (Unix seconds; now if None). Returns True if
        written, False if that game (or match) was stored already.

        The write is one autocommitted ``INSERT OR IGNORE``: durable when this returns.
        """
        cur = self._db.execute(
            "INSERT OR IGNORE INTO games VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                result.game_id,
                result.match_id,
                result.pair_id,
                result.sides[0],
                result.sides[1],
                result.scores[0],
                result.scores[1],
                result.winner,
                json.dumps(list(result.reasons)),
                result.record_path,
                result.seed_hex,
                result.first_dealer,
                result.duration_s,
                json.dumps(result.details(), sort_keys=True),
                time.time() if at is None else at,
            ),
        )
        return cur.rowcount == 1

    def beyond_newest(self, keep: int, limit: int = -1) -> list[str]:
        """Ids of the stored games after the newest ``keep`` (by ``stored_at``, then id), newest first; at
        most ``limit`` of them (-1: all). Read by the ``stored_at`` index."""
        rows = self._db.execute("SELECT game_id FROM games ORDER BY stored_at DESC, game_id DESC LIMIT ? OFFSET ?",
                                (limit, keep))
        return [r[0] for r in rows]

    def stored_ids(self) -> set[str]:
        """The game ids already stored."""
        return {r[0] for r in self._db.execute("SELECT game_id FROM games")}

    def pending(self, schedule: Sequence[ScheduledGame]) -> list[ScheduledGame]:
        """The scheduled games with no stored result, in schedule order."""
        done = self.stored_ids()
        return [g for g in schedule if g.game_id not in done]

    def results(self, order: Iterable[str] | None = None) -> list[GameResult]:
        """All stored results; in the order of the game ids ``order`` when given (others last), else by id."""
        out = [_stored_result(r) for r in self._db.execute(f"SELECT {_RESULT_COLUMNS} FROM games ORDER BY game_id")]
        if order is not None:
            rank = {gid: k for k, gid in enumerate(order)}
            out.sort(key=lambda g: rank.get(g.game_id, len(rank)))
        return out

    def count(self) -> int:
        """Number of stored games."""
        return int(self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0])


#: The columns of a stored result (:func:`_stored_result`), as a SELECT lists them.
_RESULT_COLUMNS = ("game_id, match_id, pair_id, side0, side1, score0, score1, winner, reasons, record_path, seed,"
                   " first_dealer, duration_s, extra, stored_at")
#: Game ids one query of :meth:`Store.results_of` looks up (SQLite allows 32,766 parameters since 3.32).
_IDS_PER_QUERY = 500


def _stored_result(row: Sequence[Any]) -> GameResult:
    """The :class:`GameResult` of a row of :data:`_RESULT_COLUMNS`."""
    return GameResult.from_stored((*row[:8], json.loads(row[8]), *row[9:13]), json.loads(row[13]), row[14])


def games_rows(results: Sequence[GameResult]) -> list[GameRow]:
    """The games.jsonl rows of ``results`` (see :meth:`GameResult.rating_row`)."""
    return [r.rating_row() for r in results]
