"""A competitor's own pages (docs/competition.md): sign in with the competitor token, see my
submissions with their statuses and reasons, my games (replays) and download my seat logs.

- ``GET /me``: the sign-in form, or (signed in) my page; ``POST /me/login`` (form field ``token``, the form
  at most :data:`FORM_BYTES`: more is 413, unread; not all come within :data:`FORM_WAIT_S`: 408): a session
  cookie ``af_session`` (HttpOnly, SameSite=Strict, Path=/, kept :data:`LIFETIME_S`; the token is never in a
  URL and never stored);
  ``POST /me/logout``; both refuse (403) a form posted from another site (its ``Origin`` or
  ``Sec-Fetch-Site`` says so): SameSite guards sending the cookie, not setting it, so another site's
  form could sign a browser in as the attacker (login CSRF) or out;
- ``GET /me/live/{game_id}/{seat}``: my seat's view of a running game (as my bot sees it);
- ``GET /me/logs/{game_id}/{seat}``: my seat's log as a download; another's seat, or no session, is
  refused (403 / 401) — whatever the URL names (:func:`arena.competition.games.seat_log` decides). My
  page links only the logs kept here: a remote bot's seat says its log is on my machine.

Sessions (:class:`Sessions`) are kept in the competition's book, as the SHA-256 of their random id
(:meth:`arena.competition.book.CompetitionBook.add_session`), so they outlive a restart of ``arena
serve`` or ``arena web`` and any number of apps, threads and processes share them. One ends
:data:`IDLE_S` after its last use, :data:`LIFETIME_S` after its sign-in, at sign-out, when its
competitor is revoked, or when it is their oldest of :data:`SESSIONS_EACH` and they sign in once more.

Every answer under ``/me`` says ``Cache-Control: no-store`` (:func:`private`). Only when the output
folder holds a competition's book (``competition.sqlite``); otherwise 404. Every read of the book and the
files runs on the server's threads, never the event loop; the live files' reads are bounded
(:mod:`arena.web.livereads`): past the bound ``/me`` shows its running games as not read now and
``/me/live/...`` answers 503 (one line).
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import IntegerConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from arena.competition.book import BOOK_NAME, DAY_S, CompetitionBook, Disqualification, WebSession
from arena.competition.desk import note_of
from arena.competition.games import MyGame, NotYours, hidden_versions, log_path, my_games, seat_log
from arena.competition.reads import DEFAULT_READS_PER_MINUTE, READS_KEY, ReadAllowance, retry_after, wait_line
from arena.lobby.tokens import token_digest
from arena.report import live
from arena.web.data import BUSY_RETRY_S, BUSY_WAIT_S, Busy, WebData
from arena.web.frames import Replay, replay_frames
from arena.web.livereads import LiveBusy
from referee.rules.seats import side_of

#: The session cookie's name.
COOKIE = "af_session"
#: Most bytes of a sign-in form.
FORM_BYTES = 4096
#: Seconds a sign-in form's body may take to come whole.
FORM_WAIT_S = 10.0


#: Most sessions of one competitor (their newest; signing in once more ends the oldest).
SESSIONS_EACH = 16
#: Seconds a session lasts unused (7 days): a request that long after its last (written) use finds it
#: ended. The last use is written at most every :data:`TOUCH_S`, so a session ends between
#: ``IDLE_S - TOUCH_S`` and ``IDLE_S`` seconds after the last request.
IDLE_S = 7 * DAY_S
#: Seconds a session lasts at most after its sign-in (30 days), however often it is used; the
#: cookie's ``max_age``.
LIFETIME_S = 30 * DAY_S
#: Fewest seconds between two writes of a session's last use: page views within a minute of the last
#: write write nothing (no database write per request).
TOUCH_S = 60


def ended(session: WebSession, now: float) -> bool:
    """Whether ``session`` has ended at ``now`` (UNIX seconds): :data:`IDLE_S` after its last use or
    :data:`LIFETIME_S` after its sign-in."""
    return now >= session.used_at + IDLE_S or now >= session.created_at + LIFETIME_S


class Sessions:
    """Signed-in competitors by random session id, kept in the competition's book given to each call
    (as the id's SHA-256: see the module docstring); ``clock`` gives the time in UNIX seconds (tests
    move it). Each method raises :class:`sqlite3.Error` if the book cannot be read or written."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def open(self, book: CompetitionBook, competitor: str) -> str:
        """A new session id for ``competitor``. Deletes every ended session first (anyone's), and the
        competitor's oldest when they have :data:`SESSIONS_EACH`."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        book.end_sessions_before(used_before=now - IDLE_S, created_before=now - LIFETIME_S)
        book.add_session(token_digest(sid), competitor, now, keep=SESSIONS_EACH)
        return sid

    def who(self, book: CompetitionBook, sid: str | None) -> str | None:
        """The competitor of session ``sid``, or None (no such session, or ended: its row is deleted).
        Writes the session's last use when the written one is :data:`TOUCH_S` old or more."""
        if not sid:
            return None
        digest = token_digest(sid)
        session = book.session(digest)
        if session is None:
            return None
        now = self._clock()
        if ended(session, now):
            book.end_session(digest)
            return None
        if now - session.used_at >= TOUCH_S:
            book.touch_session(digest, now)
        return session.competitor

    def close(self, book: CompetitionBook, sid: str | None) -> None:
        """End session ``sid`` (nothing without one)."""
        if sid:
            book.end_session(token_digest(sid))


def older_versions(output: Path, ranked: list[str]) -> set[str]:
    """The entrants the board leaves out by default in a competition (none without one):
    :func:`arena.competition.games.hidden_versions` over the book's owners."""
    if not (output / BOOK_NAME).is_file():
        return set()
    try:
        with CompetitionBook(output, BUSY_WAIT_S) as book:
            owners = {s.entrant: s.competitor for s in book.submissions(statuses=("accepted", "playing", "rated"))}
    except sqlite3.DatabaseError as e:  # held by another process: the page answers 503 (arena.web.app.guarded)
        raise Busy.of("the competition's book", e) from None
    return hidden_versions(ranked, owners)


def _book(request: Request) -> CompetitionBook | None:
    output: Path = request.app.state.web.data.output
    if not (output / BOOK_NAME).is_file():
        return None
    return CompetitionBook(output, BUSY_WAIT_S)  # held by another process past it: a 503 (:func:`private`)


def _page(request: Request, status: int, **ctx: Any) -> Response:
    return request.app.state.web.page("me.html", status, **ctx)  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True)
class MyPage:
    """My page but its running games: ``ctx``, ``me.html``'s context (who, submissions, games, failures,
    logs, final entry); my ``entrants`` (accepted, playing or rated); whether the tournament is ``blind``."""

    ctx: dict[str, Any]
    entrants: set[str]
    blind: bool


async def me(request: Request) -> Response:
    """``GET /me``: the sign-in form or my page; its running games read through the live reads' bound
    (None, shown as not read now, when it stays full)."""
    found = await run_in_threadpool(my_page, request)
    if isinstance(found, Response):
        return found
    web = request.app.state.web
    running = await web.competitor_reads.run_if_free(my_running, web.data.output, found.entrants, found.blind)
    return _page(request, 200, **found.ctx, running=running)


def my_page(request: Request) -> MyPage | Response:
    """What ``/me`` shows but the running games, or its answer: the sign-in form, 404 without a competition,
    429 past ``reads_per_minute``. Reads the book and the published files: call it off the event loop."""
    book = _book(request)
    if book is None:
        return _page(request, 404, error="this arena runs no competition")
    with book:
        who = _signed_in(request, book)
        if who is None:
            return _page(request, 200, competitor=None)
        refused = _too_many_reads(request, book, who)
        if refused is not None:
            return refused
        subs = book.submissions(who)
        final = book.final_entry(who)
    data: WebData = request.app.state.web.data
    waiting = set(data.waiting())
    subs = [dataclasses.replace(s, reason=note_of(s, s.entrant in waiting)) for s in subs]
    entrants = {s.entrant for s in subs if s.status in ("accepted", "playing", "rated")}
    remote = {s.entrant for s in subs if s.kind == "remote"}
    games = my_games(data.output, entrants, players_of(request))
    failures = sum(1 for s in subs if s.status in ("rejected", "failed"))
    logs = {g.game_id: served_logs(data.output, g, remote) for g in games}
    ctx = {"competitor": who, "submissions": subs, "games": games, "failures": failures, "logs": logs,
           "final": final}
    return MyPage(ctx, entrants, data.blind())


def served_logs(output: Path, game: MyGame, remote: set[str]) -> list[tuple[int, str | None]]:
    """Each of my seats in ``game`` and why its log is not served here (None: it is): a seat of one of my
    ``remote`` entrants (a remote bot runs on its competitor's machine, and so does its log), or one
    without a log (its game was decided without it running: forfeited before it started)."""
    out: list[tuple[int, str | None]] = []
    for k in game.seats:
        if (game.a, game.b)[side_of(k)] in remote:
            out.append((k, "runs on your machine: no log here"))
        else:
            out.append((k, None if log_path(output, game.game_id, k) is not None else "has no log"))
    return out


def players_of(request: Request) -> int:
    """Players a game (2 or 4) of the served tournament (its published facts; 2 when not known yet)."""
    try:
        facts = request.app.state.web.data.facts()
        return int(facts.get("players", 2))
    except Exception:
        return 2


def _cross_site(request: Request) -> Response | None:
    """A 403 for a form posted from another site, else None. ``Sec-Fetch-Site`` decides when the browser
    sends it (only ``same-origin`` and ``none`` pass); else an ``Origin`` naming another host than the
    request's ``Host`` is refused (the scheme is not compared: behind a TLS proxy the server sees http;
    ``null``, which this site's own pages send under its no-referrer policy, passes). A request with
    neither (curl) passes."""
    fetch_site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    if fetch_site is not None:
        foreign = fetch_site not in ("same-origin", "none")
    else:
        foreign = origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host", "")
    if foreign:
        return Response("a form posted from another site is refused: sign in on this site's /me\n", status_code=403,
                        media_type="text/plain")
    return None


async def form_body(request: Request) -> bytes | Response:
    """The request's body, or the answer refusing it: 413 once it is over :data:`FORM_BYTES` (by its
    ``Content-Length``, or by what has come so far), the rest left unread (a body read whole first let anyone,
    with no token, fill the server's memory with one post); 408 when it has not all come within
    :data:`FORM_WAIT_S` seconds (a body sent a byte a minute held its connection for ever)."""
    declared = request.headers.get("content-length", "")
    too_big = Response(f"a sign-in form holds at most {FORM_BYTES} bytes\n", status_code=413, media_type="text/plain")
    if declared.isdigit() and int(declared) > FORM_BYTES:
        return too_big
    body = b""
    try:
        async with asyncio.timeout(FORM_WAIT_S):
            async for chunk in request.stream():
                body += chunk
                if len(body) > FORM_BYTES:
                    return too_big
    except TimeoutError:
        return Response(f"the sign-in form did not come within {FORM_WAIT_S:g} s\n", status_code=408,
                        media_type="text/plain", headers={"Connection": "close"})
    return body


async def login(request: Request) -> Response:
    """``POST /me/login``: a session for the competitor whose token the form holds (303 to /me)."""
    refused = _cross_site(request)
    if refused is not None:
        return refused
    if not await run_in_threadpool(_runs_competition, request):
        return _page(request, 404, error="this arena runs no competition")
    body = await form_body(request)
    if isinstance(body, Response):
        return body
    token = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0].strip()
    gone, sid = await run_in_threadpool(_sign_in, request, token)
    if gone is not None:
        return _page(request, 403, competitor=None, error=gone.line())
    if sid is None:
        return _page(request, 401, competitor=None, error="unknown or revoked competitor token")
    response = RedirectResponse("/me", status_code=303)
    response.set_cookie(COOKIE, sid, max_age=LIFETIME_S, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")
    return response


async def logout(request: Request) -> Response:
    """``POST /me/logout``: end the session."""
    refused = _cross_site(request)
    if refused is not None:
        return refused
    await run_in_threadpool(_sign_out, request)
    response = RedirectResponse("/me", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def _runs_competition(request: Request) -> bool:
    """Whether the output folder holds a competition's book."""
    return bool((request.app.state.web.data.output / BOOK_NAME).is_file())


def _sign_in(request: Request, token: str) -> tuple[Disqualification | None, str | None]:
    """(why the competitor of ``token`` is barred, or None; a new session id, or None: an unknown, revoked or
    barred token). Reads and writes the book: call it off the event loop."""
    book = _book(request)
    if book is None:
        return None, None
    with book:
        who, gone = book.standing(token)
        sid = None if who is None or gone is not None else request.app.state.sessions.open(book, who)
    return gone, sid


def _sign_out(request: Request) -> None:
    """End the request's session (nothing without one, or without a competition): off the event loop."""
    book = _book(request)
    if book is not None:
        with book:
            request.app.state.sessions.close(book, request.cookies.get(COOKIE))


def _signed_in(request: Request, book: CompetitionBook) -> str | None:
    """The competitor of the request's session, or None: no session, or their token was revoked since
    (the session ends with it)."""
    sessions: Sessions = request.app.state.sessions
    sid = request.cookies.get(COOKIE)
    who = sessions.who(book, sid)
    if who is not None and (who, True) not in book.competitors():
        sessions.close(book, sid)
        return None
    return who


def _too_many_reads(request: Request, book: CompetitionBook, who: str) -> Response | None:
    """Count one read of ``who`` against the book's ``reads_per_minute`` (:mod:`arena.competition.reads`):
    None when it may be made, else a 429 saying when to try again (``Retry-After``, seconds)."""
    try:
        per_minute = int(book.get_meta(READS_KEY) or DEFAULT_READS_PER_MINUTE)
    except ValueError:
        per_minute = DEFAULT_READS_PER_MINUTE
    wait = request.app.state.reads.take(who, per_minute)
    if not wait:
        return None
    return Response(f"{wait_line(per_minute, wait)}\n", status_code=429, media_type="text/plain",
                    headers={"Retry-After": str(retry_after(wait))})


def _signed_in_entrants(request: Request) -> set[str] | Response:
    """The entrants of the signed-in competitor (retired ones too), one read counted; else the answer: 401
    without a live session, 429 past ``reads_per_minute``. Reads the book: call it off the event loop."""
    book = _book(request) if request.cookies.get(COOKIE) else None
    if book is None:
        return Response("sign in first at /me\n", status_code=401, media_type="text/plain")
    with book:
        who = _signed_in(request, book)
        if who is None:
            return Response("sign in first at /me\n", status_code=401, media_type="text/plain")
        return _too_many_reads(request, book, who) or \
            {s.entrant for s in book.submissions(who, statuses=("accepted", "playing", "rated"))}


async def log_download(request: Request) -> Response:
    """``GET /me/logs/{game_id}/{seat}``: my seat's log, as an attachment."""
    entrants = await run_in_threadpool(_signed_in_entrants, request)
    if isinstance(entrants, Response):
        return entrants
    game_id, seat = request.path_params["game_id"], request.path_params["seat"]
    try:
        text = await run_in_threadpool(_my_log, request, entrants, game_id, int(seat))
    except NotYours as e:
        return Response(f"{e}\n", status_code=403, media_type="text/plain")
    return Response(text, media_type="text/plain; charset=utf-8",
                    headers={"Content-Disposition": attachment(f"{game_id}-seat{seat}.log")})


def _my_log(request: Request, entrants: set[str], game_id: str, seat: int) -> bytes:
    """:func:`arena.competition.games.seat_log` of the served folder (off the event loop). :raises NotYours:"""
    return seat_log(request.app.state.web.data.output, entrants, players_of(request), game_id, seat)


def attachment(name: str) -> str:
    """A ``Content-Disposition`` naming the download ``name`` (any text: a game id holds the tournament's
    name) as RFC 6266 does: ``filename*`` percent-encoded UTF-8, and an ASCII ``filename`` for old clients
    (a header holds latin-1 only, and a ``"`` would end the quoted name)."""
    plain = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_" for ch in name)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


def my_running(output: Path, entrants: set[str], blind: bool) -> list[dict[str, Any]]:
    """The running games (:func:`arena.report.live.running_games`) seating ``entrants``, with ``seats``: the
    seats they hold; when ``blind`` (the tournament's ``blind_seats``), the other seats are "seat K"."""
    return live.running_games(output, blind=blind, own=entrants)


async def live_seat(request: Request) -> Response:
    """``GET /me/live/{game_id}/{seat}``: my seat's view of a running game (what my bot sees, up to the
    deal under way; reload for more); another's seat 403, no session 401, no such game 404, 503 when the
    live reads' bound stays full (:data:`arena.web.livereads.BUSY`)."""
    entrants = await run_in_threadpool(_signed_in_entrants, request)
    if isinstance(entrants, Response):
        return entrants
    web = request.app.state.web
    game_id, seat = request.path_params["game_id"], int(request.path_params["seat"])
    try:
        seen = await web.competitor_reads.run(seat_view, web.data, game_id, seat, entrants)
    except LiveBusy as e:
        return Response(f"{e}\n", status_code=503, media_type="text/plain")
    if isinstance(seen, Response):
        return seen
    replay, mine = seen
    game = {"game_id": game_id, "reasons": []}
    return web.page("viewer.html", replay=replay, game=game, view=seat, my_seats=mine)  # type: ignore[no-any-return]


def seat_view(data: WebData, game_id: str, seat: int, entrants: set[str]) -> tuple[Replay, list[int]] | Response:
    """My ``seat``'s replay of the running game a page calls ``game_id`` and my seats in it (its "view:" links
    go to my seats' pages only), or the answer: 404 no such game, 403 not my seat. Reads the live files:
    call it through the live reads' bound."""
    blind = data.blind()  # blind: my seats' names only (no opponent's), the game's id hidden
    found = live.find_running(data.output, game_id, blind)
    if found is None:
        return Response(f"no running game {game_id!r}\n", status_code=404, media_type="text/plain")
    lines = found[1]
    names = lines[0].get("seat_names") or []
    if not 0 <= seat < len(names) or names[seat] not in entrants:
        return Response(f"seat {seat} of game {game_id} is not yours\n", status_code=403, media_type="text/plain")
    replay = replay_frames(live.record_lines(lines, live.shown_names(lines[0], blind, entrants)), seat)
    return replay, [k for k, name in enumerate(names) if name in entrants]


def private(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` whose every answer says ``Cache-Control: no-store``: a competitor's pages, logs and
    sign-in answers stay out of shared caches and the browser's history once signed out. The book held locked
    by another process past :data:`arena.web.data.BUSY_WAIT_S` is a 503 with one line and ``Retry-After``."""

    async def run(request: Request) -> Response:
        try:
            response = await handler(request)
        except sqlite3.DatabaseError as e:
            busy = Busy.of("the competition's book", e)
            if busy is e:
                raise
            response = Response(f"{busy}\n", status_code=503, media_type="text/plain",
                                headers={"Retry-After": str(BUSY_RETRY_S)})
        response.headers["Cache-Control"] = "no-store"
        return response

    return run


def attach(app: Starlette) -> None:
    """Give ``app`` the state these pages keep: its :class:`Sessions` and its competitors' reads
    (:class:`arena.competition.reads.ReadAllowance`, at the book's ``reads_per_minute``)."""
    app.state.sessions = Sessions()
    app.state.reads = ReadAllowance()


class SeatConvertor(IntegerConvertor):
    """A seat number in a path: 1 to 4 digits. Starlette's ``int`` took any number of digits and ``int()``
    refuses over 4,300 with ValueError, raised while routing: a 500 and a traceback in the arena's log for
    each request of anyone, signed in or not. A longer one matches no route now (404)."""

    regex = "[0-9]{1,4}"


register_url_convertor("seat", SeatConvertor())

ROUTES = [
    Route("/me", private(me)),
    Route("/me/login", private(login), methods=["POST"]),
    Route("/me/logout", private(logout), methods=["POST"]),
    Route("/me/logs/{game_id:str}/{seat:seat}", private(log_download)),
    Route("/me/live/{game_id:str}/{seat:seat}", private(live_seat)),
]
