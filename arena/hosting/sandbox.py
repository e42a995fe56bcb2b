"""The container sandbox for hosted bots: one tournament's network, firewall rules and bot containers.

A bot given as ``[[bots]] image = "name:tag"`` runs in containers started here through the ``docker``
Python SDK (docs/deploy.md, "Container bots"). Every container is:

- a non-root user of its own (a uid no other bot container has, group 10001, ``HOME=/tmp``: :class:`BotUsers`),
  read-only root file system, a small ``/tmp`` tmpfs (``noexec,nosuid``; docker's ``/dev/shm``, 64 MiB, is
  one too: what a bot writes to either counts against its memory), every capability dropped,
  ``no-new-privileges``, an init process (so a bot that ignores SIGTERM is still reaped), a short stop
  grace, no health check (:data:`NO_HEALTHCHECK`);
- shown a fixed view of the host-wide counters of ``/proc`` (free memory, the load, CPU time, open
  files: :mod:`arena.hosting.procview`), read-only files bound over ``meminfo``, ``stat``, ``loadavg``…
  and the others masked, and ``/sys`` (the host's sysfs, whose node, disk and CPU counters move just as
  much) masked whole, so that two containers of one bot cannot signal each other through them;
- limited: memory = memory+swap (:attr:`Limits.memory_mb`), a pids limit, :data:`OPEN_FILES` open files a
  process, a CPU quota, a capped log
  (json-file, :attr:`Limits.log_max_size` x :attr:`Limits.log_files`);
- given only its ticket and referee address (``ALLFOURS_TICKET``, ``ALLFOURS_REFEREE``) and the bot's
  own ``env`` table: never the arena's environment, files or tokens;
- on the tournament's network only: an *internal* bridge (no route out of its subnet: no internet)
  with inter-container traffic disabled (``enable_icc=false``: no bot reaches another bot's
  container, nor the partner seat of its own side), whose gateway is the host. An internal bridge
  still reaches every service of the host through that gateway, so :class:`Sandbox` adds an iptables
  chain on INPUT for the bridge that accepts only the allowed ports (the referee's, the lobby's) and
  drops the rest, and resets a container's connections past :data:`CONNECTIONS_PER_CONTAINER` open
  at once (each takes one of the arena's open files, a count over every address) and its new ones past
  :data:`NEW_CONNECTIONS_PER_S` a second (a connect/close loop burns the arena's and the referee's CPU). The containers'
  resolver (Docker's, at 127.0.0.11) forwards names it does not know only to the gateway (``dns``),
  which that chain drops: no name lookup leaves the machine. And once docker has started a container,
  :func:`close_resolver` refuses every packet to that resolver from inside the container's own network
  namespace (dockerd answers it on the host's CPU, beyond that chain; a bot needs no name), the bot's
  first moments before the rule excepted.

Everything carries the labels :data:`LABEL_RUN` (a key derived from the tournament's output folder)
and :data:`LABEL_TOURNAMENT` (its name). :meth:`Sandbox.open` first removes what an earlier run of
the same tournament left (containers, network, firewall chain); :meth:`Sandbox.close` removes
everything at the end; and a reaper process (``python -m arena.hosting.sandbox reap``), started by
:meth:`Sandbox.open` in its own session, does the same when the arena dies without closing (SIGKILL,
a crash).

The competition service's builds run strangers' code as root (npm and pip scripts): they run on the
run's :class:`BuildNetwork`, made the same way (:func:`walled_network`) but not internal (package
registries stay reachable) and with a chain that drops everything; :func:`cleanup` removes it too.

Errors: :class:`SandboxError` (one line: docker unreachable, an image missing, iptables failing).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.hosting.procview import ProcView, view
from referee.peers import BotNetwork

#: Label holding the run key (see :func:`run_key`) on every container and network of a tournament.
LABEL_RUN = "org.allfours.run"
#: Label holding the tournament's name.
LABEL_TOURNAMENT = "org.allfours.tournament"
#: Label holding the bot's name (containers only).
LABEL_BOT = "org.allfours.bot"
#: Label holding the seat or worker a container plays (containers only).
LABEL_ROLE = "org.allfours.role"
#: A container's health check: none, whatever its image declares (``HEALTHCHECK NONE``). A prebuilt image's
#: config is its submitter's, and one declaring ``HEALTHCHECK --interval=1ms`` had dockerd exec its command in
#: every container of it, back to back (some 20 a second), each a ``runc exec`` run on the host by containerd's
#: shim, outside the container's CPU quota: 4.9 s of the host's CPU in 10 s for one container.
NO_HEALTHCHECK = {"test": ["NONE"]}
#: The group every bot container runs as: the bot images' group ``bot``, through which a container reads the
#: files an image gave its user 10001 (each container's uid is its own: :class:`BotUsers`).
BOT_GROUP = 10001
#: The uids bot containers run as, one each (:class:`BotUsers`): above the ranges of host users and of their
#: subordinate ids (``/etc/subuid`` starts at 100,000, 65,536 a user), below 2**31.
BOT_UIDS = range(1 << 24, 1 << 31)
#: The step of :class:`BotUsers`' walk through :data:`BOT_UIDS`: a prime that does not divide its length
#: (2**24 x 127), so the walk visits every uid of the range once before it repeats.
_UID_STRIDE = 1_000_003
#: Most open files of each process of a bot container (its ``nofile`` limit, soft and hard). Docker gave
#: dockerd's own (20,000 here), so with 64 processes one container held 1.28 million ``struct file``s of the
#: host's one table (``fs.file-max``, 2,466,239 on a 2-core host) for about 420 bytes of its memory each: two or
#: three bots at once could fill it, and every process of the host fail to open a file. A bot needs a few dozen.
OPEN_FILES = 1024
#: Seconds of every docker API call (the SDK's HTTP timeout).
DOCKER_TIMEOUT_S = 30
#: Seconds a bot container gets between SIGTERM and SIGKILL when stopped.
STOP_GRACE_S = 2
#: Seconds to wait for docker to report a SIGKILLed container exited.
KILL_WAIT_S = 10
#: Held while one bot container is killed (SIGKILL) and until docker has seen it exit: the arena kills
#: one container at a time. Docker 20.10 (Debian 12's ``docker.io`` 20.10.24) can deadlock in libnetwork
#: when several containers of one network exit at the same moment (``getSvcRecords`` against
#: ``processEndpointDelete``: moby/moby#46661, fixed in libnetwork PR 2679): bots that ignore SIGTERM,
#: stopped together, all died at the end of the same grace period, and every later docker call on
#: that network hung (a CI run, 2026-12-03). Their SIGTERMs still go out together.
_KILL_ONE_AT_A_TIME = threading.Lock()
#: Bytes of a container's output copied into the arena's seat log at most (default; the arena passes
#: ``tournament.bot_log_bytes``).
LOG_COPY_BYTES = 1 << 20
#: Seconds to wait, after a container we did not stop died by SIGKILL, for docker to mark it
#: ``OOMKilled``: containerd's OOM event may reach dockerd after the exit event (docker 20.10 sets the
#: mark when it comes), most often when dockerd is busy, e.g. copying another bot's flood of output.
OOM_MARK_WAIT_S = 3.0
#: The kernel's log, where the OOM killer writes ``oom-kill:...,task_memcg=/docker/<id>,...`` for each
#: kill: the witness of last resort when docker loses the mark (containerd drops the OOM event when
#: the container's cgroup is gone before its watcher reads it, most often under load). Readable by
#: root on the host; elsewhere unreadable, and such a kill reads as a crash with status 137.
KERNEL_LOG = Path("/dev/kmsg")


class SandboxError(RuntimeError):
    """The sandbox cannot run bot containers; ``str(e)`` is one line saying why (and what to do)."""


class BotUsers:
    """The ``uid:gid`` of each bot container: a uid of its own, and the group :data:`BOT_GROUP`.

    With no user namespace, the kernel keeps some counts per uid of the host, over every process of that uid:
    inotify instances (``fs.inotify.max_user_instances``, 128 here) and watches, POSIX message queue bytes
    (``RLIMIT_MSGQUEUE``), epoll watches. When every bot container ran as 10001, a bot that held all 128
    inotify instances made every other bot's ``inotify_init1`` fail (``EMFILE``): a denial of service, and a
    channel between containers the sandbox keeps apart (a seat and its partner at a table of four: one holds
    the instances or lets them go, the other reads a bit from whether its next call fails). Each call of
    :meth:`next` gives the next uid of a walk through :data:`BOT_UIDS` from a random start, so one
    ``BotUsers`` (one sandbox) never gives a uid twice in its first ``len(BOT_UIDS)`` containers, and another
    (another arena on the host, the validations) starts elsewhere at random. Thread-safe (``itertools.count``).
    """

    def __init__(self) -> None:
        self._start = secrets.randbelow(len(BOT_UIDS))
        self._count = itertools.count()

    def next(self) -> str:
        """The next container's ``"uid:gid"``, for docker's ``user``."""
        step = next(self._count)
        return f"{BOT_UIDS[(self._start + step * _UID_STRIDE) % len(BOT_UIDS)]}:{BOT_GROUP}"


class NoImage(SandboxError):
    """Docker has no image of that name or ID (:meth:`Sandbox.start`); ``str(e)`` is one line."""

    @classmethod
    def pinned(cls, bot: str, image: str, tag: str, checked: bool) -> NoImage:
        """The one line of bot ``bot`` whose pinned ``image`` (docker's ID, resolved from ``tag``) docker no longer
        has (a rebuild of the tag, a replaced submission removed it): a reload resolves the tag again and, for a
        ``checked`` bot (a per-game container's pin), checks that image; a worker pool's starts it."""
        what, then = ("its checked image", "checks") if checked else ("its image", "starts")
        return cls(f"bot {bot}: {what} {image.removeprefix('sha256:')[:12]} (tag {tag}) is gone from docker; a reload "
                   f"{then} what the tag names now")


@dataclass(frozen=True, slots=True)
class Limits:
    """A bot container's limits: ``cpus`` (CPU quota in cores), ``memory_mb`` (memory and memory+swap,
    MiB), ``pids`` (processes and threads), ``tmpfs_mb`` (size of ``/tmp``), the log cap (json-file
    ``log_max_size`` per file, ``log_files`` files)."""

    cpus: float = 1.0
    memory_mb: int = 256
    pids: int = 64
    tmpfs_mb: int = 16
    log_max_size: str = "1m"
    log_files: int = 2


def run_key(output: str | Path) -> str:
    """The run key of the tournament kept in ``output``: 12 hex characters of the SHA-256 of its
    absolute path (one output folder is one tournament; its leftovers are found by this key)."""
    return hashlib.sha256(str(Path(output).resolve()).encode()).hexdigest()[:12]


def docker_client(timeout: int = DOCKER_TIMEOUT_S) -> Any:
    """A ``docker.DockerClient`` from the environment (``DOCKER_HOST`` or the local socket), checked
    with one ping.

    :raises SandboxError: if no docker daemon answers.
    """
    import docker

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as e:
        raise SandboxError(f"no docker daemon answers ({type(e).__name__}: {e}); start dockerd") from None
    return client


@dataclass
class BotContainer:
    """One running bot container with the interface of :class:`arena.hosting.procs.BotProcess` (``pid``,
    :meth:`poll`, :meth:`wait`, :meth:`stop`). ``oom_killed`` is set once it has exited;
    ``pids_limited`` once its pids limit refused a process or thread, as seen while it ran (its
    cgroup's ``pids.events``, read at each :meth:`poll` and before :meth:`stop` ends it)."""

    container: Any
    name: str
    log_path: Path | None = None
    log_limit: int = LOG_COPY_BYTES
    returncode: int | None = None
    oom_killed: bool = False
    pids_limited: bool = False
    #: Its own copy of the /proc view's files (removed with the container).
    view_copy: ProcView | None = None
    _logs_copied: bool = field(default=False, repr=False)
    _signalled: bool = field(default=False, repr=False)
    #: Held while the exit is read: the worker pool's watcher and a game's end may ask at once, and
    #: one must not overwrite what the other found (a late OOM mark, the kernel's record).
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def pump(self) -> BotContainer:
        """Stands for :attr:`arena.hosting.procs.BotProcess.pump`: its :meth:`join` returns once the output
        is in the log (a container's is copied when :meth:`stop` ends it)."""
        return self

    def join(self, timeout: float | None = None) -> None:
        """The output is in the log once :meth:`stop` has run (see :attr:`pump`); nothing to wait for."""

    @property
    def pid(self) -> str:
        """The container's name (stands in for a pid in messages)."""
        return self.name

    def poll(self) -> int | None:
        """The exit status once the container has exited, else None (one docker call; one thread at a time)."""
        with self._reading:
            return self._read_exit()

    def _read_exit(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            self.container.reload()
        except Exception:  # removed under us: it is gone, and only the kernel's log can say it was for memory
            self.oom_killed = not self._signalled and kernel_killed_for_memory(str(self.container.id))
            self.returncode = -signal.SIGKILL
            return self.returncode
        state = self.container.attrs.get("State", {})
        self.pids_limited = self.pids_limited or _pids_limit_reached(str(self.container.id))
        if state.get("Status") in ("exited", "dead"):
            code = int(state.get("ExitCode", -1))
            self.oom_killed = bool(state.get("OOMKilled")) or (
                code == 128 + signal.SIGKILL and not self._signalled
                and (self._late_oom_mark() or kernel_killed_for_memory(str(self.container.id))))
            if self._signalled and not self.oom_killed and code in (128 + signal.SIGTERM, 128 + signal.SIGKILL):
                code = 128 - code  # stopped by us: like a process, -SIGTERM / -SIGKILL
            self.returncode = code
        return self.returncode

    def _late_oom_mark(self) -> bool:
        """Whether docker marks the exited container ``OOMKilled`` within :data:`OOM_MARK_WAIT_S`
        seconds (asked for an unexplained SIGKILL only: the kernel's OOM killer is its usual sender)."""
        deadline = time.monotonic() + OOM_MARK_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(0.1)
            try:
                self.container.reload()
            except Exception:
                return False
            if self.container.attrs.get("State", {}).get("OOMKilled"):
                return True
        return False

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the container to exit; returns :meth:`poll`."""
        deadline = time.monotonic() + max(0.0, timeout)
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.returncode

    def stop(self, exit_wait_s: float = 2.0) -> int | None:
        """Give the container ``exit_wait_s`` seconds to exit on its own, then stop it: SIGTERM,
        :data:`STOP_GRACE_S` seconds, then SIGKILL, one container at a time (:data:`_KILL_ONE_AT_A_TIME`);
        copy its output (at most :data:`LOG_COPY_BYTES`) into ``log_path``, note whether it was killed for
        memory, and remove it. Returns its exit status (``-SIGTERM``/``-SIGKILL`` when stopped here, like
        :meth:`arena.hosting.procs.BotProcess.stop`). The same interface as :class:`arena.hosting.procs.BotProcess`, so
        :func:`arena.hosting.procs.stop_all` ends both."""
        if self.wait(exit_wait_s) is None:
            self._signalled = True
            with contextlib.suppress(Exception):
                self.container.kill(signal="SIGTERM")
            if self.wait(STOP_GRACE_S) is None:
                with _KILL_ONE_AT_A_TIME:  # see there: never two containers SIGKILLed at once
                    with contextlib.suppress(Exception):
                        self.container.kill()
                    self.wait(KILL_WAIT_S)
        if self.log_path is not None and not self._logs_copied:
            self._logs_copied = True
            _copy_logs(self.container, self.log_path, self.log_limit)
        with contextlib.suppress(Exception):
            self.container.remove(force=True, v=True)
        if self.view_copy is not None:
            self.view_copy.remove_copy()
        return self.returncode


#: Where a container's pids cgroup keeps ``pids.events`` (``max N``: N forks refused at the limit):
#: cgroup v1 (cgroupfs driver), v2 with the systemd driver, v2 with cgroupfs.
_PIDS_EVENTS = (
    "/sys/fs/cgroup/pids/docker/{id}/pids.events",
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/pids.events",
    "/sys/fs/cgroup/docker/{id}/pids.events",
)


def _pids_limit_reached(container_id: str) -> bool:
    """Whether the running container ``container_id``'s pids limit has refused a fork (False when its
    cgroup cannot be read: it has exited, or this host keeps it elsewhere)."""
    for pattern in _PIDS_EVENTS:
        try:
            text = Path(pattern.format(id=container_id)).read_text()
        except OSError:
            continue
        counts = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        return int(counts.get("max", "0")) > 0
    return False


def image_id(client: Any, tag: str) -> str | None:
    """Docker's content ID (``sha256:…``) of the image ``tag`` names now, or None: no such image, or docker
    refusing or not answering (``OSError``: requests' connection errors and timeouts are no DockerException)."""
    import docker.errors

    try:
        return str(client.api.inspect_image(tag)["Id"])
    except (docker.errors.DockerException, OSError, KeyError):
        return None


def kernel_killed_for_memory(container_id: str) -> bool:
    """Whether the kernel's log (:data:`KERNEL_LOG`) holds an OOM kill of a task in the cgroup of
    container ``container_id`` (64 hex digits): a line ``oom-kill:…,task_memcg=…<id>…``. False when
    the log cannot be read (not root, or not on the host)."""
    try:
        fd = os.open(KERNEL_LOG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    def killed(line: str) -> bool:
        return "oom-kill:" in line and container_id in line.partition("task_memcg=")[2]

    rest = ""  # a line cut at the end of a chunk (a plain file; /dev/kmsg reads whole records)
    try:
        while True:
            try:
                chunk = os.read(fd, 8192)
            except BlockingIOError:
                chunk = b""  # the end of /dev/kmsg
            except BrokenPipeError:
                continue  # records overwritten while reading: go on with the next
            if not chunk:
                return killed(rest)
            *lines, rest = (rest + chunk.decode("utf-8", "replace")).split("\n")
            if any(map(killed, lines)):
                return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _copy_logs(container: Any, path: Path, limit: int) -> None:
    """Copy the end of a container's output (at most ``limit`` bytes) into ``path`` (created 0600)."""
    try:
        data = container.logs(stdout=True, stderr=True, tail=5000)
    except Exception as e:
        data = f"(the container's output could not be read: {type(e).__name__})\n".encode()
    if len(data) > limit:
        data = b"[arena: output cut to its last %d bytes]\n" % limit + data[-limit:]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _iptables(*args: str, check: bool = True) -> bool:
    """Run ``iptables -w 10 ARGS`` (10 s timeout); returns whether it succeeded.

    :raises SandboxError: if ``check`` and it fails.
    """
    try:
        r = subprocess.run(["iptables", "-w", "10", *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        if check:
            raise SandboxError(f"iptables {' '.join(args)}: {e}") from None
        return False
    if r.returncode and check:
        msg = " ".join(r.stderr.split())[:300]
        raise SandboxError(f"iptables {' '.join(args)} failed: {msg} (the sandbox needs root and iptables)")
    return r.returncode == 0


def network_names(key: str, build: bool = False) -> tuple[str, str, str]:
    """(docker network, bridge interface, iptables chain) of run ``key``: the tournament's bot network,
    or with ``build`` the competition service's build network (:class:`BuildNetwork`)."""
    if build:
        return f"allfours-build-{key}", f"afb-{key}"[:15], f"AFB-{key}"
    return f"allfours-{key}", f"af-{key}"[:15], f"AF-{key}"


def forward_chain(chain: str) -> str:
    """The name of the build network's second chain (:func:`wall_private`), beside its INPUT ``chain``."""
    return f"{chain}-out"


#: Most TCP connections one bot container holds open to the host at once (more are reset at once, by the
#: sandbox's firewall chain: :meth:`Sandbox.open`). Each takes one of the arena process's open files, a count
#: over every address: the containers of one entrant, each opening thousands of idle connections, could hold
#: it near its limit and a partner read a bit from whether its next connection failed (and the arena would
#: stop accepting any). A bot uses one or two (the lobby's, the referee's); a worker's new one for each game.
CONNECTIONS_PER_CONTAINER = 32

#: New TCP connections one bot container opens to the host per second, past its burst (more are reset at once,
#: by the sandbox's firewall chain: :meth:`Sandbox.open`; iptables' ``hashlimit``, by source address). The
#: open-at-once bound above does not bound how fast a container opens and closes them: one looping
#: connect/close (thousands a second) burned the arena's and the referee's CPU, which every other game shares.
#: A bot opens one to the referee for each game it plays and, as a worker, one to the lobby for each session
#: (a new one after each back-off): a worker of the Python sample bots playing back to back opened one a game,
#: at most 2 in any second (docs/deploy.md); a per-game container opens one. 50 a second with a burst of 200
#: is far past those (a hostile loop is held to the same).
NEW_CONNECTIONS_PER_S = 50
#: New connections a container may open at once before :data:`NEW_CONNECTIONS_PER_S` applies (the token
#: bucket's size: it refills at that rate).
NEW_CONNECTIONS_BURST = 200

#: Open files the arena keeps besides its containers' connections (its listeners, the lobby's and web's
#: clients, logs, records, process bots' pipes).
OWN_OPEN_FILES = 1024


def new_connections_rule(chain: str) -> tuple[str, ...]:
    """The iptables rule (``-I`` arguments after the chain and position) that resets a container's new TCP
    connections past :data:`NEW_CONNECTIONS_PER_S` a second and a burst of :data:`NEW_CONNECTIONS_BURST`, one
    token bucket per source address (``hashlimit`` named ``chain``: its table, /proc/net/ipt_hashlimit/<chain>,
    goes with the chain's last rule)."""
    return ("-p", "tcp", "--syn", "-m", "hashlimit", "--hashlimit-above", f"{NEW_CONNECTIONS_PER_S}/sec",
            "--hashlimit-burst", str(NEW_CONNECTIONS_BURST), "--hashlimit-mode", "srcip",
            "--hashlimit-name", chain, "-j", "REJECT", "--reject-with", "tcp-reset")


def raise_open_files(containers: int) -> int:
    """Raise this process's open-file limit (``RLIMIT_NOFILE``'s soft one, up to the hard one) to what
    ``containers`` bot containers at once may hold open (:data:`CONNECTIONS_PER_CONTAINER` each) and
    :data:`OWN_OPEN_FILES`: below it the containers of one entrant, each within its own bound, held every
    open file of the arena (its accept failing for every bot: a partner read a bit). Returns the limit.

    :raises SandboxError: ``the arena may open N files (ulimit -n, hard), M needed for C containers at
        once: ...`` (one line) when the hard limit is lower.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = CONNECTIONS_PER_CONTAINER * containers + OWN_OPEN_FILES
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SandboxError(f"the arena may open {hard} files (ulimit -n, hard), {needed} needed for {containers} "
                           f"containers at once ({CONNECTIONS_PER_CONTAINER} connections each): raise it, or lower "
                           "tournament.concurrency")
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        soft = needed
    return int(soft)


#: The network option that keeps IPv6 off whatever dockerd's ``default-network-opts`` say (docker 24 and
#: later can turn it on for every new bridge network; docker-py never sends ``EnableIPv6: false``).
NO_IPV6 = {"com.docker.network.enable_ipv6": "false"}


def walled_network(client: Any, name: str, bridge: str, chain: str, labels: Mapping[str, str],
                   internal: bool) -> tuple[str, str | None]:
    """Create the bridge network ``name`` (interface ``bridge``, no traffic between its containers) and
    the iptables chain ``chain``, hooked into INPUT for ``bridge``, that drops everything (the host's
    services are out of reach; :meth:`Sandbox.allow` opens ports). ``internal``: no route out either.
    IPv6 is off (:data:`NO_IPV6`): the walls are iptables, IPv4's alone. Returns (gateway, subnet).

    :raises SandboxError: if docker refuses the network, makes it with IPv6 all the same (it is removed) or
        iptables fails (one line).
    """
    try:
        net = client.networks.create(
            name,
            driver="bridge",
            internal=internal,
            labels=dict(labels),
            options={"com.docker.network.bridge.enable_icc": "false", "com.docker.network.bridge.name": bridge,
                     **NO_IPV6},
        )
        net.reload()
        ipam = (net.attrs.get("IPAM") or {}).get("Config") or [{}]
        gateway, subnet = ipam[0].get("Gateway"), ipam[0].get("Subnet")
    except Exception as e:
        raise SandboxError(f"cannot create the network {name}: {' '.join(str(e).split())}") from None
    if net.attrs.get("EnableIPv6"):
        with contextlib.suppress(Exception):
            net.remove()
        raise SandboxError(f"docker made the network {name} with IPv6, which the sandbox's walls (iptables, IPv4) "
                           "do not cover: turn IPv6 off in dockerd's default-network-opts")
    if not gateway:
        raise SandboxError(f"the network {name} has no gateway address")
    _iptables("-N", chain)
    _iptables("-A", chain, "-j", "DROP")
    _iptables("-I", "INPUT", "1", "-i", bridge, "-j", chain)
    return str(gateway), subnet


#: Where a build's traffic is not forwarded (:func:`wall_private`): a cloud's metadata service (the
#: link-local 169.254.169.254 hands out the host's credentials), the private networks around the host (RFC
#: 1918) and carrier-grade NAT's (some clouds' metadata, VPNs). Name lookups (port 53) still pass: the host's
#: resolver often has a private address, and docker's resolver asks it from the build's own network.
PRIVATE_NETS = ("169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")


def wall_private(bridge: str, chain: str, reaches: Sequence[str] = ()) -> None:
    """Make the iptables chain ``chain``, hooked into docker's ``DOCKER-USER`` (docker's FORWARD asks it
    first) for traffic from ``bridge``, that drops what goes to :data:`PRIVATE_NETS` but name lookups and
    the networks ``reaches`` (the host's ``[competition] build_reaches``: a registry's mirror, a proxy).
    :raises SandboxError: if iptables fails (one line)."""
    _iptables("-N", chain)
    for proto in ("udp", "tcp"):
        _iptables("-A", chain, "-p", proto, "--dport", "53", "-j", "RETURN")
    for net in reaches:
        _iptables("-A", chain, "-d", net, "-j", "RETURN")
    for net in PRIVATE_NETS:
        _iptables("-A", chain, "-d", net, "-j", "DROP")
    _iptables("-I", "DOCKER-USER", "1", "-i", bridge, "-j", chain)


def _remove_build_chains(chain: str, bridge: str) -> list[str]:
    """Remove the build network's two chains: ``chain`` on INPUT and :func:`forward_chain` on DOCKER-USER."""
    return _remove_chain(chain, bridge) + _remove_chain(forward_chain(chain), bridge, "DOCKER-USER")


def _remove_chain(chain: str, bridge: str, hook: str = "INPUT") -> list[str]:
    """Unhook ``chain`` from ``hook`` and delete it (absent: nothing done); returns what was removed."""
    removed: list[str] = []
    while _iptables("-D", hook, "-i", bridge, "-j", chain, check=False):
        removed.append(f"iptables {hook} -> {chain}")
    if _iptables("-F", chain, check=False):
        _iptables("-X", chain, check=False)
        removed.append(f"iptables chain {chain}")
    return removed


def _remove_network(net: Any) -> str:
    """Disconnect whatever is still attached to the docker network ``net`` (a build under way), then
    remove it; returns its name. :raises docker.errors.APIError: docker refused."""
    net.reload()
    for cid in (net.attrs.get("Containers") or {}):
        with contextlib.suppress(Exception):
            net.disconnect(cid, force=True)
    net.remove()
    return str(net.name)


#: Docker's embedded resolver, answered by dockerd itself inside every container of a user-defined
#: network (its port 53 redirected to a socket dockerd opened in the container's network namespace).
DOCKER_RESOLVER = "127.0.0.11"
#: The rule :func:`close_resolver` puts first in the container's own OUTPUT chain: every packet to
#: Docker's resolver is refused (an ICMP port unreachable: a lookup fails at once, it does not wait
#: out the resolver's timeouts).
RESOLVER_RULE = ("-d", DOCKER_RESOLVER, "-j", "REJECT")


def close_resolver(container: Any) -> None:
    """Refuse every packet from the running ``container`` (a docker SDK container, just started and fetched) to
    Docker's resolver (:data:`DOCKER_RESOLVER`): :data:`RESOLVER_RULE` first in OUTPUT of its network
    namespace (``nsenter --net=/proc/PID/ns/net iptables …``). A bot needs no name (the referee's and the
    lobby's addresses are the gateway's IP), and dockerd answers that resolver on the host's CPU: one
    container's query flood took 9.8 s of dockerd's CPU in 10 s. The rule dies with the namespace; the
    bot (no capabilities) cannot remove it. Docker 20.10 has no option that turns the resolver off and
    runs no hook of ours between making the namespace and starting the bot, so this runs once ``start``
    has returned: packets sent before it reach the resolver (the window is docker's start returning, one
    inspect, then nsenter and iptables, which waits up to 10 s for the host's xtables lock: a bot still
    reached it 1.07 s after its first instruction on a busy 2-core host), which
    forwards unknown names only to the gateway (``dns``), whose port 53 the firewall chain drops
    (measured: a container flooding from its first instruction had 503 queries answered in its first
    0.08 s in one start of three, none in the other two).
    A container that exited before the rule is left alone (it sends nothing more): its namespace is held open
    and its pid checked to be the container's still, so a pid freed and taken meanwhile (by nsenter itself, say)
    never gets the rule in another namespace, the arena's own included.

    :raises SandboxError: if the rule cannot be put in while the container still runs (one line).
    """
    pid = int(container.attrs.get("State", {}).get("Pid") or 0)  # as just fetched: no call more in the window
    if pid <= 0:
        return  # exited already: its namespace is gone
    try:  # held open: the namespace entered is this one, whoever has the pid by then (nsenter itself, say)
        net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # exited already: its namespace is gone
    try:
        if not _still_the_containers(pid, net, str(container.id)):
            return  # exited since docker's answer, its pid taken by another process: its namespace is gone
        cmd = ["nsenter", f"--net=/proc/self/fd/{net}", "iptables", "-w", "10", "-I", "OUTPUT", "1", *RESOLVER_RULE]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, pass_fds=(net,))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SandboxError(f"cannot close Docker's resolver in the container: {e}") from None
    finally:
        os.close(net)
    if r.returncode != 0:
        container.reload()
        if container.attrs.get("State", {}).get("Running"):
            msg = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            raise SandboxError(f"cannot close Docker's resolver in the container: {msg} (the sandbox needs root, "
                               "nsenter and iptables)")


def _still_the_containers(pid: int, net: int, container_id: str) -> bool:
    """Whether ``net`` (an open ``/proc/PID/ns/net``) is container ``container_id``'s network namespace: the
    process ``pid`` is in the container's cgroup now, read after ``net`` was opened (a container's pid is taken
    by no other process while it runs, and no process joins a container that has exited), and the namespace is
    not the arena's own. False when ``pid`` is gone or another's."""
    try:
        cgroup = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
    return container_id in cgroup and os.fstat(net).st_ino != os.stat("/proc/self/ns/net").st_ino


class Sandbox:
    """One tournament's bot containers, their network and firewall rules (see the module docstring).

    :param client: a ``docker.DockerClient`` (:func:`docker_client`).
    :param key: the run key (:func:`run_key`).
    :param tournament: the tournament's name (a label).
    """

    def __init__(self, client: Any, key: str, tournament: str):
        if not re.fullmatch(r"[0-9a-f]{12}", key):
            raise ValueError(f"a run key is 12 hex characters, got {key!r}")
        self.client = client
        self.key = key
        self.tournament = tournament
        self.network_name, self.bridge, self.chain = network_names(key)
        self.gateway: str | None = None
        self.subnet: str | None = None
        self._reaper: subprocess.Popen[bytes] | None = None
        self._users = BotUsers()

    @property
    def labels(self) -> dict[str, str]:
        """The labels every object of this tournament carries."""
        return {LABEL_RUN: self.key, LABEL_TOURNAMENT: self.tournament}

    def open(self, allow_ports: Sequence[int] = (), reaper: bool = True) -> str:
        """Remove an earlier run's leftovers, create the network and its firewall chain, start the
        reaper; returns the gateway address (the host as the containers see it: bind the referee and
        the lobby there). More ports can be allowed later with :meth:`allow`.

        :raises SandboxError: if the network or the firewall rules cannot be made.
        """
        self.cleanup()
        try:
            self.gateway, self.subnet = walled_network(self.client, self.network_name, self.bridge, self.chain,
                                                       self.labels, internal=True)
            # first in the chain, before the ports allow() lets through: a container's connections past its
            # own bound are reset (counted by source address: each container's own, conntrack's open ones)
            _iptables("-I", self.chain, "1", "-p", "tcp", "--syn", "-m", "connlimit", "--connlimit-above",
                      str(CONNECTIONS_PER_CONTAINER), "--connlimit-mask", "32",
                      "-j", "REJECT", "--reject-with", "tcp-reset")
            # second: a container's new connections past its rate are reset (each address its own bucket)
            _iptables("-I", self.chain, "2", *new_connections_rule(self.chain))
            for port in allow_ports:
                self.allow(port)
        except SandboxError:
            # the caller gets no sandbox to close: the network and the chain made so far go now (a kernel
            # without iptables' connlimit left both behind until the next run of the same output folder)
            self.cleanup()
            raise
        if reaper:
            self._reaper = subprocess.Popen(
                [sys.executable, "-m", "arena.hosting.sandbox", "reap", "--key", self.key, "--pid", str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self.gateway

    def bot_network(self) -> BotNetwork:
        """The network's addresses as the referee and the lobby count their peers
        (:class:`referee.peers.BotNetwork`: each container's address is its own; the gateway is the host's).

        :raises SandboxError: before :meth:`open`, or a network docker gave no IPv4 subnet.
        """
        try:
            return BotNetwork.parse(str(self.subnet), str(self.gateway))
        except ValueError as e:
            raise SandboxError(f"the network {self.network_name}: {e}") from None

    def allow(self, port: int) -> None:
        """Let the containers reach TCP ``port`` of the host's gateway address (the referee, the lobby), each
        with at most :data:`CONNECTIONS_PER_CONTAINER` connections open (the chain's first rule) and
        :data:`NEW_CONNECTIONS_PER_S` new ones a second past :data:`NEW_CONNECTIONS_BURST` (its second)."""
        rule = ("-p", "tcp", "-d", str(self.gateway), "--dport", str(int(port)), "-j", "ACCEPT")
        _iptables("-I", self.chain, "3", *rule)

    def _host_config(self, limits: Limits, proc: ProcView) -> dict[str, Any]:
        """A bot container's host configuration (the module docstring's walls) with ``limits``, its
        ``/proc`` showing the host-wide counters as ``proc``'s fixed view: two containers of one bot could
        signal each other through them (arena.hosting.procview)."""
        from docker.types import LogConfig, Ulimit

        api = self.client.api
        host_config = api.create_host_config(
            binds=proc.docker_binds(),
            read_only=True,
            tmpfs={"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            pids_limit=limits.pids,
            ulimits=[Ulimit(name="nofile", soft=OPEN_FILES, hard=OPEN_FILES)],
            nano_cpus=int(limits.cpus * 1e9),
            log_config=LogConfig(
                type="json-file", config={"max-size": limits.log_max_size, "max-file": str(limits.log_files)}
            ),
            network_mode=self.network_name,
            # Docker's resolver in the container (127.0.0.11) answers the network's own names and
            # forwards any other name to these servers, from the container's network namespace:
            # the gateway alone, whose port 53 the firewall chain drops. So no query for a name
            # outside the tournament leaves (the daemon's own upstream is never asked).
            dns=[str(self.gateway)],
            init=True,
            ipc_mode="private",
        )
        # the view's files runc lets no bind cover read empty, with docker's own masked paths (docker-py
        # has no argument for it: the API's HostConfig field)
        host_config["MaskedPaths"] = proc.docker_masked()
        return dict(host_config)

    def image_id(self, tag: str) -> str | None:
        """Docker's content ID of the image ``tag`` names now, or None (:func:`image_id`)."""
        return image_id(self.client, tag)

    def start(
        self,
        image: str,
        bot: str,
        role: str,
        env: Mapping[str, str],
        limits: Limits,
        log_path: Path | None = None,
        command: Sequence[str] | None = None,
        log_limit: int = LOG_COPY_BYTES,
    ) -> BotContainer:
        """Start one bot container (``role``: e.g. ``g00003-s1``) with only ``env`` in its environment.

        :raises NoImage: if docker has no image ``image`` (a name or an ID).
        :raises SandboxError: if docker refuses the container.
        """
        import docker.errors

        # Docker's resolver tells every container on the network the others' names (and its own, by a
        # reverse lookup of its address): a name holding the role (the game's id: its pairing's entrant
        # numbers, so whom it plays in a blind tournament) told it that. The role is a label, which no
        # container reads; the name is the run's key and a random part.
        name = f"allfours-{self.key}-{secrets.token_hex(8)}"
        api = self.client.api
        try:  # its own copy of the view's files: a watch on shared ones saw the other containers read them
            proc = view(limits).private_copy()
        except OSError as e:
            raise SandboxError(f"bot {bot}: cannot write its view of /proc: {e}") from None
        try:
            host_config = self._host_config(limits, proc)
            created = api.create_container(
                image,
                command=list(command) if command else None,
                name=name,
                detach=True,
                labels={**self.labels, LABEL_BOT: bot, LABEL_ROLE: role},
                environment={"HOME": "/tmp", **env},  # its uid has no entry in /etc/passwd: docker would say "/"
                user=self._users.next(),  # a uid of its own: BotUsers
                stop_signal="SIGTERM",
                hostname="bot",
                healthcheck=NO_HEALTHCHECK,  # never the image's own (a prebuilt image's config is its author's)
                host_config=host_config,
            )
        except Exception as e:
            proc.remove_copy()
            if isinstance(e, docker.errors.ImageNotFound):
                raise NoImage(f"bot {bot}: no image {image!r} (build it with `arena bots build`)") from None
            raise SandboxError(f"bot {bot}: docker refused the container: {e}") from None
        try:
            api.start(created["Id"])
            c = self.client.containers.get(created["Id"])
            close_resolver(c)
        except Exception as e:
            with contextlib.suppress(Exception):
                api.remove_container(created["Id"], force=True, v=True)
            proc.remove_copy()
            why = str(e) if isinstance(e, SandboxError) else f"docker refused the container: {e}"
            raise SandboxError(f"bot {bot}: {why}") from None
        return BotContainer(c, name, log_path, log_limit, view_copy=proc)

    def cleanup(self) -> list[str]:
        """Remove every container and network labelled with this run key, and the firewall chain.
        Returns what was removed (names), for the log. Safe to call any number of times."""
        return cleanup(self.client, self.key)

    def close(self) -> None:
        """Remove everything of this tournament and stop the reaper (idempotent)."""
        self.cleanup()
        if self._reaper is not None:
            with contextlib.suppress(ProcessLookupError):
                self._reaper.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._reaper.wait(timeout=5)
            self._reaper = None


#: Most processes and threads of a competition build's steps together (npm's and pip's scripts run the
#: bot's own code there, as root): docker's build API has no pids limit, so a fork bomb in a build took
#: every pid of the host (``kernel.pid_max``) before its 2 GiB of memory.
BUILD_PIDS = 512
#: Cores a competition build's steps may use together (their parent cgroup's CPU quota): docker's build API
#: has no CPU limit of its own, and four busy loops in a bot's ``preinstall`` took every core of a 2-core host
#: for the whole ``build_s``, while the league's games (timed moves) and the arena shared what was left.
BUILD_CPUS = 1.0
#: Microseconds of a CPU quota's period (the kernel's default).
CPU_PERIOD_US = 100_000
#: The cgroup file systems (cgroup v1's pids hierarchy, or v2's unified one).
CGROUP_ROOT = Path("/sys/fs/cgroup")


def build_cgroup_name(key: str) -> str:
    """The parent cgroup of run ``key``'s build steps (docker's ``cgroupparent``: a path from the root)."""
    return f"allfours-build-{key}"


def _build_cgroup_dirs(key: str) -> list[Path]:
    """Where the parent cgroup of run ``key``'s builds is (or would be), in every hierarchy: with cgroup
    v1 and the cgroupfs driver, runc makes it in each controller's hierarchy."""
    name = build_cgroup_name(key)
    return [d / name for d in sorted(CGROUP_ROOT.iterdir()) if d.is_dir()] + [CGROUP_ROOT / name] \
        if CGROUP_ROOT.is_dir() else []


def open_build_cgroup(client: Any, key: str, pids: int = BUILD_PIDS, cpus: float = BUILD_CPUS) -> str | None:
    """Make the parent cgroup of run ``key``'s build steps with a pids limit of ``pids`` (processes and
    threads of all its steps together) and a CPU quota of ``cpus`` cores (all its steps together); returns
    its ``cgroupparent`` (``/NAME``), or None when docker
    uses the systemd cgroup driver (its parents are systemd slices, which this does not make: the builds
    then have no pids limit, as docker's build API gives none).

    :raises SandboxError: the cgroup cannot be made (not root, or ``/sys/fs/cgroup`` read-only)."""
    try:
        info = client.info()
    except Exception as e:
        raise SandboxError(f"docker info failed: {e}") from None
    if str(info.get("CgroupDriver", "cgroupfs")) != "cgroupfs":
        return None
    name = build_cgroup_name(key)
    quota = max(1000, int(cpus * CPU_PERIOD_US))
    if str(info.get("CgroupVersion", "1")) == "2":
        folder = cpu = CGROUP_ROOT / name
        with contextlib.suppress(OSError):  # the pids and cpu controllers for the root's children (usually on)
            (CGROUP_ROOT / "cgroup.subtree_control").write_text("+pids +cpu\n")
        cpu_files = {"cpu.max": f"{quota} {CPU_PERIOD_US}"}
    else:
        folder, cpu = CGROUP_ROOT / "pids" / name, CGROUP_ROOT / "cpu" / name
        cpu_files = {"cpu.cfs_period_us": str(CPU_PERIOD_US), "cpu.cfs_quota_us": str(quota)}
    try:
        folder.mkdir(exist_ok=True)
        (folder / "pids.max").write_text(f"{pids}\n")
        cpu.mkdir(exist_ok=True)
        for file, value in cpu_files.items():
            (cpu / file).write_text(f"{value}\n")
    except OSError as e:
        raise SandboxError(f"cannot limit the processes of the builds (cgroup {name}): {e.strerror} "
                           "(arena serve takes submissions as root, on the docker host)") from None
    return f"/{name}"


#: Most seconds :func:`remove_build_cgroup` waits for the cgroups of a build step's container to go
#: (a step killed or cancelled a moment ago is still being torn down by dockerd and runc).
BUILD_CGROUP_WAIT_S = 15.0


def remove_build_cgroup(key: str, wait_s: float = BUILD_CGROUP_WAIT_S) -> list[str]:
    """Remove the parent cgroup of run ``key``'s builds from every hierarchy, waiting up to ``wait_s``
    seconds while a step's container still holds a cgroup in it (a build still under way after that
    keeps it: the run key's :func:`cleanup` removes it later); returns what was removed (one name at
    most)."""
    removed = False
    deadline = time.monotonic() + wait_s
    while True:
        left = [folder for folder in _build_cgroup_dirs(key) if folder.is_dir()]
        for folder in left:
            with contextlib.suppress(OSError):
                folder.rmdir()
                removed = True
        if not any(folder.is_dir() for folder in left) or time.monotonic() >= deadline:
            return [f"cgroup {build_cgroup_name(key)}"] if removed else []
        time.sleep(0.2)


class BuildNetwork:
    """The competition service's network for building strangers' bots (their npm and pip scripts run
    as root in the build): a bridge that is *not* internal (the registries stay reachable: the traffic
    is forwarded out through the host's default route, and so are the name lookups of Docker's
    resolver) with inter-container traffic disabled, and an iptables chain on INPUT for its bridge that
    drops everything: a build reaches no service of the host (the arena's gRPC services, the web, the
    metrics), whatever address of the host it tries; nor, through a second chain on docker's FORWARD
    (:func:`wall_private`), a cloud's metadata service or the private networks around the host. It
    carries the run's labels, so :func:`cleanup` (and the reaper) of run ``key`` removes it too.

    :param client: a ``docker.DockerClient`` (:func:`docker_client`).
    :param key: the run key (:func:`run_key`).
    :param tournament: the tournament's name (a label).
    :param reaches: the private networks a build may reach all the same (:func:`wall_private`).
    :param cpus: the cores its builds' steps may use together (:func:`open_build_cgroup`).
    """

    def __init__(self, client: Any, key: str, tournament: str = "", reaches: Sequence[str] = (),
                 cpus: float = BUILD_CPUS):
        if not re.fullmatch(r"[0-9a-f]{12}", key):
            raise ValueError(f"a run key is 12 hex characters, got {key!r}")
        self.client = client
        self.name, self.bridge, self.chain = network_names(key, build=True)
        self.labels = {LABEL_RUN: key, LABEL_TOURNAMENT: tournament, LABEL_ROLE: "build"}
        self.key = key
        self.reaches = tuple(reaches)
        self.cpus = cpus
        self.gateway: str | None = None
        #: The builds' ``cgroupparent`` (:func:`open_build_cgroup`: their pids limit), set by :meth:`open`.
        self.cgroup_parent: str | None = None

    def open(self) -> str:
        """Replace what a crashed run left (this network, its chain), make the network and its chain,
        and the builds' parent cgroup (:attr:`cgroup_parent`); returns the network's name
        (``network_mode`` of a build).

        :raises SandboxError: if docker refuses the network, iptables fails or the cgroup cannot be
            made (one line).
        """
        self.close()
        self.gateway, _ = walled_network(self.client, self.name, self.bridge, self.chain, self.labels, internal=False)
        try:
            wall_private(self.bridge, forward_chain(self.chain), self.reaches)
            self.cgroup_parent = open_build_cgroup(self.client, self.key, cpus=self.cpus)
        except SandboxError:
            self.close()
            raise
        return self.name

    def close(self) -> list[str]:
        """Remove the network (disconnecting a build still on it) and then its chain; returns what was
        removed. Idempotent; docker's errors are ignored (:func:`cleanup` of the run key tries again)."""
        import docker.errors

        removed: list[str] = []
        try:
            removed.append(_remove_network(self.client.networks.get(self.name)))
        except docker.errors.NotFound:
            pass
        except Exception:
            return removed  # still there: its chain stays, so a build on it still reaches nothing
        return removed + _remove_build_chains(self.chain, self.bridge) + remove_build_cgroup(self.key)


def cleanup(client: Any, key: str) -> list[str]:
    """Remove the containers (with their anonymous volumes), networks and firewall chains of run ``key``
    (the tournament's and the build network's, :class:`BuildNetwork`)."""
    removed: list[str] = []
    flt = {"label": f"{LABEL_RUN}={key}"}
    with contextlib.suppress(Exception):
        # the low-level list: the high-level one inspects each container, and fails when one is gone meanwhile
        for c in client.api.containers(all=True, filters=flt):
            with contextlib.suppress(Exception):
                client.api.remove_container(c["Id"], force=True, v=True)
                removed.append(c["Names"][0].lstrip("/") if c.get("Names") else c["Id"][:12])
    with contextlib.suppress(Exception):
        for v in client.volumes.list(filters=flt):
            with contextlib.suppress(Exception):
                v.remove(force=True)
                removed.append(v.name)
    with contextlib.suppress(Exception):
        for n in client.networks.list(filters=flt):
            with contextlib.suppress(Exception):
                removed.append(_remove_network(n))
    for build in (False, True):  # the networks first: a chain goes once nothing is left behind its bridge
        _, bridge, chain = network_names(key, build)
        removed += _remove_build_chains(chain, bridge) if build else _remove_chain(chain, bridge)
    return removed + remove_build_cgroup(key)


def _reap(key: str, pid: int, poll_s: float = 0.5) -> int:
    """The reaper: wait until process ``pid`` (the arena) is gone, then remove run ``key``'s leftovers.

    SIGTERM (the arena closed its sandbox itself) ends it without removing anything.
    """
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        time.sleep(poll_s)
    cleanup(docker_client(), key)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.hosting.sandbox reap --key K --pid P`` (the reaper) or ``clean --key K`` (by hand)."""
    p = argparse.ArgumentParser(prog="python -m arena.hosting.sandbox")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reap", help="remove run K's leftovers once process P has ended")
    r.add_argument("--key", required=True)
    r.add_argument("--pid", type=int, required=True)
    c = sub.add_parser("clean", help="remove run K's leftovers now")
    c.add_argument("--key", required=True)
    args = p.parse_args(argv)
    if args.cmd == "reap":
        return _reap(args.key, args.pid)
    for name in cleanup(docker_client(), args.key):
        print(f"removed {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
