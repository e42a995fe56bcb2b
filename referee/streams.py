"""The opening of a client stream, shared by the referee's ``Play`` and the arena lobby's ``Connect``.

Both are bidirectional streams whose first client message must be one kind of a ``oneof msg``
(``Hello``; ``Register``) within a bounded time, and both read bytes from a hostile peer. Here:

- :func:`add_stream_method` registers a stream method with a decoder that never raises: bytes that
  do not decode become :class:`Undecodable` (gRPC would otherwise end the stream with UNKNOWN and a
  Python exception's text, or end a running stream as if the peer had gone);
- :func:`first_message` waits for the first message and refuses a wrong one with one line;
- :func:`add_service` registers a whole service (the referee's AdminService) with that decoder, so its
  handlers answer undecodable requests with one line too (:func:`decoded`);
- :class:`PeerStreams` caps the streams that take no token and stay open as long as the client likes (a
  health ``Watch``, a reflection stream) per peer address, as :class:`Pending` caps silent streams;
  :class:`CappedHealth` is the standard health service of both ports with its ``Watch`` capped so;
- :class:`UnaryRequests`, a server interceptor, does for every method whose request is one message (the
  Submission service's, health ``Check`` and ``Watch``, the AdminService's) what :class:`Pending` does for
  the streams: the request within :data:`REQUEST_TIMEOUT_S`, the calls waiting for theirs capped per address
  (an IPv6 client's /64: :func:`peer_key`).

The one-line statuses are documented in docs/protocol.md (the Play and the lobby tables).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health, health_pb2

from referee.peers import BotNetwork, client_key

M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class Undecodable:
    """What a stream reads for ``size`` bytes that are not a ``type_name`` (e.g.
    ``allfours.v1.PlayRequest``): not protobuf, or a string that is not UTF-8. Handed to the handler
    instead of failing the RPC, so that the server answers with a documented error."""

    size: int
    type_name: str

    def detail(self, who: str = "the first message") -> str:
        """One short line naming the problem (no bytes of the message: they are the peer's), e.g.
        ``the first message is not a PlayRequest (3 bytes that do not decode as allfours.v1.PlayRequest)``."""
        short = self.type_name.rsplit(".", 1)[-1]
        return f"{who} is not a {short} ({self.size} bytes that do not decode as {self.type_name})"


def tolerant_decoder(request_type: type[Message]) -> Callable[[bytes], Message | Undecodable]:
    """A request deserializer: a ``request_type``, or :class:`Undecodable` (never raises)."""
    type_name = request_type.DESCRIPTOR.full_name

    def decode(data: bytes) -> Message | Undecodable:
        try:
            return request_type.FromString(data)
        except DecodeError:
            return Undecodable(len(data), type_name)

    return decode


def add_stream_method(server: grpc.aio.Server, service: str, method: str, behavior: Callable[..., Any],
                      request_type: type[Message], response_type: type[Message]) -> None:
    """Register ``service/method`` (a stream-stream RPC) as the generated ``add_*Servicer_to_server``
    does, but decoding requests with :func:`tolerant_decoder`."""
    handlers = {method: grpc.stream_stream_rpc_method_handler(
        behavior, request_deserializer=tolerant_decoder(request_type),
        response_serializer=response_type.SerializeToString)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)


def add_service(server: grpc.aio.Server, service: ServiceDescriptor, servicer: object, messages: ModuleType) -> None:
    """Register every method of ``service`` (e.g. ``pb.DESCRIPTOR.services_by_name["AdminService"]``)
    on ``servicer`` as the generated ``add_*Servicer_to_server`` does, but decoding requests with
    :func:`tolerant_decoder`: a handler gets an :class:`Undecodable` for bytes that are not its request
    type (``messages``: the ``*_pb2`` module defining the request and response types)."""
    handlers = {}
    for m in service.methods:
        request, response = getattr(messages, m.input_type.name), getattr(messages, m.output_type.name)
        kind = _HANDLER_KINDS[(m.client_streaming, m.server_streaming)]
        handlers[m.name] = kind(getattr(servicer, m.name), request_deserializer=tolerant_decoder(request),
                                response_serializer=response.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    server.add_registered_method_handlers(service.full_name, handlers)


_HANDLER_KINDS: dict[tuple[bool, bool], Callable[..., grpc.RpcMethodHandler]] = {
    (False, False): grpc.unary_unary_rpc_method_handler, (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler, (True, True): grpc.stream_stream_rpc_method_handler}


async def decoded(request: M | Undecodable, context: grpc.aio.ServicerContext) -> M:
    """A unary request registered by :func:`add_service`, or the RPC aborted with INVALID_ARGUMENT and
    :meth:`Undecodable.detail` (``the request is not a CreateMatchRequest (3 bytes that do not decode as
    allfours.v1.CreateMatchRequest)``)."""
    if isinstance(request, Undecodable):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.detail("the request"))
    assert not isinstance(request, Undecodable)
    return request


async def first_message(context: grpc.aio.ServicerContext, timeout_s: float, expected: str) -> Any:
    """The stream's first message, whose ``msg`` oneof must be ``expected`` (e.g. ``"hello"``), or
    None if the client closed the stream without sending one (a plain end, not an error).

    Aborts the RPC with INVALID_ARGUMENT and one line: ``no Hello within 10 s of opening the stream``;
    :meth:`Undecodable.detail`; ``the first message must be a Hello, got register`` (or ``got an empty
    PlayRequest (no field of its oneof msg set)`` for a message with nothing set: 0 bytes).
    """
    kind = expected.capitalize()
    try:
        first = await asyncio.wait_for(context.read(), timeout_s)
    except TimeoutError:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                            f"no {kind} within {timeout_s:.0f} s of opening the stream")
    if first is grpc.aio.EOF:
        return None
    if isinstance(first, Undecodable):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, first.detail())
    which = first.WhichOneof("msg")
    if which != expected:
        got = which or f"an empty {first.DESCRIPTOR.name} (no field of its oneof msg set)"
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the first message must be a {kind}, got {got}")
    return first


#: The one host :class:`Pending` counts every unix-socket peer as.
UNIX_PEER = "unix"


def peer_host(peer: str) -> str | None:
    """The host of a gRPC peer (``ipv4:1.2.3.4:5`` -> ``1.2.3.4``, ``ipv6:[::1]:5`` -> ``::1``), or None for a
    unix socket's. gRPC writes an IPv6 peer's brackets percent-encoded (``ipv6:%5B::1%5D:5``, grpcio 1.85): the
    peer is decoded first, else every IPv6 address counted apart and never by its /64."""
    kind, _, rest = urllib.parse.unquote(peer).partition(":")
    if kind == "unix" or not rest:
        return None
    return rest.rsplit(":", 1)[0].removeprefix("[").removesuffix("]")


def peer_key(peer: str) -> str:
    """What :class:`PeerStreams` counts a gRPC peer under: its host's :func:`referee.peers.client_key` (an
    IPv6 peer's /64, ``ipv6:[2001:db8::1]:5000`` -> ``2001:db8::/64``; ``ipv6:[::ffff:1.2.3.4]:5`` ->
    ``1.2.3.4``), or :data:`UNIX_PEER` for a unix socket's."""
    host = peer_host(peer)
    return UNIX_PEER if host is None else client_key(host)


#: Most open streams of each capped kind (silent Play or Connect streams, health ``Watch``, reflection, calls
#: waiting for their request) of one bot container on the servers that listen on the container sandbox's
#: gateway (:class:`PeerStreams`'s ``apart``), where no count over every address bounds them. A container plays
#: one seat (a worker one game at a time) and needs one or two; at an address's caps (128 silent Play streams,
#: 16 calls, ...) the arena's up to 1024 containers at once (256 games, four seats) held 150 000 streams on the
#: referee, gigabytes of its memory (about 26 KiB a silent stream, more with a message half sent).
CONTAINER_STREAMS = 8


class PeerStreams:
    """Open streams of one kind counted by the peer's address (:func:`peer_key`: an IPv6 peer by its /64,
    which one machine holds whole, so it cannot spread its calls over many addresses and fill ``in_all``,
    the cap every competitor shares; a unix socket's peers as one, :data:`UNIX_PEER`): each holds one of the
    server's ``maximum_concurrent_rpcs`` slots, so uncapped, one client's streams made the server refuse every
    other call ("Concurrent RPC limit exceeded!"). At most
    ``per_peer`` of one address and ``in_all`` (None: no bound) in all; more are refused at once with
    RESOURCE_EXHAUSTED and the one line the caller of :meth:`held` gives. The counter of :class:`Pending`
    (silent streams), :class:`CappedHealth` (health ``Watch``) and the referee's reflection service. Used on
    one event loop only (one instance may count the streams of several servers of it).

    ``apart``: the container sandbox's network, whose containers' streams count against ``per_peer`` alone,
    never ``in_all`` (:class:`referee.peers.BotNetwork`: two containers of one entrant could signal each other
    by holding ``in_all`` near full), and at most :data:`CONTAINER_STREAMS` of them (fewer than ``per_peer``:
    nothing bounds the containers' streams together). ``over_peer``'s ``{n}`` is the address's cap."""

    def __init__(self, per_peer: int, in_all: int | None = None, apart: BotNetwork | None = None) -> None:
        self.per_peer, self.in_all, self.apart = per_peer, in_all, apart
        #: The cap of one container's address (``apart``'s).
        self.per_container = min(per_peer, CONTAINER_STREAMS)
        self._by_host: dict[str, int] = {}
        #: The open streams counted by ``in_all`` (those of every peer but ``apart``'s containers).
        self._shared = 0

    @contextlib.asynccontextmanager
    async def held(self, context: grpc.aio.ServicerContext, over_peer: str, over_all: str) -> AsyncIterator[None]:
        """Count the stream of ``context`` while the block runs; abort it with ``over_peer`` when its address
        has ``per_peer`` open already, with ``over_all`` when the peers ``in_all`` counts (all but a container
        of ``apart``) have ``in_all``."""
        host = peer_key(context.peer() or "")
        shared = self.apart is None or not self.apart.holds(host)
        cap = self.per_peer if shared else self.per_container
        if self._by_host.get(host, 0) >= cap:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, over_peer.replace("{n}", str(cap)))
        if shared and self.in_all is not None and self._shared >= self.in_all:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, over_all)
        self._by_host[host] = self._by_host.get(host, 0) + 1
        self._shared += shared
        try:
            yield
        finally:
            self._shared -= shared
            self._by_host[host] -= 1
            if not self._by_host[host]:
                del self._by_host[host]

    def held_open(self, context: grpc.aio.ServicerContext, what: str) -> contextlib.AbstractAsyncContextManager[None]:
        """:meth:`held` for a stream that stays open as long as its client likes (``what``: its kind, as
        ``"health Watch"``), refused with ``N <what> streams of your address are open: close one`` or
        ``N <what> streams are open: try again later``."""
        return self.held(context, f"{{n}} {what} streams of your address are open: close one",
                         f"{self.in_all} {what} streams are open: try again later")


class Pending:
    """Streams waiting for their first message, counted by the TCP peer's host (:class:`PeerStreams`): each
    holds one of the server's ``maximum_concurrent_rpcs`` slots before any ticket or token is seen, so one
    client holding silent streams made the server refuse every other call ("Concurrent RPC limit
    exceeded!"). A stream over ``per_peer`` of its host, or over ``in_all`` of all hosts, is refused at once
    (RESOURCE_EXHAUSTED, one line ending ``dial again later``). A unix socket's peers carry no address:
    they are all counted as one host, :data:`UNIX_PEER` (a server with a unix socket listens for one
    sandboxed bot only: ``RefereeServer.listen_unix``, ``Lobby.listen_unix``). Used on one event loop only."""

    def __init__(self, per_peer: int, in_all: int | None = None, apart: BotNetwork | None = None) -> None:
        self.streams = PeerStreams(per_peer, in_all, apart)

    async def first_message(self, context: grpc.aio.ServicerContext, timeout_s: float, expected: str) -> Any:
        """:func:`first_message`, or the stream refused as the class docstring says."""
        kind = expected.capitalize()
        async with self.streams.held(
            context, f"{{n}} streams of your address are waiting to send a {kind}: dial again later",
            f"{self.streams.in_all} streams are waiting to send a {kind}: dial again later",
        ):
            return await first_message(context, timeout_s, expected)


#: Most health ``Watch`` streams of one peer address, and of all peers together (:class:`CappedHealth`):
#: an orchestrator watches with one or two.
WATCHES_PER_PEER = 4
WATCHES_ALL = 64


class CappedHealth(health.aio.HealthServicer):  # type: ignore[misc]  # grpc_health ships no types
    """The standard health service, its ``Watch`` streams capped (:class:`PeerStreams`: at most ``per_peer``
    of one peer address and ``in_all`` in all). ``Check`` (one answer) is not capped. Uncapped, one client's
    1024 Watch streams made the lobby's port refuse every worker's Connect and every Submission call, and
    2048 (over 80 connections) the referee's refuse the arena's admin calls and every seat."""

    def __init__(self, per_peer: int = WATCHES_PER_PEER, in_all: int = WATCHES_ALL,
                 apart: BotNetwork | None = None) -> None:
        super().__init__()
        self.streams = PeerStreams(per_peer, in_all, apart)

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext) -> None:
        async with self.streams.held_open(context, "health Watch"):
            await super().Watch(request, context)


#: Seconds a call of a method whose request is one message has to send it (:class:`UnaryRequests`).
REQUEST_TIMEOUT_S = 10.0
#: Most such calls of one peer address waiting for their request at once, and of all peers together.
REQUESTS_PER_PEER = 16
REQUESTS_ALL = 256


class UnaryRequests(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A server interceptor bounding the calls that wait for their one request message. gRPC reads a unary
    request before it calls the handler, with no time limit: a call whose client opened it and sent nothing
    held one of the server's ``maximum_concurrent_rpcs`` slots until the client let go, before any token was
    seen, so an anonymous client holding 1024 silent ``GetSubmission`` (or health ``Check``) calls made the
    lobby's port refuse every competitor's call and every worker's ``Connect`` ("Concurrent RPC limit
    exceeded!"), and a bot's container the embedded referee's every seat. Each such method is served as a
    request stream instead (the same bytes on the wire: a unary client sees no difference), whose one
    message is read here: within ``timeout_s`` (else INVALID_ARGUMENT, ``no request within 10 s of opening
    the call``), at most ``per_peer`` calls of one address and ``in_all`` in all waiting for theirs at once
    (:class:`PeerStreams`; more are refused at once, RESOURCE_EXHAUSTED, one line ending ``dial again
    later``; a unix socket's calls are timed, not capped: :meth:`request`). Then the method's own handler runs as
    before. Used on one event loop only (its server's)."""

    def __init__(self, per_peer: int = REQUESTS_PER_PEER, in_all: int = REQUESTS_ALL,
                 timeout_s: float | None = None, apart: BotNetwork | None = None) -> None:
        self.streams = PeerStreams(per_peer, in_all, apart)
        self.timeout_s = REQUEST_TIMEOUT_S if timeout_s is None else timeout_s

    async def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        """The method's handler, a request stream reading its one request (see the class docstring)."""
        handler = await continuation(details)
        if handler is None or handler.request_streaming:
            return handler
        streaming = bool(handler.response_streaming)
        method = handler.unary_stream if streaming else handler.unary_unary

        async def behavior(_requests: Any, context: grpc.aio.ServicerContext) -> Any:
            result = method(await self.request(context), context)
            if hasattr(result, "__aiter__"):  # an async generator of responses
                async for response in result:
                    await context.write(response)
                return None
            return await result if inspect.isawaitable(result) else result

        kind = grpc.stream_stream_rpc_method_handler if streaming else grpc.stream_unary_rpc_method_handler
        return kind(behavior, request_deserializer=handler.request_deserializer,
                    response_serializer=handler.response_serializer)

    async def request(self, context: grpc.aio.ServicerContext) -> Any:
        """The call's one request message, or the call aborted (see the class docstring; a call that ends
        without one: INVALID_ARGUMENT, ``the call ended without its request``). A unix socket's calls are not
        capped, only timed: the one socket with unary methods is the embedded referee's own, the arena's admin
        calls (a sandboxed bot's socket serves its streams only: ``listen_unix``)."""
        if peer_host(context.peer() or "") is None:
            return await self._read(context)
        async with self.streams.held(
            context, "{n} calls of your address are waiting to send their request: dial "
                     "again later",
            f"{self.streams.in_all} calls are waiting to send their request: dial again later",
        ):
            return await self._read(context)

    async def _read(self, context: grpc.aio.ServicerContext) -> Any:
        """The one request of :meth:`request`, within ``timeout_s``."""
        try:
            request = await asyncio.wait_for(context.read(), self.timeout_s)
        except TimeoutError:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"no request within {self.timeout_s:g} s of opening "
                                "the call")
        if request is grpc.aio.EOF:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the call ended without its request")
        return request
