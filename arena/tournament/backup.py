"""``arena backup OUTPUT DEST``: a consistent copy of a tournament's output folder, safe while an
arena (``arena serve``, ``arena run``) writes it (docs/arena.md, "Backup and restore").

The databases are copied with SQLite's online backup API from a read-only connection, each in one
read transaction: a snapshot of the committed state, whatever is still in the ``-wal`` file. A plain
``cp`` of ``arena.sqlite`` while the arena runs is not one: the arena's rows can all be in the
``-wal`` file (a copy without it holds no tournament), and copying the two files one after the other
can pair a database with a log of another moment. The copies are made 0600 in a new 0700 folder:
``arena.sqlite`` holds the master seed and ``competition.sqlite`` the competitors' token digests (a
``sqlite3 … .backup`` made them world-readable under the usual umask).

The rest of the folder (records, published files, replay pages, submissions, the final: its own
store copied as the league's) is copied after the databases, so every game a copied store holds has
its record; a game stored after the snapshot may have its record copied too, and a restored arena
plays it again and replaces it. Left
out: the databases' ``-wal``/``-shm`` files, the lock's description, and of the folder and of its final
(any folder holding an arena store) ``live/`` (running games),
uploads being taken in (``submissions/incoming-*``) and ``logs/`` (the bots' output, which can be
large and is not the tournament).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from arena.competition.book import BOOK_NAME
from arena.tournament.lock import LOCK_NAME
from arena.tournament.runner import DB_NAME

#: The databases copied with the backup API, in this order (the league's store first: a competition
#: book copied after it may know a newer entrant, which the restored league then schedules).
DATABASES = (DB_NAME, BOOK_NAME)
#: Top-level entries never copied (besides the databases' own files).
SKIPPED = frozenset({LOCK_NAME, "live", "logs"})


class BackupError(Exception):
    """A backup that cannot be made (one line: which folder and why)."""


@dataclass(frozen=True)
class Backup:
    """What :func:`backup` copied: each database with its row counts, and the other files."""

    databases: dict[str, int]  # name -> bytes
    files: int


def _is_database_file(name: str) -> bool:
    return any(name == db or name.startswith(f"{db}-") for db in DATABASES)


def _copy_database(source: Path, target: Path, still: bool = False) -> int:
    """Copy ``source`` to the new file ``target`` (0600) in one read transaction; returns its size. ``still``:
    ``source`` is a backup no one writes, opened ``immutable`` (no ``-shm``/``-wal`` file made beside it).

    :raises BackupError: the source cannot be read or its copy is not sound.
    """
    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    try:
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro{'&immutable=1' if still else ''}", uri=True,
                              timeout=30.0)
    except sqlite3.Error as e:
        raise BackupError(f"{source}: cannot open it: {e}") from None
    try:
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)
            check = dst.execute("PRAGMA quick_check").fetchone()
        finally:
            dst.close()
    except sqlite3.Error as e:
        raise BackupError(f"{source}: cannot copy it: {e}") from None
    finally:
        src.close()
    if check is None or check[0] != "ok":
        raise BackupError(f"{target}: the copy of {source} fails SQLite's check: {check}")
    return target.stat().st_size


def _copy_tree(source: Path, target: Path, top: bool, still: bool = False) -> int:
    """Copy the folder ``source`` into the existing ``target`` (modes kept, links copied as links);
    returns how many files it copied. An entry that vanishes meanwhile (a page republished) is skipped.
    :data:`SKIPPED` is left out of the top folder and of every tournament folder in it (one holding an
    arena store: ``OUTPUT/final``, whose ``logs/`` are the final's bots' output)."""
    count = 0
    tournament = top or (source / DB_NAME).is_file()
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if (tournament and entry.name in SKIPPED) or entry.name == LOCK_NAME:
            continue
        if source.name == "submissions" and entry.name.startswith("incoming-"):
            continue
        to = target / entry.name
        if _is_database_file(entry.name):  # a final's own store (OUTPUT/final) too: never a plain copy
            if not top and entry.name in DATABASES and entry.is_file(follow_symlinks=False):
                _copy_database(Path(entry.path), to, still)
                count += 1
            continue
        try:
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), to)
            elif entry.is_dir():
                to.mkdir(mode=0o700)
                count += _copy_tree(Path(entry.path), to, False, still)
                shutil.copystat(entry.path, to)
            elif entry.is_file():
                shutil.copy2(entry.path, to)
                count += 1
        except FileNotFoundError:
            continue
    return count


def backup(output: Path, dest: Path, still: bool = False) -> Backup:
    """Copy the tournament folder ``output`` to the new folder ``dest`` (module docstring); ``still``: ``output``
    is a backup no one writes (``arena restore``), read without making a file in it.

    :raises BackupError: ``output`` holds no arena database, ``dest`` exists and is not an empty folder
        or lies inside ``output``, or a database cannot be copied (the half-made ``dest`` is removed).
    """
    output, dest = output.resolve(), dest.resolve()
    found = [name for name in DATABASES if (output / name).is_file()]
    if not found:
        raise BackupError(f"{output}: no {' or '.join(DATABASES)} here: not an arena's output folder")
    if dest == output or output in dest.parents:
        raise BackupError(f"{dest}: the backup must be outside the folder it copies ({output})")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest}: exists and is not an empty folder: choose a new one")
    made = not dest.exists()
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    dest.chmod(0o700)
    try:
        sizes = {name: _copy_database(output / name, dest / name, still) for name in found}
        files = _copy_tree(output, dest, True, still)  # the top folder's databases are in dest already
    except BaseException:
        if made:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            for child in dest.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
    return Backup(sizes, files)
