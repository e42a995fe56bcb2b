"""Reads of the live files (the games running) bounded: at most :data:`MAX_LIVE_READS` at once.

A read of a live file runs on one of the server's threads (anyio's pool: 40 at most, shared by every read
of the web); one that stalls (a slow disk, a file held by another process) holds its thread until it
ends. Unbounded, 40 such requests took every thread, and every other read of the server (the games, the
ratings, a replay) waited behind them. Bounded, a live read waits at most :data:`LIVE_WAIT_S` seconds
for a free slot (a burst of visitors of a running game passes), else :class:`LiveBusy`: the page answers
503 with :data:`BUSY` (one line), or shows its running games as not read (the leaderboard, ``/me``:
:meth:`LiveReads.run_if_free`, None when busy), and the other pages keep the rest of the pool. The
live-update stream's look at the live files' sizes takes a public slot too (a flood of streams cannot hold the
pool): when none comes free the stream skips that look and says ``: busy`` (an SSE comment).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

#: Most reads of live files at once for the public pages (fewer than anyio's 40 threads: the rest stay for
#: the other reads).
MAX_LIVE_READS = 16
#: Most at once for the signed-in competitors' own pages (``/me``, ``/me/live/…``), a bound of their own: when
#: they shared the public one, anonymous spectators holding every slot turned a competitor's own game away.
MAX_COMPETITOR_LIVE_READS = 8
#: Seconds a live read waits for a free slot before :class:`LiveBusy`.
LIVE_WAIT_S = 2.0
#: The answer's text when every slot stays taken (with status 503).
BUSY = "too many reads of running games at once; reload in a moment"
#: Seconds between two looks for a free slot.
_LOOK_S = 0.05

T = TypeVar("T")


class LiveBusy(Exception):
    """Every live-read slot stayed taken :data:`LIVE_WAIT_S` seconds; ``str(e)`` is :data:`BUSY`."""


class LiveReads:
    """The live reads under way, at most ``limit`` (see the module docstring). Thread-safe; its slots are
    counted, not tied to an event loop (a test client may run its requests on several).

    :param limit: most live reads at once.
    :param wait_s: seconds a read waits for a slot before :class:`LiveBusy`.
    """

    def __init__(self, limit: int = MAX_LIVE_READS, wait_s: float = LIVE_WAIT_S) -> None:
        self.limit = limit
        self.wait_s = wait_s
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Slots taken now."""
        with self._lock:
            return self._held

    def _take(self) -> bool:
        with self._lock:
            if self._held >= self.limit:
                return False
            self._held += 1
            return True

    def _give(self) -> None:
        with self._lock:
            self._held -= 1

    async def run(self, read: Callable[..., T], *args: object, give_up: Callable[[], bool] = lambda: False) -> T:
        """``read(*args)`` on one of the server's threads once a slot is free, the slot held until it
        returns (a request cancelled meanwhile still waits for its thread, so a stalled read keeps its slot).

        :param give_up: asked while no slot is free: True stops waiting (the server is stopping).
        :raises LiveBusy: no slot came free within ``wait_s`` seconds, or ``give_up`` said so.
        """
        deadline = time.monotonic() + self.wait_s
        while not self._take():
            if time.monotonic() >= deadline or give_up():
                raise LiveBusy(BUSY)
            await asyncio.sleep(_LOOK_S)
        try:
            return await run_in_threadpool(read, *args)
        finally:
            self._give()

    async def run_if_free(self, read: Callable[..., T], *args: object,
                          give_up: Callable[[], bool] = lambda: False) -> T | None:
        """:meth:`run`, or None when no slot came free within ``wait_s`` seconds or ``give_up`` said so (a page then
        shows what it read as not read now: the leaderboard's and ``/me``'s running games, the live-update stream's
        look)."""
        try:
            return await self.run(read, *args, give_up=give_up)
        except LiveBusy:
            return None
