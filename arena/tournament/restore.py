"""``arena restore BACKUP OUTPUT``: put a backup (``arena backup``) back as a tournament's output folder,
refusing to undo what is over for good (docs/arena.md, "Backup and restore").

A backup is the folder as it was: a backup made before the competition's freeze, its final or the
league's close (``arena competition close``) does not know of them. Copied over the folder (``cp -a``),
the league was open again: ``arena serve`` scheduled and played games from the master seed the close had
published (anyone could compute their deals), its board showed no seed, and the book took submissions
again (a new freeze would draw a final seed other than the one committed to). So the restore reads the
*seals* of the folder it replaces and of the backup (:class:`Seals`: the freeze in the book, the final's
revealed seed, the close in the store, each also from the published ``ratings.json`` when a store cannot
be read) and refuses, with one line and nothing changed, a backup that lacks one the folder has. With
``keep_close`` (``--keep-close``) it restores the backup and carries the seals into it: the store stays
closed (its close time), the book frozen (its seed), the final is the folder's, each competitor disqualified
there stays so (their token and remote bots' tokens revoked again); the games, submissions and competitors
after the backup are gone.

The copy is :func:`arena.tournament.backup.backup`'s (the databases with SQLite's backup API, 0600 in a
0700 folder), made beside OUTPUT, under OUTPUT's lock (an arena serving it: refused); then OUTPUT is moved
aside to ``OUTPUT.replaced-YYYYmmddTHHMMSSZ`` (kept, never removed) and the copy takes its path, which is
the run key of its containers and submissions' images (the SHA-256 of the absolute path).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from arena.competition.book import BOOK_NAME, FINAL_DIR, CompetitionBook, Disqualification, LeagueTokens
from arena.competition.desk import FROZEN_KEY, SEED_KEY
from arena.tournament.backup import DATABASES, Backup, backup
from arena.tournament.lock import lock_changes, lock_output
from arena.tournament.runner import CLOSED_KEY, DB_NAME
from arena.tournament.store import Store

#: The end of the line refusing a restore while an arena holds OUTPUT.
LOCK_ADVICE = "stop it first: a folder is restored while no arena uses it"


class RestoreError(ValueError):
    """A restore that is not done (nothing changed); ``str(e)`` is one line."""


@dataclass(frozen=True, slots=True)
class Seals:
    """What a folder records as over for good, each None (or False) when it does not (or cannot be read).

    ``frozen``: the book's (frozen_at, final_seed hex); ``final_over``: the final's seed is revealed
    (``final/arena.sqlite`` ``finished_at``, or ``final/ratings.json`` showing it); ``closed``: the
    league's close time (Unix seconds, text) from its store, or the published ``ratings.json``'s mtime
    when only that says ``league_closed``; ``disqualified``: the competitors the host disqualified (the book's,
    not undone): a backup from before restored, a cheater's entries would play and be rated again.
    """

    frozen: tuple[str, str] | None
    final_over: bool
    closed: str | None
    disqualified: tuple[Disqualification, ...] = ()

    def lost_in(self, older: Seals) -> list[str]:
        """What restoring ``older`` over this folder would undo: one phrase each (``[]``: nothing)."""
        lost = []
        if self.frozen and not older.frozen:
            lost.append("the freeze (restored, the book would take submissions again and a new freeze draw a final "
                        "seed other than the one committed to)")
        if self.final_over and not older.final_over:
            lost.append("the final (its seed is revealed: restored, it could be played again, with other games, "
                        "from a public seed)")
        if self.closed and not older.closed:
            day = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(self.closed)))
            lost.append(f"the league's close ({day}: restored, `arena serve` would deal games again from its "
                        "published master seed)")
        had = {d.competitor for d in older.disqualified}
        lost += [f"the disqualification of {d.competitor} ({d.reason}: restored, their entries would be scheduled "
                 "and rated again)" for d in self.disqualified if d.competitor not in had]
        return lost


def _meta(db: Path, key: str, still: bool) -> str | None:
    """``key`` of the ``meta`` table of the database ``db``, read-only (``still``: a backup no one writes, read
    ``immutable``, making no file beside it); None if absent or unreadable."""
    if not db.is_file():
        return None
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro{'&immutable=1' if still else ''}", uri=True,
                              timeout=30.0)
    except sqlite3.Error:
        return None
    try:
        row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return None if row is None else str(row[0])


def _disqualified(db: Path, still: bool) -> tuple[Disqualification, ...]:
    """The disqualifications (not undone) of the book ``db``, read-only as :func:`_meta`; ``()`` if none or
    unreadable (a book made before disqualifications)."""
    if not db.is_file():
        return ()
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro{'&immutable=1' if still else ''}", uri=True,
                              timeout=30.0)
    except sqlite3.Error:
        return ()
    try:
        rows = con.execute("SELECT competitor, at, reason, by FROM disqualifications WHERE undone_at IS NULL "
                           "ORDER BY competitor").fetchall()
    except sqlite3.Error:
        return ()
    finally:
        con.close()
    return tuple(Disqualification(str(c), float(at), str(why), str(by)) for c, at, why, by in rows)


def _published(folder: Path) -> dict[str, object]:
    """The ``tournament`` object of ``folder/ratings.json`` (``{}`` when missing or unreadable)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        told = json.loads((folder / "ratings.json").read_text(encoding="utf-8")).get("tournament")
        if isinstance(told, dict):
            return told
    return {}


def read_seals(folder: Path, still: bool = False) -> Seals:
    """The :class:`Seals` of the output folder ``folder`` (``still``: a backup, which no one writes)."""
    frozen_at, seed = _meta(folder / BOOK_NAME, FROZEN_KEY, still), _meta(folder / BOOK_NAME, SEED_KEY, still)
    final = folder / FINAL_DIR
    final_over = _meta(final / DB_NAME, "finished_at", still) is not None or bool(_published(final).get("master_seed"))
    closed = _meta(folder / DB_NAME, CLOSED_KEY, still)
    if closed is None and _published(folder).get("league_closed") is True:
        closed = f"{(folder / 'ratings.json').stat().st_mtime:.3f}"
    return Seals((frozen_at, seed) if frozen_at and seed else None, final_over, closed,
                 _disqualified(folder / BOOK_NAME, still))


@dataclass(frozen=True, slots=True)
class Restored:
    """A done restore: what was copied, where the replaced folder is (None: there was none) and the
    seals kept from it (phrases, ``()`` without ``keep_close``)."""

    copied: Backup
    aside: Path | None
    kept: tuple[str, ...]


def _carry(seals: Seals, old: Path, copy: Path) -> tuple[str, ...]:
    """Write into the restored ``copy`` the seals of the replaced folder ``old`` it lacks; returns what it kept."""
    kept, had = [], read_seals(copy)
    if seals.frozen and not had.frozen:
        with CompetitionBook(copy) as book:
            book.set_meta(SEED_KEY, seals.frozen[1])
            book.set_meta(FROZEN_KEY, seals.frozen[0])
        kept.append("the freeze (its final seed)")
    if seals.final_over and not had.final_over:
        shutil.rmtree(copy / FINAL_DIR, ignore_errors=True)
        backup(old / FINAL_DIR, copy / FINAL_DIR)
        kept.append(f"the final ({FINAL_DIR}/ as it was)")
    lost = [d for d in seals.disqualified if d.competitor not in {x.competitor for x in had.disqualified}]
    if lost:
        with CompetitionBook(copy) as book:  # their remote entries' tokens revoked and held, as the disqualify did
            for gone in lost:
                book.keep_disqualification(gone, LeagueTokens(copy))
        kept.append(f"the disqualification of {', '.join(d.competitor for d in lost)}")
    if seals.closed and not had.closed:
        with Store(copy / DB_NAME) as store:
            store.set_meta(CLOSED_KEY, seals.closed)
        kept.append("the league's close")
    return tuple(kept)


def _aside(output: Path) -> Path:
    """A new path beside ``output`` for the folder a restore replaces."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1, 1000):
        path = output.with_name(f"{output.name}.replaced-{stamp}" + (f"-{n}" if n > 1 else ""))
        if not os.path.lexists(path):
            return path
    raise RestoreError(f"{output}: no free name beside it to move it aside")


def restore(source: Path, output: Path, keep_close: bool = False) -> Restored:
    """Put the backup ``source`` at ``output`` (module docstring).

    :raises RestoreError: ``source`` holds no arena database, one folder is inside the other, or ``source``
        lacks a seal of ``output`` and not ``keep_close`` (the line names each and what it would undo).
    :raises arena.tournament.lock.OutputLocked: an arena uses ``output``, or a host command changing its
        disqualifications or tokens did not end within a minute (:func:`arena.tournament.lock.lock_changes`).
    :raises arena.tournament.backup.BackupError: a database of ``source`` cannot be copied.
    """
    source, output = source.resolve(), output.resolve()
    if not any((source / name).is_file() for name in DATABASES):
        raise RestoreError(f"{source}: no {' or '.join(DATABASES)} here: not a backup of an arena's output folder")
    if source == output or output in source.parents or source in output.parents:
        raise RestoreError(f"{source}: the backup and the folder it restores ({output}) must not hold each other")
    if not output.exists():
        return Restored(backup(source, output, still=True), None, ())
    # and the host's changes of its disqualifications and tokens (lock_changes): one under way writes the folder
    # read here, or, waiting, the one that replaces it
    with lock_output(output, advice=LOCK_ADVICE), lock_changes(output):
        seals = read_seals(output)
        lost = seals.lost_in(read_seals(source, still=True))
        if lost and not keep_close:
            raise RestoreError(f"{source} was made before {'; '.join(lost)}; nothing was changed (`arena restore "
                               "--keep-close` restores it keeping these, losing what came after the backup)")
        staging = output.with_name(f".{output.name}.restoring")
        shutil.rmtree(staging, ignore_errors=True)  # a restore killed before: never a folder in use (OUTPUT's lock)
        try:
            copied = backup(source, staging, still=True)
            kept = _carry(seals, output, staging) if lost else ()
            aside = _aside(output)
            os.rename(output, aside)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        os.rename(staging, output)
    return Restored(copied, aside, kept)
