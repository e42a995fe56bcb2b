"""`arena backup OUTPUT DEST` while a real `arena serve` writes OUTPUT (docs/arena.md, "Backup and restore").

Before it there was no documented way to back a serving league up: `cp arena.sqlite` while it runs copies
a file whose rows may all be in its `-wal` file (the copy holds no tournament), and `sqlite3 … .backup`
writes the master seed world-readable under the usual umask. The backup here is made while the league
plays; its databases are private (0600 in a 0700 folder), whole without a `-wal` file, and the copy is a
tournament an arena resumes: the same commitment, every game played once.

Nothing is timed: every wait polls with a bounded deadline.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.competition.book import BOOK_NAME, CompetitionBook
from tests.configs import INSTANT, bots_toml

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

CONFIG = """
[tournament]
name = "backed-up"
players = 2
games_per_pairing = 6
concurrency = 1
output = "out"
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
""" + bots_toml("one", "two", command=INSTANT, sandbox='"none"', cwd=f'"{ROOT}"')


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def stored(db: Path) -> int:
    """Games in the store ``db``, read-only (0 while it has no table yet)."""
    if not db.is_file():
        return 0
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return int(con.execute("SELECT count(*) FROM games").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def meta(db: Path, key: str) -> str:
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return str(con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])
    finally:
        con.close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_backup_of_a_serving_league_is_private_whole_and_resumes(tmp_path: Path) -> None:
    cfg = tmp_path / "league.toml"
    cfg.write_text(CONFIG)
    out, dest = tmp_path / "out", tmp_path / "backups" / "monday"
    out.mkdir(mode=0o700)
    with CompetitionBook(out) as book:  # a competition's book beside the store: backed up too
        book.add_competitor("alice")
    old_umask = os.umask(0o022)  # the usual one: sqlite3's .backup made the copy 0644 under it
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and stored(out / "arena.sqlite") < 2:
            time.sleep(0.1)
        assert stored(out / "arena.sqlite") >= 2
        assert proc.poll() is None  # still serving: the backup is taken from a live store
        made = arena("backup", str(out), str(dest))
        os.umask(old_umask)
        assert made.returncode == 0, made.stderr
        assert made.stdout.startswith(f"backup: {dest}: arena.sqlite ("), made.stdout
    finally:
        os.umask(old_umask)
        proc.send_signal(signal.SIGTERM)
        served = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, served
    # private: the store holds the master seed, the book the competitors' token digests
    assert mode(dest) == 0o700
    assert mode(dest / "arena.sqlite") == mode(dest / BOOK_NAME) == 0o600
    # whole on its own: no -wal/-shm beside it, no lock description, no running games
    names = {p.name for p in dest.iterdir()}
    assert not {n for n in names if n.endswith(("-wal", "-shm"))} and "arena.tournament.lock" not in names, names
    assert "live" not in names and "logs" not in names
    copied = stored(dest / "arena.sqlite")
    assert copied >= 2
    assert meta(dest / "arena.sqlite", "master_seed") == meta(out / "arena.sqlite", "master_seed")
    with CompetitionBook(dest) as book:
        assert book.competitors() == [("alice", True)]
    # a second backup into the same folder is refused, the first one untouched
    again = arena("backup", str(out), str(dest))
    assert again.returncode == 2 and "exists and is not an empty folder" in again.stderr
    assert stored(dest / "arena.sqlite") == copied
    # restored: an arena resumes the copy as the same tournament and plays each missing game once
    resumed = arena("run", str(cfg), "--output", str(dest), "--no-progress")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (dest / "commitment.json").read_text() == (out / "commitment.json").read_text()
    assert stored(dest / "arena.sqlite") == 6
    assert len(list((dest / "records").glob("*.jsonl"))) == 6


def test_a_finals_store_is_copied_whole_while_its_rows_are_in_the_wal(tmp_path: Path) -> None:
    """`OUTPUT/final` is a tournament folder of its own (`arena competition final`), with its own store,
    which may be written while the backup runs: it is copied through SQLite as the league's, not as a
    file (whose rows are then all in its `-wal`: the plain copy had no table)."""
    out, dest = tmp_path / "out", tmp_path / "bk"
    (out / "final").mkdir(parents=True)
    with CompetitionBook(out) as book:
        book.add_competitor("alice")
    writer = sqlite3.connect(out / "final" / "arena.sqlite", isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE games (id TEXT)")
        writer.execute("INSERT INTO games VALUES ('final-p0-1-g0')")
        assert (out / "final" / "arena.sqlite-wal").stat().st_size > 0  # the rows: in the -wal file
        for skipped in ("logs/final-p0-1-g0/seat0.log", "live/final-p0-1-g1.jsonl", "records/final-p0-1-g0.jsonl"):
            (out / "final" / skipped).parent.mkdir(parents=True, exist_ok=True)
            (out / "final" / skipped).write_text("x\n")
        made = arena("backup", str(out), str(dest))
    finally:
        writer.close()
    assert made.returncode == 0, made.stderr
    assert not list((dest / "final").glob("*-wal")) and not list((dest / "final").glob("*-shm"))
    assert mode(dest / "final" / "arena.sqlite") == 0o600
    assert stored(dest / "final" / "arena.sqlite") == 1  # (reading it makes its -shm)
    # the final's bots' output and running games are left out as the league's are; its records are not
    assert sorted(p.name for p in (dest / "final").iterdir() if not p.name.startswith("arena.sqlite")) == ["records"]
