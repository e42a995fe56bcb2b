"""Local bot processes: everything a bot starts ends with it, and its output is capped.

One small interface, used by the arena's game runner for each seat and meant for any long-lived
local worker process (the lobby's local workers)::

    proc = BotProcess.start(argv, cwd=..., env=..., log_path=..., log_limit=1 << 20)
    proc.pid; proc.poll(); proc.wait(timeout)   # the bot's own process
    code = proc.stop()                          # ends the bot and every descendant; returns its status

**Containment.** A process group is not enough: a bot can ``setsid`` or double-fork out of it.
Every descendant is tracked, one of two ways (:func:`containment`, decided once per arena process):

- ``cgroup``: cgroup v2 when writable (e.g. root, or a delegated subtree). Each bot gets its own
  cgroup ``allfours-<arena pid>-<n>-<random>`` under the arena's (empty ones left by arena
  processes that are gone are removed when the first bot starts); ``/bin/sh`` moves itself there and ``exec``\\ s
  the command, so the bot and all it ever starts are in it. Stopping (or the bot's own exit, noticed by
  a watcher thread) sends SIGTERM to every member, waits ``grace_s``, then writes ``cgroup.kill``
  and removes the cgroup.
- ``subreaper``: otherwise :mod:`arena.hosting.shepherd` runs the command as a child subreaper
  (``PR_SET_CHILD_SUBREAPER``): orphans of the bot become the shepherd's children instead of init's,
  and it ends them all when the bot exits or it is told to stop.

Both put the bot in a new session (its process group is the last resort). A sandboxed bot
(``jail``, :mod:`arena.hosting.jail`) is ``bwrap`` inside this containment, and in its own pid namespace.

**Output.** stdout and stderr go through a pipe to a pump thread that writes the first ``log_limit``
bytes to ``log_path`` (created 0600), then a line ``[arena: output truncated at N bytes; the rest is
discarded]``, and keeps draining (a bot writing without end is never blocked by the cap); at the end
``[arena: M bytes discarded]``.

:raises FileNotFoundError: from :meth:`BotProcess.start` when the command or ``cwd`` does not exist
    (checked before anything is started, as :class:`subprocess.Popen` would).
"""

from __future__ import annotations

import contextlib
import enum
import errno
import itertools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from arena.hosting.jail import Jail

#: Seconds between SIGTERM and SIGKILL when a bot and its descendants are ended.
GRACE_S = 2.0
#: Seconds :meth:`BotProcess.stop` waits for the bot to exit on its own before ending it.
EXIT_WAIT_S = 2.0
#: Bytes read from a bot's output pipe at once.
CHUNK = 1 << 16
#: The line written where a bot's log is cut (``limit``: bytes kept).
TRUNCATED = "[arena: output truncated at {limit} bytes; the rest is discarded]"
SHEPHERD = Path(__file__).resolve().parent / "shepherd.py"


class Containment(enum.Enum):
    """How a bot's descendants are tracked (see the module docstring)."""

    CGROUP = "cgroup"
    SUBREAPER = "subreaper"


_detected: tuple[Containment, Path | None] | None = None
_detect_lock = threading.Lock()
_counter = itertools.count()


def _own_cgroup_dir() -> Path | None:
    """This process's cgroup v2 folder if cgroup2 is mounted, else None."""
    mount = None
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                mount = left.split()[4]
                break
    if mount is None:
        return None
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return Path(mount) / line[3:].strip().lstrip("/")
    return None


def _cgroup_works(base: Path) -> bool:
    """True if a child cgroup can be made under ``base`` and a process moved into it and killed."""
    probe = base / f"allfours-{os.getpid()}-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", 'echo 0 > "$0/cgroup.procs"', str(probe)], capture_output=True, timeout=10
        )
        return done.returncode == 0 and (probe / "cgroup.kill").exists()
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        _remove_cgroup(probe)


def _remove_cgroup(cgroup: Path, timeout_s: float = 5.0) -> bool:
    """Remove an emptied cgroup, retrying while the kernel still counts exiting members (EBUSY until
    their parents, e.g. init for orphans, reap them); True if it is gone."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cgroup.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def _sweep_stale(base: Path) -> None:
    """Remove empty bot cgroups left by arena processes that are gone (``allfours-<pid>-…``)."""
    for d in base.glob("allfours-*-*"):
        pid = d.name.split("-")[1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                d.rmdir()  # fails, harmlessly, if something still runs in it
        except PermissionError:
            pass


def containment(prefer: Containment | None = None) -> tuple[Containment, Path | None]:
    """The containment this process uses, and the cgroup folder new bot cgroups go under (or None).

    Decided once: cgroup v2 if a probe cgroup can be made and entered here, else the subreaper.
    ``prefer=SUBREAPER`` forces the subreaper (tests run both ways).
    """
    global _detected
    if prefer is Containment.SUBREAPER:
        return Containment.SUBREAPER, None
    with _detect_lock:
        if _detected is None:
            base = _own_cgroup_dir()
            if base is not None:
                _sweep_stale(base)
            ok = base is not None and _cgroup_works(base)
            _detected = (Containment.CGROUP, base) if ok else (Containment.SUBREAPER, None)
        return _detected


def _check_command(argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> None:
    """Raise what :class:`subprocess.Popen` would for a missing working directory or command."""
    if cwd is not None and not Path(cwd).is_dir():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cwd)
    exe = argv[0]
    if "/" in exe:
        path = Path(cwd or ".") / exe
        if not (path.is_file() and os.access(path, os.X_OK)):
            code = errno.EACCES if path.exists() else errno.ENOENT
            raise OSError(code, os.strerror(code), exe)
    elif shutil.which(exe, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), exe)


class _LogPump(threading.Thread):
    """Copies a pipe into a log file up to ``limit`` bytes, then drains and counts the rest."""

    def __init__(self, fd: int, path: Path, limit: int):
        super().__init__(name=f"bot-log-{path.name}", daemon=True)
        self.fd, self.path, self.limit = fd, path, limit
        self.written = 0
        self.discarded = 0

    def run(self) -> None:
        out = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            while chunk := os.read(self.fd, CHUNK):
                keep = chunk[: max(0, self.limit - self.written)]
                if keep:
                    os.write(out, keep)
                    self.written += len(keep)
                if len(chunk) > len(keep):
                    if not self.discarded:
                        os.write(out, f"\n{TRUNCATED.format(limit=self.limit)}\n".encode())
                    self.discarded += len(chunk) - len(keep)
            if self.discarded:
                os.write(out, f"[arena: {self.discarded} bytes discarded]\n".encode())
        finally:
            os.close(out)
            os.close(self.fd)


class BotProcess:
    """One bot process and everything it starts (see the module docstring). Thread-safe."""

    def __init__(self, popen: subprocess.Popen[bytes], kind: Containment, cgroup: Path | None, pump: _LogPump):
        self.popen = popen
        self.kind = kind
        self.cgroup = cgroup
        self.pump = pump
        self.grace_s = GRACE_S
        self._ended = threading.Event()
        self._end_lock = threading.Lock()
        if kind is Containment.CGROUP:
            threading.Thread(target=self._watch, name=f"bot-watch-{popen.pid}", daemon=True).start()

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        log_path: Path,
        log_limit: int,
        prefer: Containment | None = None,
        jail: Jail | None = None,
    ) -> BotProcess:
        """Start ``argv`` (no shell) in ``cwd`` with exactly ``env``; output to ``log_path`` (capped);
        inside ``jail``'s namespaces when given (:meth:`arena.hosting.jail.Jail.wrap`).

        :raises OSError: (e.g. :class:`FileNotFoundError`) if the command or ``cwd`` cannot be used.
        """
        _check_command(argv, cwd, env)
        if jail is not None:
            argv = jail.wrap(argv, cwd)
        kind, base = containment(prefer)
        cgroup = None
        if kind is Containment.CGROUP and base is not None:
            cgroup = base / f"allfours-{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"
            cgroup.mkdir()
            full = ["/bin/sh", "-c", 'echo 0 > "$0/cgroup.procs" || exit 126; exec "$@"', str(cgroup), *argv]
        else:
            full = [sys.executable, "-I", "-S", str(SHEPHERD), str(GRACE_S), "--", *argv]
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        try:
            popen = subprocess.Popen(
                full,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            if cgroup is not None:
                with contextlib.suppress(OSError):
                    cgroup.rmdir()
            raise
        finally:
            os.close(write_fd)
        pump = _LogPump(read_fd, Path(log_path), log_limit)
        pump.start()
        return cls(popen, kind, cgroup, pump)

    @property
    def pid(self) -> int:
        """The bot's pid (in ``subreaper`` mode, its shepherd's, which exits as the bot did)."""
        return self.popen.pid

    def poll(self) -> int | None:
        """The bot's exit status if it has exited (negative: killed by that signal), else None."""
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the bot's own process. :raises subprocess.TimeoutExpired:"""
        return self.popen.wait(timeout)

    def _watch(self) -> None:
        """cgroup mode: when the bot's own process exits, end everything it started."""
        self.popen.wait()
        self._end_cgroup()

    def _members(self) -> list[int]:
        assert self.cgroup is not None
        try:
            return [int(x) for x in (self.cgroup / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def _end_cgroup(self) -> None:
        """SIGTERM every member, wait ``grace_s`` for them, then ``cgroup.kill`` and remove the cgroup."""
        with self._end_lock:
            if not self._ended.is_set() and self.cgroup is not None:
                self._end_members(self.cgroup)
                self._ended.set()

    def _end_members(self, cgroup: Path) -> None:
        for pid in self._members():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while self._members() and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(500):  # a few seconds at most
            if not self._members():
                break
            with contextlib.suppress(OSError):
                (cgroup / "cgroup.kill").write_text("1")
            time.sleep(0.01)
        _remove_cgroup(cgroup)

    def stop(self, exit_wait_s: float = EXIT_WAIT_S) -> int | None:
        """Let the bot exit on its own for ``exit_wait_s`` seconds, then end it and every descendant
        (SIGTERM, ``grace_s``, SIGKILL); returns the bot's exit status (negative: killed by that signal)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=exit_wait_s)
        if self.kind is Containment.CGROUP:
            self._end_cgroup()
        elif self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(signal.SIGTERM)  # the shepherd ends the bot and its descendants
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=self.grace_s + 3.0)
        if self.popen.poll() is None:  # last resort: the whole session's process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self.pump.join(timeout=5.0)
        return self.popen.returncode


class Stoppable(Protocol):
    """A bot's process or container (:class:`BotProcess`, :class:`arena.hosting.sandbox.BotContainer`)."""

    def stop(self, exit_wait_s: float = EXIT_WAIT_S) -> int | None:
        """Stop it (see :meth:`BotProcess.stop`); returns its exit status."""
        ...


def stop_all(procs: Sequence[Stoppable | None], exit_wait_s: float = EXIT_WAIT_S) -> list[int | None]:
    """:meth:`BotProcess.stop` on every process (or container) at once (in parallel, so the waits
    overlap); returns each exit status (None for a process that was never started)."""
    codes: list[int | None] = [None] * len(procs)

    def stop(k: int, p: Stoppable) -> None:
        codes[k] = p.stop(exit_wait_s)

    threads = [threading.Thread(target=stop, args=(k, p)) for k, p in enumerate(procs) if p is not None]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes
