"""A bot container's streams on the referee that serves the container sandbox's gateway are bounded by a cap
of its own that is small (``referee.streams.CONTAINER_STREAMS``): no count over every address bounds them
there, so at an ordinary address's caps (128 silent Play streams) the arena's up to 1024 containers at once
held 150 000 streams on the referee, gigabytes of its memory. The "containers" are loopback addresses
(127.0.0.2, ...: the network 127.0.0.0/8, its gateway 127.0.0.1), each dialling through a relay that binds it.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc

from referee.peers import BotNetwork
from referee.server import ThreadedReferee

PLAY = "/allfours.v1.RefereeService/Play"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def _relay(source: str, port: int, pipes: set[asyncio.Task[None]]) -> asyncio.Server:
    """A local port whose connections reach the referee's ``port`` from the address ``source`` (the tasks
    copying their bytes kept in ``pipes``)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        pipes.update({asyncio.ensure_future(_pipe(reader, up_w)), asyncio.ensure_future(_pipe(up_r, writer))})

    return await asyncio.start_server(handle, "127.0.0.1", 0)


async def _silent_streams(port: int, source: str, many: int) -> list[str]:
    """Open ``many`` Play streams from ``source`` that send nothing; each one's outcome after a while:
    ``"held"`` or the refusal's details (RESOURCE_EXHAUSTED)."""
    pipes: set[asyncio.Task[None]] = set()
    relay = await _relay(source, port, pipes)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{relay.sockets[0].getsockname()[1]}")
    calls = []
    try:
        for _ in range(many):
            calls.append(channel.stream_stream(PLAY)())
            await asyncio.sleep(0.05)  # in order: the last ones are the ones over the cap
        with contextlib.suppress(TimeoutError):  # the last one's refusal (the held ones wait 10 s for a Hello)
            await asyncio.wait_for(asyncio.shield(calls[-1].code()), 5)
        out = []
        for call in calls:
            if not call.done():
                out.append("held")
                continue
            assert await call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, await call.details()
            out.append(await call.details())
        return out
    finally:
        for call in calls:
            call.cancel()
        await channel.close()
        relay.close()
        for pipe in pipes:
            pipe.cancel()


def test_a_containers_silent_streams_are_capped_at_its_own_small_cap() -> None:
    referee = ThreadedReferee(grace_s=0.5, host="127.0.0.1", port=0,
                              bots=BotNetwork.parse("127.0.0.0/8", "127.0.0.1"))
    referee.start()
    try:
        container = asyncio.run(_silent_streams(referee.port, "127.0.0.2", 12))
        host = asyncio.run(_silent_streams(referee.port, "127.0.0.1", 12))  # the gateway: the host's own peers
    finally:
        referee.stop()
    line = "8 streams of your address are waiting to send a Hello: dial again later"
    assert container == ["held"] * 8 + [line] * 4, container
    assert host == ["held"] * 12, host  # an ordinary address keeps its 128
