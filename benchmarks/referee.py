"""Referee overhead benchmark: ``python benchmarks/referee.py [--seconds 6] [--matches 60] [--rounds 10]``.

In one run, over real 127.0.0.1 sockets with grpc.aio, two servers measured the same way:

1. **bare**: a trivial servicer of the same ``RefereeService.Play`` stream type that answers each
   Ping with a Pong (reader task + queue, like the referee): round trips/s and latency per round trip;
2. **referee**: the real referee playing 2-player matches with instant bots (first legal action):
   decisions/s, games/s, and the per-decision latency — from a bot sending a Decision to the next
   DecisionRequest arriving at any seat of the match: one referee round trip, comparable to one
   ping-pong.

By default each server runs in its own process and the clients in this one, as in real use (bots
are always separate processes), both servers with the garbage collector set up as ``referee serve``
sets it (:func:`referee.server.tune_gc`); ``--same-process`` runs server and clients on one event loop, which
charges every extra asyncio hop twice. Prints the ratio of the referee's per-decision latency to
the bare round trip (p50 and p99). Target (issue #3): ratio <= 1.5.

``--baseline DIR`` adds a third server: the referee of another checkout (e.g. ``git archive main | tar
-x -C /tmp/main``), in its own process, playing the same matches in the same interleaved rounds (the
two referees take turns going first), so that a change is compared with the code before it on the
same machine in the same minutes: the only comparison a noisy machine allows (docs/architecture.md,
The referee's speed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # before benchmarks/ (this file would hide the package)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # no core log lines when the servers shut down

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee.cli import configure_logging
from referee.server import SERVER_OPTIONS, start_server, tune_gc

TOKEN = "bench"
MD = (("authorization", f"Bearer {TOKEN}"),)


class Echo(pb_grpc.RefereeServiceServicer):
    """A bare servicer: answers each Ping with a Pong through a reader task and a queue (like the referee)."""

    async def Play(self, request_iterator, context):  # type: ignore[no-untyped-def]
        out: asyncio.Queue[pb.PlayResponse | None] = asyncio.Queue()

        async def read() -> None:
            while True:
                msg = await context.read()
                if msg is grpc.aio.EOF:
                    break
                out.put_nowait(pb.PlayResponse(pong=pb.Pong(nonce=msg.ping.nonce)))
            out.put_nowait(None)

        task = asyncio.get_running_loop().create_task(read())
        while (m := await out.get()) is not None:
            await context.write(m)
        await task


@asynccontextmanager
async def echo_server() -> AsyncIterator[str]:
    """The bare servicer on 127.0.0.1:0; yields its address."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    pb_grpc.add_RefereeServiceServicer_to_server(Echo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


@asynccontextmanager
async def referee_server() -> AsyncIterator[str]:
    """The real referee on 127.0.0.1:0; yields its address."""
    async with start_server(port=0, admin_token=TOKEN) as server:
        yield server.address


def _serve(kind: str, conn: Any) -> None:
    """Child process: run one server until told to stop; send its address through ``conn``."""
    configure_logging("warning")

    async def main() -> None:
        cm = echo_server() if kind == "bare" else referee_server()
        async with cm as address:
            tune_gc()  # as `referee serve` does; both servers alike
            conn.send(address)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


#: What a checkout's referee runs for ``--baseline`` (cwd = the checkout, so its own ``referee`` is imported): its
#: referee on 127.0.0.1:0 with the GC tuned as ``referee serve`` tunes it, the address printed, until
#: stdin closes.
_BASELINE_SERVER = f"""
import asyncio, sys
from referee.cli import configure_logging
from referee.server import start_server, tune_gc

async def main():
    configure_logging("warning")
    async with start_server(port=0, admin_token={TOKEN!r}) as server:
        tune_gc()
        print(server.address, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


@asynccontextmanager
async def checkout_in_child(checkout: Path) -> AsyncIterator[str]:
    """The referee of the checkout ``checkout`` in its own process; yield its address."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.Popen([sys.executable, "-c", _BASELINE_SERVER], cwd=checkout, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        address = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
        if not address:
            raise RuntimeError(f"the baseline referee in {checkout} did not start")
        yield address.strip()
    finally:
        proc.stdin.close()
        proc.wait(10)


@asynccontextmanager
async def server_in_child(kind: str) -> AsyncIterator[str]:
    """Run the ``kind`` server ("bare" or "referee") in a separate process; yield its address."""
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_serve, args=(kind, child), daemon=True)
    proc.start()
    try:
        address = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        yield address
    finally:
        parent.send("stop")
        proc.join(10)


async def bare(address: str, seconds: float) -> list[float]:
    """Ping-pong for ``seconds``; the latency of each round trip (s)."""
    lat: list[float] = []
    async with grpc.aio.insecure_channel(address) as ch:
        call = pb_grpc.RefereeServiceStub(ch).Play()
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            await call.write(pb.PlayRequest(ping=pb.Ping(nonce=n)))
            await call.read()
            lat.append(time.perf_counter() - t0)
            n += 1
        await call.done_writing()
    return lat


async def seat(address: str, ticket: str, lat: list[float], clock: dict[str, float]) -> None:
    """An instant bot. ``clock["sent"]`` is shared by the seats of a match: the time the last Decision
    was sent; the next DecisionRequest (to any seat) closes one referee round trip."""
    async with grpc.aio.insecure_channel(address) as ch:
        call = pb_grpc.RefereeServiceStub(ch).Play()
        await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1")))
        while (resp := await call.read()) is not grpc.aio.EOF:  # read(), as the bare client does
            if resp.HasField("decision_request"):
                now = time.perf_counter()
                if clock.get("sent"):
                    lat.append(now - clock["sent"])
                req = resp.decision_request
                clock["sent"] = time.perf_counter()
                await call.write(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=req.legal_actions[0])))
            elif resp.HasField("match_end"):
                await call.done_writing()
                return


async def referee(address: str, matches: int, games: int) -> tuple[list[float], int, int, float]:
    """Play ``matches`` 2-player matches of ``games`` games; (latencies s, decisions, games, elapsed s)."""
    async with grpc.aio.insecure_channel(address) as ch:
        admin = pb_grpc.AdminServiceStub(ch)
        lat: list[float] = []
        t0 = time.perf_counter()
        decisions = games_played = 0
        for _ in range(matches):
            created = await admin.CreateMatch(pb.CreateMatchRequest(
                rules=pb.RuleSet(players=2), seat_names=["a", "b"], games=games), metadata=MD)
            clock: dict[str, float] = {}
            await asyncio.gather(*(seat(address, t, lat, clock) for t in created.tickets))
            rec = await admin.GetRecord(pb.GetRecordRequest(match_id=created.match_id), metadata=MD)
            decisions += sum(1 for line in rec.lines if line.startswith('{"type":"action"'))
            games_played += sum(1 for line in rec.lines if line.startswith('{"type":"game_end"'))
        elapsed = time.perf_counter() - t0
    return lat, decisions, games_played, elapsed


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def measure(same_process: bool, seconds: float, matches: int, games: int, rounds: int,
                  baseline: Path | None = None) -> dict[str, Any]:
    """Both measurements, interleaved: ``rounds`` rounds, each a slice of the bare ping-pong then a
    slice of the referee's matches, both servers up all along, so that the machine's drift (these
    machines are noisy) falls on both alike. Samples are pooled over the rounds. With ``baseline``
    (a checkout), each round also plays as many matches on that checkout's referee, which goes first
    in every other round."""
    host: Callable[[str], Any] = (lambda kind: echo_server() if kind == "bare" else referee_server()) \
        if same_process else server_in_child
    b: list[float] = []
    lat: list[float] = []
    base_lat: list[float] = []
    decisions = games_played = 0
    elapsed = 0.0
    per_round: list[tuple[float, float]] = []
    async with contextlib.AsyncExitStack() as servers:
        bare_address = await servers.enter_async_context(host("bare"))
        # Against a baseline, this checkout's referee is started the same way as the baseline's.
        referee_address = await servers.enter_async_context(
            host("referee") if baseline is None else checkout_in_child(Path(__file__).resolve().parent.parent))
        base_address = None if baseline is None else await servers.enter_async_context(checkout_in_child(baseline))
        await bare(bare_address, min(0.5, seconds / rounds))  # warm-up, not counted
        for address in (referee_address, base_address):
            if address is not None:
                await referee(address, 1, 1)
        for r in range(rounds):
            share = matches // rounds + (1 if r < matches % rounds else 0)
            rb = await bare(bare_address, seconds / rounds)
            if base_address is not None and r % 2:
                base_lat += (await referee(base_address, max(1, share), games))[0]
            rl, d, g, e = await referee(referee_address, max(1, share), games)
            if base_address is not None and not r % 2:
                base_lat += (await referee(base_address, max(1, share), games))[0]
            b += rb
            lat += rl
            decisions, games_played, elapsed = decisions + d, games_played + g, elapsed + e
            per_round.append((pct(rl, 0.5) / pct(rb, 0.5), pct(rl, 0.99) / pct(rb, 0.99)))
    return {"bare": b, "lat": lat, "baseline": base_lat, "decisions": decisions, "games": games_played,
            "elapsed": elapsed, "per_round": per_round}


def main() -> None:
    """Run the benchmark and print its figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Defaults: about 13,000 samples each (~130 beyond the p99), so that p99 is not a handful of points.
    p.add_argument("--seconds", type=float, default=6.0, help="duration of the bare ping-pong (all rounds)")
    p.add_argument("--matches", type=int, default=60, help="referee matches (all rounds)")
    p.add_argument("--games", type=int, default=3, help="games per match")
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds of bare then referee")
    p.add_argument("--same-process", action="store_true", help="servers and clients on one event loop")
    p.add_argument("--baseline", type=Path, metavar="DIR",
                   help="also measure the referee of this checkout, in the same rounds")
    a = p.parse_args()
    configure_logging("warning")
    r = asyncio.run(measure(a.same_process, a.seconds, a.matches, a.games, max(1, a.rounds), a.baseline))
    b, lat = r["bare"], r["lat"]
    bp50, bp99 = pct(b, 0.5) * 1e3, pct(b, 0.99) * 1e3
    rp50, rp99 = pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3
    where = "one process" if a.same_process else "servers in their own process, clients in this one"
    print(f"setup:            {where}; {len(r['per_round'])} interleaved rounds")
    print(f"bare ping-pong:   {len(b) / a.seconds:9.0f} round trips/s   p50 {bp50:.3f} ms  p99 {bp99:.3f} ms")
    print(f"referee:          {r['decisions'] / r['elapsed']:9.0f} decisions/s    "
          f"{r['games'] / r['elapsed']:.2f} games/s ({r['games']} games, {r['decisions']} decisions, "
          f"{r['elapsed']:.1f} s)")
    print(f"per decision:     p50 {rp50:.3f} ms  p99 {rp99:.3f} ms  (mean {statistics.mean(lat) * 1e3:.3f} ms, "
          f"{len(lat)} samples)")
    rounds = "  ".join(f"{x:.2f}/{y:.2f}" for x, y in r["per_round"])
    print(f"rounds p50/p99:   {rounds}")
    print(f"ratio vs bare:    p50 {rp50 / bp50:.2f}  p99 {rp99 / bp99:.2f}  (target <= 1.5)")
    if a.baseline is not None:
        base = r["baseline"]
        print(f"baseline ratio:   p50 {pct(base, 0.5) * 1e3 / bp50:.2f}  p99 {pct(base, 0.99) * 1e3 / bp99:.2f}  "
              f"({a.baseline}: {len(base)} samples in the same rounds)")


if __name__ == "__main__":
    main()
