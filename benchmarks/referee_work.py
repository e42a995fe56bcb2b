"""The referee's own work per decision, without gRPC.

    python benchmarks/referee_work.py [--matches 40] [--games 3] [--profile]

2-seat matches (:class:`referee.match.Match`) play on this process's event loop, each seat attached
through a plain :class:`referee.match.Connection` (what the referee sends lands in its queue, and is
serialized here as gRPC's writer would), every request answered at once with its first legal action
as the instant bots of ``benchmarks/referee.py`` do. The garbage collector is set up as ``referee
serve`` sets it. Figures are CPU time of this thread (``time.thread_time``), which a busy machine
delays but inflates far less than wall time:

- ``submit``: :meth:`Match.submit` of one Decision, p50 and mean — from the Decision read to the next
  DecisionRequest queued, the synchronous part that lies on the decision's critical path
  (docs/architecture.md, The referee's speed);
- ``all``: the thread's CPU per decision over the whole run, so also the work done after the write
  (record lines, the next decks, work ahead), the ends of matches, and this script's own loop.

``--profile`` adds cProfile's table of the referee's functions (time under the profiler is inflated;
the shares are what it is for).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before benchmarks/ (this file would hide the package)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from allfours.v1 import referee_pb2 as pb
from referee import wire
from referee.cli import configure_logging
from referee.match import Connection, Match, now
from referee.rules import RuleSet
from referee.server import tune_gc

#: Time limits no instant answer comes near (ms): no timeout ever fires.
TIME_CONTROL = wire.TimeControl(decision_ms=60_000, bank_ms=10**9)


def _drain(conn: Connection) -> None:
    """Take what the referee queued for ``conn``, serialized as gRPC's writer serializes it."""
    while not conn.out.empty():
        msg = conn.out.get_nowait()
        if msg is not None:
            msg.SerializeToString()


async def play_match(number: int, games: int, submit_cpu: list[float]) -> int:
    """Play match ``number`` (its seed) of ``games`` games to the end, answering every request at once;
    append the CPU seconds of each :meth:`Match.submit` to ``submit_cpu``. :returns: decisions played."""
    match = Match(f"m{number}", RuleSet(players=2), ["a", "b"], games, number.to_bytes(32, "big"), 0,
                  TIME_CONTROL, ["t0", "t1"])
    conns = [Connection(), Connection()]
    match.start()
    for seat, conn in enumerate(conns):
        match.attach(seat, conn, pb.Hello(ticket=f"t{seat}", protocol_version=wire.PROTOCOL_VERSION))
    decisions = 0
    while not match.finished:
        p = match.pending
        if p is None:  # the match task has not started the first game yet
            await asyncio.sleep(0)
            continue
        for conn in conns:
            _drain(conn)
        answer = pb.PlayRequest(decision=pb.Decision(seq=p.seq, action=wire.action_to_pb(p.legal[0])))
        started = time.thread_time()
        match.submit(p.seat, answer, now())
        submit_cpu.append(time.thread_time() - started)
        decisions += 1
        for _ in range(3):  # the work deferred after the write runs two call_soon hops later
            await asyncio.sleep(0)
    return decisions


async def measure(matches: int, games: int, profile: cProfile.Profile | None) -> tuple[list[float], int, float]:
    """One warm-up match, then ``matches`` matches: (submit CPU s each, decisions, thread CPU s in all)."""
    await play_match(10**6, 1, [])
    submit_cpu: list[float] = []
    decisions = 0
    started = time.thread_time()
    if profile is not None:
        profile.enable()
    for n in range(matches):
        decisions += await play_match(n, games, submit_cpu)
    if profile is not None:
        profile.disable()
    return submit_cpu, decisions, time.thread_time() - started


def main() -> None:
    """Run the measurement and print its figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matches", type=int, default=40, help="matches played (after one warm-up match)")
    p.add_argument("--games", type=int, default=3, help="games per match")
    p.add_argument("--profile", action="store_true", help="print cProfile's table of the referee's functions")
    a = p.parse_args()
    configure_logging("warning")
    tune_gc()
    profile = cProfile.Profile() if a.profile else None
    submit_cpu, decisions, total = asyncio.run(measure(max(1, a.matches), max(1, a.games), profile))
    print(f"decisions:        {decisions} in {a.matches} matches of {a.games} games, 2 seats")
    print(f"submit (CPU):     p50 {statistics.median(submit_cpu) * 1e6:.1f} us  "
          f"mean {statistics.mean(submit_cpu) * 1e6:.1f} us  (Decision read -> next request queued)")
    print(f"all (CPU):        {total / decisions * 1e6:.1f} us a decision (deferred work, match ends, this loop)")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats("referee/", 30)


if __name__ == "__main__":
    main()
