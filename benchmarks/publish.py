"""One publication of a large stored league, recomputed (before) against kept (:mod:`arena.report.cache`), in one run.

    python benchmarks/publish.py [--bots 20] [--games-per-pairing 40] [--play 20] [--profile]

A league of ``--bots`` entrants (2 players, ``--games-per-pairing``: 20 and 40 store 7,600 games, 30 and
40 store 17,400) is stored up to ``--play`` games short of its schedule (simulated games:
:class:`arena.tournament.runner.SimulatedRunner`), in two copies of one output folder. Then each of the
last ``--play`` games is stored in both and each is published, as ``arena serve`` does after a game:

- **recomputed**: :func:`arena.report.publish.publish_tournament` without a cache, so it reads, rates and
  renders every stored game (what every publication did before the cache; what ``arena run`` does);
- **kept**: with one :class:`arena.report.cache.PublishCache` for the whole run (``arena serve``'s).

Both kinds of publication are measured, each for ``--play`` games: **live** (while games are played:
live ratings, no history) and **final** (the league at rest: the ratings and the rating history; here
``--bootstrap`` resamples, default 0, as if the background bootstrap had caught up). Printed: the mean
and the largest seconds of a publication of each, the ratio of the means, and whether both folders hold
the same files, byte for byte (they must). ``--profile``: cProfile's top functions of the kept
publications as well.
"""

from __future__ import annotations

import argparse
import cProfile
import filecmp
import io
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from serve_publish import league_config  # benchmarks/serve_publish.py

from arena.ratings.fit import Game, RatingTable
from arena.ratings.publication import LivePublisher, live_ratings
from arena.report.cache import PublishCache
from arena.report.publish import publish_tournament
from arena.tournament.runner import SimulatedRunner, Tournament, open_tournament, run_games

#: The files compared between the two folders.
PUBLISHED = ("games.jsonl", "ratings.json", "ratings.csv", "leaderboard.html")


class LiveOnly(LivePublisher):
    """The publisher of a league while games are played, without its background bootstrap: always live."""

    def __init__(self) -> None:
        super().__init__(bootstrap=0)

    def ratings(self, games: Sequence[Game], names: Iterable[str] = ()) -> RatingTable:
        """The live ratings of ``games``."""
        return live_ratings(games, names)


def publish(t: Tournament, folder: Path, args: argparse.Namespace, live: LiveOnly | None,
            cache: PublishCache | None) -> float:
    """Publish ``t`` into ``folder/out``; the seconds it took."""
    start = time.perf_counter()
    publish_tournament(t, folder / "out", args.bootstrap, None, reveal=False, publisher=live, cache=cache)
    return time.perf_counter() - start


def measure(base: Path, tmp: Path, kind: str, args: argparse.Namespace, profile: cProfile.Profile | None
            ) -> dict[str, list[float]]:
    """Store the last ``--play`` games in two copies of ``base`` and publish after each: seconds per publication."""
    folders = {way: tmp / f"{kind}-{way}" for way in ("recomputed", "kept")}
    stores = {}
    for way, folder in folders.items():
        shutil.copytree(base, folder)
        stores[way] = open_tournament(league_config(folder, args.bots, args.games_per_pairing))
    live = LiveOnly() if kind == "live" else None
    cache = PublishCache()
    times: dict[str, list[float]] = {way: [] for way in folders}
    try:
        publish(stores["kept"], folders["kept"], args, live, cache)  # the first after a start reads everything
        for game in stores["kept"].store.pending(stores["kept"].schedule):
            result = SimulatedRunner().play(game)  # one result stored in both (its duration is measured)
            for way, t in stores.items():
                t.store.record(result)
                if way == "kept" and profile is not None:
                    profile.enable()
                times[way].append(publish(t, folders[way], args, live, cache if way == "kept" else None))
                if way == "kept" and profile is not None:
                    profile.disable()
    finally:
        for t in stores.values():
            t.store.close()
        if live is not None:
            live.close()
    same = all(filecmp.cmp(folders["recomputed"] / "out" / f, folders["kept"] / "out" / f, shallow=False)
               for f in PUBLISHED)
    times["same"] = [float(same)]
    return times


def main() -> None:
    """Prefill once, measure both kinds of publication, print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bots", type=int, default=20)
    p.add_argument("--games-per-pairing", type=int, default=40)
    p.add_argument("--play", type=int, default=20, help="games stored (and publications) after the prefill")
    p.add_argument("--bootstrap", type=int, default=0, help="resamples of the final publications")
    p.add_argument("--profile", action="store_true", help="print cProfile's top functions of the kept ones")
    args = p.parse_args()
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        t = open_tournament(league_config(base, args.bots, args.games_per_pairing))
        try:
            run_games(t.schedule[: len(t.schedule) - args.play], SimulatedRunner(), t.store)
            stored = t.store.count()
        finally:
            t.store.close()
        print(f"league: {args.bots} bots, {stored} games stored, then {args.play} more, a publication after each")
        for kind in ("live", "final"):
            times = measure(base, Path(tmp), kind, args, profile)
            old, new = times["recomputed"], times["kept"]
            print(f"{kind:5s}  recomputed: mean {sum(old) / len(old):.3f} s  max {max(old):.3f} s   "
                  f"kept: mean {sum(new) / len(new):.3f} s  max {max(new):.3f} s   "
                  f"recomputed/kept = {sum(old) / sum(new):.1f}   same files: {'yes' if times['same'][0] else 'NO'}")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
