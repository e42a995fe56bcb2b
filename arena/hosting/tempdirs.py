"""Temporary folders named by the arena's pid (``/tmp/PREFIX<pid>-XXXXXXXX``), so that a later start
removes those of an arena that was killed.

A ``TemporaryDirectory`` is removed by the code that made it, which a SIGKILL never lets run: a build
context (a competitor's code, the SDK, the Dockerfile, ``build-ca.pem``) stayed in /tmp for good.
:func:`pid_temp_dir` makes such a folder with this process's pid in its name; :func:`sweep_dead`
removes the folders of a prefix whose process is gone. A folder whose pid is alive is left alone (an
arena at work, or, rarely, a later process that got the dead one's pid: its folder goes at a later
start), and so is one without a pid in its name (not made here).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path


def pid_temp_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A new temporary folder ``PREFIX<this pid>-XXXXXXXX`` in the temp folder (mode 0700), removed
    when its ``with`` block ends."""
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")


def sweep_dead(prefixes: Iterable[str], tmp: Path | None = None) -> list[Path]:
    """Remove every folder ``PREFIX<pid>-*`` of ``prefixes`` in ``tmp`` (default: the temp folder) whose
    process ``pid`` has ended; returns those removed. Errors are ignored (what cannot be removed stays)."""
    root = Path(tmp or tempfile.gettempdir())
    removed: list[Path] = []
    for prefix in prefixes:
        for d in root.glob(f"{prefix}*-*"):
            pid = d.name[len(prefix):].split("-")[0]
            if pid.isdigit() and d.is_dir() and not d.is_symlink() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
    return removed


def write_read_only(file: Path, data: bytes) -> None:
    """Write ``data`` to a new ``file`` of mode 0444 whatever the umask (one left there is replaced): the
    sandbox files every bot reads and none may change (the /proc view's, the seccomp filter)."""
    file.unlink(missing_ok=True)
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(file, 0o444)
