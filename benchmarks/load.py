"""Load benchmark: ``python benchmarks/load.py [--matches 250] [--players 4] [--workers 2]``.

One referee process (``referee.server`` with ``tune_gc``, as ``referee serve``) plays ``--matches``
matches at the same time — by default 250 4-player matches, 1,000 concurrent seats — with instant
seats (first legal action at once), run by ``--workers`` client processes over real 127.0.0.1
sockets (one connection per match: gRPC allows 64 streams per connection).

Printed:
- **decision dispatch**: per decision, from a seat sending its Decision to the next DecisionRequest
  arriving at a seat of that match (one referee round trip under load): p50, p99, max — measured
  by the client processes, which share the machine with the referee;
- the same for **one match alone** on the same referee in the same run (the baseline), and the
  ratio of the two p99s;
- the referee's **CPU** share (of one core) and CPU time per decision while loaded: near 100% means
  the referee, not the clients, sets the pace (closed loop: latency ~ matches in flight / throughput);
- the referee's **memory** (RSS) before, at the peak (sampled every 0.2 s) and after;
- **dropped**: seats that got no MatchEnd, matches not COMPLETED, stream errors (floor: none).

Floor (issue 9, item 16): p99 under 50 ms with 1,000 seats and nothing dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before benchmarks/ (referee.py there)

import grpc
from _seats import Played, cpu_s, pct, play_match, referee_in_child, rss_kib

from allfours.v1 import referee_pb2 as pb


async def _matches(address: str, matches: int, players: int, games: int) -> list[Played]:
    """Play ``matches`` matches at once, each on its own connection."""
    # A local subchannel pool each: channels with the same target would otherwise share one TCP
    # connection, and the referee allows 64 streams per connection (grpc.max_concurrent_streams).
    channels = [grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(matches)]
    try:
        return list(await asyncio.gather(*(play_match(ch, players, games) for ch in channels)))
    finally:
        await asyncio.gather(*(ch.close() for ch in channels))


def _worker(address: str, matches: int, players: int, games: int, start: Any, conn: Any) -> None:
    """Client process: wait for ``start``, play, send back the figures."""
    start.wait()
    played = asyncio.run(_matches(address, matches, players, games))
    conn.send([(p.status, p.ends, p.decisions, p.latencies, p.errors) for p in played])


async def run(matches: int, players: int, games: int, workers: int) -> dict[str, Any]:
    """Baseline (one match alone), then ``matches`` matches at once over ``workers`` processes."""
    ctx = mp.get_context("spawn")
    async with referee_in_child() as (address, pid):
        async with grpc.aio.insecure_channel(address) as ch:
            for _ in range(3):
                await play_match(ch, players, games)  # warm-up
            alone: list[float] = []
            for _ in range(5):
                alone += (await play_match(ch, players, games)).latencies
        before = rss_kib(pid)
        start = ctx.Event()
        pipes, procs = [], []
        for w in range(workers):
            share = matches // workers + (1 if w < matches % workers else 0)
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(address, share, players, games, start, child), daemon=True)
            proc.start()
            pipes.append(parent)
            procs.append(proc)
        await asyncio.sleep(1.0)  # let the workers import and wait at the start line
        t0, cpu0 = time.perf_counter(), cpu_s(pid)
        start.set()
        peak = before
        loop = asyncio.get_running_loop()
        results: list[Any] = []
        for parent in pipes:
            fut = loop.run_in_executor(None, parent.recv)
            while not fut.done():
                peak = max(peak, rss_kib(pid))
                await asyncio.sleep(0.2)
            results += fut.result()
        elapsed, cpu = time.perf_counter() - t0, cpu_s(pid) - cpu0
        for proc in procs:
            proc.join(30)
        after = rss_kib(pid)
    lat = [x for r in results for x in r[3]]
    return {"alone": alone, "lat": lat, "before": before, "peak": peak, "after": after, "elapsed": elapsed, "cpu": cpu,
            "decisions": sum(r[2] for r in results), "matches": len(results),
            "no_end": sum(players - r[1] for r in results),
            "not_completed": sum(r[0] != pb.MATCH_STATUS_COMPLETED for r in results),
            "errors": [e for r in results for e in r[4]]}


def main() -> None:
    """Run the benchmark and print its figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matches", type=int, default=250, help="matches at once")
    p.add_argument("--players", type=int, default=4, choices=[2, 4])
    p.add_argument("--games", type=int, default=1, help="games per match")
    p.add_argument("--workers", type=int, default=2, help="client processes")
    a = p.parse_args()
    r = asyncio.run(run(a.matches, a.players, a.games, a.workers))
    lat, alone = r["lat"], r["alone"]
    ms = 1e3
    print(f"load:             {r['matches']} matches x {a.players} seats = {r['matches'] * a.players} seats at once, "
          f"{a.workers} client processes; {r['decisions']} decisions in {r['elapsed']:.1f} s "
          f"({r['decisions'] / r['elapsed']:.0f}/s)")
    print(f"dispatch alone:   p50 {pct(alone, 0.5) * ms:.2f} ms  p99 {pct(alone, 0.99) * ms:.2f} ms  "
          f"({len(alone)} samples, one match alone)")
    print(f"dispatch loaded:  p50 {pct(lat, 0.5) * ms:.2f} ms  p99 {pct(lat, 0.99) * ms:.2f} ms  "
          f"max {max(lat, default=0) * ms:.2f} ms  ({len(lat)} samples)")
    print(f"p99 loaded/alone: {pct(lat, 0.99) / pct(alone, 0.99):.1f}   floor: p99 < 50 ms "
          f"({'met' if pct(lat, 0.99) < 0.05 else 'NOT met'})")
    print(f"referee CPU:      {r['cpu']:.1f} s in {r['elapsed']:.1f} s ({100 * r['cpu'] / r['elapsed']:.0f}% of one "
          f"core; {1e3 * r['cpu'] / max(1, r['decisions']):.3f} ms per decision)")
    print(f"referee RSS:      before {r['before'] / 1024:.1f} MiB  peak {r['peak'] / 1024:.1f} MiB  "
          f"after {r['after'] / 1024:.1f} MiB")
    dropped = r["no_end"] + r["not_completed"] + len(r["errors"])
    print(f"dropped:          {r['no_end']} seats without MatchEnd, {r['not_completed']} matches not completed, "
          f"{len(r['errors'])} stream errors{': ' + r['errors'][0] if r['errors'] else ''}  "
          f"({'none' if not dropped else 'SOME'})")


if __name__ == "__main__":
    main()
