"""The raw-protocol bot: allfours.v1 spoken with plain grpc (no SDK), at once, with fault modes.

Used by ``benchmarks/arena.py`` (instant bots measure the arena's and referee's own cost), the
arena's end-to-end tests, and the referee's (``tests/server_helpers.launch_bots``), whose fault modes
prove that bot failures are results:

    python -m arena.testing.instant_bot [--referee HOST:PORT] [--ticket T] [--mode MODE] [--after N]
        [--delay-ms MS] [--seed N] [--log FILE] [--protocol VERSION] [--once FILE]

``--referee`` and ``--ticket`` default to the ``ALLFOURS_REFEREE`` and ``ALLFOURS_TICKET``
environment variables that the arena sets. Modes (``--after N``: once ``N`` decisions are answered):

- ``first`` (default): the first legal action; ``random``: a random legal one (``--seed``).
- ``crash``: exits with status 1 at the request after ``N`` answers; ``exit``: exits with status 3
  at once, before joining; ``hang``: joins, then never answers after ``N`` answers; ``frozen``:
  stops reading after Welcome; ``slow``: waits ``--delay-ms`` before each answer.
- ``garbage``: answers with malformed actions; ``illegal``: first an illegal card, then a legal
  action; ``illegal_forever``: only illegal cards; ``unheld_forever``: only cards it does not hold.
- ``outofturn``: after ``N`` answers, at each play after which another seat is to act (a card that
  leaves the trick unfinished) it also plays another card with seq 0 (out of turn), until a request
  shows a card of its own exposed (a seq-0 play read late, when it is to act again, is an answer);
  ``resume``: after ``N`` answers drops the connection, reconnects after ``--delay-ms``;
  ``duplicate``: before each answer but the first, sends its previous answer again (a duplicate, by
  now late) and this request's action under the previous request's seq (stale). Both go while this
  seat's request is pending, when the match cannot end: a write after the referee has ended the stream
  makes grpc.aio report ``INTERNAL`` instead of the MatchEnd it received (grpc/grpc#36066).

Every message received is appended to ``--log`` as one JSON line (for the leak tests). Exit status:
0 after MatchEnd, 1 a crash on purpose, 2 when the stream ends with an error status (printed as
``STATUS <code> <details>``) or, as a worker, when ``$ALLFOURS_TLS_CA`` or ``$ALLFOURS_REFEREE_TLS_CA``
names a file that cannot be read or holds no PEM certificate (one line), 3 in ``exit`` mode, 4 when the
stream ends without MatchEnd.

As a local worker (``mode = "worker"``: the arena sets ``ALLFOURS_LOBBY``, ``ALLFOURS_BOT_TOKEN``
and ``ALLFOURS_BOT_NAME`` instead of a ticket) it serves the lobby (:mod:`sdk.worker`), playing each
assignment the same way, on one asyncio loop and one channel per referee for all its games (each
seat is a process of its own, so each message wakes one: the asyncio client costs less per wake-up
than the threaded one, and no game pays for a new connection); ``crash`` then kills the whole
worker process (status 1) mid-game; with ``--once FILE`` it crashes only while FILE does not exist
(creating it), so exactly one worker of the pool crashes exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
from google.protobuf.json_format import MessageToDict

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.config import ENV_REFEREE, ENV_TICKET
from referee.credentials import PemError, read_pem
from sdk.worker import LOBBY_ENV, NAME_ENV, TLS_CA_ENV, TOKEN_ENV, LobbyWorker, WorkerError, referee_tls_ca

PROTOCOL_VERSION = "allfours.v1"
MODES = ("first", "random", "crash", "exit", "hang", "frozen", "slow", "garbage", "illegal", "illegal_forever",
         "unheld_forever", "outofturn", "resume", "duplicate")
#: Exit statuses (see the module docstring).
EXIT_MATCH_END, EXIT_CRASH, EXIT_STATUS, EXIT_ON_PURPOSE, EXIT_NO_MATCH_END = 0, 1, 2, 3, 4


@dataclass
class Behaviour:
    """How the bot plays (the command line's options) and what it keeps across reconnects."""

    mode: str = "first"
    after: int = 0
    delay_ms: int = 0
    seed: int = 0
    protocol: str = PROTOCOL_VERSION
    #: Keep every message received (``--log``); off, none is turned into JSON (benchmarks/arena.py
    #: measures the arena's cost with this bot: converting each message cost it more than playing).
    keep_log: bool = False
    #: Every message received, as JSON lines (written to ``--log`` at exit), when ``keep_log``.
    log: list[str] = field(default_factory=list)
    #: The one-off fault (``resume``; ``outofturn``: a card of this seat is exposed) has happened.
    done_once: bool = False


class _Reconnect(Exception):
    """``resume`` mode: the bot dropped its stream on purpose and joins again."""


def _illegal_card(req: pb.DecisionRequest) -> str | None:
    """A card the seat may not play now: one of its own that is not legal, else one it does not hold."""
    legal = {a.card for a in req.legal_actions if a.kind == pb.ACTION_KIND_PLAY}
    hand: list[str] = list(req.observation.hand)
    for c in hand:
        if c not in legal:
            return c
    return next((r + s for r in "AKQJT98765432" for s in "CDHS" if r + s not in hand), None)


def _decision(seq: int, action: pb.Action) -> pb.PlayRequest:
    return pb.PlayRequest(decision=pb.Decision(seq=seq, action=action))


def _play_card(card: str) -> pb.Action:
    return pb.Action(kind=pb.ACTION_KIND_PLAY, card=card)


def _another_acts_next(req: pb.DecisionRequest, choice: pb.Action) -> bool:
    """Is another seat to act once ``choice`` is played: a card that leaves the trick unfinished (a
    finished trick's winner may be this seat)? Every seat plays such a card in each trick but the one
    it plays last, so ``outofturn`` fires in the first trick wherever the seat sits in it."""
    players = len(req.observation.hand_sizes)
    return choice.kind == pb.ACTION_KIND_PLAY and len(req.observation.trick) + 1 < players


def _answer(b: Behaviour, req: pb.DecisionRequest, rng: random.Random, previous: pb.PlayRequest | None,
            due: bool) -> list[pb.PlayRequest]:
    """The messages a bot of mode ``b.mode`` sends for ``req`` (see the module docstring), the answer
    to ``req`` last but for ``outofturn``'s seq-0 play; ``previous``: the answer to this seat's previous
    request; ``due``: ``--after`` decisions are answered (the one-off fault may happen)."""
    mode, out = b.mode, []
    in_play = req.observation.phase == pb.PHASE_PLAY
    if mode == "garbage":
        return [_decision(req.seq, pb.Action())]
    if mode in ("illegal", "illegal_forever") and in_play and (bad := _illegal_card(req)) is not None:
        out.append(_decision(req.seq, _play_card(bad)))
        if mode == "illegal_forever":
            return out
    if mode == "unheld_forever" and in_play:
        # A card this seat does not hold (rejected card_not_in_hand: the engine's message names its hand).
        held = set(req.observation.hand)
        return [_decision(req.seq, _play_card(next(c for c in ("AD", "KD", "QD", "JD", "TD") if c not in held)))]
    choice = rng.choice(list(req.legal_actions)) if mode == "random" else req.legal_actions[0]
    if mode == "duplicate" and previous is not None:
        # Seqs of this seat's own (a seq sent to another seat is a protocol error), sent before the
        # answer: after it, the match may end and close the stream under the write.
        out += [previous, _decision(previous.decision.seq, choice)]
    out.append(_decision(req.seq, choice))
    if mode == "outofturn" and due and not b.done_once:
        if any(e.seat == req.observation.seat for e in req.observation.exposed):
            b.done_once = True  # the referee has exposed a card of this seat: done
        elif _another_acts_next(req, choice) and (others := [c for c in req.observation.hand if c != choice.card]):
            # Sent right after the answer: the referee has usually moved on to another seat when it
            # reads this seq-0 play (exposed); if it comes late (that seat answered first, and this one
            # is to act again), it is an answer or a rejection, and the next chance tries again.
            out.append(_decision(0, _play_card(others[0])))
    return out


def play(address: str, ticket: str, b: Behaviour) -> int:
    """Join the seat of ``ticket`` at ``address`` and play until MatchEnd (``resume``: rejoin once).

    :returns: the exit status (see the module docstring); a crash on purpose exits the process.
    """

    async def on_a_channel() -> int:
        async with grpc.aio.insecure_channel(address) as channel:
            return await play_on(channel, ticket, b)

    return asyncio.run(on_a_channel())


async def play_on(channel: grpc.aio.Channel, ticket: str, b: Behaviour) -> int:
    """:func:`play` on an open ``channel`` to the referee (a worker keeps one for all its matches:
    each new channel costs a connection, and the benchmark measures the arena, not that)."""
    while True:
        try:
            return await _play_once(channel, ticket, b)
        except _Reconnect:
            await asyncio.sleep(b.delay_ms / 1000)


async def _play_once(channel: grpc.aio.Channel, ticket: str, b: Behaviour) -> int:
    """One Play stream, asyncio (a separate process per seat: each message costs a wake-up, and the
    asyncio client spends less on one than the threaded one)."""
    call = pb_grpc.RefereeServiceStub(channel).Play()
    rng = random.Random(b.seed)
    answered = 0
    previous: pb.PlayRequest | None = None
    try:
        await _send(call, pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version=b.protocol,
                                                        bot_name="instant", bot_version="1")))
        while (msg := await call.read()) is not grpc.aio.EOF:
            assert isinstance(msg, pb.PlayResponse)
            if b.keep_log:
                b.log.append(json.dumps(MessageToDict(msg)))
            which = msg.WhichOneof("msg")
            if which == "welcome" and b.mode == "frozen":
                await asyncio.sleep(3600)
            if which == "match_end":
                return EXIT_MATCH_END
            if which != "decision_request":
                continue
            req = msg.decision_request
            due = answered >= b.after
            if due:
                await _fault_at(b, answered)
            if b.mode == "slow":
                await asyncio.sleep(b.delay_ms / 1000)
            sent = _answer(b, req, rng, previous, due)
            for out in sent:
                await _send(call, out)
            answered, previous = answered + 1, next(m for m in sent if m.decision.seq == req.seq)
    except grpc.aio.AioRpcError as e:
        print(f"STATUS {e.code().name} {e.details()}", flush=True)
        return EXIT_STATUS
    finally:
        call.cancel()
    return EXIT_NO_MATCH_END


async def _send(call: grpc.aio.StreamStreamCall, message: pb.PlayRequest) -> None:
    """Write ``message``; once the referee has ended the stream, writing is moot (the next read says how
    it ended), as it was for the threaded client's queue."""
    with contextlib.suppress(asyncio.InvalidStateError):
        await call.write(message)


async def _fault_at(b: Behaviour, answered: int) -> None:
    """``answered`` decisions are answered, as many as ``--after`` asks: crash, hang or drop the stream."""
    if b.mode == "crash":
        print(f"instant bot crashing on purpose after {answered} decisions", file=sys.stderr, flush=True)
        os._exit(EXIT_CRASH)
    if b.mode == "hang":
        await asyncio.sleep(3600)
    if b.mode == "resume" and not b.done_once:
        b.done_once = True
        raise _Reconnect


class _Seats:
    """Worker mode's referee connections: one event loop and one channel per referee for the whole
    life of the worker (the process); plays each assignment on them."""

    def __init__(self, tls_ca: bytes | None) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)  # grpc.aio binds its channels to the thread's loop
        self.tls_ca = tls_ca
        self.channels: dict[tuple[str, bool], grpc.aio.Channel] = {}

    def play(self, a: lpb.Assignment, b: Behaviour) -> int:
        """Play the seat of assignment ``a`` as ``b`` says; returns the exit status :func:`play` would."""
        return self.loop.run_until_complete(self._play(a, b))

    async def _play(self, a: lpb.Assignment, b: Behaviour) -> int:
        key = (a.referee, a.referee_tls)
        if key not in self.channels:  # made on the running loop
            if a.referee_tls:
                creds = grpc.ssl_channel_credentials(root_certificates=self.tls_ca)
                self.channels[key] = grpc.aio.secure_channel(a.referee, creds)
            else:
                self.channels[key] = grpc.aio.insecure_channel(a.referee)
        return await play_on(self.channels[key], a.ticket, b)


def _serve_lobby(b: Behaviour, once: str | None) -> int:
    """Worker mode: play assignments until the lobby or the arena goes; a crash ends the process."""
    ca = os.environ.get(TLS_CA_ENV)
    try:
        tls_ca = read_pem(TLS_CA_ENV, ca) if ca else None
        seats = _Seats(referee_tls_ca(tls_ca))
    except PemError as e:  # one line, as sdk.run says it
        print(f"instant_bot: {e}", file=sys.stderr, flush=True)
        return 2

    def play_seat(a: lpb.Assignment) -> None:
        seat = Behaviour(b.mode, b.after, b.delay_ms, b.seed, b.protocol)
        if b.mode == "crash" and once is not None:
            try:
                os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                seat.mode = "first"
        seats.play(a, seat)

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
    p = argparse.ArgumentParser(prog="python -m arena.testing.instant_bot")
    p.add_argument("--referee", default=os.environ.get(ENV_REFEREE))
    p.add_argument("--ticket", default=os.environ.get(ENV_TICKET))
    p.add_argument("--mode", choices=MODES, default="first")
    p.add_argument("--after", type=int, default=0, help="decisions answered before the fault")
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", metavar="FILE", help="write every message received, one JSON line each")
    p.add_argument("--protocol", default=PROTOCOL_VERSION, help="the Hello's protocol_version")
    p.add_argument("--once", metavar="FILE", default=None, help="worker mode: crash only while FILE does not exist")
    args = p.parse_args(argv)
    if args.mode == "exit":
        return EXIT_ON_PURPOSE
    b = Behaviour(args.mode, args.after, args.delay_ms, args.seed, args.protocol, keep_log=bool(args.log))
    if os.environ.get(LOBBY_ENV) and not (args.referee and args.ticket):
        return _serve_lobby(b, args.once)
    if not args.referee or not args.ticket:
        print(f"need --referee/--ticket or {ENV_REFEREE}/{ENV_TICKET}", file=sys.stderr)
        return 2
    try:
        return play(args.referee, args.ticket, b)
    finally:
        if args.log:
            with open(args.log, "w", encoding="utf-8") as f:
                f.write("\n".join(b.log) + ("\n" if b.log else ""))


if __name__ == "__main__":
    threading.stack_size(1 << 20)
    sys.exit(main())
