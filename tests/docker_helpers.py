"""Helpers of the docker tests (a real dockerd): images built once per session, leftovers checks.

Images are made the way a host without an image registry makes them: the Debian base images of
``docker/base-image.sh`` (cached by content: built once per machine), then ``arena bots build``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
DOCKER = "/usr/bin/docker"  # Debian's CLI (a newer one elsewhere on PATH may lack the classic builder)


def docker_client() -> Any:
    """A docker SDK client, or skip (laptop) / fail (CI) the test when no dockerd answers."""
    require(os.path.exists(DOCKER), "Debian's docker.io is not installed (run scripts/setup.sh)")
    require(shutil.which("iptables") is not None, "iptables is not installed (run scripts/setup.sh)")
    require(os.geteuid() == 0, "the container sandbox needs root (iptables rules, the docker socket)")
    from arena.hosting.sandbox import SandboxError
    from arena.hosting.sandbox import docker_client as client

    try:
        return client()
    except SandboxError as e:
        require(False, f"{e} (run scripts/setup.sh)")


def base_image(kind: str) -> str:
    """The tag of the Debian base image ``kind`` (``python``/``node``), built on first use."""
    r = subprocess.run(
        ["bash", str(ROOT / "docker" / "base-image.sh"), kind], capture_output=True, text=True, timeout=1200
    )
    assert r.returncode == 0, f"docker/base-image.sh {kind} failed: {r.stderr[-2000:]}"
    return r.stdout.strip().splitlines()[-1]


def build_bot(folder: Path, name: str, version: str, base: str, entry: str | None = None) -> str:
    """``arena bots build`` (the CLI, as a user runs it); returns the image's tag."""
    cmd = [sys.executable, "-m", "arena.cli", "bots", "build", str(folder), "--name", name, "--version", version,
           "--base", base]
    if entry:
        cmd += ["--entry", entry]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"arena bots build failed ({r.returncode}): {r.stdout[-1000:]} {r.stderr[-2000:]}"
    return r.stdout.strip().splitlines()[-1]


def leftovers(client: Any, key: str) -> list[str]:
    """Everything run ``key`` left behind: containers, networks, volumes, the iptables chains (the
    tournament's and the build network's)."""
    flt = {"label": f"org.allfours.run={key}"}
    found = [f"container {c['Names']}" for c in client.api.containers(all=True, filters=flt)]
    found += [f"network {n.name}" for n in client.networks.list(filters=flt)]
    found += [f"volume {v.name}" for v in client.volumes.list(filters=flt)]
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True, timeout=30).stdout
    found += [f"iptables {line}" for line in rules.splitlines() if f"AF-{key}" in line or f"AFB-{key}" in line]
    return found


def play_against_random_in_container(tmp_path: Path, name: str, tag: str, memory_mib: int) -> list[dict[str, Any]]:
    """A 2-game 2-player tournament (``arena run``) of the container bot ``tag`` against the Python
    random bot: the games played (games.jsonl), after checking the run ended with status 0."""
    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "{name}-container"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
[tournament.time_control]
join_ms = 20000

[[bots]]
name = "random"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]

[[bots]]
name = "{name}"
image = "{tag}"
memory = {memory_mib}
""")
    r = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
