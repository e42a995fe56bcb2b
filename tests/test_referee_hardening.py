"""Issue 9 (referee): what outside trials broke, each against a real ``referee serve`` process over
real sockets: private record files, hostile bytes and text, a seat that never reads, forfeits that
must not show a hidden hand."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from tests.server_helpers import MD, ROOT, RefereeProc, decision, finish, launch_bots, start_referee

pytestmark = pytest.mark.slow


def test_record_dir_and_files_are_private_under_a_permissive_umask(tmp_path: Path) -> None:
    """item 6: ``--record-dir`` is created 0700 and each record file 0600, whatever the umask."""
    records = tmp_path / "new" / "records"
    old = os.umask(0o022)
    try:
        gen = start_referee(records)
        ref = next(gen)
    finally:
        os.umask(old)
    try:
        created = ref.create(players=2, join_ms=200)
        result, _ = ref.result(created.match_id)
        assert result.status == pb.MATCH_STATUS_FORFEITED  # nobody joined: a no-show, the record is whole
        path = records / f"{created.match_id}.jsonl"
        assert path.read_text().count("\n") >= 3
        assert stat.S_IMODE(records.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        gen.close()


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProc]:
    yield from start_referee(tmp_path_factory.mktemp("records"))


def raw_play(ref: RefereeProc) -> grpc.StreamStreamMultiCallable:
    """The Play method on a channel that sends raw bytes (a client written without the SDK)."""
    return ref.channel.stream_stream("/allfours.v1.RefereeService/Play", request_serializer=lambda b: b,
                                     response_deserializer=pb.PlayResponse.FromString)


def hello_bytes(ticket: str) -> bytes:
    return pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1", bot_name="raw")) \
        .SerializeToString()


#: Bytes that are not a PlayRequest: a truncated length-delimited field, and a Hello whose ticket is not UTF-8.
GARBAGE = [b"\x0a\xff\x01", b"\x0a\x04\x0a\x02\xff\xfe"]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_undecodable_first_message_is_invalid_argument_in_one_short_line(referee: RefereeProc,
                                                                         garbage: bytes) -> None:
    """item 4: as the first message, INVALID_ARGUMENT with a short message (not UNKNOWN and a Python text)."""
    with pytest.raises(grpc.RpcError) as e:
        list(raw_play(referee)(iter([garbage]), timeout=10))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value
    detail = e.value.details() or ""
    assert "not a PlayRequest" in detail and len(detail) < 120 and "\n" not in detail, detail
    assert "Error" not in detail and "Traceback" not in detail


def test_a_first_message_of_the_wrong_kind_is_named_in_one_line(referee: RefereeProc) -> None:
    """The exact refusals of referee.streams.first_message (shared with the lobby): the kind sent is named."""
    ping = pb.PlayRequest(ping=pb.Ping()).SerializeToString()
    with pytest.raises(grpc.RpcError) as e:
        list(raw_play(referee)(iter([ping]), timeout=10))
    assert (e.value.code(), e.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                   "the first message must be a Hello, got ping")
    with pytest.raises(grpc.RpcError) as e:
        list(raw_play(referee)(iter([GARBAGE[0]]), timeout=10))
    assert e.value.details() == "the first message is not a PlayRequest (3 bytes that do not decode as " \
                                "allfours.v1.PlayRequest)"
    assert list(raw_play(referee)(iter([]), timeout=10)) == []  # a stream closed at once is a plain end


def test_an_empty_first_message_is_named_as_such_not_as_a_python_none(referee: RefereeProc) -> None:
    """A client in another language that sends a PlayRequest with no field of ``msg`` set (0 bytes on the
    wire: e.g. a oneof it forgot to fill) is told so in words it can act on, not ``got None``."""
    with pytest.raises(grpc.RpcError) as e:
        list(raw_play(referee)(iter([b""]), timeout=10))
    assert (e.value.code(), e.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "the first message must be a Hello, got an empty PlayRequest (no field of its oneof msg set)")


def test_undecodable_bytes_after_hello_are_protocol_errors_that_forfeit(referee: RefereeProc) -> None:
    """item 4: after a valid Hello each undecodable message is a protocol error (ActionRejected, counted);
    ``max_protocol_errors`` of them forfeit with ``protocol_error``, not a silent disconnect."""
    created = referee.create(players=2, max_protocol_errors=2, join_ms=20_000)
    sent: queue.Queue[bytes | None] = queue.Queue()
    sent.put(hello_bytes(created.tickets[1]))

    def requests() -> Iterator[bytes]:
        while (item := sent.get(timeout=15)) is not None:
            yield item

    got: list[pb.PlayResponse] = []
    call = raw_play(referee)(requests(), timeout=30)
    for resp in call:
        got.append(resp)
        if resp.HasField("welcome"):
            sent.put(GARBAGE[0])
        elif resp.HasField("action_rejected"):
            sent.put(GARBAGE[1])
        elif resp.HasField("match_end"):
            sent.put(None)
    assert call.code() == grpc.StatusCode.OK
    rejected = [r.action_rejected for r in got if r.HasField("action_rejected")]
    assert [r.reason for r in rejected] == [pb.REASON_PROTOCOL_ERROR] * 2
    assert all("not a PlayRequest" in r.message and len(r.message) < 120 for r in rejected)
    result = got[-1].match_end.result
    assert result.status == pb.MATCH_STATUS_FORFEITED and result.forfeited_side == 1
    assert result.seats[1].termination == pb.TERMINATION_PROTOCOL_ERROR
    assert result.seats[1].protocol_errors == 2


def scripted_seat(ref: RefereeProc, hello: pb.Hello,
                  answer: Callable[[pb.PlayResponse], list[pb.PlayRequest]]) -> list[pb.PlayResponse]:
    """A seat played by this test over a real stream: Hello, then ``answer(message)`` for each message
    received, until MatchEnd. Returns everything received."""
    sent: queue.Queue[pb.PlayRequest | None] = queue.Queue()
    sent.put(pb.PlayRequest(hello=hello))

    def requests() -> Iterator[pb.PlayRequest]:
        while (item := sent.get(timeout=30)) is not None:
            yield item

    got: list[pb.PlayResponse] = []
    for resp in pb_grpc.RefereeServiceStub(ref.channel).Play(requests(), timeout=60):
        got.append(resp)
        for msg in answer(resp):
            sent.put(msg)
        if resp.HasField("match_end"):
            sent.put(None)
    return got


def test_bot_text_is_cut_and_plain_everywhere_it_is_echoed_or_recorded(referee: RefereeProc,
                                                                       tmp_path: Path) -> None:
    """item 5: a 60 KB "card" with terminal escapes and a 60 KB bot name come back short and plain:
    in the rejection, the echoed action, the record, and the MatchEnd every seat gets."""
    created = referee.create(players=2, max_protocol_errors=2)
    procs = launch_bots(referee.address, created.tickets[:1], ["random"], tmp_path)
    card = "\x1b[2J\u202e" + "X" * 60_000
    name = "\x1b]0;pwned\x07\nbot" + "N" * 60_000

    def answer(resp: pb.PlayResponse) -> list[pb.PlayRequest]:
        if resp.HasField("decision_request"):
            return [decision(resp.decision_request.seq, pb.Action(kind=pb.ACTION_KIND_PLAY, card=card))]
        return []

    got = scripted_seat(referee, pb.Hello(ticket=created.tickets[1], protocol_version="allfours.v1",
                                          bot_name=name, bot_version="v\r\n" * 100), answer)
    assert finish(procs) == [0]
    rejected = [r.action_rejected for r in got if r.HasField("action_rejected")]
    assert len(rejected) == 2
    for r in rejected:
        assert len(r.message) < 150 and r.message.isprintable() and "XXXXXXXXXXXXXXXXXXXXXXXXX" not in r.message
        assert "(60005 chars)" in r.message
        assert r.action.card.isprintable() and len(r.action.card) <= 8
    end = got[-1].match_end.result
    assert end.seats[1].termination == pb.TERMINATION_PROTOCOL_ERROR
    assert end.seats[1].detail == "2 malformed messages (last: seat 1 sent a malformed action)"
    lines = referee.record(created.match_id)
    assert max(len(x) for x in lines) < 2_000
    seat = next(json.loads(x) for x in lines if '"type":"result"' in x)["seats"][1]
    assert seat["bot_name"].isprintable() and len(seat["bot_name"]) <= 64 and seat["bot_name"].startswith("]0;pwnedbot")
    assert seat["bot_version"].isprintable() and len(seat["bot_version"]) <= 64


def rss_kib(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def test_a_seat_that_pings_and_never_reads_grows_the_referee_by_a_small_bound(referee: RefereeProc) -> None:
    """item 3: a real client process sends Pings as fast as it can for 6 s and never reads. The referee
    answers at most a few pings a second and queues a bounded number of messages per stream, so its
    memory grows by a few MiB at most (before the bound: 13-28 MiB for 24,000-76,000 pings here, and
    hundreds of MiB from a faster client)."""
    created = referee.create(players=2, join_ms=30_000)
    before = rss_kib(referee.proc.pid)
    pinger = subprocess.Popen([sys.executable, "-m", "tests.bots.pinger", "--target", referee.address,
                               "--ticket", created.tickets[1], "--seconds", "6"], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = before
    deadline = time.monotonic() + 30
    while pinger.poll() is None and time.monotonic() < deadline:
        peak = max(peak, rss_kib(referee.proc.pid))
        time.sleep(0.1)
    out, _ = pinger.communicate(timeout=30)
    sent = int(out.strip())
    assert sent > 20_000, f"the pinger sent only {sent} pings: not a flood"
    growth_mib = (peak - before) / 1024
    assert growth_mib < 4, f"the referee grew by {growth_mib:.0f} MiB for {sent} pings never read"


def test_pings_over_the_rate_or_to_a_peer_that_does_not_read_get_no_pong() -> None:
    """item 3: a Connection answers at most PING_BURST pings at once and PING_RATE a second after,
    and none while PONG_QUEUE_LIMIT messages wait for the stream."""
    from referee.match import PING_BURST, PING_RATE, PONG_QUEUE_LIMIT, Connection

    async def main() -> None:
        conn = Connection()
        assert sum(conn.answer_ping(100.0) for _ in range(10 * PING_BURST)) == PING_BURST
        assert sum(conn.answer_ping(101.0) for _ in range(10 * PING_BURST)) == PING_RATE
        assert conn.pings_dropped == 20 * PING_BURST - PING_BURST - PING_RATE
        for _ in range(PONG_QUEUE_LIMIT):
            conn.out.put_nowait(pb.PlayResponse())
        assert not conn.answer_ping(200.0)  # tokens enough, but the peer is not reading

    asyncio.run(main())


def test_a_full_outbox_drops_and_reports_once_but_always_takes_close() -> None:
    """item 3: the outgoing queue is bounded; the first message over the bound calls on_overflow (the
    server ends the stream), later ones are dropped too; CLOSE still gets in."""
    from referee.match import CLOSE, Outbox

    async def main() -> None:
        box = Outbox(limit=3)
        calls: list[int] = []
        box.on_overflow = lambda: calls.append(box.qsize())
        for i in range(10):
            box.put_nowait(pb.PlayResponse(pong=pb.Pong(nonce=i)))
        box.put_nowait(CLOSE)
        assert calls == [3] and box.overflowed
        got = [box.get_nowait() for _ in range(box.qsize())]
        assert [m.pong.nonce if m is not None else None for m in got] == [0, 1, 2, None]

    asyncio.run(main())


def test_a_stream_whose_outbox_overflows_is_ended_and_the_seat_disconnected() -> None:
    """item 3: when MAX_QUEUED messages wait for a peer that does not read, the referee ends that
    stream (the seat is disconnected and may come back within grace_ms) instead of queueing on."""
    from referee.match import MAX_QUEUED
    from referee.server import start_server
    from tests.server_helpers import FAST, MD, TOKEN

    async def main() -> None:
        async with start_server(port=0, admin_token=TOKEN) as server, \
                grpc.aio.insecure_channel(server.address, options=[("grpc.http2.bdp_probe", 0)]) as ch:
            created = await pb_grpc.AdminServiceStub(ch).CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(players=2), seat_names=["a", "b"], time_control=pb.TimeControl(**FAST)),
                metadata=MD)
            call = pb_grpc.RefereeServiceStub(ch).Play()
            await call.write(pb.PlayRequest(hello=pb.Hello(ticket=created.tickets[1], protocol_version="allfours.v1")))
            match = server.registry.matches[created.match_id]
            for _ in range(100):
                if match.seats[1].conn is not None:
                    break
                await asyncio.sleep(0.01)
            conn = match.seats[1].conn
            assert conn is not None
            big = pb.PlayResponse(pong=pb.Pong(nonce=2**63))
            for _ in range(MAX_QUEUED * 4):  # a burst the peer never reads
                conn.out.put_nowait(big)
            assert conn.out.overflowed and conn.out.qsize() <= MAX_QUEUED + 1
            for _ in range(300):
                if match.seats[1].conn is None:
                    break
                await asyncio.sleep(0.01)
            assert match.seats[1].conn is None, "the stream of a peer that does not read was not ended"
            assert any(e.kind == pb.EVENT_KIND_SEAT_DISCONNECTED and e.seat == 1 for e in match.events)
            call.cancel()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_finished_matches_leave_memory_after_the_retention_count_and_time(tmp_path: Path) -> None:
    """item 2: with ``--keep-finished 2 --keep-finished-s 2`` only the two newest finished matches stay
    listed; an older one's GetRecord is NOT_FOUND naming the retention, its record file stays on disk;
    after the retention time none is held."""
    gen = start_referee(tmp_path, "--keep-finished", "2", "--keep-finished-s", "2")
    ref = next(gen)
    try:
        ids = []
        for _ in range(4):
            created = ref.create(players=2, join_ms=100)
            ref.result(created.match_id)  # a no-show: over at once
            ids.append(created.match_id)
        listed = [m.match_id for m in ref.admin.ListMatches(pb.ListMatchesRequest(), metadata=MD, timeout=5).matches]
        assert listed == ids[2:]
        assert ref.record(ids[3])[-1].startswith('{"type":"seed"')
        with pytest.raises(grpc.RpcError) as e:
            ref.record(ids[0])
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert "kept 2 s, the last 2" in (e.value.details() or "")
        assert all((tmp_path / f"{i}.jsonl").read_text().count("\n") == 3 for i in ids)  # header, result, seed
        deadline = time.monotonic() + 10
        while ref.admin.ListMatches(pb.ListMatchesRequest(), metadata=MD, timeout=5).matches:
            assert time.monotonic() < deadline, "finished matches outlived the retention time"
            time.sleep(0.2)
    finally:
        gen.close()


def test_a_long_protocol_version_is_quoted_short_in_the_status(referee: RefereeProc) -> None:
    """item 5: bot text in a Hello refused for its protocol_version comes back cut and plain."""
    hello = pb.PlayRequest(hello=pb.Hello(ticket="t", protocol_version="\x1b[2J" + "v" * 60_000))
    with pytest.raises(grpc.RpcError) as e:
        list(raw_play(referee)(iter([hello.SerializeToString()]), timeout=10))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    detail = e.value.details() or ""
    assert len(detail) < 150 and detail.isprintable() and "(60004 chars)" in detail, detail


@pytest.mark.parametrize(("method", "streams"), [("CreateMatch", False), ("ListMatches", False),
                                                 ("GetRecord", False), ("WatchMatch", True)])
def test_admin_rpcs_answer_undecodable_bytes_in_one_line_after_the_token(referee: RefereeProc, method: str,
                                                                        streams: bool) -> None:
    """issue 24, item 9: bytes that are not the Admin request are INVALID_ARGUMENT in one line naming their
    size, as on Play (not UNKNOWN with Python's DecodeError text); the token is checked first, so a
    caller without it learns nothing (docs/protocol.md, Admin service)."""
    path = f"/allfours.v1.AdminService/{method}"
    kind = referee.channel.unary_stream if streams else referee.channel.unary_unary
    call = kind(path, request_serializer=lambda b: b, response_deserializer=lambda b: b)

    def status(metadata: tuple[tuple[str, str], ...]) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.RpcError) as e:
            got = call(GARBAGE[0], metadata=metadata, timeout=10)
            list(got) if streams else got
        return e.value.code(), e.value.details()

    code, details = status(MD)
    request = f"{method}Request"
    assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT, f"the request is not a {request} (3 bytes that "
                                                                 f"do not decode as allfours.v1.{request})")
    assert status((("authorization", "Bearer wrong"),))[0] == grpc.StatusCode.UNAUTHENTICATED
