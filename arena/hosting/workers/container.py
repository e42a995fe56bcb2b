"""Container workers (``[[bots]] image = …`` with ``mode = "worker"``): a pool of sandboxed containers
that dial the lobby.

The pool is :class:`arena.hosting.workers.local.LocalWorkers` (restart with back-off, broken after
:data:`arena.hosting.workers.local.MAX_DEATHS` deaths in a row without a finished game); only the start of a
worker differs: each is a container of the bot's image in the tournament's sandbox
(:class:`arena.hosting.sandbox.Sandbox`: non-root, read-only, limits, capped log, an internal network on which
only the lobby and the referees are reachable, no other container). Its environment is the bot's
``env`` table and ``ALLFOURS_LOBBY`` (the lobby at the sandbox network's gateway),
``ALLFOURS_BOT_TOKEN`` (a token made for this one container, revoked when it exits) and
``ALLFOURS_BOT_NAME``: nothing of the arena's. Its output is copied (capped at
``tournament.bot_log_bytes``) to ``<output>/logs/workers/<bot>/worker<k>.log`` when it exits. A
container killed at its memory limit is reported as ``killed at its memory limit … (oom)``, and its
forfeited seat reads ``oom`` (:meth:`arena.play.game.GrpcGameRunner._worker_causes`).
"""

from __future__ import annotations

from arena.config import BotSpec
from arena.hosting.sandbox import BotContainer, Sandbox, SandboxError, kernel_killed_for_memory
from arena.hosting.workers.kind import WorkerContext
from arena.hosting.workers.local import LocalWorkers, Slot
from arena.lobby.tokens import token_digest

#: Containers remembered per place in the pool for :meth:`ContainerWorkers.killed_for_memory` (its
#: current worker and the few before it; with them go their notes in ``_oom``), so the memory stays bounded
#: however often workers die.
REMEMBERED_PER_SLOT = 4


class ContainerWorkers(LocalWorkers):
    """A pool of ``size`` worker containers of ``bot`` in ``sandbox``; the lobby listens at ``lobby``
    (``host:port`` as the containers reach it: the sandbox network's gateway)."""

    def __init__(self, bot: BotSpec, size: int, sandbox: Sandbox, lobby: str):
        super().__init__(bot, size)
        self.sandbox = sandbox
        self.lobby_address = lobby
        self._oom: set[str] = set()  # token digests of the workers killed at their memory limit
        #: token digest -> the id of the container that registered with it (the newest
        #: :data:`REMEMBERED_PER_SLOT` per place in the pool: a worker is asked about when its game ends)
        self._container_of: dict[str, str] = {}

    def killed_for_memory(self, digest: str, wait_s: float = 3.0) -> bool:
        """True if the worker that registered with the token of ``digest`` was killed at its memory
        limit (the arena then gives its forfeited seat the reason ``oom``).

        Asked when the worker has left its game: the pool's watcher may not have looked at its
        container yet (it looks every ``POLL_S``; on a busy machine the game's end came first and the
        seat read ``disconnect``), so its container is asked here, waiting up to ``wait_s`` seconds
        for docker to report it exited. Last, the kernel's log is asked about that container's cgroup
        (:func:`arena.hosting.sandbox.kernel_killed_for_memory`), whatever docker reported."""
        with self._lock:
            if digest in self._oom:
                return True
            proc = next((s.proc for s in self._slots if s.digest == digest), None)
            container_id = self._container_of.get(digest)
        if isinstance(proc, BotContainer) and proc.wait(wait_s) is not None and proc.oom_killed:
            with self._lock:
                self._oom.add(digest)
        with self._lock:  # the watcher may have stopped the container meanwhile, and noted it
            if digest in self._oom:
                return True
        if container_id is not None and kernel_killed_for_memory(container_id):
            with self._lock:
                self._oom.add(digest)
            return True
        return False

    def _check(self, slot: Slot) -> None:
        proc = slot.proc
        if isinstance(proc, BotContainer) and proc.poll() is not None:
            proc.stop(0.0)  # copy its output into its log and remove it, before the pool reads the log
            if proc.oom_killed:
                self._oom.add(slot.digest)
        super()._check(slot)

    def _died(self, slot: Slot, what: str) -> None:
        if slot.digest in self._oom and what.startswith("exited"):
            what = f"was killed at its memory limit ({self.bot.limits.memory_mb} MiB): oom"
        super()._died(slot, what)

    def _launch(self, slot: Slot) -> None:
        from sdk.worker import LOBBY_ENV, NAME_ENV, TOKEN_ENV

        ctx: WorkerContext | None = self._ctx
        assert ctx is not None and self.bot.image is not None
        token = ctx.lobby.tokens.issue(self.bot.name)
        slot.digest = token_digest(token)
        env = {**self.bot.env, LOBBY_ENV: self.lobby_address, TOKEN_ENV: token, NAME_ENV: self.bot.name}
        slot.starts += 1
        try:
            slot.proc = self.sandbox.start(
                self.bot.image, self.bot.name, f"worker{slot.index}-{slot.starts}", env, self.bot.limits,
                self.log_dir / slot.log_name, log_limit=ctx.log_limit,
            )
            self._container_of[slot.digest] = str(slot.proc.container.id)
            while len(self._container_of) > REMEMBERED_PER_SLOT * self.size:  # a bot dying at every game
                oldest = next(iter(self._container_of))
                del self._container_of[oldest]
                self._oom.discard(oldest)
        except SandboxError as e:
            slot.proc = None
            ctx.lobby.tokens.revoke(slot.digest)
            self._died(slot, f"could not start: {e}")
