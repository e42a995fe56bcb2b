"""A minimal bot speaking the wire protocol directly: it plays the first legal action at once.

Used by ``benchmarks/arena.py`` (instant bots measure the arena's and referee's own cost) and by the
arena's end-to-end tests, including misbehaving variants that prove bot failures are results:

    python -m arena.instant_bot [--referee HOST:PORT] [--ticket T] [--mode first|crash|exit|hang]
        [--after N]

``--referee`` and ``--ticket`` default to the ``ALLFOURS_REFEREE`` and ``ALLFOURS_TICKET``
environment variables that the arena sets. Modes: ``first`` (default) plays the first legal action;
``crash`` raises after ``N`` decisions (exit status 1); ``exit`` exits at once with status 3 before
joining; ``hang`` joins, then never answers after ``N`` decisions.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import time
from collections.abc import Iterator, Sequence

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET

PROTOCOL_VERSION = "allfours.v1"


def play(address: str, ticket: str, mode: str = "first", after: int = 0) -> int:
    """Join the seat of ``ticket`` at ``address`` and play until MatchEnd; returns decisions answered.

    :raises RuntimeError: in ``crash`` mode after ``after`` decisions (on purpose).
    :raises grpc.RpcError: if the referee refuses the ticket or goes away.
    """
    outbox: queue.Queue[pb.PlayRequest | None] = queue.Queue()
    outbox.put(
        pb.PlayRequest(
            hello=pb.Hello(ticket=ticket, protocol_version=PROTOCOL_VERSION, bot_name="instant", bot_version="1")
        )
    )

    def requests() -> Iterator[pb.PlayRequest]:
        while True:
            item = outbox.get()
            if item is None:
                return
            yield item

    answered = 0
    with grpc.insecure_channel(address) as channel:
        stub = pb_grpc.RefereeServiceStub(channel)
        try:
            for msg in stub.Play(requests()):
                which = msg.WhichOneof("msg")
                if which == "decision_request":
                    req = msg.decision_request
                    if mode in ("crash", "hang") and answered >= after:
                        if mode == "crash":
                            raise RuntimeError(f"instant bot crashing on purpose after {answered} decisions")
                        time.sleep(3600)
                    outbox.put(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=req.legal_actions[0])))
                    answered += 1
                elif which == "match_end":
                    break
        finally:
            outbox.put(None)
    return answered


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m arena.instant_bot")
    p.add_argument("--referee", default=os.environ.get(ENV_REFEREE))
    p.add_argument("--ticket", default=os.environ.get(ENV_TICKET))
    p.add_argument("--mode", choices=("first", "crash", "exit", "hang"), default="first")
    p.add_argument("--after", type=int, default=0)
    args = p.parse_args(argv)
    if args.mode == "exit":
        return 3
    if not args.referee or not args.ticket:
        print(f"need --referee/--ticket or {ENV_REFEREE}/{ENV_TICKET}", file=sys.stderr)
        return 2
    play(args.referee, args.ticket, args.mode, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
