"""The seccomp filter of the bwrap sandbox: calls that joined two sandboxed bots refused (``EPERM``), each a
channel between two processes of one bot (partners at a table of four) that no namespace closes:

- keys (``add_key``, ``keyctl``, ``request_key``) are counted per user of the *host*, and every process
  sandbox of an arena runs as the arena's own user: a bot that added keys in its process keyring moved
  the other sandboxes' ``/proc/key-users`` (its count and bytes: measured, 9 keys, then 60 after a
  partner added 50), filled the user's quota so that another's ``add_key`` failed, and showed their
  descriptions (any text, a hand) in ``/proc/keys`` to a process of the same user;
- file watches (``inotify_init``, ``inotify_init1``, ``inotify_add_watch``, ``fanotify_init``) see every
  open and read of a file, through any mount of it: the sandboxes share ``/usr``, the linker's cache and
  the ``/proc`` view's files, so a bot watching a file no one reads (``/usr/share/zoneinfo/…``) saw its
  partner open and read it (measured);
- file locks (``flock``, and ``fcntl``'s lock commands, :data:`LOCK_COMMANDS`) on those same shared files: a
  lock needs only a read-only descriptor, and a byte range locked by one bot, read back by another with
  ``F_OFD_GETLK``, passed two 64-bit numbers a lock (measured). A bot's own ``/tmp`` loses its locks too
  (SQLite opens a read-only database with ``?immutable=1`` instead);
- io_uring (``io_uring_setup``, ``io_uring_enter``, ``io_uring_register``) and ``perf_event_open``: their
  buffers count locked pages per user of the host, so a bot that held them made its partner's
  ``io_uring_setup`` fail (ENOMEM, measured; docker's default profile refuses ``perf_event_open``).

Docker's default profile refuses the keyring's calls in containers; this filter does the same in bwrap
(``--seccomp FD``), and the rest besides, on the machines in :data:`ABIS` (elsewhere no filter: :func:`program`
is None). No runtime a bot needs them (Node's ``fs.watch`` fails, as it does where inotify is off; libuv
falls back from io_uring to its thread pool).

The filter is classic BPF, as ``seccomp_export_bpf`` writes it: the architecture checked first (a
process of another architecture, i386 on x86-64, calls by other numbers), the x32 bit of x86-64 cleared,
then each call's number, and for ``fcntl`` its command.
"""

from __future__ import annotations

import errno
import platform
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

from arena.hosting.tempdirs import write_read_only


@dataclass(frozen=True, slots=True)
class Abi:
    """One ABI of a machine's kernel: its audit architecture, the mask applied to a call's number first (x86-64's
    x32 bit), the numbers of the calls refused whole (:data:`REFUSED`, in that order; 0: the ABI has none), and
    the numbers of ``fcntl`` (and ``fcntl64``) whose lock commands (:data:`LOCK_COMMANDS`) are refused."""

    arch: int
    mask: int
    refused: tuple[int, ...]
    fcntl: tuple[int, ...]


#: The calls refused whole, in the order of :attr:`Abi.refused`: the keyring's, the file watches', the file lock
#: of ``flock``, io_uring's (its registered buffers count locked pages per user of the host: a bot that held them
#: made its partner's ``io_uring_setup`` fail, ENOMEM) and ``perf_event_open`` (its ring buffers come first from
#: the same per-user count; docker's default profile refuses it too).
REFUSED = ("add_key", "request_key", "keyctl", "inotify_init", "inotify_add_watch", "inotify_init1", "fanotify_init",
           "flock", "io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open")
#: ``fcntl``'s lock commands: F_GETLK, F_SETLK, F_SETLKW, their 64-bit forms on 32-bit ABIs (12-14) and the open
#: file description locks (36-38). A lock needs only a read-only descriptor, and every process sandbox binds the
#: same files (``/usr``, the runtime, the bot's folder, the ``/proc`` view): one bot's lock on a byte range, read
#: back by another with F_OFD_GETLK, passed it two 64-bit numbers a lock, with no noise.
LOCK_COMMANDS = (5, 6, 7, 12, 13, 14, 36, 37, 38)
#: Per machine: its ABIs (the native one first).
ABIS: dict[str, tuple[Abi, ...]] = {
    "x86_64": (Abi(0xC000003E, 0xBFFFFFFF, (248, 249, 250, 253, 254, 294, 300, 73, 425, 426, 427, 298), (72,)),
               Abi(0x40000003, 0xFFFFFFFF, (286, 287, 288, 291, 292, 332, 338, 143, 425, 426, 427, 336),
                   (55, 221))),
    "aarch64": (Abi(0xC00000B7, 0xFFFFFFFF, (217, 218, 219, 0, 27, 26, 262, 32, 425, 426, 427, 241), (25,)),
                Abi(0x40000028, 0xFFFFFFFF, (309, 310, 311, 316, 317, 360, 367, 143, 425, 426, 427, 364),
                    (55, 221))),
}

_LD_W_ABS, _JEQ_K, _RET_K, _AND_K = 0x20, 0x15, 0x06, 0x54
_NR, _ARCH, _ARG1 = 0, 4, 24  # offsets in struct seccomp_data (an argument's low 32 bits on little-endian machines)
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _assemble(lines: list[tuple[int, int, str | None]]) -> bytes:
    """Classic BPF from ``(code, k, label)`` lines: a jump (JEQ) goes to its label when equal, else to the next
    line; a line ``(-1, 0, NAME)`` only names the place of the next one."""
    places, at = {}, 0
    for code, _, label in lines:
        if code == -1:
            places[label] = at
        else:
            at += 1
    out, at = [], 0
    for code, k, label in lines:
        if code == -1:
            continue
        jt = places[label] - at - 1 if code == _JEQ_K and label is not None else 0
        out.append(_insn(code, k, jt=jt))
        at += 1
    return b"".join(out)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one's), or None when :data:`ABIS` has it not: each ABI's
    :data:`REFUSED` calls and ``fcntl``'s :data:`LOCK_COMMANDS` fail with EPERM, everything else is allowed."""
    abis = ABIS.get(machine or platform.machine())
    if abis is None:
        return None
    lines: list[tuple[int, int, str | None]] = [(_LD_W_ABS, _ARCH, None)]
    lines += [(_JEQ_K, abi.arch, f"abi{k}") for k, abi in enumerate(abis)]
    lines.append((_RET_K, _ALLOW, None))
    for k, abi in enumerate(abis):
        lines += [(-1, 0, f"abi{k}"), (_LD_W_ABS, _NR, None), (_AND_K, abi.mask, None)]
        lines += [(_JEQ_K, nr, "deny") for nr in abi.refused if nr]
        lines += [(_JEQ_K, nr, "locks") for nr in abi.fcntl]
        lines.append((_RET_K, _ALLOW, None))
    lines += [(-1, 0, "locks"), (_LD_W_ABS, _ARG1, None)]
    lines += [(_JEQ_K, cmd, "deny") for cmd in LOCK_COMMANDS]
    lines += [(_RET_K, _ALLOW, None), (-1, 0, "deny"), (_RET_K, _ERRNO | errno.EPERM, None)]
    return _assemble(lines)


_lock = threading.Lock()
_written: dict[Path, Path] = {}


def filter_file(folder: Path) -> Path | None:
    """The filter (:func:`program`) in a 0444 file of ``folder`` (written at the first call), or None."""
    data = program()
    if data is None:
        return None
    with _lock:
        file = _written.get(folder)
        if file is not None and file.is_file():
            return file
        file = folder / "seccomp.bpf"
        write_read_only(file, data)
        _written[folder] = file
        return file
