"""Shared by benchmarks/soak.py, benchmarks/load.py, benchmarks/arena.py and benchmarks/referee_shape.py:
a referee in its own process, its memory, and instant seats (first legal action) over real 127.0.0.1
sockets.

- :func:`referee_in_child` runs ``referee.server.RefereeServer`` (with ``tune_gc``, as ``referee
  serve`` does) in a spawned process and yields ``(address, pid)``;
- :func:`rss_kib` reads a process's resident memory (``VmRSS``, KiB);
- :func:`play_match` creates one match and plays every seat at once with :func:`instant_seat`,
  returning a :class:`Played` (status, decisions, per-decision latencies in seconds).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc

TOKEN = "bench"
MD = (("authorization", f"Bearer {TOKEN}"),)
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # no core log lines when the servers shut down


def _serve(conn: Any, kwargs: dict[str, Any]) -> None:
    """Child process: run the referee until told to stop; send its address through ``conn``."""
    from referee.cli import configure_logging
    from referee.server import start_server, tune_gc

    configure_logging("warning")

    async def main() -> None:
        async with start_server(port=0, admin_token=TOKEN, **kwargs) as server:
            tune_gc()
            conn.send(server.address)
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


@asynccontextmanager
async def referee_in_child(**kwargs: Any) -> AsyncIterator[tuple[str, int]]:
    """The referee (``RefereeServer(**kwargs)``) in a spawned process; yields ``(address, pid)``."""
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_serve, args=(child, kwargs), daemon=True)
    proc.start()
    try:
        address = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        assert proc.pid is not None
        yield address, proc.pid
    finally:
        parent.send("stop")
        proc.join(30)
        if proc.is_alive():
            proc.kill()


def rss_kib(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB (``VmRSS`` of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_s(pid: int) -> float:
    """CPU time (user + system, seconds) process ``pid`` has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Played:
    """One match as its seats saw it: ``status`` (MatchStatus), ``ends`` (MatchEnd messages received,
    one per seat when nothing was dropped), ``decisions`` answered, ``latencies`` (s): from a seat
    sending a Decision to the next DecisionRequest arriving at any seat of the match; ``requests``:
    the first ``keep`` DecisionRequests received, each as its serialized PlayResponse."""

    status: int = pb.MATCH_STATUS_UNSPECIFIED
    ends: int = 0
    decisions: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    keep: int = 0
    requests: list[bytes] = field(default_factory=list)


async def instant_seat(channel: grpc.aio.Channel, ticket: str, played: Played, clock: dict[str, float]) -> None:
    """A seat that answers every request at once with its first legal action. ``clock["sent"]`` is
    shared by the seats of a match: when the last Decision was sent."""
    call = pb_grpc.RefereeServiceStub(channel).Play()
    await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1")))
    while (resp := await call.read()) is not grpc.aio.EOF:
        if resp.HasField("decision_request"):
            now = time.perf_counter()
            if clock.get("sent"):
                played.latencies.append(now - clock["sent"])
                clock["sent"] = 0.0
            if len(played.requests) < played.keep:
                played.requests.append(resp.SerializeToString())
            req = resp.decision_request
            played.decisions += 1
            clock["sent"] = time.perf_counter()
            await call.write(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=req.legal_actions[0])))
        elif resp.HasField("match_end"):
            played.ends += 1
            played.status = resp.match_end.result.status
            await call.done_writing()
            return


async def play_match(channel: grpc.aio.Channel, players: int = 4, games: int = 1, keep: int = 0) -> Played:
    """Create one match on the referee behind ``channel`` and play all its seats (instant seats, each
    on its own stream of ``channel``) to the end, keeping its first ``keep`` DecisionRequests."""
    admin = pb_grpc.AdminServiceStub(channel)
    created = await admin.CreateMatch(pb.CreateMatchRequest(
        rules=pb.RuleSet(players=players), seat_names=[f"s{i}" for i in range(players)], games=games,
        time_control=pb.TimeControl(decision_ms=10_000, join_ms=60_000)), metadata=MD)
    played = Played(keep=keep)
    clock: dict[str, float] = {}
    results = await asyncio.gather(*(instant_seat(channel, t, played, clock) for t in created.tickets),
                                   return_exceptions=True)
    played.errors += [repr(r) for r in results if isinstance(r, BaseException)]
    return played


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank); 0 for no samples."""
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]
