"""An upload its call ends before the arena answers counts in ``refused_per_day`` (docs/competition.md, step 2),
however it ends: a real Submission service on a lobby's real socket, a real client, and the interleaving pinned
by events (the desk's and the servicer's steps signal and wait), never by sleeping.

Before, an upload counted only once unpacked: a client that cancelled while still sending chunks cost the
server disk writes up to ``upload_bytes`` each time, in no limit; and an upload cancelled during its unpacking
lost its count when the server's shutdown cancelled the call a second time and closed the book before the
intake noted it.
"""

from __future__ import annotations

import io
import queue
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import grpc
import pytest

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition import intake, service
from arena.competition.book import CompetitionBook
from arena.competition.desk import Desk, Header
from arena.config import CompetitionSettings
from arena.lobby.service import Lobby
from arena.lobby.tokens import TokenBook
from referee.streams import add_service

WAIT_S = 60.0  # the longest any step waits for the other side (a busy machine); never a condition of the test


def _archive() -> bytes:
    """A tar.gz of a Python bot ``bot:Bot`` padded with a file of random bytes (several chunks of the wire)."""
    import os

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in (("bot.py", b"class Bot:\n    pass\n"), ("pad.bin", os.urandom(4 * service.CHUNK_BYTES))):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


HEADER = spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="next", kind=spb.SUBMISSION_KIND_PYTHON,
                                                   entry="bot:Bot"))


class _Steps(Desk):
    """A desk whose steps signal the test: ``spooling`` once the service counts a chunk against the upload limit,
    ``unpacking`` (then waiting for ``resume``) as the archive is taken in, ``received`` once :meth:`receive`
    is over, whatever its outcome."""

    def __init__(self, output: Path, refused_per_day: int) -> None:
        settings = CompetitionSettings(refused_per_day=refused_per_day)
        super().__init__(settings, output, CompetitionBook(output), lambda: None)
        self.spooling, self.unpacking, self.resume = threading.Event(), threading.Event(), threading.Event()
        self.received = threading.Event()
        self.resume.set()

    def limits(self, kind: str = "") -> Any:
        self.spooling.set()
        return super().limits(kind)

    def receive(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().receive(*args, **kwargs)
        finally:
            self.received.set()

    def _take(self, archive: IO[bytes], incoming: Path, header: Header, version: str) -> tuple[str, str]:
        self.unpacking.set()
        assert self.resume.wait(WAIT_S)
        return super()._take(archive, incoming, header, version)


class _Served:
    """The Submission service over a :class:`_Steps` desk on a lobby's port; ``ended`` is set as each Submit
    call's handler returns (its upload under way no more)."""

    def __init__(self, output: Path, refused_per_day: int = 1) -> None:
        self.desk = _Steps(output, refused_per_day)
        self.token = self.desk.book.add_competitor("eve")
        self.ended = threading.Event()
        ended = self.ended

        class Servicer(service.SubmissionServicer):
            async def Submit(self, request_iterator: Any, context: Any) -> spb.SubmitResponse:
                try:
                    return await super().Submit(request_iterator, context)
                finally:
                    ended.set()

        def add(server: grpc.aio.Server) -> None:
            add_service(server, spb.DESCRIPTOR.services_by_name["SubmissionService"], Servicer(self.desk), spb)

        self.lobby = Lobby("t", TokenBook(), services=[add])
        self.address = self.lobby.start()
        self.meta = (("authorization", f"Bearer {self.token}"),)

    def stop(self) -> None:
        """Stop as ``arena serve`` does: the uploads under way forgiven (``Desk.stop_uploads``), the lobby's
        server (its calls cancelled), then the book."""
        self.desk.stop_uploads()
        self.lobby.stop(grace_s=0)
        self.desk.book.close()


def _refusals(output: Path) -> tuple[int, int]:
    """eve's (refused uploads, submissions kept) as the book holds them."""
    with CompetitionBook(output) as book:
        return book.refusals_since("eve", 0.0), book.count_since("eve", 0.0)


def test_uploads_cancelled_while_their_chunks_are_sent_count_as_refused(tmp_path: Path) -> None:
    """Three times eve's client sends the header and a first chunk, the service spools it, and the client
    cancels before the rest: each upload counts as refused, so (``refused_per_day`` 3) her next upload is refused
    for the day. Before, such an upload was counted only when the call's end reached the handler as the end of
    the stream (the truncated archive was then refused as it was unpacked), not when it came as the call's
    cancellation: each cost up to ``upload_bytes`` of disk writes, in no limit."""
    served = _Served(tmp_path, refused_per_day=3)
    hold = threading.Event()
    data = _archive()

    def requests() -> Iterator[spb.SubmitRequest]:
        yield HEADER
        yield spb.SubmitRequest(chunk=data[: service.CHUNK_BYTES])
        hold.wait(WAIT_S)  # the rest is never sent

    try:
        with grpc.insecure_channel(served.address) as channel:
            stub = spb_grpc.SubmissionServiceStub(channel)
            for cancelled in range(1, 4):
                served.desk.spooling.clear()
                served.ended.clear()
                upload = stub.Submit.future(requests(), metadata=served.meta, timeout=WAIT_S)
                assert served.desk.spooling.wait(WAIT_S), "the service never spooled the first chunk"
                upload.cancel()
                assert served.ended.wait(WAIT_S), "the cancelled call never ended"
                assert _refusals(tmp_path) == (cancelled, 0)
            hold.set()
            with pytest.raises(grpc.RpcError) as refused:
                stub.Submit(iter([HEADER, spb.SubmitRequest(chunk=data)]), metadata=served.meta, timeout=WAIT_S)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value.details()
        assert (refused.value.details() or "").startswith("3 uploads of yours refused today, the limit of a day")
    finally:
        hold.set()
        served.stop()
    assert _refusals(tmp_path) == (3, 0)


def test_an_upload_cancelled_while_unpacked_keeps_its_count_through_a_shutdown(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """eve cancels while the arena unpacks her upload (the service stops the intake at its next read), and the
    server shuts down while the call still waits for the intake: the shutdown cancels the call a second time and
    closes the book before the intake reaches its next read. The upload still counts as refused, and its files
    are gone. Before, the count was noted only as the intake stopped, in a book closed by then: lost."""
    withdrawn: queue.Queue[Callable[[], bool]] = queue.Queue()
    real = intake.withdrawable

    def spy(archive: IO[bytes], ended: Callable[[], bool]) -> IO[bytes]:
        withdrawn.put(ended)
        return real(archive, ended)

    monkeypatch.setattr(service, "withdrawable", spy)
    served = _Served(tmp_path)
    served.desk.resume.clear()
    stopped = False
    try:
        with grpc.insecure_channel(served.address) as channel:
            stub = spb_grpc.SubmissionServiceStub(channel)
            data = _archive()
            chunks = [data[at:at + service.CHUNK_BYTES] for at in range(0, len(data), service.CHUNK_BYTES)]
            upload = stub.Submit.future(iter([HEADER, *(spb.SubmitRequest(chunk=c) for c in chunks)]),
                                        metadata=served.meta, timeout=WAIT_S)
            assert served.desk.unpacking.wait(WAIT_S), "the arena never began to unpack the upload"
            upload.cancel()
            ended = withdrawn.get(timeout=WAIT_S)
            event = getattr(ended, "__self__", None)
            assert isinstance(event, threading.Event), ended  # the call's end, as the service marks it
            assert event.wait(WAIT_S), "the service never saw the client's cancel"
        served.stop()  # a second cancel of the call, still waiting for the intake; then the book closes
        stopped = True
        served.desk.resume.set()
        assert served.desk.received.wait(WAIT_S), "the intake never ended"
    finally:
        served.desk.resume.set()
        if not stopped:
            served.stop()
    assert _refusals(tmp_path) == (1, 0)
    assert not list((tmp_path / "submissions").glob("incoming-*")), "the cancelled upload's files are gone"


def test_a_refusal_is_forgiven_only_for_its_competitor(tmp_path: Path) -> None:
    """``forgive_refusal`` takes back a refusal of the competitor named, never another's: SQLite gives a deleted
    top rowid out again, so an id forgiven twice (eve's upload, kept) named mallory's refusal made since."""
    with CompetitionBook(tmp_path) as book:
        book.add_competitor("eve")
        book.add_competitor("mallory")
        eves = book.add_refusal("eve", 1.0)
        book.forgive_refusal("eve", eves)
        mallorys = book.add_refusal("mallory", 2.0)
        assert mallorys == eves  # the rowid given out again, as the docstring says
        book.forgive_refusal("eve", eves)  # a second forgiving of eve's: mallory's refusal stays
        assert (book.refusals_since("eve", 0.0), book.refusals_since("mallory", 0.0)) == (0, 1)
