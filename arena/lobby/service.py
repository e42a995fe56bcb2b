"""The lobby: where bot workers wait for seats (proto/allfours/v1/lobby.proto, docs/protocol.md).

A worker opens one ``LobbyService.Connect`` stream, registers with a bot token, and is then *idle*.
The arena's scheduler (another thread) asks :meth:`Lobby.reserve` for one idle worker per seat of a
game — never the same worker twice, so partners are two workers — sends each an
:class:`~allfours.v1.lobby_pb2.Assignment` with :meth:`Lobby.assign`, and the worker plays that seat
on the referee. When its match is over the worker sends ``Ready``; it is idle again once its game has
let it go (:meth:`Lobby.release`, when the arena has the game's result or gives up on it). Until then it
stays the game's: a game whose match was lost with its referee plays again with the same workers
(:meth:`Lobby.reclaim`), and no other game can take them meanwhile, however the worker's Ready and the
arena's news of the failure are ordered.

Interface for the scheduler (all methods thread-safe; the gRPC server runs on its own event loop, or
on the one it is given: the embedded referee's, see ``loop``):

- ``Lobby(tournament, tokens, host, port, tls, loop=None)``; :meth:`start` → ``host:port``; :meth:`stop`;
- :meth:`reserve` ``(seat bot names) -> [WorkerRef] | None``; :meth:`release` (the game is done with
  them); :meth:`reclaim` (the same workers again, for a replay);
- :meth:`assign` ``(worker, Assignment) -> bool`` (False: that worker is gone);
- :meth:`gone` ``(worker) -> str | None`` (why it left, once it has), :meth:`counts` (per bot);
  :meth:`came` ``(bot) -> bool`` (a worker of the bot has registered since the lobby started);
- :attr:`wake`: a :class:`threading.Event` set on every change (a worker came, left or is idle
  again); the one run loop that waits on it clears it before looking.

The lobby's port also serves the standard gRPC health check (``grpc.health.v1.Health``, service ``""``):
SERVING while it serves, NOT_SERVING once it stops, so ``python -m referee.healthcheck HOST:PORT`` checks an
``arena run``/``arena serve`` from outside (a compose healthcheck, a load balancer). Its ``Watch`` streams
take no token and last as long as their client keeps them, each holding one of the server's RPC slots, so
they are capped per peer address and in all (:class:`referee.streams.CappedHealth`).

Tokens (:class:`arena.lobby.tokens.TokenBook`) are kept as SHA-256 digests only; a token plays only as its own bot.
Dead workers: every connection is pinged (HTTP/2 keepalive every :data:`KEEPALIVE_S` s, with
:data:`KEEPALIVE_TIMEOUT_S` s to answer), so a worker whose machine or process stopped is dropped
within 15 s; a process that exits closes its connection at once.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from arena.lobby.tokens import MAX_FIELD, TokenBook, token_digest
from referee import wire
from referee.peers import BotNetwork
from referee.streams import CappedHealth, Pending, UnaryRequests, Undecodable, add_stream_method, peer_key

log = structlog.get_logger("arena.lobby.service")

#: Seconds between the lobby's keepalive pings on a worker's connection.
KEEPALIVE_S = 5
#: Seconds a worker's connection has to answer a ping before it is closed (so a dead one goes within 10 s).
KEEPALIVE_TIMEOUT_S = 5
#: The lobby's gRPC service (its ``Connect`` decodes requests with :func:`referee.streams.add_stream_method`).
LOBBY_SERVICE = lpb.DESCRIPTOR.services_by_name["LobbyService"].full_name
#: Seconds a new stream has to send its Register.
REGISTER_TIMEOUT_S = 10.0
#: Most workers one bot may have connected at once (more are refused with RESOURCE_EXHAUSTED).
MAX_WORKERS_PER_BOT = 64
#: Most streams of one peer address (a TCP peer's host) waiting for their Register at once, and of all
#: TCP peers together: a stream holds one of the server's :data:`MAXIMUM_CONCURRENT_RPCS` slots before
#: any token is seen, so an anonymous client (or a submitted bot's container, which reaches the
#: lobby on the sandbox network's gateway) holding 1024 silent streams made the lobby and the
#: Submission service on its port refuse every call (RESOURCE_EXHAUSTED). More are refused at once,
#: one line; the peers of a sandboxed bot's own unix socket count as one (:meth:`Lobby.listen_unix`).
PENDING_PER_PEER = 16
PENDING_ALL = 256

#: Most TCP connections the lobby's own port (tournament.lobby: competitors, remote workers, anyone who reaches
#: it) holds open at once, and the seconds one with no call under way is kept. gRPC kept every connection with
#: no bound and no timer (a client answers the keepalive pings by itself), so one client with no token opened
#: connections until the arena's process had no file descriptor left: every accept failed ("File descriptor
#: limit reached"), and so did the arena's own files (the book, records, logs) and the bots' connections to
#: the referee in the same process. Past the bound a new connection is closed at once; an idle one goes after
#: CONNECTION_IDLE_S, so what a flood holds frees itself (a worker's Connect is a call under way, never idle).
MAX_CONNECTIONS = 512
CONNECTION_IDLE_S = 60

SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", KEEPALIVE_S * 1000),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_S * 1000),
    ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_S * 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 5_000),
    ("grpc.http2.max_ping_strikes", 2),
    ("grpc.max_receive_message_length", 16 * 1024),
    ("grpc.max_send_message_length", 1024 * 1024),
    ("grpc.so_reuseport", 0),
]
#: The refusal of a remote bot's token on the container sandbox's gateway and on a sandboxed process bot's
#: own socket, where only the arena's own workers come: a bot holding its author's remote entry's token
#: would play that entry's seats from inside its sandbox (beside a partner on its author's machine, in the
#: 4-player format).
REMOTE_TOKEN_ON_GATEWAY = ("a remote bot's token is not taken on the bots' network: its workers dial the lobby "
                           "at tournament.lobby")
#: The refusal of a second worker on an arena's own worker's token, while its first is connected: the token
#: is one process's, and a process registered twice (``sdk.run --workers 2``, or a Connect of its own)
#: was given both seats of its side at four players, so it saw its partner's hand. It ends ``dial again
#: later``: an honest worker's new stream may come before its old one is seen gone.
ONE_WORKER_A_PROCESS = ("this token's worker is already connected (an arena's own worker plays one seat at a time): "
                        "dial again later")
#: Most streams the lobby serves at once.
MAXIMUM_CONCURRENT_RPCS = 1024
#: The RPCs at once on one sandboxed bot's own socket (:meth:`Lobby.listen_unix`): its workers' streams
#: (at most 512: a pool is sized for 256 games at once, two seats each) and its silent ones (at most
#: ``PENDING_PER_PEER``), with room to spare.
BOT_SOCKET_RPCS = 1024


@dataclass(eq=False)
class WorkerRef:
    """One connected worker, as the scheduler sees it.

    ``state`` is ``"idle"``, ``"reserved"`` (a game's, not playing: picked and not yet assigned, or
    done with its match before the game let it go) or ``"busy"`` (playing ``match_id``); ``left`` is
    why it went (``None`` while connected); ``claimed``: a game has it (from :meth:`Lobby.reserve`
    until :meth:`Lobby.release`), so its Ready makes it reserved, not idle.
    """

    worker_id: str
    bot: str
    version: str
    peer: str
    digest: str
    state: str = "idle"
    match_id: str = ""
    games: int = 0
    left: str | None = None
    claimed: bool = False
    #: Registered from a container of the sandbox's network (:attr:`Lobby.bots`): not counted by
    #: :data:`MAX_WORKERS_PER_BOT` (the arena's pool, one worker a token it issued, bounds them).
    contained: bool = False
    _outbox: asyncio.Queue[lpb.ConnectResponse | None] = field(default_factory=asyncio.Queue, repr=False)


class _Refusal(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class Lobby:
    """The lobby service and its worker registry (see the module docstring).

    :param tournament: the tournament's name (told to workers in Registered).
    :param tokens: the bot tokens it accepts.
    :param host: / :param port: where to listen (port 0: any free one; read :attr:`address`).
    :param tls: ``(certificate chain PEM, private key PEM)`` to serve TLS, or None.
    :param also_host: listen on this host too (:attr:`remote_address`, at ``port``): remote workers' and
        competitors' address when ``host`` is the container sandbox's gateway, which only this machine
        reaches. ``host`` then serves ``Connect`` alone, with a server and a port of its own (any free
        one: :attr:`address`); ``also_host`` serves everything (health, ``services``).
    :param bots: the container sandbox's network when ``host`` is its gateway (with ``also_host``): on
        ``host``'s server each container's streams count against its own address's caps alone
        (:data:`PENDING_PER_PEER`), never a count every address shares (its silent streams' ``in_all``, the
        server's RPC slots: none there), so two containers of one entrant cannot signal each other through
        one (:class:`referee.peers.BotNetwork`).
    :param on_change: called (from the lobby's thread) after every change, besides setting :attr:`wake`.
    :param services: functions that add more services to the lobby's ``grpc.aio.Server`` before it
        starts (the competition's Submission service: same port, same TLS; not on ``host`` when
        ``also_host`` is given).
    """

    def __init__(
        self,
        tournament: str,
        tokens: TokenBook,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: tuple[bytes, bytes] | None = None,
        on_change: Callable[[], None] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        services: Sequence[Callable[[grpc.aio.Server], None]] = (),
        also_host: str | None = None,
        bots: BotNetwork | None = None,
    ):
        self.tournament = tournament
        self.also_host = also_host
        self.bots = bots
        self.services = tuple(services)
        self.tokens = tokens
        self.host, self.port, self.tls = host, port, tls
        #: The port bound on ``also_host`` once serving (``port`` is then ``host``'s own), else None.
        self.remote_port: int | None = None
        self.on_change = on_change
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._workers: dict[str, WorkerRef] = {}
        self._games: dict[str, int] = {}
        #: The bots a worker has registered for since the lobby started (:meth:`came`).
        self._came: set[str] = set()
        self._ids = itertools.count(1)
        # gRPC's asyncio layer polls on the first loop of the process and hands other loops each event
        # across threads: served on the embedded referee's loop, the lobby costs the arena ~10 ms of CPU
        # a game less (benchmarks/arena.py)
        self._loop = loop or asyncio.new_event_loop()
        self._thread = None if loop else threading.Thread(target=self._loop.run_forever, name="lobby", daemon=True)
        self._server: grpc.aio.Server | None = None
        #: The standard gRPC health service on the lobby's port (SERVING while it serves): made on the loop.
        self._health: CappedHealth | None = None
        #: The servers with Connect alone, by address: one a sandboxed bot (:meth:`listen_unix`, its socket's
        #: address), and the container sandbox's gateway (``host`` when ``also_host`` is given).
        self._bot_servers: dict[str, grpc.aio.Server] = {}
        self._serving = False
        self._closing = False
        #: Streams waiting for their Register, by the peer's host.
        self._pending = Pending(PENDING_PER_PEER, PENDING_ALL)

    # ------------------------------------------------------------------ life cycle
    @property
    def address(self) -> str:
        """``host:port`` workers dial."""
        return f"{self.host}:{self.port}"

    @property
    def remote_address(self) -> str | None:
        """``host:port`` of the second address (``also_host``), or None."""
        if self.also_host is None:
            return None
        from referee.server import host_port

        return host_port(self.also_host, self.port if self.remote_port is None else self.remote_port)

    def start(self) -> str:
        """Bind and serve; returns :attr:`address`.

        :raises RuntimeError: if the address cannot be bound (in use, or a bad TLS pair).
        """
        self._serving = True
        if self._thread is not None:
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)

    async def _start(self) -> str:
        server = grpc.aio.server(options=[*SERVER_OPTIONS, ("grpc.max_allowed_incoming_connections", MAX_CONNECTIONS),
                                          ("grpc.max_connection_idle_ms", CONNECTION_IDLE_S * 1000)],
                                 maximum_concurrent_rpcs=MAXIMUM_CONCURRENT_RPCS, interceptors=[UnaryRequests()])
        add_stream_method(server, LOBBY_SERVICE, "Connect", _Servicer(self).Connect,
                          lpb.ConnectRequest, lpb.ConnectResponse)
        self._health = CappedHealth()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        for add in self.services:
            add(server)
        if self.also_host is None:
            self.port = self._bind(server, f"{self.host}:{self.port}")
        else:
            from referee.server import host_port

            # ``host`` is the bots' network (the container sandbox's gateway): a server with Connect
            # alone there, so no bot in a container reaches the other services (the Submission service:
            # a bot with its author's token read its own logs of stored games, the twin's decks).
            # With the sandbox's network (self.bots) a container's streams count per address alone: no RPC
            # slots over every address there (a stream is a silent one, capped per address, or one
            # worker's, one a token); the host's own peers' silent streams still count in all.
            bots = grpc.aio.server(
                options=SERVER_OPTIONS, maximum_concurrent_rpcs=MAXIMUM_CONCURRENT_RPCS if self.bots is None else None,
                interceptors=[UnaryRequests(apart=self.bots)])
            pending = Pending(PENDING_PER_PEER, PENDING_ALL, self.bots) if self.bots is not None else None
            add_stream_method(bots, LOBBY_SERVICE, "Connect", _Servicer(self, pending, own_only=True).Connect,
                              lpb.ConnectRequest, lpb.ConnectResponse)
            self._bot_servers[self.host] = bots  # stopped with the rest (stop), bound or not
            self.remote_port = self._bind(server, host_port(self.also_host, self.port))
            # A port of its own: on the same one a wildcard also_host (0.0.0.0, tournament.lobby's for
            # competitors on other machines) would take the gateway's address too, and neither bind.
            self.port = self._bind(bots, f"{self.host}:0")
            await bots.start()
        await server.start()
        await self._health.set("", health_pb2.HealthCheckResponse.SERVING)
        self._server = server
        return self.address

    def _bind(self, server: grpc.aio.Server, addr: str) -> int:
        """Add the port ``addr`` (``host:port``) to ``server``, TLS when the lobby serves it; the bound port.

        :raises RuntimeError: ``the lobby could not bind ADDR`` (in use, or a bad TLS pair).
        """
        if self.tls is not None:
            bound = server.add_secure_port(addr, grpc.ssl_server_credentials([(self.tls[1], self.tls[0])]))
        else:
            bound = server.add_insecure_port(addr)
        if not bound:
            how = " with the TLS certificate and key (a matching PEM pair?)" if self.tls else ""
            raise RuntimeError(f"the lobby could not bind {addr}{how}")
        return int(bound)

    def listen_unix(self, address: str) -> None:
        """Serve ``Connect`` on the unix socket ``address`` (``unix:PATH``) with a server of its own: one
        sandboxed bot's socket (arena/hosting/jail.py), so its silent streams and its RPC slots
        (:data:`BOT_SOCKET_RPCS`) are its own and a bot flooding it cannot keep another bot's workers
        out. It takes the arena's own workers' tokens alone (:data:`REMOTE_TOKEN_ON_GATEWAY`). Callable
        from any thread.

        :raises RuntimeError: if the socket cannot be bound, or the lobby is not serving.
        """

        async def _listen() -> None:
            if self._server is None:
                raise RuntimeError("the lobby is not serving")
            if address in self._bot_servers:
                return
            server = grpc.aio.server(options=SERVER_OPTIONS, maximum_concurrent_rpcs=BOT_SOCKET_RPCS,
                                     interceptors=[UnaryRequests()])
            pending = Pending(PENDING_PER_PEER, PENDING_ALL)
            add_stream_method(server, LOBBY_SERVICE, "Connect", _Servicer(self, pending, own_only=True).Connect,
                              lpb.ConnectRequest, lpb.ConnectResponse)
            if not server.add_insecure_port(address):
                raise RuntimeError(f"the lobby could not bind {address}")
            await server.start()
            self._bot_servers[address] = server

        asyncio.run_coroutine_threadsafe(_listen(), self._loop).result(30)

    def stop_unix(self, address: str) -> None:
        """Stop serving the unix socket ``address`` (:meth:`listen_unix`), whose one bot process is gone.
        Callable from any thread; nothing once the lobby stopped."""

        async def _stop() -> None:
            server = self._bot_servers.pop(address, None)
            if server is not None:
                await server.stop(0)

        if self._serving and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(30)

    def stop(self, grace_s: float = 1.0) -> None:
        """Close every worker's stream (they see UNAVAILABLE and may reconnect later) and stop serving
        (and the lobby's own loop; a loop it was given, the embedded referee's, is left running)."""
        if not self._serving or not self._loop.is_running():
            return
        self._serving = False
        self._closing = True

        async def _stop() -> None:
            if self._health is not None:  # health: NOT_SERVING while the streams close
                await self._health.enter_graceful_shutdown()
            with self._lock:
                workers = list(self._workers.values())
            for w in workers:
                w._outbox.put_nowait(None)
            servers = [s for s in (self._server, *self._bot_servers.values()) if s is not None]
            await asyncio.gather(*(s.stop(grace_s) for s in servers))
            self._bot_servers.clear()

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(grace_s + 10)
        if self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    # ------------------------------------------------------------------ the scheduler's side
    def _changed(self) -> None:
        self.wake.set()
        if self.on_change is not None:
            self.on_change()

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per bot: ``(connected workers, idle workers)``."""
        out: dict[str, tuple[int, int]] = {}
        with self._lock:
            for w in self._workers.values():
                n, idle = out.get(w.bot, (0, 0))
                out[w.bot] = (n + 1, idle + (w.state == "idle"))
        return out

    def came(self, bot: str) -> bool:
        """Whether a worker of ``bot`` has registered since the lobby started (connected now or not): a remote
        bot none of whose workers came yet has its games wait for the first without a no-show clock
        (:class:`arena.lobby.seats.LobbyBot`, ``absent``)."""
        with self._lock:
            return bot in self._came

    def reserve(self, seats: Sequence[str | None]) -> list[WorkerRef | None] | None:
        """One distinct idle worker per seat (``seats[k]`` is the bot of seat k; None: no worker
        there, e.g. a per-game seat), marked reserved and claimed by the caller's game until it
        calls :meth:`release`; or None (nothing reserved) when some bot has too few idle workers. The
        workers that have played fewest games go first, so a pool shares the work."""
        with self._lock:
            out = self._pick_idle(seats)
            for w in out or ():
                if w is not None:
                    w.state, w.claimed = "reserved", True
        return out

    def _pick_idle(self, seats: Sequence[str | None]) -> list[WorkerRef | None] | None:
        """:meth:`reserve`'s choice, made under the lock and marking nothing: one distinct idle worker per
        seat that names a bot, fewest games first; None when some bot has too few idle workers."""
        need: dict[str, int] = {}
        for bot in seats:
            if bot is not None:
                need[bot] = need.get(bot, 0) + 1
        picked: dict[str, list[WorkerRef]] = {}
        for bot, n in need.items():
            idle = sorted((w for w in self._workers.values() if w.bot == bot and w.state == "idle"),
                          key=lambda w: w.games)
            if len(idle) < n:
                return None
            picked[bot] = idle[:n]
        return [None if bot is None else picked[bot].pop(0) for bot in seats]

    def release(self, workers: Sequence[WorkerRef | None]) -> None:
        """The game is done with ``workers`` (from :meth:`reserve` or :meth:`reclaim`; call once per
        game): each is idle now, or when it sends Ready for the match it is still playing."""
        with self._lock:
            for w in workers:
                if w is None or not w.claimed:
                    continue
                w.claimed = False
                if w.state == "reserved" and w.left is None:
                    w.state = "idle"
        self._changed()

    def reclaim(self, workers: Sequence[WorkerRef | None]) -> list[WorkerRef | None] | None:
        """The game's ``workers`` again, seat by seat, for a replay of a match lost with its referee,
        once none is still busy with the lost match (a worker tries the dead referee until its grace
        period ends); a worker that left is replaced by an idle worker of its bot. The result is
        claimed by the game as :meth:`reserve`'s is. None (nothing changed): wait and ask again."""
        with self._lock:
            if any(w is not None and w.claimed and w.left is None and w.state == "busy" for w in workers):
                return None
            kept = [w is None or (w.claimed and w.left is None) for w in workers]
            need = [None if keep or w is None else w.bot for w, keep in zip(workers, kept, strict=True)]
            spares = self._pick_idle(need)
            if spares is None:
                return None
            out = [w if keep else spare for w, keep, spare in zip(workers, kept, spares, strict=True)]
            for w in out:
                if w is not None:
                    w.state, w.claimed = "reserved", True
        return out

    def assign(self, worker: WorkerRef, assignment: lpb.Assignment) -> bool:
        """Send ``assignment`` to a reserved ``worker``; False if it has left (nothing sent)."""
        with self._lock:
            if worker.left is not None:
                return False
            worker.state = "busy"
            worker.match_id = assignment.match_id
        msg = lpb.ConnectResponse(assignment=assignment)
        self._loop.call_soon_threadsafe(worker._outbox.put_nowait, msg)
        return True

    def gone(self, worker: WorkerRef) -> str | None:
        """Why ``worker`` left (e.g. ``"its connection closed: …"``), or None while it is connected."""
        with self._lock:
            return worker.left

    def games_for(self, digest: str) -> int:
        """Matches finished (Ready sent) by workers that registered with the token of this digest."""
        with self._lock:
            return self._games.get(digest, 0)

    def drop_revoked(self) -> int:
        """Disconnect every worker whose token is no longer valid (revoked); returns how many.

        Not for local workers, whose per-process token is forgotten when the process exits (it is
        gone by then). A dropped worker sees its stream end and dials again; its token is refused.
        """
        with self._lock:
            workers = [w for w in self._workers.values() if not self.tokens.valid(w.digest)]
        for w in workers:
            self._loop.call_soon_threadsafe(w._outbox.put_nowait, None)
        return len(workers)

    # ------------------------------------------------------------------ the service's side
    def _register(self, reg: lpb.Register, peer: str, own_only: bool = False) -> WorkerRef:
        if self._closing:
            raise _Refusal(grpc.StatusCode.UNAVAILABLE, "the arena is shutting down; connect again later")
        if reg.protocol_version != wire.PROTOCOL_VERSION:
            raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT,
                           f"protocol_version {reg.protocol_version[:40]!r} is not supported "
                           f"(expected {wire.PROTOCOL_VERSION!r})")
        bot = self.tokens.bot_for(reg.token)
        if bot is None:
            raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
        if reg.bot_name != bot:
            raise _Refusal(grpc.StatusCode.UNAUTHENTICATED,
                           f"this token is bot {bot!r}'s, not {reg.bot_name[:MAX_FIELD]!r}'s: register as {bot!r} "
                           f"(a token plays only as its own bot)")
        if own_only and not self.tokens.issued(reg.token):
            raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, REMOTE_TOKEN_ON_GATEWAY)
        digest = token_digest(reg.token)
        with self._lock:
            if not self.tokens.valid(digest):  # revoked since bot_for: drop_revoked (under this lock) may have run
                raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
            if self.tokens.issued(reg.token) and any(w.digest == digest for w in self._workers.values()):
                raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, ONE_WORKER_A_PROCESS)
            # a container's worker is counted by no count its bot's other containers share (its partner's
            # Register refused or not was a bit): the arena's pool of it (up to 512 at concurrency 256) bounds them
            contained = own_only and self.bots is not None and self.bots.holds(peer_key(peer))
            if not contained and sum(w.bot == bot and not w.contained
                                     for w in self._workers.values()) >= MAX_WORKERS_PER_BOT:
                raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"bot {bot!r} already has {MAX_WORKERS_PER_BOT} workers connected: dial again later")
            w = WorkerRef(f"w{next(self._ids)}", bot, reg.bot_version[:64], peer[:100], digest, contained=contained)
            self._workers[w.worker_id] = w
            self._came.add(bot)
        log.info("lobby_worker_registered", worker=w.worker_id, bot=bot, peer=w.peer)
        self._changed()
        return w

    def _ready(self, w: WorkerRef, match_id: str) -> None:
        with self._lock:
            if w.state != "busy" or match_id != w.match_id:
                # nothing of the worker's text: this line is also why it left, in its game's public reasons
                raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT,
                               f"Ready names another match ({len(match_id)} characters) than this worker was given "
                               f"({w.match_id or 'no match'})")
            w.state, w.match_id = ("reserved" if w.claimed else "idle"), ""  # claimed: its game's still
            w.games += 1
            self._games[w.digest] = self._games.get(w.digest, 0) + 1
        self._changed()

    def _leave(self, w: WorkerRef, why: str) -> None:
        with self._lock:
            self._workers.pop(w.worker_id, None)
            w.left = why
        log.info("lobby_worker_left", worker=w.worker_id, bot=w.bot, why=why)
        self._changed()


class _Servicer(lpb_grpc.LobbyServiceServicer):
    """``Connect`` of one of the lobby's servers; ``own_only``: it takes the arena's own workers' tokens
    alone (:meth:`TokenBook.issued`), not a remote bot's (the container sandbox's gateway)."""

    def __init__(self, lobby: Lobby, pending: Pending | None = None, own_only: bool = False):
        self.lobby = lobby
        self.pending = pending or lobby._pending
        self.own_only = own_only

    async def Connect(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """One worker's stream (see the proto for the status codes)."""
        first = await self.pending.first_message(context, REGISTER_TIMEOUT_S, "register")
        if first is None:
            return
        try:
            w = self.lobby._register(first.register, context.peer() or "", self.own_only)
        except _Refusal as e:
            await context.abort(e.code, str(e))
        refusal: _Refusal | None = None
        why = "its connection closed"
        reader = asyncio.ensure_future(self._read(context, w))
        get: asyncio.Future[Any] | None = None
        try:
            await context.write(lpb.ConnectResponse(
                registered=lpb.Registered(worker_id=w.worker_id, tournament=self.lobby.tournament)))
            while True:
                get = asyncio.ensure_future(w._outbox.get())
                done, _ = await asyncio.wait({get, reader}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    refusal = reader.result()
                    why = "its connection closed" if refusal is None else str(refusal)
                    break
                msg = get.result()
                if msg is None:
                    why = "the lobby closed it"
                    break
                await context.write(msg)
        except (grpc.aio.AioRpcError, RuntimeError) as e:
            why = f"its connection broke ({type(e).__name__})"
        finally:  # a cancelled handler (the peer went away) keeps the default reason
            reader.cancel()
            if get is not None:
                get.cancel()
            self.lobby._leave(w, why)
        if refusal is not None:
            await context.abort(refusal.code, str(refusal))
        if self.lobby._closing:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the arena is shutting down; connect again later")

    async def _read(self, context: grpc.aio.ServicerContext, w: WorkerRef) -> _Refusal | None:
        """Read Ready messages until the stream ends; returns a refusal for a message out of turn."""
        try:
            while True:
                msg = await context.read()
                if msg is grpc.aio.EOF:
                    return None
                if isinstance(msg, Undecodable):
                    return _Refusal(grpc.StatusCode.INVALID_ARGUMENT, msg.detail("a message after Register"))
                if msg.WhichOneof("msg") != "ready":
                    return _Refusal(grpc.StatusCode.INVALID_ARGUMENT,
                                    f"only Ready may follow Register, got {msg.WhichOneof('msg')}")
                self.lobby._ready(w, msg.ready.match_id)
        except _Refusal as e:
            return e
        except asyncio.CancelledError:
            raise
        except Exception:  # a dead peer or a reset stream
            return None
