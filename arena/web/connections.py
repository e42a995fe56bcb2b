"""The web server's connections, bounded: one visitor cannot take every file descriptor of the process.

uvicorn keeps a connection open, without a timer, from the moment it is accepted until a request's head
has come, and again from the first byte of the next request on a kept-alive one: a visitor that opened
connections and sent nothing (or one byte) held each for ever. A few hundred of them took every file
descriptor of the process, and then the server refused everyone (measured: under a 256-descriptor limit,
400 idle connections from one address and another address's request was refused); under ``arena serve
--web`` the league's own process (its referees, records, store) would run out too.

:func:`bounded_protocol` is uvicorn's h11 protocol with three bounds, each answered in one line and the
connection closed:

- at most :data:`MAX_CONNECTIONS_PER_CLIENT` (and a quarter of the total) open connections of one client
  address (an IPv6 client its /64, which one machine holds whole), except a trusted reverse proxy's
  (``--proxy``: it carries every visitor); past it ``503`` ``too many connections from your address``;
- at most :func:`total_cap` in all (:data:`MAX_CONNECTIONS`); past it ``503`` ``too many connections``;
- a request's head must have come within :data:`HEAD_TIMEOUT_S` seconds of the connection's start, or
  of the end of its last answer; else ``408``. A request being answered (a live-update stream) is not
  timed: the app bounds those itself (``arena.web.app.MAX_STREAMS``).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from referee.peers import client_key

#: Most open connections of one client address (a browser opens about 6; a page holds one live stream).
MAX_CONNECTIONS_PER_CLIENT = 32
#: Most open connections in all (fewer when the process may open fewer than 8 times as many files:
#: :func:`total_cap`).
MAX_CONNECTIONS = 512
#: Connections the server accepts at once (the listening socket's backlog: asyncio accepts up to that many
#: in a row before any is answered, so a burst past it cannot take more descriptors than this at once).
ACCEPT_BACKLOG = 128
#: Seconds a connection may wait for a request's head (from its start, or the end of its last answer).
HEAD_TIMEOUT_S = 10.0


def total_cap() -> int:
    """The most connections open at once: :data:`MAX_CONNECTIONS`, or an eighth of the files this process may
    open (``RLIMIT_NOFILE``) when that is fewer, so that visitors, with a burst of
    :data:`ACCEPT_BACKLOG` more being accepted, never take what the arena needs."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(1, min(MAX_CONNECTIONS, soft // 8))


class ConnectionCounts:
    """The open connections, in all and per :func:`referee.peers.client_key` (an IPv6 client's /64); used from
    the server's event loop only. ``exempt``: the networks (``10.0.0.0/24``) whose peers have no cap of their
    own (trusted proxies)."""

    def __init__(self, total: int, per_client: int, exempt: Sequence[str] = ()) -> None:
        self.total = total
        self.per_client = per_client
        self.exempt = tuple(ipaddress.ip_network(n, strict=False) for n in exempt)
        self.open: dict[str, int] = {}

    def _exempt(self, host: str) -> bool:
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in net for net in self.exempt)

    def take(self, host: str) -> str | None:
        """Count a new connection of peer ``host``: None, or why it is refused (one line; not counted)."""
        key = client_key(host)
        if not self._exempt(host) and self.open.get(key, 0) >= self.per_client:
            return f"too many connections from your address (at most {self.per_client}): close some and retry"
        if sum(self.open.values()) >= self.total:
            return "too many connections; retry later"
        self.open[key] = self.open.get(key, 0) + 1
        return None

    def release(self, host: str) -> None:
        """Uncount a connection :meth:`take` counted."""
        key = client_key(host)
        left = self.open.get(key, 0) - 1
        if left > 0:
            self.open[key] = left
        else:
            self.open.pop(key, None)


def plain_answer(status: int, reason: str, line: str) -> bytes:
    """A whole HTTP/1.1 answer of ``status`` with the one-line text body ``line`` that closes the connection."""
    body = (line + "\n").encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"x-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
            ).encode() + body


def bounded_protocol(counts: ConnectionCounts, head_timeout: float = HEAD_TIMEOUT_S) -> type[H11Protocol]:
    """uvicorn's h11 protocol under ``counts`` and ``head_timeout`` (the module docstring), for
    ``uvicorn.Config(http=...)``; one class per server (its counts are the server's)."""

    class BoundedH11(H11Protocol):
        _counted: str | None = None
        _head_timer: asyncio.TimerHandle | None = None
        _waiting: Any = None  # the cycle that was the last when the head timer was armed

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else ""
            refused = counts.take(host)
            if refused is not None:
                transport.write(plain_answer(503, "Service Unavailable", refused))
                transport.close()
                return
            self._counted = host
            self._arm()

        def _arm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._waiting = self.cycle
            self._head_timer = self.loop.call_later(head_timeout, self._head_late)

        def _head_late(self) -> None:
            self._head_timer = None
            cycle = self.cycle
            if cycle is not self._waiting or (cycle is not None and not cycle.response_complete):
                return  # a request came since (its answer's end arms the timer again) or is being answered
            if not self.transport.is_closing():
                self.transport.write(plain_answer(
                    408, "Request Timeout", f"no request came within {head_timeout:g} s: connection closed"))
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            if self._counted is not None:
                counts.release(self._counted)
                self._counted = None

    return BoundedH11
