"""Crash recovery of an output folder (docs/arena.md, "Results and resume"): a lost or foreign store never
restarts a published tournament under a new master seed, the static replay pages follow the stored games'
records, an unreadable record is named at publication, live files a killed run left are removed, and a
damaged database or a full disk is one line naming the file or folder."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from web_helpers import ROOT, random_record

from arena.config import load_config
from arena.report import live
from arena.tournament.runner import COMMITMENT_FILE, DB_NAME, open_tournament
from arena.tournament.store import StoreMismatch
from arena.web.export import REPLAYS_DIR, write_static_replays
from tests.configs import bots_toml

CONFIG = """
[tournament]
name = "rec"
players = 2
games_per_pairing = 4
output = "out"

""" + bots_toml("a", "b")
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


def test_a_run_removes_the_live_files_a_killed_run_left(tmp_path: Path) -> None:
    """`arena run --live` killed mid-game leaves live/<game>.jsonl (with the game's seed); any later run,
    with --live or without, removes it at its start: no game of the folder is running then."""
    cfg = config(tmp_path)
    out = tmp_path / "out"
    assert run(cfg).returncode == 0
    (out / live.LIVE_DIR).mkdir()
    left = out / live.LIVE_DIR / "rec-p0-1-g0.jsonl"
    left.write_text(json.dumps({"type": "live", "game_id": "rec-p0-1-g0", "seed": "ab" * 32}) + "\n")
    done = run(cfg)
    assert done.returncode == 0, done.stderr
    assert live.live_files(out) == {}


@pytest.mark.slow
def test_serve_removes_the_live_files_a_killed_run_left(tmp_path: Path) -> None:
    """`arena serve` too, before its first game: a file of no game of its schedule is gone once it serves."""
    cfg = tmp_path / "lg.toml"
    bot = f'command = ["{{python}}", "-m", "arena.testing.instant_bot"]\ncwd = "{ROOT}"\nsandbox = "none"\n'
    cfg.write_text('[tournament]\nname = "lg"\nplayers = 2\ngames_per_pairing = 2\noutput = "out"\n'
                   f'[[bots]]\nname = "a"\n{bot}[[bots]]\nname = "b"\n{bot}')
    left = tmp_path / "out" / live.LIVE_DIR / "lg-p7-8-g0.jsonl"
    left.parent.mkdir(parents=True)
    left.write_text(json.dumps({"type": "live", "game_id": "lg-p7-8-g0", "seed": "ab" * 32}) + "\n")
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends when serve ends (then the assertion below says why)
            if line.startswith("serving:"):
                break
        assert proc.poll() is None, proc.communicate()
        assert not left.exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err


# ------------------------------------------------------------------------------------ static replay pages


def write_game(out: Path, game_id: str, seed: int, reasons: str) -> dict[str, object]:
    """A record of a random 2-player game to 7 (ending with its seed line, as the referee's do) in
    ``records/``, and its games.jsonl row; ``seed`` picks the game."""
    lines = [*random_record(seed, 2, 7), {"type": "seed", "seed": f"{seed:064x}"}]
    (out / "records").mkdir(parents=True, exist_ok=True)
    (out / "records" / f"{game_id}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    return {"game_id": game_id, "match_id": f"m-{game_id}-{seed}", "pair": "t-p0-1-d0",
            "record": f"records/{game_id}.jsonl", "reasons": [reasons]}


def pages(out: Path) -> list[str]:
    return sorted(p.name for p in (out / REPLAYS_DIR).glob("*.html"))


def test_replay_pages_follow_the_records_of_the_stored_games(tmp_path: Path) -> None:
    """A game played again (its store restored from before it, say) has a new record: its page is made
    again from it. A game the store no longer holds (nor then its pair) keeps no page."""
    rows = [write_game(tmp_path, "t-g0", 1, "first match"), write_game(tmp_path, "t-g1", 2, "its twin")]
    assert write_static_replays(tmp_path, rows) == {g: f"replays/{g}.html" for g in ("t-g0", "t-g1")}
    assert "first match" in (tmp_path / REPLAYS_DIR / "t-g0.html").read_text()
    rows[0] = write_game(tmp_path, "t-g0", 3, "played again")
    write_static_replays(tmp_path, rows)
    assert "played again" in (tmp_path / REPLAYS_DIR / "t-g0.html").read_text()
    assert pages(tmp_path) == ["t-g0.html", "t-g0.seat0.html", "t-g0.seat1.html",
                               "t-g1.html", "t-g1.seat0.html", "t-g1.seat1.html"]
    assert write_static_replays(tmp_path, rows[:1]) == {}  # t-g1 lost: the pair is not complete
    assert pages(tmp_path) == []


def test_an_unreadable_record_is_named_once_per_publication(tmp_path: Path) -> None:
    """Missing, cut mid-line or cut before its seed line: one line for each such game, naming it and
    why; a page made from the intact record of the same match stays linked."""
    rows = [write_game(tmp_path, "t-g0", 1, "a"), write_game(tmp_path, "t-g1", 2, "b"),
            {**write_game(tmp_path, "t-g2", 4, "c"), "pair": "t-p0-1-d1"},
            {**write_game(tmp_path, "t-g3", 5, "d"), "pair": "t-p0-1-d1"}]
    write_static_replays(tmp_path, rows)
    (tmp_path / "records" / "t-g0.jsonl").unlink()
    for page in (tmp_path / REPLAYS_DIR).glob("t-g0.*"):
        page.unlink()
    cut = tmp_path / "records" / "t-g1.jsonl"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    whole = tmp_path / "records" / "t-g2.jsonl"
    whole.write_text("".join(whole.read_text().splitlines(keepends=True)[:-1]))
    warnings: list[str] = []
    assert write_static_replays(tmp_path, rows, warnings.append) == {
        g: f"replays/{g}.html" for g in ("t-g1", "t-g2", "t-g3")}
    assert len(warnings) == 3, warnings
    assert warnings[0] == "game t-g0: its record records/t-g0.jsonl cannot be read (no such file); no replay page"
    assert warnings[1].startswith("game t-g1: its record records/t-g1.jsonl cannot be read (line "), warnings[1]
    assert warnings[1].endswith("); its replay page shows the record as it was"), warnings[1]
    assert warnings[2] == ("game t-g2: its record records/t-g2.jsonl cannot be read (it ends before its seed "
                           "line: cut short); its replay page shows the record as it was")


@pytest.mark.slow
def test_a_run_warns_of_each_unreadable_record_and_still_succeeds(tmp_path: Path) -> None:
    """The reviewer's drill on real games: a record removed with its pages, another cut in half; the
    same command publishes again, exit 0, with one warning line for each of the two games."""
    cfg = tmp_path / "real.toml"
    bot = ('command = ["{python}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", '
           f'"warning"]\ncwd = "{ROOT}"\nsandbox = "none"\n')
    cfg.write_text('[tournament]\nname = "real"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 2\n'
                   'output = "out"\n[tournament.rules]\ntarget = 7\n'
                   f'[[bots]]\nname = "r1"\n{bot}[[bots]]\nname = "r2"\n{bot}')
    out = tmp_path / "out"
    first = run(cfg, simulate=False)
    assert first.returncode == 0, first.stdout + first.stderr
    gone, cut = "real-p0-1-g0", "real-p0-1-g1"
    (out / "records" / f"{gone}.jsonl").unlink()
    for page in (out / REPLAYS_DIR).glob(f"{gone}.*"):
        page.unlink()
    record = out / "records" / f"{cut}.jsonl"
    half = record.read_bytes()[: record.stat().st_size // 2]
    # Cut inside a line: a cut that fell just after a newline (the games are random, so now and then
    # it did, in CI) leaves whole lines, read as a record cut short before its seed line instead.
    record.write_bytes(half[:-2] if half.endswith(b"\n") else half)
    done = run(cfg, simulate=False)
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [ln for ln in done.stdout.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 2, done.stdout
    assert warned[0] == f"warning: game {gone}: its record records/{gone}.jsonl cannot be read (no such file); " \
                        "no replay page"
    assert warned[1].startswith(f"warning: game {cut}: its record records/{cut}.jsonl cannot be read (line ")


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



def _mark_schema(db_path: Path, version: str) -> None:
    """Make ``db_path`` a database an arena of storage schema ``version`` wrote (its meta row ``schema``)."""
    import sqlite3

    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (version,))
    db.close()  # the last connection: its WAL is checkpointed into the file


def test_a_store_or_book_of_another_schema_is_refused_not_misread(tmp_path: Path) -> None:
    """A store written by a newer arena (storage schema 2) was opened by this one as its own: its games
    misread, and new rows written in this schema's form. It is refused, one line naming the file and
    both versions, the file unchanged; the competition's book alike. A store of this schema plays on."""
    cfg = config(tmp_path)
    out = tmp_path / "out"
    assert run(cfg).returncode == 0
    _mark_schema(out / DB_NAME, "2")
    before = (out / DB_NAME).read_bytes()
    (out / "games.jsonl").unlink()
    done = run(cfg)
    assert done.returncode == 1, done.stderr + done.stdout
    assert one_line(done) == (f"error: {out / DB_NAME}: written by a newer arena (storage schema 2; this arena reads "
                              "schema 1 only): run the arena version that wrote it; nothing was changed")
    assert (out / DB_NAME).read_bytes() == before and not (out / "games.jsonl").exists()
    web = arena("web", str(out), "--port", "1")  # arena web reads it read-only: it checks before serving
    assert web.returncode == 1, web.stderr + web.stdout
    assert one_line(web) == one_line(done)
    _mark_schema(out / DB_NAME, "1")
    assert run(cfg).returncode == 0 and (out / "games.jsonl").exists()
    league = tmp_path / "league"
    competitor = ("competitor", "add", str(ROOT / "examples" / "competition.toml"), "--output", str(league))
    assert arena(*competitor, "ann").returncode == 0
    _mark_schema(league / "competition.sqlite", "2")
    done = arena(*competitor, "bob")
    assert done.returncode == 1, done.stderr + done.stdout
    assert one_line(done) == (f"error: {league / 'competition.sqlite'}: written by a newer arena (storage schema 2; "
                              "this arena reads schema 1 only): run the arena version that wrote it; nothing was "
                              "changed")

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
