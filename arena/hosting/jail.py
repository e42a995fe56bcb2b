"""Process bots in their own namespaces, without docker: Debian's ``bubblewrap`` (``bwrap``).

Every local bot process (one per seat per game, and every lobby worker) with ``sandbox = "bwrap"`` (the
default) is started as ``bwrap [options] -- ARGV`` (:meth:`Jail.wrap`), inside the containment of
:mod:`arena.hosting.procs`. What the bot then sees and reaches:

- **files**: an empty root with, read-only, ``/usr`` (and the ``/bin``, ``/lib``… links of a merged-usr
  system), ``/etc/ld.so.cache`` and ``/etc/ssl/certs`` (public CA certificates), the Python runtime
  of the arena (its virtualenv ``sys.prefix`` and the interpreter's ``sys.base_prefix``, at their own
  paths), the bot-facing packages ``sdk/``,
  ``allfours/``, ``referee/`` and the ``proto/`` folder (public code: a Python bot imports the SDK, the
  Node.js bot loads the .proto files), and the bot's own folder (its ``cwd``); a private ``/tmp``
  (tmpfs, mounted first so that a bot folder under ``/tmp`` is still bound over it; also
  ``HOME`` and ``TMPDIR``; 16 MiB, a container's ``/tmp``: its ``limits.tmpfs_mb``),
  its own ``/proc`` (whose host-wide counters, free memory, the load, CPU time, open files…, are
  read-only files of a fixed view, :mod:`arena.hosting.procview`: two processes of one bot could signal
  each other through them) and a minimal ``/dev`` with a ``/dev/shm`` of the same size. Nothing else is
  writable: the root bwrap makes and its ``/dev`` are tmpfs mounts of no size that the bot owns, so
  both are remounted read-only last (a bot wrote as much of the host's memory to ``/`` or
  ``/dev/shm`` as it liked). Not the arena's
  output folder (``arena.sqlite`` with the unrevealed master seed, the records, other seats' logs),
  not the home folder, not the rest of the repository (``arena.config.check_bot_cwds`` refuses a
  sandboxed bot whose folder holds the output folder).
- **network**: a network namespace of its own (only a loopback nobody else is on), so nothing on the
  machine or beyond; the referee and the lobby listen on unix sockets too, **one pair a process**:
  every per-game seat's process and every lobby worker process of a bot has a pair of its own
  (:meth:`Jail.for_process`, given up with :meth:`Jail.release` when its game ends or the worker
  exits or is stopped: two processes of a bot at once, partners or a pair's twins, whether per-game
  seats or workers, could pass each other bits through the counts a shared socket's server keeps), in
  a folder of the run (``<sockets>/<16 random hex digits>/``: a name made of the bot's name and a count
  told a bot, through its ``/proc/self/mountinfo``, how many processes the run had started) bound at
  :data:`SOCKET_DIR` inside, so the bot is told ``ALLFOURS_REFEREE=unix:/run/allfours/referee.sock``
  and ``ALLFOURS_LOBBY=unix:/run/allfours/lobby.sock``. Each process's sockets are served by servers
  of their own (``RefereeServer.listen_unix``, ``Lobby.listen_unix``): a unix peer has no address, so
  on one shared socket a bot holding thousands of streams that never say Hello took every RPC slot
  of the referee and the lobby and stopped every other bot's games; on its own sockets it can only
  fail its own. A run holds one pair a running sandboxed process (each worker of a pool, each seat of
  a game in play), no more.
- **processes**: its own pid namespace (when its first process ends, the kernel kills every other one
  in it), ``--die-with-parent``, a new session (no terminal to inject input into), every capability
  dropped and a user namespace whose only user is ``nobody`` (65534, which is the arena's user outside);
  a seccomp filter refuses the kernel keyring's and file watches' calls (:mod:`arena.hosting.seccomp`:
  keys count per user of the host, so a bot's keys showed in its partner's ``/proc/key-users``; a
  watch on a shared file saw the partner read it). bwrap reads the filter from descriptor
  :data:`SECCOMP_FD`, which ``/bin/sh`` opens before it becomes bwrap.
- **counts per user of the host**: every sandbox's user namespace is owned by the arena's user, so the
  kernel's per-user counts of it are shared by every sandboxed bot, and a bot that filled one made the next
  call of another fail: a bit a probe between partners (measured: 96,366 queued real-time signals made a
  partner's ``sigqueue`` fail with EAGAIN; nine message queues its ``mq_open`` with EMFILE; 59 pipes of 1 MiB
  shrank its next pipe from 64 KiB to 8 KiB). A lower limit a sandbox does not close the first two: the
  kernel checks the user's count over every sandbox against the limit each sandbox's namespace was made
  with (at 128 signals a sandbox, 122 queued by one made its partner's first ``sigqueue`` fail). So
  ``prlimit`` (util-linux) starts bwrap with :data:`RLIMITS`, no queued signal and no message queue byte
  at all, the same for every sandbox whatever the others do: a real-time signal a bot sends is dropped and
  ``sigqueue`` fails (EAGAIN), ``mq_open`` fails (EMFILE); signals below ``SIGRTMIN`` (a bot's SIGTERM, its
  children's SIGCHLD) are delivered as ever. And :meth:`Jail.open` turns off the host's soft limit on
  pipe buffers per user (:func:`lift_pipe_limit`: ``fs.pipe-user-pages-soft`` 0; a pipe's pages still
  count against its bot's memory limit), or says once that it could not (not root).
  bwrap's ``--disable-userns``: a bot makes no namespace of its own (a user namespace, and under it a
  network, mount… one, counted per user of the host against ``user.max_*_namespaces``: a bot holding
  them made every new sandbox fail to start, ENOSPC). What is still shared (docs/arena.md): descriptors
  in flight over unix sockets and epoll watches, counted per user of the host with no limit a sandbox
  can lower, and host-wide counters read through a bot's own objects (pipe inode numbers, socket cookies).

Why these options (checked as root in this project's environment, kernel 6.18, bubblewrap 0.8):
run as root, bwrap without ``--unshare-user`` keeps every capability of the host's root in the
sandbox (``CapEff`` all set: it could mount or ``mknod`` its way out), so the user namespace and
``--cap-drop ALL`` are always given; ``--unshare-all`` alone only *tries* a user namespace.
``--proc /proc`` mounts a fresh proc in the new pid namespace, which works here. A unix socket on a
read-only bind mount can still be connected to (the read-only flag governs files and folders), so the
socket folder is bound read-only and the bot cannot replace a socket with its own.

A missing ``bwrap`` is :class:`JailError` with one line naming the package (:func:`find_bwrap`).
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from arena.hosting import procview
from arena.hosting.procview import view
from arena.hosting.sandbox import OPEN_FILES, Limits
from arena.hosting.seccomp import filter_file

log = structlog.get_logger("arena.hosting.jail")

#: Seconds the start-up probe (:meth:`Jail.probe`) may take: a Python that starts and exits at once.
PROBE_TIMEOUT_S = 60.0
#: The Debian package that provides ``bwrap``.
PACKAGE = "bubblewrap"
#: Where the run's socket folder appears inside every sandbox.
SOCKET_DIR = "/run/allfours"
#: The socket file names in that folder.
REFEREE_SOCKET = "referee.sock"
LOBBY_SOCKET = "lobby.sock"
#: The user and group a sandboxed bot runs as (nobody).
NOBODY = "65534"
#: The limits ``prlimit`` sets on bwrap and so on the bot: no queued signal (``RLIMIT_SIGPENDING``) and no POSIX
#: message queue byte (``RLIMIT_MSGQUEUE``): both counts are the arena user's over every sandbox (the module
#: docstring), so any other limit left a bit between two bots; and a container's open files a process
#: (``RLIMIT_NOFILE``, :data:`arena.hosting.sandbox.OPEN_FILES`): with the arena's own (20,000 here) one sandbox
#: of 64 processes could hold 1.28 million of the host's 2.47 million (``fs.file-max``), two all of it.
RLIMITS = ("--sigpending=0:0", "--msgqueue=0:0", f"--nofile={OPEN_FILES}:{OPEN_FILES}")
#: The host's soft limit of pipe buffer pages per user (0: none), which :func:`lift_pipe_limit` sets to 0.
PIPE_PAGES_SOFT = Path("/proc/sys/fs/pipe-user-pages-soft")
#: The descriptor bwrap reads its seccomp filter from (:mod:`arena.hosting.seccomp`).
SECCOMP_FD = 9
#: The size of a sandboxed bot's ``/tmp`` (MiB): a container's (``arena.hosting.sandbox.Limits.tmpfs_mb``).
TMPFS_MB = Limits().tmpfs_mb


class JailError(RuntimeError):
    """Sandboxed bots cannot be started here (``str(e)`` is one line)."""


def find_bwrap(path: str | None = None) -> str:
    """The ``bwrap`` executable on ``path`` (default: ``$PATH``).

    :raises JailError: naming the package when it is not there.
    """
    found = shutil.which("bwrap", path=path if path is not None else os.environ.get("PATH", os.defpath))
    if found is None:
        raise JailError(
            f"process bots run sandboxed with bwrap, which is not installed: install Debian's package {PACKAGE} "
            f"(apt-get install {PACKAGE}; scripts/setup.sh does), or set sandbox = \"none\" for a trusted bot"
        )
    return found


def find_prlimit() -> str:
    """The ``prlimit`` executable (Debian's util-linux, always installed there).

    :raises JailError: naming the package when it is not there."""
    found = shutil.which("prlimit", path=os.environ.get("PATH", os.defpath))
    if found is None:
        raise JailError("process bots start sandboxed with prlimit, which is not installed: install Debian's package "
                        "util-linux, or set sandbox = \"none\" for a trusted bot")
    return found


def lift_pipe_limit(path: Path = PIPE_PAGES_SOFT) -> str | None:
    """Turn off the host's soft limit of pipe buffer pages per user (``fs.pipe-user-pages-soft``): past it the
    kernel gives every new pipe of the user's unprivileged processes 2 pages instead of 16, so one sandboxed bot
    holding pipes of 1 MiB shrank its partner's next pipe, a bit it read with ``F_GETPIPE_SZ``. Returns one line
    for the log: what was changed, or why it could not be (not root: the channel stays open, and the line says
    the command); None when there is no limit already.
    """
    try:
        value = int(path.read_text())
    except (OSError, ValueError):
        return None  # not Linux's /proc: nothing to lift
    if value == 0:
        return None
    try:
        path.write_text("0\n")
    except OSError as e:
        return (f"cannot turn off the host's soft limit of pipe pages per user ({path}: {value}; {e.strerror}): "
                "sandboxed bots can pass each other bits through it; as root: sysctl fs.pipe-user-pages-soft=0")
    return f"turned off the host's soft limit of pipe pages per user ({path}: was {value}, now 0)"


def _runtime_paths() -> list[Path]:
    """The folders every sandboxed bot sees read-only besides ``/usr``: the Python runtime and the
    bot-facing packages (their folders as this process imports them) and the repository's ``proto/``."""
    import allfours
    import referee
    import sdk

    paths = [Path(sys.prefix), Path(sys.base_prefix)]
    paths += [Path(m.__file__ or "").resolve().parent for m in (sdk, allfours, referee)]
    proto = Path(allfours.__file__ or "").resolve().parents[1] / "proto"
    if proto.is_dir():
        paths.append(proto)
    return [p for p in dict.fromkeys(paths) if p.is_dir() and not _under(p, Path("/usr"))]


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _root_links() -> list[str]:
    """``/bin``, ``/lib``, ``/lib64``, ``/sbin`` as this system has them: symlinks into ``/usr`` (merged
    usr, as Debian) are made again, real folders are bound read-only."""
    args: list[str] = []
    for name in ("bin", "lib", "lib32", "lib64", "sbin"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _sweep_stale(tmp: Path) -> None:
    """Remove the socket folders (``allfours-<pid>-…`` holding only sockets, in folders of their own) of
    arena processes that are gone."""
    for d in tmp.glob("allfours-*-*"):
        pid = d.name.split("-")[1]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        try:
            if d.is_dir() and all(f.is_socket() or f.is_dir() for f in d.rglob("*")):
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue


@dataclass
class Jail:
    """One run's sandbox for process bots: ``bwrap`` and the folder of the unix sockets the referee and
    the lobby listen on (made by :meth:`open`, removed by :meth:`close`)."""

    bwrap: str
    sockets: Path
    runtime: list[Path] = field(default_factory=_runtime_paths)
    #: The size of the bot's ``/tmp`` in MiB.
    tmpfs_mb: int = TMPFS_MB
    #: The ``prlimit`` executable that starts ``bwrap`` (:func:`find_prlimit`, found once per run).
    prlimit: str = field(default_factory=find_prlimit)
    _listeners: list[Callable[[Path], None]] = field(default_factory=list, repr=False)
    _unlisteners: list[Callable[[Path], None]] = field(default_factory=list, repr=False)
    _bots: dict[str, Path] = field(default_factory=dict, repr=False)
    _processes: Iterator[int] = field(default_factory=itertools.count, repr=False)
    _process_folders: dict[Path, str] = field(default_factory=dict, repr=False)  # for_process's: folder -> key
    _keys: set[object] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, path: str | None = None) -> Jail:
        """Find ``bwrap`` and make the socket folder (``/tmp/allfours-<arena pid>-XXXX``, 0700: a unix
        socket's path is at most 107 bytes, so not under a deep output folder). Folders left by arena
        processes that are gone (killed with SIGKILL) are removed first.

        :raises JailError: when ``bwrap`` is missing, or cannot make a sandbox here (:meth:`probe`).
        """
        bwrap, prlimit = find_bwrap(path), find_prlimit()
        _sweep_stale(Path(tempfile.gettempdir()))
        if (said := lift_pipe_limit()) is not None:
            log.warning("pipe_limit", said=said)
        jail = cls(bwrap, Path(tempfile.mkdtemp(prefix=f"allfours-{os.getpid()}-")), prlimit=prlimit)
        try:
            jail.probe()
        except BaseException:
            jail.close()
            raise
        return jail

    def probe(self) -> None:
        """Start one empty process in the sandbox, so a ``bwrap`` that cannot make its namespaces here (a
        container without user namespaces, a kernel that forbids them) stops the run at once, before any
        game, rather than every bot failing to start and every game being forfeited.

        :raises JailError: one line quoting bwrap's own reason.
        """
        try:
            done = subprocess.run(self.wrap([sys.executable, "-c", "pass"], str(self.sockets)), capture_output=True,
                                  text=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise JailError(f"bwrap cannot start a sandboxed process here: {e}") from None
        if done.returncode != 0:
            said = next((x.strip() for x in done.stderr.splitlines() if x.strip()), f"exit status {done.returncode}")
            raise JailError(f"bwrap cannot make the bots' sandbox here ({said[:300]}): run the arena where user "
                            'namespaces are allowed, or opt trusted bots out with sandbox = "none"')

    @staticmethod
    def referee_inside() -> str:
        """The referee's address as a sandboxed bot dials it."""
        return f"unix:{SOCKET_DIR}/{REFEREE_SOCKET}"

    @staticmethod
    def lobby_inside() -> str:
        """The lobby's address as a sandboxed bot dials it."""
        return f"unix:{SOCKET_DIR}/{LOBBY_SOCKET}"

    def on_bot_folder(self, listen: Callable[[Path], None], key: object = None,
                      unlisten: Callable[[Path], None] | None = None) -> None:
        """Call ``listen(folder)`` for every bot's socket folder, those made already and each one
        :meth:`for_bot` makes later: the referee and the lobby bind their sockets for that bot there
        (``lambda d: referee.listen_unix(f"unix:{d}/referee.sock")``), and ``unlisten(folder)`` when
        :meth:`release` gives a process's folder up. A second listener with the same ``key`` (not None:
        e.g. the server it binds for) is not added again."""
        with self._lock:
            if key is not None and key in self._keys:
                return
            self._keys.add(key)
            self._listeners.append(listen)
            if unlisten is not None:
                self._unlisteners.append(unlisten)
            for folder in self._bots.values():
                listen(folder)

    def for_process(self, name: str, tmpfs_mb: int = TMPFS_MB) -> Jail:
        """:meth:`for_bot` for one process of bot ``name`` (a per-game seat, or a lobby worker) with a socket
        folder of its own, given up by :meth:`release` once the process is gone. Two processes of one bot
        at once (a side's two seats at four players, whether per-game processes or two of its workers; a
        duplicate pair's two games under concurrency) shared its sockets, and every count a server keeps
        of them is seen by both: one holding N silent streams left the other 128 - N before refusals, 7
        bits passed a round (a hand in a few).

        :raises RuntimeError: from a listener that cannot bind the socket.
        """
        with self._lock:
            key = f"{name}\0{next(self._processes)}"
        jail = self.for_bot(key, tmpfs_mb)
        with self._lock:
            self._process_folders[jail.sockets] = key
        return jail

    def release(self, jail: Jail) -> None:
        """Give up the socket folder of a process's sandbox (:meth:`for_process`): ``unlisten`` it and
        remove it. Nothing for a folder this jail did not make or gave up already."""
        with self._lock:
            key = self._process_folders.pop(jail.sockets, None)
            if key is None:
                return
            del self._bots[key]
            unlisteners = list(self._unlisteners)
        self._unlisten(jail.sockets, unlisteners)

    @staticmethod
    def _unlisten(folder: Path, unlisteners: Sequence[Callable[[Path], None]]) -> None:
        """Every ``unlisten(folder)``, even after one fails, then ``folder`` removed.

        :raises Exception: the first failure, once all were tried."""
        failed: Exception | None = None
        for unlisten in unlisteners:
            try:
                unlisten(folder)
            except Exception as e:  # the others still stop, the folder still goes
                failed = failed or e
        shutil.rmtree(folder, ignore_errors=True)
        if failed is not None:
            raise failed

    def for_bot(self, name: str, tmpfs_mb: int = TMPFS_MB) -> Jail:
        """The sandbox of bot ``name``'s processes: this one with the bot's own socket folder (made, and
        announced to :meth:`on_bot_folder`'s listeners, the first time) and a ``/tmp`` of ``tmpfs_mb``
        MiB. Two bots never share a socket, so neither can crowd the other's out.

        :raises RuntimeError: from a listener that cannot bind the bot's socket.
        """
        with self._lock:
            folder = self._bots.get(name)
            if folder is None:
                # a random name, not one made of the bot's name (and a process's number): a bot reads its
                # folder's host path in /proc/self/mountinfo, and a run-wide count told it how many processes
                # of every bot the run had started (one bot's restarts a signal to another)
                folder = self.sockets / secrets.token_hex(8)
                folder.mkdir(mode=0o700)
                try:
                    for listen in self._listeners:
                        listen(folder)
                except BaseException:  # the servers already bound there stop, the folder goes
                    self._unlisten(folder, list(self._unlisteners))
                    raise
                self._bots[name] = folder
        return Jail(self.bwrap, folder, self.runtime, tmpfs_mb, self.prlimit)

    def wrap(self, argv: Sequence[str], cwd: str | None, limits: Limits | None = None) -> list[str]:
        """``argv`` run by ``bwrap`` in the sandbox (see the module docstring), in ``cwd`` (default: the
        arena's working directory), which the bot sees read-only as its own folder; its ``/proc`` shows
        the host-wide counters as a fixed view of a machine of ``limits`` (default: :class:`Limits`'s)."""
        folder = str(Path(cwd or os.getcwd()).resolve())
        size = ["--size", str(self.tmpfs_mb * 1024 * 1024)]
        args = [self.prlimit, *RLIMITS, "--", self.bwrap, "--unshare-all", "--unshare-user", "--uid", NOBODY,
                "--gid", NOBODY, "--disable-userns",
                "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "bot",
                *size, "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr",
                *_root_links()]
        for public in ("/etc/ld.so.cache", "/etc/ssl/certs"):  # the linker's cache; CA certificates (Node reads them)
            if Path(public).exists():
                args += ["--ro-bind", public, public]
        for p in self.runtime:
            args += ["--ro-bind", str(p), str(p)]
        args += ["--ro-bind", folder, folder, "--proc", "/proc", *view(limits or Limits()).bwrap_args(),
                 "--dev", "/dev", *size, "--tmpfs", "/dev/shm",
                 "--ro-bind", str(self.sockets), SOCKET_DIR, "--remount-ro", "/dev", "--remount-ro", "/",
                 "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--chdir", folder]
        seccomp = filter_file(procview.folder())
        if seccomp is None:
            return [*args, "--", *argv]
        # bwrap reads the filter from a descriptor: a shell opens it as SECCOMP_FD and becomes bwrap
        return ["/bin/sh", "-c", f'exec "$@" {SECCOMP_FD}<"$0"', str(seccomp),
                *args, "--seccomp", str(SECCOMP_FD), "--", *argv]

    def close(self) -> None:
        """Remove the socket folder (after the referee and the lobby stopped)."""
        shutil.rmtree(self.sockets, ignore_errors=True)

