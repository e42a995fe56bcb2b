"""A fixed view of the host-wide counters of ``/proc`` for sandboxed bots, as lxcfs gives containers.

A fresh ``/proc`` (bwrap's ``--proc /proc``, a container's) has the bot's own processes only, but many of
its files still count the whole host: free memory, the load, every CPU's busy time, open files. Two bots
of one author (partners at a table of four are two processes of one bot, each with a hidden hand) could
signal each other through them, one spinning threads or holding memory, the other reading. So both
sandboxes show, over the files of :data:`HOST_WIDE`, read-only files the arena writes once and never
changes (:func:`view`):

- ``meminfo``: ``MemTotal`` is the bot's memory limit, free and available memory fixed figures in it;
- ``stat``: one ``cpuN`` line per CPU of the bot (its CPU quota rounded up, at most the host's), fixed
  counters, the host's boot time (a clock: ``btime`` never moves);
- ``loadavg``, ``uptime``, ``pressure/*``, ``vmstat``, ``/proc/sys/fs/*``…: fixed figures;
- ``cpuinfo``: the host's, read once, with every ``cpu MHz`` fixed at the first CPU's figure then;
- the rest (``zoneinfo``, ``slabinfo``, ``timer_list``…, which no runtime reads) are empty.

The bwrap sandbox binds every one of them (:meth:`ProcView.bwrap_args`). Docker's runc binds a file over
``/proc`` only for lxcfs's list (:data:`RUNC_BINDABLE`: ``meminfo``, ``stat``, ``loadavg``…), so a
container gets those bound (:meth:`ProcView.docker_binds`) and the others *masked* (docker's own
``MaskedPaths``, which reads them empty: :meth:`ProcView.docker_masked`), and its ``/sys`` masked whole
(:data:`DOCKER_MASKED_SYS`: the host's sysfs counts as much; bwrap mounts none). A file this kernel has
not (``schedstat`` without ``CONFIG_SCHEDSTATS``) is left out.

The files live in one private folder per arena process (``/tmp/allfours-procview-<pid>-XXXXXXXX``, 0700;
files 0444: the container's user reads them through the bind; nothing in them is secret), one subfolder
per (CPUs, memory) pair, written at first use and removed at exit; each container binds a copy of its
own (:meth:`ProcView.private_copy`, removed with it: a file watch sees every read of a file through any
mount of it, so containers bound to one file saw each other read it; bwrap refuses watches instead);
a later start removes those of an arena that was killed (:func:`arena.hosting.tempdirs.sweep_dead`).
"""

from __future__ import annotations

import atexit
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from arena.hosting.tempdirs import pid_temp_dir, sweep_dead, write_read_only


class Limits(Protocol):
    """What the view takes of a sandbox's limits (:class:`arena.hosting.sandbox.Limits`, which imports this
    module: named by its shape, so that the two do not import each other)."""

    @property
    def cpus(self) -> float: ...

    @property
    def memory_mb(self) -> int: ...


#: The files of ``/proc`` (paths under it) that count the whole host and move with other processes'
#: activity: what each one told a bot about the others. Checked on kernel 6.18 by reading each twice in
#: a sandbox around a load on the host (memory held, threads spinning, files opened, a disk written).
HOST_WIDE: tuple[str, ...] = (
    # the run queue: load averages, running and total tasks (a spinning thread moves them at once)
    "loadavg",
    # every CPU's user/system/idle time, interrupts, context switches, forks, procs_running
    "stat",
    # the host's free, available, cached memory (a bot holding memory moves them by its size)
    "meminfo",
    # page counters of the whole host: free pages, faults, page-ins and -outs, reclaim
    "vmstat",
    # free pages per memory zone, per order, per migrate type; kernel caches; vmalloc areas
    "zoneinfo", "buddyinfo", "pagetypeinfo", "slabinfo", "vmallocinfo",
    # the host's uptime and, second field, the idle time of all its CPUs summed: a spinning thread slows
    # that one (uptime alone is a clock, which any bot has; the file goes with its idle field)
    "uptime",
    # stall time of all tasks waiting for CPU, memory, disk (pressure stall information)
    "pressure/cpu", "pressure/memory", "pressure/io",
    # reads, writes and time of every disk (a bot writing its /tmp... or another's disk)
    "diskstats",
    # interrupts and soft interrupts per CPU (timer ticks, rescheduling IPIs follow the load)
    "interrupts", "softirqs",
    # per-CPU run and wait time (kernels with CONFIG_SCHEDSTATS)
    "schedstat",
    # every CPU's timers, next expiries and jiffies (0400: a bwrap bot of an arena run as root reads it)
    "timer_list",
    # swap in use
    "swaps",
    # the current frequency of every CPU (cpu MHz moves with the load where frequency scaling is on)
    "cpuinfo",
    # open files, inodes, dentries and AIO contexts of the whole host (a bot opening files moves them)
    "sys/fs/file-nr", "sys/fs/inode-nr", "sys/fs/inode-state", "sys/fs/dentry-state", "sys/fs/aio-nr",
    # pseudo-terminals open on the host (every /dev/pts instance counts in it)
    "sys/kernel/pty/nr",
    # the entropy pool's fill (fixed at 256 since kernel 5.18; it moved with others' reads before)
    "sys/kernel/random/entropy_avail",
    # every file lock of the host: an open file description's lock (F_OFD_SETLK) has no process, so no
    # pid namespace hides it (a partner that locked a file in its own /tmp added a line; shown empty)
    "locks",
)

#: The files of ``/proc`` docker's runc lets a bind mount cover (runc's ``checkProcMount``: the files
#: lxcfs emulates); docker masks the other :data:`HOST_WIDE` files instead (they read empty).
RUNC_BINDABLE = frozenset({"cpuinfo", "diskstats", "meminfo", "stat", "swaps", "uptime", "loadavg", "slabinfo"})

#: Docker's own masked paths (dockerd 20.10's default ``MaskedPaths``): a container given masked paths
#: gets only those, so the view's are added to these.
DOCKER_MASKED = ("/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                 "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware")

#: What docker masks besides (a read-only empty tmpfs over it): the host's whole sysfs, which bwrap does
#: not show at all. Read in a container, with the host busy, it moved in ``devices/system/node/node0/``
#: (the host's meminfo, vmstat, numastat), every disk's ``stat``, ``/sys/fs/ext4/*/…write_kbytes``,
#: ``kernel/irq/*/per_cpu_count``, the virtual balloon's ``module/page_reporting``, every CPU's idle
#: states (``cpuidle/*/usage``, ``time``) and, on hardware, its frequency and temperatures (``hwmon``).
#: Without it glibc counts the CPUs from ``/proc/stat`` (the view's), as in bwrap.
DOCKER_MASKED_SYS = ("/sys",)

#: The prefix of the view's folder in the temp folder (``PREFIX<pid>-XXXXXXXX``).
PREFIX = "allfours-procview-"
#: The fixed figures of the view: seconds since boot in ``uptime``; ticks (USER_HZ) of user, system and
#: idle time on every CPU in ``stat``.
UPTIME_S = 1000
USER_TICKS, SYSTEM_TICKS, IDLE_TICKS = 5000, 1000, 94000
#: The share of the memory limit shown free (the rest as the bot's and the cache's).
FREE_SHARE = 0.75


def cpu_count(limits: Limits) -> int:
    """The CPUs a sandbox with ``limits`` shows: its quota rounded up, at least one, at most the host's
    (the CPUs this process may run on)."""
    return max(1, min(len(os.sched_getaffinity(0)), math.ceil(limits.cpus)))


def _kb(mb: int) -> int:
    return mb * 1024


def _meminfo(cpus: int, memory_mb: int) -> str:
    total = _kb(memory_mb)
    free = int(total * FREE_SHARE)
    used = total - free
    rows = [("MemTotal", total), ("MemFree", free), ("MemAvailable", free), ("Buffers", 0),
            ("Cached", used // 4), ("SwapCached", 0), ("Active", used // 2), ("Inactive", used // 4),
            ("Active(anon)", used // 2), ("Inactive(anon)", 0), ("Active(file)", 0), ("Inactive(file)", used // 4),
            ("Unevictable", 0), ("Mlocked", 0), ("SwapTotal", 0), ("SwapFree", 0), ("Dirty", 0),
            ("Writeback", 0), ("AnonPages", used // 2), ("Mapped", used // 8), ("Shmem", 0),
            ("KReclaimable", 0), ("Slab", used // 8), ("SReclaimable", 0), ("SUnreclaim", used // 8),
            ("KernelStack", 256), ("PageTables", 512), ("CommitLimit", total), ("Committed_AS", used),
            ("VmallocTotal", 34359738367), ("VmallocUsed", 0), ("VmallocChunk", 0)]
    text = "".join(f"{name + ':':<16}{value:>8} kB\n" for name, value in rows)
    text += "".join(f"{name + ':':<16}{value:>8}\n" for name, value in
                    (("HugePages_Total", 0), ("HugePages_Free", 0), ("HugePages_Rsvd", 0), ("HugePages_Surp", 0)))
    return text + f"{'Hugepagesize:':<16}{2048:>8} kB\n"


def _btime() -> int:
    """The host's boot time (``btime`` of its ``/proc/stat``: fixed since boot; 0 when unreadable)."""
    try:
        found = re.search(r"^btime (\d+)$", Path("/proc/stat").read_text(), re.M)
    except OSError:
        return 0
    return int(found.group(1)) if found else 0


def _stat(cpus: int, memory_mb: int) -> str:
    def line(name: str, n: int) -> str:
        return f"{name} {USER_TICKS * n} 0 {SYSTEM_TICKS * n} {IDLE_TICKS * n} 0 0 0 0 0 0\n"

    return (line("cpu ", cpus) + "".join(line(f"cpu{i}", 1) for i in range(cpus))
            + f"intr 0\nctxt 0\nbtime {_btime()}\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n"
            + "softirq 0 0 0 0 0 0 0 0 0 0 0\n")


def _uptime(cpus: int, memory_mb: int) -> str:
    return f"{UPTIME_S}.00 {UPTIME_S * cpus * IDLE_TICKS // (USER_TICKS + SYSTEM_TICKS + IDLE_TICKS)}.00\n"


def _vmstat(cpus: int, memory_mb: int) -> str:
    """The host's vmstat names (which only say what this kernel counts), every figure fixed: free pages
    as :func:`_meminfo`'s free memory, the rest 0."""
    try:
        names = [row.split()[0] for row in Path("/proc/vmstat").read_text().splitlines() if row.split()]
    except OSError:
        names = ["nr_free_pages"]
    free_pages = int(_kb(memory_mb) * FREE_SHARE) // 4
    return "".join(f"{name} {free_pages if name == 'nr_free_pages' else 0}\n" for name in names)


def _cpuinfo(cpus: int, memory_mb: int) -> str:
    """The host's ``/proc/cpuinfo`` (the model and its flags: runtimes read them), every ``cpu MHz``
    fixed at the first one's figure."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    first = re.search(r"^cpu MHz\s*:\s*(\S+)$", text, re.M)
    return re.sub(r"^(cpu MHz\s*:\s*)\S+$", lambda m: m.group(1) + first.group(1), text, flags=re.M) if first \
        else text


def _columns(cpus: int) -> str:
    return " " * 10 + "".join(f"{f'CPU{i}':>11}" for i in range(cpus)) + "\n"


def _softirqs(cpus: int, memory_mb: int) -> str:
    names = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")
    return _columns(cpus) + "".join(f"{name + ':':>10}" + f"{0:>11}" * cpus + "\n" for name in names)


def _fixed(text: str) -> Callable[[int, int], str]:
    return lambda cpus, memory_mb: text


#: Every ``pressure/*`` file: no task ever stalled.
_NO_PRESSURE = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"

#: What each :data:`HOST_WIDE` file shows (cpus, memory in MiB -> its text); a file not here is empty.
_CONTENT: dict[str, Callable[[int, int], str]] = {
    "loadavg": _fixed("0.00 0.00 0.00 1/8 1\n"),
    "stat": _stat,
    "meminfo": _meminfo,
    "vmstat": _vmstat,
    "uptime": _uptime,
    "pressure/cpu": _fixed(_NO_PRESSURE),
    "pressure/memory": _fixed(_NO_PRESSURE),
    "pressure/io": _fixed(_NO_PRESSURE),
    "interrupts": lambda cpus, memory_mb: _columns(cpus),
    "softirqs": _softirqs,
    "swaps": _fixed("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"),
    "slabinfo": _fixed("slabinfo - version: 2.1\n# name            <active_objs> <num_objs> <objsize> <objperslab> "
                       "<pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
                       "<num_slabs> <sharedavail>\n"),
    "cpuinfo": _cpuinfo,
    "sys/fs/file-nr": _fixed("512\t0\t9223372036854775807\n"),
    "sys/fs/inode-nr": _fixed("4096\t512\n"),
    "sys/fs/inode-state": _fixed("4096\t512\t0\t0\t0\t0\t0\n"),
    "sys/fs/dentry-state": _fixed("4096\t2048\t45\t0\t0\t0\n"),
    "sys/fs/aio-nr": _fixed("0\n"),
    "sys/kernel/pty/nr": _fixed("0\n"),
    "sys/kernel/random/entropy_avail": _fixed("256\n"),
}


def content(name: str, cpus: int, memory_mb: int) -> str:
    """The text the view shows for ``/proc/NAME`` (``name`` one of :data:`HOST_WIDE`) to a sandbox of
    ``cpus`` CPUs and ``memory_mb`` MiB."""
    make = _CONTENT.get(name)
    return make(cpus, memory_mb) if make is not None else ""


@dataclass(frozen=True)
class ProcView:
    """The view's files for one (CPUs, memory) pair: ``files`` maps a :data:`HOST_WIDE` name this kernel
    has to the file that stands for it."""

    cpus: int
    memory_mb: int
    files: dict[str, Path]
    #: A copy's own folder (:meth:`private_copy`), None for the shared view.
    copy_folder: Path | None = None

    def private_copy(self) -> ProcView:
        """These files copied into a folder of their own, for one container (:meth:`remove_copy` removes
        it). A file watch (inotify, which docker's seccomp profile allows) sees every open and read of a
        file through any mount of it: two containers bound to one file saw each other read it.

        :raises OSError: the copy cannot be written."""
        own = Path(tempfile.mkdtemp(prefix="copy-", dir=folder()))
        files: dict[str, Path] = {}
        for name, file in self.files.items():
            files[name] = copied = own / file.name
            shutil.copyfile(file, copied)
            os.chmod(copied, 0o444)
        return ProcView(self.cpus, self.memory_mb, files, own)

    def remove_copy(self) -> None:
        """Remove a :meth:`private_copy`'s folder (the shared view's is left alone)."""
        if self.copy_folder is not None:
            shutil.rmtree(self.copy_folder, ignore_errors=True)

    def bwrap_args(self) -> list[str]:
        """bwrap's options that bind the files read-only over ``/proc`` (after its ``--proc /proc``)."""
        return [arg for name, file in self.files.items() for arg in ("--ro-bind", str(file), f"/proc/{name}")]

    def docker_binds(self) -> list[str]:
        """Docker's read-only binds (``SOURCE:/proc/NAME:ro``) of the files runc lets cover ``/proc``."""
        return [f"{file}:/proc/{name}:ro" for name, file in self.files.items() if name in RUNC_BINDABLE]

    def docker_masked(self) -> list[str]:
        """Docker's ``MaskedPaths``: its own (:data:`DOCKER_MASKED`), the files runc will not let a bind
        cover (they read empty) and ``/sys`` (:data:`DOCKER_MASKED_SYS`)."""
        return [*DOCKER_MASKED, *(f"/proc/{name}" for name in self.files if name not in RUNC_BINDABLE),
                *DOCKER_MASKED_SYS]


_lock = threading.Lock()
_folder: tempfile.TemporaryDirectory[str] | None = None
_views: dict[tuple[int, int], ProcView] = {}


def _root() -> Path:
    """This process's view folder, made at first use (removed at exit; a dead arena's at the next)."""
    global _folder
    if _folder is None:
        sweep_dead((PREFIX,))
        _folder = folder = pid_temp_dir(PREFIX)
        maker = os.getpid()
        atexit.register(lambda: folder.cleanup() if os.getpid() == maker else None)  # not a forked child's
    return Path(_folder.name)


def folder() -> Path:
    """This arena process's private folder of sandbox files (the view's, its copies, the seccomp filter's)."""
    with _lock:
        return _root()


def view(limits: Limits) -> ProcView:
    """The view of a sandbox with ``limits`` (:func:`cpu_count` CPUs, ``limits.memory_mb`` MiB), its files
    written at the first call for that pair.

    :raises OSError: the temp folder cannot be written."""
    cpus = cpu_count(limits)
    key = (cpus, limits.memory_mb)
    with _lock:
        made = _views.get(key)
        if made is not None and all(f.is_file() for f in made.files.values()):
            return made
        folder = _root() / f"cpus{cpus}-mem{limits.memory_mb}"
        folder.mkdir(mode=0o700, exist_ok=True)
        files: dict[str, Path] = {}
        for name in HOST_WIDE:
            if not os.path.exists(f"/proc/{name}"):
                continue  # this kernel has not got it (schedstat without CONFIG_SCHEDSTATS, no PSI)
            file = folder / name.replace("/", "_")
            write_read_only(file, content(name, cpus, limits.memory_mb).encode())
            files[name] = file
        made = _views[key] = ProcView(cpus, limits.memory_mb, files)
        return made
