"""The arena's Prometheus metrics (``prometheus_client``, the default registry, beside the referee's
:mod:`referee.metrics`), served by ``arena run --metrics-port P`` at ``/metrics`` (docs/deploy.md):

- ``allfours_arena_games_stored_total`` (counter): results written to the arena's store;
- ``allfours_arena_forfeits_total{bot,reason}`` (counter): a bot's forfeited seats in stored games, by
  reason (the referee's termination, or the arena's own, e.g. ``oom``);
- ``allfours_arena_workers{bot}`` (gauge): a bot's workers running now (per-game bots: its processes
  and containers playing a seat).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from arena.store import GameResult

GAMES_STORED = Counter("allfours_arena_games_stored", "Game results written to the arena's store")
FORFEITS = Counter("allfours_arena_forfeits", "A bot's forfeited seats in stored games", ["bot", "reason"])
WORKERS = Gauge("allfours_arena_workers", "A bot's workers running now (per-game: processes/containers)", ["bot"])

#: Seat terminations that are not a forfeit of that seat.
NOT_FORFEITS = frozenset({"normal", "other_seat_forfeited", "aborted", ""})


def game_stored(result: GameResult) -> None:
    """Count one stored result and its forfeited seats (seat k plays for side k % 2)."""
    GAMES_STORED.inc()
    for seat, reason in enumerate(result.extra.get("terminations", ())):
        if reason not in NOT_FORFEITS:
            FORFEITS.labels(result.sides[seat % 2], reason).inc()
