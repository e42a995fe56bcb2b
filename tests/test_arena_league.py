"""A league that grows, and `arena serve` (docs/arena.md, "A league that grows"), with real processes.

`arena run` again after adding a bot plays only the new pairings (old rows unchanged, same master
seed); raising games_per_pairing plays only the missing pairs; a new version is a new entrant and the
old one keeps its results; a changed rule is refused naming the field. `arena serve` killed with
SIGKILL and restarted while remote workers stay up: they dial in again, nothing is lost or doubled;
SIGHUP adds a bot; SIGTERM stops cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

HEAD = """
[tournament]
name = "lg"
players = 2
games_per_pairing = {gpp}
concurrency = 2
output = "out"
{extra}
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
"""


def bot(name: str, version: str = "1", mode: str = "per_game") -> str:
    return (f'\n[[bots]]\nname = "{name}"\nversion = "{version}"\nmode = "{mode}"\n'
            f'command = ["{{python}}", "-m", "arena.testing.instant_bot"]\ncwd = "{ROOT}"\n')


def remote(name: str) -> str:
    return f'\n[[bots]]\nname = "{name}"\nremote = true\n'


def arena(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def rows(tmp: Path) -> dict[str, dict]:
    out = {}
    for line in (tmp / "out" / "games.jsonl").read_text().splitlines():
        g = json.loads(line)
        assert g["game_id"] not in out, f"{g['game_id']} stored twice"
        out[g["game_id"]] = g
    return out


def test_the_league_grows_and_keeps_every_stored_result(tmp_path: Path) -> None:
    cfg = tmp_path / "lg.toml"
    cfg.write_text(HEAD.format(gpp=2, extra="") + bot("one") + bot("two"))
    first = arena("run", str(cfg), "--no-progress", "--bootstrap", "50")
    assert first.returncode == 0, first.stderr
    before = rows(tmp_path)
    assert len(before) == 2
    seed = json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["master_seed"]

    cfg.write_text(HEAD.format(gpp=2, extra="") + bot("one") + bot("two") + bot("three"))
    grown = arena("run", str(cfg), "--no-progress", "--bootstrap", "50")
    assert grown.returncode == 0, grown.stderr
    assert "6 games scheduled, 2 already played" in grown.stdout
    after = rows(tmp_path)
    assert {k: after[k] for k in before} == before  # old rows unchanged
    assert len(after) == 6 and all("three" in (g["a"], g["b"]) for k, g in after.items() if k not in before)
    assert json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["master_seed"] == seed

    cfg.write_text(HEAD.format(gpp=4, extra="") + bot("one") + bot("two") + bot("three"))
    more = arena("run", str(cfg), "--no-progress", "--bootstrap", "50")
    assert more.returncode == 0 and "12 games scheduled, 6 already played" in more.stdout, more.stdout
    after4 = rows(tmp_path)
    assert {k: after4[k] for k in after} == after and len(after4) == 12

    cfg.write_text(HEAD.format(gpp=4, extra="") + bot("one", version="2") + bot("two") + bot("three"))
    v2 = arena("run", str(cfg), "--no-progress", "--bootstrap", "50")
    assert v2.returncode == 0, v2.stderr
    final = rows(tmp_path)
    new = [g for k, g in final.items() if k not in after4]
    assert {k: final[k] for k in after4} == after4
    assert len(new) == 8 and all("one@2" in (g["a"], g["b"]) for g in new)
    published = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert published["publication"] == "final" and published["intervals"] == "bootstrap"  # arena run: the bootstrap
    assert published["bootstrap"] == 50
    assert set(published["ratings"]) == {"one", "one@2", "two", "three"}  # the old version keeps its rating
    assert published["tournament"]["entrants"] == ["one", "two", "three", "one@2"]
    assert published["ratings"]["one"]["games"] == 8 and published["ratings"]["one@2"]["games"] == 8
    # every entrant's version, the old one's too (its row showed none), by label: the live pages' facts
    # named the config's bots, so "one" showed the new version 2 and "one@2" none
    versions = {"one": "1", "two": "1", "three": "1", "one@2": "2"}
    assert published["tournament"]["bots"] == versions, published["tournament"]
    db = sqlite3.connect(tmp_path / "out" / "arena.sqlite")
    try:
        (raw,) = db.execute("SELECT value FROM meta WHERE key = 'public_facts'").fetchone()
    finally:
        db.close()
    assert json.loads(raw)["bots"] == versions, raw
    # the progress counts the old version's 8 games among the scheduled too: the board said "20 of 12 games
    # played" (the schedule of the config's bots now, 12, beside every stored game)
    assert published["tournament"]["played"] == published["tournament"]["scheduled"] == 20, published["tournament"]
    assert json.loads(raw)["scheduled"] == 20, raw
    board = (tmp_path / "out" / "leaderboard.html").read_text()
    for label, version in versions.items():
        assert f'<td class="l bot">{label}</td><td class=l>{version}</td>' in board, label

    cfg.write_text(HEAD.format(gpp=4, extra="[tournament.rules]\ntarget = 7") + bot("one", "2") + bot("two"))
    refused = arena("run", str(cfg), "--no-progress")
    assert refused.returncode == 2 and "tournament.rules.target: 14 -> 7" in refused.stderr, refused.stderr
    assert rows(tmp_path) == final


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_rows(tmp: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> dict[str, dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        path = tmp / "out" / "games.jsonl"
        if path.exists():
            try:
                got = rows(tmp)
            except json.JSONDecodeError:  # caught mid-write (it is replaced, but be safe)
                got = {}
            if len(got) >= n:
                return got
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} games stored after {timeout} s")


def serve(cfg: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "20"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_serve_killed_and_restarted_while_remote_workers_stay_up(tmp_path: Path) -> None:
    port = free_port()
    cfg = tmp_path / "lg.toml"
    head = HEAD.format(gpp=24, extra=f'lobby = "127.0.0.1:{port}"\nno_show_s = 120')
    cfg.write_text(head + remote("east") + remote("west"))
    tokens = {n: arena("token", str(cfg), n).stdout.strip() for n in ("east", "west")}
    workers = [
        subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                          f"127.0.0.1:{port}", "--token", tokens[n], "--name", n, "--workers", "2", "--reconnect",
                          "60", "--log-level", "warning"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / f"{n}.err", "w"))  # noqa: SIM115 - closed with the process
        for n in ("east", "west")
    ]

    def workers_up() -> bool:
        logs = {n: (tmp_path / f"{n}.err").read_text()[-600:] for n in ("east", "west")}
        assert all(w.poll() is None for w in workers), ([w.poll() for w in workers], logs)
        return True

    procs: list[subprocess.Popen[str]] = []
    try:
        procs.append(serve(cfg))
        wait_rows(tmp_path, 4, procs[0])
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(10)
        killed = rows(tmp_path)
        assert workers_up()  # the workers stay up
        procs.append(serve(cfg))
        done = wait_rows(tmp_path, 24, procs[1], timeout=180)
        assert len(done) == 24 and {k: done[k] for k in killed} == killed
        assert all(g["terminations"] == ["normal", "normal"] for g in done.values()), done
        # the league grows while served: a per-game bot joins on SIGHUP
        cfg.write_text(head + remote("east") + remote("west") + bot("third"))
        procs[1].send_signal(signal.SIGHUP)
        grown = wait_rows(tmp_path, 24 + 2 * 24, procs[1], timeout=240)
        assert {k: grown[k] for k in done} == done
        procs[1].send_signal(signal.SIGTERM)
        out, err = procs[1].communicate(timeout=60)
        assert procs[1].returncode == 0, out + err
        assert "stopped: every stored game is kept" in out and "Traceback" not in err
        assert workers_up()
        ratings = json.loads((tmp_path / "out" / "ratings.json").read_text())
        assert ratings["tournament"]["master_seed"] is None  # a served league never reveals its seed
    finally:
        for p in [*procs, *workers]:
            if p.poll() is None:
                p.kill()
            p.wait(10)
        if os.environ.get("H10_DEBUG"):
            print(procs[-1].stderr.read() if procs and procs[-1].stderr else "")
