"""The ASGI app of ``arena web``: pages, the JSON API and the live-update stream of one output folder.

Routes (docs/arena.md, The web):

- ``/`` live leaderboard (ratings, chart, pairwise scores, forfeits per bot, commitment/seed,
  progress) and the games list (``?bot= &result= &termination= &page=``); ``/events`` the
  Server-Sent Events stream that tells the page a game finished (it then reloads its parts from
  ``/_board`` and ``/_games``);
- ``/games/{id}`` the replay viewer (``?seat=K`` for one seat's view); ``/live`` running games and
  ``/live/{id}`` a running game for spectators, delayed (:mod:`arena.web.spectate`);
- ``/me`` a competitor's own page, ``/me/logs/{id}/{seat}`` their seat logs (:mod:`arena.web.competitor`);
- ``/api/ratings``, ``/api/games``, ``/api/games/{id}``, ``/api/games/{id}/record[?seat=K]``,
  ``/api/live``, ``/api/live/{id}``.

Every read of files runs on the server's threads, never the event loop; the live files' reads are bounded
(:mod:`arena.web.livereads`: past the bound a page of running games answers 503, the others keep answering).

Every page is a Jinja2 template with autoescaping; JSON put into a page goes through
:func:`arena.web.render.script_json` (no ``</script>`` can close the tag). Errors are one-line JSON
``{"error": "..."}`` (API) or a short page, with 400 (bad query), 404 (unknown game), 403 (a replay
not open yet) or 503 (too many reads of running games at once: :data:`arena.web.livereads.BUSY`; or the
results database or the competition's book held locked by another process past :data:`arena.web.data.BUSY_WAIT_S`:
one line, "… is busy …; try again in 5 s", with ``Retry-After``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena.ratings.publication import LivePublisher
from arena.report import live
from arena.tournament.lock import held
from arena.web import competitor
from arena.web.data import (
    BUSY_RETRY_S,
    DEFAULT_PER_PAGE,
    TERMINATIONS,
    BadQuery,
    Busy,
    GamesQuery,
    LinkedGameRow,
    NotFound,
    NotYet,
    PublicGameRow,
    WebData,
)
from arena.web.frames import ALL, RecordReplayError, Replay
from arena.web.livereads import MAX_COMPETITOR_LIVE_READS, LiveBusy, LiveReads
from arena.web.render import HERE, board_context, templates
from arena.web.replays import ReplayCache
from arena.web.spectate import spectator_replay
from referee.peers import client_key

#: Most open live-update streams at once (each polls the database once a second).
MAX_STREAMS = 64
#: Most open live-update streams of one client address, an IPv6 client's /64 (one visitor cannot take every slot).
MAX_STREAMS_PER_CLIENT = 8
#: Seconds between two looks at the database for a live-update stream.
POLL_S = 1.0
#: The comment a live-update stream sends when its look found every live-read slot taken, or the results database
#: held locked by another process (:class:`arena.web.data.Busy`): no look this time, the next at the next poll.
BUSY_LOOK = "busy"


#: Headers on every answer: scripts and styles only from this site (an escaping slip would still not
#: run a script), no framing, no MIME sniffing, no referrer to other sites.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class StreamSlots:
    """The live-update streams open now, in all and per client address. A slot is taken while the
    request is answered, before its response starts (no await between the check and the count, so
    concurrent requests cannot all pass), and given back once by :meth:`release`. Thread-safe (a
    dropped response gives its slot back from the garbage collector)."""

    def __init__(self, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, client: str) -> str | None:
        """Take a slot for ``client`` (its address): None if taken, else why not (one line)."""
        with self._lock:
            mine = self.open.get(client, 0)
            if mine >= self.per_client:
                return f"{mine} live-update streams of your address are open already: close one or reload later"
            if sum(self.open.values()) >= self.total:
                return "too many live-update streams; reload later"
            self.open[client] = mine + 1
            return None

    def release(self, client: str) -> None:
        """Give back a slot :meth:`take` gave ``client``."""
        with self._lock:
            left = self.open[client] - 1
            if left:
                self.open[client] = left
            else:
                del self.open[client]


class SlotStream(StreamingResponse):
    """A streaming response holding a :class:`StreamSlots` slot from its creation: given back once, when
    it has been sent or failed (the stream ended, the client went, the task was cancelled), or when it
    is dropped without ever being sent."""

    def __init__(self, content: AsyncIterator[str], slots: StreamSlots, client: str, media_type: str,
                 headers: Mapping[str, str]) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.release = weakref.finalize(self, slots.release, client)
        self.release.atexit = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()


class WebApp:
    """State of one app: the data source, the templates, the change counter for live updates.

    :param spectator_delay: deals a spectator stays behind a running game (:mod:`arena.web.spectate`).
    :param record: with a record file, the app serves only that record's viewer (``arena web --record``).
    """

    def __init__(self, data: WebData, spectator_delay: int = live.DEFAULT_DELAY, record: Path | None = None):
        self.data = data
        self.spectator_delay = spectator_delay
        self.record = record
        self.env = templates()
        self.streams = StreamSlots(MAX_STREAMS, MAX_STREAMS_PER_CLIENT)
        self.replays = ReplayCache()
        self.live_reads = LiveReads()  # the public pages'
        self.competitor_reads = LiveReads(MAX_COMPETITOR_LIVE_READS)  # the signed-in competitors' own pages'
        self.changed = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closing = False

    def notify(self) -> None:
        """Wake the live-update streams now (``arena serve`` calls it when a game finishes); they also
        look at the database every :data:`POLL_S` seconds. Safe from any thread once the app runs."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.changed.set)

    def close_streams(self) -> None:
        """End the live-update streams now (the server is stopping: an open page would otherwise hold
        the graceful shutdown until it is cancelled). Safe from any thread and from a signal handler."""
        self.closing = True
        self.notify()

    def replay(self, game_id: str, view: str | int) -> Replay:
        """The replay of stored game ``game_id`` in ``view`` (:data:`ALL` or a seat), kept while its record
        does not change (:class:`arena.web.replays.ReplayCache`). Reads files: call it off the event loop.

        :raises NotFound: unknown game, or no record inside ``records/``.
        :raises NotYet: its duplicate twin is not finished.
        :raises RecordReplayError: a record that does not replay, or no such seat.
        """
        return self.replays.replay(self.data.output / "records", self.data.record_path(game_id), view)

    def running(self) -> list[dict[str, Any]]:
        """The games running now (live files of games not stored yet); a blind tournament's name no entrant.
        Reads the live files (a slow disk, a big file): call it through :attr:`live_reads`."""
        stored = self.data.stored_ids(live.live_files(self.data.output))
        return live.running_games(self.data.output, stored, blind=self.data.blind())

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        """Render template ``name``."""
        return HTMLResponse(self.env.get_template(name).render(**ctx), status_code=status)

    # ------------------------------------------------------------------ leaderboard
    def board_context(self, running: list[dict[str, Any]] | None, all_versions: bool = False) -> dict[str, Any]:
        """Everything the leaderboard's board shows (:func:`arena.web.render.board_context`), with the
        games per second and the ``running`` games of a live league (:meth:`running` through
        :meth:`LiveReads.run_if_free`; None: not read);
        in a competition each competitor's best-rated version only, unless ``all_versions`` (``?versions=all``)."""
        ratings = self.data.ratings()
        hidden = set() if all_versions else competitor.older_versions(self.data.output, list(ratings["ratings"]))
        return board_context(ratings, ratings["tournament"], self.data.forfeits(), running=running,
                             rate=self.data.rate(), hidden=hidden)

    def games_context(self, request: Request) -> dict[str, Any]:
        """The games list of the query in ``request``, and ``keep``: the query's other parameters that its
        pager and filter form carry on (``per_page`` when not the default, ``versions=all``).
        :raises BadQuery: for a bad filter."""
        q = games_query(request)
        page = self.data.games(q)
        keep: dict[str, str | int] = {} if q.per_page == DEFAULT_PER_PAGE else {"per_page": q.per_page}
        if request.query_params.get("versions") == "all":
            keep["versions"] = "all"
        return {"q": q, "page": page, "terminations": TERMINATIONS, "bots": list(self.data.facts().get("bots", {})),
                "keep": keep}


def games_query(request: Request) -> GamesQuery:
    """The :class:`GamesQuery` of a request's query string. :raises BadQuery: for a non-number page."""
    p = request.query_params
    try:
        page = int(p.get("page", "1"))
        per_page = int(p.get("per_page", str(DEFAULT_PER_PAGE)))
    except ValueError:
        raise BadQuery("page and per_page must be whole numbers") from None
    q = GamesQuery(p.get("bot") or None, p.get("result") or None, p.get("termination") or None, page, per_page)
    q.check()
    return q


def seat_param(request: Request) -> str | int:
    """``?seat=K`` as a seat number, or :data:`ALL`. :raises BadQuery: when not a whole number."""
    raw = request.query_params.get("seat")
    if raw in (None, "", ALL):
        return ALL
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 2:  # isdigit alone takes "²", which int refuses
        raise BadQuery(f"seat must be a seat number, not {raw!r}")
    return int(raw)


def _error(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    app: WebApp = request.app.state.web
    return app.page("error.html", status, message=message, code=status)


def guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """Turn the data layer's errors into 400/403/404 answers, a live read's :class:`LiveBusy` into 503 (one
    line), and a database another process holds locked (:class:`Busy`) into 503 with ``Retry-After``."""

    async def run(request: Request) -> Response:
        try:
            response: Response = await handler(request)
            return response
        except BadQuery as e:
            return _error(request, 400, str(e))
        except NotYet as e:
            return _error(request, 403, str(e))
        except (NotFound, RecordReplayError) as e:
            return _error(request, 404, str(e))
        except LiveBusy as e:
            return _error(request, 503, str(e))
        except Busy as e:  # a database another process holds: after a short wait, not sqlite's
            busy = _error(request, 503, str(e))
            busy.headers["Retry-After"] = str(BUSY_RETRY_S)
            return busy

    return run


# ---------------------------------------------------------------------- handlers


async def index(request: Request) -> Response:
    app: WebApp = request.app.state.web
    if app.record is not None:
        return await viewer_of_file(request)
    running = await app.live_reads.run_if_free(app.running)
    board = await run_in_threadpool(app.board_context, running, request.query_params.get("versions") == "all")
    games = await run_in_threadpool(app.games_context, request)
    busy = await run_in_threadpool(held, app.data.output)  # the badge before any script runs
    return app.page("leaderboard.html", **board, **games, live=busy)


async def board_part(request: Request) -> Response:
    app: WebApp = request.app.state.web
    all_versions = request.query_params.get("versions") == "all"
    running = await app.live_reads.run_if_free(app.running)
    return app.page("_board.html", **await run_in_threadpool(app.board_context, running, all_versions))


async def games_part(request: Request) -> Response:
    app: WebApp = request.app.state.web
    return app.page("_games.html", **await run_in_threadpool(app.games_context, request))


async def events(request: Request) -> Response:
    """Server-Sent Events: ``event: games`` with ``{"played": N, "running": bool}`` when the stored games, a
    running game's live file or the background bootstrap change (nothing of how: no live file's size). A stream
    takes its slot here, before the answer starts; with none free (:data:`MAX_STREAMS` in all,
    :data:`MAX_STREAMS_PER_CLIENT` of the client's address, an IPv6 client's /64:
    :func:`referee.peers.client_key`) the answer is 503 with one line."""
    app: WebApp = request.app.state.web
    client = client_key(request.client.host) if request.client is not None else ""  # an IPv6 visitor: its /64
    refused = app.streams.take(client)
    if refused is not None:
        return JSONResponse({"error": refused}, status_code=503)
    try:
        return SlotStream(live_updates(request, app), app.streams, client, "text/event-stream",
                          {"Cache-Control": "no-store"})
    except BaseException:
        app.streams.release(client)
        raise


async def live_updates(request: Request, app: WebApp) -> AsyncIterator[str]:
    """The events of one live-update stream, until the client goes or the server stops. Each look
    (:func:`live_version`: it reads the live files' sizes) takes a public live-read slot
    (:attr:`WebApp.live_reads`); when none comes free, or the results database is held locked by another
    process past :data:`arena.web.data.BUSY_WAIT_S` (:class:`Busy`), the stream says ``: busy`` (a comment)
    and looks again at the next poll (it stays open); a server stopping ends a stream waiting for a slot at
    once (not after ``: busy``)."""
    last = None
    idle = 0.0
    yield "retry: 2000\n\n"
    while not app.closing and not await request.is_disconnected():
        # the live files' sizes: a live read; a server stopping meanwhile ends the stream at once
        try:
            now = await app.live_reads.run_if_free(live_version, app, give_up=lambda: app.closing)
        except Busy:  # the database held by another process (a page would answer 503): no look this time
            now = None
        if app.closing:
            break
        if now is None:  # no live-read slot came free, or the database was busy: no look this time, said as a comment
            idle = 0.0
            yield f": {BUSY_LOOK}\n\n"
        elif now != last:
            last = now
            idle = 0.0
            # not the live files' summed size (now[2]): a blind game's header, its entrants' names and
            # pairing's numbers, made it, so it told the pairings apart; only that something changed
            data = {"played": now[0], "running": now[4]}
            yield f"event: games\ndata: {json.dumps(data)}\n\n"
        elif idle >= 15:
            idle = 0.0
            yield ": keep-alive\n\n"
        app.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(app.changed.wait(), POLL_S)
        idle += POLL_S


def live_version(app: WebApp) -> tuple[int, float, int, int | None, bool]:
    """(games stored, last stored time, live files' summed progress, games the newest background
    bootstrap covers, whether an arena is running on the folder: :func:`arena.tournament.lock.held`):
    what the stream watches.

    :raises Busy: the results database held locked by another process past :data:`arena.web.data.BUSY_WAIT_S`.
    """
    count, last = app.data.version()
    running = held(app.data.output)
    return count, last, live.progress_mark(app.data.output), app.data.bootstrap_mark(), running


async def viewer(request: Request) -> Response:
    app: WebApp = request.app.state.web
    game_id = request.path_params["game_id"]
    view = seat_param(request)
    game = await run_in_threadpool(app.data.game, game_id)
    replay = await run_in_threadpool(app.replay, game_id, view)
    return app.page("viewer.html", replay=replay, game=game, view=view, base="/", static_copy=False)


async def viewer_of_file(request: Request) -> Response:
    """``arena web --record FILE``: the viewer of that one record (a bot author's own match), read and
    replayed on the server's threads and kept while the file does not change (:attr:`WebApp.replays`)."""
    app: WebApp = request.app.state.web
    assert app.record is not None
    view = seat_param(request)
    replay = await run_in_threadpool(app.replays.replay, app.record.parent, app.record, view)  # resolved there
    game = {"game_id": app.record.name, "a": "", "b": "", "reasons": []}
    return app.page("viewer.html", replay=replay, game=game, view=view, base="/", static_copy=False)


async def live_list(request: Request) -> Response:
    app: WebApp = request.app.state.web
    return app.page("live.html", running=await app.live_reads.run(app.running), delay=app.spectator_delay)


async def live_viewer(request: Request) -> Response:
    app: WebApp = request.app.state.web
    replay = await app.live_reads.run(spectator_replay, app.data, request.path_params["game_id"], app.spectator_delay)
    game = {"game_id": request.path_params["game_id"], "reasons": []}
    return app.page("viewer.html", replay=replay, game=game, view=ALL, spectator=True, delay=app.spectator_delay)


async def api_ratings(request: Request) -> Response:
    app: WebApp = request.app.state.web
    return JSONResponse(await run_in_threadpool(app.data.ratings))


async def api_games(request: Request) -> Response:
    app: WebApp = request.app.state.web
    q = games_query(request)
    page = await run_in_threadpool(app.data.games, q)
    return JSONResponse({**page, "games": [_links(g) for g in page["games"]]})


def _links(g: PublicGameRow) -> LinkedGameRow:
    """The row with the API's record link in place of the record's file path, and the replay page
    (``None`` while the replay is closed)."""
    from urllib.parse import quote

    gid = quote(g["game_id"], safe="")
    record = f"/api/games/{gid}/record" if g.get("replay_open") and g.get("record") else None
    return {**g, "record": record, "viewer": f"/games/{gid}" if record else None}


async def api_game(request: Request) -> Response:
    app: WebApp = request.app.state.web
    return JSONResponse(_links(await run_in_threadpool(app.data.game, request.path_params["game_id"])))


async def api_record(request: Request) -> Response:
    app: WebApp = request.app.state.web
    view = seat_param(request)
    return JSONResponse(await run_in_threadpool(app.replay, request.path_params["game_id"], view))


async def api_live(request: Request) -> Response:
    app: WebApp = request.app.state.web
    return JSONResponse({"delay_deals": app.spectator_delay, "running": await app.live_reads.run(app.running)})


async def api_live_game(request: Request) -> Response:
    app: WebApp = request.app.state.web
    gid = request.path_params["game_id"]
    return JSONResponse(await app.live_reads.run(spectator_replay, app.data, gid, app.spectator_delay))


def create_app(
    output: Path,
    *,
    spectator_delay: int = live.DEFAULT_DELAY,
    record: Path | None = None,
    bootstrap: int | None = None,
    publisher: LivePublisher | None = None,
) -> Starlette:
    """The ASGI app serving ``output`` (see the module docstring); ``app.state.web`` is the
    :class:`WebApp` (its :meth:`WebApp.notify` wakes the live pages at once).

    :param spectator_delay: deals a spectator stays behind a running game (at least 1).
    :param record: serve only the viewer of this record file (``arena web --record FILE``).
    :param bootstrap: resamples of the ratings' bootstrap intervals (default as ``arena run``).
    :param publisher: the ratings' live publisher to share (``arena serve --web``: the league's, whose
        ``on_done`` should call :meth:`WebApp.notify`). Without one, the running app starts its own
        (closed when it stops): ratings live at once, the bootstrap computed in the background.
    """
    from arena.ratings.fit import DEFAULT_BOOTSTRAP

    if spectator_delay < 1:
        raise ValueError(f"the spectator delay must be at least 1 deal, not {spectator_delay}")
    data = WebData(output, DEFAULT_BOOTSTRAP if bootstrap is None else bootstrap, publisher)
    web = WebApp(data, spectator_delay, record)
    g = guarded
    routes = [
        Route("/", g(index)),
        Route("/_board", g(board_part)),
        Route("/_games", g(games_part)),
        Route("/events", events),
        Route("/games/{game_id:str}", g(viewer)),
        Route("/live", g(live_list)),
        Route("/live/{game_id:str}", g(live_viewer)),
        Route("/api/ratings", g(api_ratings)),
        Route("/api/games", g(api_games)),
        Route("/api/games/{game_id:str}", g(api_game)),
        Route("/api/games/{game_id:str}/record", g(api_record)),
        Route("/api/live", g(api_live)),
        Route("/api/live/{game_id:str}", g(api_live_game)),
        *competitor.ROUTES,
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        web.loop = asyncio.get_running_loop()
        own = None
        if publisher is None:
            own = data.publisher = LivePublisher(data.bootstrap, on_done=lambda _: web.notify())
        try:
            yield
        finally:
            if own is not None:
                data.publisher = None
                own.close()

    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(SecurityHeaders)])
    app.state.web = web
    competitor.attach(app)
    return app
