"""A bot container's rate of new connections to the host is bounded (a real dockerd and iptables).

The sandbox's chain bounded a container's TCP connections open at once (``CONNECTIONS_PER_CONTAINER``), not how
fast it opens and closes them: one container looping connect/close burned the arena's and the referee's CPU for
every other game. Its new connections past ``NEW_CONNECTIONS_PER_S`` a second (after a burst of
``NEW_CONNECTIONS_BURST``) are now reset, counted by its own address, while a real sample bot, whose workers
open one connection a game, plays every game normally.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import (
    ROOT,
    TcpCanary,
    base_image,
    build_bot,
    docker_client,
    leftovers,
    play_against_random_in_container,
)

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: What the looping container runs (``python3 -c``): ``$MANY`` connect/close to ``$TARGET`` as fast as it can;
#: prints ``accepted refused seconds`` (its own clock: only an upper bound of what the bucket refilled).
CONNECT_LOOP = r"""
import os, socket, time
host, port = os.environ["TARGET"].rsplit(":", 1)
ok = refused = 0
start = time.monotonic()
for _ in range(int(os.environ["MANY"])):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, int(port)))
        ok += 1
    except OSError:
        refused += 1
    finally:
        s.close()
print(ok, refused, time.monotonic() - start, flush=True)
"""


def loop_in_container(sandbox: Any, target: str, many: int, role: str) -> tuple[int, int, float]:
    """Start a container looping ``many`` connect/close to ``target``; its (accepted, refused, seconds)."""
    from arena.hosting.sandbox import Limits

    bot = sandbox.start(base_image("python"), "looper", role, {"TARGET": target, "MANY": str(many)}, Limits(),
                        command=["python3", "-c", CONNECT_LOOP])
    deadline = time.monotonic() + 300
    while not bot.container.logs().strip():
        assert time.monotonic() < deadline and bot.poll() is None, bot.container.logs()
        time.sleep(0.5)
    ok, refused, seconds = bot.container.logs().decode().split()
    bot.stop(exit_wait_s=0)
    return int(ok), int(refused), float(seconds)


def test_a_container_looping_connect_close_is_refused_past_its_rate(tmp_path: Path) -> None:
    """A container opening 3,000 connections in a tight loop to a listener on the gateway (as the referee
    listens) has its connections past the burst and the rate reset: the listener accepts no more than the
    bucket allows over the loop's own time (its seconds can only overstate it), and another container, with an
    address of its own, still connects. On the old chain 1,172 of the 3,000 were accepted in 0.7 s (the bucket
    allows 285 then)."""
    from arena.hosting.sandbox import NEW_CONNECTIONS_BURST, NEW_CONNECTIONS_PER_S, Sandbox

    sandbox = Sandbox(docker_client(), run_key(tmp_path), f"rate-{tmp_path.name[-8:]}")
    gateway = sandbox.open(reaper=False)
    canary = TcpCanary(gateway)
    table = Path("/proc/net/ipt_hashlimit") / sandbox.chain
    try:
        assert table.exists()  # the chain's rate rule: its table, which close() must remove with it
        sandbox.allow(canary.port)
        many = 3000
        ok, refused, seconds = loop_in_container(sandbox, canary.address, many, "worker0-1")
        other = loop_in_container(sandbox, canary.address, 5, "worker1-1")
    finally:
        canary.close()
        sandbox.close()
    assert leftovers(docker_client(), sandbox.key) == []
    assert ok + refused == many
    assert refused > 0, f"all {many} accepted in {seconds:.1f} s"
    assert ok <= NEW_CONNECTIONS_BURST + NEW_CONNECTIONS_PER_S * (seconds + 1), (ok, refused, seconds)
    assert other[:2] == (5, 0), other


def test_a_sample_bots_workers_play_every_game_normally(tmp_path: Path) -> None:
    """The Python sample bot as a worker-mode container bot (the kind that opens the most connections: one
    to the referee for every game it plays, its games back to back) plays 24 games against the random bot
    with the rate bound in place: every game ends normally (no forfeit, no crash, no failed connection)."""
    folder = tmp_path / "bot"
    folder.mkdir()
    shutil.copyfile(ROOT / "sample_bots" / "heuristic.py", folder / "heuristic.py")
    tag = build_bot(folder, "ratebot", "1", base_image("python"), entry="heuristic:HeuristicBot")
    try:
        games = play_against_random_in_container(tmp_path, "ratebot", tag, games=24, timeout=900, mode="worker",
                                                 workers=2)
    finally:
        docker_client().images.remove(tag, force=True)
    assert len(games) == 24
    assert [g for g in games if g["terminations"] != ["normal", "normal"]] == [], games[:2]
