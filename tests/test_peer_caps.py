"""The per-address caps of the gRPC servers (``referee.streams.PeerStreams``: calls waiting for their request,
silent streams, health Watch and reflection streams) count an IPv6 client by its /64, as the web counts its
connections (``referee.peers.client_key``): one machine holds a whole /64, and counted per address it
spread its calls over many of them and filled the cap that every competitor shares (256 waiting calls)."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import grpc
import pytest
from grpc_health.v1 import health_pb2_grpc

from referee.streams import UNIX_PEER, CappedHealth, PeerStreams, UnaryRequests, peer_key


class Aborted(Exception):
    """What :meth:`Context.abort` raises (gRPC's own context raises its AbortError)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class Context:
    """The part of a ``grpc.aio.ServicerContext`` that :class:`PeerStreams` uses: a gRPC peer string."""

    def __init__(self, peer: str) -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


async def _hold(streams: PeerStreams, held: contextlib.AsyncExitStack, peer: str) -> str:
    """Open one counted stream of ``peer`` (kept open in ``held``): ``"held"``, or the refusal's line."""
    try:
        await held.enter_async_context(streams.held(Context(peer), "over peer", "over all"))
    except Aborted as e:
        assert e.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        return e.details
    return "held"


@pytest.mark.parametrize(("peer", "key"), [
    ("ipv6:[2001:db8::1]:5000", "2001:db8::/64"),
    ("ipv6:[2001:db8::ffff:2]:5001", "2001:db8::/64"),
    ("ipv6:[2001:db8:0:1::1]:5000", "2001:db8:0:1::/64"),
    ("ipv6:[::1]:5000", "::/64"),
    ("ipv6:[::ffff:1.2.3.4]:5000", "1.2.3.4"),
    ("ipv6:%5B2001:db8::1%5D:5000", "2001:db8::/64"),  # as grpcio writes it: the brackets percent-encoded
    ("ipv6:%5B::ffff:1.2.3.4%5D:5000", "1.2.3.4"),
    ("ipv4:1.2.3.4:5000", "1.2.3.4"),
    ("unix:/tmp/referee.sock", UNIX_PEER),
])
def test_a_peer_is_counted_by_its_ipv4_address_or_its_ipv6_64(peer: str, key: str) -> None:
    assert peer_key(peer) == key


def test_two_addresses_of_one_ipv6_64_count_as_one_peer() -> None:
    async def run() -> list[str]:
        streams = PeerStreams(per_peer=1, in_all=10)
        async with contextlib.AsyncExitStack() as held:
            return [await _hold(streams, held, p) for p in (
                "ipv6:[2001:db8::1]:5000", "ipv6:[2001:db8::2]:5001",  # one /64: the second is over
                "ipv6:[2001:db8:0:1::1]:5000",  # another /64: its own count
                "ipv4:1.2.3.4:5000", "ipv6:[::ffff:1.2.3.4]:5001",  # an IPv4-mapped address is the IPv4 one
                "ipv4:1.2.3.5:5000")]

    assert asyncio.run(run()) == ["held", "over peer", "held", "held", "over peer", "held"]


def test_one_ipv6_64_cannot_fill_the_cap_all_peers_share() -> None:
    """300 calls from 300 addresses of one /64 hold the per-address cap's 16 (the default of the calls waiting
    for their request), not the 256 every client shares: another client still gets in."""
    async def run() -> tuple[list[str], str]:
        streams = UnaryRequests().streams
        async with contextlib.AsyncExitStack() as held:
            flood = [await _hold(streams, held, f"ipv6:[2001:db8::{k:x}]:{5000 + k}") for k in range(1, 301)]
            return flood, await _hold(streams, held, "ipv4:192.0.2.7:5000")

    flood, other = asyncio.run(run())
    per_peer = UnaryRequests().streams.per_peer
    assert flood.count("held") == per_peer and other == "held", (flood.count("held"), other)
    assert set(flood[per_peer:]) == {"over peer"}


def test_the_bot_networks_containers_count_against_their_own_address_alone() -> None:
    """The container sandbox's containers (every address of its network but the gateway) are each capped per
    address and never counted by the cap every peer shares: two containers of one entrant held ``in_all``
    near full and the other's next stream was refused, a signal. The other peers (the gateway: the host's own
    processes; any address outside) still share ``in_all``."""
    from referee.peers import BotNetwork

    async def run() -> list[str]:
        streams = PeerStreams(per_peer=2, in_all=3, apart=BotNetwork.parse("172.18.0.0/16", "172.18.0.1"))
        async with contextlib.AsyncExitStack() as held:
            return [await _hold(streams, held, p) for p in (
                "ipv4:172.18.0.2:1", "ipv4:172.18.0.2:2", "ipv4:172.18.0.2:3",  # one container: its own cap
                "ipv4:172.18.0.3:1", "ipv4:172.18.0.3:2",  # its partner: in_all untouched by the first
                "ipv4:172.18.0.1:1", "ipv4:192.0.2.7:1", "ipv4:192.0.2.8:1",  # the host and others share in_all
                "ipv4:192.0.2.9:1",
                "ipv4:172.18.0.4:1")]  # a container still gets in with in_all full

    assert asyncio.run(run()) == ["held", "held", "over peer", "held", "held", "held", "held", "held",
                                  "over all", "held"]


@pytest.mark.parametrize(("subnet", "gateway"), [("172.18.0.0/16", "10.0.0.1"), ("nonsense", "172.18.0.1"),
                                                 ("2001:db8::/64", "2001:db8::1")])
def test_a_bot_network_that_is_not_an_ipv4_network_with_its_gateway_is_one_line(subnet: str, gateway: str) -> None:
    from referee.peers import BotNetwork

    with pytest.raises(ValueError) as e:
        BotNetwork.parse(subnet, gateway)
    assert "\n" not in str(e.value) and subnet in str(e.value), e.value


def _ipv6_loopback() -> bool:
    with socket.socket(socket.AF_INET6) as s:
        try:
            s.bind(("::1", 0))
        except OSError:
            return False
    return True


async def _silent() -> object:
    """A request stream that never sends (a unary call that never sends its request), until cancelled."""
    await asyncio.Event().wait()
    return
    yield


async def _answers(call: grpc.aio.StreamStreamCall) -> None:
    """Read ``call`` to its end (raises its status if not OK)."""
    async for _ in call:
        pass


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_the_per_address_cap_holds_over_ipv6_loopback() -> None:
    """Over a real socket from ::1: two calls of health Check that never send their request are held, the
    third of the same address is refused at once with the per-address line."""
    async def run() -> tuple[grpc.StatusCode, str]:
        server = grpc.aio.server(interceptors=[UnaryRequests(per_peer=2, in_all=8)])
        health_pb2_grpc.add_HealthServicer_to_server(CappedHealth(), server)
        port = server.add_insecure_port("[::1]:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"ipv6:[::1]:{port}") as ch:
                call = ch.stream_stream("/grpc.health.v1.Health/Check", request_serializer=bytes,
                                        response_deserializer=bytes)
                calls = [asyncio.ensure_future(_answers(call(_silent(), timeout=30))) for _ in range(3)]
                done, pending = await asyncio.wait(calls, timeout=20, return_when=asyncio.FIRST_COMPLETED)
                for c in pending:
                    c.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                assert len(done) == 1, done  # the two held ones wait for their request (10 s)
                e = done.pop().exception()
                assert isinstance(e, grpc.aio.AioRpcError), e
                return e.code(), e.details() or ""
        finally:
            await server.stop(None)

    assert asyncio.run(run()) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                  "2 calls of your address are waiting to send their request: dial again later")


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
def test_a_real_ipv6_peer_is_counted_by_its_64() -> None:
    """What a real gRPC server says of a call from ::1 (``ipv6:%5B::1%5D:PORT``: grpcio percent-encodes the
    brackets) counts as ::1's /64. The old parse kept ``%5B::1%5D``, one key an address: the /64 never applied
    on a real socket (found by a review; the table above had only hand-written bracketed peers)."""
    async def run() -> bytes:
        async def key(_request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            return peer_key(context.peer()).encode()

        server = grpc.aio.server()
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "t.Peer", {"Key": grpc.unary_unary_rpc_method_handler(key)})])
        port = server.add_insecure_port("[::1]:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"ipv6:[::1]:{port}") as ch:
                answer: bytes = await ch.unary_unary("/t.Peer/Key")(b"", timeout=30)
                return answer
        finally:
            await server.stop(None)

    assert asyncio.run(run()) == b"::/64"
