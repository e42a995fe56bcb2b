"""One arena process per output folder: an exclusive lock on ``<output>/arena.tournament.lock``.

Two ``arena run`` on one folder would play every game twice and overwrite each other's record files.
:func:`lock_output` takes a non-blocking ``flock`` on the lock file and writes the holder into it
(``pid``, ``host``, start time); a second process gets :class:`OutputLocked` at once, naming the folder
and that holder. The kernel drops the lock when the holder's process ends (even on ``kill -9``), so a
stale lock file never blocks a later run. The lock file is 0600 in the 0700 output folder.

Usage::

    with lock_output(output):      # raises OutputLocked
        ...                        # play, store, publish
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = "arena.tournament.lock"


class OutputLocked(RuntimeError):
    """The output folder is held by another arena process. ``str(e)`` is one line naming the folder
    and the holder, e.g. ``output folder /x/out is in use by another arena (pid 4242 on host h since
    2026-12-01 10:30:00 UTC); wait for it to finish or use another --output``."""

    def __init__(self, folder: Path, holder: str):
        super().__init__(
            f"output folder {folder} is in use by another arena ({holder or 'holder unknown'}); "
            "wait for it to finish or use another --output"
        )
        self.folder = folder
        self.holder = holder


def _holder_line() -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"pid {os.getpid()} on host {socket.gethostname()} since {when}"


def _read_holder(fd: int) -> str:
    """The holder line of a held lock (the holder writes it just after locking: wait up to 0.5 s)."""
    for _ in range(10):
        lines = os.pread(fd, 512, 0).decode("utf-8", "replace").strip().splitlines()
        if lines:
            return lines[0]
        time.sleep(0.05)
    return ""


@contextlib.contextmanager
def lock_output(folder: Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created 0700 if missing) for the ``with`` block.

    :returns: (as the context value) the lock file's path.
    :raises OutputLocked: at once if another process holds it.
    """
    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputLocked(folder, _read_holder(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (_holder_line() + "\n").encode(), 0)
        try:
            yield path
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def held(folder: Path, locks: Path = Path("/proc/locks")) -> bool:
    """Whether an arena process holds ``folder``'s lock now (a run or a league is going on), read from
    the kernel's lock table without taking the lock (taking it, even shared and briefly, could refuse
    an ``arena run`` starting at that moment). False when there is no lock file."""
    try:
        st = (Path(folder) / LOCK_NAME).stat()
        table = locks.read_text()
    except OSError:
        return False
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(line.split()[1] == "FLOCK" and line.split()[5] == dev for line in table.splitlines()
               if len(line.split()) > 5)
