"""The Submission gRPC service (proto/allfours/v1/submission.proto), served on the lobby's server.

Every call is authenticated by the competitor's token in the metadata ``authorization: Bearer TOKEN``
(UNAUTHENTICATED, one line, otherwise) and reaches only the caller's submissions (another's id is
NOT_FOUND, as an unknown one: no competitor learns which ids exist). The reads (ListSubmissions,
GetSubmission, ListGames, GetSeatLog) count against ``reads_per_minute`` (:mod:`arena.competition.reads`:
RESOURCE_EXHAUSTED, saying when to try again).
What is decided lives in :class:`arena.competition.desk.Desk`; this module moves bytes and maps its
refusals to status codes. An upload is spooled to a temporary file (the upload limit is counted as the
chunks arrive) and unpacked in a worker thread, off the event loop the embedded referee shares (an upload
counts as refused from its header on until it is kept, so one whose call ends first, however, stays counted:
:meth:`arena.competition.desk.Desk.begin_upload`; its client cancelling during the unpacking stops it there:
:meth:`SubmissionServicer._receive`);
every look at
the competition's book (the token, the submissions, a choice) runs in a worker thread too: the book waits on
its lock while the build queue writes and on another process's write (``arena competitor``, ``arena web``),
each a disk sync, and on the loop every game's referee waited with it (a competitor's SelectSubmission calls,
in no limit, each synced the disk there). Bytes that
do not decode as a method's request are INVALID_ARGUMENT with one line naming their size
(:class:`referee.streams.Undecodable`), not gRPC's UNKNOWN with the parser's exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
import time
from typing import IO, Any, NoReturn

import grpc
import structlog

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition.book import Submission
from arena.competition.desk import Desk, Header, Refused
from arena.competition.games import NotYours, my_games, seat_log
from arena.competition.intake import IntakeError, check_upload, withdrawable
from referee.streams import Undecodable, add_service, decoded

log = structlog.get_logger("arena.competition.service")

#: What a competitor is told of an upload the arena failed to take in by its own fault (the cause is logged, not
#: sent: it names the server's paths).
ARENA_FAULT = "the arena could not take your upload in (its fault, not counted against you): try again later"

#: The metadata key of the competitor's token (``Bearer TOKEN``).
AUTH_KEY = "authorization"
#: Most bytes of one chunk (the lobby's server takes messages of at most 16 KiB).
CHUNK_BYTES = 12 * 1024
#: Seconds a Submit stream may take in all.
UPLOAD_TIMEOUT_S = 600.0
_KINDS = {spb.SUBMISSION_KIND_UNSPECIFIED: "", spb.SUBMISSION_KIND_PYTHON: "python",
          spb.SUBMISSION_KIND_NODE: "node", spb.SUBMISSION_KIND_IMAGE: "image"}
_CODES = {"invalid": grpc.StatusCode.INVALID_ARGUMENT, "exhausted": grpc.StatusCode.RESOURCE_EXHAUSTED,
          "frozen": grpc.StatusCode.FAILED_PRECONDITION, "exists": grpc.StatusCode.ALREADY_EXISTS,
          "not_found": grpc.StatusCode.NOT_FOUND, "stopping": grpc.StatusCode.UNAVAILABLE,
          "disqualified": grpc.StatusCode.PERMISSION_DENIED, "revoked": grpc.StatusCode.UNAUTHENTICATED}


def token_of(metadata: Any) -> str:
    """The bearer token in gRPC ``metadata`` (pairs of key and value), or ``""``."""
    for key, value in metadata or ():
        if key == AUTH_KEY and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer "):].strip()
    return ""


def submission_pb(sub: Submission, games: int = 0, final: int | None = None, note: str | None = None) -> spb.Submission:
    """The wire form of ``sub``; ``final``: the id of its competitor's final entry (``final_entry``); ``note``:
    its ``reason`` when not the book's (:meth:`Desk.note`)."""
    return spb.Submission(id=sub.id, name=sub.name, version=sub.version, entrant=sub.entrant, status=sub.status,
                          step=sub.step, reason=sub.reason if note is None else note, log_tail=sub.log_tail,
                          created_at=sub.created_at,
                          updated_at=sub.updated_at, retired=sub.retired, games=games, final_entry=sub.id == final)


class SubmissionServicer(spb_grpc.SubmissionServiceServicer):
    """The service over a :class:`Desk` (see the module docstring)."""

    def __init__(self, desk: Desk):
        self.desk = desk
        #: Competitors with an upload under way (one at a time each: every upload spools to disk).
        self._uploading: set[str] = set()

    async def _reader(self, context: grpc.aio.ServicerContext) -> str:
        """The caller, as :meth:`_who`, with one read counted (RESOURCE_EXHAUSTED past ``reads_per_minute``)."""
        competitor = await self._who(context)
        try:
            self.desk.check_read(competitor)
        except Refused as e:
            await self._refuse(context, e)
        return competitor

    async def _who(self, context: grpc.aio.ServicerContext) -> str:
        token = token_of(context.invocation_metadata())
        # the caller's rows only (indexed), off the event loop: the book waits on its lock and the disk
        competitor, gone = await asyncio.to_thread(self.desk.book.standing, token)
        if gone is not None:  # their token is revoked, or they were added again: still disqualified
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, gone.line())
        if competitor is None:
            why = "no competitor token (metadata authorization: Bearer TOKEN)" if not token else \
                "unknown or revoked competitor token"
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, why)
        assert competitor is not None
        return competitor

    async def _refuse(self, context: grpc.aio.ServicerContext, e: Refused) -> NoReturn:
        await context.abort(_CODES[e.kind], str(e))
        raise AssertionError("abort returned")  # pragma: no cover

    def _pb(self, sub: Submission, final: int | None = None) -> spb.Submission:
        final = self.desk.book.final_entry(sub.competitor) if final is None else final
        return submission_pb(sub, self.desk.games.get(sub.entrant, 0), final, self.desk.note(sub))

    async def Submit(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> spb.SubmitResponse:
        competitor = await self._who(context)
        if competitor in self._uploading:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                "an upload of yours is under way: one at a time, try again when it ends")
        self._uploading.add(competitor)
        try:
            return await self._submit(competitor, request_iterator, context)
        finally:
            self._uploading.discard(competitor)

    async def _submit(self, competitor: str, request_iterator: Any,
                      context: grpc.aio.ServicerContext) -> spb.SubmitResponse:
        """Submit's work for ``competitor``: the header, the chunks (the whole stream within
        :data:`UPLOAD_TIMEOUT_S`), then the desk's :meth:`Desk.receive`."""
        first = await anext(aiter(request_iterator), None)
        if isinstance(first, Undecodable):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, first.detail())
        if first is None or first.WhichOneof("msg") != "header":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message of Submit must be a SubmitHeader")
        assert first is not None
        h = first.header
        header = Header(h.name, h.version, _KINDS.get(h.kind, ""), h.entry)
        try:  # counted as refused from here until kept, however the call ends (Desk.begin_upload)
            counted = await asyncio.to_thread(self.desk.begin_upload, competitor, time.time())
        except Refused as e:
            await self._refuse(context, e)
        try:
            sub = await self._take_in(competitor, request_iterator, context, header, counted)
        finally:  # however the call ends; a handler the arena's stop leaves unfinished is forgiven there
            self.desk.settle(counted)
        return spb.SubmitResponse(submission=await asyncio.to_thread(self._pb, sub))

    async def _take_in(self, competitor: str, request_iterator: Any, context: grpc.aio.ServicerContext,
                       header: Header, counted: int) -> Submission:
        """The chunks spooled (the whole stream within :data:`UPLOAD_TIMEOUT_S`), then :meth:`_receive`."""
        with contextlib.ExitStack() as stack:
            spool = stack.enter_context(tempfile.TemporaryFile(prefix="allfours-upload-"))
            try:
                async with asyncio.timeout(UPLOAD_TIMEOUT_S):
                    await self._spool(request_iterator, context, header, spool)
            except TimeoutError:
                await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                    f"the upload took over {UPLOAD_TIMEOUT_S:g} s: send the archive at once")
            spool.seek(0)
            stack.pop_all()  # from here the intake's worker thread closes it (_receive)
        return await self._receive(competitor, header, spool, counted, context)

    async def _receive(self, competitor: str, header: Header, spool: IO[bytes], counted: int,
                       context: grpc.aio.ServicerContext) -> Submission:
        """:meth:`Desk.receive` of the spooled archive (``counted``: its refusal, :meth:`Desk.begin_upload`), in
        a worker thread, which closes ``spool`` when it is done. A call cancelled meanwhile (its client gone)
        stops the intake at its next read of the archive (:func:`withdrawable`): the upload stays counted as
        refused (``refused_per_day``), else a client that cancelled each upload once it was sent had the server
        unpack it, again and again, in no limit. The call ends once the intake has (the competitor's one upload
        stays under way, its outcome in the book), unless cancelled again (the server stopping): the intake
        then ends on its own, the spool still open under it, the upload counted since it began."""
        ended = threading.Event()

        def take() -> Submission:
            try:
                return self.desk.receive(competitor, header, withdrawable(spool, ended.is_set), counted)
            finally:
                spool.close()

        work = asyncio.ensure_future(asyncio.to_thread(take))
        work.add_done_callback(lambda done: done.cancelled() or done.exception())  # its outcome is the book's
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            self.desk.settle(counted)  # its client withdrew it: counted, whatever the stop does next
            ended.set()
            with contextlib.suppress(Exception):
                await work  # its outcome (a refusal, or a submission kept before the read stopped) is in the book
            raise
        except Refused as e:
            await self._refuse(context, e)
        except Exception as e:  # the arena's fault (forgiven by the desk): its cause stays on the server
            log.error("upload_failed", competitor=competitor, error=f"{type(e).__name__}: {e}")
            await context.abort(grpc.StatusCode.INTERNAL, ARENA_FAULT)
            raise AssertionError("abort returned") from None  # pragma: no cover

    async def _spool(self, request_iterator: Any, context: grpc.aio.ServicerContext, header: Header,
                     spool: IO[bytes]) -> None:
        """Write the archive's chunks to ``spool``, refusing another message or more than the upload limit."""
        received = 0
        async for msg in request_iterator:
            if isinstance(msg, Undecodable):
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, msg.detail("a message after the header"))
            if msg.WhichOneof("msg") != "chunk":
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "after the header, only chunks")
            received += len(msg.chunk)
            try:
                check_upload(received, self.desk.limits(header.kind))
            except IntakeError as e:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
            spool.write(msg.chunk)

    async def ListSubmissions(self, request: spb.ListSubmissionsRequest,
                              context: grpc.aio.ServicerContext) -> spb.ListSubmissionsResponse:
        request = await decoded(request, context)
        competitor = await self._reader(context)
        return await asyncio.to_thread(self._list, competitor)

    def _list(self, competitor: str) -> spb.ListSubmissionsResponse:
        """ListSubmissions' answer for ``competitor`` (reads the book: in a worker thread)."""
        book = self.desk.book
        final = book.final_entry(competitor)
        return spb.ListSubmissionsResponse(submissions=[self._pb(s, final) for s in book.submissions(competitor)])

    async def GetSubmission(self, request: spb.GetSubmissionRequest,
                            context: grpc.aio.ServicerContext) -> spb.GetSubmissionResponse:
        request = await decoded(request, context)
        competitor = await self._reader(context)
        try:
            sub = await asyncio.to_thread(self.desk.owned, competitor, int(request.id))
        except Refused as e:
            await self._refuse(context, e)
        return spb.GetSubmissionResponse(submission=await asyncio.to_thread(self._pb, sub))


    async def ListGames(self, request: spb.ListGamesRequest,
                        context: grpc.aio.ServicerContext) -> spb.ListGamesResponse:
        request = await decoded(request, context)
        competitor = await self._reader(context)
        d = self.desk
        games = await asyncio.to_thread(lambda: my_games(d.output, d.entrants(competitor), d.players))
        return spb.ListGamesResponse(games=[
            spb.Game(game_id=g.game_id, a=g.a, b=g.b, score_a=g.scores[0], score_b=g.scores[1],
                     winner=-1 if g.winner is None else g.winner, seats=list(g.seats)) for g in games])

    async def GetSeatLog(self, request: spb.GetSeatLogRequest,
                         context: grpc.aio.ServicerContext) -> spb.GetSeatLogResponse:
        request = await decoded(request, context)
        competitor = await self._reader(context)
        d = self.desk
        try:
            text = await asyncio.to_thread(lambda: seat_log(d.output, d.entrants(competitor), d.players,
                                                            request.game_id, int(request.seat)))
        except NotYours as e:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        return spb.GetSeatLogResponse(text=text)

    async def RegisterRemote(self, request: spb.RegisterRemoteRequest,
                             context: grpc.aio.ServicerContext) -> spb.RegisterRemoteResponse:
        request = await decoded(request, context)
        competitor = await self._who(context)
        try:
            await asyncio.to_thread(self.desk.check_open, competitor, time.time())
            sub, token = await asyncio.to_thread(self.desk.register_remote, competitor, request.name, request.version)
        except Refused as e:
            await self._refuse(context, e)
        return spb.RegisterRemoteResponse(submission=await asyncio.to_thread(self._pb, sub), bot_token=token)


    async def SelectSubmission(self, request: spb.SelectSubmissionRequest,
                               context: grpc.aio.ServicerContext) -> spb.SelectSubmissionResponse:
        request = await decoded(request, context)
        competitor = await self._who(context)
        try:
            sub = await asyncio.to_thread(self.desk.select, competitor, int(request.id))
        except Refused as e:
            await self._refuse(context, e)
        return spb.SelectSubmissionResponse(submission=await asyncio.to_thread(self._pb, sub))


def add_to_server(desk: Desk) -> Any:
    """A function that adds the service over ``desk`` to a ``grpc.aio.Server`` (the lobby's)."""
    def add(server: grpc.aio.Server) -> None:
        add_service(server, spb.DESCRIPTOR.services_by_name["SubmissionService"], SubmissionServicer(desk), spb)
    return add
