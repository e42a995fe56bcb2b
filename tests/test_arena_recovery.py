"""Crash recovery of an output folder (docs/arena.md, "Results and resume"): a lost or foreign store never
restarts a published tournament under a new master seed, the static replay pages follow the stored games'
records, an unreadable record is named at publication, live files a killed run left are removed, and a
damaged database or a full disk is one line naming the file or folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from web_helpers import ROOT

from arena.config import load_config
from arena.tournament.runner import COMMITMENT_FILE, DB_NAME, open_tournament
from arena.tournament.store import StoreMismatch

CONFIG = """
[tournament]
name = "rec"
players = 2
games_per_pairing = 4
output = "out"

[[bots]]
name = "a"
command = ["true"]
[[bots]]
name = "b"
command = ["true"]
"""
RESTORE = "restore arena.sqlite (with its -wal file) from a backup, or use a new output folder"


def config(tmp_path: Path) -> Path:
    """A seedless config (each new folder draws its own master seed) of simulated games into ``out``."""
    path = tmp_path / "rec.toml"
    path.write_text(CONFIG)
    return path


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m arena.cli ARGS``."""
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)


def run(cfg: Path, simulate: bool = True) -> subprocess.CompletedProcess[str]:
    """``arena run CFG`` without a progress bar or bootstrap; simulated games unless told otherwise."""
    return arena("run", str(cfg), "--no-progress", "--bootstrap", "0", *(["--simulate", "0"] if simulate else []))


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr + done.stdout
    return lines[0]


def drop_store(out: Path, empty: bool) -> None:
    """Lose the store as a disk, an operator or a kill -9 with its WAL lost would: emptied or deleted."""
    if empty:
        (out / DB_NAME).write_bytes(b"")
    else:
        (out / DB_NAME).unlink()
    for tail in ("-wal", "-shm"):
        (out / f"{DB_NAME}{tail}").unlink(missing_ok=True)


def test_a_lost_store_beside_a_published_tournament_is_refused(tmp_path: Path) -> None:
    """Emptied or deleted, the store would make the run draw a new master seed, overwrite the published
    commitment and play every game again: it exits 2 with one line naming what is published, writing
    nothing; the store restored, the run goes on."""
    cfg = config(tmp_path)
    out = tmp_path / "out"
    assert run(cfg).returncode == 0
    published = (out / COMMITMENT_FILE).read_text()
    backup = (out / DB_NAME).read_bytes()  # the arena closed it: its WAL is in the file
    for empty, state in ((True, "holds no tournament (emptied, or its -wal file lost)"), (False, "is missing")):
        drop_store(out, empty)
        done = run(cfg)
        assert done.returncode == 2, done.stderr + done.stdout
        assert one_line(done) == (f"error: {out} holds a published tournament (commitment.json, games.jsonl, "
                                  f"ratings.json) but its store arena.sqlite {state}: {RESTORE}")
        assert (out / COMMITMENT_FILE).read_text() == published
        assert (out / DB_NAME).exists() == empty  # a missing store is not made again
    (out / DB_NAME).write_bytes(backup)
    done = run(cfg)
    assert done.returncode == 0, done.stderr
    assert (out / COMMITMENT_FILE).read_text() == published


def test_a_store_of_another_master_seed_never_overwrites_the_commitment(tmp_path: Path) -> None:
    """Another folder's store (another seed) copied in: open_tournament refuses, naming both commitments."""
    cfg = config(tmp_path)
    out, other = tmp_path / "out", tmp_path / "other"
    for folder in (out, other):
        open_tournament(load_config(cfg), folder).store.close()
    published = (out / COMMITMENT_FILE).read_text()
    theirs = json.loads((other / COMMITMENT_FILE).read_text())["master_seed_sha256"]
    ours = json.loads(published)["master_seed_sha256"]
    shutil.copyfile(other / DB_NAME, out / DB_NAME)
    with pytest.raises(StoreMismatch) as info:
        open_tournament(load_config(cfg), out)
    assert str(info.value) == (f"{out / COMMITMENT_FILE} commits to the master seed with SHA-256 {ours}, but the "
                               f"store arena.sqlite holds another (SHA-256 {theirs}): {RESTORE}")
    assert (out / COMMITMENT_FILE).read_text() == published


# ------------------------------------------------------------------------------------ storage errors


def test_a_damaged_database_is_one_line_naming_it(tmp_path: Path) -> None:
    """arena.sqlite (arena run) and competition.sqlite (the competition's commands, arena serve) that are
    not databases: exit 1, one line naming the file and what to do; the file is left as it was."""
    cfg = config(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    junk = b"not a database, a disk that failed " * 200
    (out / DB_NAME).write_bytes(junk)
    done = run(cfg)
    assert done.returncode == 1, done.stderr + done.stdout
    assert one_line(done) == f"error: {out / DB_NAME}: file is not a database: {RESTORE}"
    assert (out / DB_NAME).read_bytes() == junk
    book = tmp_path / "league" / "competition.sqlite"
    book.parent.mkdir()
    book.write_bytes(junk)
    done = arena("competitor", "list", str(ROOT / "examples" / "competition.toml"), "--output", str(book.parent))
    assert done.returncode == 1, done.stderr + done.stdout
    assert one_line(done) == (f"error: {book}: file is not a database: restore competition.sqlite (with its -wal "
                              "file) from a backup, or use a new output folder")


def test_a_full_disk_at_publication_names_the_folder_and_keeps_the_games(tmp_path: Path) -> None:
    """games.jsonl written onto /dev/full (a real ENOSPC): exit 1, one line naming the output folder
    and saying the stored games are kept; with room again the same command publishes them."""
    cfg = config(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "games.jsonl.tmp").symlink_to("/dev/full")
    done = run(cfg)
    assert done.returncode == 1, done.stderr + done.stdout
    assert one_line(done) == (f"error: cannot publish the results in {out}: No space left on device; the stored "
                              "games are kept: run the same command to publish them")
    (out / "games.jsonl.tmp").unlink()
    done = run(cfg)
    assert done.returncode == 0, done.stderr
    assert len((out / "games.jsonl").read_text().splitlines()) == 4
