"""One publication of a large stored league, recomputed (before) against kept (:mod:`arena.report.cache`), in one run;
and the web's board the same two ways.

    python benchmarks/publish.py [--bots 20] [--games-per-pairing 40] [--play 20] [--kinds live,final,web] [--profile]

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

**web**: the board of ``arena web`` / ``arena serve --web`` (``GET /_board``, what every open page loads again
when a game is stored: the ratings, failures and forfeits of every stored game), after each of the ``--play``
games, through the app (:func:`arena.web.app.create_app`, Starlette's test client; live ratings):

- **recomputed**: a new app, whose :class:`arena.web.data.WebData` has read nothing yet, so it reads every
  stored game and derives everything from it (as every update did before the web kept a cache);
- **kept**: one app for the whole run (its WebData's PublishCache kept: it reads the new game only);
- **unchanged**: the kept app's board again, no game stored since (what each other open page costs).

Printed as for the publications, with the unchanged board's mean, and whether both boards were the same
text (they must).
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
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from serve_publish import league_config  # benchmarks/serve_publish.py

from arena.ratings.fit import Game, RatingTable
from arena.ratings.publication import LivePublisher, live_ratings
from arena.report.cache import PublishCache
from arena.report.publish import publish_tournament
from arena.tournament.runner import SimulatedRunner, Tournament, open_tournament, run_games
from arena.web.app import create_app

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


def measure_web(base: Path, tmp: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """Store the last ``--play`` games in a copy of ``base`` and load the board after each, from a new app and from
    the kept one: seconds per board."""
    with warnings.catch_warnings():  # Starlette's note on its test client's HTTP library
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    folder = tmp / "web"
    shutil.copytree(base, folder)
    t = open_tournament(league_config(folder, args.bots, args.games_per_pairing))
    live = LiveOnly()  # shared: no state of its own (no background bootstrap)

    def board(client: TestClient) -> tuple[float, str]:
        start = time.perf_counter()
        page = client.get("/_board")
        took = time.perf_counter() - start
        assert page.status_code == 200, page.text
        return took, page.text

    kept = TestClient(create_app(folder / "out", bootstrap=0, publisher=live))
    times: dict[str, list[float]] = {"recomputed": [], "kept": [], "unchanged": []}
    same = True
    try:
        board(kept)  # the first after a start reads everything
        for game in t.store.pending(t.schedule):
            t.store.record(SimulatedRunner().play(game))
            fresh = TestClient(create_app(folder / "out", bootstrap=0, publisher=live))
            old, page = board(fresh)
            new, kept_page = board(kept)
            again, _ = board(kept)
            same = same and page == kept_page
            times["recomputed"].append(old)
            times["kept"].append(new)
            times["unchanged"].append(again)
    finally:
        t.store.close()
        live.close()
    times["same"] = [float(same)]
    return times


def main() -> None:
    """Prefill once, measure both kinds of publication, print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bots", type=int, default=20)
    p.add_argument("--games-per-pairing", type=int, default=40)
    p.add_argument("--play", type=int, default=20, help="games stored (and publications) after the prefill")
    p.add_argument("--bootstrap", type=int, default=0, help="resamples of the final publications")
    p.add_argument("--kinds", default="live,final,web", help="what to measure, of live, final and web")
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
        kinds = args.kinds.split(",")
        for kind in ("live", "final"):
            if kind not in kinds:
                continue
            times = measure(base, Path(tmp), kind, args, profile)
            old, new = times["recomputed"], times["kept"]
            print(f"{kind:5s}  recomputed: mean {sum(old) / len(old):.3f} s  max {max(old):.3f} s   "
                  f"kept: mean {sum(new) / len(new):.3f} s  max {max(new):.3f} s   "
                  f"recomputed/kept = {sum(old) / sum(new):.1f}   same files: {'yes' if times['same'][0] else 'NO'}")
        if "web" in kinds:
            times = measure_web(base, Path(tmp), args)
            old, new, again = times["recomputed"], times["kept"], times["unchanged"]
            print(f"web    recomputed: mean {sum(old) / len(old):.3f} s  max {max(old):.3f} s   "
                  f"kept: mean {sum(new) / len(new):.3f} s  max {max(new):.3f} s   "
                  f"recomputed/kept = {sum(old) / sum(new):.1f}   unchanged: mean {sum(again) / len(again):.4f} s   "
                  f"same page: {'yes' if times['same'][0] else 'NO'}")
    if profile is not None:
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
