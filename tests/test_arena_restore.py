"""`arena restore BACKUP OUTPUT [--keep-close]` (docs/arena.md, "Backup and restore").

Before it the documented restore was `cp -a BACKUP OUTPUT`, and a backup made before the competition's
freeze and the league's close (`arena competition close`) put back that way did not know of them: `arena
serve` took the folder as an open league, scheduled the grown league's games and played them from the master
seed the close had published (anyone could compute their deals), its ratings.json showed no seed and no
close, and the book was not frozen. Now the restore refuses such a backup with one line, changing nothing,
unless `--keep-close`, which restores it closed and frozen still.

One real `arena serve` (embedded referee, instant bots) plays a league of two bots; it is backed up
(`before`), a competitor added, the competition frozen, the league closed, and backed up again (`after`).
Each test works on a copy of that folder; `arena serve` is then started with the league grown to three
bots (games it would schedule). Nothing is timed: waits poll with a bounded deadline.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.configs import INSTANT, bots_toml

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

LEAGUE = ('[tournament]\nname = "cup"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\noutput = "out"\n'
          '[tournament.rules]\ntarget = 3\n[tournament.time_control]\njoin_ms = 20000\ngrace_ms = 1000\n')
COMPETITION = '[competition]\nbase_python = "x"\nbase_node = "x"\n'
GAMES = 2  # one pairing, one duplicate pair


def bots(*names: str) -> str:
    return bots_toml(*names, command=INSTANT, cwd=json.dumps(str(ROOT / "arena")), sandbox='"none"')


def arena(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def meta(db: Path, key: str) -> str | None:
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    finally:
        con.close()
    return None if row is None else str(row[0])


def stored(db: Path) -> int:
    con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT count(*) FROM games").fetchone()[0])
    finally:
        con.close()


@dataclass
class Closed:
    """The closed league's folder ``base`` (configs, ``out``, backups ``before`` and ``after`` the close), the
    seed the close printed and the final seed the freeze drew."""

    base: Path
    seed: str
    final_seed: str


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Closed:
    base = tmp_path_factory.mktemp("restore")
    (base / "league.toml").write_text(LEAGUE + bots("a", "b"))
    (base / "comp.toml").write_text(LEAGUE + COMPETITION + bots("a", "b"))
    out, log = base / "out", base / "serve.log"
    with open(log, "w") as file:
        proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(base / "league.toml")], cwd=ROOT,
                                stdout=file, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while not ((out / "arena.sqlite").is_file() and (out / "ratings.json").is_file()
                   and json.loads((out / "ratings.json").read_text())["tournament"]["played"] == GAMES):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    made = arena("backup", str(out), str(base / "before"))
    assert made.returncode == 0, made.stderr
    assert arena("competitor", "add", str(base / "comp.toml"), "ann").returncode == 0
    assert arena("competition", "freeze", str(base / "comp.toml")).returncode == 0
    close = arena("competition", "close", str(base / "comp.toml"))
    assert close.returncode == 0, close.stderr
    made = arena("backup", str(out), str(base / "after"))
    assert made.returncode == 0, made.stderr
    final_seed = meta(out / "competition.sqlite", "final_seed")
    assert final_seed is not None
    return Closed(base, close.stdout.strip(), final_seed)


@pytest.fixture
def base(closed: Closed, tmp_path: Path) -> Path:
    """A copy of the closed league's folder, its config grown to three bots (``league.toml``)."""
    shutil.copytree(closed.base, tmp_path / "t", symlinks=True)
    (tmp_path / "t" / "league.toml").write_text(LEAGUE + bots("a", "b", "c"))
    return tmp_path / "t"


def assert_serve_refuses_the_closed_league(base: Path) -> None:
    """`arena serve` of the grown league: refused at once (exit 2, the closed league's line), no game played."""
    served = arena("serve", str(base / "league.toml"), timeout=120)
    assert (served.returncode, served.stdout) == (2, ""), served.stdout + served.stderr
    lines = served.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the league in {base / 'out'} is closed (`arena "
                                                   "competition close`"), served.stderr
    assert stored(base / "out" / "arena.sqlite") == GAMES


def test_a_backup_from_before_the_close_is_refused_with_one_line_and_nothing_changes(base: Path) -> None:
    out = base / "out"
    before = sorted(p.name for p in base.iterdir()), (out / "ratings.json").read_bytes()
    done = arena("restore", str(base / "before"), str(out))
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {base / 'before'} was made before the freeze ("), lines[0]
    assert "; the league's close (" in lines[0] and "would deal games again from its published master seed" in lines[0]
    assert lines[0].endswith("nothing was changed (`arena restore --keep-close` restores it keeping these, losing "
                             "what came after the backup)"), lines[0]
    assert (sorted(p.name for p in base.iterdir()), (out / "ratings.json").read_bytes()) == before
    assert meta(out / "arena.sqlite", "league_closed") is not None
    assert_serve_refuses_the_closed_league(base)


def test_keep_close_restores_the_backup_closed_and_frozen_and_keeps_the_replaced_folder(
        closed: Closed, base: Path) -> None:
    out = base / "out"
    done = arena("restore", str(base / "before"), str(out), "--keep-close")
    assert done.returncode == 0, done.stdout + done.stderr
    asides = sorted(base.glob("out.replaced-*"))
    assert len(asides) == 1, sorted(p.name for p in base.iterdir())
    assert done.stdout.startswith(f"restore: {out} from {base / 'before'}: arena.sqlite ("), done.stdout
    assert f"the folder it replaced is at {asides[0]}; kept from it: the freeze (its final seed), the league's close" \
        in done.stdout
    assert meta(asides[0] / "arena.sqlite", "league_closed") == meta(out / "arena.sqlite", "league_closed")
    assert meta(out / "competition.sqlite", "final_seed") == closed.final_seed  # the seed committed to
    assert meta(out / "arena.sqlite", "master_seed") == closed.seed
    assert out.stat().st_mode & 0o777 == 0o700 and (out / "arena.sqlite").stat().st_mode & 0o777 == 0o600
    # the backup is read, never written: no -wal/-shm file made beside its databases
    assert not [p.name for p in (base / "before").iterdir() if p.name.endswith(("-wal", "-shm"))]
    assert_serve_refuses_the_closed_league(base)
    # closed still: the close run again publishes the same seed, the restored board now showing it
    again = arena("competition", "close", str(base / "comp.toml"))
    assert (again.returncode, again.stdout.strip()) == (0, closed.seed), again.stderr
    assert json.loads((out / "ratings.json").read_text())["tournament"]["league_closed"] is True


def test_a_backup_from_after_the_close_is_restored_as_it_is(base: Path) -> None:
    out = base / "out"
    (out / "arena.sqlite").write_bytes(b"damaged")  # what a restore is for; its published ratings.json says closed
    done = arena("restore", str(base / "after"), str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept from it" not in done.stdout
    assert_serve_refuses_the_closed_league(base)


def test_the_published_close_is_enough_when_the_store_is_lost(base: Path) -> None:
    out = base / "out"
    for name in ("arena.sqlite", "arena.sqlite-wal", "arena.sqlite-shm", "competition.sqlite"):
        (out / name).unlink(missing_ok=True)
    done = arena("restore", str(base / "before"), str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "was made before the league's close (" in done.stderr and "freeze" not in done.stderr, done.stderr


def test_a_restore_into_a_missing_folder_and_over_a_serving_one(base: Path) -> None:
    out = base / "out"
    shutil.rmtree(out)
    done = arena("restore", str(base / "before"), str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replaced" not in done.stdout and stored(out / "arena.sqlite") == GAMES
    (base / "league.toml").write_text(LEAGUE + bots("a", "b"))  # the open league of the backup, served
    log = base / "serve.log"
    with open(log, "w") as file:
        proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(base / "league.toml")], cwd=ROOT,
                                stdout=file, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while "serving:" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        busy = arena("restore", str(base / "after"), str(out))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    assert (busy.returncode, busy.stdout) == (1, ""), busy.stdout + busy.stderr
    assert len(busy.stderr.strip().splitlines()) == 1 and "is in use by another arena" in busy.stderr, busy.stderr
    assert meta(out / "arena.sqlite", "league_closed") is None  # untouched: still the backup's open league


def test_a_backup_from_before_the_final_is_refused_and_keep_close_keeps_the_played_final(base: Path) -> None:
    """The final is played as `arena run` plays `OUTPUT/final/final.toml` (its own store, its seed revealed at
    its end): here an `arena run` of instant bots in `out/final`, after the backup `after` was made."""
    out = base / "out"
    final = LEAGUE.replace('"cup"', '"cup final"').replace('output = "out"', 'output = "out/final"')
    (base / "final.toml").write_text(final + bots("a", "b"))
    played = arena("run", str(base / "final.toml"), "--no-progress")
    assert played.returncode == 0, played.stdout + played.stderr
    final_seed = json.loads((out / "final" / "ratings.json").read_text())["tournament"]["master_seed"]
    assert final_seed and meta(out / "final" / "arena.sqlite", "finished_at") is not None
    done = arena("restore", str(base / "after"), str(out))
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "was made before the final (its seed is revealed" in \
        done.stderr and "freeze" not in done.stderr and "close (" not in done.stderr, done.stderr
    assert meta(out / "final" / "arena.sqlite", "finished_at") is not None  # nothing changed
    done = arena("restore", str(base / "after"), str(out), "--keep-close")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept from it: the final (final/ as it was)" in done.stdout, done.stdout
    assert meta(out / "final" / "arena.sqlite", "finished_at") is not None
    assert meta(out / "final" / "arena.sqlite", "master_seed") == final_seed
    assert stored(out / "final" / "arena.sqlite") == GAMES
    assert_serve_refuses_the_closed_league(base)


def test_a_backup_from_before_a_disqualification_is_refused_and_keep_close_keeps_it(base: Path) -> None:
    """A host disqualified ann after the last backup: restored as it was, the backup would give her her token,
    her entries' games and ratings back. Refused with one line naming it; with --keep-close restored with
    her disqualification (and her token revoked) carried in."""
    out = base / "out"
    done = arena("competitor", "disqualify", str(base / "comp.toml"), "ann", "--reason", "colluding entries")
    assert done.returncode == 0, done.stderr
    refused = arena("restore", str(base / "after"), str(out))
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "was made before the disqualification of ann (colluding entries: restored, their " \
        "entries would be scheduled and rated again)" in lines[0], refused.stderr
    kept = arena("restore", str(base / "after"), str(out), "--keep-close")
    assert kept.returncode == 0 and "kept from it: the disqualification of ann" in kept.stdout, kept.stdout
    listed = arena("competitor", "list", str(base / "comp.toml"))
    assert listed.stdout.split() == ["ann", "revoked"], listed.stdout  # live in the backup
    con = sqlite3.connect(f"{(out / 'competition.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT competitor, reason, undone_at FROM disqualifications").fetchall()
    finally:
        con.close()
    assert rows == [("ann", "colluding entries", None)]


def test_keep_close_holds_the_remote_tokens_and_the_undo_gives_them_back(base: Path) -> None:
    from arena.competition.book import CompetitionBook
    from arena.lobby.tokens import new_token, token_digest
    from arena.tournament.store import Store

    out, token = base / "out", new_token()

    def keep(entrant: str) -> None:
        with Store(out / "arena.sqlite") as store:
            store.add_token(entrant, token_digest(token))

    with CompetitionBook(out) as book:
        book.add_remote("ann", "annbot", "1", keep)
    assert arena("backup", str(out), str(base / "mid")).returncode == 0
    assert arena("competitor", "disqualify", str(base / "comp.toml"), "ann", "--reason", "colluding").returncode == 0
    kept = arena("restore", str(base / "mid"), str(out), "--keep-close")
    assert kept.returncode == 0 and "the disqualification of ann" in kept.stdout, kept.stdout + kept.stderr
    with Store(out / "arena.sqlite") as store:
        assert store.token_digests() == {}  # live in the backup: revoked again as it is carried in
    undo = arena("competitor", "disqualify", str(base / "comp.toml"), "ann", "--undo")
    assert "annbot@1): 1 token(s) the disqualification revoked are valid again" in undo.stderr, undo.stderr
    with Store(out / "arena.sqlite") as store:
        assert store.token_digests() == {"annbot@1": [token_digest(token)]}
