"""The seccomp filter of the bwrap sandbox: the kernel keyring's and file watches' system calls refused
(``EPERM``), each a channel between two processes of one bot (partners at a table of four) that no
namespace closes:

- keys (``add_key``, ``keyctl``, ``request_key``) are counted per user of the *host*, and every process
  sandbox of an arena runs as the arena's own user: a bot that added keys in its process keyring moved
  the other sandboxes' ``/proc/key-users`` (its count and bytes: measured, 9 keys, then 60 after a
  partner added 50), filled the user's quota so that another's ``add_key`` failed, and showed their
  descriptions (any text, a hand) in ``/proc/keys`` to a process of the same user;
- file watches (``inotify_init``, ``inotify_init1``, ``inotify_add_watch``, ``fanotify_init``) see every
  open and read of a file, through any mount of it: the sandboxes share ``/usr``, the linker's cache and
  the ``/proc`` view's files, so a bot watching a file no one reads (``/usr/share/zoneinfo/…``) saw its
  partner open and read it (measured).

Docker's default seccomp profile refuses the keyring's calls in containers; this filter does the same in
bwrap (``--seccomp FD``), and the watches besides, on the architectures in :data:`DENIED_CALLS`
(elsewhere no filter: :func:`program` is None). No runtime a bot needs watches files (Node's
``fs.watch`` fails, as it does where inotify is off).

The filter is classic BPF, as ``seccomp_export_bpf`` writes it: the architecture checked first (a
process of another architecture, i386 on x86-64, calls by other numbers), the x32 bit of x86-64 cleared,
then each call's number.
"""

from __future__ import annotations

import errno
import platform
import struct
import threading
from pathlib import Path

from arena.hosting.tempdirs import write_read_only

#: Per machine: (its audit architecture, then those of the same kernel's other ABIs) each with the
#: numbers of add_key, request_key, keyctl, then inotify_init (none on aarch64), inotify_add_watch,
#: inotify_init1 and fanotify_init, and the mask applied to the number first (x86-64's x32 bit).
DENIED_CALLS: dict[str, tuple[tuple[int, tuple[int, ...], int], ...]] = {
    "x86_64": ((0xC000003E, (248, 249, 250, 253, 254, 294, 300), 0xBFFFFFFF),
               (0x40000003, (286, 287, 288, 291, 292, 332, 338), 0xFFFFFFFF)),
    "aarch64": ((0xC00000B7, (217, 218, 219, 27, 26, 262), 0xFFFFFFFF),
                (0x40000028, (309, 310, 311, 316, 317, 360, 367), 0xFFFFFFFF)),
}

_LD_W_ABS, _JEQ_K, _RET_K, _AND_K = 0x20, 0x15, 0x06, 0x54
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one's), or None when :data:`DENIED_CALLS` has it not."""
    arches = DENIED_CALLS.get(machine or platform.machine())
    if arches is None:
        return None
    blocks = [[(_LD_W_ABS, _NR), (_AND_K, mask), *((_JEQ_K, nr) for nr in nrs), (_RET_K, _ALLOW)]
              for _, nrs, mask in arches]
    start = 1 + len(arches) + 1  # the architecture's load, one jump per architecture, allow any other
    deny = start + sum(len(b) for b in blocks)
    out = [_insn(_LD_W_ABS, _ARCH)]
    at = start
    for k, (arch, _, _) in enumerate(arches):
        out.append(_insn(_JEQ_K, arch, jt=at - (1 + k) - 1))
        at += len(blocks[k])
    out.append(_insn(_RET_K, _ALLOW))
    at = start
    for block in blocks:
        for code, k in block:
            out.append(_insn(code, k, jt=deny - at - 1) if code == _JEQ_K else _insn(code, k))
            at += 1
    out.append(_insn(_RET_K, _ERRNO | errno.EPERM))
    return b"".join(out)


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
