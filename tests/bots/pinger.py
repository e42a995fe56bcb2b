"""A hostile seat for tests: ``python -m tests.bots.pinger --target HOST:PORT --ticket T --seconds S``.

Joins with a Hello, then sends Pings as fast as it can for ``S`` seconds and never reads a reply
(issue 9, item 3: such a seat must not grow the referee by more than a small bound). Prints the
number of pings sent on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc


async def flood(target: str, ticket: str, seconds: float) -> int:
    """Hello, then Pings for ``seconds``; returns how many were sent. The channel keeps HTTP/2's
    receive window small (no BDP probing), so the referee's replies back up at once."""
    sent = 0
    end = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(target, options=[("grpc.http2.bdp_probe", 0)]) as channel:
        call = pb_grpc.RefereeServiceStub(channel).Play()  # never read: the replies pile up
        await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1",
                                                       bot_name="pinger")))
        ping = pb.PlayRequest(ping=pb.Ping(nonce=1))
        while time.monotonic() < end:
            for _ in range(100):
                await call.write(ping)
            sent += 100
        call.cancel()
    return sent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    p.add_argument("--ticket", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    print(asyncio.run(flood(args.target, args.ticket, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
