"""Uploads that fail in the arena's hands: an upload whose package.json names an entry path the file system
refuses (a name over PATH_MAX in
short parts) is unpacked in full, then fails as "the arena's fault" (OSError out of plan_build): its count
(refused_per_day) is forgiven, so a competitor has the arena unpack such uploads again and again, in no limit."""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import grpc
import pytest

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition import service
from tests.test_upload_withdrawn import WAIT_S, _refusals, _Served


def _node_archive() -> bytes:
    buf = io.BytesIO()
    entry = "a/" * 2100 + "x.js"  # each part 1 byte (inside the folder, say _inside), the whole over PATH_MAX
    files = {"package.json": json.dumps({"main": entry}).encode(), "pad.bin": os.urandom(2 * service.CHUNK_BYTES)}
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def test_an_upload_whose_entry_path_is_too_long_counts_as_refused(tmp_path: Path) -> None:
    served = _Served(tmp_path, refused_per_day=2)
    data = _node_archive()
    header = spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="next", kind=spb.SUBMISSION_KIND_NODE))
    chunks = [spb.SubmitRequest(chunk=data[at:at + service.CHUNK_BYTES])
              for at in range(0, len(data), service.CHUNK_BYTES)]
    codes = []
    try:
        with grpc.insecure_channel(served.address) as channel:
            stub = spb_grpc.SubmissionServiceStub(channel)
            for _ in range(4):  # twice the day's limit of refused uploads
                with pytest.raises(grpc.RpcError) as e:
                    stub.Submit(iter([header, *chunks]), metadata=served.meta, timeout=WAIT_S)
                codes.append((e.value.code(), (e.value.details() or "")[:80]))
    finally:
        served.stop()
    print(codes)
    assert codes[-1][0] == grpc.StatusCode.RESOURCE_EXHAUSTED, codes  # the limit reached: refused at the header
    assert _refusals(tmp_path)[0] == 2, codes


def test_an_upload_the_arena_fails_to_take_in_names_no_server_path(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure of the arena's own as it takes an upload in (a full disk: OSError naming the submission's folder)
    reached the competitor as gRPC's UNKNOWN "Unexpected <class 'OSError'>: ... '/srv/.../incoming-…'": the
    server's paths. Now INTERNAL with one line that names none (the cause logged), and the upload not counted."""
    from arena.competition.desk import Desk

    def full(self: Desk, archive: object, incoming: Path, *_: object) -> tuple[str, str]:
        raise OSError(28, "No space left on device", str(incoming / "bot" / "pad.bin"))

    monkeypatch.setattr(Desk, "_take", full)
    served = _Served(tmp_path, refused_per_day=2)
    data = _node_archive()
    header = spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="next", kind=spb.SUBMISSION_KIND_NODE))
    try:
        with grpc.insecure_channel(served.address) as channel, pytest.raises(grpc.RpcError) as e:
            spb_grpc.SubmissionServiceStub(channel).Submit(iter([header, spb.SubmitRequest(chunk=data[:1000])]),
                                                           metadata=served.meta, timeout=WAIT_S)
    finally:
        served.stop()
    assert e.value.code() == grpc.StatusCode.INTERNAL, (e.value.code(), e.value.details())
    assert str(tmp_path) not in (e.value.details() or "") and e.value.details() == service.ARENA_FAULT
    assert _refusals(tmp_path) == (0, 0)
