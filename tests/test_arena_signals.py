"""``arena run`` stopped by a signal (arena/cli/interrupt.py, arena/tournament/runner.py ``run_games``).

SIGTERM (a supervisor's stop: docker, compose, systemd) and SIGHUP (a closed terminal) do what Ctrl-C
does: no new game starts, the games in flight finish and are stored, everything the run started is
stopped and removed, one line, exit status 128 + the signal's number; the same command then resumes.
Real processes: sandboxed process bots on the embedded referee, and simulated games.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from arena.config import load_config
from arena.tournament.lock import LOCK_NAME
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
from arena.tournament.schedule import ScheduledGame
from tests.bots.nasty import live_with_tag
from tests.conftest import default_signals, require, stored_games
from tests.test_arena_store import config_file as simulated_config

ROOT = Path(__file__).resolve().parent.parent

#: A bot that answers each decision after a pause (games last a few seconds: a signal lands mid-game).
SLOW_BOT = """
import time

from sdk.bot import Bot


class Slow(Bot):
    name = "slow"

    def act(self, ctx):
        time.sleep(0.02)
        return ctx.legal[0]
"""

#: Its command line carries ``tag`` (as its version: seen in ``ps``) to find leftovers.
CONFIG = """
[tournament]
name = "signalled"
players = 2
games_per_pairing = {gpp}
concurrency = 2
master_seed = "{seed}"
output = "runs/out"
[tournament.time_control]
join_ms = 20000
[[bots]]
name = "a"
command = ["{{python}}", "-m", "sdk.run", "slow_bot:Slow", "--version", "{tag}"]
cwd = "bots"
[[bots]]
name = "b"
command = ["{{python}}", "-m", "sdk.run", "slow_bot:Slow", "--version", "{tag}"]
cwd = "bots"
"""


def config_file(tmp_path: Path, tag: str, gpp: int = 8) -> Path:
    (tmp_path / "bots").mkdir(exist_ok=True)
    (tmp_path / "bots" / "slow_bot.py").write_text(SLOW_BOT)
    (tmp_path / "runs").mkdir(exist_ok=True)
    path = tmp_path / "signalled.toml"
    path.write_text(CONFIG.format(gpp=gpp, seed="5a" * 32, tag=tag))
    return path


def arena_run(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "arena.cli", "run", str(config), "--no-progress", "--bootstrap", "0", *extra]


def stored(out: Path) -> int:
    return stored_games(out / "arena.sqlite")


def bot_cgroups(pid: int) -> list[str]:
    """Bot cgroups (``allfours-<pid>-<n>-…``, any hierarchy) of the arena process ``pid``; its own leaf
    ``allfours-<pid>-arena`` (it lives there) is not one."""
    found = []
    for where, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith(f"allfours-{pid}-") and d != f"allfours-{pid}-arena":
                found.append(os.path.join(where, d))
    return found


def test_sigterm_mid_run_finishes_the_games_in_flight_and_leaves_nothing(tmp_path: Path) -> None:
    """SIGTERM to a real `arena run` mid-tournament: it died at once (exit 143 from the kernel, no
    message), losing the games in flight and leaving its sandbox's socket folder, bot processes and
    cgroups, the store's -wal/-shm and its lock description. Now: exit 143 and one line, every game
    played is stored (a record file for each row and a row for each record file), nothing left in /tmp,
    no bot process or cgroup, no lock description; the same command then plays the rest, each game once."""
    require(shutil.which("bwrap") is not None, "bwrap is not installed (Debian's bubblewrap: scripts/setup.sh)")
    tag = f"allfours-signalled-{uuid.uuid4().hex}"
    cfg = config_file(tmp_path, tag)
    out, total = tmp_path / "runs" / "out", 8
    proc = subprocess.Popen(arena_run(cfg), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while stored(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stdout + stderr
    assert "Traceback" not in stdout + stderr, stderr
    said = [ln for ln in (stdout + stderr).splitlines() if ln.startswith("interrupted")]
    assert said == ["interrupted (SIGTERM): stored games are kept; run the same command to resume"], stdout + stderr
    assert sorted(p.name for p in out.glob("arena.sqlite*")) == ["arena.sqlite"]  # no -wal, no -shm
    assert not (out / LOCK_NAME).exists()
    assert list(Path(tempfile.gettempdir()).glob(f"allfours-{proc.pid}-*")) == []
    assert live_with_tag(tag) == [] and bot_cgroups(proc.pid) == []
    rows = _rows(out)  # (a read-only reader makes -wal and -shm files of its own: looked at first)
    assert 0 < len(rows) < total, len(rows)
    assert sorted(r["record_path"] for r in rows) == sorted(f"records/{p.name}" for p in (out / "records").iterdir())
    again = subprocess.run(arena_run(cfg), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(rows)} already played" in again.stdout, again.stdout
    ids = [r["game_id"] for r in _rows(out)]
    assert len(ids) == len(set(ids)) == total


def _rows(out: Path) -> list[dict[str, str]]:
    con = sqlite3.connect(f"file:{out / 'arena.sqlite'}?mode=ro", uri=True, timeout=5)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT game_id, record_path FROM games")]
    finally:
        con.close()


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT], ids=["SIGHUP", "SIGINT"])
def test_sighup_and_sigint_stop_the_run_as_ctrl_c_does(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGHUP (the terminal closed) killed `arena run` at once; SIGINT is Ctrl-C. Both: the games in flight
    are stored, one line naming the signal, exit status 128 + its number (129, 130), the lock's
    description removed; the same command then finishes the tournament."""
    cfg = simulated_config(tmp_path)
    out = tmp_path / "out"
    run = arena_run(cfg, "--simulate", "0.3")
    proc = subprocess.Popen(default_signals(run), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while stored(out) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, stdout + stderr
    lines = [ln for ln in (stdout + stderr).splitlines() if not ln.startswith("tournament resume:")]
    assert lines == [f"interrupted ({sig.name}): stored games are kept; run the same command to resume"], lines
    assert 0 < stored(out) < 36 and not (out / LOCK_NAME).exists()
    again = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len({json.loads(x)["game_id"] for x in (out / "games.jsonl").read_text().splitlines()}) == 36


def test_games_in_flight_when_the_loop_is_interrupted_are_stored(tmp_path: Path) -> None:
    """Ctrl-C (a KeyboardInterrupt in the run loop's thread, here raised by ``on_result`` for the first
    game) waited for the games in flight (leaving the thread pool waits for them) and threw their results
    away: played, never stored. Now they are stored before the interrupt goes on."""
    cfg = simulated_config(tmp_path)
    t = open_tournament(load_config(cfg))
    release = threading.Event()
    started: list[str] = []

    class Held(SimulatedRunner):
        def play(self, game: ScheduledGame) -> GameResult:
            started.append(game.game_id)
            if game.game_id != t.schedule[0].game_id:
                assert release.wait(60)  # in flight until the interrupt
            return super().play(game)

    def on_result(result: GameResult, written: bool) -> None:
        if not release.is_set():
            release.set()
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_games(t.schedule, Held(), t.store, concurrency=3, on_result=on_result)
        assert len(started) == 3  # the first game and two of other pairs (twins apart: run_games)
        assert sorted(t.store.stored_ids()) == sorted(started)
    finally:
        t.store.close()
