"""Referee rulings checked on a bare Match (no gRPC) or an in-process server: fast and deterministic.

GetRecord refuses a match that is not over (the record holds every deck); a repeated exposure is not
recorded again; a seq sent to another seat is a protocol error; a seq-0 answer is recorded with the
request's seq; an answer that comes after the time bank ran out is not played; the one deadline
timer (re-armed lazily) still times out a stall and moves for a sooner deadline (the clock's rules
with explicit times: tests/test_clock.py); every seat gets every event in order, a game's end inside the next game's
first request for the seat asked first; working a forced action out ahead changes no message and
no record line.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.server import start_server
from tests.server_helpers import MD, TOKEN, MatchHarness


def run(main: Callable[[], Coroutine[Any, Any, None]], timeout: float = 30) -> None:
    asyncio.run(asyncio.wait_for(main(), timeout))


# ------------------------------------------------------------------ GetRecord hides a running match


def test_get_record_refuses_a_match_that_is_not_over() -> None:
    async def main() -> None:
        async with start_server(port=0, admin_token=TOKEN) as server, \
                grpc.aio.insecure_channel(server.address) as ch:
            admin = pb_grpc.AdminServiceStub(ch)
            created = await admin.CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(players=2), seat_names=["a", "b"],
                time_control=pb.TimeControl(decision_ms=60_000, join_ms=60_000)), metadata=MD)
            # Waiting for seats: refused.
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await admin.GetRecord(pb.GetRecordRequest(match_id=created.match_id), metadata=MD)
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "not over" in (e.value.details() or "")
            # Running (both seats joined, a decision pending, decks dealt): refused.
            calls = []
            for t in created.tickets:
                call = pb_grpc.RefereeServiceStub(ch).Play()
                await call.write(pb.PlayRequest(hello=pb.Hello(ticket=t, protocol_version="allfours.v1")))
                calls.append(call)
            for _ in range(200):
                listed = await admin.ListMatches(pb.ListMatchesRequest(), metadata=MD)
                if listed.matches[0].status == pb.MATCH_STATUS_RUNNING:
                    break
                await asyncio.sleep(0.01)
            assert server.registry.matches[created.match_id].pending is not None
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await admin.GetRecord(pb.GetRecordRequest(match_id=created.match_id), metadata=MD)
            assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            # An unknown id is still NOT_FOUND (the arena's token check relies on it).
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await admin.GetRecord(pb.GetRecordRequest(match_id="nope"), metadata=MD)
            assert e.value.code() == grpc.StatusCode.NOT_FOUND
            # Once over (aborted here), the whole record with the seed.
            server.registry.matches[created.match_id].abort("test over")
            await server.registry.matches[created.match_id].wait()
            rec = await admin.GetRecord(pb.GetRecordRequest(match_id=created.match_id), metadata=MD)
            assert rec.complete and rec.lines[-1].startswith('{"type":"seed"')
            for call in calls:
                call.cancel()

    run(main)


# ------------------------------------------------------------------ exposures


def test_repeating_an_exposure_is_not_recorded_again() -> None:
    async def main() -> None:
        h = MatchHarness(players=2)
        await h.start()
        h.advance_to_play()
        p = h.match.pending
        assert p is not None
        other = 1 - p.seat
        card = h.hand(other)[0]
        for _ in range(50):
            h.send(other, 0, h.play_card(card))
        exposures = [o for o in h.lines("action") if o["out_of_turn"]]
        assert len(exposures) == 1 and exposures[0]["action"] == card
        assert [e.kind for e in h.match.events].count(pb.EVENT_KIND_CARD_EXPOSED) == 1
        s = h.match.seats[other]
        assert s.protocol_errors == 0 and s.illegal == 0
        assert not [m for m in h.drain(other) if m.HasField("action_rejected")]
        assert h.match.pending is p  # nothing changed for the seat to act
        h.match.abort("done")
        await h.match.wait()

    run(main)


# ------------------------------------------------------------------ sequence numbers


def test_a_seq_sent_only_to_another_seat_is_a_protocol_error() -> None:
    async def main() -> None:
        h = MatchHarness(players=2)
        await h.start()
        owner: dict[int, int] = {}
        while True:
            p = h.match.pending
            assert p is not None
            owner[p.seq] = p.seat
            foreign = [seq for seq, seat in owner.items() if seat != p.seat and seq < p.seq]
            if foreign:
                break
            h.send(p.seat, p.seq, p.request.legal_actions[0])
        seat = p.seat
        # Its own answered seq: harmless.
        own = [seq for seq, s in owner.items() if s == seat and seq < p.seq]
        for seq in own:
            h.send(seat, seq, p.request.legal_actions[0])
        assert h.match.seats[seat].protocol_errors == 0
        h.drain(seat)
        # A seq that went to the other seat only: a protocol error, recorded, nothing applied.
        h.send(seat, foreign[0], p.request.legal_actions[0])
        assert h.match.seats[seat].protocol_errors == 1
        rejected = [m.action_rejected for m in h.drain(seat) if m.HasField("action_rejected")]
        assert len(rejected) == 1 and rejected[0].reason == pb.REASON_PROTOCOL_ERROR
        assert "never sent to it" in rejected[0].message
        assert h.lines("rejected")[-1]["reason"] == "protocol_error"
        assert h.match.pending is p
        h.match.abort("done")
        await h.match.wait()

    run(main)


def test_a_seq_0_answer_is_recorded_with_the_pending_seq() -> None:
    async def main() -> None:
        h = MatchHarness(players=2)
        await h.start()
        p = h.match.pending
        assert p is not None and p.seq == 1 and h.match._state.phase.value == "beg"
        # An illegal seq-0 answer: rejected, and the record names request 1.
        h.send(p.seat, 0, pb.Action(kind=pb.ACTION_KIND_GIVE_ONE))
        rej = h.lines("rejected")[-1]
        assert rej["seq"] == 1 and rej["reason"] == "wrong_phase"
        # The bot is told about the Decision it sent (seq 0).
        msgs = [m.action_rejected for m in h.drain(p.seat) if m.HasField("action_rejected")]
        assert msgs[-1].seq == 0
        h.send(p.seat, 0, pb.Action(kind=pb.ACTION_KIND_STAND))
        act = h.lines("action")[-1]
        assert act["seq"] == 1 and act["action"] == "stand" and not act["out_of_turn"]
        h.match.abort("done")
        await h.match.wait()

    run(main)


# ------------------------------------------------------------------ time bank


def test_an_answer_after_the_bank_ran_out_is_not_played() -> None:
    """The seat forfeits on its bank, and the late action is neither applied nor recorded (else a
    game-winning late answer would leave a 'forfeited' game that was played to the end)."""

    async def main() -> None:
        h = MatchHarness(players=2, bank_ms=5000, decision_ms=5000)
        await h.start()
        p = h.match.pending
        assert p is not None
        before = len(h.lines("action"))
        h.match.submit(p.seat, pb.PlayRequest(decision=pb.Decision(seq=p.seq, action=p.request.legal_actions[0])),
                       time.monotonic() + 6)
        r = await h.match.wait()
        assert r.status == pb.MATCH_STATUS_FORFEITED and r.seats[p.seat].termination == pb.TERMINATION_TIMEOUT
        assert len(h.lines("action")) == before
        from referee.verify import verify_lines

        assert verify_lines(h.match.record.lines).startswith("OK")

    run(main)


# ------------------------------------------------------------------ record directory


def test_create_match_says_when_the_record_file_cannot_be_written(tmp_path: Path) -> None:
    records = tmp_path / "records"

    async def main() -> None:
        async with start_server(port=0, admin_token=TOKEN, record_dir=records) as server, \
                grpc.aio.insecure_channel(server.address) as ch:
            assert records.is_dir()
            shutil.rmtree(records)
            admin = pb_grpc.AdminServiceStub(ch)
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await admin.CreateMatch(pb.CreateMatchRequest(rules=pb.RuleSet(players=2), seat_names=["a", "b"]),
                                        metadata=MD)
            assert e.value.code() == grpc.StatusCode.INTERNAL
            assert "cannot write the match record" in (e.value.details() or "")
            assert not server.registry.matches

    run(main)


def test_a_record_dir_that_is_a_file_is_refused_before_serving(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    server = start_server(port=0, admin_token=TOKEN, record_dir=f)
    with pytest.raises(ValueError, match="not a directory"):
        asyncio.run(server.start())


# ------------------------------------------------------------------ deadlines (one lazy timer)


def test_a_stall_after_quick_answers_times_out() -> None:
    """Quick answers keep the first deadline timer (it re-arms itself when it fires early,
    tests/test_clock.py); the stall that follows still times out, here on the one strike allowed."""

    async def main() -> None:
        h = MatchHarness(players=2, decision_ms=300, bank_ms=120_000, max_strikes=1)
        await h.start()
        for _ in range(6):
            p = h.match.pending
            assert p is not None
            h.send(p.seat, p.seq, p.request.legal_actions[0])
        p = h.match.pending
        assert p is not None
        r = await h.match.wait()  # the seat to act never answers
        assert r.seats[p.seat].termination == pb.TERMINATION_TIMEOUT and r.seats[p.seat].strikes == 1
        assert r.seats[1 - p.seat].strikes == 0

    run(main)


def test_a_deadline_sooner_than_the_armed_timer_moves_the_timer() -> None:
    """Seat B spends most of its bank (its answer is received 2.8 s after its request: an explicit
    time, no sleep), so its next deadline (its bank) comes before the timer armed for seat A's longer
    deadline: the timer moves to B's deadline (tests/test_clock.py has the rule's table), and B's empty
    bank forfeits B."""

    async def main() -> None:
        h = MatchHarness(players=2, decision_ms=3000, bank_ms=4000)
        await h.start()
        p = h.match.pending
        assert p is not None
        b = p.seat
        h.send(p.seat, p.seq, p.request.legal_actions[0], late_by=2.8)  # B's bank falls to 1.2 s
        while (p := h.match.pending) is not None and p.seat == b:
            h.send(p.seat, p.seq, p.request.legal_actions[0])
        while (p := h.match.pending) is not None and p.seat != b:
            h.send(p.seat, p.seq, p.request.legal_actions[0])
        assert p is not None
        bank_s = h.match.seats[b].clock.bank_ms / 1000
        assert bank_s <= 1.2 and p.deadline - p.sent_at == pytest.approx(bank_s)  # B's deadline: its bank left
        assert h.match._timer_due == p.deadline  # moved from A's (about 3 s after the start)
        r = await h.match.wait()  # B does not answer
        assert r.seats[b].termination == pb.TERMINATION_TIMEOUT, r
        assert "time bank" in r.seats[b].detail

    run(main, timeout=60)


# ------------------------------------------------------------------ events at the end of a game


@pytest.mark.parametrize("turns", [3, 0])
def test_every_seat_gets_every_event_in_order_and_game_ends_cost_no_extra_message(turns: int) -> None:
    """A 3-game match: each seat's events (inside its DecisionRequests and EventBatches) are exactly
    the match's events, in order. At each game end the seat asked first in the next game gets the
    ended game's events inside that request (one message), the other seat as an EventBatch right
    after. With ``turns`` 0 every answer comes before the loop turns, so before the batches go out:
    the events then ride in the next requests, still all of them and in order."""

    async def main() -> None:
        h = MatchHarness(players=2, games=3)
        await h.start()
        got: list[list[pb.PlayResponse]] = [[], []]
        while not h.match.finished:
            for seat in (0, 1):
                got[seat] += h.drain(seat)
            p = h.match.pending
            assert p is not None
            h.send(p.seat, p.seq, p.request.legal_actions[0])
            for _ in range(turns):  # as over the network: the loop turns between answers (deferred batches go out)
                await asyncio.sleep(0)
        await h.match.wait()
        for seat in (0, 1):
            got[seat] += h.drain(seat)
        for seat in (0, 1):
            seen: list[pb.Event] = []
            for m in got[seat]:
                if m.HasField("decision_request"):
                    seen += m.decision_request.events
                elif m.HasField("events"):
                    seen += m.events.events
            assert seen == h.match.events, seat
        game_ended = pb.EVENT_KIND_GAME_ENDED
        for seat in (0, 1):
            for i, m in enumerate(got[seat]):
                if m.HasField("decision_request") and any(e.kind == game_ended for e in m.decision_request.events):
                    # The first request of the next game carries the end of the last: no batch before it.
                    assert not got[seat][i - 1].HasField("events"), (seat, i)
        first_askers = {m.decision_request.observation.seat for seat in (0, 1) for m in got[seat]
                        if m.HasField("decision_request")
                        and any(e.kind == game_ended for e in m.decision_request.events)}
        assert first_askers, "no game end was delivered inside a request"
        batches = [m for seat in (0, 1) for m in got[seat] if m.HasField("events")]
        assert len(batches) >= (3 if turns else 1)  # the others' game ends (2) and the match end

    run(main)


# ------------------------------------------------------------------ a peer that stops reading


def test_a_write_blocked_for_the_write_timeout_ends_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer that stops reading blocks our writes (HTTP/2 flow control): after WRITE_TIMEOUT_S the
    watchdog ends that stream and the seat is detached (its grace period starts); nothing hangs."""
    from referee import server
    from referee.match import Match
    from referee.rules import RuleSet
    from referee.wire import TimeControl
    from tests.server_helpers import FAST

    monkeypatch.setattr(server, "WRITE_TIMEOUT_S", 0.3)

    class StuckPeer:
        """A servicer context whose peer sends Hello, then never reads: the 2nd write never ends."""

        def __init__(self) -> None:
            self.writes = 0
            self.reads = 0

        async def read(self) -> pb.PlayRequest:
            self.reads += 1
            if self.reads == 1:
                return pb.PlayRequest(hello=pb.Hello(ticket="t0", protocol_version="allfours.v1"))
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        async def write(self, msg: pb.PlayResponse) -> None:
            self.writes += 1
            if self.writes >= 2:
                await asyncio.Event().wait()

        def peer(self) -> str:
            return "stuck"

        async def abort(self, code: grpc.StatusCode, details: str) -> None:
            raise AssertionError(f"aborted: {code} {details}")

    async def main() -> None:
        m = Match("m", RuleSet(players=2), ["a", "b"], 1, bytes(32), 0, TimeControl(**FAST), ["t0", "t1"])
        reg = server.Registry()
        reg.tickets["t0"] = (m, 0)
        ctx = StuckPeer()
        play = asyncio.ensure_future(server.RefereeServicer(reg).Play(iter(()), ctx))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        m._send(0, pb.PlayResponse(pong=pb.Pong(nonce=1)))  # the write that never completes
        started = time.monotonic()
        await asyncio.wait_for(play, 60)  # bounded: a write that never completes must not hang the test
        took = time.monotonic() - started
        # The watchdog cannot fire before its 0.25 s; how much later it fires is the machine's load.
        assert ctx.writes == 2 and took >= 0.25, (ctx.writes, took)
        assert m.seats[0].conn is None and m.seats[0].joined  # detached: its grace period runs
        m.abort("done")

    run(main)


# ------------------------------------------------------------------ a failing disk


def test_a_record_file_that_cannot_be_written_loses_no_result(tmp_path: Path) -> None:
    """A full or failing disk under the record directory: the match plays to its end, every seat
    gets MatchEnd, the record in memory (GetRecord) is complete and verifies; the error is reported
    once and the file simply stops."""
    from referee.verify import verify_lines

    class FullDisk:
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    async def main() -> None:
        h = MatchHarness(players=2, games=2, record_path=tmp_path / "m.jsonl")
        await h.start()
        errors: list[OSError] = []
        h.match.record._on_file_error = errors.append
        h.match.record._file = FullDisk()  # type: ignore[assignment]
        while not h.match.finished:
            p = h.match.pending
            assert p is not None
            h.send(p.seat, p.seq, p.request.legal_actions[0])
            await asyncio.sleep(0)
        r = await asyncio.wait_for(h.match.wait(), 5)
        assert r.status == pb.MATCH_STATUS_COMPLETED
        for seat in (0, 1):
            assert any(m.HasField("match_end") for m in h.drain(seat)), seat
        assert len(errors) == 1 and errors[0].errno == 28
        assert h.match.record.file_error is errors[0]
        assert verify_lines(h.match.record.lines).startswith("OK")

    run(main)


# ------------------------------------------------------------------ work ahead changes nothing


def _timeless(msg: pb.PlayResponse) -> bytes:
    """``msg`` without the fields that depend on the clock (time left, banks), serialized."""
    m = pb.PlayResponse()
    m.CopyFrom(msg)
    if m.HasField("decision_request"):
        m.decision_request.time_left_ms = 0
        m.decision_request.time_bank_ms = 0
    if m.HasField("match_end"):
        for seat in m.match_end.result.seats:
            seat.bank_left_ms = 0
    return m.SerializeToString(deterministic=True)


def _timeless_line(line: str) -> str:
    obj = json.loads(line)
    if "ms" in obj:
        obj["ms"] = 0
    for seat in obj.get("seats", []):
        seat["bank_left_ms"] = 0
    return json.dumps(obj)


@pytest.mark.parametrize("players", [2, 4])
def test_working_forced_actions_out_ahead_changes_no_message_and_no_record_line(players: int) -> None:
    """The same 3-game match, with cards exposed out of turn now and then, played with and without
    work ahead (Match._work_ahead: a forced action's step, next game, next deal and next request
    worked out while the seat answers): every seat receives the same messages and the record has the
    same lines (clock fields aside), and with it on, work done ahead is used — at deal and game
    boundaries included."""
    async def play(work_ahead: bool) -> tuple[list[list[bytes]], list[str], int]:
        h = MatchHarness(players=players, games=3, work_ahead=work_ahead, decision_ms=60_000)
        await h.start()
        m = h.match
        got: list[list[bytes]] = [[] for _ in range(players)]
        n = 0
        while not m.finished:
            for seat in range(players):
                got[seat] += [_timeless(x) for x in h.drain(seat)]
            p = m.pending
            assert p is not None
            n += 1
            other = (p.seat + 1) % players
            if n % 7 == 0 and h.hand(other):
                h.send(other, 0, h.play_card(h.hand(other)[-1]))  # out of turn: an exposure (or a rejection)
            else:
                h.send(p.seat, p.seq, p.request.legal_actions[0])
            for _ in range(3):  # the deferred work (record lines, deck shuffles, work ahead) runs
                await asyncio.sleep(0)
        for seat in range(players):
            got[seat] += [_timeless(x) for x in h.drain(seat)]
        return got, [_timeless_line(x) for x in m.record.lines], m.worked_ahead

    async def main() -> None:
        plain = await play(False)
        ahead = await play(True)
        assert plain[2] == 0
        assert ahead[2] >= 30  # steps, deals, games and requests taken from the work done ahead
        assert sum(1 for line in plain[1] if '"type": "game_end"' in line) == 3
        assert sum(1 for line in plain[1] if '"out_of_turn": true' in line) >= 3
        assert ahead[1] == plain[1]
        assert ahead[0] == plain[0]

    run(main, timeout=60)
