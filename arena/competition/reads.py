"""How often a competitor may read: their submissions, games, seat logs and pages (docs/competition.md).

Each read is cheap but not free (a seat log is up to 512 KiB from disk, a page renders the competitor's
games), and a competitor's script can ask in a tight loop on both doors: the Submission service
(ListSubmissions, GetSubmission, ListGames, GetSeatLog) and the ``/me`` pages. :class:`ReadAllowance` is a
token bucket per competitor: ``per_minute`` reads a minute, refilled evenly, and at most a quarter of
that (:func:`burst`) at once; past it a read is refused with the seconds to wait. Uploads, registrations
and choices have limits of their own (``submissions_per_day``, ``refused_per_day``) and are not reads.

Each door keeps its own allowance in its own process (``arena web`` may run apart from ``arena
serve``); both read ``[competition] reads_per_minute``: the service from the config, the pages from the
competition's book, where ``arena serve`` writes it (:data:`READS_KEY`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: The competition book's meta key holding ``reads_per_minute`` for the pages (written by ``arena serve``).
READS_KEY = "reads_per_minute"
#: ``reads_per_minute`` when neither the config nor the book says (``CompetitionSettings``' default).
DEFAULT_READS_PER_MINUTE = 120
#: Most competitors an allowance remembers; past it, those whose bucket is full again are forgotten (a
#: full bucket is what a forgotten one starts with, so forgetting changes nothing).
REMEMBERED = 4096


def burst(per_minute: int) -> int:
    """Reads a competitor may make at once: a quarter of ``per_minute``, at least 1."""
    return max(1, per_minute // 4)


@dataclass
class _Bucket:
    tokens: float
    filled: float  # when ``tokens`` was last brought up to date (the allowance's clock, seconds)


class ReadAllowance:
    """Reads left to each competitor (see the module docstring); ``clock`` gives seconds (monotonic; tests
    move it). Thread-safe: the service takes reads on the event loop and the pages on worker threads."""

    def __init__(self, per_minute: int = DEFAULT_READS_PER_MINUTE,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, competitor: str, per_minute: int | None = None) -> float:
        """Count one read of ``competitor``: 0.0 when it may be made, else the seconds until it may (nothing
        counted). ``per_minute``: the rate to apply now (default :attr:`per_minute`; a changed config
        applies at once, each bucket capped at the new :func:`burst`)."""
        per_minute = per_minute or self.per_minute
        rate = per_minute / 60.0
        most = burst(per_minute)
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(competitor)
            if bucket is None:
                if len(self._buckets) >= REMEMBERED:
                    self._forget_full(now, rate, most)
                bucket = self._buckets[competitor] = _Bucket(float(most), now)
            bucket.tokens = min(float(most), bucket.tokens + (now - bucket.filled) * rate)
            bucket.filled = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / rate

    def _forget_full(self, now: float, rate: float, most: int) -> None:
        """Drop the buckets that are full by ``now`` (under the lock)."""
        for name in [n for n, b in self._buckets.items() if b.tokens + (now - b.filled) * rate >= most]:
            del self._buckets[name]


def retry_after(wait_s: float) -> int:
    """``wait_s`` (seconds, as :meth:`ReadAllowance.take` gives) in whole seconds, at least 1."""
    return max(1, math.ceil(wait_s))


def wait_line(per_minute: int, wait_s: float) -> str:
    """The one line of a refused read: the limit and when to try again (:func:`retry_after`)."""
    return (f"too many reads: at most {per_minute} a minute (reads_per_minute), {burst(per_minute)} at once; "
            f"try again in {retry_after(wait_s)} s")
