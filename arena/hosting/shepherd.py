"""The shepherd: runs one bot command as a child subreaper, so nothing the bot starts outlives it.

    python -I -S arena/hosting/shepherd.py GRACE_S -- ARGV...

It sets ``PR_SET_CHILD_SUBREAPER`` on itself (Linux >= 3.4), starts ``ARGV`` (same working directory,
environment, stdin/stdout/stderr), and waits. Every process the bot starts — a plain child, one that
calls ``setsid``, a double-forked daemon — is its descendant or, once orphaned, its child (that is
what a subreaper means), so when the bot exits or the shepherd receives SIGTERM/SIGINT/SIGHUP, it
sends SIGTERM to the bot and every descendant, waits up to ``GRACE_S`` seconds, then SIGKILLs what
is left, repeating until none is left, and reaps them. It then exits as the bot did (same status,
or killed by the same signal). A command that cannot be started: status 127 and one line on stderr.

Run by file path with only the standard library, so it starts in a few milliseconds and imports
nothing from the bot's working directory. Used by :mod:`arena.hosting.procs` when cgroup v2 is not writable.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
#: Kill rounds at most (a fork bomb is killed faster than it forks: each round SIGKILLs every process).
MAX_ROUNDS = 200


class _Stop(Exception):
    """Raised by the signal handler to leave the wait."""


def descendants(root: int) -> list[int]:
    """Pids of every live process below ``root`` (read from /proc; zombies included)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


#: Wait statuses of the children reaped so far, by pid (the bot's is read from here).
REAPED: dict[int, int] = {}


def _reap() -> None:
    """Reap every child that has exited (the subreaper inherits the orphans' exit statuses)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        REAPED[pid] = status


def end_all(grace_s: float) -> None:
    """SIGTERM every descendant, wait up to ``grace_s`` seconds, then SIGKILL until none is left."""
    me = os.getpid()
    for pid in descendants(me):
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap()
        if not descendants(me):
            return
        time.sleep(0.02)
    for _ in range(MAX_ROUNDS):
        left = descendants(me)
        if not left:
            return
        for pid in left:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.005)
        _reap()


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _exit_like(status: int | None) -> None:
    """Exit as the bot did: its exit code, or killed by its signal."""
    if status is None:
        sys.exit(0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1)
        sys.exit(128 + sig)
    sys.exit(os.WEXITSTATUS(status))


def main(argv: list[str]) -> None:
    """See the module docstring."""
    grace_s = float(argv[0])
    command = argv[argv.index("--") + 1 :]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"shepherd: PR_SET_CHILD_SUBREAPER failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        sys.exit(126)

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        bot = os.posix_spawnp(command[0], command, os.environ)
    except OSError as e:
        print(f"could not start {command[0]!r}: {e.strerror or e}", file=sys.stderr)
        sys.exit(127)
    try:
        while bot not in REAPED:
            pid, st = os.waitpid(-1, 0)
            REAPED[pid] = st
    except (_Stop, ChildProcessError):
        pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    end_all(grace_s)  # the bot too, when the shepherd was stopped from outside
    _reap()
    _exit_like(REAPED.get(bot))


if __name__ == "__main__":
    main(sys.argv[1:])
