"""``python -m arena.hosting.tether PID -- ARGV...``: become ``ARGV`` (exec, the same process), tethered
to the process ``PID`` that started it: SIGKILL when the thread that started it ends (Linux
``prctl(PR_SET_PDEATHSIG)``, which exec keeps), so nothing it runs outlives a killed arena.

Why a command and not ``subprocess``'s ``preexec_fn``: in a process that uses gRPC, Python code between
fork and exec makes the child run gRPC's fork handlers, which start its poller thread again; the
child's ``close_fds`` then closes that poller's epoll descriptor and the child aborts before exec
("epoll_wait error: Bad file descriptor", grpc/grpc#43055): 67 of 300 spawns in a reproduction while
another thread used gRPC, none without ``preexec_fn`` (CPython then spawns with vfork, running no fork
handler). This command costs one more exec instead.

Exit status 2 with one line on stderr for a bad command line; 137 (as if killed) when ``PID`` had
already ended before the tether was tied (the parent's death would otherwise go unnoticed).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

#: ``prctl`` option: the signal the calling process gets when its parent thread ends (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def tether_command(argv: Sequence[str]) -> list[str]:
    """``argv`` run by this module, tethered to the calling process (see the module docstring)."""
    return [sys.executable, "-m", "arena.hosting.tether", str(os.getpid()), "--", *argv]


def main(args: Sequence[str]) -> int:
    """Tie the tether and exec ``args[2:]``; returns only on a bad command line or a gone parent."""
    if len(args) < 3 or args[1] != "--" or not args[0].isdigit():
        print("usage: python -m arena.hosting.tether PID -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        print(f"tether: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 2
    if os.getppid() != int(args[0]):  # the parent ended before the tether was tied
        return 137
    os.execvp(args[2], list(args[2:]))
    return 2  # not reached: execvp raises OSError on failure


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
