"""Running a bot's workers: one module per kind, one small interface (:class:`WorkerKind`).

A *worker* is a long-lived program that dials the arena's lobby (:mod:`arena.lobby.service`) with a bot
token and plays one seat at a time. How workers come to exist differs by kind:

- ``local`` (:class:`arena.hosting.workers.local.LocalWorkers`, ``mode = "worker"``): a pool of processes
  on this machine started from the bot's ``command``, restarted with back-off when they die, and
  declared broken after :data:`arena.hosting.workers.local.MAX_DEATHS` deaths in a row without a finished game;
- ``remote`` (:class:`RemoteWorkers`, ``remote = true``): nothing to run; the bot's owner starts
  workers anywhere with the token from ``arena token``;
- ``container`` (:class:`arena.hosting.workers.container.ContainerWorkers`, ``image`` with ``mode = "worker"``):
  the local pool, each worker a sandboxed container (:mod:`arena.hosting.sandbox`) started through the
  docker SDK.

The per-game mode (``mode = "per_game"``) is not a worker kind: the game runner starts one process
per seat for each game (:mod:`arena.play.game`).

The arena makes one kind per lobby bot with :func:`make_worker_kind`, calls :meth:`WorkerKind.start`
once the lobby is up, reads :attr:`WorkerKind.broken` before starting each of the bot's games (a
broken bot's remaining games are forfeited at once with that reason), and calls
:meth:`WorkerKind.stop` at the end. A kind learns about its workers' games through the lobby.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena.config import BotSpec
from arena.hosting.workers.kind import WorkerContext, WorkerKind

if TYPE_CHECKING:
    from arena.hosting.sandbox import Sandbox


class RemoteWorkers:
    """A remote bot: its workers run elsewhere and dial the lobby with its token; nothing to start."""

    def __init__(self, bot: BotSpec):
        self.bot = bot

    def start(self, ctx: WorkerContext) -> None:
        """Nothing to start."""

    @property
    def broken(self) -> str | None:
        """Never broken here (a remote bot that never shows up forfeits by ``no_show``)."""
        return None

    def tag_moved(self) -> bool:
        """Never: a remote bot has no image here."""
        return False

    def stop(self) -> None:
        """Nothing to stop (remote workers see the lobby close and may dial again later)."""


def pool_size(bot: BotSpec, players: int, concurrency: int) -> int:
    """Workers in a local pool: the bot's ``workers``, else enough for ``concurrency`` games of it at
    once (two seats per game at a 4-player table, one at a 2-player table)."""
    return bot.workers or concurrency * (2 if players == 4 else 1)


def make_worker_kind(
    bot: BotSpec, players: int, concurrency: int, sandbox: Sandbox | None = None, lobby: str = ""
) -> WorkerKind:
    """The :class:`WorkerKind` of a bot in ``worker`` or ``remote`` mode (a container bot's workers run
    in ``sandbox`` and dial the lobby at ``lobby``, its address on the sandbox network).

    :raises ValueError: for a ``per_game`` bot (it has no workers), or a container bot without a sandbox.
    """
    if bot.mode == "remote":
        return RemoteWorkers(bot)
    if bot.mode == "worker" and bot.in_container:
        from arena.hosting.workers.container import ContainerWorkers

        if sandbox is None:
            raise ValueError(f"bot {bot.name!r} runs in containers: it needs the sandbox (docker)")
        return ContainerWorkers(bot, pool_size(bot, players, concurrency), sandbox, lobby)
    if bot.mode == "worker":
        from arena.hosting.workers.local import LocalWorkers

        return LocalWorkers(bot, pool_size(bot, players, concurrency))
    raise ValueError(f"bot {bot.name!r} plays per game: it has no workers")
