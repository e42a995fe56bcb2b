"""What every kind of worker gets (:class:`WorkerContext`) and the one interface the arena calls on the
workers of a bot (:class:`WorkerKind`); the kinds are described in :mod:`arena.hosting.workers`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from arena.config import BotSpec

if TYPE_CHECKING:
    from arena.hosting.jail import Jail
    from arena.lobby.service import Lobby


@dataclass(frozen=True)
class WorkerContext:
    """What every kind may need: the ``lobby`` (its address, its token book for per-run tokens and each
    token's finished games), the folder for workers' logs (each capped at ``log_limit`` bytes), the
    config's folder (``{config_dir}``), the secrets a bot's environment must never hold, a callback for
    "something changed" and one for a one-line message to the operator (a worker died and is restarted,
    a bot is broken)."""

    lobby: Lobby
    log_dir: Path
    config_dir: str
    secret_names: Collection[str]
    secret_values: Collection[str]
    on_change: Callable[[], None]
    on_event: Callable[[str], None] = lambda message: None
    log_limit: int = 1 << 20
    #: the lobby's certificate file when it serves TLS (local workers trust it: ALLFOURS_TLS_CA)
    tls_ca: str | None = None
    #: the external referees' certificate file when they serve TLS (``tournament.referee_tls_ca``; local
    #: workers trust it for the referee: ALLFOURS_REFEREE_TLS_CA)
    referee_tls_ca: str | None = None
    #: the process sandbox of sandboxed local workers (:mod:`arena.hosting.jail`), or None
    jail: Jail | None = None


class WorkerKind(Protocol):
    """The workers of one bot (see the module docstring)."""

    bot: BotSpec

    def start(self, ctx: WorkerContext) -> None:
        """Start the workers (returns at once; they register with the lobby when ready)."""
        ...

    @property
    def broken(self) -> str | None:
        """Why this bot cannot play any more (one line), or None."""
        ...

    def tag_moved(self) -> bool:
        """Whether the image the workers start is no longer what the bot's tag names (a container pool's tag
        moved to another image since its first start: a reload starts a new pool); False for other kinds."""
        ...

    def stop(self) -> None:
        """Stop every worker and anything it started (idempotent)."""
        ...
