"""`arena serve` started again does not check again a container bot whose check passed on the same image and
spec (docs/arena.md, "The bots' check, and a restart"), with a real dockerd and real `arena serve` processes.

What is observed is what a check does, not how long it takes: the check's containers docker starts (its
events, by the run's label and the check's role, ``check/bot<k>-s<seat>``) and the check's logs
(``logs/check/bot<k>/``, removed before each start). A league of one container bot and one process bot is
started and stopped as soon as its bots are checked (the games in flight finish; many are left); the second start
starts no container for a check (the container bot is not checked again) but checks the process bot again (no
sound cheap fingerprint of what a command runs); after its tag names another image (the same content, a label
apart: another image ID), the third start checks the container bot again.
"""

from __future__ import annotations

import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import LABEL_ROLE, LABEL_RUN, run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker_client, leftovers, tag_variant
from tests.league_helpers import Served, container_league

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: The line `arena serve` prints once its bots are checked (League.open): "<name>: 2 bots, … to play; …".
OPENED = re.compile(r"check-restart: 2 bots, \d+ games scheduled, (\d+) to play")


def check_starts(client: Any, key: str, since_ns: int) -> int:
    """How many containers of a bot's check (role ``check/…``) of the run ``key`` docker started since
    ``since_ns`` (Unix ns) until now."""
    events = client.events(since=since_ns // 10**9 - 1, until=int(time.time()) + 1, decode=True,
                           filters={"type": "container", "event": "start", "label": f"{LABEL_RUN}={key}"})
    return sum(1 for e in events if int(e.get("timeNano", 0)) >= since_ns
               and e.get("Actor", {}).get("Attributes", {}).get(LABEL_ROLE, "").startswith("check/"))


def serve_once(cfg: Path) -> tuple[str, int]:
    """Start `arena serve`, wait until its bots are checked and games are left to play, stop it (SIGTERM: the
    games in flight finish); returns its output and the time it started (Unix ns)."""
    shutil.rmtree(cfg.parent / "out" / "logs" / "check", ignore_errors=True)
    started = time.time_ns()
    served = Served(cfg)
    try:
        assert int(served.wait_for(OPENED)[1]) > 0
        return served.stop(), started
    finally:
        served.kill()


def test_a_restart_does_not_check_an_unchanged_container_bot_again(tmp_path: Path) -> None:
    client = docker_client()
    built = build_bot(ROOT / "sample_bots", "checkrestart", "1", base_image("python"), entry="random_bot:RandomBot")
    tag = f"allfours-test-checkrestart-{uuid.uuid4().hex[:8]}:1"
    cfg = container_league(tmp_path / "league.toml", "check-restart", 40, "3c" * 32, tag)
    key, check = run_key(tmp_path / "out"), tmp_path / "out" / "logs" / "check"
    ids = [tag_variant(client, built, tag, "a")]
    try:
        out, started = serve_once(cfg)
        assert check_starts(client, key, started) == 2, out  # one container per seat
        assert {p.name for p in check.iterdir()} == {"bot0", "bot1"}, out

        out, started = serve_once(cfg)
        assert check_starts(client, key, started) == 0, out
        assert "bot 'boxed' passed its check before" in out, out
        assert {p.name for p in check.iterdir()} == {"bot1"}, out  # the process bot is checked at every start

        ids.append(tag_variant(client, built, tag, "b"))  # the tag now names another image
        assert ids[0] != ids[1]
        out, started = serve_once(cfg)
        assert check_starts(client, key, started) == 2, out  # checked again
        assert "bot 'boxed' passed its check before" not in out, out
        assert {p.name for p in check.iterdir()} == {"bot0", "bot1"}, out
        assert leftovers(client, key) == []
    finally:
        for image_id in reversed(ids):
            client.images.remove(image_id, force=True)
        client.images.remove(built)  # this test's own bot image (its base image stays: built once per machine)
