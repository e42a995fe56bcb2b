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

**Limits** (``cgroup`` mode). Each bot's cgroup has a CPU quota (``cpu.max``, ``cpus`` cores, default
:data:`CPUS`, a container's default: the bot and all it starts get at most that much CPU time per
period of :data:`CPU_PERIOD_US`, so a bot that spins between its turns cannot starve the others), a memory limit
(``memory.max``, ``memory_mb`` MiB, default :data:`MEMORY_MB`, and ``memory.swap.max`` 0: no swap
beyond it; a sandboxed bot's ``/tmp`` is memory too) and a pids limit (``pids.max``, default
:data:`PIDS`: processes *and threads*, bwrap's two among them). A bot at its CPU quota waits for the
next period (:attr:`BotProcess.cpu_throttled`, from ``cpu.stat``'s ``nr_throttled``: it may then
answer late); a bot past its memory is killed by the kernel (:attr:`BotProcess.oom_killed`, from
the cgroup's ``oom_kill`` count); a fork or thread past its pids limit fails (EAGAIN) and the bot goes
on (:attr:`BotProcess.pids_limited`, from ``pids.events``). The arena's own cgroup must give its
children the ``cpu``, ``memory`` and ``pids`` controllers (its ``cgroup.subtree_control``): where it
does not yet, the arena enables them, and as cgroup v2 allows that only in a cgroup without processes
of its own (the root aside), the arena first moves itself and its children to a leaf
``allfours-<pid>-arena`` of it (:func:`_enable_v2`; not when another program's process shares its
cgroup; a later arena process started from that leaf makes its bots' cgroups beside it). On a hybrid
host, whose ``cpu``, ``memory`` and ``pids`` controllers are cgroup v1 hierarchies, each bot also gets
a cgroup of the same name under the arena's own in each of them (``cpu.cfs_quota_us`` and
``cpu.cfs_period_us``, ``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``, ``pids.max``).
A limit that cannot be set is not (the bot runs as it did without it) and one warning per arena
process says so (structlog ``bot_limits_unavailable``), as under the subreaper, which sets none.

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
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from arena.hosting.sandbox import Limits

if TYPE_CHECKING:
    from arena.hosting.jail import Jail

#: Seconds between SIGTERM and SIGKILL when a bot and its descendants are ended.
GRACE_S = 2.0
#: Seconds :meth:`BotProcess.stop` waits for the bot to exit on its own before ending it.
EXIT_WAIT_S = 2.0
#: Bytes read from a bot's output pipe at once.
CHUNK = 1 << 16
#: Bytes a ``splice`` of the discarded output moves at most (:meth:`_LogPump._drain`).
DRAIN_CHUNK = 1 << 20
#: Bytes a second of a bot's output past its log's cap that the arena drains (and drops) at most: a bot
#: writing faster waits in its writes, on its own clock, instead of the arena spending its CPU on the flood.
DRAIN_BYTES_PER_S = 16 << 20
#: The line written where a bot's log is cut (``limit``: bytes kept).
TRUNCATED = "[arena: output truncated at {limit} bytes; the rest is discarded]"
SHEPHERD = Path(__file__).resolve().parent / "shepherd.py"
#: A bot process's CPU quota, cores, unless its config sets ``cpus`` (a container's default).
CPUS = 1.0
#: The CPU quota's period, microseconds (the kernel's default): a bot gets ``cpus`` times it per period.
CPU_PERIOD_US = 100_000
#: A bot process's memory limit, MiB, unless its config sets ``memory`` (and no swap beyond it): twice
#: the SDK conformance check's 512 MiB, room for a sandboxed bot's ``/tmp`` (tmpfs is memory) and bwrap.
MEMORY_MB = 1024
#: A bot process's pids limit unless its config sets ``pids``: processes and threads at once. The sample
#: bots use at most 15 (Python and gRPC; Node.js 7, C++ 11, with bwrap's two); runtimes that start a
#: thread per core (the JVM, Go, V8's platform) need more on a large host; a fork bomb stops here.
PIDS = 256
#: The cgroup controllers of the limits.
CONTROLLERS = ("cpu", "memory", "pids")
#: Where an arena process moves itself (under the cgroup it was in) so that its cgroup may give the
#: bots' cgroups the controllers (:func:`_enable_v2`).
ARENA_LEAF = "allfours-{pid}-arena"
#: Per controller, the files of its limit: cgroup v2's, then v1's.
_LIMIT_FILES = {"cpu": ("cpu.max", "cpu.cfs_quota_us"), "memory": ("memory.max", "memory.limit_in_bytes"),
                "pids": ("pids.max",)}

#: Why bots go without limits when no cgroup can hold them (:func:`_warn_once`).
UNDER_SUBREAPER = "bots run under the subreaper (no writable cgroup v2 here)"

log = structlog.get_logger("arena.hosting.procs")


class Containment(enum.Enum):
    """How a bot's descendants are tracked (see the module docstring)."""

    CGROUP = "cgroup"
    SUBREAPER = "subreaper"


_detected: tuple[Containment, Path | None] | None = None
_detect_lock = threading.Lock()
_counter = itertools.count()
_places: dict[str, Path] | None = None
_warned: set[str] = set()


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
    ``prefer=SUBREAPER`` forces the subreaper (tests run both ways). The folder is this process's own
    cgroup, or the one above when that is an arena's leaf (:data:`ARENA_LEAF`: this process was started
    by an arena that moved itself there).
    """
    global _detected
    if prefer is Containment.SUBREAPER:
        return Containment.SUBREAPER, None
    with _detect_lock:
        if _detected is None:
            base = _own_cgroup_dir()
            if base is not None and _is_arena_leaf(base.name):
                base = base.parent
            if base is not None:
                _sweep_stale(base)
            ok = base is not None and _cgroup_works(base)
            _detected = (Containment.CGROUP, base) if ok else (Containment.SUBREAPER, None)
        return _detected


def _is_arena_leaf(name: str) -> bool:
    """Whether ``name`` is an arena's leaf cgroup (:data:`ARENA_LEAF`)."""
    parts = name.split("-")
    return len(parts) == 3 and parts[0] == "allfours" and parts[1].isdigit() and parts[2] == "arena"


def _words(path: Path) -> set[str]:
    """The words of a cgroup file such as ``cgroup.controllers`` (none if it cannot be read)."""
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _procs(cgroup: Path) -> list[int]:
    """The processes in ``cgroup`` (its own, not its children's)."""
    try:
        return [int(x) for x in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is ``ancestor`` or one of its descendants (by ``/proc/<pid>/stat``)."""
    for _ in range(256):
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rpartition(")")[2].split()[1])
        if pid <= 1:
            return False
    return False


def _move_arena_down(base: Path) -> bool:
    """Move this process and its descendants from ``base`` to its child ``allfours-<pid>-arena``
    (:data:`ARENA_LEAF`, made here) so that ``base`` holds no process; False (``base`` left as it was, or
    only some of them moved) when a process that is not this arena's is in ``base`` or a move fails."""
    me = os.getpid()
    leaf = base / ARENA_LEAF.format(pid=me)
    try:
        for _ in range(5):  # a child may fork while its parent moves
            left = _procs(base)
            if not left:
                return True
            if not all(_descends_from(pid, me) for pid in left):
                return False
            leaf.mkdir(exist_ok=True)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    (leaf / "cgroup.procs").write_text(str(pid))
    except OSError:
        return False
    return not _procs(base)


def _enable_v2(base: Path) -> set[str]:
    """The controllers of :data:`CONTROLLERS` that cgroups made under ``base`` get: its
    ``cgroup.subtree_control``, where those its ``cgroup.controllers`` offers are enabled if they are not.

    Only the root cgroup (no ``cgroup.type``) may hold processes and give controllers at once: elsewhere
    cgroup v2 refuses ``memory`` (EBUSY) and takes ``pids`` by making ``base`` a thread root whose child
    cgroups can no longer take a process (every bot would fail to start). So this arena process and its
    children move first to its leaf (:func:`_move_arena_down`), and nothing is enabled if they cannot;
    the controllers are enabled in one write, which the kernel takes or refuses whole."""
    control = base / "cgroup.subtree_control"
    offered = _words(base / "cgroup.controllers")
    want = [c for c in CONTROLLERS if c in offered and c not in _words(control)]
    root = not (base / "cgroup.type").exists()
    if want and (root or _move_arena_down(base)):
        with contextlib.suppress(OSError):
            control.write_text(" ".join(f"+{c}" for c in want))
    return set(CONTROLLERS) & _words(control)


def _own_v1_dir(controller: str) -> Path | None:
    """This process's cgroup in the cgroup v1 hierarchy of ``controller`` (a hybrid host), or None."""
    mount = None
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            kind = right.split()
            if kind[:1] == ["cgroup"] and len(kind) > 2 and controller in kind[2].split(","):
                mount = left.split()[3:5]  # its root in the hierarchy, its mount point
                break
    if mount is None:
        return None
    root, point = mount
    with contextlib.suppress(OSError, ValueError), open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(","):
                if root != "/" and (path == root or path.startswith(root + "/")):
                    path = path[len(root):]
                return Path(point) / path.lstrip("/")
    return None


def _has_limit_file(parent: Path, controller: str) -> bool:
    """True if a cgroup made under ``parent`` has ``controller``'s limit file (a probe, removed)."""
    probe = parent / f"allfours-{os.getpid()}-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        return any((probe / name).exists() for name in _LIMIT_FILES[controller])
    finally:
        _remove_cgroup(probe)


def _find_places(base: Path) -> dict[str, Path]:
    """Per controller of :data:`CONTROLLERS` that can limit bots here, the folder their cgroups for it
    are made in: ``base`` (cgroup v2) when it gives its children the controller (:func:`_enable_v2`),
    else this process's own cgroup in the controller's v1 hierarchy (a hybrid host) where one can be
    made (empty ones of arena processes that are gone are removed first)."""
    places = dict.fromkeys(sorted(_enable_v2(base)), base)
    for c in CONTROLLERS:
        own = None if c in places else _own_v1_dir(c)
        if own is not None:
            _sweep_stale(own)
            if _has_limit_file(own, c):
                places[c] = own
    return places


def _warn_once(why: str, controllers: Sequence[str]) -> None:
    """One warning per arena process and reason: bot processes go without these limits."""
    with _detect_lock:
        if why in _warned:
            return
        _warned.add(why)
    log.warning("bot_limits_unavailable", controllers=list(controllers), why=why)


def limit_places() -> dict[str, Path]:
    """Per controller that limits bot processes here, the folder their cgroups for it are made in
    (:func:`_find_places`; none under the subreaper). Decided once per arena process, with one warning
    naming the controllers that cannot."""
    global _places
    kind, base = containment()
    with _detect_lock:
        if _places is None:
            _places = _find_places(base) if kind is Containment.CGROUP and base is not None else {}
        places = dict(_places)
    missing = [c for c in CONTROLLERS if c not in places]
    if kind is not Containment.CGROUP:
        _warn_once(UNDER_SUBREAPER, missing)
    elif missing:
        _warn_once(f"the arena's cgroup {base} cannot give bot cgroups these controllers (its "
                   "cgroup.subtree_control; it holds another program's process, or they are not delegated)", missing)
    return places


#: A bot process's limits when its config sets none: :data:`CPUS` cores, :data:`MEMORY_MB` MiB (no swap
#: beyond it), :data:`PIDS` processes and threads (a container's ``tmpfs_mb`` and log fields do not apply).
PROCESS_LIMITS = Limits(cpus=CPUS, memory_mb=MEMORY_MB, pids=PIDS)


def _write_limit(cgroup: Path, controller: str, limits: Limits) -> None:
    """Write ``controller``'s limit in ``cgroup`` (cgroup v2's files, or v1's): a CPU quota, memory
    without swap beyond it, or pids. :raises OSError:"""
    if controller == "pids":
        (cgroup / "pids.max").write_text(str(limits.pids))
        return
    if controller == "cpu":
        quota = max(1000, round(limits.cpus * CPU_PERIOD_US))  # the kernel's least quota is 1 ms
        if (cgroup / "cpu.max").exists():
            (cgroup / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
        else:
            (cgroup / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cgroup / "cpu.cfs_quota_us").write_text(str(quota))
        return
    limit = str(limits.memory_mb << 20)
    if (cgroup / "memory.max").exists():
        (cgroup / "memory.max").write_text(limit)
        if (cgroup / "memory.swap.max").exists():
            (cgroup / "memory.swap.max").write_text("0")
    else:
        (cgroup / "memory.limit_in_bytes").write_text(limit)
        if (cgroup / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: memory+swap, the same
            (cgroup / "memory.memsw.limit_in_bytes").write_text(limit)


def _count(cgroup: Path | None, files: Sequence[str], key: str) -> int:
    """The counter ``key`` (a ``key N`` line) of the first of ``files`` that ``cgroup`` has, else 0."""
    if cgroup is None:
        return 0
    for name in files:
        try:
            lines = (cgroup / name).read_text().splitlines()
        except OSError:
            continue
        counts = dict(line.split() for line in lines if len(line.split()) == 2)
        return int(counts.get(key, "0"))
    return 0


@dataclass
class _BotCgroups:
    """One bot's cgroups: ``main`` (cgroup v2, its containment), ``extra`` (in cgroup v1 hierarchies, a
    hybrid host's: for its limits), and per controller whose limit was written, the cgroup holding it."""

    main: Path
    extra: list[Path] = field(default_factory=list)
    limited: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def make(cls, base: Path, limits: Limits) -> _BotCgroups:
        """Make a bot's cgroups under ``base`` and :func:`limit_places` and write its limits there (a
        limit that cannot be written is warned about once and left out). :raises OSError: no ``main``."""
        places = limit_places()
        name = f"allfours-{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"
        made = cls(base / name)
        made.main.mkdir()
        for controller, parent in places.items():
            cgroup = parent / name
            try:
                if cgroup != made.main and cgroup not in made.extra:
                    cgroup.mkdir()
                    made.extra.append(cgroup)
                _write_limit(cgroup, controller, limits)
                made.limited[controller] = cgroup
            except OSError as e:
                _warn_once(f"cannot write a {controller} limit under {parent}: {e.strerror or e}", [controller])
        return made

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run by ``/bin/sh`` once it has moved itself into each of these cgroups (exit 126 if not)."""
        joins = "".join(f"echo 0 > {shlex.quote(str(c / 'cgroup.procs'))} || exit 126; " for c in self.extra)
        return ["/bin/sh", "-c", joins + 'echo 0 > "$0/cgroup.procs" || exit 126; exec "$@"', str(self.main), *argv]

    def oom_kills(self) -> int:
        """How many of the bot's processes the kernel killed at its memory limit (``oom_kill``)."""
        return _count(self.limited.get("memory"), ("memory.events", "memory.oom_control"), "oom_kill")

    def periods_throttled(self) -> int:
        """In how many periods the bot was held at its CPU quota (``cpu.stat``: ``nr_throttled``)."""
        return _count(self.limited.get("cpu"), ("cpu.stat",), "nr_throttled")

    def forks_refused(self) -> int:
        """How many forks or threads its pids limit refused (``pids.events``: ``max``)."""
        return _count(self.limited.get("pids"), ("pids.events",), "max")

    def remove(self, timeout_s: float = 5.0) -> None:
        """Remove every one of them (emptied: see :func:`_remove_cgroup`)."""
        for cgroup in (self.main, *self.extra):
            _remove_cgroup(cgroup, timeout_s)


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
                    os.write(out, f"\n{TRUNCATED.format(limit=self.limit)}\n".encode())
                    self.discarded += len(chunk) - len(keep)
                    self._drain()
                    break
            if self.discarded:
                os.write(out, f"[arena: {self.discarded} bytes discarded]\n".encode())
        finally:
            os.close(out)
            os.close(self.fd)

    def _drain(self) -> None:
        """Count and drop the rest of the output until its end, at most :data:`DRAIN_BYTES_PER_S` a second:
        past that the bot's writes wait for the pipe (its own time). ``splice`` moves the pipe's pages to
        ``/dev/null`` without copying them into the arena. Read as fast as the bot wrote, a bot writing all it
        could (2 GB a second) cost the arena's pump two fifths of a core (``benchmarks/log_flood.py``)."""
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        start, drained = time.monotonic(), 0
        try:
            while moved := os.splice(self.fd, null, DRAIN_CHUNK):
                self.discarded += moved
                drained += moved
                time.sleep(max(0.0, start + drained / DRAIN_BYTES_PER_S - time.monotonic()))
        finally:
            os.close(null)


class BotProcess:
    """One bot process and everything it starts (see the module docstring). Thread-safe.

    ``cgroup`` is its cgroup v2 (None under the subreaper), ``limit_cgroups`` per controller whose limit
    was set (``cpu``, ``memory``, ``pids``) the cgroup holding it. Once it has ended (its own exit, or
    :meth:`stop`), ``oom_killed`` says whether the kernel killed one of its processes at its memory
    limit, ``pids_limited`` whether its pids limit refused a fork or a thread, and ``cpu_throttled`` in
    how many periods of :data:`CPU_PERIOD_US` its CPU quota held it back (0 without one), and ``outlived``
    whether its own process had exited while others it started still ran (cgroup mode: one of them may have
    held its stream to the referee, so the stream's end says nothing of when the bot's own process exited).
    """

    def __init__(
        self, popen: subprocess.Popen[bytes], kind: Containment, cgroups: _BotCgroups | None, pump: _LogPump
    ):
        self.popen = popen
        self.kind = kind
        self._cgroups = cgroups
        self.cgroup = cgroups.main if cgroups is not None else None
        self.limit_cgroups = dict(cgroups.limited) if cgroups is not None else {}
        self.oom_killed = False
        self.pids_limited = False
        self.cpu_throttled = 0
        self.outlived = False
        self.pump = pump
        self.grace_s = GRACE_S
        #: The sandbox it runs in (:meth:`start`'s ``jail``), for its owner to release once it is gone.
        self.jail: Jail | None = None
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
        limits: Limits = PROCESS_LIMITS,
    ) -> BotProcess:
        """Start ``argv`` (no shell) in ``cwd`` with exactly ``env``; output to ``log_path`` (capped);
        inside ``jail``'s namespaces when given (:meth:`arena.hosting.jail.Jail.wrap`); limited to
        ``limits.cpus`` cores, ``limits.memory_mb`` MiB and ``limits.pids`` processes and threads where
        it can be (see the module docstring).

        :raises OSError: (e.g. :class:`FileNotFoundError`) if the command or ``cwd`` cannot be used.
        """
        _check_command(argv, cwd, env)
        if jail is not None:
            argv = jail.wrap(argv, cwd, limits)
        kind, base = containment(prefer)
        cgroups = None
        if kind is Containment.CGROUP and base is not None:
            cgroups = _BotCgroups.make(base, limits)
            full = cgroups.command(argv)
        else:
            _warn_once(UNDER_SUBREAPER, CONTROLLERS)
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
            if cgroups is not None:
                cgroups.remove(timeout_s=0.0)
            raise
        finally:
            os.close(write_fd)
        pump = _LogPump(read_fd, Path(log_path), log_limit)
        pump.start()
        proc = cls(popen, kind, cgroups, pump)
        proc.jail = jail
        return proc

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

    def ended(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the bot to have exited and, in ``cgroup`` mode, for what its
        limits did to be read (``oom_killed``, ``pids_limited``, ``cpu_throttled``); True if both are done."""
        deadline = time.monotonic() + timeout
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return self.kind is not Containment.CGROUP or self._ended.wait(max(0.0, deadline - time.monotonic()))

    def _watch(self) -> None:
        """cgroup mode: when the bot's own process exits, end everything it started."""
        self.popen.wait()
        self._end_cgroup()

    def _members(self) -> list[int]:
        assert self.cgroup is not None
        return _procs(self.cgroup)

    def _end_cgroup(self) -> None:
        """SIGTERM every member, wait ``grace_s`` for them, then ``cgroup.kill``; read what its limits
        did (``oom_killed``, ``pids_limited``, ``cpu_throttled``) and remove its cgroups."""
        with self._end_lock:
            if not self._ended.is_set() and self._cgroups is not None:
                self.outlived = self.popen.poll() is not None and bool(self._members())
                self._end_members(self._cgroups.main)
                self.oom_killed = self._cgroups.oom_kills() > 0
                self.pids_limited = self._cgroups.forks_refused() > 0
                self.cpu_throttled = self._cgroups.periods_throttled()
                self._cgroups.remove()
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
