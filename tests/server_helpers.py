"""Helpers for the referee server tests: a real ``referee serve`` process, bot processes, the leak check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
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
               **tc: int) -> pb.CreateMatchResponse:
        req = pb.CreateMatchRequest(rules=pb.RuleSet(players=players),
                                    seat_names=[f"seat{i}" for i in range(players)], games=games, seed=seed,
                                    time_control=pb.TimeControl(**{**FAST, **tc}))
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


def start_referee(record_dir: Path) -> Iterator[RefereeProc]:
    """Start ``referee serve --port 0`` (a real process on 127.0.0.1) and stop it with SIGTERM."""
    env = {**os.environ, "ALLFOURS_ADMIN_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0",
                             "--record-dir", str(record_dir), "--grace", "1"],
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
    """One ``tests.bots.bot`` process per seat; each logs every message it receives."""
    procs = []
    for i, (t, k) in enumerate(zip(tickets, kinds, strict=True)):
        args = [sys.executable, "-m", "tests.bots.bot", "--target", address, "--ticket", t, "--kind", k,
                "--seed", str(i), "--log", str(log_dir / f"seat{i}.jsonl"), *(extra[i] if extra else ())]
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


def check_no_leak(log_dir: Path, players: int, record: Sequence[str]) -> int:
    """Every card a seat received is its own (as dealt), or was kicked, played or exposed before.

    Events may only name cards that the record shows kicked, or played/exposed by that seat.
    :returns: the number of card mentions checked.
    """
    hands, shown, kicks = replay_hands(record)
    checked = 0
    for seat in range(players):
        public: dict[tuple[int, int], set[str]] = {}
        for msg in messages(log_dir, seat):
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
