"""Golden transcripts: the exact messages the real referee exchanges with scripted clients in a few
fixed matches (docs/bot-authors.md, Golden transcripts).

Each match has a fixed seed, first dealer, rules and time control, and clients that answer every
request with its first legal action (one of them, where the match says so, first sends a card it
does not hold, then answers, then repeats its answer). For every seat the transcript holds each
message in order, one per line, in protobuf text format: ``<- `` what the referee sent, ``-> `` what
the client sent. Five fields depend on the clock or on chance and are normalised: ``match_id``
becomes ``"MATCH_ID"``, the Hello's ``ticket`` ``"TICKET"``; ``time_left_ms`` (5000 or 4999, as the
referee's clock ticks), ``time_bank_ms`` and ``bank_left_ms`` become 0. Everything else is byte
for byte what went over the wire, so a change of the wire shows up as a diff.

Regenerate after an intended wire change (and read the diff)::

    python -m tests.golden --write

Check (what tests/test_golden_transcripts.py does)::

    python -m tests.golden --check
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import text_format

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.cli import configure_logging
from referee.server import ThreadedReferee

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
TOKEN = "golden-admin-token"


@dataclass(frozen=True)
class GoldenMatch:
    """A fixed match: ``seed`` (64 hex digits), ``rules``, ``games``, ``first_dealer``; ``fumbler``: the
    seat that, on its first card play, first sends a card it does not hold, and after the right answer
    sends that answer again (-1: nobody)."""

    name: str
    rules: dict[str, object]
    games: int
    first_dealer: int
    seed: str
    fumbler: int = -1
    time_control: dict[str, int] = field(default_factory=lambda: {"decision_ms": 5000, "bank_ms": 300_000})


MATCHES = [
    GoldenMatch("2p-target-7-one-game", {"players": 2, "target": 7}, 1, 0, "11" * 32, fumbler=1),
    GoldenMatch("4p-target-5-two-games-deal-in-ones", {"players": 4, "target": 5, "deal_in": pb.DEAL_IN_ONES}, 2, 3,
                "42" * 32),
]


def _line(direction: str, msg: pb.PlayRequest | pb.PlayResponse) -> str:
    return direction + text_format.MessageToString(msg, as_one_line=True)


def normalise(resp: pb.PlayResponse) -> pb.PlayResponse:
    """A copy of ``resp`` with the clock- and chance-dependent fields fixed (see the module docstring)."""
    out = pb.PlayResponse()
    out.CopyFrom(resp)
    which = out.WhichOneof("msg")
    if which == "welcome":
        out.welcome.match_id = "MATCH_ID"
    elif which == "decision_request":
        out.decision_request.time_left_ms = 0
        out.decision_request.time_bank_ms = 0
    elif which == "match_end":
        out.match_end.result.match_id = "MATCH_ID"
        for s in out.match_end.result.seats:
            s.bank_left_ms = 0
    return out


def _illegal_card(req: pb.DecisionRequest) -> str:
    hand = set(req.observation.hand)
    return next(r + s for s in "CDHS" for r in "23456789TJQKA" if r + s not in hand)


def _seat(address: str, ticket: str, seat: int, m: GoldenMatch, lines: list[str]) -> None:
    """Play one seat with the first legal action; write each message to ``lines``."""
    out: queue.Queue[pb.PlayRequest | None] = queue.Queue()

    def send(msg: pb.PlayRequest) -> None:
        shown = msg
        if msg.WhichOneof("msg") == "hello":
            shown = pb.PlayRequest()
            shown.CopyFrom(msg)
            shown.hello.ticket = "TICKET"
        lines.append(_line("-> ", shown))
        out.put(msg)

    def requests() -> Iterator[pb.PlayRequest]:
        while (msg := out.get()) is not None:
            yield msg

    fumbled = False
    with grpc.insecure_channel(address) as channel:
        send(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1", bot_name=f"golden-{seat}",
                                           bot_version="1")))
        for resp in pb_grpc.RefereeServiceStub(channel).Play(requests(), timeout=120):
            lines.append(_line("<- ", normalise(resp)))
            if resp.WhichOneof("msg") == "match_end":
                break
            if resp.WhichOneof("msg") != "decision_request":
                continue
            req = resp.decision_request
            answer = pb.Decision(seq=req.seq, action=req.legal_actions[0])
            fumble = seat == m.fumbler and not fumbled and req.observation.phase == pb.PHASE_PLAY
            if fumble:
                fumbled = True
                bad = pb.Action(kind=pb.ACTION_KIND_PLAY, card=_illegal_card(req))
                send(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=bad)))
                # The rejection arrives before any later request: the referee answers in order.
            send(pb.PlayRequest(decision=answer))
            if fumble:
                send(pb.PlayRequest(decision=answer))  # a duplicate: ignored by the referee
        out.put(None)


def transcript(m: GoldenMatch) -> str:
    """Play ``m`` on a fresh in-process referee and return its transcript (text, ends with a newline)."""
    with ThreadedReferee(grace_s=1.0, admin_token=TOKEN) as ref:
        with grpc.insecure_channel(ref.address) as channel:
            admin = pb_grpc.AdminServiceStub(channel)
            players = int(m.rules["players"])  # type: ignore[call-overload]
            created = admin.CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(**m.rules), seat_names=[f"seat{i}" for i in range(players)], games=m.games,
                seed=bytes.fromhex(m.seed), first_dealer=m.first_dealer,
                time_control=pb.TimeControl(**m.time_control)), metadata=(("authorization", f"Bearer {TOKEN}"),),
                timeout=10)
        per_seat: list[list[str]] = [[] for _ in range(players)]
        threads = [threading.Thread(target=_seat, args=(ref.address, created.tickets[s], s, m, per_seat[s]))
                   for s in range(players)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
    rules = text_format.MessageToString(pb.RuleSet(**m.rules), as_one_line=True)
    header = [f"# golden transcript {m.name}: rules {rules}, games {m.games}, first dealer {m.first_dealer}, "
              f"seed {m.seed}",
              "# regenerate: python -m tests.golden --write (docs/bot-authors.md, Golden transcripts)"]
    body = []
    for s, lines in enumerate(per_seat):
        body.append(f"## seat {s}")
        body.extend(lines)
    return "\n".join(header + body) + "\n"


def path_of(m: GoldenMatch) -> Path:
    return GOLDEN_DIR / f"{m.name}.txtpb"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.golden", description="write or check the golden transcripts")
    p.add_argument("--write", action="store_true", help="regenerate the files in tests/golden/")
    p.add_argument("--check", action="store_true", help="exit 1 if a file differs from the referee's transcript")
    args = p.parse_args(argv)
    configure_logging("error")  # the referee's logs are not part of a transcript
    bad = 0
    for m in MATCHES:
        text = transcript(m)
        path = path_of(m)
        if args.write:
            GOLDEN_DIR.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({len(text.splitlines())} lines)")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path}: differs from what the referee sends now", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
