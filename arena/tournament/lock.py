"""One arena process per output folder: an exclusive ``flock`` on the output folder itself.

Two ``arena run`` on one folder would play every game twice and overwrite each other's record files.
:func:`lock_output` takes a non-blocking ``flock`` on the folder's own descriptor (opened
``O_RDONLY | O_DIRECTORY``): deleting or replacing a file cannot release it, and the kernel drops it when
the holder's process ends (even on ``kill -9``), so nothing left behind ever blocks a later run. A
second process gets :class:`OutputLocked` at once, naming the folder and the holder.

``<output>/arena.tournament.lock`` (0600, in the 0700 folder) only describes the holder (``pid``,
``host``, start time), for the refusal's line and for people; it is removed when the holder lets go, so
one left after a crash names a process that is gone. Deleting it changes nothing: a refusal then names
the holder's pid from the kernel's lock table. A folder that :func:`lock_output` created and that holds
nothing when it lets go (e.g. the referees were unreachable) is removed again, with the parents it made.

Usage::

    with lock_output(output):      # raises OutputLocked
        ...                        # play, store, publish

The host's commands that change a competition's disqualifications and its remote bots' tokens (``arena competitor
disqualify`` and its ``--undo``, ``arena competitor add --revoke``) each write two databases (the book, then the
league's store), which no one transaction spans, and run while ``arena serve`` holds the folder's lock: they
take their turns instead on :data:`CHANGES_LOCK` in the folder with :func:`lock_changes`, an exclusive ``flock``
on that file (0600), waited for (at most ``wait_s``) and held across both writes. ``arena competition final``
takes its turn too while it chooses the finalists and copies their remote tokens into the final's store (which
those commands change as well). The file stays: removing it while held would let a later command lock a new file
beside the holder's.
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
#: The file whose ``flock`` the host's changes of a competition's disqualifications and tokens take turns on.
CHANGES_LOCK = "competition.lock"
#: What a change that waited too long for its turn (:func:`lock_changes`) advises.
CHANGES_ADVICE = ("another host command is changing its disqualifications or tokens (or hangs): run this one "
                  "again once it ended")
#: What a refusal advises by default (``arena run``, ``arena serve``).
ADVICE = "wait for it to finish or use another --output"
#: The description file's second line: what the file is not.
NOTE = ("(only a description: the lock is a flock on this folder, held until that process ends; "
        "deleting this file does not release it)")


class OutputLocked(RuntimeError):
    """The output folder is held by another arena process. ``str(e)`` is one line naming the folder
    and the holder, e.g. ``output folder /x/out is in use by another arena (pid 4242 on host h since
    2026-12-01 10:30:00 UTC); wait for it to finish or use another --output``."""

    def __init__(self, folder: Path, holder: str, advice: str = ADVICE, by: str = "another arena"):
        super().__init__(
            f"output folder {folder} is in use by {by} ({holder or 'holder unknown'}); {advice}"
        )
        self.folder = folder
        self.holder = holder


def _holder_line() -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    return f"pid {os.getpid()} on host {socket.gethostname()} since {when}"


def _read_holder(folder: Path, fd: int) -> str:
    """The holder of ``folder``'s lock (held on ``fd``'s inode): the description's first line (the holder
    writes it just after locking: wait up to 0.5 s), else its pid from the kernel's lock table."""
    for _ in range(10):
        with contextlib.suppress(OSError):
            line = (folder / LOCK_NAME).read_text("utf-8", "replace").partition("\n")[0].strip()
            if line.startswith("pid "):
                return line
        time.sleep(0.05)
    st = os.fstat(fd)
    pids = _flock_pids(st.st_dev, st.st_ino)
    return f"pid {pids[0]}" if pids else ""


def _flock_pids(dev: int, ino: int, locks: Path = Path("/proc/locks")) -> list[int]:
    """The pids holding a ``flock`` on inode ``ino`` of device ``dev``, from the kernel's lock table
    (``[]`` when it cannot be read)."""
    try:
        table = locks.read_text()
    except OSError:
        return []
    key = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    rows = (line.split() for line in table.splitlines())
    return [int(r[4]) for r in rows if len(r) > 5 and r[1] == "FLOCK" and r[5] == key and r[4].isdigit()]


def _missing(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, deepest first."""
    return [p for p in (folder, *folder.parents) if not p.exists()]


def _lock_dir(folder: Path, advice: str) -> int:
    """A descriptor of ``folder`` (which exists) holding its exclusive ``flock``.

    :raises OutputLocked: another process holds it.
    """
    for _ in range(5):  # the folder removed between the open and the lock (its holder made it and let go)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(folder, fd)
            os.close(fd)
            raise OutputLocked(folder, holder, advice) from None
        if os.fstat(fd).st_nlink > 0:
            return fd
        os.close(fd)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    raise OSError(f"output folder {folder} keeps being removed while it is locked")


@contextlib.contextmanager
def lock_output(folder: Path, advice: str = ADVICE) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created 0700 if missing) for the ``with`` block.

    :param advice: the end of the refusal's line (what to do about it).
    :returns: (as the context value) the description file's path.
    :raises OutputLocked: at once if another process holds it.
    """
    folder = Path(folder)
    made = _missing(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = _lock_dir(folder, advice)
    path = folder / LOCK_NAME
    try:
        _describe(path)
        yield path
    finally:
        with contextlib.suppress(OSError):  # the lock is still held: no other arena is in the folder
            path.unlink(missing_ok=True)
            for empty in made:  # deepest first; the first one not empty (or not ours to remove) ends it
                empty.rmdir()
        os.close(fd)


def _describe(path: Path) -> None:
    """Write the holder's description file (0600): the holder line, then :data:`NOTE`."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # one left by a crash: a new file, so its mode is ours
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{_holder_line()}\n{NOTE}\n".encode())
    finally:
        os.close(fd)


def held(folder: Path, locks: Path = Path("/proc/locks")) -> bool:
    """Whether an arena process holds ``folder``'s lock now (a run or a league is going on), read from
    the kernel's lock table without taking the lock (taking it, even shared and briefly, could refuse
    an ``arena run`` starting at that moment). False when there is no such folder."""
    try:
        st = Path(folder).stat()
    except OSError:
        return False
    return bool(_flock_pids(st.st_dev, st.st_ino, locks))


@contextlib.contextmanager
def lock_changes(folder: Path, wait_s: float = 60.0) -> Iterator[None]:
    """Hold the exclusive ``flock`` of ``folder``'s :data:`CHANGES_LOCK` (the file made 0600, the folder 0700 if
    missing) for the ``with`` block, waiting for another holder to let go: a host command's changes of the
    competition's disqualifications and tokens in one turn (see the module docstring).

    :param wait_s: how long to wait for the turn (seconds).
    :raises OutputLocked: still held by another process after ``wait_s`` (naming its pid).
    """
    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / CHANGES_LOCK
    deadline = time.monotonic() + wait_s
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _wait_flock(fd, deadline, folder)
            if _still_there(fd, path):
                break  # not removed or replaced meanwhile: the file every command locks
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _still_there(fd: int, path: Path) -> bool:
    """Whether ``path`` (not followed) is still the file open on ``fd``: False once it was removed or replaced."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
    except FileNotFoundError:
        return False


def _wait_flock(fd: int, deadline: float, folder: Path) -> None:
    """Take the exclusive ``flock`` on ``fd``, polling until ``deadline`` (``time.monotonic``).

    :raises OutputLocked: still held then (its holder's pid from the kernel's lock table).
    """
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                st = os.fstat(fd)
                pids = _flock_pids(st.st_dev, st.st_ino)
                raise OutputLocked(folder, f"pid {pids[0]}" if pids else "", CHANGES_ADVICE,
                                   by="another host command") from None
            time.sleep(0.05)
