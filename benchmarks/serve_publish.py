"""`arena serve`'s publications against the league's size, in one run: games/s of the serve loop.

    python benchmarks/serve_publish.py [--bots 12] [--games-per-pairing 40] [--play 60] [--game-ms 20]

A league of ``--bots`` entrants (2 players, ``--games-per-pairing``) is stored up to ``--play`` games short
of its schedule (simulated games: :class:`arena.tournament.runner.SimulatedRunner`, no referee, no bots);
then :class:`arena.tournament.league.League` serves the last ``--play`` games, each taking ``--game-ms``
(one at a time), with the real publication of ``arena serve`` (:func:`arena.report.publish.publish_tournament`
with a :class:`arena.ratings.publication.LivePublisher`; ``--bootstrap`` resamples in its background thread,
default 0 to keep the machine quiet). Twice, each on its own copy of the same store:

1. **every game**: ``publish_spacing = 0``, a publication after every game (before this change);
2. **spaced**: the default :data:`arena.tournament.league.PUBLISH_SPACING`.

Printed per run: the stored games, the publications, the serve loop's wall seconds and games/s from its
start to the publication of the last game; then ``spaced/every`` (the ratio of games/s).
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console

from arena.config import TournamentConfig, parse_config
from arena.ratings.publication import LivePublisher
from arena.report.publish import publish_tournament
from arena.tournament.league import PUBLISH_SPACING, League
from arena.tournament.runner import SimulatedRunner, Tournament, open_tournament, run_games


def league_config(folder: Path, bots: int, gpp: int) -> TournamentConfig:
    """The league's config (its output ``folder/out``)."""
    data = {
        "tournament": {"name": "pub", "players": 2, "games_per_pairing": gpp, "concurrency": 1,
                       "output": str(folder / "out"), "master_seed": "00" * 32},
        "bots": [{"name": f"b{k}", "command": ["true"], "cwd": str(folder)} for k in range(bots)],
    }
    return parse_config(data, str(folder / "league.toml"), folder)


def prefill(folder: Path, bots: int, gpp: int, play: int) -> int:
    """Store every game of the league but the last ``play``; returns the schedule's length."""
    t = open_tournament(league_config(folder, bots, gpp))
    try:
        run_games(t.schedule[: len(t.schedule) - play], SimulatedRunner(), t.store)
        return len(t.schedule)
    finally:
        t.store.close()


def serve(folder: Path, args: argparse.Namespace, total: int, spacing: float) -> dict[str, float]:
    """Serve the last games of the league in ``folder`` with ``spacing``; its figures."""
    publisher = LivePublisher(args.bootstrap)
    count: list[int] = []

    def publish(t: Tournament) -> None:
        publish_tournament(t, folder / "out", args.bootstrap, None, reveal=False, publisher=publisher)
        count.append(t.store.count())
        if count[-1] == total:
            league.request_stop()

    config = league_config(folder, args.bots, args.games_per_pairing)
    league = League(str(folder / "league.toml"), folder / "out", Console(file=io.StringIO()), publish,
                    lambda _: SimulatedRunner(delay_s=args.game_ms / 1000), publish_spacing=spacing)
    league.open(config)
    t0 = time.perf_counter()
    try:
        league.serve()
    finally:
        wall = time.perf_counter() - t0
        league.close()
        publisher.close()
    return {"games": count[-1], "publications": len(count), "wall_s": wall, "games_per_s": args.play / wall}


def main() -> None:
    """Prefill once, serve each copy, print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bots", type=int, default=12)
    p.add_argument("--games-per-pairing", type=int, default=40)
    p.add_argument("--play", type=int, default=60, help="games the league serves (the last of its schedule)")
    p.add_argument("--game-ms", type=float, default=20.0, help="each served game's time")
    p.add_argument("--bootstrap", type=int, default=0, help="the publisher's background bootstrap resamples")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        total = prefill(base, args.bots, args.games_per_pairing, args.play)
        rows = []
        for name, spacing in (("every game", 0.0), ("spaced", PUBLISH_SPACING)):
            folder = Path(tmp) / name.replace(" ", "-")
            shutil.copytree(base, folder)
            rows.append((name, serve(folder, args, total, spacing)))
    for name, r in rows:
        print(f"{name:10s}  games={int(r['games'])}  publications={int(r['publications'])}  "
              f"wall={r['wall_s']:.1f}s  games/s={r['games_per_s']:.2f}")
    print(f"spaced/every = {rows[1][1]['games_per_s'] / rows[0][1]['games_per_s']:.2f}")


if __name__ == "__main__":
    main()
