"""The referees a tournament plays on: reached and checked once at start-up (one authenticated admin
call each, :func:`connect_referees`), found through DNS (``dns:NAME:PORT``, :func:`resolve_referees`)
and watched while a tournament plays (:class:`DnsWatch`: a referee gone from DNS is retired, a new
one joins), or one embedded in this process; each game goes to the live referee with the fewest
games in flight (:class:`RefereePool`), and a referee that failed a game and no longer answers its
health check is retired.

A referee that cannot be used at all raises :class:`RefereeError` (the run stops; the games stored so
far are kept); one that fails mid-game raises :class:`RefereeFailure` (that attempt is discarded and
the game is played again from its seed on another referee).
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.peers import BotNetwork

#: Seconds to keep trying to reach a referee at start-up before giving up.
CONNECT_TIMEOUT_S = 3.0
#: Seconds a referee that failed a game has to answer its health check with SERVING (else it is retired).
PROBE_TIMEOUT_S = 2.0
#: Options of the arena's channels to external referees. A connection attempt to an address that has
#: vanished (a killed Swarm task: its packets are dropped, nothing answers) gives up after 2 s, not
#: gRPC's default 20 s (``grpc.min_reconnect_backoff_ms`` is also the least connect timeout), and
#: attempts are at most 2 s apart; an open connection is pinged every 5 s (the referee allows that:
#: referee/server.py) and closed when a ping is unanswered for 3 s (a node that went away mid-game).
REFEREE_CHANNEL_OPTIONS = (
    ("grpc.min_reconnect_backoff_ms", 2000),
    ("grpc.initial_reconnect_backoff_ms", 500),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 5000),
    ("grpc.keepalive_timeout_ms", 3000),
)
#: Seconds between two lookups of a referee DNS name while a tournament plays (:class:`DnsWatch`).
DNS_WATCH_S = 1.0


class RefereeError(RuntimeError):
    """A referee cannot be used at all; the run stops (the games stored so far are kept).

    ``str(e)`` is one line naming the referee and the gRPC status, e.g. ``referee 127.0.0.1:50051
    refused the admin token: UNAUTHENTICATED: …``. ``exit_status`` is 2 when the referee refused the
    arena's request (wrong admin token, a config it rejects: fix the arguments) and 1 otherwise
    (unreachable, or every referee failed: rerun later to resume).
    """

    def __init__(self, message: str, exit_status: int = 1):
        super().__init__(message)
        self.exit_status = exit_status


class RefereeFailure(RuntimeError):
    """One game could not be played to a result on one referee: an infrastructure failure, not the bots'.

    The referee became unreachable, went away mid-game, aborted the match (its shutdown) or could not
    hand over the match record. Such a game is never stored as a result; it is played again from its
    scheduled seed (same deal) on another referee, or on the next run.
    """

    def __init__(self, address: str, message: str):
        super().__init__(f"referee {address}: {message}")
        self.address = address


def rpc_status(e: grpc.RpcError) -> str:
    """``CODE: details`` of a gRPC error, on one line."""
    code = e.code() if hasattr(e, "code") else None
    details = e.details() if hasattr(e, "details") else str(e)
    name = code.name if code is not None else "UNKNOWN"
    return " ".join(f"{name}: {details or ''}".split())


@dataclass
class RefereeConnection:
    """An admin connection to a referee: ``address`` (``host:port``), ``token``, the Admin stub, and
    the embedded :class:`referee.server.ThreadedReferee` if the arena started one; ``tls``: the referee
    serves TLS (its seats' workers are told so in their Assignment)."""

    address: str
    token: str
    channel: grpc.Channel
    admin: pb_grpc.AdminServiceStub
    embedded: Any = None
    #: the ``host:port`` lobby workers are told to dial (an embedded referee's reachable address;
    #: None: ``address``)
    advertise: str | None = None
    tls: bool = False
    #: an embedded referee that serves TLS: its plaintext unix socket (``unix:PATH``), which the arena's
    #: admin channel and the bot processes it starts outside a sandbox dial instead (None: ``address``)
    local: str | None = None
    #: the ``host:port`` remote-mode workers (``mode = "remote"`` bots, a competition's remote entries) are
    #: told, when the embedded referee also listens for them apart (:class:`RemoteListener`; None: as
    #: every other lobby worker)
    remote: str | None = None
    #: that listener serves TLS
    remote_tls: bool = False
    _closed: bool = field(default=False, repr=False)

    @property
    def metadata(self) -> list[tuple[str, str]]:
        """Call metadata carrying the admin token."""
        return [("authorization", f"Bearer {self.token}")]

    def healthy(self, timeout: float = PROBE_TIMEOUT_S) -> bool:
        """True if the referee answers the gRPC health check with SERVING within ``timeout`` seconds
        (a referee that is shutting down answers NOT_SERVING)."""
        try:
            reply = health_pb2_grpc.HealthStub(self.channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout
            )
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def close(self) -> None:
        """Close the channel and stop the embedded referee, if any (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.channel.close()
        if self.embedded is not None:
            self.embedded.stop()
        if self.local is not None:
            shutil.rmtree(Path(self.local.removeprefix("unix:")).parent, ignore_errors=True)


def _wait_for_admin_access(conn: RefereeConnection, timeout: float) -> None:
    """Make one cheap authenticated admin call, retrying while the referee is unreachable.

    ``GetRecord`` of a match id that cannot exist: the referee checks the token first, so a good
    token gets NOT_FOUND and a bad one UNAUTHENTICATED, without listing or touching any match.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            conn.admin.GetRecord(
                pb.GetRecordRequest(match_id="arena-auth-check"),
                metadata=conn.metadata,
                timeout=max(0.1, left),
                wait_for_ready=False,
            )
            return
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            if code == grpc.StatusCode.NOT_FOUND:
                return
            if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                raise RefereeError(
                    f"referee {conn.address} refused the admin token: {rpc_status(e)} "
                    "(check --admin-token or the admin token environment variable)",
                    exit_status=2,
                ) from None
            if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) or left <= 0.25:
                raise RefereeError(f"referee {conn.address} is not reachable: {rpc_status(e)}") from None
        time.sleep(0.2)


def referee_channel(address: str, tls_ca: bytes | None = None) -> grpc.Channel:
    """A channel to the external referee at ``address`` with :data:`REFEREE_CHANNEL_OPTIONS`; over TLS
    trusting ``tls_ca`` (PEM) when given."""
    if tls_ca is None:
        return grpc.insecure_channel(address, options=REFEREE_CHANNEL_OPTIONS)
    credentials = grpc.ssl_channel_credentials(root_certificates=tls_ca)
    return grpc.secure_channel(address, credentials, options=REFEREE_CHANNEL_OPTIONS)


def connect_referee(
    address: str | None,
    token: str | None,
    timeout: float = CONNECT_TIMEOUT_S,
    host: str = "127.0.0.1",
    tls_ca: bytes | None = None,
    serve_tls: tuple[bytes, bytes] | None = None,
    port: int = 0,
    bots: BotNetwork | None = None,
) -> RefereeConnection:
    """Connect to the referee at ``address`` with admin ``token``, or start an embedded one; with
    ``tls_ca`` (PEM: the certificate an external referee serves, or its CA) over TLS. An embedded referee
    serves TLS with ``serve_tls`` (certificate chain, key: the lobby's pair, so that remote workers' games
    are as private as their lobby connection), and plaintext on a unix socket of its own for this machine
    (:attr:`RefereeConnection.local`).

    Without ``address`` a :class:`referee.server.ThreadedReferee` is started in this process on
    ``host`` (default ``127.0.0.1``; the sandbox's gateway when container bots play), ``port`` (default 0:
    any free one; a fixed one for a firewall that lets remote workers through to it), with a
    fresh random admin token (sandboxed bots reach it on sockets of their own: ``GrpcGameRunner`` has it
    listen there, arena/hosting/jail.py). Either way one authenticated admin call
    is made before returning, so a wrong token or an unreachable referee fails here, at once.
    ``bots``: the container sandbox's network when ``host`` is its gateway (:class:`referee.peers.BotNetwork`:
    each container's streams count against its own address's caps alone).

    :raises ValueError: if ``address`` is given without ``token``.
    :raises RefereeError: if the embedded referee cannot start, the referee is not reachable within
        ``timeout`` seconds (exit status 1) or refuses the token (exit status 2).
    """
    embedded, local = None, None
    if address is None:
        token = secrets.token_urlsafe(24)
        embedded, local = _start_embedded(host, port, token, serve_tls, bots)
        address = embedded.address
    elif not token:
        raise ValueError("an external referee needs its admin token")
    assert token is not None
    channel = grpc.insecure_channel(local or address) if embedded is not None else referee_channel(address, tls_ca)
    tls = tls_ca is not None if embedded is None else serve_tls is not None
    conn = RefereeConnection(address, token, channel, pb_grpc.AdminServiceStub(channel), embedded, tls=tls,
                             local=local)
    try:
        _wait_for_admin_access(conn, timeout)
    except BaseException:
        conn.close()
        raise
    return conn


def _start_embedded(host: str, port: int, token: str, serve_tls: tuple[bytes, bytes] | None,
                    bots: BotNetwork | None = None) -> tuple[Any, str | None]:
    """A started :class:`referee.server.ThreadedReferee` on ``host``:``port`` with admin ``token`` (``bots``:
    the container sandbox's network, :class:`referee.server.RefereeServer`'s); with
    ``serve_tls`` (chain, key) it serves TLS there and plaintext on a unix socket in a fresh private folder
    (the second value, ``unix:PATH``; None without TLS).

    :raises RefereeError: if it cannot start.
    """
    from referee.server import ThreadedReferee

    local = f"unix:{tempfile.mkdtemp(prefix='allfours-referee-')}/referee.sock" if serve_tls else None
    embedded = ThreadedReferee(grace_s=1.0, host=host, port=port, admin_token=token, tls=serve_tls,
                               unix_socket=local, bots=bots)
    try:
        embedded.start()
    except Exception as e:
        if local is not None:
            shutil.rmtree(Path(local.removeprefix("unix:")).parent, ignore_errors=True)
        raise RefereeError(f"the embedded referee could not start: {e}") from None
    return embedded, local


@dataclass(frozen=True)
class RemoteListener:
    """Where the embedded referee also listens for remote-mode workers (those on other machines), apart
    from its main address: the container sandbox's gateway, which only this machine reaches
    (:meth:`referee.server.RefereeServer.listen_remote`; seats and health only, no AdminService).

    ``host`` to bind (the lobby's), ``port`` (0: any free one), ``advertise`` the host the workers are
    told (None: ``host``), ``tls`` the (certificate chain, key) PEM pair to serve (None: plaintext).
    """

    host: str
    port: int = 0
    advertise: str | None = None
    tls: tuple[bytes, bytes] | None = None

    def open(self, conn: RefereeConnection) -> None:
        """Listen on the embedded referee of ``conn`` and set its :attr:`RefereeConnection.remote`.

        :raises RefereeError: if the address cannot be bound (one line, exit status 1).
        """
        from referee.server import host_port

        try:
            port = conn.embedded.listen_remote(self.host, self.port, self.tls)
        except RuntimeError as e:
            raise RefereeError(f"the embedded referee cannot listen for remote workers: {e}") from None
        host = self.advertise or self.host
        conn.remote = host_port(host, port)
        conn.remote_tls = self.tls is not None


class RefereePool:
    """The referees a tournament's games are spread over; thread-safe.

    :meth:`acquire` hands out the live referee with the fewest games in flight (ties: round robin in
    the given order), avoiding referees a game already failed on. :meth:`retire` takes a referee out
    of the pool for the rest of the run (it failed and no longer answers its health check).
    """

    def __init__(self, conns: Sequence[RefereeConnection]):
        if not conns:
            raise ValueError("a referee pool needs at least one referee")
        self.conns = list(conns)
        self._lock = threading.Lock()
        self._load = [0] * len(self.conns)
        self._retired: dict[int, str] = {}
        self._next = 0

    def _index(self, conn: RefereeConnection) -> int:
        return next(k for k, c in enumerate(self.conns) if c is conn)

    @property
    def alive(self) -> list[RefereeConnection]:
        """The referees not retired, in the given order."""
        with self._lock:
            return [c for k, c in enumerate(self.conns) if k not in self._retired]

    @property
    def retired(self) -> dict[str, str]:
        """Retired referees: address -> why."""
        with self._lock:
            return {self.conns[k].address: why for k, why in self._retired.items()}

    def acquire(self, avoid: Collection[str] = ()) -> RefereeConnection | None:
        """A live referee for one game (count it as loaded until :meth:`release`), or None if none is left.

        Referees whose address is in ``avoid`` are used only when every live referee is in it.
        """
        with self._lock:
            live = [k for k in range(len(self.conns)) if k not in self._retired]
            if not live:
                return None
            fresh = [k for k in live if self.conns[k].address not in avoid] or live
            n = len(self.conns)
            k = min(fresh, key=lambda i: (self._load[i], (i - self._next) % n))
            self._next = (k + 1) % n
            self._load[k] += 1
            return self.conns[k]

    def release(self, conn: RefereeConnection) -> None:
        """The game :meth:`acquire` was called for is over (whatever the outcome)."""
        with self._lock:
            k = self._index(conn)
            self._load[k] = max(0, self._load[k] - 1)

    def retire(self, conn: RefereeConnection, why: str) -> bool:
        """Use ``conn`` no more in this run; returns False if it was retired already."""
        with self._lock:
            k = self._index(conn)
            if k in self._retired:
                return False
            self._retired[k] = why
            return True

    def add(self, conn: RefereeConnection) -> None:
        """Use ``conn`` too from now on (a referee that appeared in DNS: :class:`DnsWatch`)."""
        with self._lock:
            self.conns.append(conn)
            self._load.append(0)

    def embedded_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop of the referee this process started, if any (the lobby serves on it too)."""
        return next((c.embedded.loop for c in self.conns if c.embedded is not None), None)

    def close(self) -> None:
        """Close every connection (and stop an embedded referee)."""
        for c in self.conns:
            c.close()


def connect_referees(
    addresses: Sequence[str],
    token: str | None,
    timeout: float = CONNECT_TIMEOUT_S,
    host: str = "127.0.0.1",
    advertise: str | None = None,
    tls_ca: bytes | None = None,
    serve_tls: tuple[bytes, bytes] | None = None,
    port: int = 0,
    remote: RemoteListener | None = None,
    bots: BotNetwork | None = None,
) -> RefereePool:
    """A :class:`RefereePool` of the referees at ``addresses`` (all checked at once, see
    :func:`connect_referee`; over TLS with ``tls_ca``), or of one embedded referee on ``host`` when
    ``addresses`` is empty, on ``port`` and serving TLS with ``serve_tls`` (see :func:`connect_referee`); lobby workers
    are told to dial that one at ``advertise`` (a host name or IP; None: ``host``), remote-mode workers at
    ``remote`` when given (it is opened on the embedded referee; ignored with ``addresses``). ``bots``: the
    container sandbox's network when ``host`` is its gateway (see :func:`connect_referee`).

    :raises RefereeError: naming the first referee that is unreachable or refuses the token, or when
        ``remote`` cannot be bound.
    """
    conns: list[RefereeConnection] = []
    try:
        targets: list[str | None] = [*addresses] or [None]
        for address in targets:
            conns.append(connect_referee(address, token, timeout, host, tls_ca=tls_ca, serve_tls=serve_tls,
                                         port=port, bots=bots))
            if address is None and advertise:
                conns[-1].advertise = f"{advertise}:{conns[-1].address.rsplit(':', 1)[1]}"
            if address is None and remote is not None:
                remote.open(conns[-1])
    except BaseException:
        for c in conns:
            c.close()
        raise
    return RefereePool(conns)


#: Prefix of a referee address that stands for every address of a DNS name (``dns:tasks.referee:50051``).
DNS_PREFIX = "dns:"
#: Seconds to wait for a DNS name to give a stable, non-empty list of referees.
DNS_WAIT_S = 60.0


def resolve_referees(addresses: Sequence[str], wait_s: float = DNS_WAIT_S) -> list[str]:
    """``addresses`` with each ``dns:NAME:PORT`` replaced by ``IP:PORT`` for every address NAME has
    (sorted; on Swarm ``tasks.referee``, or a ``dnsrr`` service's name, gives every referee task).

    A name is looked up until it gives at least one address and the same list twice in a row, one
    second apart (replicas starting together), for at most ``wait_s`` seconds.

    :raises RefereeError: if a name gives no address in that time (exit status 1).
    """
    out: list[str] = []
    for a in addresses:
        if not a.startswith(DNS_PREFIX):
            out.append(a)
            continue
        name, _, port = a.removeprefix(DNS_PREFIX).rpartition(":")
        deadline = time.monotonic() + wait_s
        last: list[str] = []
        while True:
            found = lookup_name(name, int(port))
            if found and found == last:
                break
            if time.monotonic() > deadline:
                if found:
                    break
                raise RefereeError(f"referee name {name!r} ({a}) gives no address after {wait_s:.0f} s")
            last = found
            time.sleep(1.0)
        out.extend(f"{ip}:{port}" for ip in found)
    return list(dict.fromkeys(out))

def lookup_name(name: str, port: int) -> list[str]:
    """Every address of DNS ``name`` as ``IP`` (IPv6 in brackets), sorted; ``[]`` when the lookup fails."""
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except OSError:
        return []
    ips = {str(i[4][0]) for i in infos}
    return sorted(f"[{ip}]" if ":" in ip else ip for ip in ips)


class DnsWatch:
    """Keeps a :class:`RefereePool` in step with the DNS names of its referees while a tournament plays.

    Every ``interval_s`` seconds each ``dns:NAME:PORT`` of ``addresses`` is looked up again. A referee
    found through that name and no longer in a non-empty answer (its container or Swarm task is gone:
    docker's DNS drops it at once) is retired, so no game is sent to a vanished address (whose
    connection attempt would stall); an empty or failed answer retires nothing. An address that
    appears (a referee restarted, or scaled up) is connected (:func:`connect_referee`, one
    authenticated call, over TLS with ``tls_ca``) and joins the pool. ``on_event`` gets one line for each change.
    """

    def __init__(
        self,
        pool: RefereePool,
        addresses: Sequence[str],
        token: str | None,
        on_event: Callable[[str], None] | None = None,
        interval_s: float = DNS_WATCH_S,
        lookup: Callable[[str, int], list[str]] = lookup_name,
        tls_ca: bytes | None = None,
    ):
        self.pool = pool
        self.names = [a.removeprefix(DNS_PREFIX).rpartition(":") for a in addresses if a.startswith(DNS_PREFIX)]
        self.fixed = {a for a in addresses if not a.startswith(DNS_PREFIX)}
        self._seen = {c.address for c in pool.conns}  # a referee retired for failing is not added again
        self._gone: set[str] = set()  # retired for leaving DNS: welcome back if it reappears (a restart)
        self.token = token
        self.on_event = on_event or (lambda message: None)
        self.interval_s = interval_s
        self.lookup = lookup
        self.tls_ca = tls_ca
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="referee-dns-watch", daemon=True)

    def start(self) -> DnsWatch:
        """Watch in a background thread (nothing to watch without a ``dns:`` address); returns self."""
        if self.names:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (waits for a round in progress)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.check()

    def check(self) -> None:
        """One round: look every name up, retire the referees gone from DNS, connect the new ones."""
        answers = [[f"{ip}:{port}" for ip in self.lookup(name, int(port))] for name, _, port in self.names]
        found = {a for answer in answers for a in answer}
        alive = {c.address: c for c in self.pool.alive}
        if all(answers):  # an empty or failed answer proves nothing
            for address, conn in alive.items():
                if address not in found and address not in self.fixed and self.pool.retire(conn, "gone from DNS"):
                    self._gone.add(address)
                    self.on_event(f"referee {address} is gone from DNS: retired ({len(self.pool.alive)} left)")
        for address in sorted(found):
            if self._stop.is_set() or address in alive or (address in self._seen and address not in self._gone):
                continue
            try:
                conn = connect_referee(address, self.token, timeout=CONNECT_TIMEOUT_S, tls_ca=self.tls_ca)
            except RefereeError:
                continue  # not answering yet: the next round tries again
            self._seen.add(address)
            self._gone.discard(address)
            self.pool.add(conn)
            self.on_event(f"referee {address} appeared in DNS: added ({len(self.pool.alive)} in play)")
