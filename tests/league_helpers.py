"""Serving a league in a test: an in-process :class:`arena.tournament.league.League`
(tests/test_league_reload.py, tests/test_blind_held.py), or a real `arena serve` process (:class:`Served`) of a
container bot's league (:func:`container_league`)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.config import load_config
from arena.tournament.league import AfterGame, League

ROOT = Path(__file__).resolve().parent.parent

#: A league of a container bot ``boxed`` (the image ``{tag}``) and the instant process bot ``local``, games
#: two at a time (``{name}``, ``{games}`` a pairing, ``{seed}``: the master seed, 64 hex digits).
CONTAINER_LEAGUE = """[tournament]
name = "{name}"
players = 2
games_per_pairing = {games}
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


def container_league(cfg: Path, name: str, games: int, seed: str, tag: str) -> Path:
    """Write :data:`CONTAINER_LEAGUE` to ``cfg`` (its output: ``out`` beside it); returns ``cfg``."""
    cfg.write_text(CONTAINER_LEAGUE.format(name=name, games=games, seed=seed, tag=tag, root=ROOT))
    return cfg


def serve_until_stopped(league: League, path: Path, after: AfterGame,
                        opened: Callable[[League], None] = lambda _: None) -> None:
    """Open ``league`` on the config file at ``path``, call ``opened`` (the test's look before play), and
    serve it until ``after`` (called after each stored game) stops it; then close it, whatever was raised."""
    league.after_game.append(after)
    league.open(load_config(str(path)))
    try:
        opened(league)
        league.serve()
    finally:
        league.close()


class Served:
    """One `arena serve` of ``cfg`` (``--bootstrap 0``): its output read in a thread (:attr:`lines`)."""

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

    def wait_until(self, done: Callable[[], Any], what: str, timeout: float = 300) -> Any:
        """``done()``'s first true value, polled every 0.2 s.

        :raises AssertionError: when serve exits first, or after ``timeout`` s (``no {what}``), with its
            last output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = done()
            if found:
                return found
            assert self.proc.poll() is None, "".join(self.lines)[-3000:]
            time.sleep(0.2)
        raise AssertionError(f"no {what} in {timeout} s: {''.join(self.lines)[-3000:]}")

    def said(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        """The first line it printed that matches ``pattern``."""
        return next((m for line in list(self.lines) if (m := pattern.search(line))), None)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 300) -> re.Match[str]:
        """The first line matching ``pattern``, waited for as :meth:`wait_until` waits."""
        found: re.Match[str] = self.wait_until(lambda: self.said(pattern), f"line {pattern.pattern!r}", timeout)
        return found

    def stop(self) -> str:
        """SIGTERM it and wait for its exit (status 0, no traceback); returns everything it printed."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self._reader.join(10)
        out = "".join(self.lines)
        assert self.proc.returncode == 0, out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        return out

    def kill(self) -> None:
        """Kill it if it still runs (a test's clean-up) and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
