"""Arena throughput with instant bots, against the referee alone, in one run: games/s and their ratio.

    python benchmarks/arena.py [--bots 3] [--games-per-pairing 40] [--players 4] [--concurrency 2]
        [--per-game-games 12]

Four measurements, all over real 127.0.0.1 sockets with instant bots (``arena.testing.instant_bot``: the
first legal action at once), in this order:

1. **referee**: the referee alone (its own process, as in ``benchmarks/referee.py``) playing games of
   the same format, ``concurrency`` at a time, one match of one game each, the seats being asyncio
   clients in this process: ``referee_games_per_s`` — the ceiling for any arena. Half of its games
   are played before the lobby run and half after it (a fresh referee each time), so a machine whose
   load drifts during the run weighs on both sides of the ratio alike;
2. **lobby**: a real tournament (embedded referee) whose bots are pools of local workers
   (``mode = "worker"``: long-lived processes that dial the lobby), as ``arena run`` plays it (GC
   tuned, no live files: ``WatchMatch`` ``result_only``): ``games_per_s`` from the moment every
   worker is registered to the last result stored; ``ratio = games_per_s / referee_games_per_s``;
   ``workers_ready_s`` is the one-time start of the pools;
3. **live**: the same lobby tournament writing every running game's public events for ``arena
   web``'s spectators (``arena run --live``, ``arena serve``'s default): ``live_games_per_s``,
   ``live_ratio``;
4. **per_game**: the same tournament with one process per seat per game (``mode = "per_game"``, the
   only mode before the lobby), ``per_game_games`` games: ``per_game_games_per_s``.

Where the lobby run's time goes (``lobby_phases_ms``, mean per game): ``create`` (CreateMatch),
``play`` (assignments sent → result: the match itself, with the bots' round trips), ``record``
(GetRecord and writing the record file), ``store`` (the SQLite insert, fsynced) and ``wait`` (wall
time per game slot not spent in a game: scheduling, workers' Ready, the thread pool).
``cpu_ms_per_game`` says where the CPU goes, in ms of CPU (user + system) per game: for the
referee alone, the ``referee``'s process and the asyncio ``seats`` (all in this one process); for
the lobby run, the ``arena``'s process (with its embedded referee) and the ``workers`` (one process
per seat: each decision wakes a process of its own, the price of partners never sharing one).
``load_1min`` is the machine's 1-minute load average at the start, after the lobby run and at the
end (other work on the machine slows both sides; quote it with the figures). Figures go to stdout as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # before benchmarks/, where referee.py would hide the referee package

import grpc  # noqa: E402
import structlog  # noqa: E402
from _seats import MD, cpu_s, referee_in_child  # noqa: E402  (benchmarks/_seats.py)

from allfours.v1 import referee_pb2 as pb  # noqa: E402
from allfours.v1 import referee_pb2_grpc as pb_grpc  # noqa: E402
from arena.config import TournamentConfig, parse_config  # noqa: E402
from arena.hosting.jail import Jail  # noqa: E402
from arena.hosting.shepherd import descendants  # noqa: E402
from arena.lobby.setup import open_lobby  # noqa: E402
from arena.play.game import GrpcGameRunner  # noqa: E402
from arena.play.referees import connect_referee  # noqa: E402
from arena.tournament.result import GameResult  # noqa: E402
from arena.tournament.runner import open_tournament, run_games  # noqa: E402
from referee.outcome import Termination  # noqa: E402
from referee.server import tune_gc  # noqa: E402


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` and their descendants have used so far (0 for
    one gone): a sandboxed worker's pid is bwrap's, the worker itself runs below it."""
    every = [q for pid in pids for q in (pid, *descendants(pid))]
    total = 0.0
    for pid in every:
        with contextlib.suppress(OSError, IndexError, ValueError):
            total += cpu_s(pid)
    return total


async def _seat(address: str, ticket: str) -> None:
    """An instant seat (the first legal action at once), as in benchmarks/referee.py."""
    async with grpc.aio.insecure_channel(address) as ch:
        call = pb_grpc.RefereeServiceStub(ch).Play()
        await call.write(pb.PlayRequest(hello=pb.Hello(ticket=ticket, protocol_version="allfours.v1")))
        while (resp := await call.read()) is not grpc.aio.EOF:
            if resp.HasField("decision_request"):
                req = resp.decision_request
                await call.write(pb.PlayRequest(decision=pb.Decision(seq=req.seq, action=req.legal_actions[0])))
            elif resp.HasField("match_end"):
                await call.done_writing()
                return


async def referee_alone(players: int, games: int, concurrency: int) -> tuple[float, dict[str, float]]:
    """Games/s of the referee alone (its own process): ``games`` one-game matches, ``concurrency`` at a
    time; and CPU ms per game of the referee's process and of the seats (this process)."""
    async with referee_in_child() as (address, pid), grpc.aio.insecure_channel(address) as ch:
        admin = pb_grpc.AdminServiceStub(ch)
        names = [f"s{k}" for k in range(players)]

        async def lane(n: int) -> None:
            for _ in range(n):
                created = await admin.CreateMatch(pb.CreateMatchRequest(
                    rules=pb.RuleSet(players=players), seat_names=names, games=1), metadata=MD)
                await asyncio.gather(*(_seat(address, t) for t in created.tickets))

        await lane(2)  # warm-up, not counted
        t0, seats0, referee0 = time.perf_counter(), time.process_time(), cpu_s(pid)
        await asyncio.gather(*(lane(games // concurrency + (k < games % concurrency)) for k in range(concurrency)))
        wall = time.perf_counter() - t0
        cpu = {"referee": cpu_s(pid) - referee0, "seats": time.process_time() - seats0}
        return games / wall, {k: v * 1000 / games for k, v in cpu.items()}


def _config(tmp: str, args: argparse.Namespace, mode: str, gpp: int) -> TournamentConfig:
    data = {
        "tournament": {"name": f"bench-{mode}", "players": args.players, "games_per_pairing": gpp,
                       "concurrency": args.concurrency, "output": tmp, "master_seed": "00" * 32},
        "bots": [{"name": f"instant{k}", "mode": mode, "command": ["{python}", "-m", "arena.testing.instant_bot"],
                  "cwd": str(ROOT)} for k in range(args.bots)],
    }
    return parse_config(data, str(ROOT / "benchmarks" / "bench.toml"), ROOT)


def tournament(args: argparse.Namespace, mode: str, gpp: int, live: bool = False) -> dict[str, Any]:
    """Play one tournament in ``mode`` (``live``: writing live files); its games/s (and, for workers,
    the pools' start and the phases)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = _config(tmp, args, mode, gpp)
        t = open_tournament(config)
        jail = Jail.open()  # the bots run sandboxed, over unix sockets, as `arena run` runs them by default
        conn = connect_referee(None, None)  # the runner has it serve each bot's own socket
        setup = None
        try:
            runner = GrpcGameRunner(config, conn, Path(tmp), live=live, jail=jail)
            ready_s = 0.0
            if mode == "worker":
                t0 = time.perf_counter()
                setup = open_lobby(config, t.store, Path(tmp) / "logs", runner.secret_names, runner.secret_values,
                                   loop=conn.embedded.loop, jail=jail)
                runner.attach_lobby(setup.lobby, setup.kinds)
                want = {name: len(kind.pids()) for name, kind in setup.kinds.items()}  # type: ignore[attr-defined]
                while any(setup.lobby.counts().get(b, (0, 0))[1] < n for b, n in want.items()):
                    time.sleep(0.01)
                ready_s = time.perf_counter() - t0
            pids = [pid for kind in (setup.kinds.values() if setup else ()) for pid in kind.pids()]  # type: ignore[attr-defined]
            store_s = [0.0]
            record = t.store.record

            def timed_record(result: GameResult, at: float | None = None) -> bool:
                s0 = time.perf_counter()
                try:
                    return record(result, at)
                finally:
                    store_s[0] += time.perf_counter() - s0

            t.store.record = timed_record  # type: ignore[method-assign]
            start, arena0, workers0 = time.perf_counter(), time.process_time(), _cpu_s(pids)
            run_games(t.schedule, runner, t.store, config.concurrency)
            wall = time.perf_counter() - start
            cpu = {"arena": time.process_time() - arena0, "workers": _cpu_s(pids) - workers0}
        finally:
            if setup is not None:
                setup.stop()
            conn.close()
            jail.close()
        results = t.store.results()
        t.store.close()
    n = len(results)
    played = sum(1 for r in results if r.terminations == (Termination.NORMAL,) * args.players)
    out: dict[str, Any] = {"games": n, "played_normally": played, "wall_s": round(wall, 3),
                           "games_per_s": round(n / wall, 2)}
    if mode == "worker":
        phases = {k: sum((r.phases_ms or {}).get(k, 0.0) for r in results) / n
                  for k in ("create", "play", "record")}
        phases["store"] = store_s[0] * 1000 / n
        slot_ms = wall * 1000 * config.concurrency / n  # one game slot's wall time per game
        phases["wait"] = slot_ms - sum(phases.values())
        out["phases_ms"] = {k: round(v, 2) for k, v in phases.items()}
        out["workers_ready_s"] = round(ready_s, 3)
        out["cpu_ms"] = {k: round(v * 1000 / n, 1) for k, v in cpu.items()}
    return out


def main() -> int:
    """Run the three measurements and print the JSON report; returns 0."""
    p = argparse.ArgumentParser()
    p.add_argument("--bots", type=int, default=3)
    p.add_argument("--games-per-pairing", type=int, default=40, help="lobby run (3 bots: 3 pairings)")
    p.add_argument("--players", type=int, default=4, choices=(2, 4))
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--per-game-games", type=int, default=4, help="games per pairing of the per-game run")
    args = p.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    tune_gc()  # as `arena run` does
    pairings = args.bots * (args.bots - 1) // 2
    games = args.games_per_pairing * pairings
    before = games // 2
    load = [os.getloadavg()[0]]  # the machine's 1-minute load average: start, after the lobby run, end
    rate, ref_cpu = asyncio.run(referee_alone(args.players, before, args.concurrency)) if before else (0.0, {})
    lobby = tournament(args, "worker", args.games_per_pairing)
    load.append(os.getloadavg()[0])
    rate_after, ref_cpu_after = asyncio.run(referee_alone(args.players, games - before, args.concurrency))
    ref = games / (before / rate + (games - before) / rate_after) if before else rate_after  # games / their time
    live = tournament(args, "worker", args.games_per_pairing, live=True)
    per_game = tournament(args, "per_game", args.per_game_games)
    load.append(os.getloadavg()[0])
    report = {
        "players": args.players,
        "concurrency": args.concurrency,
        "games": lobby["games"],
        "played_normally": lobby["played_normally"],
        "games_per_s": lobby["games_per_s"],
        "referee_games_per_s": round(ref, 2),
        "ratio": round(lobby["games_per_s"] / ref, 3),
        "referee_games_per_s_before_after": [round(rate, 2), round(rate_after, 2)],
        "cpu_ms_per_game": {
            "referee_alone": {k: round((ref_cpu.get(k, v) + v) / 2, 1) for k, v in ref_cpu_after.items()},
            "lobby": lobby["cpu_ms"],
        },
        "live_games_per_s": live["games_per_s"],
        "live_ratio": round(live["games_per_s"] / ref, 3),
        "live_phases_ms": live["phases_ms"],
        "workers_ready_s": lobby["workers_ready_s"],
        "lobby_phases_ms": lobby["phases_ms"],
        "per_game_games": per_game["games"],
        "per_game_games_per_s": per_game["games_per_s"],
        "speedup_vs_per_game": round(lobby["games_per_s"] / per_game["games_per_s"], 1),
        "load_1min": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
