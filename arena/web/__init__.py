"""``arena web``: the arena's web face — live leaderboard, replay viewer, spectators, JSON API.

Interface (small on purpose, for ``arena serve`` and tests):

- :func:`arena.web.app.create_app` ``(output, spectator_delay=1, record=None) -> Starlette``: the
  ASGI app of one output folder; ``app.state.web.notify()`` wakes the live pages at once.
- :func:`serve` ``(output, bind(host, port), ...)``: run it with uvicorn until interrupted (``arena web``).
- :func:`start_in_thread` ``(output, host, port, ...) -> WebServer``: run it in a background thread
  of the calling process (``arena serve --web PORT``): ``.port``, ``.notify()`` after each stored
  game, ``.stop()``.
- Both take ``proxies`` (:func:`trusted_proxies`): the reverse proxies in front (a TLS proxy, a load
  balancer) whose ``X-Forwarded-For`` names the client. Without them every visitor through a proxy has
  the proxy's address, and one address holds at most
  :data:`arena.web.app.MAX_STREAMS_PER_CLIENT` live-update streams; from any other peer the header is
  ignored (a visitor cannot claim another's address). uvicorn's ``ProxyHeadersMiddleware`` reads it.

Modules: :mod:`arena.web.app` (routes), :mod:`arena.web.data` (read-only database and records),
:mod:`arena.web.frames` (record -> viewer frames, from ``observe``), :mod:`arena.web.replays` (finished
games' replays kept, bounded), :mod:`arena.web.livereads` (the live files' reads, bounded), :mod:`arena.web.spectate`
(running games, delayed; the live files are :mod:`arena.report.live`), :mod:`arena.web.export` (the static
viewer copies linked from leaderboard.html), :mod:`arena.web.connections` (the server's connections, bounded per
client address and in all, a request's head timed). Pages and API: docs/arena.md, The web.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypedDict, Unpack

if TYPE_CHECKING:  # imported where used: `arena serve` without --web starts neither
    import uvicorn
    from starlette.applications import Starlette

    from arena.ratings.publication import LivePublisher


class AppOptions(TypedDict, total=False):
    """The options of :func:`arena.web.app.create_app` besides the output folder (see there)."""

    spectator_delay: int
    record: Path | None
    bootstrap: int | None
    publisher: LivePublisher | None

#: Seconds uvicorn waits for open streams (live updates) when it stops.
GRACEFUL_S = 1


def trusted_proxies(values: Sequence[str]) -> tuple[str, ...]:
    """The reverse proxies to trust, each an IP address or network (``10.0.0.5``, ``10.0.0.0/24``,
    ``::1``), normalised. :raises ValueError: one line naming the first that is neither."""
    out = []
    for v in values:
        try:
            out.append(str(ipaddress.ip_network(v.strip(), strict=False)))
        except ValueError:
            raise ValueError(f"{v!r} is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)") from None
    return tuple(out)


def _config(app: Starlette, host: str, port: int, proxies: Sequence[str]) -> uvicorn.Config:
    """uvicorn's settings: its connections bounded (:mod:`arena.web.connections`; a trusted proxy's peer has
    no per-address cap of its own) and ``proxies``' ``X-Forwarded-For`` read."""
    import uvicorn

    from arena.web.connections import (
        ACCEPT_BACKLOG,
        MAX_CONNECTIONS_PER_CLIENT,
        ConnectionCounts,
        bounded_protocol,
        total_cap,
    )

    total = total_cap()
    counts = ConnectionCounts(total, min(MAX_CONNECTIONS_PER_CLIENT, max(1, total // 4)), exempt=proxies)
    return uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=GRACEFUL_S, lifespan="on",
        access_log=False, proxy_headers=bool(proxies), forwarded_allow_ips=list(proxies) or None,
        server_header=False, http=bounded_protocol(counts), backlog=ACCEPT_BACKLOG,
    )


def _server(app: Starlette, host: str, port: int, proxies: Sequence[str] = ()) -> uvicorn.Server:
    """A uvicorn server of ``app`` that ends the app's live-update streams first when it is told to stop
    (by a signal, or :meth:`WebServer.stop`), so that stopping never waits for an open page."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            app.state.web.close_streams()
            super().handle_exit(sig, frame)

    return Server(_config(app, host, port, proxies))


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: a free port), for :func:`serve` or :func:`start_in_thread`.

    :raises OSError: if the address cannot be bound (e.g. ``Address already in use``).
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve(output: Path, sock: socket.socket, proxies: Sequence[str] = (), **options: Unpack[AppOptions]) -> None:
    """Serve ``output`` on the bound ``sock`` (:func:`bind`: a busy port is an error before anything is
    printed) until interrupted, trusting ``proxies``' ``X-Forwarded-For`` (:func:`trusted_proxies`;
    ``options``: see :func:`arena.web.app.create_app`)."""
    from arena.web.app import create_app

    host, port = sock.getsockname()[:2]
    _server(create_app(output, **options), host, port, proxies).run(sockets=[sock])


@dataclass
class WebServer:
    """A web app running in a background thread (see :func:`start_in_thread`)."""

    server: uvicorn.Server
    thread: threading.Thread
    app: Starlette
    port: int

    def notify(self) -> None:
        """Tell the live pages now that a game finished (they also poll every second)."""
        self.app.state.web.notify()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving (the live-update streams end first) and wait (bounded) for the thread."""
        self.app.state.web.close_streams()
        self.server.should_exit = True
        self.thread.join(timeout)


def start_in_thread(
    output: Path, host: str = "127.0.0.1", port: int = 0, proxies: Sequence[str] = (),
    sock: socket.socket | None = None, **options: Unpack[AppOptions]
) -> WebServer:
    """Start the app of ``output`` on ``host:port`` (0: a free port), or on ``sock`` already bound
    (:func:`bind`), in a daemon thread, trusting ``proxies``' ``X-Forwarded-For``
    (:func:`trusted_proxies`); returns once it accepts connections (at most 10 s).

    :raises OSError: if the address cannot be bound.
    :raises RuntimeError: if the server does not start in time.
    """
    from arena.web.app import create_app

    sock = sock if sock is not None else bind(host, port)
    app = create_app(output, **options)
    server = _server(app, host, sock.getsockname()[1], proxies)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="arena-web", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)
    return WebServer(server, thread, app, sock.getsockname()[1])
