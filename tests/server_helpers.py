"""Helpers for the referee server tests: a real ``referee serve`` process, bot processes, the leak check."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.record import read_record
from referee.rules import Phase, RuleSet, apply, deal, new_game, parse_action
from referee.rules.cards import parse_deck

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-admin-token"
MD = (("authorization", f"Bearer {TOKEN}"),)
#: Short time control for tests (ms).
FAST = {"decision_ms": 1500, "grace_ms": 500, "join_ms": 30_000, "bank_ms": 120_000}


@dataclass
class RefereeProc:
    """A ``referee serve --port 0`` subprocess and an admin stub on a real channel."""

    proc: subprocess.Popen[str]
    port: int
    channel: grpc.Channel = field(init=False)
    admin: pb_grpc.AdminServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)
        self.admin = pb_grpc.AdminServiceStub(self.channel)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def create(self, players: int = 4, games: int = 1, seed: bytes = b"", first_dealer: int | None = None,
               blind: bool = False, **tc: int) -> pb.CreateMatchResponse:
        req = pb.CreateMatchRequest(rules=pb.RuleSet(players=players),
                                    seat_names=[f"seat{i}" for i in range(players)], games=games, seed=seed,
                                    time_control=pb.TimeControl(**{**FAST, **tc}), blind=blind)
        if first_dealer is not None:
            req.first_dealer = first_dealer
        return self.admin.CreateMatch(req, metadata=MD, timeout=10)

    def result(self, match_id: str, timeout: float = 60) -> tuple[pb.MatchResult, list[pb.Event]]:
        events: list[pb.Event] = []
        for m in self.admin.WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=MD, timeout=timeout):
            if m.HasField("result"):
                return m.result, events
            events.append(m.event)
        raise AssertionError("WatchMatch ended without a result")

    def record(self, match_id: str) -> list[str]:
        r = self.admin.GetRecord(pb.GetRecordRequest(match_id=match_id), metadata=MD, timeout=10)
        assert r.complete
        return list(r.lines)


def start_referee(record_dir: Path, *options: str) -> Iterator[RefereeProc]:
    """Start ``referee serve --port 0 [options]`` (a real process on 127.0.0.1) and stop it with SIGTERM."""
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0",
                             "--record-dir", str(record_dir), "--grace", "1", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), f"referee did not print its port: {line!r}"
    ref = RefereeProc(proc, int(line.split()[1]))
    try:
        yield ref
    finally:
        ref.channel.close()
        proc.terminate()
        proc.wait(15)


def launch_bots(address: str, tickets: Sequence[str], kinds: Sequence[str], log_dir: Path,
                extra: Sequence[Sequence[str]] | None = None) -> list[subprocess.Popen[str]]:
    """One ``arena.testing.instant_bot`` process per seat, of the fault mode ``kinds[i]`` (its one-off faults
    after 2 answers unless ``extra`` says otherwise); each logs every message it receives."""
    procs = []
    for i, (t, k) in enumerate(zip(tickets, kinds, strict=True)):
        args = [sys.executable, "-m", "arena.testing.instant_bot", "--referee", address, "--ticket", t, "--mode", k,
                "--after", "2", "--seed", str(i), "--log", str(log_dir / f"seat{i}.jsonl"),
                *(extra[i] if extra else ())]
        out = (log_dir / f"seat{i}.out").open("w")
        procs.append(subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True,
                                      env={**os.environ, "PYTHONPATH": str(ROOT)}))
        out.close()
    return procs


def finish(procs: Sequence[subprocess.Popen[str]], timeout: float = 30) -> list[int | None]:
    """Wait for bot processes; kill any still running (a frozen bot); return exit codes (None = killed)."""
    codes: list[int | None] = []
    for p in procs:
        try:
            codes.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes.append(None)
    return codes


def messages(log_dir: Path, seat: int) -> list[dict[str, Any]]:
    """The messages seat ``seat`` received (MessageToDict form, camelCase keys)."""
    text = (log_dir / f"seat{seat}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def events_in(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """The public events a received message carries (an EventBatch, or a DecisionRequest's events)."""
    if "events" in msg:
        return list(msg["events"].get("events", []))
    if "decisionRequest" in msg:
        return list(msg["decisionRequest"].get("events", []))
    return []


def replay_hands(lines: Sequence[str]) -> tuple[dict[tuple[int, int], tuple[frozenset[str], ...]],
                                                  dict[tuple[int, int], set[tuple[int, str]]],
                                                  dict[tuple[int, int], set[str]]]:
    """From a record: the hands dealt per (game, deal) and seat, the (seat, card) plays/exposures and
    the kicks per (game, deal) (ground truth for the leak check)."""
    items = [o for _, o in read_record(lines)]
    rules = RuleSet.from_dict(items[0]["rules"])
    hands: dict[tuple[int, int], tuple[frozenset[str], ...]] = {}
    shown: dict[tuple[int, int], set[tuple[int, str]]] = {}
    kicks: dict[tuple[int, int], set[str]] = {}
    state = None
    game = 0

    def harvest() -> None:
        if state is None:
            return
        for d, rec in enumerate(state.deals, start=1):
            hands[(game, d)] = tuple(frozenset(str(c) for c in h) for h in rec.hands)
            kicks[(game, d)] = {str(c) for c in rec.kicks}

    for o in items[1:]:
        if o["type"] == "game":
            harvest()
            game = o["game"]
            state = new_game(rules, o["dealer"])
        elif o["type"] == "deal":
            assert state is not None and state.phase is Phase.DEAL
            state = deal(state, parse_deck(o["deck"]))
        elif o["type"] == "action":
            assert state is not None
            a = parse_action(o["action"])
            state = apply(state, a, o["seat"])
            if o["action"][:1].isalnum() and len(o["action"]) == 2:
                shown.setdefault((game, o["deal"]), set()).add((o["seat"], o["action"].upper()))
    harvest()
    return hands, shown, kicks


#: Card notation inside free text (a rejection's message, a forfeit's detail).
CARD_IN_TEXT = re.compile(r"\b(?:10|[2-9TJQKA])[CDHS]\b")


def check_no_card_in_result(result: dict[str, Any] | pb.MatchResult, who: str) -> None:
    """A MatchResult (a seat's MatchEnd, or WatchMatch's result) goes to every seat: its details name no card."""
    seats = result.get("seats", []) if isinstance(result, dict) else [{"detail": s.detail} for s in result.seats]
    for s in seats:
        cards = CARD_IN_TEXT.findall(s.get("detail", ""))
        assert not cards, f"{who} was sent the cards {cards} in a seat's detail: {s.get('detail')!r}"


def check_no_leak(log_dir: Path, players: int, record: Sequence[str]) -> int:
    """Every card a seat received is its own (as dealt), or was kicked, played or exposed before.

    Events may only name cards that the record shows kicked, or played/exposed by that seat. A
    rejection's message may name the seat's own cards, public ones and the card it sent; a MatchEnd
    names no card at all (its details go to every seat, the forfeiting seat's partner included).
    :returns: the number of card mentions checked.
    """
    hands, shown, kicks = replay_hands(record)
    checked = 0
    for seat in range(players):
        if not (log_dir / f"seat{seat}.jsonl").exists():
            continue  # a bot killed before it logged anything (a frozen one)
        public: dict[tuple[int, int], set[str]] = {}
        key = (0, 0)  # the game and deal of the last message that named them
        for msg in messages(log_dir, seat):
            if "actionRejected" in msg:
                rej = msg["actionRejected"]
                own = hands[key][seat] if key in hands else frozenset()
                sent = {rej.get("action", {}).get("card", "").upper()}
                for c in CARD_IN_TEXT.findall(rej.get("message", "")):
                    assert c in own | public.get(key, set()) | sent, \
                        f"seat {seat} was told of {c} in a rejection, which it may not see: {rej['message']!r}"
                    checked += 1
            if "matchEnd" in msg:
                check_no_card_in_result(msg["matchEnd"].get("result", {}), f"seat {seat}")
                checked += 1
            for ev in events_in(msg):
                key = (ev.get("game", 0), ev.get("deal", 0))
                pub = public.setdefault(key, set())
                kind = ev.get("kind")
                card = ev.get("card")
                if kind == "EVENT_KIND_KICK":
                    assert card in kicks[key], f"seat {seat} told of kick {card} not in the record"
                    pub.add(card)
                elif kind in ("EVENT_KIND_CARD_PLAYED", "EVENT_KIND_CARD_EXPOSED"):
                    assert (ev.get("seat", 0), card) in shown.get(key, set()), f"event {ev} not in the record"
                    pub.add(card)
                elif kind == "EVENT_KIND_CALLED":
                    assert card in pub, f"seat {seat}: called card {card} was never exposed"
                for c in ev.get("cards", []):
                    assert c in pub, f"seat {seat}: trick card {c} was never played"
                checked += 1 + len(ev.get("cards", []))
            if "decisionRequest" in msg:
                req = msg["decisionRequest"]
                obs = req["observation"]
                key = (req.get("game", 0), obs.get("dealNumber", 0))
                own = set(obs.get("hand", []))
                assert own <= hands[key][seat], f"seat {seat} was sent a hand it was not dealt: {own}"
                visible = own | public.get(key, set())
                mentioned = [*obs.get("kicks", []), *obs.get("trick", []),
                             *(c for t in obs.get("tricks", []) for c in t.get("cards", [])),
                             *(e["card"] for e in obs.get("exposed", [])),
                             *([obs["called"]] if obs.get("called") else []),
                             *(a["card"] for a in req.get("legalActions", []) if a.get("card"))]
                for c in mentioned:
                    assert c in visible, f"seat {seat} was sent {c}, which it may not see (game/deal {key})"
                checked += len(own) + len(mentioned)
    return checked


# --------------------------------------------------------------------------- in-process helpers
# Fast, deterministic matches without subprocesses: a real in-process gRPC referee
# (``referee.server.start_server``) with scripted asyncio seats, and a bare ``Match`` driven directly.

#: A seat's policy: given a DecisionRequest, the messages to send (usually one Decision).
Policy = Callable[[pb.DecisionRequest], list[pb.PlayRequest]]


def decision(seq: int, action: pb.Action) -> pb.PlayRequest:
    """A ``PlayRequest`` holding ``Decision{seq, action}``."""
    return pb.PlayRequest(decision=pb.Decision(seq=seq, action=action))


def last_legal(req: pb.DecisionRequest) -> list[pb.PlayRequest]:
    """Answer with the *last* legal action (so a ``by: timeout`` claim on it is false: the default is the first)."""
    return [decision(req.seq, req.legal_actions[-1])]


def garbage_after(n: int) -> Policy:
    """Answer with the last legal action ``n`` times, then with malformed actions (no kind)."""
    count = [0]

    def policy(req: pb.DecisionRequest) -> list[pb.PlayRequest]:
        count[0] += 1
        if count[0] > n:
            return [decision(req.seq, pb.Action())]
        return last_legal(req)

    return policy


async def _aio_seat(address: str, ticket: str, policy: Policy, name: str) -> pb.MatchResult:
    async with grpc.aio.insecure_channel(address) as ch:
        call = pb_grpc.RefereeServiceStub(ch).Play()
        await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1",
                                                       bot_name=name, bot_version="1")))
        async for resp in call:
            if resp.HasField("decision_request"):
                for msg in policy(resp.decision_request):
                    await call.write(msg)
            elif resp.HasField("match_end"):
                await call.done_writing()
                return resp.match_end.result
    raise AssertionError("stream ended without MatchEnd")


def play_in_process(policies: Sequence[Policy | None], games: int = 1, seed: bytes = bytes(range(32)),
                    first_dealer: int | None = 0, **tc: int) -> tuple[pb.MatchResult, list[str]]:
    """Play one match on an in-process referee; ``None`` in ``policies`` = a seat that never joins.

    :returns: the result and the record lines (from ``Admin.GetRecord`` once the match is over).
    """
    from referee.server import start_server

    async def main() -> tuple[pb.MatchResult, list[str]]:
        async with start_server(port=0, admin_token=TOKEN) as server, \
                grpc.aio.insecure_channel(server.address) as ch:
            admin = pb_grpc.AdminServiceStub(ch)
            players = len(policies)
            req = pb.CreateMatchRequest(rules=pb.RuleSet(players=players), seat_names=[f"s{i}" for i in range(players)],
                                        games=games, seed=seed, time_control=pb.TimeControl(**{**FAST, **tc}))
            if first_dealer is not None:
                req.first_dealer = first_dealer
            created = await admin.CreateMatch(req, metadata=MD)
            seats = [asyncio.create_task(_aio_seat(server.address, t, p, f"bot{i}"))
                     for i, (t, p) in enumerate(zip(created.tickets, policies, strict=True)) if p is not None]
            result = None
            async for m in admin.WatchMatch(pb.WatchMatchRequest(match_id=created.match_id), metadata=MD):
                if m.HasField("result"):
                    result = m.result
            await asyncio.gather(*seats)
            rec = await admin.GetRecord(pb.GetRecordRequest(match_id=created.match_id), metadata=MD)
            assert result is not None and rec.complete
            return result, list(rec.lines)

    return asyncio.run(asyncio.wait_for(main(), 120))


class MatchHarness:
    """A bare :class:`referee.match.Match` on the running event loop, every seat attached through a
    plain :class:`referee.match.Connection` (no gRPC): what the referee sends lands in ``conn.out``."""

    def __init__(self, players: int = 2, games: int = 1, seed: bytes = bytes(range(32)), first_dealer: int = 0,
                 record_path: Path | None = None, work_ahead: bool = True, **tc: int) -> None:
        from referee.match import Connection, Match
        from referee.wire import TimeControl

        self.match = Match("harness", RuleSet(players=players), [f"s{i}" for i in range(players)], games, seed,
                           first_dealer, TimeControl(**{**FAST, **tc}), [f"t{i}" for i in range(players)],
                           record_path=record_path, work_ahead=work_ahead)
        self.conns = [Connection() for _ in range(players)]

    async def start(self) -> None:
        """Start the match and join every seat; returns once the first request is out."""
        self.match.start()
        for seat, conn in enumerate(self.conns):
            self.match.attach(seat, conn, pb.Hello(ticket=f"t{seat}", protocol_version="allfours.v1",
                                                   bot_name=f"bot{seat}"))
        for _ in range(20):
            await asyncio.sleep(0)
            if self.match.pending is not None:
                return
        raise AssertionError("the match did not issue a request")

    def drain(self, seat: int) -> list[pb.PlayResponse]:
        """Everything sent to ``seat`` so far (and not yet drained)."""
        out = []
        q = self.conns[seat].out
        while not q.empty():
            msg = q.get_nowait()
            if msg is not None:
                out.append(msg)
        return out

    def send(self, seat: int, seq: int, action: pb.Action, late_by: float = 0.0) -> None:
        """``seat`` sends ``Decision{seq, action}`` (handled at once: the match is running), received
        now or, for the clock's rulings, ``late_by`` seconds later (no sleep)."""
        from referee.clock import Instant
        from referee.match import now

        self.match.submit(seat, decision(seq, action), Instant(now() + late_by))

    def play_card(self, card: str) -> pb.Action:
        """An ``Action`` playing ``card``."""
        return pb.Action(kind=pb.ACTION_KIND_PLAY, card=card)

    def hand(self, seat: int) -> list[str]:
        """``seat``'s hand now (from the engine state)."""
        return [str(c) for c in self.match._state.hands[seat]]

    def lines(self, type_: str | None = None) -> list[dict[str, Any]]:
        """The record lines so far, parsed (only those of ``type_`` if given)."""
        return [o for _, o in read_record(self.match.record.lines) if type_ is None or o["type"] == type_]

    def advance_to_play(self) -> None:
        """Answer the pending request with its first legal action until the PLAY phase (answered
        with the pending seq)."""
        while self.match.pending is not None and self.match._state.phase is not Phase.PLAY:
            p = self.match.pending
            self.send(p.seat, p.seq, p.request.legal_actions[0])
