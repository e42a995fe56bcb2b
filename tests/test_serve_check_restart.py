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

import io
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import LABEL_ROLE, LABEL_RUN, run_key
from tests.docker_helpers import ROOT, add_tar_file, base_image, build_bot, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

CONFIG = """[tournament]
name = "check-restart"
players = 2
games_per_pairing = 40
concurrency = 2
output = "out"
master_seed = "{seed}"
[tournament.time_control]
join_ms = 20000

[[bots]]
name = "boxed"
image = "{tag}"

[[bots]]
name = "local"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
cwd = "{root}"
"""
#: The line `arena serve` prints once its bots are checked (League.open): "<name>: 2 bots, … to play; …".
OPENED = re.compile(r"check-restart: 2 bots, \d+ games scheduled, (\d+) to play")


def tag_variant(client: Any, base: str, tag: str, variant: str) -> str:
    """Tag ``tag`` as an image of ``base`` plus the label ``variant`` (the same bot, another image ID);
    returns its ID."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        add_tar_file(tar, "Dockerfile", f'FROM {base}\nLABEL org.allfours.test.variant="{variant}"\n'.encode())
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    return str(image.id)


class Served:
    """One `arena serve` of ``cfg``: its output read in a thread (:attr:`lines`)."""

    def __init__(self, cfg: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0"],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 300) -> re.Match[str]:
        """The first line matching ``pattern``; fails when serve exits first or after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = next((m for line in list(self.lines) if (m := pattern.search(line))), None)
            if found is not None:
                return found
            assert self.proc.poll() is None, "".join(self.lines)[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"no line {pattern.pattern!r} in {timeout} s: {''.join(self.lines)[-3000:]}")

    def stop(self) -> str:
        """SIGTERM it and wait for its exit (status 0); returns everything it printed."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self._reader.join(10)
        out = "".join(self.lines)
        assert self.proc.returncode == 0, out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


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
    cfg = tmp_path / "league.toml"
    cfg.write_text(CONFIG.format(seed="3c" * 32, tag=tag, root=ROOT))
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
