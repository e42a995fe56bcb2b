"""The competitor's side: ``arena submit DIR`` and ``arena submissions`` (docs/competition.md).

:func:`pack` makes a tar.gz of a bot's folder and refuses, with one line (:class:`SubmitError`), a link
that leaves the folder (or leads nowhere), a device, FIFO or socket, a file over ``max_file_bytes``,
and an archive over ``max_bytes``; the folders a build skips (``.git``, ``node_modules``, ``.venv``,
``__pycache__``) are left out. :class:`SubmissionClient` calls the arena's Submission service with the
competitor token (``ALLFOURS_COMPETITOR_TOKEN``) as ``authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition.service import AUTH_KEY, CHUNK_BYTES

#: The environment variable holding the competitor's token.
ENV_COMPETITOR_TOKEN = "ALLFOURS_COMPETITOR_TOKEN"
#: Folders never packed (as ``arena bots build`` skips them).
SKIPPED = frozenset({".git", "node_modules", ".venv", "__pycache__"})
#: Statuses after which ``--wait`` stops following.
FINAL = ("rated", "rejected", "failed")
#: Default most bytes of one packed file and of the whole archive.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
#: Seconds :meth:`SubmissionClient.follow` waits after a poll refused for ``reads_per_minute``.
READS_WAIT_S = 5.0


class SubmitError(ValueError):
    """A folder that cannot be submitted; ``str(e)`` is one line."""


def _check_member(root: Path, path: Path, max_file_bytes: int) -> None:
    """:raises SubmitError: ``path`` is a link out (or to nothing), a special file or too big."""
    rel = path.relative_to(root).as_posix()
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        real = Path(os.path.realpath(path))
        if not real.exists() or not (real == root or root in real.parents):
            raise SubmitError(f"{rel}: a link leaving the folder (or to nothing): copy what it names into the folder")
    elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise SubmitError(f"{rel}: a device, FIFO or socket cannot be submitted")
    elif stat.S_ISREG(st.st_mode) and st.st_size > max_file_bytes:
        raise SubmitError(f"{rel}: {st.st_size} bytes, over the {max_file_bytes} bytes a file may have")


def pack(folder: str | Path, max_file_bytes: int = MAX_FILE_BYTES, max_bytes: int = MAX_ARCHIVE_BYTES) -> bytes:
    """The tar.gz of ``folder`` (see the module docstring). :raises SubmitError: one line."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise SubmitError(f"{folder}: not a folder")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED)
            for name in sorted(dirnames) + sorted(filenames):
                path = Path(dirpath) / name
                _check_member(root, path, max_file_bytes)
                tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
            if buf.tell() > max_bytes:
                raise SubmitError(f"{folder}: over {max_bytes} bytes packed")
    return buf.getvalue()


def _chunks(header: spb.SubmitHeader, archive: bytes) -> Iterator[spb.SubmitRequest]:
    yield spb.SubmitRequest(header=header)
    for i in range(0, len(archive), CHUNK_BYTES):
        yield spb.SubmitRequest(chunk=archive[i:i + CHUNK_BYTES])


class SubmissionClient:
    """The Submission service at ``address`` (``host:port``), plaintext or TLS (``tls_ca``: PEM bytes of
    the certificate to trust), as the competitor holding ``token``."""

    def __init__(self, address: str, token: str, tls_ca: bytes | None = None):
        if tls_ca is not None:
            self.channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=tls_ca))
        else:
            self.channel = grpc.insecure_channel(address)
        self.stub = spb_grpc.SubmissionServiceStub(self.channel)
        self.metadata = ((AUTH_KEY, f"Bearer {token}"),)

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()

    def submit(self, archive: bytes, name: str, version: str = "next", entry: str = "",
               timeout_s: float = 600.0, image: bool = False) -> spb.Submission:
        """Upload ``archive`` (a tar.gz of a folder, or with ``image`` a ``docker save`` tar); returns the
        new submission. :raises grpc.RpcError: the service's refusal."""
        kind = spb.SUBMISSION_KIND_IMAGE if image else spb.SUBMISSION_KIND_UNSPECIFIED
        header = spb.SubmitHeader(name=name, version=version, entry=entry, kind=kind)
        sub: spb.Submission = self.stub.Submit(_chunks(header, archive), metadata=self.metadata,
                                               timeout=timeout_s).submission
        return sub

    def get(self, sid: int) -> spb.Submission:
        """Submission ``sid``. :raises grpc.RpcError: NOT_FOUND (no submission of the caller's with that id), …"""
        sub: spb.Submission = self.stub.GetSubmission(spb.GetSubmissionRequest(id=sid), metadata=self.metadata,
                                                      timeout=30).submission
        return sub

    def submissions(self) -> list[spb.Submission]:
        """The caller's submissions, oldest first."""
        reply = self.stub.ListSubmissions(spb.ListSubmissionsRequest(), metadata=self.metadata, timeout=30)
        return list(reply.submissions)

    def games(self) -> list[spb.Game]:
        """The games of the caller's entrants, oldest first."""
        return list(self.stub.ListGames(spb.ListGamesRequest(), metadata=self.metadata, timeout=30).games)

    def seat_log(self, game_id: str, seat: int) -> bytes:
        """The end of the log of the caller's ``seat`` in ``game_id``. :raises grpc.RpcError: PERMISSION_DENIED."""
        reply = self.stub.GetSeatLog(spb.GetSeatLogRequest(game_id=game_id, seat=seat), metadata=self.metadata,
                                     timeout=30)
        return bytes(reply.text)

    def register_remote(self, name: str, version: str = "next") -> tuple[spb.Submission, str]:
        """Register a remote bot; returns its entry and its bot token (shown once)."""
        reply = self.stub.RegisterRemote(spb.RegisterRemoteRequest(name=name, version=version),
                                         metadata=self.metadata, timeout=30)
        sub: spb.Submission = reply.submission
        return sub, str(reply.bot_token)

    def select(self, sid: int) -> spb.Submission:
        """Choose submission ``sid`` for the final evaluation."""
        sub: spb.Submission = self.stub.SelectSubmission(spb.SelectSubmissionRequest(id=sid), metadata=self.metadata,
                                                         timeout=30).submission
        return sub

    def follow(self, sid: int, on_change: Callable[[Any], None], timeout_s: float, poll_s: float = 1.0,
               shown: str = "") -> Any:
        """Poll submission ``sid`` until it reaches a :data:`FINAL` status or ``timeout_s`` passes, calling
        ``on_change`` at each new status; returns the last seen. ``shown``: the status the caller has
        shown already (``arena submit`` prints the new submission's ``received``), not called back again
        while it lasts (a submission queued behind another build stays ``received`` for many polls). A poll
        refused for ``reads_per_minute`` is asked again :data:`READS_WAIT_S` later (until ``timeout_s``)."""
        deadline, seen = time.monotonic() + timeout_s, shown
        while True:
            try:
                sub = self.get(sid)
            except grpc.RpcError as e:  # past reads_per_minute (other reads of the competitor's): wait, ask again
                if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                    raise
                time.sleep(READS_WAIT_S)
                continue
            if sub.status != seen:
                seen = sub.status
                on_change(sub)
            if sub.status in FINAL or time.monotonic() > deadline:
                return sub
            time.sleep(poll_s)
