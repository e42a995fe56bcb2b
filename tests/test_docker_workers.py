"""Container workers (``image`` + ``mode = "worker"``) on a real dockerd: sandboxed containers that dial
the lobby, play game after game, and a worker killed at its memory limit forfeits with ``oom``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker_client, leftovers

pytestmark = pytest.mark.slow


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
