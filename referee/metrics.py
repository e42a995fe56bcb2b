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

Decision latencies are kept per match (a list append on the decision path) and observed when the
match ends, so the hot path pays no lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server

#: Buckets of the decision latency histogram, in seconds (a decision limit is usually 0.2-10 s).
DECISION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

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


def serve(port: int, host: str = "127.0.0.1", registry: CollectorRegistry = REGISTRY) -> int:
    """Serve ``registry``'s ``/metrics`` over HTTP on ``host:port`` (0: a free port) in a daemon thread;
    returns the port.

    :raises OSError: if the port cannot be bound.
    """
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return int(server.server_port)
