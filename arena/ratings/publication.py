"""Live and final publication of ratings, for a league that republishes after every game.

- **Live** (:func:`live_ratings`): after each game, the maximum-likelihood ratings with the normal
  approximation's intervals (``bootstrap=0``: milliseconds at league scale), marked
  ``"publication": "live"`` and ``"intervals": "normal approximation"``.
- **Final** (:func:`final_ratings`): the bootstrap intervals (``arena run`` publishes these at the end),
  marked ``"publication": "final"``.
- **Refreshing** (:class:`BootstrapRefresher`): a league asks for a bootstrap of the games so far after
  each game; one background thread computes it, always for the newest games asked for (older requests
  still waiting are dropped), and :meth:`BootstrapRefresher.latest` returns the newest finished one
  with the number of games it covers, so a page can show the live ratings with the last bootstrap
  intervals beside them.

The league loop's seam (``arena serve``): :class:`LivePublisher` does all three::

    publisher = LivePublisher(bootstrap=1000, on_done=lambda done: republish())
    ...after each stored game (and in ``republish``):
        publish(publisher.ratings(games, names=bots))   # at once; the bootstrap once it covers these games
    ...at shutdown: publisher.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from arena.ratings.fit import DEFAULT_BOOTSTRAP, Game, RatingTable, rate


def live_ratings(
    games: Sequence[Game], names: Iterable[str] = (), anchor: tuple[str, float] | None = None
) -> RatingTable:
    """The :func:`arena.ratings.fit.rate` result with normal-approximation intervals, marked live."""
    result = rate(games, anchor=anchor, bootstrap=0, names=names)
    return {**result, "publication": "live", "intervals": "normal approximation"}


def final_ratings(
    games: Sequence[Game],
    names: Iterable[str] = (),
    anchor: tuple[str, float] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> RatingTable:
    """The :func:`arena.ratings.fit.rate` result with bootstrap intervals, marked final."""
    result = rate(games, anchor=anchor, bootstrap=bootstrap, seed=seed, names=names)
    return {**result, "publication": "final", "intervals": "bootstrap" if bootstrap else "normal approximation"}


@dataclass(frozen=True, slots=True)
class Refreshed:
    """A finished background bootstrap: ``ratings`` (a :func:`final_ratings` result) of the first
    ``games`` games, with the entrants ``names`` it was asked for (those without games are listed unrated)."""

    games: int
    ratings: RatingTable
    names: tuple[str, ...] = ()


class BootstrapRefresher:
    """Bootstrap intervals computed in one background thread, newest request first (see the module docstring).

    :param bootstrap: resamples per refresh; ``seed``: their seed.
    :param on_done: called in the background thread with each finished refresh (e.g. to republish).
    A failure in a refresh is kept in :attr:`error` (and the thread goes on with the next request).
    """

    def __init__(
        self, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, on_done: Callable[[Refreshed], None] | None = None
    ):
        self.bootstrap, self.seed, self.on_done = bootstrap, seed, on_done
        self.error: BaseException | None = None
        self._wanted: tuple[list[Game], list[str], tuple[str, float] | None] | None = None
        self._latest: Refreshed | None = None
        self._closed = False
        self._cond = threading.Condition()
        self._busy = False
        self._thread = threading.Thread(target=self._work, name="bootstrap-refresher", daemon=True)
        self._thread.start()

    def submit(self, games: Sequence[Game], names: Iterable[str] = (), anchor: tuple[str, float] | None = None) -> None:
        """Ask for a bootstrap of ``games`` (copied); replaces a request not yet started."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the refresher is closed")
            self._wanted = (list(games), list(names), anchor)
            self._cond.notify()

    def latest(self) -> Refreshed | None:
        """The newest finished bootstrap, or None before the first."""
        with self._cond:
            return self._latest

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is pending or running; returns False after ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self._wanted is None and not self._busy, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread after the refresh in progress (requests not started are dropped)."""
        with self._cond:
            self._closed = True
            self._wanted = None
            self._cond.notify_all()
        self._thread.join(timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._wanted is not None or self._closed)
                if self._closed:
                    return
                assert self._wanted is not None
                games, names, anchor = self._wanted
                self._wanted, self._busy = None, True
            try:
                done = Refreshed(len(games), final_ratings(games, names, anchor, self.bootstrap, self.seed),
                                 tuple(names))
            except Exception as e:  # kept for the caller; the next request is still served
                done, self.error = None, e
            with self._cond:
                if done is not None:
                    self._latest = done
            if done is not None and self.on_done is not None:
                try:
                    self.on_done(done)
                except Exception as e:  # a failing callback must not end the thread
                    self.error = e
            with self._cond:
                self._busy = False
                self._cond.notify_all()


class LivePublisher:
    """What a league publishes after each game (one call, no waiting for a bootstrap).

    :meth:`ratings` returns the bootstrap result when the background refresh already covers exactly
    these games and entrants, else the live result with the newest finished bootstrap's intervals beside it
    (``"last_bootstrap": {"games": n, "ci": {bot: [lo, hi]}}``), and asks for a refresh of these games.
    ``on_done`` (e.g. republish) runs in the background thread after each refresh.
    """

    def __init__(
        self, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, on_done: Callable[[Refreshed], None] | None = None
    ):
        self.refresher = BootstrapRefresher(bootstrap, seed, on_done)

    def ratings(self, games: Sequence[Game], names: Iterable[str] = ()) -> RatingTable:
        """The ratings to publish now for ``games`` (see the class docstring)."""
        names = list(names)
        done = self.refresher.latest()
        if done is not None and done.games == len(games) and done.names == tuple(names):
            return done.ratings
        result = live_ratings(games, names)
        self.refresher.submit(games, names)
        if done is not None:
            result["last_bootstrap"] = {
                "games": done.games,
                "ci": {bot: r["ci"] for bot, r in done.ratings["ratings"].items()},
            }
        return result

    def close(self) -> None:
        """Stop the background thread."""
        self.refresher.close()
