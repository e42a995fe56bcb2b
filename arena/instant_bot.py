"""A minimal bot speaking the wire protocol directly: it plays the first legal action at once.

Used by ``benchmarks/arena.py`` (instant bots measure the arena's and referee's own cost) and by the
arena's end-to-end tests, including misbehaving variants that prove bot failures are results:

    python -m arena.instant_bot [--referee HOST:PORT] [--ticket T] [--mode first|crash|exit|hang]
        [--after N]

As a local worker (``mode = "worker"``: the arena sets ``ALLFOURS_LOBBY``, ``ALLFOURS_BOT_TOKEN``
and ``ALLFOURS_BOT_NAME`` instead of a ticket) it serves the lobby (:mod:`sdk.worker`), playing each
assignment the same way; ``crash`` then kills the whole worker process (status 1) mid-game; with
``--once FILE`` it crashes only while FILE does not exist (creating it), so exactly one worker of
the pool crashes exactly once.

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

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET
from sdk.worker import LOBBY_ENV, NAME_ENV, TLS_CA_ENV, TOKEN_ENV, LobbyWorker, WorkerError

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


def _serve_lobby(mode: str, after: int, once: str | None) -> int:
    """Worker mode: play assignments until the lobby or the arena goes; a crash ends the process."""

    def play_seat(a: lpb.Assignment) -> None:
        seat_mode = mode
        if mode == "crash" and once is not None:
            try:
                os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                seat_mode = "first"
        try:
            play(a.referee, a.ticket, seat_mode, after)
        except RuntimeError as e:
            print(e, file=sys.stderr, flush=True)
            os._exit(1)

    ca = os.environ.get(TLS_CA_ENV)
    tls_ca = open(ca, "rb").read() if ca else None  # noqa: SIM115 - a small file, read once
    worker = LobbyWorker(play_seat, os.environ[LOBBY_ENV], os.environ.get(TOKEN_ENV, ""),
                         os.environ.get(NAME_ENV, "instant"), "1", tls_ca=tls_ca, reconnect_s=30.0)
    try:
        worker.run()
    except WorkerError as e:
        print(e, file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (see the module docstring); returns the exit status."""
    p = argparse.ArgumentParser(prog="python -m arena.instant_bot")
    p.add_argument("--referee", default=os.environ.get(ENV_REFEREE))
    p.add_argument("--ticket", default=os.environ.get(ENV_TICKET))
    p.add_argument("--mode", choices=("first", "crash", "exit", "hang"), default="first")
    p.add_argument("--after", type=int, default=0)
    p.add_argument("--once", metavar="FILE", default=None, help="worker mode: crash only while FILE does not exist")
    args = p.parse_args(argv)
    if args.mode == "exit":
        return 3
    if os.environ.get(LOBBY_ENV) and not (args.referee and args.ticket):
        return _serve_lobby(args.mode, args.after, args.once)
    if not args.referee or not args.ticket:
        print(f"need --referee/--ticket or {ENV_REFEREE}/{ENV_TICKET}", file=sys.stderr)
        return 2
    play(args.referee, args.ticket, args.mode, args.after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
