"""Helpers of the tests of the ``/proc`` view (arena/hosting/procview.py): what a sandboxed reader sees of
the host-wide files, and a load on the host between its two reads."""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

#: The files (under ``/proc``) the tests read: arena.hosting.procview.HOST_WIDE, written out here so that
#: the test runs (and fails) on code without the view.
NAMES = (
    "loadavg", "stat", "meminfo", "vmstat", "zoneinfo", "buddyinfo", "pagetypeinfo", "slabinfo", "vmallocinfo",
    "uptime", "pressure/cpu", "pressure/memory", "pressure/io", "diskstats", "interrupts", "softirqs",
    "schedstat", "timer_list", "swaps", "cpuinfo", "sys/fs/file-nr", "sys/fs/inode-nr", "sys/fs/inode-state",
    "sys/fs/dentry-state", "sys/fs/aio-nr", "sys/kernel/pty/nr", "sys/kernel/random/entropy_avail",
    "locks",
)

#: A hostile reader: prints, as one JSON line, the text of each ``/proc`` file named in its arguments (or
#: the name of the error reading it); with ``--twice``, again after a line on its stdin.
READER = """
import json, sys
def read():
    seen = {}
    for name in sys.argv[1:]:
        if name == "--twice":
            continue
        try:
            with open("/proc/" + name) as f:
                seen[name] = f.read()
        except OSError as e:
            seen[name] = "error " + type(e).__name__
    print(json.dumps(seen), flush=True)
read()
if "--twice" in sys.argv:
    sys.stdin.readline()
    read()
"""


def host_text(names: tuple[str, ...] = NAMES) -> dict[str, str]:
    """What the host's own ``/proc`` says in ``names`` (unreadable or absent ones left out)."""
    seen: dict[str, str] = {}
    for name in names:
        with contextlib.suppress(OSError):
            seen[name] = Path("/proc", name).read_text()
    return seen


@contextlib.contextmanager
def host_load(mb: int = 256) -> Iterator[None]:
    """Within it the host is busier than before: ``mb`` MiB held (every page touched), a thread spinning,
    200 files open, a file written to disk and locked: what one bot would do to signal another. Checked: the host's
    ``meminfo`` and ``stat`` move."""
    before = host_text(("meminfo", "stat"))
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    held = bytearray(mb << 20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    opened = [open(os.devnull) for _ in range(200)]  # noqa: SIM115 - held open on purpose
    try:
        with tempfile.NamedTemporaryFile(dir="/var/tmp") as f:
            f.write(os.urandom(4 << 20))
            f.flush()
            os.fsync(f.fileno())
            fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0) + bytes(4))  # no pid
            assert host_text(("meminfo", "stat")) != before  # the control: the host's own counters moved
            yield
    finally:
        stop.set()
        spinner.join()
        for handle in opened:
            handle.close()
        del held
