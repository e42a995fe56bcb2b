"""A bot with one deliberate fault per conformance check, to prove each check can fail.

``python -m tests.bots.broken [--break CHECK]`` (ticket and referee from ``ALLFOURS_TICKET`` and
``ALLFOURS_REFEREE``, as the conformance suite and the arena give them). Plain grpc, no SDK.

Without ``--break`` it is a correct bot (per game, or a worker: see below): it plays the first legal
action, echoes seqs, retries once after ActionRejected, ignores a request it already answered on the
same stream, skips what it does not know, reconnects with the same ticket, and exits 0 after
MatchEnd. Each fault is narrow, so that
it breaks its own check and nothing else (tests/test_conformance.py checks exactly that):

========================  ======================================================================
join                      sends protocol_version "allfours.v0"
phases                    first answers a call phase with a card play (then retries legally)
deadline                  thinks 2.3 s on its first request when time_left_ms <= 2000
retry                     ignores ActionRejected
seq-echo                  answers card plays with seq 0
resend                    answers a request every time it is sent
unknown-messages          exits 1 on an event kind it does not know
pack-runs-dry             exits 1 when a deal ends with ran_dry
kick-ends-game            exits 1 when a game ends in which it was never asked
multi-game                exits 0 at the end of the first game it played (thinks the match is over)
players-2                 exits 1 in a 2-player match (expects a partner)
players-4                 exits 1 at seat 2 or 3 (indexes a two-entry list by seat)
rules-…                   exits 1 at Welcome when that rule option is not the default (for the
                          target: above 14, as if its score table had 14 rows)
resume                    exits 1 when its stream breaks (no reconnect)
exit                      exits 3 after MatchEnd
limits                    holds 300 MiB of memory from the start
lobby-register            (worker mode) registers with protocol_version "allfours.v0"
lobby-ready               (worker mode) sends no Ready after its first match
lobby-redial              (worker mode) never dials the lobby again once its stream ends (it idles)
========================  ======================================================================

``--break lobby-ready-early`` (worker mode) also sends each Ready with its Assignment, before the
match is played; it fails ``lobby-ready`` (tests/test_conformance.py). ``--break lobby-redial-exit``
(worker mode) says one line and exits 1 when its lobby stream ends; it fails ``lobby-redial``.
``--break lobby-redial-hammer`` (worker mode) dials again 10 ms after each lost or refused stream, without
back-off; it fails ``lobby-redial``.

Worker mode: with ``ALLFOURS_LOBBY`` set and no ``ALLFOURS_TICKET`` it registers at the lobby with
``ALLFOURS_BOT_TOKEN`` and ``ALLFOURS_BOT_NAME``, plays each Assignment as above and sends Ready; when
the lobby stream ends (the lobby restarting) it dials again every 0.5 s and registers again.
Where the table says "exits", a worker leaves that match (closes its stream) and plays on, so each
fault still fails its own check only (``exit`` has no lobby-mode check).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import sys
import time
from collections.abc import Iterator

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc

RULE_DEFAULTS = {"rules-deal-in-ones": ("deal_in", pb.DEAL_IN_THREES), "rules-target-21": ("target", 14),
                 "rules-hang-jack-off": ("hang_jack", True), "rules-undertrump-ban": ("undertrump_ban", False),
                 "rules-void-may-discard": ("void_may_discard", False)}


class Quit(Exception):
    """Leave with this exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Bot:
    def __init__(self, fault: str) -> None:
        self.fault = fault
        self.requests = 0
        self.asked_in: set[int] = set()
        self.out: queue.Queue[pb.PlayRequest | None] = queue.Queue()
        self.answered: set[int] = set()
        self.last: pb.DecisionRequest | None = None
        self.retried: set[int] = set()

    def _requests(self, out: queue.Queue[pb.PlayRequest | None], hello: pb.PlayRequest) -> Iterator[pb.PlayRequest]:
        yield hello
        while (m := out.get()) is not None:
            yield m

    def send(self, seq: int, action: pb.Action) -> None:
        self.answered.add(seq)
        self.out.put(pb.PlayRequest(decision=pb.Decision(seq=seq, action=action)))

    def session(self, stub: pb_grpc.RefereeServiceStub, ticket: str) -> bool:
        """One stream; True once MatchEnd arrived."""
        version = "allfours.v0" if self.fault == "join" else "allfours.v1"
        hello = pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version=version, bot_name="broken",
                                              bot_version=self.fault or "ok"))
        self.out, self.answered = queue.Queue(), set()
        call = stub.Play(self._requests(self.out, hello))
        try:
            for resp in call:
                which = resp.WhichOneof("msg")
                if which == "welcome":
                    self.on_welcome(resp.welcome)
                elif which == "decision_request":
                    self.on_events(resp.decision_request.events)
                    self.on_request(resp.decision_request)
                elif which == "events":
                    self.on_events(resp.events.events)
                elif which == "action_rejected":
                    self.on_rejected(resp.action_rejected)
                elif which == "match_end":
                    if self.fault == "exit":
                        raise Quit(3)
                    return True
            return False
        finally:
            self.out.put(None)
            call.cancel()

    def on_welcome(self, w: pb.Welcome) -> None:
        if self.fault == "players-2" and w.players == 2:
            raise Quit(1)
        if self.fault == "players-4" and w.seat >= 2:
            raise Quit(1)
        if self.fault in RULE_DEFAULTS:
            name, default = RULE_DEFAULTS[self.fault]
            value = getattr(w.rules, name)
            if (value > default) if name == "target" else (value != default):
                raise Quit(1)

    def on_events(self, events: object) -> None:
        for ev in events:  # type: ignore[attr-defined]
            if self.fault == "unknown-messages" and ev.kind not in pb.EventKind.values():
                raise Quit(1)
            if self.fault == "pack-runs-dry" and ev.kind == pb.EVENT_KIND_DEAL_ENDED and ev.ran_dry:
                raise Quit(1)
            if ev.kind == pb.EVENT_KIND_GAME_ENDED:
                if self.fault == "kick-ends-game" and ev.game not in self.asked_in:
                    raise Quit(1)
                if self.fault == "multi-game" and ev.game in self.asked_in:
                    raise Quit(0)

    def on_request(self, req: pb.DecisionRequest) -> None:
        if req.seq in self.answered and self.fault != "resend":
            return
        self.requests += 1
        self.last = req
        self.asked_in.add(req.game)
        if self.fault == "deadline" and self.requests == 1 and req.time_left_ms <= 2000:
            time.sleep(2.3)
        action = req.legal_actions[0]
        if self.fault == "phases" and req.observation.phase == pb.PHASE_CALL and req.seq not in self.retried:
            action = pb.Action(kind=pb.ACTION_KIND_PLAY, card=req.observation.hand[0])
        seq = 0 if self.fault == "seq-echo" and action.kind == pb.ACTION_KIND_PLAY else req.seq
        self.send(seq, action)

    def on_rejected(self, r: pb.ActionRejected) -> None:
        req = self.last
        if self.fault == "retry" or req is None or r.seq != req.seq or req.seq in self.retried:
            return
        self.retried.add(req.seq)
        others = [a for a in req.legal_actions if a != r.action]
        if others:
            self.send(req.seq, others[0])


def play_match(referee: str, ticket: str, fault: str) -> int:
    """One match at ``referee`` with ``ticket``, reconnecting for up to 10 s; the exit status."""
    channel = grpc.insecure_channel(referee)
    stub = pb_grpc.RefereeServiceStub(channel)
    bot = Bot(fault)
    give_up = time.monotonic() + 10
    try:
        while time.monotonic() < give_up:
            try:
                if bot.session(stub, ticket):
                    return 0
            except grpc.RpcError:
                if fault == "resume":
                    return 1
            time.sleep(0.05)
        return 1
    finally:
        channel.close()


def work(fault: str) -> int:
    """Worker mode (``ALLFOURS_LOBBY`` set, no ticket): Register, then play each Assignment and send Ready;
    dial again every 0.5 s whenever the lobby stream ends (until killed)."""
    played = 0
    while True:
        played = lobby_session(fault, played)
        if fault == "lobby-redial-exit":
            print("broken: the lobby stream ended: leaving", file=sys.stderr, flush=True)
            return 1
        if fault == "lobby-redial":
            time.sleep(3600)  # alive, but never back: the suite waits its bounded time, then kills it
        time.sleep(0.01 if fault == "lobby-redial-hammer" else 0.5)


def lobby_session(fault: str, played: int) -> int:
    """One lobby stream, until it ends; the matches played in all (``played`` before it)."""
    out: queue.Queue[lpb.ConnectRequest | None] = queue.Queue()
    version = "allfours.v0" if fault == "lobby-register" else "allfours.v1"
    out.put(lpb.ConnectRequest(register=lpb.Register(token=os.environ.get("ALLFOURS_BOT_TOKEN", ""),
                                                     bot_name=os.environ.get("ALLFOURS_BOT_NAME", ""),
                                                     bot_version=fault or "ok", protocol_version=version)))

    def requests() -> Iterator[lpb.ConnectRequest]:
        while (m := out.get()) is not None:
            yield m

    with grpc.insecure_channel(os.environ["ALLFOURS_LOBBY"]) as channel:
        try:
            for resp in lpb_grpc.LobbyServiceStub(channel).Connect(requests()):
                if resp.WhichOneof("msg") != "assignment":
                    continue
                a = resp.assignment
                if fault == "lobby-ready-early":  # idle again before the seat is played
                    out.put(lpb.ConnectRequest(ready=lpb.Ready(match_id=a.match_id)))
                with contextlib.suppress(Quit):  # a worker leaves the match where a per-game bot exits
                    play_match(a.referee, a.ticket, fault)
                played += 1
                if not (fault == "lobby-ready" and played == 1):
                    out.put(lpb.ConnectRequest(ready=lpb.Ready(match_id=a.match_id)))
        except grpc.RpcError:
            pass
        finally:
            out.put(None)
    return played


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--break", dest="fault", default="")
    args = p.parse_args()
    hog = bytearray(b"\x01") * (300 << 20) if args.fault == "limits" else None
    try:
        if "ALLFOURS_LOBBY" in os.environ and "ALLFOURS_TICKET" not in os.environ:
            return work(args.fault)
        return play_match(os.environ["ALLFOURS_REFEREE"], os.environ["ALLFOURS_TICKET"], args.fault)
    except Quit as q:
        return q.status
    finally:
        del hog


if __name__ == "__main__":
    sys.exit(main())
