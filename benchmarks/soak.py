"""Soak benchmark: ``python benchmarks/soak.py [--matches 300] [--warmup 60] [--keep 50]``.

Plays short 4-player matches (1 game, instant seats, one after the other) through one referee
process and prints its resident memory growth per finished match, for two referees in the same
run, each in its own process:

1. **keep all**: finished matches are never dropped (``keep_finished`` 10**9, as before issue 9);
2. **retention**: the newest ``--keep`` finished matches stay in memory (``keep_finished``).

Growth = (RSS after all matches - RSS after the warm-up) / matches after the warm-up. The warm-up
(at least ``--keep`` matches) fills the retention referee's keep, so from then on each new finished
match pushes an old one out: its growth per match should be near 0 (a referee can run for months),
while the keep-all referee grows by a whole match's state each time. Records are not written to
disk (no ``record_dir``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before benchmarks/ (referee.py there)

import grpc
from _seats import play_match, referee_in_child, rss_kib


async def soak(matches: int, warmup: int, keep: int) -> dict[str, float]:
    """Play ``warmup`` then ``matches`` matches on a referee keeping ``keep`` finished matches;
    RSS figures in KiB and the growth per match."""
    async with referee_in_child(keep_finished=keep) as (address, pid), grpc.aio.insecure_channel(address) as ch:
        start = rss_kib(pid)
        for _ in range(warmup):
            await play_match(ch)
        base = rss_kib(pid)
        t0 = time.perf_counter()
        bad = 0
        for _ in range(matches):
            played = await play_match(ch)
            bad += played.ends != 4 or bool(played.errors)
        elapsed = time.perf_counter() - t0
        end = rss_kib(pid)
    return {"start": start, "base": base, "end": end, "per_match": (end - base) / matches, "bad": bad,
            "elapsed": elapsed}


def main() -> None:
    """Run both referees and print their figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matches", type=int, default=300, help="measured matches per referee")
    p.add_argument("--warmup", type=int, default=60, help="matches before the first measurement (>= --keep)")
    p.add_argument("--keep", type=int, default=50, help="finished matches the retention referee keeps")
    a = p.parse_args()
    rows = [("keep all", asyncio.run(soak(a.matches, a.warmup, 10**9))),
            (f"retention {a.keep}", asyncio.run(soak(a.matches, a.warmup, a.keep)))]
    for name, r in rows:
        print(f"{name:14s}  RSS start {r['start'] / 1024:6.1f} MiB  after warm-up {r['base'] / 1024:6.1f} MiB  "
              f"after {a.matches} matches {r['end'] / 1024:6.1f} MiB  growth {r['per_match']:6.1f} KiB/match  "
              f"({a.matches / r['elapsed']:.1f} matches/s, {int(r['bad'])} with a seat short of MatchEnd)")
    before, after = rows[0][1]["per_match"], rows[1][1]["per_match"]
    print(f"growth per match: keep all {before:.1f} KiB, retention {after:.1f} KiB "
          f"(retention/keep-all {after / before if before else float('nan'):.2f})")


if __name__ == "__main__":
    main()
