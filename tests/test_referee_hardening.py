"""Issue 9 (referee): what outside trials broke, each against a real ``referee serve`` process over
real sockets: private record files, hostile bytes and text, a seat that never reads, forfeits that
must not show a hidden hand."""

from __future__ import annotations

import json
import os
import queue
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from tests.server_helpers import RefereeProc, decision, finish, launch_bots, start_referee

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
