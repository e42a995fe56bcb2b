"""The arena's Prometheus metrics (``prometheus_client``, the default registry, beside the referee's
:mod:`referee.metrics`), served by ``arena run --metrics-port P`` and ``arena serve --metrics-port P`` at
``/metrics`` (docs/deploy.md):

- ``allfours_arena_games_stored_total`` (counter): results written to the arena's store;
- ``allfours_arena_forfeits_total{bot,reason}`` (counter): a bot's forfeited seats in stored games, by
  reason (the referee's termination, or the arena's own, e.g. ``oom``);
- ``allfours_arena_workers{bot}`` (gauge): a bot's workers running now (per-game bots: its processes
  and containers playing a seat);
- ``allfours_arena_workers_connected{bot}`` and ``allfours_arena_workers_idle{bot}`` (gauges): a bot's
  workers connected to the lobby, and those of them waiting for a seat (read from the lobby at each
  scrape, :func:`watch_lobby`);
- ``allfours_arena_games_pending`` (gauge): scheduled games not yet stored, as ``arena serve``'s loop last
  counted them (with ``games_stored_total`` flat, a stalled league); those of a bot left out are not counted;
- ``allfours_arena_bots_left_out{bot}`` (gauge): 1 for each bot that failed its check before its first
  game (it must start and join a practice match), or passed it and then failed
  :data:`arena.tournament.league.BROKEN_IN_A_ROW` games in a row for its own fault (it did not start, join,
  or its process died): ``arena serve`` plays none of its games until a reload (SIGHUP) finds it working
  (:meth:`arena.tournament.league.League._leave_out`);
- ``allfours_arena_submissions{status}`` (gauge): a competition's submissions by status, every status
  of :data:`arena.competition.book.STATUSES` (read from its book at each scrape,
  :func:`watch_submissions`; ``failed`` ones wait for the host: ``arena competition retry``).

The referee's metrics (:mod:`referee.metrics`) are served beside them only when the referee runs in the
arena's process (embedded): with external referees, or simulated games, they would read zero, so
:func:`registry` leaves them out (each referee serves its own: ``referee serve --metrics-port``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from arena.tournament.result import GameResult
from referee import metrics as referee_metrics
from referee.rules.seats import side_of

GAMES_STORED = Counter("allfours_arena_games_stored", "Game results written to the arena's store")
FORFEITS = Counter("allfours_arena_forfeits", "A bot's forfeited seats in stored games", ["bot", "reason"])
WORKERS = Gauge("allfours_arena_workers", "A bot's workers running now (per-game: processes/containers)", ["bot"])
GAMES_PENDING = Gauge("allfours_arena_games_pending", "Scheduled games not yet stored (arena serve)")
BOTS_LEFT_OUT = Gauge("allfours_arena_bots_left_out", "1 for a bot that failed its check, or games in a row for its "
                      "own fault: arena serve plays none of its games until a reload", ["bot"])

def game_stored(result: GameResult) -> None:
    """Count one stored result and its forfeited seats (seat k plays for side k % 2)."""
    GAMES_STORED.inc()
    for seat, reason in enumerate(result.terminations):
        if reason.forfeits:
            FORFEITS.labels(result.sides[side_of(seat)], reason.value).inc()


class _LobbyCollector:
    """Reads the lobby's per-bot worker counts at each scrape (no copy to keep current)."""

    def __init__(self) -> None:
        self.counts: Callable[[], Mapping[str, tuple[int, int]]] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        connected = GaugeMetricFamily(
            "allfours_arena_workers_connected", "A bot's workers connected to the lobby", labels=["bot"]
        )
        idle = GaugeMetricFamily(
            "allfours_arena_workers_idle", "A bot's lobby workers waiting for a seat", labels=["bot"]
        )
        for bot, (n, waiting) in sorted((self.counts() if self.counts else {}).items()):
            connected.add_metric([bot], n)
            idle.add_metric([bot], waiting)
        yield connected
        yield idle


_LOBBY = _LobbyCollector()
REGISTRY.register(_LOBBY)


def watch_lobby(counts: Callable[[], Mapping[str, tuple[int, int]]] | None) -> None:
    """Report the lobby's ``counts()`` (bot -> (connected, idle)) from now on (None: stop)."""
    _LOBBY.counts = counts


class _SubmissionsCollector:
    """Reads a competition's submissions by status at each scrape (``arena serve`` with ``[competition]``)."""

    def __init__(self) -> None:
        self.counts: Callable[[], Mapping[str, int]] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = self.counts
        if counts is None:
            return
        from arena.competition.book import STATUSES

        found = counts()
        family = GaugeMetricFamily("allfours_arena_submissions", "A competition's submissions by status",
                                   labels=["status"])
        for status in STATUSES:
            family.add_metric([status], found.get(status, 0))
        yield family


_SUBMISSIONS = _SubmissionsCollector()
REGISTRY.register(_SUBMISSIONS)


def watch_submissions(counts: Callable[[], Mapping[str, int]] | None) -> None:
    """Report ``counts()`` (status -> submissions) from now on (None: stop, before the book closes)."""
    _SUBMISSIONS.counts = counts


class _WithoutReferee(Collector):
    """The default registry's metrics but the referee's (names starting ``allfours_referee_``)."""

    def collect(self) -> Iterator[Metric]:
        for family in REGISTRY.collect():
            if not family.name.startswith(referee_metrics.PREFIX):
                yield family


def registry(embedded_referee: bool) -> CollectorRegistry:
    """What ``arena run --metrics-port`` (and ``arena serve``'s) serves: the default registry (the arena's
    metrics, the process's, and the referee's) when the referee runs in this process, else the same
    without the referee's."""
    if embedded_referee:
        return REGISTRY
    view = CollectorRegistry(auto_describe=False)
    view.register(_WithoutReferee())
    return view
