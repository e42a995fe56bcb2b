"""compose.yaml on a real dockerd: the README's compose command, and the same file as a Swarm stack
with a referee killed mid-tournament (its games are played again on the other: nothing lost or doubled).

Images are built on the Debian node base (docker/base-image.sh), with the host's CA bundle for pip
and npm (docker/build-ca.pem, git-ignored, removed afterwards when this test put it there).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require
from tests.docker_helpers import DOCKER, ROOT, base_image, docker_client

pytestmark = pytest.mark.slow
STACK = f"aftest{os.getpid()}"
#: Games of examples/compose/demo.toml: 3 pairings x 4.
DEMO_GAMES = 12


def readme_command(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {marker} -->")
    end = lines.index(f"<!-- /{marker} -->")
    body = [x for x in lines[start + 1 : end] if x.strip() and not x.startswith("```")]
    assert len(body) == 1, body
    return body[0]


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    docker_client()
    require(shutil.which("docker-compose") is not None, "docker-compose is not installed (run scripts/setup.sh)")
    ca = ROOT / "docker" / "build-ca.pem"
    created = not ca.exists()
    if created:
        shutil.copyfile("/etc/ssl/certs/ca-certificates.crt", ca)
    try:
        yield {
            **os.environ,
            "ALLFOURS_BASE": base_image("node"),
            "ALLFOURS_ADMIN_TOKEN": "compose-test-token",
            "COMPOSE_PROJECT_NAME": f"allfourstest{os.getpid()}",
            **{f"ALLFOURS_TOKEN_{b}": f"compose-test-token-of-{b.lower()}" for b in ("RANDOM", "HEURISTIC", "NODEJS")},
            "PATH": f"/usr/bin:{os.environ.get('PATH', '')}",  # Debian's docker CLI first
        }
    finally:
        if created:
            ca.unlink(missing_ok=True)


def games(results: Path) -> list[dict[str, Any]]:
    path = results / "games.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def stored(results: Path) -> int:
    """Games in the arena's store so far (games.jsonl is written only at the end)."""
    try:
        with sqlite3.connect(f"file:{results / 'arena.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("select count(*) from games").fetchone()[0])
    except sqlite3.Error:
        return 0


def check_demo(results: Path) -> list[dict[str, Any]]:
    """The demo's results: every game once (file and store), a leaderboard, and both referees used."""
    played = games(results)
    assert len(played) == DEMO_GAMES and len({g["game_id"] for g in played}) == DEMO_GAMES
    with sqlite3.connect(results / "arena.sqlite") as db:
        assert db.execute("select count(*), count(distinct game_id) from games").fetchone() == (DEMO_GAMES,) * 2
    assert (results / "leaderboard.html").stat().st_size > 0
    assert all(g["terminations"] == ["normal"] * 4 for g in played), played
    return played


def test_readme_compose_command_plays_the_demo(env: dict[str, str], tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    e = {**env, "ALLFOURS_RESULTS": str(results)}
    try:
        r = subprocess.run(["bash", "-c", f"set -euo pipefail; {readme_command('compose-command')}"], cwd=ROOT, env=e,
                           capture_output=True, text=True, timeout=900)
    finally:
        run(["docker-compose", "down", "--remove-orphans", "-t", "5"], e, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    played = check_demo(results)
    assert len({g["referee"] for g in played}) == 2, "the games were spread over both referees"
    client = docker_client()
    project = f"com.docker.compose.project={env['COMPOSE_PROJECT_NAME']}"
    assert client.containers.list(all=True, filters={"label": project}) == []


def _stack_containers(client: Any, service: str) -> list[Any]:
    return client.containers.list(filters={"label": f"com.docker.swarm.service.name={STACK}_{service}"})


def _wait(what: str, cond: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_swarm_stack_survives_a_referee_killed_mid_tournament(env: dict[str, str], tmp_path: Path) -> None:
    """``docker stack deploy`` of compose.yaml on a one-node swarm: referees found by DNS (dnsrr); one
    is killed after the first results; its games are played again on the other; every game once."""
    client = docker_client()
    results = tmp_path / "results"
    results.mkdir()
    e = {**env, "ALLFOURS_RESULTS": str(results)}
    r = run(["docker-compose", "build"], e, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    joined = client.info()["Swarm"]["LocalNodeState"] == "active"
    if not joined:
        r = run([DOCKER, "swarm", "init", "--advertise-addr", "127.0.0.1", "--listen-addr", "127.0.0.1:2377"], e)
        assert r.returncode == 0, r.stderr
    try:
        r = run([DOCKER, "stack", "deploy", "-c", "compose.yaml", "--resolve-image", "never", STACK], e)
        assert r.returncode == 0, r.stderr
        _wait("the first stored results", lambda: stored(results) >= 2, 300)
        victims = _stack_containers(client, "referee")
        assert len(victims) == 2, victims
        victim = victims[0]
        victim_ip = next(iter(victim.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]
        victim.kill()
        arena = client.services.get(f"{STACK}_arena")
        _wait("the arena's task to complete", lambda: any(
            t["Status"]["State"] in ("complete", "failed") for t in arena.tasks()), 600)
        assert [t["Status"]["State"] for t in arena.tasks()] == ["complete"], arena.tasks()
        logs = run([DOCKER, "service", "logs", "--raw", f"{STACK}_arena"], e).stdout
    finally:
        run([DOCKER, "stack", "rm", STACK], e)
        # the low-level list: the high-level one inspects each container, which may be gone by then
        _wait("the stack's containers to go", lambda: not client.api.containers(
            all=True, filters={"label": f"com.docker.stack.namespace={STACK}"}), 120)
        if not joined:
            run([DOCKER, "swarm", "leave", "--force"], e, timeout=60)
    assert "referees: dns:referee:50051 -> " in logs
    assert "it will be played again from its seed" in logs, logs[-3000:]
    played = check_demo(results)
    used = {g["referee"] for g in played}
    assert f"{victim_ip}:50051" in used and len(used) == 2, used
