"""The search bot's strength: duplicate pairs against the heuristic and the random bot, in process.

    python benchmarks/strength.py [--pairs 100] [--ms 200] [--players 2 4] [--opponents heuristic random]

For each table size and opponent it plays ``--pairs`` duplicate pairs (``sdk.spar``: both seats of a
side the same bot, the pair's two games on the same decks with the sides swapped, one game to the
target each) of ``SearchBot(ms=--ms)`` against the opponent, and prints one JSON object: per row
``players``, ``opponent``, ``ms``, ``elo``, ``ci_low``, ``ci_high`` (95%, over pairs; null: unbounded), ``pairs``,
``decision_ms_p50``, ``decision_ms_p99`` (wall clock of every decision the search bot was asked,
including those with one legal action), the same in CPU milliseconds of the deciding thread
(``decision_cpu_ms_*``: the cost on one core, whatever else runs), the per-phase times, and the
machine's load average when the row ended, and each pair's score (``pair_scores``, for adding up
runs: ``--first-pair K`` plays pairs K, K+1, ... so two processes on two cores play disjoint pairs,
and ``sdk.spar.elo_interval`` of their pair scores together is the longer run's row). Progress goes
to stderr: every 10 pairs the row so far (``"partial": true``), and each finished row.

Floors (issue 21): against heuristic at the default ``ms``, both table sizes, ``elo >= 150`` and
``ci_low > 75``; ``decision_ms_p99 <= 1000``; at ``--ms 50``, ``ci_low > 0``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _pairs import add_pair_options, parse_pair_options  # noqa: E402

from sample_bots.heuristic import HeuristicBot  # noqa: E402
from sample_bots.random_bot import RandomBot  # noqa: E402
from sample_bots.search import SearchBot  # noqa: E402
from sdk.spar import spar  # noqa: E402

OPPONENTS = {"heuristic": HeuristicBot, "random": RandomBot}


def _progress(players: int, name: str, ms: int):  # type: ignore[no-untyped-def]
    """A ``spar`` progress callback: every 10 pairs, the row so far as one JSON line to stderr."""

    def report(k: int, result) -> None:  # type: ignore[no-untyped-def]
        if (k + 1) % 10 == 0:
            row = {"players": players, "opponent": name, "ms": ms, **result.summary(),
                   "load_avg": [round(x, 2) for x in os.getloadavg()], "partial": True}
            print(json.dumps(row), file=sys.stderr, flush=True)

    return report


def main(argv: list[str] | None = None) -> int:
    """Run the rows and print the JSON; returns 0."""
    p = argparse.ArgumentParser(prog="benchmarks/strength.py", description=__doc__.split("\n\n")[0])
    add_pair_options(p, pairs=100, players=[4, 2])
    p.add_argument("--opponents", nargs="+", default=["heuristic", "random"], choices=sorted(OPPONENTS))
    args = parse_pair_options(p, argv)
    rows = []
    cpu = time.process_time()
    for players in args.players:
        for name in args.opponents:
            result = spar(lambda: SearchBot(ms=args.ms), OPPONENTS[name], players, args.pairs,
                          f"{args.seed}/{name}", progress=_progress(players, name, args.ms), first=args.first_pair)
            row = {"players": players, "opponent": name, "ms": args.ms, "first_pair": args.first_pair,
                   **result.summary(), "load_avg": [round(x, 2) for x in os.getloadavg()],
                   "pair_scores": result.scores}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"rows": rows, "cpu_s": round(time.process_time() - cpu, 1)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
