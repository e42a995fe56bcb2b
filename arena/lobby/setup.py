"""The arena's lobby side for one run: the lobby, the bots' workers, and the remote bots' tokens.

:func:`open_lobby` starts a :class:`arena.lobby.service.Lobby` on ``tournament.lobby`` (TLS when
``tournament.lobby_tls_cert``/``lobby_tls_key`` are set) that accepts the valid tokens the store
holds for the config's remote bots, then one worker kind per lobby bot (:mod:`arena.hosting.workers`). The
returned :class:`LobbySetup` is stopped at the end of the run (workers first, then the lobby).

The remote bots' tokens follow the store: read at each reload (:meth:`LobbySetup.reload_tokens`), and between
reloads every :data:`TOKEN_POLL_S` seconds (:meth:`LobbySetup.watch_tokens`), so a token ``arena token
--revoke`` (or a competitor's revocation or disqualification) revoked in another process is refused within
seconds and its workers dropped, and one ``arena token`` made is accepted, without a SIGHUP.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.config import ConfigError, TournamentConfig, read_config_file
from arena.hosting.jail import LOBBY_SOCKET, Jail
from arena.hosting.sandbox import Sandbox
from arena.hosting.workers import make_worker_kind
from arena.hosting.workers.kind import WorkerContext, WorkerKind
from arena.lobby.service import Lobby
from arena.lobby.tokens import TokenBook
from arena.tournament.store import StorageError, Store

#: Seconds between two looks of a running lobby at the store's remote tokens (:meth:`LobbySetup.watch_tokens`).
TOKEN_POLL_S = 1.0


@dataclass
class LobbySetup:
    """A running lobby, the worker kinds of the lobby bots (bot name -> kind) and their context."""

    lobby: Lobby
    kinds: dict[str, WorkerKind]
    ctx: WorkerContext | None = None
    sandbox: Sandbox | None = None
    _watching: threading.Event | None = None  # set: the token watcher stops (watch_tokens)
    _watcher: threading.Thread | None = None

    def update(self, config: TournamentConfig, store: Store, since: int | None = None) -> None:
        """After a config reload: stop the workers of bots that left or changed, start those of new or
        changed bots, and read the remote bots' tokens again."""
        assert self.ctx is not None
        wanted = {b.name: b for b in config.bots if b.mode != "per_game"}
        for name, kind in list(self.kinds.items()):
            if wanted.get(name) != kind.bot or kind.tag_moved():  # a container pool's tag moved: a new pool
                kind.stop()
                del self.kinds[name]
        for name, bot in wanted.items():
            if name not in self.kinds:
                self.kinds[name] = make_worker_kind(bot, config.players, config.concurrency, self.sandbox,
                                                    self.lobby.address)
                self.kinds[name].start(self.ctx)
        self.reload_tokens(config, store, since)

    def reload_tokens(self, config: TournamentConfig, store: Store, since: int | None = None) -> None:
        """Accept exactly the valid stored tokens of the config's remote bots (after ``arena token`` made or
        revoked one), and of the bots told a token since the last reload (a competition's entry registered
        since, :meth:`TokenBook.tell`, perhaps not yet in this config); every other remote bot's tokens go
        (an entry retired or withdrawn); workers of a token gone are disconnected (:meth:`TokenBook.sync`).
        ``since``: :meth:`TokenBook.mark` taken before ``config`` was read (a bot told before it and not in
        ``config`` left; None: every bot told since the last reload is kept until the next)."""
        self.lobby.tokens.sync(store.token_digests, [b.name for b in config.bots if b.mode == "remote"], since)
        self.lobby.drop_revoked()

    def watch_tokens(self, path: Path, note: Callable[[str], None]) -> None:
        """Look at the remote bots' tokens of the store at ``path`` (its own connection) every
        :data:`TOKEN_POLL_S` seconds in a thread of its own until :meth:`stop`: when one was revoked or made
        (``arena token``, ``arena competitor``, in another process) the lobby takes it at once, drops the
        workers of a revoked one and says so in one line to ``note``. A store that cannot be read is looked at
        again next time (one line)."""
        stopped = self._watching = threading.Event()

        def run() -> None:
            store: Store | None = None
            failing = False  # said so: not again until a look succeeds
            try:
                while not stopped.wait(TOKEN_POLL_S):
                    try:
                        if store is None:
                            store = Store(path)
                        if self.lobby.tokens.sync(store.token_digests):
                            dropped = self.lobby.drop_revoked()
                            note("remote bots' tokens changed in the store: taken" + (
                                f"; {dropped} worker(s) of a revoked token dropped" if dropped else ""))
                        failing = False
                    except (sqlite3.Error, OSError, StorageError) as e:  # busy, moved, replaced: look again
                        if not failing:
                            note(f"the store's remote tokens could not be read ({e}); looking again every "
                                 f"{TOKEN_POLL_S:g} s")
                        failing = True
            finally:
                if store is not None:
                    store.close()

        self._watcher = threading.Thread(target=run, name="lobby-tokens", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """Stop the token watcher, every bot's workers, then the lobby."""
        if self._watching is not None and self._watcher is not None:
            self._watching.set()
            self._watcher.join(30)
        for kind in self.kinds.values():
            kind.stop()
        self.lobby.stop()


def _start_lobby(
    config: TournamentConfig, sandbox: Sandbox | None, loop: asyncio.AbstractEventLoop | None, jail: Jail | None,
    services: Sequence[Callable[[Any], None]] = (), tokens: TokenBook | None = None,
) -> Lobby:
    """The started lobby of :func:`open_lobby`. :raises ConfigError: as :func:`open_lobby`."""
    tls = None
    if config.lobby_tls is not None:
        cert, key = config.lobby_tls
        tls = (read_config_file(config, "lobby_tls_cert", cert), read_config_file(config, "lobby_tls_key", key))
    host, _, port = config.lobby.rpartition(":")
    also, bots = None, None
    if sandbox is not None and sandbox.gateway:  # its containers reach the gateway alone; other machines do not
        host, also = sandbox.gateway, host  # and this machine's workers and competitors tournament.lobby's host
        bots = sandbox.bot_network()  # each container's streams counted apart (referee.peers.BotNetwork)
    book = tokens if tokens is not None else TokenBook()
    lobby = Lobby(config.name, book, host.strip("[]"), int(port), tls, loop=loop, services=services, also_host=also,
                  bots=bots)
    try:
        lobby.start()
    except RuntimeError as e:
        lobby.stop()
        raise ConfigError(config.source, "tournament.lobby", f"cannot listen there: {e}", config.lobby) from None
    if jail is not None:  # each sandboxed bot's workers dial a socket of their own (arena/hosting/jail.py)
        jail.on_bot_folder(lambda folder: lobby.listen_unix(f"unix:{folder / LOBBY_SOCKET}"), key=lobby,
                           unlisten=lambda folder: lobby.stop_unix(f"unix:{folder / LOBBY_SOCKET}"))
    if sandbox is not None:
        sandbox.allow(int(lobby.address.rsplit(":", 1)[1]))
    return lobby


def open_lobby(
    config: TournamentConfig,
    store: Store,
    log_dir: Path,
    secret_names: Collection[str],
    secret_values: Collection[str],
    on_event: Callable[[str], None] = lambda message: None,
    sandbox: Sandbox | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    jail: Jail | None = None,
    services: Sequence[Callable[[Any], None]] = (),
    tokens: TokenBook | None = None,
) -> LobbySetup:
    """Start the lobby and every lobby bot's workers (see the module docstring).

    With a ``sandbox`` (container bots) the lobby listens on the sandbox network's gateway, the only
    address of the host its containers reach, at a port of its own with ``Connect`` alone (no
    container reaches the ``services``: a submitted bot could have called the Submission service with
    its author's token), and that port is let through the sandbox's firewall chain; it also listens at
    ``tournament.lobby`` (a wildcard too), with everything, where competitors (a competition's
    submissions share the lobby) and workers from other machines
    (:attr:`arena.config.TournamentConfig.remote_host`) come.

    With a ``jail`` (sandboxed process bots, :mod:`arena.hosting.jail`) the lobby also listens on a unix
    socket of each sandboxed bot's own (``Jail.on_bot_folder``), the only way its local workers reach it.

    ``services``: more gRPC services on the lobby's server (:class:`arena.lobby.service.Lobby`).

    ``tokens``: the lobby's token book (a new one if None), made before it opens by an owner that tells it
    tokens (:meth:`TokenBook.tell`) from the moment the ``services`` answer, before this returns.

    ``loop``: serve the lobby on this running event loop (the embedded referee's:
    :meth:`arena.play.referees.RefereePool.embedded_loop`) rather than a loop of its own; stop the
    lobby (:meth:`LobbySetup.stop`) before that loop stops.

    :raises ConfigError: naming ``tournament.lobby`` when it cannot listen there, or a TLS file that
        cannot be read.
    """
    lobby = _start_lobby(config, sandbox, loop, jail, services, tokens)
    kinds = {
        b.name: make_worker_kind(b, config.players, config.concurrency, sandbox, lobby.address)
        for b in config.bots
        if b.mode != "per_game"
    }
    setup = LobbySetup(lobby, kinds, sandbox=sandbox)
    setup.reload_tokens(config, store)
    config_dir = str(Path(config.source).resolve().parent)
    setup.ctx = ctx = WorkerContext(
        lobby, log_dir, config_dir, secret_names, secret_values, lobby.wake.set, on_event, config.bot_log_bytes,
        config.lobby_tls[0] if config.lobby_tls else None, config.referee_tls_ca, jail,
    )
    try:
        setup.watch_tokens(store.path, on_event)
        for kind in kinds.values():
            kind.start(ctx)
    except BaseException:
        setup.stop()
        raise
    return setup
