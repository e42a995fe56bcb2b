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
from arena.hosting.sandbox import BotContainer, NoImage, Sandbox, SandboxError, kernel_killed_for_memory
from arena.hosting.workers.kind import WorkerContext
from arena.hosting.workers.local import LocalWorkers, Slot, WorkerProcess
from arena.lobby.tokens import token_digest


class ContainerWorkers(LocalWorkers):
    """A pool of ``size`` worker containers of ``bot`` in ``sandbox``; the lobby listens at ``lobby``
    (``host:port`` as the containers reach it: the sandbox network's gateway)."""

    def __init__(self, bot: BotSpec, size: int, sandbox: Sandbox, lobby: str):
        super().__init__(bot, size)
        self.sandbox = sandbox
        self.lobby_address = lobby
        #: token digest -> the id of the container that registered with it (the workers remembered:
        #: :data:`arena.hosting.workers.local.REMEMBERED_PER_SLOT` per place in the pool)
        self._container_of: dict[str, str] = {}
        #: docker's ID of the image the bot's tag named at the pool's first start (``sha256:…``): every worker
        #: and every restart starts by it, so a tag moved meanwhile never mixes two images under one bot
        #: (a reload that finds the tag moved starts a new pool: :meth:`tag_moved`)
        self.image_id: str | None = None

    def _resolve(self) -> str | None:
        """Docker's ID of the image the bot's tag names now, or None (no such image, docker not answering)."""
        assert self.bot.image is not None
        return self.sandbox.image_id(self.bot.image)

    def tag_moved(self) -> bool:
        """Whether the bot's tag now names another image than the pool's (:attr:`image_id`)."""
        now = self._resolve()
        return self.image_id is not None and now is not None and now != self.image_id

    def _exited_for_memory(self, proc: WorkerProcess | None, digest: str, wait_s: float) -> bool:
        """Whether the container exits within ``wait_s`` seconds as docker reports, killed at its memory
        limit; else, whatever docker reported, whether the kernel's log says it killed a process of that
        container's cgroup (:func:`arena.hosting.sandbox.kernel_killed_for_memory`)."""
        if isinstance(proc, BotContainer) and proc.wait(wait_s) is not None and proc.oom_killed:
            return True
        with self._lock:
            container_id = self._container_of.get(digest)
        return container_id is not None and kernel_killed_for_memory(container_id)

    def _check(self, slot: Slot) -> None:
        proc = slot.proc
        if isinstance(proc, BotContainer) and proc.poll() is not None:
            proc.stop(0.0)  # copy its output into its log and remove it, before the pool reads the log
            if proc.oom_killed:
                self._oom.add(slot.digest)
        super()._check(slot)

    def _launch(self, slot: Slot) -> None:
        from sdk.worker import LOBBY_ENV, NAME_ENV, TOKEN_ENV

        ctx: WorkerContext | None = self._ctx
        assert ctx is not None and self.bot.image is not None
        token = ctx.lobby.tokens.issue(self.bot.name)
        slot.digest = token_digest(token)
        self._remember(slot.digest)
        env = {**self.bot.env, LOBBY_ENV: self.lobby_address, TOKEN_ENV: token, NAME_ENV: self.bot.name}
        slot.starts += 1
        if self.image_id is None:
            self.image_id = self._resolve()
        image = self.image_id or self.bot.image
        try:
            slot.proc = self.sandbox.start(
                image, self.bot.name, f"worker{slot.index}-{slot.starts}", env, self.bot.limits,
                self.log_dir / slot.log_name, log_limit=ctx.log_limit,
            )
            self._container_of[slot.digest] = str(slot.proc.container.id)
            for gone in self._container_of.keys() - self._remembered.keys():
                del self._container_of[gone]
        except SandboxError as e:
            slot.proc = None
            ctx.lobby.tokens.revoke(slot.digest)
            if isinstance(e, NoImage) and image != self.bot.image:
                e = NoImage.pinned(self.bot.name, image, self.bot.image, checked=False)
            self._died(slot, f"could not start: {e}")
