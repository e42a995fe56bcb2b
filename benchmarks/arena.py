"""Arena throughput with instant bots: games per second, and where the wall time goes.

    python benchmarks/arena.py [--bots 3] [--games-per-pairing 4] [--players 4] [--concurrency 2]

Runs a real tournament (embedded referee over gRPC on 127.0.0.1, one ``arena.instant_bot`` process
per seat, which answers every decision at once with the first legal action) into a temporary
folder and prints JSON:

- ``games_per_s``: games stored per second of wall time (the whole run: referee start, every game,
  store writes; not the rating and publishing afterwards, timed separately as ``publish_s``);
- ``think_share``: the bots' own thinking as a share of the summed game durations. A seat's thinking is
  the time bank the referee charged it (request sent → decision received, so it includes the
  transport round trip); ``outside_share = 1 - think_share`` is the arena's, the referee's, process
  start-up's and the protocol's share — the overhead this benchmark exists to watch.
- ``per_game_s``: the mean wall time of one game (process start to result).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # before benchmarks/, where referee.py would hide the referee package

from arena import publish  # noqa: E402
from arena.config import parse_config  # noqa: E402
from arena.match_runner import GrpcGameRunner, connect_referee  # noqa: E402
from arena.ratings import games_from_mapping, rate  # noqa: E402
from arena.runner import open_tournament, run_games  # noqa: E402


def main() -> int:
    """Run the benchmark and print its JSON report; returns 0."""
    p = argparse.ArgumentParser()
    p.add_argument("--bots", type=int, default=3)
    p.add_argument("--games-per-pairing", type=int, default=4)
    p.add_argument("--players", type=int, default=4, choices=(2, 4))
    p.add_argument("--concurrency", type=int, default=2)
    args = p.parse_args()
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory() as tmp:
        data = {
            "tournament": {
                "name": "bench",
                "players": args.players,
                "games_per_pairing": args.games_per_pairing,
                "concurrency": args.concurrency,
                "output": tmp,
                "master_seed": "00" * 32,
            },
            "bots": [
                {"name": f"instant{k}", "command": ["{python}", "-m", "arena.instant_bot"], "cwd": str(ROOT)}
                for k in range(args.bots)
            ],
        }
        config = parse_config(data, str(ROOT / "benchmarks" / "bench.toml"), ROOT)
        t = open_tournament(config)
        start = time.perf_counter()
        conn = connect_referee(None, None)
        try:
            runner = GrpcGameRunner(config, conn, Path(tmp))
            run_games(t.schedule, runner, t.store, config.concurrency)
        finally:
            conn.close()
        wall = time.perf_counter() - start
        results = t.store.results()
        t0 = time.perf_counter()
        rows = publish.games_rows(results)
        publish.write_outputs(Path(tmp), results, rate(games_from_mapping(rows), bootstrap=1000), {"name": "bench"})
        publish_s = time.perf_counter() - t0
        t.store.close()
    durations = sum(r.duration_s for r in results)
    think = sum(r.extra.get("think_ms", 0) for r in results) / 1000.0
    decisive = sum(1 for r in results if r.winner is not None and not any("forfeit" in x for x in r.reasons))
    report = {
        "games": len(results),
        "played_to_the_end": decisive,
        "players": args.players,
        "concurrency": args.concurrency,
        "wall_s": round(wall, 3),
        "games_per_s": round(len(results) / wall, 3),
        "per_game_s": round(durations / len(results), 3),
        "think_share": round(think / durations, 4),
        "outside_share": round(1 - think / durations, 4),
        "publish_s": round(publish_s, 3),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
