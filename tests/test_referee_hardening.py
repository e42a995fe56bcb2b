"""Issue 9 (referee): what outside trials broke, each against a real ``referee serve`` process over
real sockets: private record files, hostile bytes and text, a seat that never reads, forfeits that
must not show a hidden hand."""

from __future__ import annotations

import os
import queue
import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from tests.server_helpers import RefereeProc, start_referee

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
