"""The gRPC referee server (grpc.aio): RefereeService (seats), AdminService (arena), health, reflection.

Embedding it in-process (the arena's "embedded referee")::

    from referee.server import start_server

    async with start_server(port=0, admin_token="s3cret") as server:
        print(server.port)            # the bound port (127.0.0.1 by default)
        ...                           # Admin.CreateMatch etc. over a channel to server.address

or without ``async with``: ``server = RefereeServer(port=0, admin_token=...)``;
``port = await server.start()``; … ``await server.stop(grace_s=5)``. From synchronous code,
:class:`ThreadedReferee` runs the same server on its own event loop thread::

    with ThreadedReferee(admin_token="s3cret") as ref:
        channel = grpc.insecure_channel(ref.address)

Server settings (chosen for small messages and many short-lived bot streams):

- ``grpc.keepalive_time_ms`` 20000 and ``grpc.keepalive_timeout_ms`` / ``grpc.http2.ping_timeout_ms``
  10000: a silent dead peer is detected within about 30 s (a crashed process is seen at once).
- ``grpc.http2.min_recv_ping_interval_without_data_ms`` 5000 and ``grpc.keepalive_permit_without_calls``:
  clients may ping every 5 s or more; ``grpc.http2.max_ping_strikes`` 2.
- ``grpc.max_receive_message_length`` 64 KiB (a Decision is under 100 bytes);
  ``grpc.max_send_message_length`` 16 MiB (GetRecord of a long match).
- ``maximum_concurrent_rpcs`` 2048 (four streams per match plus watchers), ``grpc.max_concurrent_streams``
  64 per connection.

Garbage collection (:func:`tune_gc`, called by ``referee serve`` and ``arena run``): the objects
alive at start are frozen out of the cyclic collector and it runs ~70 times less often, which takes
its pauses out of the per-decision latency tail (benchmarks/referee.py).

Graceful shutdown (:meth:`RefereeServer.stop`): health turns NOT_SERVING, new matches are refused
(UNAVAILABLE), running matches get ``grace_s`` to finish, then are aborted (every seat gets MatchEnd
with ``TERMINATION_ABORTED``), then the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import secrets
import socket
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee import wire
from referee.dealing import check_seed, fresh_seed
from referee.match import CLOSE, Connection, Match, SeatUnavailable, now
from referee.peers import BotNetwork
from referee.rules.errors import quote
from referee.streams import (
    CappedHealth,
    M,
    PeerStreams,
    Pending,
    UnaryRequests,
    Undecodable,
    add_service,
    add_stream_method,
    decoded,
)

log = structlog.get_logger("referee.server")

#: Environment variable holding the admin token for ``referee serve``.
ADMIN_TOKEN_ENV = "ALLFOURS_ADMIN_TOKEN"
#: Seconds a new stream has to send its Hello.
HELLO_TIMEOUT_S = 10.0
#: Most Play streams of one TCP peer host (or of all unix-socket peers) waiting for their Hello at once
#: (more are refused at once:
#: :class:`referee.streams.Pending`): a bot's container holding 4000 silent streams (over 80
#: connections) made the referee refuse every other seat's stream ("Concurrent RPC limit exceeded!").
PENDING_HELLOS_PER_PEER = 128
#: Most Play streams waiting for their Hello of all peers together but the bot containers, on a referee
#: that serves the container sandbox's network (``RefereeServer(bots=...)``): its server then counts no RPC
#: slots over every address (each container's streams count against its own caps alone, and the arena
#: bounds the containers), so the other peers' silent streams are bounded here instead.
PENDING_HELLOS_ALL = 1024
#: Seconds a stream may stay blocked writing to a peer that does not read before it is dropped.
WRITE_TIMEOUT_S = 10.0

#: Most TCP connections the remote listener (:meth:`RefereeServer.listen_remote`: remote workers' port, reached
#: by anyone who reaches it, with no ticket) holds open at once, and the seconds one with no call under way is
#: kept: gRPC kept every one with no bound and no timer, so one client opening connections took every file
#: descriptor of the arena's process (its accepts, its files, its other servers). Past the bound a new connection
#: is closed at once; an idle one goes after REMOTE_CONNECTION_IDLE_S (a seat's Play stream is a call under way).
REMOTE_MAX_CONNECTIONS = 512
REMOTE_CONNECTION_IDLE_S = 60

SERVER_OPTIONS: list[tuple[str, int]] = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.ping_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 5_000),
    ("grpc.http2.max_ping_strikes", 2),
    ("grpc.max_receive_message_length", 64 * 1024),
    ("grpc.max_send_message_length", 16 * 1024 * 1024),
    ("grpc.max_concurrent_streams", 64),
    ("grpc.so_reuseport", 0),
]
MAXIMUM_CONCURRENT_RPCS = 2048
#: The RPCs at once on one sandboxed bot's own socket (:meth:`RefereeServer.listen_unix`): its seats'
#: streams in every game it plays at once (at most 512: an arena plays 256 games at once, each with two
#: seats of a side), and its silent streams (at most ``PENDING_HELLOS_PER_PEER``), with room to spare.
BOT_SOCKET_RPCS = 1024

SERVICE_NAMES = (
    pb.DESCRIPTOR.services_by_name["RefereeService"].full_name,
    pb.DESCRIPTOR.services_by_name["AdminService"].full_name,
)


#: Seconds shutdown waits for seat streams to send their last messages (MatchEnd) after the matches end.
STREAM_DRAIN_S = 3.0

#: Young-generation threshold of the cyclic garbage collector while serving (CPython's default: 700).
GC_GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Set up CPython's cyclic garbage collector for a long-running serving process. Process-wide:
    call it once from a process entry point (``referee serve``, ``arena run``), not from a library.

    Without it a collection of the young generation runs every 700 net allocations of container
    objects — about one every 150 decisions — and each pause (0.1-1 ms, up to ~20 ms for a full
    collection) lands on a decision's latency: they made up a good part of the slowest 1%.

    - ``gc.collect()`` then ``gc.freeze()``: what is alive now (modules, generated stubs, caches:
      ~50,000 objects) goes to the permanent generation, which collections never scan again;
    - the young threshold goes to :data:`GC_GEN0_THRESHOLD`, so collections come ~70 times less
      often. Each takes about as long as before: it scans only the young objects still alive, and
      reference counting frees nearly all of the referee's objects (states, events, messages) before
      then. Cyclic garbage may wait longer to be freed; the referee makes little of it.

    Reference-counted memory is unaffected. Measured with benchmarks/referee.py (referee with and
    without it, interleaved): the p99 latency ratio came down by 0.02-0.14.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def new_ticket() -> str:
    """A fresh join ticket: ``"t"`` + 48 hex digits (192 random bits from ``secrets``).

    Only letters and digits, and never a leading ``-`` (``token_urlsafe`` can start with one, which
    command-line parsers in every language take for an option): safe in argv, env vars and URLs.
    """
    return "t" + secrets.token_hex(24)


def prepare_record_dir(path: Path) -> Path:
    """Create the record directory ``path`` (and its parents) if missing, with permissions 0700 (the
    records of running matches hold every deck order), and check a file can be written in it;
    returns ``path``. A directory that exists keeps its permissions (it may be shared, like ``/tmp``),
    with a warning when other users may list it; the record files are 0600 either way.

    :raises ValueError: ``"<path>: <why>"`` if it is not a directory, cannot be created or is not writable.
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path}: not a directory")
    try:
        if path.is_dir():
            if path.stat().st_mode & 0o077:
                log.warning("record_dir_not_private", path=str(path), mode=oct(path.stat().st_mode & 0o777),
                            detail="other users may list the match ids; the record files are 0600")
        else:
            path.mkdir(mode=0o700, parents=True)
    except OSError as e:
        raise ValueError(f"{path}: cannot create the directory: {e.strerror or e}") from None
    try:
        tempfile.TemporaryFile(dir=path).close()
    except OSError as e:
        raise ValueError(f"{path}: cannot write in the directory: {e.strerror or e}") from None
    return path


#: Finished matches kept in memory (for GetRecord, WatchMatch, ListMatches): the newest this many ...
KEEP_FINISHED = 1000
#: ... and for at most this many seconds after they end. Their record files stay on disk.
KEEP_FINISHED_S = 600.0


class Registry:
    """Matches by id and tickets by value (each ticket -> one seat of one match).

    A finished match leaves memory (with its tickets) ``keep_finished_s`` seconds after it ended, or
    sooner when more than ``keep_finished`` finished matches are held (oldest first), so a referee
    that runs for months holds a bounded number of matches; records written to ``--record-dir``
    stay there.
    """

    def __init__(self, keep_finished: int = KEEP_FINISHED, keep_finished_s: float = KEEP_FINISHED_S) -> None:
        self.matches: dict[str, Match] = {}
        self.tickets: dict[str, tuple[Match, int]] = {}
        #: The seat streams (their handler tasks) that hold a seat: shutdown waits for them to send
        #: what is queued (MatchEnd) before the transport closes.
        self.streams: set[asyncio.Task[Any]] = set()
        self.keep_finished = keep_finished
        self.keep_finished_s = keep_finished_s
        #: The finished matches still held: id -> when it ended (``loop.time()``), oldest first.
        self._finished: dict[str, float] = {}
        #: The one timer that forgets the oldest finished match when its time is up.
        self._timer: asyncio.TimerHandle | None = None

    def add(self, match: Match) -> None:
        """Hold a new match and its tickets."""
        self.matches[match.id] = match
        for seat, s in enumerate(match.seats):
            self.tickets[s.ticket] = (match, seat)

    def ended(self, match: Match) -> None:
        """``match`` has ended (its ``on_end``): forget the oldest finished matches beyond the
        retention count now, and each one once its retention time is up."""
        if match.id not in self.matches:
            return
        self._finished[match.id] = asyncio.get_running_loop().time()
        while len(self._finished) > self.keep_finished:
            self.forget(next(iter(self._finished)))
        if self._timer is None:  # else it is due for an older match: it re-arms itself
            self._expire()

    def _expire(self) -> None:
        """Forget the finished matches whose retention time is up; set the timer for the next one."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        while self._finished:
            match_id, ended_at = next(iter(self._finished.items()))
            if now - ended_at < self.keep_finished_s:
                self._timer = loop.call_later(ended_at + self.keep_finished_s - now, self._expire)
                break
            self.forget(match_id)

    def forget(self, match_id: str) -> None:
        """Drop a finished match and its tickets from memory (a no-op if already gone)."""
        self._finished.pop(match_id, None)
        match = self.matches.pop(match_id, None)
        if match is not None:
            for s in match.seats:
                self.tickets.pop(s.ticket, None)


class _WriteWatchdog:
    """Ends a stream whose peer stopped reading: once HTTP/2 flow control is full, our writes block.

    The writer sets :attr:`since` (``loop.time()``) before each write and ``None`` after; every
    ``limit_s / 2`` seconds a check cancels the writing task if one write has been blocked for
    ``limit_s`` or more, and sets :attr:`stalled` (the writer then calls :meth:`uncancel`). One timer
    per stream every few seconds, instead of a timeout around each write (a timer per message, on
    the decision's hot path: benchmarks/referee.py). Create it inside the writing task.
    """

    def __init__(self, limit_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._limit = limit_s
        self.since: float | None = None
        self.stalled = False
        #: Why the stream was ended (for the log).
        self.why = ""
        self._handle = self._loop.call_later(limit_s / 2, self._check)

    def _check(self) -> None:
        if self.since is not None and self._loop.time() - self.since >= self._limit:
            self.stall_now(f"a write was blocked for {self._limit:g} s")
            return
        self._handle = self._loop.call_later(self._limit / 2, self._check)

    def stall_now(self, why: str) -> None:
        """End the stream now, as a blocked write would (``why``: for the log)."""
        if not self.stalled:
            self.stalled, self.why = True, why
            self._task.cancel()

    def uncancel(self) -> None:
        """Undo the watchdog's cancellation of the task (after catching its CancelledError)."""
        self._task.uncancel()

    def close(self) -> None:
        """Stop checking."""
        self._handle.cancel()


def add_referee_service(servicer: RefereeServicer, server: grpc.aio.Server) -> None:
    """Register RefereeService's ``Play`` with :func:`referee.streams.add_stream_method`: bytes that are
    not a PlayRequest reach the handler as :class:`~referee.streams.Undecodable`, so the referee answers
    with a documented protocol error (docs/protocol.md) instead of gRPC's UNKNOWN."""
    add_stream_method(server, SERVICE_NAMES[0], "Play", servicer.Play, pb.PlayRequest, pb.PlayResponse)


class RefereeServicer(pb_grpc.RefereeServiceServicer):
    """The seat stream: Hello -> Welcome, then decisions until MatchEnd (docs/protocol.md)."""

    def __init__(self, registry: Registry, pending: Pending | None = None) -> None:
        self.registry = registry
        self.pending = pending or Pending(PENDING_HELLOS_PER_PEER)

    async def Play(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """One seat's stream. Status codes: see the proto (UNAUTHENTICATED, PERMISSION_DENIED, …)."""
        first = await self.pending.first_message(context, HELLO_TIMEOUT_S, "hello")
        if first is None:
            return
        hello = first.hello
        if hello.protocol_version != wire.PROTOCOL_VERSION:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"protocol_version {quote(hello.protocol_version)} is not supported "
                                f"(expected {wire.PROTOCOL_VERSION!r})")
        if not hello.ticket:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "Hello.ticket is empty")
        entry = self.registry.tickets.get(hello.ticket)
        if entry is None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown ticket")
        assert entry is not None
        match, seat = entry
        conn = Connection(peer=context.peer())
        try:
            match.attach(seat, conn, hello)
        except SeatUnavailable as e:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        slog = log.bind(match_id=match.id, seat=seat)
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        if me is not None:
            self.registry.streams.add(me)
        reader = loop.create_task(self._read(context, match, seat, conn, slog))
        dog = _WriteWatchdog(WRITE_TIMEOUT_S)
        conn.out.on_overflow = lambda: dog.stall_now(f"{conn.out.limit} messages queued: the peer does not read")
        try:
            while True:
                msg = await conn.out.get()
                if msg is CLOSE:
                    break
                dog.since = loop.time()
                await context.write(msg)
                dog.since = None
        except asyncio.CancelledError:
            if not dog.stalled:
                raise
            dog.uncancel()
            slog.info("stream_write_ended", error=dog.why, pings_dropped=conn.pings_dropped)
        except (grpc.aio.AioRpcError, RuntimeError) as e:
            slog.info("stream_write_ended", error=repr(e))
        finally:
            dog.close()
            reader.cancel()
            match.detach(seat, conn)
            if me is not None:
                self.registry.streams.discard(me)
        if conn.superseded:
            await context.abort(grpc.StatusCode.ABORTED, f"a newer stream took seat {seat} of match {match.id} "
                                                         "with the same ticket")

    @staticmethod
    async def _read(context: grpc.aio.ServicerContext, match: Match, seat: int, conn: Connection,
                    slog: structlog.stdlib.BoundLogger) -> None:
        """Feed the match from the stream; at end of stream (or a dead peer) close the writer."""
        try:
            while True:
                msg = await context.read()
                if msg is grpc.aio.EOF:
                    break
                if isinstance(msg, Undecodable):
                    match.malformed(seat, msg.detail(f"seat {seat} sent a message that"))
                    continue
                match.submit(seat, msg, now())
                # Let the writers woken by this message (the next DecisionRequest) hand their
                # messages to gRPC before this task asks for the next read: the answer goes out
                # first (benchmarks/referee.py: about 0.05 off the p99 ratio, interleaved A/B).
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a dead peer or a reset stream
            slog.info("stream_read_ended", error=repr(e))
        match.detach(seat, conn)
        conn.out.put_nowait(CLOSE)


def _bears_admin_token(context: grpc.aio.ServicerContext, token: str) -> bool:
    """Does the call's metadata hold ``authorization: Bearer <token>`` (compared in constant time)?"""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return hmac.compare_digest(value[7:].encode(), token.encode())
    return False


class AdminServicer(pb_grpc.AdminServiceServicer):
    """The arena's control service; every call needs ``authorization: Bearer <admin token>``."""

    def __init__(self, registry: Registry, admin_token: str, record_dir: Path | None,
                 accepting: threading.Event) -> None:
        self.registry = registry
        self.token = admin_token
        self.record_dir = record_dir
        self.accepting = accepting

    async def _auth(self, request: M | Undecodable, context: grpc.aio.ServicerContext) -> M:
        """``request`` once the caller's token is checked (UNAUTHENTICATED first, whatever it sent: a
        caller without the token learns nothing), or INVALID_ARGUMENT in one line for bytes that are not
        the method's request (registered by :func:`referee.streams.add_service`)."""
        if not _bears_admin_token(context, self.token):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED,
                                "admin calls need metadata 'authorization: Bearer <admin token>'")
        return await decoded(request, context)

    async def _match(self, match_id: str, context: grpc.aio.ServicerContext) -> Match:
        m = self.registry.matches.get(match_id)
        if m is None:
            r = self.registry
            await context.abort(grpc.StatusCode.NOT_FOUND,
                                f"no match {quote(match_id, 40)} (a finished match is kept {r.keep_finished_s:g} s, "
                                f"the last {r.keep_finished}; then only its record file, if any)")
        assert m is not None
        return m

    async def CreateMatch(self, request: pb.CreateMatchRequest | Undecodable,
                          context: grpc.aio.ServicerContext) -> pb.CreateMatchResponse:
        """Create a match and start it (it waits ``join_ms`` for its seats).

        Errors: UNAUTHENTICATED (token), UNAVAILABLE (shutting down), INVALID_ARGUMENT (bad rules, seat
        names, seed or time control), INTERNAL (the record file cannot be created in the record directory).
        """
        req: pb.CreateMatchRequest = await self._auth(request, context)
        if not self.accepting.is_set():
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the referee is shutting down")
        try:
            rules = wire.rules_from_pb(req.rules)
            tc = wire.time_control_from_pb(req.time_control)
            seed = check_seed(req.seed) if req.seed else fresh_seed()
            first_dealer = req.first_dealer if req.HasField("first_dealer") else None
            names = list(req.seat_names)
            if any(not n.strip() for n in names):
                raise ValueError("seat_names must not be empty strings")
            match_id = uuid.uuid4().hex[:16]
            tickets = [new_ticket() for _ in names]
            path = self.record_dir / f"{match_id}.jsonl" if self.record_dir is not None else None
            match = Match(match_id, rules, names, req.games or 1, seed, first_dealer, tc, tickets,
                          record_path=path, on_end=self.registry.ended, blind=req.blind)
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except OSError as e:
            log.error("record_file_failed", path=str(path), error=repr(e))
            await context.abort(grpc.StatusCode.INTERNAL, f"the referee cannot write the match record {path}: "
                                                          f"{e.strerror or e}")
        self.registry.add(match)
        match.start()
        log.info("match_created", match_id=match_id, seats=names, games=match.games,
                 seed_commitment=match.commitment)
        return pb.CreateMatchResponse(match_id=match_id, seed_commitment=match.commitment, tickets=tickets)

    async def WatchMatch(self, request: pb.WatchMatchRequest | Undecodable,
                         context: grpc.aio.ServicerContext) -> AsyncIterator[pb.WatchMatchResponse]:
        """Every public event from the start, then the result (only the result with ``result_only``)."""
        req: pb.WatchMatchRequest = await self._auth(request, context)
        match = await self._match(req.match_id, context)
        if req.result_only:
            yield pb.WatchMatchResponse(result=await match.wait())
            return
        q = match.watch()
        try:
            while True:
                item = await q.get()
                if item is None:
                    return
                yield item
        finally:
            match.watchers.discard(q)

    async def GetRecord(self, request: pb.GetRecordRequest | Undecodable,
                        context: grpc.aio.ServicerContext) -> pb.GetRecordResponse:
        """The whole record of a match that is over (``complete`` is then always true).

        Errors: UNAUTHENTICATED (token), NOT_FOUND (unknown id), FAILED_PRECONDITION while the match
        is not over: the record holds every deck order and rejected actions, which would show hidden
        cards of a running match.
        """
        req: pb.GetRecordRequest = await self._auth(request, context)
        match = await self._match(req.match_id, context)
        if not match.finished:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"match {match.id} is not over ({pb.MatchStatus.Name(match.status)}): its record "
                                f"holds hidden cards; GetRecord it once WatchMatch has given the result")
        return pb.GetRecordResponse(lines=match.record.lines, complete=True)

    async def ListMatches(self, request: pb.ListMatchesRequest | Undecodable,
                          context: grpc.aio.ServicerContext) -> pb.ListMatchesResponse:
        """The matches held in memory, oldest first: every running one and the finished ones still
        kept (see :class:`Registry`)."""
        await self._auth(request, context)
        return pb.ListMatchesResponse(matches=[
            pb.MatchSummary(match_id=m.id, status=m.status, seat_names=m.seat_names,
                            seed_commitment=m.commitment) for m in self.registry.matches.values()])


def host_port(host: str, port: int | str) -> str:
    """The address ``host:port`` to bind or dial, an IPv6 ``host`` in brackets (given with or without)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def check_bindable(host: str, port: int) -> None:
    """Whether ``host:port`` (port 0: any) can be bound now, tried with a plain socket as gRPC binds (address
    reuse on). gRPC's own failure logs a C-core line and says only "Failed to bind …", without the reason.

    :raises RuntimeError: ``cannot bind HOST:PORT: REASON`` (e.g. ``Address already in use``).
    """
    try:
        family = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host.strip("[]"), port))
    except OSError as e:
        raise RuntimeError(f"cannot bind {host}:{port}: {e.strerror or e}") from None


class RefereeServer:
    """The referee as an object: ``port = await start()``, ``await stop()``; or ``async with``.

    :param host: interface to bind (default ``127.0.0.1``; ``0.0.0.0`` for all).
    :param port: TCP port, 0 for any free one (read :attr:`port` after start).
    :param admin_token: the AdminService token; ``None`` = a random one (read :attr:`admin_token`).
    :param record_dir: write each match's record to ``<record_dir>/<match_id>.jsonl``, or ``None``.
    :param tls: ``(certificate chain PEM bytes, private key PEM bytes)`` for TLS, or ``None``.
    :param keep_finished: finished matches held in memory at most (newest first), see :class:`Registry`.
    :param keep_finished_s: seconds a finished match is held in memory after it ended.
    :param unix_socket: also listen (plaintext) on this ``unix:PATH`` socket, or ``None`` (its peers count
        as one host: :class:`referee.streams.Pending`; the arena gives each sandboxed bot a socket and a
        server of its own instead, :meth:`listen_unix`).
    :param bots: the container sandbox's network when ``host`` is its gateway (the arena's embedded
        referee with container bots), else ``None``. Each container's streams then count against the caps
        of its own address alone, never a count every address shares (:class:`referee.peers.BotNetwork`):
        the health ``Watch`` streams', the reflection streams', the unary calls' ``in_all``, and the
        server's RPC slots (``maximum_concurrent_rpcs``: none on the main server then; the other peers'
        silent Play streams are capped in all instead, :data:`PENDING_HELLOS_ALL`).
    :raises RuntimeError: from :meth:`start` if the port (or the socket) cannot be bound.
    :raises ValueError: from :meth:`start` if ``record_dir`` is not a directory that can be created and
        written (see :func:`prepare_record_dir`).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, admin_token: str | None = None,
                 record_dir: Path | str | None = None, tls: tuple[bytes, bytes] | None = None,
                 keep_finished: int = KEEP_FINISHED, keep_finished_s: float = KEEP_FINISHED_S,
                 unix_socket: str | None = None, bots: BotNetwork | None = None) -> None:
        self.host = host
        self.bots = bots
        self.unix_socket = unix_socket
        self.port = port
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self.record_dir = Path(record_dir) if record_dir is not None else None
        self.tls = tls
        self.registry = Registry(keep_finished, keep_finished_s)
        self._server: grpc.aio.Server | None = None
        #: One server a sandboxed bot (:meth:`listen_unix`), by its socket's address.
        self._bot_servers: dict[str, grpc.aio.Server] = {}
        #: The servers remote workers dial (:meth:`listen_remote`).
        self._remote_servers: list[grpc.aio.Server] = []
        self._health = CappedHealth(apart=bots)  # Watch streams capped per peer address (referee.streams)
        self._accepting = threading.Event()

    @property
    def address(self) -> str:
        """``host:port`` to connect to."""
        return f"{self.host}:{self.port}"

    async def start(self) -> int:
        """Bind, start serving and return the port.

        :raises ValueError: for a record directory that cannot be created or written.
        :raises RuntimeError: if the port cannot be bound.
        """
        if self.record_dir is not None:
            prepare_record_dir(self.record_dir)
        bots = self.bots
        # with bots, every call is capped per address (the containers' alone) and the rest in all
        server = grpc.aio.server(options=SERVER_OPTIONS,
                                 maximum_concurrent_rpcs=MAXIMUM_CONCURRENT_RPCS if bots is None else None,
                                 interceptors=[UnaryRequests(apart=bots)])
        pending = Pending(PENDING_HELLOS_PER_PEER, None if bots is None else PENDING_HELLOS_ALL, bots)
        add_referee_service(RefereeServicer(self.registry, pending), server)
        add_service(server, pb.DESCRIPTOR.services_by_name["AdminService"],
                    AdminServicer(self.registry, self.admin_token, self.record_dir, self._accepting), pb)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection_pb2_grpc.add_ServerReflectionServicer_to_server(CappedReflection(
            (*SERVICE_NAMES, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
             reflection.SERVICE_NAME), apart=bots), server)
        addr = f"{self.host}:{self.port}"
        check_bindable(self.host, self.port)
        if self.tls is not None:
            creds = grpc.ssl_server_credentials([(self.tls[1], self.tls[0])])
            bound: int = server.add_secure_port(addr, creds)
        else:
            bound = server.add_insecure_port(addr)
        if not bound:
            how = " with the TLS certificate and key (a matching PEM pair?)" if self.tls is not None else ""
            raise RuntimeError(f"could not bind {addr}{how}")
        if self.unix_socket is not None and not server.add_insecure_port(self.unix_socket):
            raise RuntimeError(f"could not bind {self.unix_socket}")
        self.port = bound
        await server.start()
        self._server = server
        self._accepting.set()
        for name in ("", *SERVICE_NAMES):
            await _maybe_await(self._health.set(name, health_pb2.HealthCheckResponse.SERVING))
        log.info("referee_started", address=self.address, tls=self.tls is not None)
        return bound

    async def listen_unix(self, address: str) -> None:
        """Serve the seat streams (``Play``) on the unix socket ``address`` (``unix:PATH``) with a server of
        its own: one sandboxed bot's socket (arena/hosting/jail.py). Its silent streams and its RPC slots
        (:data:`BOT_SOCKET_RPCS`) are its own, so a bot that floods its socket with streams that never say
        Hello only fails its own games, never another bot's or the admin calls (a unix peer has no address
        to count it by on a shared socket). No AdminService there, nor health: the referee's one health
        service counts every unix peer as one address, so a bot holding its 4 ``Watch`` streams made the
        next one on any other bot's socket refused, a channel between bots told only their own sockets.

        :raises RuntimeError: if the socket cannot be bound, or the referee is not running.
        """
        if self._server is None:
            raise RuntimeError("the referee is not running")
        if address in self._bot_servers:
            return
        server = grpc.aio.server(options=SERVER_OPTIONS, maximum_concurrent_rpcs=BOT_SOCKET_RPCS,
                                 interceptors=[UnaryRequests()])
        add_referee_service(RefereeServicer(self.registry, Pending(PENDING_HELLOS_PER_PEER)), server)
        if not server.add_insecure_port(address):
            raise RuntimeError(f"could not bind {address}")
        await server.start()
        self._bot_servers[address] = server

    async def stop_unix(self, address: str) -> None:
        """Stop serving the unix socket ``address`` (:meth:`listen_unix`), whose one bot process is gone."""
        server = self._bot_servers.pop(address, None)
        if server is not None:
            await server.stop(0)

    async def listen_remote(self, host: str, port: int = 0, tls: tuple[bytes, bytes] | None = None) -> int:
        """Serve the seat streams (``Play``) and health on ``host``:``port`` (0: any free port) with a server
        of its own, over TLS with ``tls`` (certificate chain PEM, key PEM), else plaintext; returns the bound
        port. The arena's embedded referee listens on the container sandbox's gateway, which only this
        machine reaches; remote workers on other machines dial this one instead. No AdminService there
        (the arena's admin calls stay on the main address); silent streams count per peer host as on the
        main server (:data:`PENDING_HELLOS_PER_PEER`). Stopped with the referee.

        :raises RuntimeError: ``cannot bind HOST:PORT: REASON``, a TLS pair that does not load, or the
            referee is not running.
        """
        if self._server is None:
            raise RuntimeError("the referee is not running")
        check_bindable(host, port)
        options = [*SERVER_OPTIONS, ("grpc.max_allowed_incoming_connections", REMOTE_MAX_CONNECTIONS),
                   ("grpc.max_connection_idle_ms", REMOTE_CONNECTION_IDLE_S * 1000)]
        server = grpc.aio.server(options=options, maximum_concurrent_rpcs=MAXIMUM_CONCURRENT_RPCS,
                                 interceptors=[UnaryRequests()])
        add_referee_service(RefereeServicer(self.registry, Pending(PENDING_HELLOS_PER_PEER)), server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        addr = host_port(host, port)
        if tls is not None:
            bound: int = server.add_secure_port(addr, grpc.ssl_server_credentials([(tls[1], tls[0])]))
        else:
            bound = server.add_insecure_port(addr)
        if not bound:
            how = " with the TLS certificate and key (a matching PEM pair?)" if tls is not None else ""
            raise RuntimeError(f"could not bind {addr}{how}")
        await server.start()
        self._remote_servers.append(server)
        log.info("referee_remote_listener", host=host, port=bound, tls=tls is not None)
        return bound

    async def stop(self, grace_s: float = 5.0) -> None:
        """Graceful shutdown: NOT_SERVING, refuse new matches, let running matches finish for
        ``grace_s`` seconds, abort the rest (TERMINATION_ABORTED), wait up to :data:`STREAM_DRAIN_S`
        seconds for the seat streams to deliver their MatchEnd and end, then stop the server."""
        if self._server is None:
            return
        self._accepting.clear()
        for name in ("", *SERVICE_NAMES):
            await _maybe_await(self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING))
        live = [m for m in self.registry.matches.values() if not m.finished]
        if live:
            _, pending = await asyncio.wait([asyncio.ensure_future(m.wait()) for m in live], timeout=grace_s)
            for m in live:
                if not m.finished:
                    m.abort("the referee is shutting down")
            for p in pending:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(p, 5)
        # Let the seat streams send what is queued (each ended match's MatchEnd) and end, before the
        # transport goes: a stream still writing when it closes would lose its MatchEnd.
        streams = [t for t in self.registry.streams if not t.done()]
        if streams:
            await asyncio.wait(streams, timeout=STREAM_DRAIN_S)
        await asyncio.gather(self._server.stop(1.0), *(b.stop(1.0) for b in self._bot_servers.values()),
                             *(r.stop(1.0) for r in self._remote_servers))
        self._server = None
        self._bot_servers.clear()
        self._remote_servers.clear()
        log.info("referee_stopped")

    async def wait_for_termination(self) -> None:
        """Block until the server stops."""
        if self._server is not None:
            await self._server.wait_for_termination()

    async def __aenter__(self) -> RefereeServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def _maybe_await(x: Any) -> None:
    if asyncio.iscoroutine(x):
        await x


def start_server(host: str = "127.0.0.1", port: int = 0, admin_token: str | None = None,
                 record_dir: Path | str | None = None, tls: tuple[bytes, bytes] | None = None,
                 **kwargs: Any) -> RefereeServer:
    """A :class:`RefereeServer` to use as ``async with start_server(port=0, admin_token=t) as s:``
    (``kwargs``: its other parameters)."""
    return RefereeServer(host=host, port=port, admin_token=admin_token, record_dir=record_dir, tls=tls, **kwargs)


#: Most server reflection streams of one peer address, and of all peers together (:class:`CappedReflection`).
REFLECTIONS_PER_PEER = 4
REFLECTIONS_ALL = 64


class CappedReflection(reflection.aio.ReflectionServicer):  # type: ignore[misc]  # grpc_reflection ships no types
    """Server reflection (``grpcurl``), its streams capped (:class:`referee.streams.PeerStreams`): a stream
    that sends nothing holds one of the server's slots for as long as its client likes, and 2600 of them
    over 80 connections made the referee refuse the arena's admin calls and every seat."""

    def __init__(self, service_names: tuple[str, ...], apart: BotNetwork | None = None) -> None:
        super().__init__(service_names)
        self.streams = PeerStreams(REFLECTIONS_PER_PEER, REFLECTIONS_ALL, apart)

    async def ServerReflectionInfo(self, request_iterator: Any,
                                   context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async with self.streams.held_open(context, "reflection"):
            async for answer in super().ServerReflectionInfo(request_iterator, context):
                yield answer


class ThreadedReferee:
    """The referee on its own event-loop thread, for synchronous callers (``with`` or start/stop).

    ``start()`` returns the port; ``stop()`` shuts down gracefully. Same parameters as
    :class:`RefereeServer`, plus ``grace_s`` for stop.
    """

    def __init__(self, grace_s: float = 5.0, **kwargs: Any) -> None:
        self.server = RefereeServer(**kwargs)
        self.grace_s = grace_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="referee", daemon=True)

    @property
    def port(self) -> int:
        """The bound port."""
        return self.server.port

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the referee serves on (running between start and stop)."""
        return self._loop

    @property
    def address(self) -> str:
        """``host:port``."""
        return self.server.address

    @property
    def admin_token(self) -> str:
        """The admin token."""
        return self.server.admin_token

    def start(self) -> int:
        """Start the loop thread and the server; return the port."""
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)

    def listen_unix(self, address: str) -> None:
        """:meth:`RefereeServer.listen_unix` on the referee's loop (from any thread).

        :raises RuntimeError: as that method.
        """
        asyncio.run_coroutine_threadsafe(self.server.listen_unix(address), self._loop).result(30)

    def stop_unix(self, address: str) -> None:
        """:meth:`RefereeServer.stop_unix` on the referee's loop (from any thread; nothing once it stopped)."""
        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self.server.stop_unix(address), self._loop).result(30)

    def listen_remote(self, host: str, port: int = 0, tls: tuple[bytes, bytes] | None = None) -> int:
        """:meth:`RefereeServer.listen_remote` on the referee's loop (from any thread); returns the port.

        :raises RuntimeError: as that method.
        """
        return asyncio.run_coroutine_threadsafe(self.server.listen_remote(host, port, tls), self._loop).result(30)

    def stop(self) -> None:
        """Stop the server gracefully and the loop thread."""
        asyncio.run_coroutine_threadsafe(self.server.stop(self.grace_s), self._loop).result(self.grace_s + 30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> ThreadedReferee:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
