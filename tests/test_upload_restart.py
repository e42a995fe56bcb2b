"""An honest upload under way when the arena stops (a restart) is not counted as refused (``refused_per_day``):
it was, one of the day's allowance charged to its competitor at every restart (``Desk.stop_uploads``)."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition import service
from tests.test_upload_withdrawn import HEADER, WAIT_S, _archive, _refusals, _Served


def test_an_upload_under_way_at_the_arenas_stop_is_not_charged(tmp_path: Path) -> None:
    served = _Served(tmp_path, refused_per_day=3)
    hold = threading.Event()
    data = _archive()

    def requests() -> Iterator[spb.SubmitRequest]:  # an honest client, still sending when the host restarts
        yield HEADER
        yield spb.SubmitRequest(chunk=data[: service.CHUNK_BYTES])
        hold.wait(WAIT_S)

    stopped = False
    try:
        with grpc.insecure_channel(served.address) as channel:
            upload = spb_grpc.SubmissionServiceStub(channel).Submit.future(requests(), metadata=served.meta,
                                                                           timeout=WAIT_S)
            assert served.desk.spooling.wait(WAIT_S)
            served.stop()  # the host stops arena serve (to restart it)
            stopped = True
            hold.set()
            try:
                upload.result()
            except grpc.RpcError as e:
                print("client saw:", e.code(), e.details())
    finally:
        hold.set()
        if not stopped:
            served.stop()
    assert _refusals(tmp_path) == (0, 0), "the arena's own stop was charged to the competitor as a refused upload"


def test_an_upload_begun_as_the_arena_stops_is_refused_uncounted(tmp_path: Path) -> None:
    """Once the arena stops taking uploads (``Desk.stop_uploads``), one more is refused in one line, UNAVAILABLE,
    and not counted: a header that came between the forgiving and the book's closing was charged for good."""
    served = _Served(tmp_path, refused_per_day=3)
    try:
        served.desk.stop_uploads()
        with grpc.insecure_channel(served.address) as channel, pytest.raises(grpc.RpcError) as refused:
            spb_grpc.SubmissionServiceStub(channel).Submit(iter([HEADER]), metadata=served.meta, timeout=WAIT_S)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert refused.value.details() == "the arena is stopping: upload again once it is back (not counted)"
    finally:
        served.stop()
    assert _refusals(tmp_path) == (0, 0)
