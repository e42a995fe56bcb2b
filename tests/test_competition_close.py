"""`arena competition close CONFIG`: a competition's league, over for good, reveals its master seed, and
`python -m arena.audit OUTPUT` ties every league game's deal to the commitment the league published
(docs/competition.md, step 8 and "Audit"). Before, the league's seed was never revealed: its games could
be checked against their records and the schedule, never against the seed.

One real `arena serve` (embedded referee, instant bots, a blind league of 3 bots) plays its games and
serves its pages; while it serves, no page, API answer or file a competitor can read holds the seed. The
competition is frozen and the league closed; each test then works on a copy of the closed folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.configs import INSTANT, bots_toml

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

LEAGUE = ('[tournament]\nname = "cup"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\noutput = "out"\n'
          'blind_seats = true\n[tournament.rules]\ntarget = 3\n'
          '[tournament.time_control]\njoin_ms = 20000\ngrace_ms = 1000\n')
#: The same league with a [competition] table: what the host's competition commands read (the league's
#: identity, its rules, time control, players and name, is the same; the table is not part of it).
COMPETITION = '[competition]\nbase_python = "x"\nbase_node = "x"\n'
GAMES = 6  # 3 pairings, one duplicate pair each


def arena(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def audit(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.audit", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Closed:
    """The played league: its folder (``base``: the configs and ``out``), what was seen while it was served
    and before the close, and what the close printed."""

    base: Path
    seed: str  # the league's master seed, read from its store while it was served
    pages: dict[str, str]  # path -> body, every page and API answer while served
    seed_files: dict[str, int]  # files of the output folder holding the seed while served -> their mode
    audit_before: subprocess.CompletedProcess[str]
    not_frozen: subprocess.CompletedProcess[str]
    close: subprocess.CompletedProcess[str]


def _crawl(web: str) -> dict[str, str]:
    """Every page and API answer of the served league (each game's, its record's, its replay's)."""
    paths = ["/", "/_board", "/_games", "/live", "/me", "/api/ratings", "/api/games?per_page=200", "/api/live",
             "/events"]
    pages: dict[str, str] = {}
    with httpx.Client(base_url=web, timeout=10) as client:
        for path in paths:
            if path == "/events":  # the live-update stream: its first event
                with client.stream("GET", path) as r:
                    pages[path] = next(r.iter_text())
                continue
            pages[path] = client.get(path).text
        for game in json.loads(pages["/api/games?per_page=200"])["games"]:
            gid = game["game_id"]
            for path in (f"/games/{gid}", f"/api/games/{gid}", f"/api/games/{gid}/record",
                         f"/api/games/{gid}/record?seat=0", f"/games/{gid}?seat=1"):
                pages[path] = client.get(path).text
    return pages


def _files_holding(out: Path, seed: str) -> dict[str, int]:
    """The files under ``out`` whose bytes hold ``seed`` (hex, or its 32 raw bytes) -> their mode."""
    found = {}
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if seed.encode() in data or bytes.fromhex(seed) in data:
                found[str(path.relative_to(out))] = path.stat().st_mode & 0o777
    return found


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Closed:
    base = tmp_path_factory.mktemp("close")
    bots = bots_toml("a", "b", "c", command=INSTANT, cwd=json.dumps(str(ROOT / "arena")), sandbox='"none"')
    (base / "league.toml").write_text(LEAGUE + bots)
    (base / "comp.toml").write_text(LEAGUE + COMPETITION + bots)
    out, log = base / "out", base / "serve.log"
    with open(log, "w") as file:
        proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(base / "league.toml"), "--bootstrap",
                                 "20", "--web", "0"], cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            text = log.read_text()
            done = (out / "ratings.json").is_file() and json.loads((out / "ratings.json").read_text())[
                "tournament"]["played"] == GAMES
            if done and "web: " in text:
                break
            time.sleep(0.2)
        web = next(ln for ln in text.splitlines() if ln.startswith("web: ")).split()[1].rstrip("/")
        with sqlite3.connect(out / "arena.sqlite") as db:
            seed = str(db.execute("SELECT value FROM meta WHERE key = 'master_seed'").fetchone()[0])
        pages = _crawl(web)
        seed_files = _files_holding(out, seed)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
    audit_before = audit(out)
    assert arena("competitor", "add", str(base / "comp.toml"), "ann").returncode == 0
    not_frozen = arena("competition", "close", str(base / "comp.toml"))
    assert arena("competition", "freeze", str(base / "comp.toml")).returncode == 0
    close = arena("competition", "close", str(base / "comp.toml"), "--bootstrap", "20")
    return Closed(base, seed, pages, seed_files, audit_before, not_frozen, close)


@pytest.fixture
def out(closed: Closed, tmp_path: Path) -> Path:
    """A copy of the closed league (configs and output folder) to tamper with."""
    shutil.copytree(closed.base, tmp_path / "t")
    for cfg in ("league.toml", "comp.toml"):  # the configs name the output folder relative to themselves
        assert 'output = "out"' in (tmp_path / "t" / cfg).read_text()
    return tmp_path / "t" / "out"


def test_the_seed_reaches_no_page_api_answer_or_readable_file_while_the_league_is_served(closed: Closed) -> None:
    assert len(closed.pages) == 9 + 5 * GAMES, sorted(closed.pages)
    assert all(closed.seed not in body for body in closed.pages.values()), [
        p for p, body in closed.pages.items() if closed.seed in body]
    assert "never reveals it while it plays" in closed.pages["/_board"]
    assert json.loads(closed.pages["/api/ratings"])["tournament"]["master_seed"] is None
    # only the store holds it (and its write-ahead log), its owner's alone, in the owner's folder
    assert closed.seed_files and set(closed.seed_files) <= {"arena.sqlite", "arena.sqlite-wal"}, closed.seed_files
    assert all(mode & 0o077 == 0 for mode in closed.seed_files.values()), closed.seed_files
    assert (closed.base / "out").stat().st_mode & 0o077 == 0


def test_before_the_close_the_audit_says_the_seed_is_not_revealed_yet_and_what_it_checked(closed: Closed) -> None:
    done = closed.audit_before
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == (
        f"OK {GAMES} games, {GAMES} records verified; the league's master seed is not revealed yet (`arena "
        "competition close` reveals it once the league is over): its games were checked against their records "
        "and the schedule (sides, pairs, first dealers), their deal seeds not against the commitment\n")


def test_the_league_is_closed_only_once_the_competition_is_frozen(closed: Closed) -> None:
    done = closed.not_frozen
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the competition is not frozen: run `arena competition freeze CONFIG` first (closing the league "
        "publishes its master seed, and with it the deal of any game it would play)"]


def test_the_close_reveals_the_committed_seed_and_the_audit_ties_every_deal_to_it(closed: Closed) -> None:
    out = closed.base / "out"
    done = closed.close
    assert done.returncode == 0, done.stderr
    assert done.stdout == closed.seed + "\n"
    committed = json.loads((out / "commitment.json").read_text())["master_seed_sha256"]
    assert hashlib.sha256(bytes.fromhex(closed.seed)).hexdigest() == committed
    assert f"SHA-256 {committed}" in done.stderr and "refuse this folder from now on" in done.stderr
    told = json.loads((out / "ratings.json").read_text())["tournament"]
    assert (told["master_seed"], told["league_closed"], told["played"]) == (closed.seed, True, GAMES)
    assert "league" not in told
    assert closed.seed in (out / "leaderboard.html").read_text()
    checked = audit(out)
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr
    assert checked.stdout == (f"OK {GAMES} games, {GAMES} records verified; every deal seed from the committed "
                              "master seed\n")
    from arena.web.data import WebData

    facts = WebData(out).facts()  # what `arena web OUTPUT` shows of it now
    assert (facts["master_seed"], facts.get("league_closed"), facts.get("league")) == (closed.seed, True, None)


def test_a_tampered_deal_of_a_closed_league_fails_the_audit(out: Path) -> None:
    """The host deals one stored game from another seed (its store's seed changed, the board published again
    by a second close): the audit names the game and the pair whose seed it is not."""
    with sqlite3.connect(out / "arena.sqlite") as db:
        db.execute("UPDATE games SET seed = ? WHERE game_id = 'cup-p0-2-g1'", ("ab" * 32,))
    again = arena("competition", "close", str(out.parent / "comp.toml"), "--bootstrap", "20")
    assert again.returncode == 0, again.stderr
    n = next(k for k, line in enumerate((out / "games.jsonl").read_text().splitlines(), 1)
             if json.loads(line)["game_id"] == "cup-p0-2-g1")
    done = audit(out)
    assert (done.returncode, done.stdout) == (1, ""), done.stdout
    assert done.stderr.splitlines()[0] == (f"FAIL games.jsonl line {n} (cup-p0-2-g1): deal seed {'ab' * 32}, not the "
                                           "one the committed master seed gives pair 0 of pairing 1 (its second game)")


def test_a_closed_league_is_neither_served_nor_run_again(out: Path) -> None:
    """Anyone can compute every future deal from the published seed: `arena serve` (and `arena run` of the same
    folder) refuse it with one line, exit 2, before any referee or bot starts; the close itself may be run
    again (it publishes the same)."""
    for command in ("serve", "run"):
        done = arena(command, str(out.parent / "league.toml"))
        assert (done.returncode, done.stdout if command == "serve" else "") == (2, ""), done.stdout + done.stderr
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"error: the league in {out} is closed (`arena competition close`, "), line
        assert line.endswith("its master seed is published, so anyone could compute the deals of any game played "
                             "from it; it plays no more games (its board, games and records stand as published: "
                             "`python -m arena.audit` checks them; a new league needs another output folder)"), line
    assert json.loads((out / "ratings.json").read_text())["tournament"]["played"] == GAMES
    again = arena("competition", "close", str(out.parent / "comp.toml"), "--bootstrap", "20")
    assert again.returncode == 0 and audit(out).returncode == 0, again.stderr


def test_a_half_played_last_pair_of_a_closed_league_is_counted_not_failed(out: Path) -> None:
    """A league stopped (or an entrant retired) between a pair's two games leaves that pair half played, and a
    closed league plays it no more: the audit counts it; a half pair before its pairing's last still fails."""
    rows = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    (out / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["game_id"] != "cup-p1-2-g1"))
    done = audit(out)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.endswith("; 1 pair(s) of the closed league left half played, each its pairing's last (the "
                                "league stopped, or an entrant left, between the pair's two games)\n"), done.stdout
    ratings = json.loads((out / "ratings.json").read_text())
    ratings["tournament"].pop("league_closed")  # a finished `arena run`: every pair is played in full
    (out / "ratings.json").write_text(json.dumps(ratings))
    assert audit(out).stderr.splitlines() == [
        "FAIL games.jsonl: cup-p1-2-g1 is not published, yet its twin cup-p1-2-g0 is (a duplicate pair is two games)"]


def test_the_close_waits_for_arena_serve_to_stop(out: Path) -> None:
    """The close takes the league folder's lock, as the final does: beside a running `arena serve` (whose lock
    this process holds here) it refuses with one line, exit 1, and reveals nothing more."""
    from arena.tournament.lock import lock_output

    before = (out / "ratings.json").read_text()
    with lock_output(out):
        done = arena("competition", "close", str(out.parent / "comp.toml"))
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: output folder {out} is in use by another arena (pid {os.getpid()} "), line
    assert line.endswith("; stop `arena serve` first: the league is closed once it stopped"), line
    assert (out / "ratings.json").read_text() == before
