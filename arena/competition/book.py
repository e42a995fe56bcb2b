"""The competition's book: competitors (token digests only), their submissions and their web sessions
(session id digests only), in SQLite.

One file, ``OUTPUT/competition.sqlite`` (0600, WAL, ``synchronous=FULL``), beside the league's store.
Thread-safe: the Submission service (the lobby's event loop), the build queue (its own thread) and the
CLI use it; one lock guards the connection.

A submission's status moves ``received → building → validating → accepted → playing → rated``, or
ends ``rejected`` (with the failing step and a reason) or ``failed`` (the arena's own fault, with a
reason). :meth:`CompetitionBook.resume` puts a submission that was building or validating when the
arena stopped back to ``received``: the queue builds it again from its kept folder.

A web session (:class:`WebSession`, arena/web/competitor.py decides when one ends) is kept as the
SHA-256 of its id, so a copy of the file signs nobody in; revoking a competitor deletes theirs. A book
made before sessions were kept here gets their table when it is opened (``CREATE TABLE IF NOT EXISTS``),
as does one made before refused uploads were counted (``refusals``: a competitor's uploads refused after
they were unpacked, :meth:`CompetitionBook.add_refusal`), and one made before a host could disqualify
(``disqualifications``: :meth:`CompetitionBook.disqualify`, who, when, why and by whom; an undone one keeps
its row with ``undone_at``), and one made before an undone disqualification gave back the remote bots' tokens it
revoked (``held_tokens``: :meth:`CompetitionBook.disqualify`, :meth:`CompetitionBook.undo_disqualification`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from arena.lobby.tokens import MAX_FIELD, new_token, token_digest
from arena.tournament.store import LOCK_WAIT_S, Store, open_private_database

#: Characters of a rejection's ``log_tail`` kept (its end, if longer).
LOG_TAIL_CHARS = 4096

#: The book's file name in the output folder.
BOOK_NAME = "competition.sqlite"
#: The final's folder in the output folder (arena/competition/final.py writes it; :class:`LeagueTokens` changes
#: its store's copies of the remote finalists' tokens).
FINAL_DIR = "final"
#: The final's config file in its folder (``<output>/final/final.toml``).
FINAL_CONFIG = "final.toml"
#: The book's storage schema (its ``meta`` row ``schema``), as the store's (``arena.tournament.store.check_schema``).
BOOK_SCHEMA_VERSION = "1"
#: Every status, in the order a good submission passes them (docs/competition.md).
STATUSES = ("received", "building", "validating", "accepted", "playing", "rated", "rejected", "failed")
#: Statuses of a submission still on its way (the build queue's work).
IN_QUEUE = ("received", "building", "validating")
#: Statuses of an entrant that is (or will be) scheduled.
IN_PLAY = ("accepted", "playing", "rated")
#: ``retired``'s value once a retired version's image is removed too (past ``[competition] versions_kept``).
IMAGE_REMOVED = 2
#: The reason a version whose image was removed shows its owner (``arena submissions``, ``/me``).
REMOVED_REASON = ("retired, its image removed (past [competition] versions_kept): its games stay; it can no "
                  "longer be chosen for the final")
#: The longest reason a disqualification may give (characters): it is shown on the public board.
REASON_CHARS = 200
#: Seconds in a (UTC) day: the per-day submission limit counts submissions since the day began.
DAY_S = 86_400

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS competitors (
    name TEXT PRIMARY KEY, digest TEXT, created_at REAL NOT NULL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    competitor TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL,
    kind TEXT NOT NULL, entry TEXT NOT NULL, status TEXT NOT NULL,
    step TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', log_tail TEXT NOT NULL DEFAULT '',
    image TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL,
    retired INTEGER NOT NULL DEFAULT 0,
    UNIQUE (name, version));
CREATE TABLE IF NOT EXISTS sessions (
    digest TEXT PRIMARY KEY, competitor TEXT NOT NULL, created_at REAL NOT NULL, used_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_by_competitor ON sessions (competitor, created_at);
CREATE TABLE IF NOT EXISTS refusals (competitor TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS refusals_by_competitor ON refusals (competitor, at);
CREATE TABLE IF NOT EXISTS disqualifications (
    competitor TEXT PRIMARY KEY, at REAL NOT NULL, reason TEXT NOT NULL, by TEXT NOT NULL DEFAULT '',
    digest TEXT, undone_at REAL);
CREATE INDEX IF NOT EXISTS disqualifications_by_digest ON disqualifications (digest);
CREATE TABLE IF NOT EXISTS held_tokens (digest TEXT PRIMARY KEY, competitor TEXT NOT NULL, bot TEXT NOT NULL);
"""


def name_key(name: str) -> str:
    """What two bot names must differ in: ``name`` case-folded, keeping only its letters and digits
    (``house2.``, ``House-2`` and ``house_2`` are all ``house2``). Names with the same key are one name
    as far as taking it goes: on a leaderboard one passes for the other."""
    return "".join(c for c in name.casefold() if c.isalnum())


class LeagueTokens:
    """The remote bots' lobby tokens of the competition in the output folder ``output``: the league's store
    (``arena.sqlite``; none without one) and the final's (``final/arena.sqlite``, once a final with a remote finalist
    was written: :func:`arena.competition.final.write_final_config` copies their digests there, for the final's own
    lobby). What a disqualification revokes and holds, and its undo gives back, and what ``arena competitor add
    --revoke`` revokes: in both stores, so a disqualification or a revoke made after the final was written (or while
    it is played) holds in the final too (``arena token`` of the final's config changes the final's alone). The
    stores are other databases than the book, so no transaction spans them: the book's record is committed first
    and the stores changed after it, the league's then the final's, so a process killed between leaves what the
    command run again finishes (the tokens held and still valid: the league bars the entries meanwhile; or undone,
    held and still revoked)."""

    def __init__(self, output: Path):
        self.output = output

    def _each(self, change: Callable[[Store, bool], T], none: T) -> T:
        """``change(store, league)`` made in the league's store (``league`` True), then in the final's (each that
        exists); returns what it returned in the league's (``none`` without one: the final's are copies of its
        tokens)."""
        from arena.tournament.runner import DB_NAME

        league = self.output / DB_NAME
        said = none
        for path in (league, self.output / FINAL_DIR / DB_NAME):
            if path.is_file():
                with Store(path) as s:
                    done = change(s, path == league)
                said = done if path == league else said
        return said

    def valid(self, entrants: Sequence[str]) -> dict[str, list[str]]:
        """The valid token digests (SHA-256 hex) of ``entrants`` (``name@version``) in the league's store, per
        entrant (the final's are copies of those)."""
        from arena.tournament.runner import DB_NAME

        if not (self.output / DB_NAME).is_file():
            return {}
        with Store(self.output / DB_NAME) as s:
            return {e: d for e in entrants if (d := s.token_digests(e).get(e, []))}

    def revoke(self, digests: Sequence[str]) -> int:
        """Revoke the valid ones of ``digests`` in the league's store and the final's; returns how many were valid
        in the league's."""
        return self._each(lambda s, _: s.revoke_digests(digests), 0) if digests else 0

    def restore(self, held: Mapping[str, Sequence[str]], since: float | None = None) -> dict[str, int]:
        """Make the revoked ones of ``held`` (digests per entrant) valid again in the league's store and the final's
        (there, only the copies it holds: an entrant left out of the final has none, and only those revoked at or
        after ``since``, the disqualification's time: a copy the host revoked in the final before, with ``arena
        token`` of the final's config, stays revoked); returns how many in the league's, per entrant."""
        return self._each(lambda s, league: {e: s.restore_tokens(d, None if league else since)
                                             for e, d in held.items()}, {})


class BookError(ValueError):
    """A request the book refuses; ``str(e)`` is one line."""


class Revoked(BookError):
    """A request of a competitor whose token was revoked since it was checked (:meth:`CompetitionBook.add_remote`);
    ``str(e)`` is one line."""


class Disqualified(BookError):
    """A request of a disqualified competitor (:meth:`CompetitionBook.add_remote`); ``str(e)`` is the
    disqualification's line (:meth:`Disqualification.line`)."""


@dataclass(frozen=True, slots=True)
class Undone:
    """An undone disqualification (:meth:`CompetitionBook.undo_disqualification`): ``restored``, the remote bots'
    tokens it gave back, how many per entrant (``name@version``)."""

    restored: dict[str, int]
    #: Not disqualified: an undo killed before it gave the tokens back was finished.
    again: bool = False


@dataclass(frozen=True, slots=True)
class Submission:
    """One submission: ``id``; its ``competitor``; the bot's ``name`` and ``version`` (enrolled as
    ``name@version``); ``kind`` (``python``, ``node``); ``entry`` (``module:Class`` or a file);
    ``status`` (one of :data:`STATUSES`); ``step`` and ``reason`` of a rejection; ``log_tail`` (the
    failing step's output, at most a few KiB); ``image`` (the built tag); times in UNIX seconds;
    ``retired`` (no longer scheduled: a newer version took its place); ``removed`` (retired, and its image
    removed: past ``versions_kept``; no longer selectable, its ``reason`` :data:`REMOVED_REASON`)."""

    id: int
    competitor: str
    name: str
    version: str
    kind: str
    entry: str
    status: str
    step: str
    reason: str
    log_tail: str
    image: str
    created_at: float
    updated_at: float
    retired: bool
    removed: bool = False

    @property
    def entrant(self) -> str:
        """The entrant's name in the league: ``name@version``."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True, slots=True)
class Disqualification:
    """A competitor the host disqualified (``arena competitor disqualify``): ``competitor``, when (``at``, UNIX
    seconds), the host's ``reason`` (one line, at most :data:`REASON_CHARS`) and ``by`` (the host's user name)."""

    competitor: str
    at: float
    reason: str
    by: str

    def line(self) -> str:
        """What the competitor is told when they present their token (one line)."""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.at))
        return (f"competitor {self.competitor} was disqualified by the host at {when}: {self.reason} (no submission "
                "is taken; their entries are out of the league, its ratings and the final)")


def plain_reason(text: str) -> str:
    """``text`` as a disqualification's reason: its whitespace runs (newlines, tabs) one space, no other control
    character, stripped. :raises BookError: empty, or longer than :data:`REASON_CHARS`."""
    reason = " ".join("".join(c for c in text if c.isprintable() or c.isspace()).split())
    if not reason:
        raise BookError("--reason: give the reason (one line, shown on the board beside the competitor's entries)")
    if len(reason) > REASON_CHARS:
        raise BookError(f"--reason: {len(reason)} characters, at most {REASON_CHARS} (it is shown on the board)")
    return reason


@dataclass(frozen=True, slots=True)
class WebSession:
    """A competitor's web session: the SHA-256 (hex) of its id (``digest``), its ``competitor``, its
    sign-in (``created_at``) and its last use as last written (``used_at``), in UNIX seconds."""

    digest: str
    competitor: str
    created_at: float
    used_at: float


_COLUMNS = ("id, competitor, name, version, kind, entry, status, step, reason, log_tail, image, created_at, "
            "updated_at, retired")

#: Every entrant of a disqualified competitor and the reason (:meth:`CompetitionBook.disqualified_entrants`).
_DISQUALIFIED_ENTRANTS = ("SELECT s.name || '@' || s.version, d.reason FROM submissions s JOIN disqualifications d "
                          "ON s.competitor = d.competitor WHERE d.undone_at IS NULL ORDER BY s.id")


#: A :class:`Disqualification`'s columns (:func:`_disqualification`), to which a ``WHERE`` is added.
_DISQUALIFICATION = "SELECT competitor, at, reason, by FROM disqualifications"


def _disqualification(r: tuple[str, float, str, str]) -> Disqualification:
    """A row of :data:`_DISQUALIFICATION` as a :class:`Disqualification`."""
    return Disqualification(str(r[0]), float(r[1]), str(r[2]), str(r[3]))


def _revoke(db: sqlite3.Connection, name: str) -> bool:
    """Revoke competitor ``name``'s token (only its revocation time is kept) and delete their web sessions, on
    ``db`` (the caller holds the book's lock); False if the token was revoked already."""
    cur = db.execute("UPDATE competitors SET revoked_at = ?, digest = NULL WHERE name = ? AND revoked_at IS NULL",
                     (time.time(), name))
    db.execute("DELETE FROM sessions WHERE competitor = ?", (name,))
    return cur.rowcount > 0


def _hold(db: sqlite3.Connection, name: str, tokens: LeagueTokens | None) -> dict[str, list[str]]:
    """Note the valid tokens of competitor ``name``'s remote entries in ``held_tokens`` (what an undo gives back),
    on ``db`` within the caller's transaction; returns them per entrant. The caller revokes them once it has
    committed (:func:`_revoke_held`). Tokens already revoked (by the host by hand, or a disqualification before)
    are not the disqualification's to hold."""
    if tokens is None:
        return {}
    remote = [str(e) for (e,) in db.execute("SELECT name || '@' || version FROM submissions WHERE competitor = ? "
                                            "AND kind = 'remote' ORDER BY id", (name,))]
    taken = tokens.valid(remote) if remote else {}
    db.executemany("INSERT OR REPLACE INTO held_tokens VALUES (?, ?, ?)",
                   [(d, name, bot) for bot, digests in taken.items() for d in digests])
    return taken


def _submission(r: tuple[object, ...]) -> Submission:
    """A row of :data:`_COLUMNS` as a :class:`Submission`."""
    t = [str(x) for x in r]
    removed = r[13] == IMAGE_REMOVED
    return Submission(int(t[0]), t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8] or (REMOVED_REASON if removed else ""),
                      t[9], t[10], float(t[11]), float(t[12]), bool(r[13]), removed)


class CompetitionBook:
    """The open book of one output folder (see the module docstring).

    :raises arena.tournament.store.DatabaseUnreadable: if the file cannot be opened (naming it).
    :raises arena.tournament.store.SchemaMismatch: a book of another storage schema (:data:`BOOK_SCHEMA_VERSION`).
    ``wait_s``: the seconds each statement waits for another process's lock on the book (``arena web``: a short
    wait, then a 503).
    """

    def __init__(self, output: str | Path, wait_s: float = LOCK_WAIT_S):
        self.path = Path(output) / BOOK_NAME
        self._lock = threading.Lock()
        self._db = open_private_database(self.path, _SCHEMA, check_same_thread=False,
                                         schema_version=BOOK_SCHEMA_VERSION, wait_s=wait_s)
        self._db.create_function("name_key", 1, name_key, deterministic=True)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: another process's waits), under :attr:`_lock`: committed
        at the end, rolled back on any error (which is raised)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __enter__(self) -> CompetitionBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- meta
    def get_meta(self, key: str) -> str | None:
        """The value stored for ``key``, or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set ``key`` to ``value``."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # ---------------------------------------------------------------- competitors
    def add_competitor(self, name: str) -> str:
        """Register ``name`` and return its new token (kept only as its SHA-256: print it once).

        :raises BookError: a name already registered and not revoked.
        """
        token = new_token()
        with self._lock:
            row = self._db.execute("SELECT revoked_at FROM competitors WHERE name = ?", (name,)).fetchone()
            if row is not None and row[0] is None:
                raise BookError(f"competitor {name!r} already has a token; only its SHA-256 is kept, so it cannot "
                                "be shown again: revoke it with --revoke, then add the competitor again")
            self._db.execute("INSERT OR REPLACE INTO competitors VALUES (?, ?, ?, NULL)",
                             (name, token_digest(token), time.time()))
        return token

    def revoke_competitor(self, name: str) -> bool:
        """Revoke ``name``'s token and end their web sessions (their submissions and entrants stay);
        False if the token was revoked already (the sessions end all the same). The remote bots' tokens a
        disqualification of theirs holds are the host's to keep revoked from then on: an undo gives none back."""
        with self._transaction() as db:
            db.execute("DELETE FROM held_tokens WHERE competitor = ?", (name,))
            return _revoke(db, name)

    def disqualify(self, name: str, reason: str, by: str, tokens: LeagueTokens | None = None) -> dict[str, list[str]]:
        """Disqualify ``name`` (a registered competitor) for ``reason`` (:func:`plain_reason`), noted as done by
        ``by``: their token revoked and web sessions ended as :meth:`revoke_competitor` does, in one transaction,
        keeping the token's digest in the record (a request with it is told why, :meth:`disqualified_for`).
        In the same transaction their remote entries' valid lobby tokens (``tokens``) are noted as held (an undo
        gives back those, and only those): one step against :meth:`add_remote`, so a remote entry registered
        meanwhile is either refused or held here; they are revoked in the league's store once it committed (run
        again, it revokes any a kill left valid). Returns those tokens' digests per entrant.
        Disqualifying again replaces the reason and time. Their entrants are left out of the league from then on
        (:meth:`disqualified_entrants`). :raises BookError: no such competitor, or a bad reason."""
        def digest(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT digest FROM competitors WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise BookError(f"no competitor {name!r}")
            old = db.execute("SELECT digest FROM disqualifications WHERE competitor = ?", (name,)).fetchone()
            return row[0] if row[0] is not None else (old[0] if old else None)

        return self._record(Disqualification(name, time.time(), plain_reason(reason), by), digest, tokens)

    def _record(self, gone: Disqualification, digest: Callable[[sqlite3.Connection], str | None],
                tokens: LeagueTokens | None) -> dict[str, list[str]]:
        """Record ``gone`` (:meth:`disqualify`, :meth:`keep_disqualification`) in one transaction, keeping the token
        digest ``digest(db)`` gives (read in it), with their competitor token revoked and web sessions ended
        (:func:`_revoke`) and their remote entries' valid tokens held (:func:`_hold`); once it committed, those
        revoked in the league's store (:meth:`_revoke_held`). Returns the held tokens' digests per entrant.
        Raises what ``digest`` raises (nothing written)."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO disqualifications VALUES (?, ?, ?, ?, ?, NULL)",
                       (gone.competitor, gone.at, gone.reason, gone.by, digest(db)))
            _revoke(db, gone.competitor)
            taken = _hold(db, gone.competitor, tokens)
        self._revoke_held(gone.competitor, tokens)
        return taken

    def _revoke_held(self, name: str, tokens: LeagueTokens | None) -> None:
        """Revoke in the league's store the tokens held for ``name`` (every one: a disqualify killed before this
        step, run again, revokes those it held then), after the book's transaction committed."""
        if tokens is None:
            return
        with self._lock:
            held = [str(d) for (d,) in self._db.execute("SELECT digest FROM held_tokens WHERE competitor = ?", (name,))]
        tokens.revoke(held)

    def keep_disqualification(self, gone: Disqualification, tokens: LeagueTokens | None = None) -> None:
        """Record ``gone`` as it was (``arena restore`` carrying it into a book older than it): the competitor's
        token revoked and sessions ended, and their remote entries' tokens revoked and held (``revoke``), as
        :meth:`disqualify` does, whether or not this book knows them yet."""
        def digest(db: sqlite3.Connection) -> str | None:
            row = db.execute("SELECT digest FROM competitors WHERE name = ?", (gone.competitor,)).fetchone()
            return None if row is None else row[0]

        self._record(gone, digest, tokens)

    def undo_disqualification(self, name: str, tokens: LeagueTokens | None = None) -> Undone | None:
        """Take ``name``'s disqualification back (its row stays, with ``undone_at``, for the record): their
        entrants are scheduled and rated again; the remote bots' tokens the disqualification revoked and holds
        (:meth:`disqualify`; none the host revoked by hand, before or since, :meth:`revoke_competitor`) are made
        valid again (``tokens``; without it they stay revoked and held) once the undo committed, and only then
        dropped from the held ones (run again, an undo killed between gives them back: ``Undone.again``); their
        competitor token stays revoked (``arena competitor add`` makes a new one). None if they were not
        disqualified and hold no tokens."""
        with self._transaction() as db:
            at = db.execute("SELECT at FROM disqualifications WHERE competitor = ?", (name,)).fetchone()
            cur = db.execute("UPDATE disqualifications SET undone_at = ?, digest = NULL WHERE competitor = ? "
                             "AND undone_at IS NULL", (time.time(), name))
            held: dict[str, list[str]] = {}
            for digest, bot in db.execute("SELECT digest, bot FROM held_tokens WHERE competitor = ? ORDER BY rowid",
                                          (name,)).fetchall():
                held.setdefault(str(bot), []).append(str(digest))
        if cur.rowcount == 0 and not held:
            return None
        # committed first: killed here, the tokens stay revoked and held, and --undo run again gives them back
        restored = tokens.restore(held, None if at is None else float(at[0])) if tokens is not None and held else {}
        with self._transaction() as db:  # dropped once given back, unless disqualified again meanwhile
            db.executemany("DELETE FROM held_tokens WHERE digest = ? AND competitor NOT IN (SELECT competitor FROM "
                           "disqualifications WHERE undone_at IS NULL)", [(d,) for ds in held.values() for d in ds])
        return Undone(restored, again=cur.rowcount == 0)

    def disqualified(self) -> dict[str, Disqualification]:
        """Every competitor disqualified now (not undone), by name."""
        with self._lock:
            rows = self._db.execute(f"{_DISQUALIFICATION} WHERE undone_at IS NULL ORDER BY competitor").fetchall()
        return {str(r[0]): _disqualification(r) for r in rows}

    def standing(self, token: str) -> tuple[str | None, Disqualification | None]:
        """Who presents ``token`` and whether they are disqualified, for an authenticated request (a Submission
        call, /me's sign-in): ``(competitor, None)`` for a live token; ``(competitor or None, disqualification)``
        when they are disqualified (a revoked token is found by the digest the record keeps; a live one, given
        after ``arena competitor add`` again, by their name); ``(None, None)`` for an unknown or revoked one.
        Each look is one indexed query: only the caller's row of each table is read."""
        who = self.competitor_for(token)
        if who is None:
            return None, self.disqualified_for(token)
        with self._lock:
            row = self._db.execute(f"{_DISQUALIFICATION} WHERE competitor = ? AND undone_at IS NULL",
                                   (who,)).fetchone()
        return who, None if row is None else _disqualification(row)

    def disqualified_for(self, token: str) -> Disqualification | None:
        """The disqualification of the competitor whose (revoked) token ``token`` was, or None."""
        if not token or len(token) > MAX_FIELD:
            return None
        with self._lock:
            row = self._db.execute(f"{_DISQUALIFICATION} WHERE digest = ? AND undone_at IS NULL",
                                   (token_digest(token),)).fetchone()
        return None if row is None else _disqualification(row)

    def disqualified_entrants(self) -> dict[str, str]:
        """Every entrant (``name@version``, any status) of a disqualified competitor -> the reason."""
        with self._lock:
            rows = self._db.execute(_DISQUALIFIED_ENTRANTS).fetchall()
        return {str(e): str(r) for e, r in rows}

    def competitors(self) -> list[tuple[str, bool]]:
        """Every competitor's name and whether its token is live, by name."""
        with self._lock:
            rows = self._db.execute("SELECT name, revoked_at IS NULL FROM competitors ORDER BY name").fetchall()
        return [(str(n), bool(live)) for n, live in rows]

    def competitor_for(self, token: str) -> str | None:
        """The competitor a presented token belongs to, or None (unknown, revoked, or too long)."""
        if not token or len(token) > MAX_FIELD:
            return None
        with self._lock:
            row = self._db.execute("SELECT name FROM competitors WHERE digest = ? AND revoked_at IS NULL",
                                   (token_digest(token),)).fetchone()
        return None if row is None else str(row[0])

    # ---------------------------------------------------------------- web sessions
    def add_session(self, digest: str, competitor: str, now: float, keep: int) -> None:
        """Keep a new session of ``competitor`` (``digest``: the SHA-256 of its id), signed in and last
        used at ``now`` (UNIX seconds), and end their oldest ones beyond the newest ``keep``, in one
        transaction (two sign-ins at once leave at most ``keep``)."""
        with self._transaction() as db:
            db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?)", (digest, competitor, now, now))
            db.execute("DELETE FROM sessions WHERE competitor = ? AND digest NOT IN (SELECT digest FROM "
                       "sessions WHERE competitor = ? ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                       (competitor, competitor, keep))

    def session(self, digest: str) -> WebSession | None:
        """The session whose id has SHA-256 ``digest``, or None (never made, or ended)."""
        with self._lock:
            row = self._db.execute("SELECT digest, competitor, created_at, used_at FROM sessions WHERE digest = ?",
                                   (digest,)).fetchone()
        return None if row is None else WebSession(str(row[0]), str(row[1]), float(row[2]), float(row[3]))

    def touch_session(self, digest: str, now: float) -> None:
        """Write ``now`` (UNIX seconds) as the last use of session ``digest``."""
        with self._lock:
            self._db.execute("UPDATE sessions SET used_at = ? WHERE digest = ?", (now, digest))

    def end_session(self, digest: str) -> None:
        """Delete session ``digest`` (nothing if there is none)."""
        with self._lock:
            self._db.execute("DELETE FROM sessions WHERE digest = ?", (digest,))

    def end_sessions_before(self, used_before: float, created_before: float) -> int:
        """Delete every session last used at or before ``used_before``, or signed in at or before
        ``created_before`` (UNIX seconds); returns how many."""
        with self._lock:
            cur = self._db.execute("DELETE FROM sessions WHERE used_at <= ? OR created_at <= ?",
                                   (used_before, created_before))
        return cur.rowcount

    # ---------------------------------------------------------------- submissions
    def add_submission(self, competitor: str, name: str, version: str, kind: str, entry: str,
                       at: float | None = None) -> Submission:
        """A new ``received`` submission, made at ``at`` (UNIX seconds, now by default: an upload's is when it
        began, the day it is charged to, :meth:`arena.competition.desk.Desk.receive`). :raises BookError:
        ``name@version`` was submitted before, or ``name`` (or a name too like it: :func:`name_key`) belongs to
        another competitor."""
        now = time.time()
        made = now if at is None else at
        with self._lock:
            self._check_name_free(competitor, name)
            try:
                cur = self._db.execute(
                    "INSERT INTO submissions (competitor, name, version, kind, entry, status, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, 'received', ?, ?)", (competitor, name, version, kind, entry, made, now))
            except sqlite3.IntegrityError:
                raise BookError(f"{name}@{version} was submitted before: give a new --version") from None
        return self._one(int(cur.lastrowid or 0))

    def add_remote(self, competitor: str, name: str, version: str, keep: Callable[[str], None],
                   at: float | None = None) -> Submission:
        """A new remote entry ``name@version`` of ``competitor``, ``accepted`` at once, and ``keep(entrant)`` (its
        lobby token stored in the league's store), in one transaction with the check that ``competitor`` is not
        disqualified: one step against :meth:`disqualify`'s (which revokes their remote entries' tokens in its
        own), so an entry registered as they are disqualified is refused, or is there for the disqualification
        to revoke its token; likewise against :meth:`revoke_competitor` (``add --revoke`` then revokes the tokens
        of the entries it finds). :raises Disqualified: they are (its line). :raises Revoked: their token is
        revoked. :raises BookError: as :meth:`add_submission`. Raises what ``keep`` raises (nothing kept)."""
        now = time.time() if at is None else at
        with self._transaction() as db:
            row = db.execute(f"{_DISQUALIFICATION} WHERE competitor = ? AND undone_at IS NULL",
                             (competitor,)).fetchone()
            if row is not None:
                raise Disqualified(_disqualification(row).line())
            live = db.execute("SELECT revoked_at FROM competitors WHERE name = ?", (competitor,)).fetchone()
            if live is not None and live[0] is not None:  # revoked since their token was checked: `add --revoke`
                raise Revoked(f"competitor {competitor}'s token was revoked: no remote entry is registered")
            self._check_name_free(competitor, name)
            try:
                cur = db.execute(
                    "INSERT INTO submissions (competitor, name, version, kind, entry, status, created_at, updated_at)"
                    " VALUES (?, ?, ?, 'remote', '', 'accepted', ?, ?)", (competitor, name, version, now, now))
            except sqlite3.IntegrityError:
                raise BookError(f"{name}@{version} was submitted before: give a new --version") from None
            keep(f"{name}@{version}")
            return _submission(db.execute(f"SELECT {_COLUMNS} FROM submissions WHERE id = ?",
                                          (cur.lastrowid,)).fetchone())

    def check_name_free(self, competitor: str, name: str) -> None:
        """:raises BookError: as :meth:`add_submission` would for ``name`` (see :meth:`_check_name_free`)."""
        with self._lock:
            self._check_name_free(competitor, name)

    def _check_name_free(self, competitor: str, name: str) -> None:
        """:raises BookError: ``name`` belongs to another competitor, or, new, it is too like (the same
        :func:`name_key` as) another competitor's name. A competitor's own names stay theirs. Call with
        the lock held."""
        owner = self._db.execute("SELECT competitor FROM submissions WHERE name = ? LIMIT 1", (name,)).fetchone()
        if owner is not None:
            if owner[0] != competitor:
                raise BookError(f"the bot name {name!r} belongs to another competitor: choose another --name")
            return
        like = self._db.execute("SELECT name FROM submissions WHERE name_key(name) = ? AND competitor != ? "
                                "ORDER BY id LIMIT 1", (name_key(name), competitor)).fetchone()
        if like is not None:
            raise BookError(f"the bot name {name!r} is too like {like[0]!r}, another competitor's: "
                            "choose another --name")

    def next_version(self, name: str) -> str:
        """The version ``"next"`` stands for: one more than the highest whole-number version of ``name``."""
        with self._lock:
            rows = self._db.execute("SELECT version FROM submissions WHERE name = ?", (name,)).fetchall()
        return str(max((int(v) for (v,) in rows if str(v).isdigit()), default=0) + 1)

    def set_status(self, sid: int, status: str, step: str = "", reason: str = "", log_tail: str = "",
                   image: str | None = None) -> None:
        """Move submission ``sid`` to ``status`` (with a rejection's ``step``, ``reason``, ``log_tail``)."""
        assert status in STATUSES, status
        with self._lock:
            self._db.execute(
                "UPDATE submissions SET status = ?, step = ?, reason = ?, log_tail = ?, image = COALESCE(?, image),"
                " updated_at = ? WHERE id = ?",
                (status, step, reason, log_tail[-LOG_TAIL_CHARS:], image, time.time(), sid))

    def retire(self, sid: int) -> None:
        """Take submission ``sid`` out of scheduling (its games stay)."""
        with self._lock:
            self._db.execute("UPDATE submissions SET retired = 1, updated_at = ? WHERE id = ?", (time.time(), sid))

    def retire_over(self, competitor: str, keep: int) -> list[Submission]:
        """Retire ``competitor``'s oldest scheduled entrants beyond the newest ``keep``; returns them."""
        live = [x for x in self.submissions(competitor, statuses=IN_PLAY) if not x.retired]
        old = live[: max(0, len(live) - keep)]
        for sub in old:
            self.retire(sub.id)
        return old

    def images_over(self, competitor: str, keep: int) -> list[Submission]:
        """``competitor``'s accepted versions whose images may go to keep at most ``keep`` (their newest
        ones, but for those that must stay), oldest first: retired from scheduling, not their selected final
        entry, not yet removed. Remote entries have no image and do not count."""
        held = [x for x in self.submissions(competitor, statuses=IN_PLAY) if x.kind != "remote" and not x.removed]
        chosen = self.get_meta(f"selected:{competitor}")
        over = [x for x in held if x.retired and str(x.id) != chosen]
        return over[: max(0, len(held) - keep)]

    def claim_removal(self, sub: Submission) -> bool:
        """Mark ``sub``'s image as removed (:data:`IMAGE_REMOVED`: no longer selectable) before it is removed,
        unless it is (now) its competitor's selected final entry or no longer retired; in one transaction with
        :meth:`select`'s, so a version chosen for the final at that moment is either chosen (and kept) or
        refused. Returns whether it was marked (:meth:`keep_image` undoes it when docker keeps the image)."""
        with self._transaction() as db:
            chosen = db.execute("SELECT value FROM meta WHERE key = ?", (f"selected:{sub.competitor}",)).fetchone()
            return chosen != (str(sub.id),) and db.execute(
                "UPDATE submissions SET retired = ?, updated_at = ? WHERE id = ? AND retired = 1",
                (IMAGE_REMOVED, time.time(), sub.id)).rowcount == 1

    def keep_image(self, sid: int) -> None:
        """Submission ``sid``'s image was not removed after all (docker kept it): retired, selectable again."""
        with self._lock:
            self._db.execute("UPDATE submissions SET retired = 1, updated_at = ? WHERE id = ? AND retired = ?",
                             (time.time(), sid, IMAGE_REMOVED))

    def select(self, competitor: str, sid: int) -> bool:
        """Make ``sid`` ``competitor``'s entry in the final evaluation (the caller checked it is theirs) unless its
        image is removed (:meth:`claim_removal`, in one transaction with this); returns whether it was chosen."""
        with self._transaction() as db:
            row = db.execute("SELECT retired FROM submissions WHERE id = ?", (sid,)).fetchone()
            chosen = row is not None and row[0] != IMAGE_REMOVED
            if chosen:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (f"selected:{competitor}", str(sid)))
        return chosen

    def finalists(self) -> list[Submission]:
        """Each competitor's entry in the final evaluation (:meth:`final_entry`), by competitor."""
        return [pick for name, _ in self.competitors() if (pick := self._final_entry(name)) is not None]

    def final_entry(self, competitor: str) -> int | None:
        """The id of ``competitor``'s entry in the final evaluation as it stands (what ``arena submissions`` and
        /me mark), or None: the one they selected (if it was accepted), else their latest accepted (whose image
        is kept)."""
        pick = self._final_entry(competitor)
        return None if pick is None else pick.id

    def _final_entry(self, competitor: str) -> Submission | None:
        entries = [s for s in self.submissions(competitor, statuses=IN_PLAY) if not s.removed]
        chosen = self.get_meta(f"selected:{competitor}")
        return next((s for s in entries if str(s.id) == chosen), entries[-1] if entries else None)

    def _one(self, sid: int) -> Submission:
        found = self.submissions(sid=sid)
        if not found:
            raise BookError(f"no submission {sid}")
        return found[0]

    def get(self, sid: int) -> Submission | None:
        """Submission ``sid``, or None."""
        found = self.submissions(sid=sid)
        return found[0] if found else None

    def submissions(self, competitor: str | None = None, sid: int | None = None,
                    statuses: tuple[str, ...] = STATUSES) -> list[Submission]:
        """Submissions (of one ``competitor``, or one ``sid``, in ``statuses``), oldest first."""
        marks = ",".join("?" * len(statuses))
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM submissions WHERE (? IS NULL OR competitor = ?) AND (? IS NULL OR id = ?)"
                f" AND status IN ({marks}) ORDER BY id", (competitor, competitor, sid, sid, *statuses)).fetchall()
        return [_submission(r) for r in rows]

    def count_by_status(self) -> dict[str, int]:
        """How many submissions are in each status (statuses with none left out)."""
        with self._lock:
            rows = self._db.execute("SELECT status, COUNT(*) FROM submissions GROUP BY status").fetchall()
        return {str(status): int(n) for status, n in rows}

    def count_since(self, competitor: str, since: float, until: float = float("inf")) -> int:
        """How many submissions ``competitor`` made since UNIX time ``since`` (and before ``until``), but for
        ``failed`` ones (the arena's fault, such as a base image the host has not made: not the competitor's to
        pay)."""
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM submissions WHERE competitor = ? AND created_at >= ? "
                                   "AND created_at < ? AND status != 'failed'", (competitor, since, until)).fetchone()
        return int(row[0])

    def add_refusal(self, competitor: str, at: float) -> int:
        """Note that an upload of ``competitor`` was refused at UNIX time ``at`` (:meth:`refusals_since` counts
        them), or is counted so while it is under way (:meth:`arena.competition.desk.Desk.begin_upload`);
        refusals two days older are forgotten. Returns the refusal's id (:meth:`forgive_refusal`)."""
        with self._transaction() as db:
            db.execute("DELETE FROM refusals WHERE at < ?", (at - 2 * 86400,))
            return int(db.execute("INSERT INTO refusals (competitor, at) VALUES (?, ?)", (competitor, at)).lastrowid
                       or 0)

    def refusal_at(self, competitor: str, refusal: int) -> float | None:
        """When ``competitor``'s refusal ``refusal`` (:meth:`add_refusal`'s id) was counted (UNIX seconds), or
        None if it is gone (forgiven) or another's."""
        with self._lock:
            row = self._db.execute("SELECT at FROM refusals WHERE rowid = ? AND competitor = ?",
                                   (refusal, competitor)).fetchone()
        return None if row is None else float(row[0])

    def forgive_refusal(self, competitor: str, refusal: int) -> None:
        """Take back ``competitor``'s refusal ``refusal`` (:meth:`add_refusal`'s id): the upload it counted was
        kept, or failed by the arena's fault. Nothing if it is gone, or another's: SQLite gives a deleted
        top rowid out again, so an id forgiven twice could name another competitor's later refusal."""
        with self._transaction() as db:
            db.execute("DELETE FROM refusals WHERE rowid = ? AND competitor = ?", (refusal, competitor))

    def refusals_since(self, competitor: str, since: float, until: float = float("inf")) -> int:
        """How many uploads of ``competitor`` were refused since UNIX time ``since`` (and before ``until``)
        (:meth:`add_refusal`)."""
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM refusals WHERE competitor = ? AND at >= ? AND at < ?",
                                   (competitor, since, until)).fetchone()
        return int(row[0])

    def retry_failed(self, ids: Sequence[int] = ()) -> list[Submission]:
        """Put ``failed`` submissions (the arena's fault: a base image missing, docker gone) back in the
        build queue as ``received``, keeping their name, version and files: those of ``ids``, or every
        failed one when ``ids`` is empty. A running ``arena serve`` builds them at its next look
        (``POLL_S``). Returns them, oldest first. :raises BookError: an id that is no submission, or one
        that did not fail (its status named): a rejection is the competitor's to mend."""
        for sid in ids:
            status = self._one(sid).status
            if status != "failed":
                raise BookError(f"submission {sid} is {status}, not failed: only the arena's failures are retried")
        chosen = [s for s in self.submissions(statuses=("failed",)) if not ids or s.id in ids]
        with self._lock:
            for sub in chosen:
                self._db.execute("UPDATE submissions SET status = 'received', step = '', reason = 'retried by the "
                                 "host', log_tail = '', updated_at = ? WHERE id = ? AND status = 'failed'",
                                 (time.time(), sub.id))
        return [self._one(sub.id) for sub in chosen]

    def resume(self) -> list[Submission]:
        """After a restart: submissions that were building or validating go back to ``received``
        (built again); returns every submission still in the queue, oldest first."""
        with self._lock:
            self._db.execute("UPDATE submissions SET status = 'received', updated_at = ?, reason = "
                             "'the arena restarted during this step; it runs again' "
                             "WHERE status IN ('building', 'validating')", (time.time(),))
        return self.submissions(statuses=IN_QUEUE)


def competition_folder(folder: Path) -> Path:
    """The output folder of the competition whose book governs the output folder ``folder``: the final's folder
    (``<output>/final`` holding its config, beside the book, with no book of its own) belongs to the competition in
    ``<output>``; any other folder is its own (with a book or without: a folder with its own book is always its
    own). So the final's run and its board read the competition's disqualifications where the league's do
    (:func:`read_disqualified`)."""
    folder = Path(folder)
    parent = folder.parent
    if (folder.name == FINAL_DIR and (folder / FINAL_CONFIG).is_file() and (parent / BOOK_NAME).is_file()
            and not (folder / BOOK_NAME).is_file()):  # a competition's own folder, named final, reads its own book
        return parent
    return folder


def read_disqualified(folder: Path, wait_s: float = LOCK_WAIT_S) -> dict[str, str]:
    """:meth:`CompetitionBook.disqualified_entrants` of the book of the competition the output folder ``folder``
    belongs to (:func:`competition_folder`: the league's, or its final's), read-only (``{}`` when it has no book,
    or a book made before disqualifications): what a publication of the league or the final (``arena serve``,
    ``arena competition close``, ``arena run``, ``arena web``) leaves out of the ratings, and what the final's run
    forfeits (:func:`arena.tournament.runner.run_games`' ``barred``); a book busy past ``wait_s`` seconds raises
    :class:`sqlite3.OperationalError`. Makes no file."""
    path = competition_folder(folder) / BOOK_NAME
    if not path.is_file():
        return {}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=wait_s)
    except sqlite3.Error:
        return {}
    try:
        rows = db.execute(_DISQUALIFIED_ENTRANTS).fetchall()
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return {}
        raise
    finally:
        db.close()
    return {str(e): str(r) for e, r in rows}
