"""A minimal test bot speaking protocol allfours.v1 with plain grpc (no SDK), with fault modes.

``python -m tests.bots.bot --target HOST:PORT --ticket T --kind KIND [--log FILE] [--seed N]``

Kinds: ``random`` (a random legal action), ``first`` (the first legal action), ``slow`` (waits
``--delay-ms`` before answering), ``frozen`` (stops reading after Welcome), ``crash`` (exits with
status 3 at its ``--after``-th decision), ``garbage`` (answers with malformed actions),
``illegal`` (first tries an illegal card, then a legal one), ``illegal_forever`` (only illegal
cards), ``outofturn`` (once, from its ``--after``-th decision on, when it leads a trick it also plays
 another card with seq 0: out of turn),
``resume`` (drops the connection at its ``--after``-th decision and reconnects after
``--delay-ms``), ``duplicate`` (sends each answer twice and the seq of its own previous request).

Every message received is appended to ``--log`` as one JSON line (for the leak test). Exit status 0
after MatchEnd, 2 when the stream ends with an error status (printed as ``STATUS <code>``).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Iterator

import grpc
from google.protobuf.json_format import MessageToDict

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc


def _requests(q: queue.Queue[pb.PlayRequest | None]) -> Iterator[pb.PlayRequest]:
    while True:
        m = q.get()
        if m is None:
            return
        yield m


def _illegal_card(req: pb.DecisionRequest) -> str | None:
    legal = {a.card for a in req.legal_actions if a.kind == pb.ACTION_KIND_PLAY}
    hand = list(req.observation.hand)
    for c in hand:
        if c not in legal:
            return c
    # Not in hand at all (card_not_in_hand).
    for r in "AKQJT98765432":
        for s in "CDHS":
            if r + s not in hand:
                return r + s
    return None


def play(args: argparse.Namespace, log: list[str], resumed_once: list[bool]) -> int:
    channel = grpc.insecure_channel(args.target)
    stub = pb_grpc.RefereeServiceStub(channel)
    q: queue.Queue[pb.PlayRequest | None] = queue.Queue()
    q.put(pb.PlayRequest(hello=pb.Hello(ticket=args.ticket, protocol_version=args.protocol,
                                        bot_name=f"test-{args.kind}", bot_version="0")))
    rng = random.Random(args.seed)
    responses = stub.Play(_requests(q))
    decisions = 0
    previous_seq = 0
    try:
        for resp in responses:
            log.append(json.dumps(MessageToDict(resp)))
            which = resp.WhichOneof("msg")
            if which == "welcome" and args.kind == "frozen":
                time.sleep(3600)
            if which == "match_end":
                q.put(None)
                channel.close()
                return 0
            if which != "decision_request":
                continue
            req = resp.decision_request
            decisions += 1
            kind = args.kind
            if kind == "crash" and decisions >= args.after:
                sys.stdout.flush()
                os._exit(3)
            if kind == "resume" and decisions >= args.after and not resumed_once[0]:
                resumed_once[0] = True
                q.put(None)
                channel.close()
                time.sleep(args.delay_ms / 1000)
                return -1  # reconnect
            if kind == "slow":
                time.sleep(args.delay_ms / 1000)
            if kind == "garbage":
                q.put(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=pb.Action())))
                continue
            if kind in ("illegal", "illegal_forever") and req.observation.phase == pb.PHASE_PLAY:
                bad = _illegal_card(req)
                if bad is not None:
                    q.put(pb.PlayRequest(decision=pb.Decision(
                        seq=req.seq, action=pb.Action(kind=pb.ACTION_KIND_PLAY, card=bad))))
                    if kind == "illegal_forever":
                        continue
            if kind == "unheld_forever" and req.observation.phase == pb.PHASE_PLAY:
                # A card this seat does not hold (rejected card_not_in_hand: the engine's message names its hand).
                held = set(req.observation.hand)
                q.put(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=pb.Action(
                    kind=pb.ACTION_KIND_PLAY, card=next(c for c in ("AD", "KD", "QD", "JD", "TD") if c not in held)))))
                continue
            choice = req.legal_actions[0] if kind == "first" else rng.choice(list(req.legal_actions))
            q.put(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=choice)))
            if kind == "duplicate":
                q.put(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=choice)))
                if previous_seq:  # a stale seq of this seat's own (a seq sent to another seat is a protocol error)
                    q.put(pb.PlayRequest(decision=pb.Decision(seq=previous_seq, action=choice)))
                previous_seq = req.seq
            if (kind == "outofturn" and decisions >= args.after and not resumed_once[0]
                    and choice.kind == pb.ACTION_KIND_PLAY and not req.observation.trick):
                # Leading: the other seats play next, so this seq-0 play is surely out of turn.
                others = [c for c in req.observation.hand if c != choice.card]
                if others:
                    resumed_once[0] = True
                    q.put(pb.PlayRequest(decision=pb.Decision(
                        seq=0, action=pb.Action(kind=pb.ACTION_KIND_PLAY, card=others[0]))))
    except grpc.RpcError as e:
        print(f"STATUS {e.code().name} {e.details()}", flush=True)
        return 2
    return 1  # the stream ended without MatchEnd


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True)
    p.add_argument("--ticket", required=True)
    p.add_argument("--kind", default="random")
    p.add_argument("--log")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--after", type=int, default=3)
    p.add_argument("--protocol", default="allfours.v1")
    args = p.parse_args()
    log: list[str] = []
    resumed_once = [False]
    try:
        while True:
            rc = play(args, log, resumed_once)
            if rc != -1:
                return rc
    finally:
        if args.log:
            with open(args.log, "w", encoding="utf-8") as f:
                f.write("\n".join(log) + ("\n" if log else ""))


if __name__ == "__main__":
    threading.stack_size(1 << 20)
    sys.exit(main())
