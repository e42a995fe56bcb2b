"""Ratings speed: ``arena.ratings.fit.rate`` on duplicate-paired round robins of 10, 100 and 300 bots.

    python benchmarks/ratings.py [--bots 10 100 300] [--games-per-bot 1000] [--bootstrap 1000] [--repeat 3]

Each league: ``m`` bots with true ratings drawn from N(0, 200 Elo), ``games-per-bot * m`` games in
duplicate pairs spread evenly over the ``m (m - 1) / 2`` pairings (100 bots: 100,000 games, 50,000
pairs, about 10 pairs a pairing), with deal luck (a pair's deal favours one seat by N(0, 1) nats).
For each size it prints the best of ``--repeat`` wall times (one core: numpy's BLAS is limited to one
thread) of

- ``fit``: the rating with the normal approximation (``bootstrap=0``), and
- ``full``: the rating with ``--bootstrap`` resamples (the published intervals),

the CPU time of ``full`` (the share of a core it got: the machine may be shared), the games per
second of ``full``, and the same-run ratio ``per_resample / fit``: what one bootstrap
resample costs against one cold fit from the games (the warm start and the drawn totals make it a
fraction of one).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.ratings.elo import ELO_PER_NAT  # noqa: E402
from arena.ratings.fit import Game, rate  # noqa: E402


def league(bots: int, games_per_bot: int, seed: int = 1) -> list[Game]:
    """A duplicate-paired round robin with deal luck (see the module docstring)."""
    rng = random.Random(seed)
    names = [f"bot{k:03d}" for k in range(bots)]
    strength = [rng.gauss(0.0, 200.0) / ELO_PER_NAT for _ in names]
    pairs_total = bots * games_per_bot // 2
    pairings = [(i, j) for i in range(bots) for j in range(i + 1, bots)]
    games = []
    for k in range(pairs_total):
        i, j = pairings[k % len(pairings)]
        luck = rng.gauss(0.0, 1.0)
        for first, diff in ((True, strength[i] - strength[j] + luck), (False, strength[i] - strength[j] - luck)):
            win = rng.random() < 1.0 / (1.0 + math.exp(-diff))
            a, b = (names[i], names[j]) if first else (names[j], names[i])
            games.append(Game(a, b, float(win if first else not win), f"d{k}"))
    return games


def best_time(fn, repeat: int) -> tuple[float, float]:
    """Over ``repeat`` runs of ``fn()``: ``(least wall seconds, least CPU seconds of this process)``."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return min(wall), min(cpu)


def main() -> int:
    """Run the benchmark and print one line per size; returns 0."""
    p = argparse.ArgumentParser()
    p.add_argument("--bots", type=int, nargs="+", default=[10, 100, 300])
    p.add_argument("--games-per-bot", type=int, default=1000)
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    for m in args.bots:
        games = league(m, args.games_per_bot)
        fit, _ = best_time(lambda g=games: rate(g, bootstrap=0), args.repeat)
        full, full_cpu = best_time(lambda g=games: rate(g, bootstrap=args.bootstrap), args.repeat)
        per_resample = (full - fit) / args.bootstrap if args.bootstrap else 0.0
        print(
            f"bots={m:<4d} games={len(games):<7,d} bootstrap={args.bootstrap}  fit={fit:.3f}s  full={full:.3f}s "
            f"(cpu {full_cpu:.3f}s)  games/s={len(games) / full:,.0f}  per_resample/fit={per_resample / fit:.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
