"""Bot processes (arena/hosting/procs.py, arena/hosting/shepherd.py): nothing a bot starts outlives it,
its log is capped.

Both containments run: cgroup v2 (where this machine lets us write it) and the subreaper shepherd.
Leftovers are counted by a unique tag in the command line of the processes a bot starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.hosting import procs
from arena.hosting.procs import TRUNCATED, BotProcess, Containment
from tests.bots.nasty import live_with_tag

#: A bot that starts a plain child, a child in a new session and a double-forked daemon (each
#: sleeping with ``<tag>-child`` in its argv), says so, then lives ``argv[2]`` seconds.
NASTY = r"""
import os, subprocess, sys, time
tag = sys.argv[1]
sleeper = [sys.executable, "-c", "import time; time.sleep(300)", tag + "-child"]
subprocess.Popen(sleeper)
subprocess.Popen(sleeper, start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, sleeper)
    os._exit(0)
print("started", flush=True)
time.sleep(float(sys.argv[2]))
"""


def tagged(tag: str, suffix: str = "-child") -> list[int]:
    """Live processes with ``tag + suffix`` in their command line (by default: the bot's children)."""
    return live_with_tag(tag + suffix)


def wait_for(cond, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


@pytest.fixture(params=[Containment.CGROUP, Containment.SUBREAPER], ids=["cgroup", "subreaper"])
def kind(request: pytest.FixtureRequest) -> Containment:
    if request.param is Containment.CGROUP and procs.containment()[0] is not Containment.CGROUP:
        pytest.skip("cgroup v2 is not writable here (the subreaper variant covers this machine)")
    return Containment(request.param)


@pytest.fixture
def tag() -> Iterator[str]:
    t = f"allfours-leftover-{uuid.uuid4().hex}"
    yield t
    for pid in tagged(t, ""):  # never leave the test's own leftovers behind, whatever happened
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def start(tmp_path: Path, kind: Containment, *argv: str, limit: int = 1 << 20) -> BotProcess:
    return BotProcess.start(
        list(argv), cwd=str(tmp_path), env=dict(os.environ), log_path=tmp_path / "seat.log", log_limit=limit,
        prefer=kind,
    )


def test_stop_ends_every_descendant(tmp_path: Path, kind: Containment, tag: str) -> None:
    p = start(tmp_path, kind, sys.executable, "-c", NASTY, tag, "300")
    assert wait_for(lambda: len(tagged(tag)) == 3), tagged(tag)
    code = p.stop(exit_wait_s=0.1)
    assert code in (-signal.SIGTERM, -signal.SIGKILL), code
    assert wait_for(lambda: not tagged(tag), 5.0), f"leftovers: {tagged(tag)}"
    assert (tmp_path / "seat.log").read_text() == "started\n"
    assert p.cgroup is None or not p.cgroup.exists()  # its cgroup is removed too


def test_a_bot_that_exits_takes_its_descendants_with_it(tmp_path: Path, kind: Containment, tag: str) -> None:
    """The bot exits on its own (status 0): what it started ends too, without any stop()."""
    p = start(tmp_path, kind, sys.executable, "-c", NASTY, tag, "1")
    assert wait_for(lambda: len(tagged(tag)) == 3), tagged(tag)
    assert p.wait(timeout=30) == 0
    assert wait_for(lambda: not tagged(tag), procs.GRACE_S + 5.0), f"leftovers: {tagged(tag)}"
    assert p.stop(exit_wait_s=0) == 0
    assert p.cgroup is None or not p.cgroup.exists()


def test_exit_status_and_missing_commands(tmp_path: Path, kind: Containment) -> None:
    assert start(tmp_path, kind, sys.executable, "-c", "import sys; sys.exit(5)").stop() == 5
    with pytest.raises(FileNotFoundError):
        start(tmp_path, kind, "/no/such/bot")
    with pytest.raises(FileNotFoundError):
        start(tmp_path, kind, "no-such-bot-command-anywhere")


def test_a_bot_writing_tens_of_megabytes_gets_a_capped_log(tmp_path: Path, kind: Containment) -> None:
    """40 MB of output: the log keeps the first 1 MiB, then says it was truncated and how much was
    discarded; the bot finished writing (the rest drained at the arena's pace) and exited 0."""
    limit = 1 << 20
    spam = "import sys\nblock = b'x' * (1 << 20)\nfor _ in range(40): sys.stdout.buffer.write(block)\n"
    p = start(tmp_path, kind, sys.executable, "-c", spam, limit=limit)
    assert p.wait(timeout=120) == 0
    assert p.stop() == 0
    data = (tmp_path / "seat.log").read_bytes()
    marker = f"\n{TRUNCATED.format(limit=limit)}\n".encode()
    discarded = 40 * (1 << 20) - limit
    assert data == b"x" * limit + marker + f"[arena: {discarded} bytes discarded]\n".encode()
    assert (tmp_path / "seat.log").stat().st_mode & 0o777 == 0o600


def test_a_bot_flooding_its_output_is_drained_at_most_at_the_arenas_rate(tmp_path: Path, kind: Containment) -> None:
    """Past the log's cap the output is dropped at most ``DRAIN_BYTES_PER_S`` a second: a bot writing without end
    waits in its writes. Before, the arena read all it wrote, about 2 GB a second here, for two fifths of a core of
    the arena's CPU (``benchmarks/log_flood.py``); this test then saw gigabytes discarded in two seconds."""
    flood = "import sys\nblock = b'x' * (1 << 16)\nwhile True: sys.stdout.buffer.write(block)\n"
    p = start(tmp_path, kind, sys.executable, "-c", flood)
    begun = time.monotonic()
    try:
        assert wait_for(lambda: p.pump.discarded > 0), "the flood never passed the log's cap"
        time.sleep(2.0)
        discarded, elapsed = p.pump.discarded, time.monotonic() - begun
        assert p.poll() is None, "the flooding bot ended on its own"
    finally:
        p.stop()
    # the drain began after `begun`; before its first pause it may take one splice and the chunk that passed the cap
    assert discarded <= procs.DRAIN_BYTES_PER_S * elapsed + procs.DRAIN_CHUNK + procs.CHUNK, (discarded, elapsed)
    assert (tmp_path / "seat.log").read_bytes().startswith(b"x" * (1 << 20))
