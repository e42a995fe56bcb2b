"""The floor of the referee's shape: ``python benchmarks/referee_shape.py [--seconds 8] [--rounds 8]``.

``benchmarks/referee.py`` compares the referee's decision latency with a bare ping-pong; the two
differ in three ways, and this script measures the first two without the third:

1. **two streams**: a decision arrives on one seat's stream and the next request leaves on the other
   seat's (two channels, two TCP connections), where the bare ping-pong answers on the same stream;
2. **a real-size message**: a DecisionRequest (a few hundred bytes: the observation, the legal
   actions, the events) where the bare server sends a 4-byte Pong;
3. the match's own work (the engine, the messages, the record, the clock): not here.

A relay server (in its own process, the garbage collector tuned as ``referee serve`` tunes it, the
same server options as the referee) pairs streams by their Hello's ticket and answers each Ping on
the paired stream, or on the same stream for a stream paired with itself. Four shapes are measured
in interleaved rounds (one sequential round trip at a time, like ``benchmarks/referee.py``): one stream
with a Pong (the bare ping-pong), one stream with the DecisionRequest, two streams with a Pong, two
streams with the DecisionRequest. The DecisionRequest is a real one: the twelfth of a 2-player match
played first on the real referee (in its own process, instant seats: ``benchmarks/_seats.py``; a few
hundred bytes, the size printed, varying with the deal). Prints each shape's p50 and
p99 and its ratio to the bare ping-pong: what the referee's ratio would be if its own work cost
nothing (docs/architecture.md, The referee's speed).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before benchmarks/ (referee.py here)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from _seats import pct, play_match, referee_in_child  # benchmarks/_seats.py

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.cli import configure_logging
from referee.server import SERVER_OPTIONS, tune_gc

#: The shapes measured: (name, streams, answer with the real DecisionRequest).
SHAPES = (("one stream, Pong (bare)", 1, False), ("one stream, DecisionRequest", 1, True),
          ("two streams, Pong", 2, False), ("two streams, DecisionRequest", 2, True))


class Relay(pb_grpc.RefereeServiceServicer):
    """Answers a Ping on the stream paired with the sender's: tickets ``<pair>a``/``<pair>b`` are
    paired, ``<pair>s`` with itself. An odd nonce is answered with ``request``, an even one with a Pong.
    Each stream has a reader task and a writer draining a queue, as the referee's streams do."""

    def __init__(self, request: pb.PlayResponse) -> None:
        self.request = request
        self.queues: dict[str, asyncio.Queue[pb.PlayResponse | None]] = {}

    async def Play(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        out: asyncio.Queue[pb.PlayResponse | None] = asyncio.Queue()
        ticket = (await context.read()).hello.ticket
        self.queues[ticket] = out
        other = {"a": ticket[:-1] + "b", "b": ticket[:-1] + "a"}.get(ticket[-1], ticket)
        reader = asyncio.get_running_loop().create_task(self._read(context, other))
        while (msg := await out.get()) is not None:
            await context.write(msg)
        await reader
        self.queues.pop(ticket, None)

    async def _read(self, context: grpc.aio.ServicerContext, other: str) -> None:
        while (msg := await context.read()) is not grpc.aio.EOF:
            answer = self.request if msg.ping.nonce % 2 else pb.PlayResponse(pong=pb.Pong(nonce=msg.ping.nonce))
            self.queues[other].put_nowait(answer)
            await asyncio.sleep(0)  # as the referee's reader: the writer hands the answer to gRPC first
        self.queues[other].put_nowait(None)


def _serve(request: bytes, conn: Any) -> None:
    """Child process: the relay on 127.0.0.1:0 until told to stop; its address sent through ``conn``."""

    async def main() -> None:
        server = grpc.aio.server(options=SERVER_OPTIONS)
        pb_grpc.add_RefereeServiceServicer_to_server(Relay(pb.PlayResponse.FromString(request)), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        tune_gc()
        conn.send(f"127.0.0.1:{port}")
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await server.stop(0)

    asyncio.run(main())


async def real_request(n: int = 12) -> bytes:
    """The ``n``-th DecisionRequest (as a serialized PlayResponse) of a 2-player match on the real referee."""
    async with referee_in_child() as (address, _pid), grpc.aio.insecure_channel(address) as channel:
        played = await play_match(channel, players=2, games=1, keep=n)
    return played.requests[-1]


async def round_trips(address: str, pair: str, streams: int, big: bool, seconds: float) -> list[float]:
    """Sequential round trips for ``seconds``: a Ping on one stream, the answer read on the paired one
    (the two streams take turns sending, as two seats do). Latencies in seconds."""
    async with grpc.aio.insecure_channel(address) as cha, grpc.aio.insecure_channel(address) as chb:
        calls = [pb_grpc.RefereeServiceStub(ch).Play() for ch in (cha, chb)[:streams]]
        tickets = [f"{pair}s"] if streams == 1 else [f"{pair}a", f"{pair}b"]
        for call, ticket in zip(calls, tickets, strict=True):
            await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket)))
        await asyncio.sleep(0.05)  # both registered before the first Ping
        lat: list[float] = []
        end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < end:
            src, dst = calls[i % streams], calls[(i + 1) % streams]
            t0 = time.perf_counter()
            await src.write(pb.PlayRequest(ping=pb.Ping(nonce=2 * i + int(big))))
            await dst.read()
            lat.append(time.perf_counter() - t0)
            i += 1
        for call in calls:
            await call.done_writing()
    return lat


async def measure(seconds: float, rounds: int) -> tuple[int, dict[str, list[float]]]:
    """(the DecisionRequest's size in bytes, latencies per shape name)."""
    request = await real_request()
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_serve, args=(request, child), daemon=True)
    proc.start()
    address = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
    lat: dict[str, list[float]] = {name: [] for name, _, _ in SHAPES}
    try:
        await round_trips(address, "warm", 2, True, 0.3)
        for r in range(rounds):
            for k, (name, streams, big) in enumerate(SHAPES):
                lat[name] += await round_trips(address, f"r{r}s{k}", streams, big, seconds / rounds / len(SHAPES))
    finally:
        parent.send("stop")
        proc.join(10)
    return len(request), lat


def main() -> None:
    """Measure the four shapes and print their latencies and ratios to the bare ping-pong."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=8.0, help="total time of the round trips (all shapes)")
    p.add_argument("--rounds", type=int, default=8, help="interleaved rounds of the four shapes")
    a = p.parse_args()
    configure_logging("warning")
    size, lat = asyncio.run(measure(a.seconds, max(1, a.rounds)))
    bare = lat[SHAPES[0][0]]
    print(f"DecisionRequest:  {size} bytes (the 12th of a 2-player match); Pong: "
          f"{len(pb.PlayResponse(pong=pb.Pong(nonce=1)).SerializeToString())} bytes")
    for name, _, _ in SHAPES:
        xs = lat[name]
        print(f"{name + ':':30s} p50 {pct(xs, 0.5) * 1e3:.3f} ms  p99 {pct(xs, 0.99) * 1e3:.3f} ms  "
              f"ratio p50 {pct(xs, 0.5) / pct(bare, 0.5):.2f}  ({len(xs)} round trips)")


if __name__ == "__main__":
    main()
