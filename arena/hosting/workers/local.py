"""Local workers (``mode = "worker"``): a pool of long-lived bot processes on this machine.

Each process is started from the bot's ``command`` (placeholders ``{python}`` and ``{config_dir}``)
as a :class:`arena.hosting.procs.BotProcess` (everything it starts ends with it), with the arena's
environment minus its secrets, the bot's ``env`` table, and: ``ALLFOURS_LOBBY`` (the lobby's
``host:port``), ``ALLFOURS_BOT_TOKEN`` (a token made for this one process, valid until it exits),
``ALLFOURS_BOT_NAME`` and ``ALLFOURS_WORKER_PARENT`` (the arena's process id), and
``ALLFOURS_TLS_CA`` (the lobby's certificate) when the lobby serves TLS. ``python -m sdk.run
module:Class`` and ``node sample_bots/js/bot.js`` read these and serve the lobby. Output goes to
``<output>/logs/workers/<bot>/worker<k>.log`` (the n-th restart of that place to
``worker<k>.restart<n>.log``), capped at ``tournament.bot_log_bytes``; of a place's restarts only the
newest :data:`KEPT_RESTART_LOGS` logs are kept (a worker that dies after each game is restarted for as
long as the league runs: its logs would fill the disk). A sandboxed worker
(:mod:`arena.hosting.jail`) is told the lobby's unix socket inside its sandbox instead
(``unix:/run/allfours/lobby.sock``, plaintext, no ``ALLFOURS_TLS_CA``) and no ``ALLFOURS_WORKER_PARENT``
(its pid namespace hides the arena; ``--die-with-parent`` ends it with the arena instead). Each worker
process has a socket pair of its own, the referee's and the lobby's (``Jail.for_process``), given up
when it exits or the pool stops (a restart gets a new one): two workers of one bot seated as partners
shared the bot's pair and passed each other bits through the counts its servers keep.

A process that exits is restarted after a back-off (:data:`BACKOFF_S`: 0.5 s, doubling, at most
30 s; back to 0.5 s once a worker finishes a game). Its game in progress, if any, is forfeited by
the referee like any disconnected seat. After :data:`MAX_DEATHS` deaths in a row without a finished
game the bot is *broken*: no more restarts, and :attr:`LocalWorkers.broken` says why (the arena
then forfeits its remaining games at once). A worker killed at its memory limit (its cgroup's, as a
per-game bot's: docs/arena.md, "Process bots' limits") is reported as ``was killed at its memory limit
(N MiB): oom`` and its forfeited seat reads ``oom`` (:meth:`LocalWorkers.killed_for_memory`).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from arena.config import BotSpec
from arena.hosting.procs import BotProcess, stop_all
from arena.hosting.workers.kind import WorkerContext
from arena.lobby.tokens import token_digest
from arena.play.environment import expand_command, log_tail, worker_environment
from sdk.worker import PARENT_ENV, REFEREE_TLS_CA_ENV, TLS_CA_ENV

if TYPE_CHECKING:
    from arena.hosting.jail import Jail

#: Deaths in a row without a finished game after which a bot is broken.
MAX_DEATHS = 3
#: Seconds before the first restart; doubles per death in a row, up to :data:`MAX_BACKOFF_S`.
BACKOFF_S = 0.5
#: Longest wait before a restart, seconds.
MAX_BACKOFF_S = 30.0
#: Seconds between checks of the processes.
POLL_S = 0.1
#: Logs of a place's restarts kept, the newest (its first process's ``worker<k>.log`` is kept too).
KEPT_RESTART_LOGS = 5
#: Workers remembered per place in the pool for :meth:`LocalWorkers.killed_for_memory` (its current
#: worker and the few before it), so the memory stays bounded however often workers die.
REMEMBERED_PER_SLOT = 4


class _LogWriter(Protocol):
    def join(self, timeout: float | None = None) -> None:
        """Return once the output is in the log (or after ``timeout`` seconds)."""
        ...


class WorkerProcess(Protocol):
    """What a pool's place holds: a :class:`arena.hosting.procs.BotProcess`, or a container
    (:class:`arena.hosting.sandbox.BotContainer`, the container pool's) with the same interface:
    ``pid`` (a container's name stands for it), ``pump`` (joined once the output is in the log)."""

    @property
    def pid(self) -> int | str: ...

    @property
    def pump(self) -> _LogWriter: ...

    def poll(self) -> int | None:
        """The exit status once it has exited, else None."""
        ...

    def stop(self, exit_wait_s: float = ...) -> int | None:
        """Stop it and all it started; returns its exit status."""
        ...


@dataclass
class Slot:
    """One place in the pool: its current process (None while waiting to restart) and its token's digest."""

    index: int
    proc: WorkerProcess | None = None
    digest: str = ""
    restart_at: float = 0.0
    starts: int = 0
    #: the current process's sandbox, with a socket folder of its own (``Jail.for_process``), or None
    jail: Jail | None = None

    @property
    def log_name(self) -> str:
        """The log file of the current (or last) process in this place."""
        return f"worker{self.index}.log" if self.starts <= 1 else f"worker{self.index}.restart{self.starts - 1}.log"


def prune_restart_logs(folder: Path, slot: Slot) -> None:
    """Remove the log in ``folder`` of ``slot``'s restart :data:`KEPT_RESTART_LOGS` before its current one
    (so the newest :data:`KEPT_RESTART_LOGS` stay, the current one among them); a log already gone is no error."""
    old = slot.starts - 1 - KEPT_RESTART_LOGS
    if old >= 1:
        (folder / f"worker{slot.index}.restart{old}.log").unlink(missing_ok=True)


class LocalWorkers:
    """A pool of ``size`` worker processes for ``bot`` (see the module docstring). Thread-safe."""

    def __init__(self, bot: BotSpec, size: int):
        self.bot = bot
        self.size = size
        self.deaths_in_a_row = 0
        self.restarts = 0
        self._broken: str | None = None
        self._slots = [Slot(k) for k in range(size)]
        self._ctx: WorkerContext | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._oom: set[str] = set()  # token digests of the workers killed at their memory limit
        #: token digests of the newest :data:`REMEMBERED_PER_SLOT` workers per place, oldest first
        self._remembered: dict[str, None] = {}

    def _remember(self, digest: str) -> None:
        """Keep ``digest`` for :meth:`killed_for_memory`, forgetting the oldest beyond the bound. Under the lock."""
        self._remembered[digest] = None
        while len(self._remembered) > REMEMBERED_PER_SLOT * self.size:  # a bot dying at every game
            oldest = next(iter(self._remembered))
            del self._remembered[oldest]
            self._oom.discard(oldest)

    def killed_for_memory(self, digest: str, wait_s: float = 3.0) -> bool:
        """True if the worker that registered with the token of ``digest`` was killed at its memory
        limit (the arena then gives its forfeited seat the reason ``oom``).

        Asked when the worker has left its game: the pool's watcher may not have looked at it yet (it
        looks every :data:`POLL_S`; on a busy machine the game's end came first and the seat read
        ``disconnect``), so the worker itself is asked here, waiting up to ``wait_s`` seconds for it
        to have exited (:meth:`_exited_for_memory`)."""
        with self._lock:
            if digest in self._oom:
                return True
            proc = next((s.proc for s in self._slots if s.digest == digest), None)
        if self._exited_for_memory(proc, digest, wait_s):
            with self._lock:
                if digest in self._remembered:
                    self._oom.add(digest)
        with self._lock:  # the watcher may have noted it meanwhile
            return digest in self._oom

    def _exited_for_memory(self, proc: WorkerProcess | None, digest: str, wait_s: float) -> bool:
        """Whether ``proc`` (registered with ``digest``; None: no longer in the pool) exits within ``wait_s``
        seconds, killed at its memory limit (a :class:`arena.hosting.procs.BotProcess`: its cgroup's
        ``oom_kill`` count; one that already left the pool was noted by the watcher, if at all)."""
        return isinstance(proc, BotProcess) and proc.ended(wait_s) and proc.oom_killed

    @property
    def broken(self) -> str | None:
        """Why the bot is broken (one line), or None."""
        return self._broken

    def tag_moved(self) -> bool:
        """Never for a process pool: it has no image (:class:`~arena.hosting.workers.container.ContainerWorkers`
        has)."""
        return False

    @property
    def log_dir(self) -> Path:
        """Where the workers' logs go."""
        assert self._ctx is not None
        return self._ctx.log_dir / "workers" / self.bot.name

    def start(self, ctx: WorkerContext) -> None:
        """Start every process and the thread that watches them."""
        self._ctx = ctx
        self.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for slot in self._slots:
            self._launch(slot)
        self._thread = threading.Thread(target=self._watch, name=f"workers-{self.bot.name}", daemon=True)
        self._thread.start()

    def pids(self) -> list[int | str]:
        """The process ids of the running workers (containers' names for containers; for tests and
        diagnostics)."""
        with self._lock:
            return [s.proc.pid for s in self._slots if s.proc is not None and s.proc.poll() is None]

    def _launch(self, slot: Slot) -> None:
        ctx = self._ctx
        assert ctx is not None
        token = ctx.lobby.tokens.issue(self.bot.name)
        slot.digest = token_digest(token)
        self._remember(slot.digest)
        argv = expand_command(self.bot, {"python": sys.executable, "config_dir": ctx.config_dir})
        # sockets of its own, not its bot's: two workers of one bot seated as partners could pass each other
        # bits through the counts a shared socket's server keeps (Jail.for_process); given up when it ends
        try:
            jail = (ctx.jail.for_process(self.bot.name, self.bot.limits.tmpfs_mb)
                    if self.bot.jailed and ctx.jail else None)
        except (OSError, RuntimeError) as e:  # its sockets (a folder, two servers) could not be made: a death
            ctx.lobby.tokens.revoke(slot.digest)
            self._died(slot, f"could not get its sockets: {e}")
            return
        slot.jail = jail
        if jail is not None:  # the lobby's unix socket (plaintext, on this machine); no arena pid in its pid namespace
            env = worker_environment(self.bot, jail.lobby_inside(), token, ctx.secret_names, ctx.secret_values)
            env.pop(PARENT_ENV)
        else:
            env = worker_environment(self.bot, ctx.lobby.address, token, ctx.secret_names, ctx.secret_values)
            if ctx.tls_ca is not None:
                env[TLS_CA_ENV] = ctx.tls_ca
            if ctx.referee_tls_ca is not None:  # an external TLS referee (no sandboxed bot plays on one)
                env[REFEREE_TLS_CA_ENV] = ctx.referee_tls_ca
        slot.starts += 1
        prune_restart_logs(self.log_dir, slot)
        try:
            slot.proc = BotProcess.start(argv, cwd=self.bot.cwd, env=env, log_path=self.log_dir / slot.log_name,
                                         log_limit=ctx.log_limit, jail=jail, limits=self.bot.limits)
        except OSError as e:
            slot.proc = None
            self._release(slot)
            ctx.lobby.tokens.revoke(slot.digest)
            self._died(slot, f"could not start {argv[0]!r}: {e.strerror or e}")

    def _release(self, slot: Slot) -> None:
        """Give up the socket folder of ``slot``'s process, gone now (``Jail.release``: its referee and
        lobby servers stop, the folder is removed); nothing for an unsandboxed one."""
        ctx = self._ctx
        jail, slot.jail = slot.jail, None
        if jail is not None and ctx is not None and ctx.jail is not None:
            try:
                ctx.jail.release(jail)
            except (OSError, RuntimeError) as e:  # said, not raised: the watcher thread and stop() go on
                ctx.on_event(f"bot {self.bot.name} worker{slot.index}: its sockets were not all stopped: {e}")

    def _died(self, slot: Slot, what: str) -> None:
        """Count a death; restart later, or declare the bot broken."""
        ctx = self._ctx
        assert ctx is not None
        if slot.digest in self._oom and what.startswith("exited"):
            what = f"was killed at its memory limit ({self.bot.limits.memory_mb} MiB): oom"
        finished = ctx.lobby.games_for(slot.digest)
        self.deaths_in_a_row = 0 if finished else self.deaths_in_a_row + 1
        if self.deaths_in_a_row >= MAX_DEATHS and self._broken is None:
            self._broken = (f"its workers died {self.deaths_in_a_row} times in a row without finishing a game "
                            f"(last: worker{slot.index} {what})")
            ctx.on_event(f"bot {self.bot.name} is broken: {self._broken}")
            ctx.on_change()
            return
        delay = min(MAX_BACKOFF_S, BACKOFF_S * 2 ** max(0, self.deaths_in_a_row - 1))
        slot.restart_at = time.monotonic() + delay
        ctx.on_event(f"bot {self.bot.name} worker{slot.index} {what}; restarting it in {delay:g} s")

    def _watch(self) -> None:
        while not self._stopping.wait(POLL_S):
            with self._lock:
                if self._stopping.is_set():
                    return
                for slot in self._slots:
                    self._check(slot)

    def _check(self, slot: Slot) -> None:
        ctx = self._ctx
        assert ctx is not None
        if slot.proc is not None:
            code = slot.proc.poll()
            if code is None:
                return
            if isinstance(slot.proc, BotProcess) and slot.proc.ended(1.0) and slot.proc.oom_killed:
                self._oom.add(slot.digest)
            ctx.lobby.tokens.revoke(slot.digest)
            slot.proc.pump.join(timeout=1.0)  # its last words are in the log
            slot.proc = None
            self._release(slot)
            tail = log_tail(self.log_dir / slot.log_name)
            self._died(slot, f"exited with status {code}" + (f" (last output: {tail})" if tail else ""))
        elif self._broken is None and time.monotonic() >= slot.restart_at:
            self.restarts += 1
            self._launch(slot)

    def stop(self) -> None:
        """Stop the watcher, then every process and all it started (:func:`arena.hosting.procs.stop_all`)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            procs = [s.proc for s in self._slots if s.proc is not None]
            for s in self._slots:
                s.proc = None
        stop_all(procs, exit_wait_s=0.0)
        with self._lock:
            for s in self._slots:
                self._release(s)
