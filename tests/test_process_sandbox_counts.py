"""No count the kernel keeps per user of the host joins two process sandboxes (bwrap, arena/hosting/jail.py).

Every sandbox's user namespace is owned by the arena's user, and the kernel keeps some counts per user of the
host over every namespace that user owns. A bot that filled one made the next call of another bot fail, a bit a
probe between partners at a table of four (each its own process in its own sandbox). Measured before the fix,
as root: 96,366 queued real-time signals made the partner's ``sigqueue`` fail (EAGAIN); nine message queues its
``mq_open`` (EMFILE); 59 pipes of 1 MiB and 100 more shrank its next pipe from 65,536 to 8,192 bytes. Each test
here runs the probe alone, then while another sandbox holds all it can, and asks for the same answer (each
failed before the fix). Now a sandbox may queue no signal and open no message queue at all, so both probes are
refused alike, and pipes are never shrunk (the host's soft limit is off). A hostile review then found two more
(io_uring's registered buffers, pinned pages of the host user: 31 rings of 64 pages made the partner's
``io_uring_setup`` fail; a lock on a file both sandboxes bind), now refused by the seccomp filter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CI") != "true",
                       reason="needs Debian's bubblewrap (scripts/setup.sh installs it)"),
]

_MQ = '''import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("reserved", ctypes.c_long * 4)]
rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(Attr)]
def one(i):
    fd = rt.mq_open(f"/q{os.getpid()}-{i}".encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(Attr(0, 10, 8192, 0)))
    return "ok" if fd >= 0 else os.strerror(ctypes.get_errno())
'''
_SIGNALS = '''import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
def one(i):
    ok = libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0
    return "ok" if ok else os.strerror(ctypes.get_errno())
'''
_PIPES = '''import fcntl, os
held = []
def one(i):
    r, w = os.pipe()
    held.append((r, w))
    if i < 80:  # the first 80 as large as a pipe may be (1 MiB each: 256 pages, the soft limit 16,384)
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ (refused once the user's pages pass the soft limit)
        except OSError:
            pass
    return str(fcntl.fcntl(w, 1032))  # F_GETPIPE_SZ: 65,536 bytes, or 8,192 past the soft limit
'''
_URING = """import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
class Params(ctypes.Structure):
    _fields_ = [("words", ctypes.c_uint32 * 30)]  # struct io_uring_params: 120 bytes
class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buffers = []
def one(i):  # a ring with a registered buffer of 64 pages (the probe: 1), pinned: locked pages of the host user
    pages = 1 if i >= 10 ** 6 else 64
    fd = libc.syscall(425, 4, ctypes.byref(Params()))  # io_uring_setup
    if fd < 0:
        return "setup: " + os.strerror(ctypes.get_errno())
    buffers.append(mmap.mmap(-1, pages * 4096))
    iov = Iovec(ctypes.addressof(ctypes.c_char.from_buffer(buffers[-1])), pages * 4096)
    ok = libc.syscall(427, fd, 0, ctypes.byref(iov), 1) == 0  # io_uring_register: IORING_REGISTER_BUFFERS
    return "ok" if ok else os.strerror(ctypes.get_errno())
"""
_LOCKS = """import fcntl, os
shared = open("shared.txt", "rb")  # in the bot's folder, which both sandboxes bind (read-only)
def one(i):  # the filler holds a shared lock; the probe asks for an exclusive one without waiting
    try:
        fcntl.flock(shared, fcntl.LOCK_SH if i < 10 ** 6 else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return os.strerror(e.errno)
    return "ok"
"""
#: Per count: the code defining ``one(i)`` (one more of it held; what the kernel said) and how many a filler takes.
COUNTS = {"signals": (_SIGNALS, 100_000), "message queues": (_MQ, 1_000), "pipe pages": (_PIPES, 300),
          "io_uring locked pages": (_URING, 10_000), "a file lock": (_LOCKS, 1)}

#: The filler: ``one`` until it says anything but "ok" or a size (or N times), prints how many, holds them until
#: told. The probe: ``one(10**6)`` once (its first of a kind, past the pipes' large ones), prints what it said.
FILLER = '''
import sys
n, taken = int(sys.argv[1]), 0
while taken < n and one(taken) in ("ok", "65536", "1048576"):
    taken += 1
print(taken, flush=True)
sys.stdin.readline()
'''
PROBE = '''
print(one(10 ** 6), flush=True)
'''


@pytest.mark.parametrize("count", list(COUNTS))
def test_a_sandbox_filling_a_per_user_count_tells_another_nothing(tmp_path: Path, count: str) -> None:
    from arena.hosting.jail import Jail

    code, many = COUNTS[count]
    (tmp_path / "shared.txt").write_text("a file of the bot's folder\n")
    jail = Jail.open()
    try:
        def run(script: str, *args: str) -> subprocess.Popen[str]:
            argv = [sys.executable, "-c", code + script, *args]
            return subprocess.Popen(jail.for_process(f"bot-{len(args)}").wrap(argv, str(tmp_path)),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        alone, err = run(PROBE).communicate(timeout=60)
        filler = run(FILLER, str(many))
        assert filler.stdout is not None and filler.stdin is not None
        held = filler.stdout.readline()
        beside, err2 = run(PROBE).communicate(timeout=60)
        filler.communicate("done\n", timeout=60)
    finally:
        jail.close()
    assert alone.strip() and not err and not err2, (alone, err, err2)
    assert held.strip().isdigit(), f"the filler did not run to its end: {held!r}"  # 0 for the refused kinds
    assert beside == alone, f"{count}: alone the probe got {alone.strip()!r}, beside a filler holding {held.strip()} " \
                            f"it got {beside.strip()!r}"


def test_lifting_the_pipe_limit_says_what_it_did_and_why_it_could_not(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``lift_pipe_limit``: 0 already is nothing to say; a limit is turned off and said; a limit it may not write
    (not root) is one line with the command that would."""
    from arena.hosting.jail import lift_pipe_limit

    soft = tmp_path / "pipe-user-pages-soft"
    soft.write_text("0\n")
    assert lift_pipe_limit(soft) is None
    soft.write_text("16384\n")
    said = lift_pipe_limit(soft)
    assert said == f"turned off the host's soft limit of pipe pages per user ({soft}: was 16384, now 0)", said
    assert soft.read_text() == "0\n"
    soft.write_text("16384\n")

    def refused(self: Path, *args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_text", refused)
    said = lift_pipe_limit(soft)
    assert said is not None and said.startswith("cannot turn off the host's soft limit of pipe pages per user")
    assert said.endswith("as root: sysctl fs.pipe-user-pages-soft=0") and "Permission denied" in said, said


LIMITS_INSIDE = """import ctypes, os, resource
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def said(result):
    return "ok" if result >= 0 else os.strerror(ctypes.get_errno())
print(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
print(said(libc.unshare(0x10000000)))  # CLONE_NEWUSER
print(said(libc.syscall(298, ctypes.create_string_buffer(128), 0, -1, -1, 0)))  # perf_event_open
import multiprocessing
print(multiprocessing.Pool(2).map(abs, [-1, -2]))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the probe calls perf_event_open by its x86-64 number")
def test_a_sandboxed_bot_makes_no_namespace_and_holds_few_files(tmp_path: Path) -> None:
    """A bot made nested user namespaces (and network, mount… ones under them), counted per user of the host:
    holding them made every new sandbox fail to start (bwrap's ENOSPC). bwrap's ``--disable-userns`` now refuses
    them; the bot holds at most ``OPEN_FILES`` files a process (it had the arena's 20,000: a sandbox of 64
    processes 1.28 million of the host's 2.47 million); ``perf_event_open`` is refused (its buffers count the
    host user's locked pages); and a process pool still works."""
    from arena.hosting.jail import Jail
    from arena.hosting.sandbox import OPEN_FILES

    jail = Jail.open()
    try:
        argv = jail.for_process("limits").wrap([sys.executable, "-c", LIMITS_INSIDE], str(tmp_path))
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        jail.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(OPEN_FILES), "No space left on device", "Operation not permitted",
                                        "[1, 2]"], done.stdout
