"""Results store and resume (arena/tournament/store.py, arena/tournament/runner.py): written once; a kill
loses nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.config import load_config
from arena.tournament.runner import DB_NAME, SimulatedRunner, open_tournament, run_games
from arena.tournament.schedule import make_schedule
from arena.tournament.store import Store, StoreMismatch
from tests.configs import bots_toml
from tests.conftest import default_signals, stored_games

SEED = "5e" * 32
CONFIG = """
[tournament]
name = "resume"
players = 4
games_per_pairing = 6
concurrency = 2
%s
output = "out"

""" + bots_toml("a", "b", "c", "d")


def config_file(tmp_path: Path, seed: bool = True) -> Path:
    p = tmp_path / "resume.toml"
    p.write_text(CONFIG % (f'master_seed = "{SEED}"' if seed else ""))
    return p


def test_a_game_is_written_once(tmp_path: Path) -> None:
    schedule = make_schedule("t", ["a", "b"], 2, 2, bytes(32))
    result = SimulatedRunner().play(schedule[0])
    with Store(tmp_path / "s.sqlite") as store:
        assert store.record(result) is True
        assert store.record(result) is False
        replay = SimulatedRunner(strengths={"a": 400}).play(schedule[0])  # same game, other outcome
        assert store.record(replay) is False
        assert store.count() == 1
        assert store.results() == [result]  # when it was stored is the store's, not the game's: not compared
        assert result.stored_at is None and store.results()[0].stored_at is not None
        assert store.pending(schedule) == schedule[1:]
    db = sqlite3.connect(tmp_path / "s.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_store_refuses_another_tournament(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        assert store.claim("f1", "aa" * 32, "c") == "aa" * 32
        assert store.claim("f1", "bb" * 32, "c") == "aa" * 32  # the stored seed wins on resume
        with pytest.raises(StoreMismatch, match="another tournament"):
            store.claim("f2", "aa" * 32, "c")


def test_seedless_config_resumes_with_the_stored_seed(tmp_path: Path) -> None:
    cfg = load_config(config_file(tmp_path, seed=False))
    t1 = open_tournament(cfg)
    run_games(t1.schedule[:5], SimulatedRunner(), t1.store)
    t1.store.close()
    t2 = open_tournament(cfg)
    assert t2.master_seed == t1.master_seed and t2.schedule == t1.schedule
    assert len(t2.store.pending(t2.schedule)) == len(t2.schedule) - 5
    commit = json.loads((cfg.output / "commitment.json").read_text())
    assert commit["master_seed_sha256"] == t1.commitment
    assert t1.master_seed.hex() not in (cfg.output / "commitment.json").read_text()
    t2.store.close()


def test_runner_errors_leave_the_rest_pending(tmp_path: Path) -> None:
    cfg = load_config(config_file(tmp_path))
    t = open_tournament(cfg)

    class Flaky(SimulatedRunner):
        def play(self, game):  # type: ignore[no-untyped-def]
            if game.game_id.endswith("g3"):
                raise ConnectionError("referee went away")
            return super().play(game)

    with pytest.raises(ConnectionError):
        run_games(t.schedule, Flaky(), t.store, concurrency=2)
    assert 0 < t.store.count() < len(t.schedule)
    pending_ids = {g.game_id for g in t.store.pending(t.schedule)}
    assert {g.game_id for g in t.schedule if g.game_id.endswith("g3")} <= pending_ids
    assert not any(i.endswith("g3") for i in t.store.stored_ids())
    t.store.close()


def _arena(config: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "arena.cli",
        "run",
        str(config),
        "--output",
        str(out),
        "--simulate",
        "0.03",
        "--no-progress",
        "--bootstrap",
        "0",
    ]


def _strip(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("match_id", "duration_s")}


@pytest.mark.slow
def test_kill_at_random_points_then_resume(tmp_path: Path) -> None:
    """SIGKILL the real `arena run` command (simulated games) at random moments mid-tournament, rerun
    the same command until it finishes, and compare with an uninterrupted run: same games, each once."""
    cfg = config_file(tmp_path)
    total = 36
    rng = random.Random(20240)
    killed = tmp_path / "killed"
    db = killed / DB_NAME
    counts_at_kill = []
    for _ in range(5):
        before = stored_games(db)
        if before >= total - 2:
            break
        target = rng.randint(before + 1, min(before + 12, total - 1))
        proc = subprocess.Popen(
            _arena(cfg, killed),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 60
        while stored_games(db) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        counts_at_kill.append(stored_games(db))
    assert any(0 < c < total for c in counts_at_kill), counts_at_kill
    done = subprocess.run(_arena(cfg, killed), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    clean = subprocess.run(_arena(cfg, tmp_path / "clean"), capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stderr

    rows = [json.loads(x) for x in (killed / "games.jsonl").read_text().splitlines()]
    ids = [r["game_id"] for r in rows]
    assert len(ids) == total and len(set(ids)) == total  # none lost, none twice
    reference = [json.loads(x) for x in (tmp_path / "clean" / "games.jsonl").read_text().splitlines()]
    assert [_strip(r) for r in rows] == [_strip(r) for r in reference]
    ratings = json.loads((killed / "ratings.json").read_text())
    assert ratings["tournament"]["master_seed"] == SEED
    assert sum(v["games"] for v in ratings["ratings"].values()) == 2 * total
    assert ratings == json.loads((tmp_path / "clean" / "ratings.json").read_text())


def test_a_second_run_on_one_output_folder_refuses_at_once(tmp_path: Path) -> None:
    """Two real `arena run` processes on one folder: the second exits 1 at once with one line naming
    the folder and the first one's pid and host; stopped (SIGTERM), the first lets go of the folder, and a
    later run goes ahead and plays every game once. The first run's games take 5 s each (36 of them, two
    at a time), so it is still playing when the second asks, however slowly the second starts on a
    loaded machine (a first run of 0.3 s games had ended before a second started on a busy CI machine)."""
    import socket

    cfg = config_file(tmp_path)
    out = tmp_path / "shared"
    first = subprocess.Popen(
        default_signals([("5" if a == "0.03" else a) for a in _arena(cfg, out)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while stored_games(out / DB_NAME) < 1 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, "the first run ended before the second started"
        second = subprocess.run(_arena(cfg, out), capture_output=True, text=True, timeout=120)
        assert first.poll() is None, "the second run did not refuse while the first played: the first has ended"
    finally:
        first.send_signal(signal.SIGTERM)
        first_err = first.communicate(timeout=120)[1]
    assert first.returncode == 128 + signal.SIGTERM, first_err
    assert second.returncode == 1, second.stderr + second.stdout
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
    holder = f"(pid {first.pid} on host {socket.gethostname()} since "
    assert f"error: output folder {out} is in use by another arena {holder}" in lines[0], lines[0]
    again = subprocess.run(_arena(cfg, out), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    rows = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["game_id"] for r in rows}) == 36


def test_a_changed_config_names_the_fields_that_changed(tmp_path: Path) -> None:
    """Rules and time control make a league what it is: changing them is refused, naming each field
    (issue 10: bots, versions and games_per_pairing may change — the league grows, see test_arena_league)."""
    path = config_file(tmp_path)
    open_tournament(load_config(path)).store.close()
    original = path.read_text()
    path.write_text(
        original.replace("games_per_pairing = 6", "games_per_pairing = 8")
        .replace('name = "b"', 'name = "b"\nversion = "2"')
        .replace('output = "out"', 'output = "out"\n[tournament.rules]\ntarget = 7\n[tournament.time_control]\n'
                 "decision_ms = 999")
    )
    with pytest.raises(StoreMismatch) as info:
        open_tournament(load_config(path))
    msg = str(info.value)
    assert msg == (
        f"{tmp_path / 'out'} holds another tournament: the config changed tournament.rules.target: 14 -> 7; "
        "tournament.time_control.decision_ms: unset -> 999; use another output folder or restore those fields"
    )
    path.write_text(original.replace("games_per_pairing = 6", "games_per_pairing = 8")
                    .replace('name = "b"', 'name = "b"\nversion = "2"'))
    t = open_tournament(load_config(path))  # a grown league: accepted
    t.store.close()
    assert "b@2" in t.labels and "b" in t.labels and len(t.schedule) == 6 * 8


def test_a_store_opened_again_in_the_process_keeps_sharing_the_file_with_other_processes(tmp_path: Path) -> None:
    """`arena serve`'s SIGHUP opens the league's store again before it closes the old one; the tokens
    that `arena token` writes from another process afterwards must reach it, and its own writes them.
    Opening the file with os.open to set its mode and closing that descriptor dropped the POSIX locks
    of the serve's connection: the other process then took itself for the last connection, deleted the
    WAL, and the two went on with different databases."""
    path = tmp_path / DB_NAME
    serve = Store(path)
    Store(path).close()  # the reopen
    opening = "import sys\nfrom arena.tournament.store import Store\nwith Store(sys.argv[1]) as s: "
    subprocess.run([sys.executable, "-c", opening + "s.add_token('far', 'd1')", str(path)], check=True, timeout=60)
    assert serve.token_digests("far") == {"far": ["d1"]}
    serve.set_meta("seen", "yes")
    done = subprocess.run([sys.executable, "-c", opening + "print(s.get_meta('seen'))", str(path)], check=True,
                          timeout=60, capture_output=True, text=True)
    serve.close()
    assert done.stdout.strip() == "yes"
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
