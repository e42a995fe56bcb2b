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
which fields changed), ``created_at``, ``finished_at``.

Remote bots' tokens (``bot_tokens``): only each token's SHA-256, the bot's name, when it was made and
when it was revoked (:meth:`Store.add_token`, :meth:`Store.revoke_tokens`, :meth:`Store.token_digests`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.tournament.schedule import ScheduledGame

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
    winner       INTEGER,            -- 0, 1, or NULL for no winner (a draw for ratings)
    reasons      TEXT NOT NULL,      -- JSON list of termination reasons
    record_path  TEXT,
    seed         TEXT NOT NULL,      -- hex match seed
    first_dealer INTEGER NOT NULL,
    duration_s   REAL NOT NULL,
    extra        TEXT NOT NULL,      -- JSON object (e.g. bots' thinking time)
    stored_at    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS bot_tokens (
    digest       TEXT PRIMARY KEY,   -- SHA-256 hex of a remote bot's token (the token itself is never stored)
    bot          TEXT NOT NULL,
    created_at   REAL NOT NULL,
    revoked_at   REAL                -- NULL while valid
);
"""


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


@dataclass(frozen=True, slots=True)
class GameResult:
    """The result of one scheduled game as the arena stores it.

    ``sides``: bot names on side 0 and side 1; ``scores``: game points of side 0 and side 1;
    ``winner``: 0, 1, or ``None`` (no winner, e.g. both sides failed: a draw for ratings);
    ``reasons``: termination reasons, human-readable (e.g. ``"side 0 reached 14"``, ``"seat 1
    (random) timed out"``); ``record_path``: the match record, relative to the output folder, if any;
    ``duration_s``: wall time of the game in seconds; ``extra``: JSON-ready details; ``stored_at``:
    when the store wrote it (Unix seconds; ``None`` until then: :meth:`Store.results` fills it, the
    ladder's per-day budget counts by it).
    """

    game_id: str
    match_id: str
    pair_id: str
    sides: tuple[str, str]
    scores: tuple[int, int]
    winner: int | None
    reasons: tuple[str, ...]
    record_path: str | None
    seed_hex: str
    first_dealer: int
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    stored_at: float | None = field(default=None, compare=False)  # the store's, not the game's

    @property
    def score_a(self) -> float:
        """Side 0's score for ratings: 1 win, 0 loss, 0.5 no winner."""
        return 0.5 if self.winner is None else 1.0 - float(self.winner)

    def rating_row(self) -> dict[str, Any]:
        """The games.jsonl line: the ratings input (``a``, ``b``, ``score``, ``pair``) plus details;
        ``terminations`` (the referee's per seat, e.g. ``["normal", "timeout"]``), ``referee``
        (``host:port``) and ``failures`` (per seat: :class:`arena.report.failures.Failures` as dicts) when the
        game was played on a referee; ``workers`` (the lobby's worker id per seat, null at a per-game
        seat) when some seat was played by a worker."""
        return {
            "a": self.sides[0],
            "b": self.sides[1],
            "score": self.score_a,
            "pair": self.pair_id,
            "game_id": self.game_id,
            "match_id": self.match_id,
            "scores": list(self.scores),
            "winner": self.winner,
            "reasons": list(self.reasons),
            "record": self.record_path,
            "seed": self.seed_hex,
            "first_dealer": self.first_dealer,
            "duration_s": round(self.duration_s, 4),
            **{k: self.extra[k] for k in ("terminations", "referee", "failures", "workers") if k in self.extra},
        }


class Store:
    """An open results database. Not thread-safe: use it from one thread (the arena's main loop).

    The file is created with permissions 0600 (and an existing one is set to 0600): it holds the
    master seed.

    :raises sqlite3.Error: if the file cannot be opened or is not a database.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # the file holds the master seed (every deck derives from it): readable by its owner only;
        # SQLite gives the -wal and -shm files the database file's permissions
        os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)
        self._db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

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
    def record(self, result: GameResult) -> bool:
        """Store ``result`` once. Returns True if written, False if that game (or match) was stored already.

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
                json.dumps(result.extra, sort_keys=True),
                time.time(),
            ),
        )
        return cur.rowcount == 1

    def stored_ids(self) -> set[str]:
        """The game ids already stored."""
        return {r[0] for r in self._db.execute("SELECT game_id FROM games")}

    def pending(self, schedule: Sequence[ScheduledGame]) -> list[ScheduledGame]:
        """The scheduled games with no stored result, in schedule order."""
        done = self.stored_ids()
        return [g for g in schedule if g.game_id not in done]

    def results(self, order: Iterable[str] | None = None) -> list[GameResult]:
        """All stored results; in the order of the game ids ``order`` when given (others last), else by id."""
        rows = self._db.execute(
            "SELECT game_id, match_id, pair_id, side0, side1, score0, score1, winner, reasons, record_path,"
            " seed, first_dealer, duration_s, extra, stored_at FROM games ORDER BY game_id"
        ).fetchall()
        out = [
            GameResult(
                r[0],
                r[1],
                r[2],
                (r[3], r[4]),
                (r[5], r[6]),
                r[7],
                tuple(json.loads(r[8])),
                r[9],
                r[10],
                r[11],
                r[12],
                json.loads(r[13]),
                r[14],
            )
            for r in rows
        ]
        if order is not None:
            rank = {gid: k for k, gid in enumerate(order)}
            out.sort(key=lambda g: rank.get(g.game_id, len(rank)))
        return out

    def count(self) -> int:
        """Number of stored games."""
        return int(self._db.execute("SELECT COUNT(*) FROM games").fetchone()[0])


def games_rows(results: Sequence[GameResult]) -> list[dict[str, Any]]:
    """The games.jsonl rows of ``results`` (see :meth:`GameResult.rating_row`)."""
    return [r.rating_row() for r in results]
