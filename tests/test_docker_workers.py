"""Container workers (``image`` + ``mode = "worker"``) on a real dockerd: sandboxed containers that dial
the lobby, play game after game, and a worker killed at its memory limit forfeits with ``oom``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker0_address, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]


def test_container_workers_play_through_the_lobby_and_oom_is_its_own_reason(tmp_path: Path) -> None:
    client: Any = docker_client()
    image = build_bot(ROOT / "tests" / "bots" / "hostile", "hostile", "1", base_image("python"),
                      entry="hostile:HostileBot")
    def bot(name: str, mode: str, extra: str = "") -> str:
        return (f'[[bots]]\nname = "{name}"\nimage = "{image}"\nmode = "worker"\nworkers = 2\n'
                f'env = {{ HOSTILE = "{mode}" }}\n{extra}\n')

    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "container-workers"
players = 4
games_per_pairing = 2
concurrency = 1
output = "out"
master_seed = "{"6b" * 32}"
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
decision_ms = 2000

{bot("a", "none")}
{bot("b", "none")}
{bot("hog", "oom", "memory = 64")}
""")
    r = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "lobby: 172." in r.stdout or "lobby: 192.168." in r.stdout, r.stdout[:2000]  # on the sandbox network
    played = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(played) == 6
    for g in played:
        w = g["workers"]  # partners are two workers (two containers), never one
        assert len(set(w)) == 4 and w[0] != w[2] and w[1] != w[3], g
        sides = [g["a"], g["b"]]
        if "hog" not in sides:
            assert g["terminations"] == ["normal"] * 4, g
            continue
        assert sides[g["winner"]] != "hog", g
    first_hog = next(g for g in played if "hog" in (g["a"], g["b"]))
    assert "oom" in first_hog["terminations"], first_hog
    hog_seat = first_hog["terminations"].index("oom")
    assert any(x.startswith(f"seat {hog_seat} (hog) oom: worker container was killed at its memory limit (64 MiB)")
               for x in first_hog["reasons"]), first_hog
    logs = sorted((tmp_path / "out" / "logs" / "workers").glob("*/worker*.log"))
    assert {p.parent.name for p in logs} == {"a", "b", "hog"}
    assert leftovers(client, run_key(tmp_path / "out")) == []


def test_a_remote_bot_beside_container_bots_plays_from_the_lobbys_host(tmp_path: Path) -> None:
    """`arena run` with a per-game container bot (the container sandbox open: the lobby and the embedded
    referee listen on its gateway, which only this machine reaches) and a remote bot, the lobby on an
    address of this machine other than loopback and that gateway (docker's default bridge, standing for
    one other machines reach): the remote worker dials that address alone, is told the referee there
    too, and plays every game to a normal end."""
    import re
    import socket

    client: Any = docker_client()
    host = docker0_address(client)  # docker0: this machine
    image = build_bot(ROOT / "tests" / "bots" / "hostile", "hostile", "1", base_image("python"),
                      entry="hostile:HostileBot")
    with socket.socket() as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "remote-beside-containers"
players = 2
games_per_pairing = 2
concurrency = 1
output = "out"
lobby = "{host}:{port}"
no_show_s = 30

[[bots]]
name = "box"
image = "{image}"
env = {{ HOSTILE = "none" }}

[[bots]]
name = "visitor"
remote = true
""")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    made = subprocess.run([sys.executable, "-m", "arena.cli", "token", str(cfg), "visitor"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert made.returncode == 0, made.stderr
    log = tmp_path / "worker.log"
    worker = subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                               f"{host}:{port}", "--name", "visitor", "--reconnect", "120", "--log-level", "debug"],
                              cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT, text=True,
                              env={**env, "ALLFOURS_BOT_TOKEN": made.stdout.strip()})
    try:
        r = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600, env=env)
    finally:
        worker.terminate()
        worker.wait(30)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    played = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(played) == 2 and all(g["terminations"] == ["normal"] * 2 for g in played), played
    assert f"remote workers at {host}:{port}" in r.stdout, r.stdout[:2000]
    told = set(re.findall(r"seat \d+: referee (\S+)", log.read_text()))
    assert len(told) == 1 and told.pop().rpartition(":")[0] == host, log.read_text()[-2000:]
    assert leftovers(client, run_key(tmp_path / "out")) == []


def test_container_workers_play_in_a_served_league(tmp_path: Path) -> None:
    """``arena serve`` opened its lobby without the container sandbox, on ``tournament.lobby``'s host only
    (loopback here), which a container cannot reach: a league's container workers never registered and
    every game ended no_show. The lobby listens on the sandbox's gateway there too, as for ``arena run``."""
    import signal
    import sqlite3
    import time

    client: Any = docker_client()
    image = build_bot(ROOT / "tests" / "bots" / "hostile", "hostile", "1", base_image("python"),
                      entry="hostile:HostileBot")
    bots = "".join(f'\n[[bots]]\nname = "{n}"\nimage = "{image}"\nmode = "worker"\nworkers = 1\n'
                   f'env = {{ HOSTILE = "none" }}\n' for n in ("a", "b"))
    cfg = tmp_path / "t.toml"
    cfg.write_text(f'[tournament]\nname = "served-workers"\nplayers = 2\ngames_per_pairing = 2\nconcurrency = 1\n'
                   f'output = "out"\nmaster_seed = "{"6c" * 32}"\n[tournament.time_control]\njoin_ms = 20000\n'
                   f'{bots}')
    serve = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--no-live"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 300
        stored = 0
        while stored < 2 and time.monotonic() < deadline and serve.poll() is None:
            time.sleep(1)
            if (tmp_path / "out" / "arena.sqlite").exists():
                with contextlib.closing(sqlite3.connect(tmp_path / "out" / "arena.sqlite", timeout=30)) as db, \
                        contextlib.suppress(sqlite3.OperationalError):  # its tables are being made
                    stored = db.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    finally:
        serve.send_signal(signal.SIGTERM)
        out, _ = serve.communicate(timeout=180)
    assert serve.returncode == 0 and stored == 2, out[-3000:]
    played = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(played) == 2 and all(g["terminations"] == ["normal"] * 2 for g in played), played
    assert leftovers(client, run_key(tmp_path / "out")) == []
