"""Shared test policy.

Tests that need a system facility (a Docker engine, a browser, a compiler) call
``require(available, why)``: on a developer's machine a missing facility skips the test with the
reason; under CI (``CI=true``, as ``.ci/run`` sets it) it fails instead, because CI installs every
facility through ``scripts/setup.sh`` and a skip there would hide a test that never ran.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from arena.web import WebServer

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(available: bool, why: str) -> None:
    """Skip (developer machine) or fail (CI) the calling test when ``available`` is false.

    ``why`` names the missing facility and how to get it, e.g. "dockerd is not running (run
    scripts/setup.sh)"; it is the skip reason or the failure message.
    """
    if available:
        return
    if IN_CI:
        pytest.fail(f"CI must run this test but {why}", pytrace=False)
    pytest.skip(why)


def running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead and waiting for its parent, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def default_signals(argv: list[str]) -> list[str]:
    """``argv`` started with SIGINT, SIGTERM and SIGHUP at their defaults, for a command a test interrupts as a
    terminal's Ctrl-C (or its closing, or a supervisor) would, as a terminal's shell starts commands. A test run
    started in the background of a non-interactive shell (``… &``: CI harnesses) has SIGINT ignored, one under
    ``nohup`` SIGHUP; children inherit that, bash cannot trap a signal ignored on entry, and ``arena run``
    leaves one ignored (arena/cli/interrupt.py): the command under test would never see the signal. A
    Python that resets them and execs ``argv`` (same process), not ``preexec_fn``: Python code between
    fork and exec in a process that has used gRPC can abort the child (arena/hosting/tether.py)."""
    reset = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
             "signal.signal(signal.SIGTERM, signal.SIG_DFL); signal.signal(signal.SIGHUP, signal.SIG_DFL); "
             "os.execvp(sys.argv[1], sys.argv[1:])")
    return [sys.executable, "-c", reset, *argv]


def stored_games(db: Path) -> int:
    """Games in the arena store ``db`` now (read-only; 0 while it does not exist or is being made): what a
    test polls while a real ``arena run`` plays."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


@pytest.fixture
def web(tmp_path: Path) -> Iterator[WebServer]:
    """``arena web`` of an empty output folder in a thread of this process, on 127.0.0.1 (the web's stream and
    connection tests)."""
    from arena.web import start_in_thread

    (tmp_path / "out").mkdir()
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, bootstrap=0)
    try:
        yield server
    finally:
        server.stop()
