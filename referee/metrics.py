"""The referee's Prometheus metrics (``prometheus_client``, its default registry).

Exposed over HTTP by ``referee serve --metrics-port P`` (``GET /metrics``; docs/deploy.md,
"Metrics"); the arena's own (:mod:`arena.metrics`) share the registry, so an arena with an embedded
referee shows both on its ``--metrics-port`` (one without shows only its own:
:func:`arena.metrics.registry`). The counters (``prometheus_client`` adds ``_total``):

- ``allfours_referee_matches_running`` (gauge): matches created and not finished;
- ``allfours_referee_matches_total{status}`` (counter): finished matches by status (``completed``,
  ``forfeited``, ``aborted``);
- ``allfours_referee_decisions_total`` (counter): answers to decision requests (decisions/s is its
  rate: ``rate(allfours_referee_decisions_total[1m])``);
- ``allfours_referee_decision_seconds`` (histogram): from a request's sending to its answer;
- ``allfours_referee_forfeits_total{reason}`` (counter): forfeited seats by termination (``timeout``,
  ``disconnect``, ``no_show``, …);

With a **metrics token** (``$ALLFOURS_METRICS_TOKEN``, or the file ``$ALLFOURS_METRICS_TOKEN_FILE`` names:
:func:`metrics_token`) every request must carry ``Authorization: Bearer <token>`` (Prometheus:
``authorization: {credentials_file: …}``); any other gets 401 and no metric. The metrics say which
entrants are playing now, so on a network the bots share (a compose stack's) they are the host's alone.

Decision latencies are kept per match (a list append on the decision path) and observed when the
match ends, so the hot path pays no lock.
"""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from referee.credentials import env_secret

#: The environment variable of the metrics token (or its ``_FILE``: :mod:`referee.credentials`).
ENV_METRICS_TOKEN = "ALLFOURS_METRICS_TOKEN"

#: Buckets of the decision latency histogram, in seconds (a decision limit is usually 0.2-10 s).
DECISION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: Seconds a metrics client has for each read of its request: a silent or slow one (a slowloris) is cut
#: off then, instead of holding a thread of the server for ever.
CLIENT_TIMEOUT_S = 5.0
#: Clients the metrics server serves at once (a scrape takes milliseconds); one more is closed at once,
#: so clients that hold connections open cannot pile up threads in the referee's (or arena's) process.
MAX_CLIENTS = 16

#: The start of every referee metric's name.
PREFIX = "allfours_referee_"

MATCHES_RUNNING = Gauge("allfours_referee_matches_running", "Matches created and not finished")
MATCHES = Counter("allfours_referee_matches", "Finished matches by status", ["status"])
DECISIONS = Counter("allfours_referee_decisions", "Answers to decision requests")
DECISION_SECONDS = Histogram(
    "allfours_referee_decision_seconds", "Seconds from a decision request to its answer", buckets=DECISION_BUCKETS
)
REFEREE_FORFEITS = Counter("allfours_referee_forfeits", "Forfeited seats by termination", ["reason"])


def match_finished(status: str, forfeits: Iterable[str], latencies_s: Iterable[float]) -> None:
    """Count one finished match: its ``status``, its forfeited seats' reasons, its decision latencies."""
    MATCHES_RUNNING.dec()
    MATCHES.labels(status).inc()
    for reason in forfeits:
        REFEREE_FORFEITS.labels(reason).inc()
    n = 0
    for s in latencies_s:
        DECISION_SECONDS.observe(s)
        n += 1
    DECISIONS.inc(n)


def metrics_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The token a scraper must send (``$ALLFOURS_METRICS_TOKEN`` or its file), None when unset: the
    metrics are then open to whoever reaches the port.

    :raises referee.credentials.SecretError: its file cannot be read, or it is given twice (one line).
    """
    return env_secret(ENV_METRICS_TOKEN, environ)


def serve(port: int, host: str = "127.0.0.1", registry: CollectorRegistry = REGISTRY,
          token: str | None = None) -> int:
    """Serve ``registry``'s ``/metrics`` over HTTP on ``host:port`` (0: a free port) in a daemon thread;
    returns the port. With ``token``, a request without ``Authorization: Bearer <token>`` gets 401. At
    most :data:`MAX_CLIENTS` clients at once, each :data:`CLIENT_TIMEOUT_S` per read of its request.

    :raises OSError: if the port cannot be bound or ``host`` not resolved.
    """
    app = make_wsgi_app(registry)
    if token is not None:
        app = _bearer_only(app, token)
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    server_class: type[_Bounded] = type("MetricsServer", (_Bounded,), {"address_family": family})
    server: WSGIServer = make_server(str(address[0]), port, app, server_class, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return int(server.server_port)


_App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _bearer_only(app: _App, token: str) -> _App:
    """``app`` behind a bearer token (compared in constant time); any other request: 401, one line."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode("utf-8", "replace")
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                            ("WWW-Authenticate", 'Bearer realm="metrics"')])
        return [b"metrics need the metrics token: Authorization: Bearer <ALLFOURS_METRICS_TOKEN>\n"]

    return guarded


class _Bounded(ThreadingWSGIServer):
    """A thread per client, at most :data:`MAX_CLIENTS` at once: one more is closed unanswered."""

    def server_activate(self) -> None:
        self.slots = threading.BoundedSemaphore(MAX_CLIENTS)
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()  # no thread started to give it back
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class _Quiet(WSGIRequestHandler):
    """No access log line per scrape on stderr; a client that is silent for :data:`CLIENT_TIMEOUT_S` (or
    goes away) mid-request is dropped without a traceback."""

    timeout = CLIENT_TIMEOUT_S

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # TimeoutError, a reset: nothing to answer
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass
