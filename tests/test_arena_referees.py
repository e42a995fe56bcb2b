"""`arena run` against external referees: real `referee serve` processes and bot processes on 127.0.0.1.

One external referee (results, audited records, a wrong admin token, an unreachable referee); games
spread over two referees, one SIGKILLed mid-run (its games in flight are played again on the other,
never stored); the only referee shut down mid-run, aborting its matches (the run stops, the next
run on a new referee finishes the tournament).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from arena.play.referees import DnsWatch, RefereeConnection, RefereePool, connect_referees, referee_channel
from tests.netns_helpers import netns
from tests.test_arena_e2e import ROOT, arena, one_line_error, rows, verify_records

pytestmark = pytest.mark.slow

TOKEN = "arena-test-token"

CONFIG = """
[tournament]
name = "ext"
players = 2
games_per_pairing = %d
concurrency = %d
master_seed = "%s"
output = "out"
%s
[tournament.rules]
target = 7
[tournament.time_control]
decision_ms = 5000
join_ms = 20000
grace_ms = 500
# external referees: a sandboxed bot reaches only the embedded referee's socket (docs/arena.md)
[[bots]]
name = "first"
command = ["{python}", "-m", "arena.testing.instant_bot"]
sandbox = "none"
[[bots]]
name = "second"
command = ["{python}", "-m", "arena.testing.instant_bot"]
sandbox = "none"
[[bots]]
name = "third"
command = ["{python}", "-m", "arena.testing.instant_bot"]
sandbox = "none"
"""


def config(tmp_path: Path, games_per_pairing: int = 2, concurrency: int = 2, extra: str = "") -> Path:
    p = tmp_path / "ext.toml"
    p.write_text(CONFIG % (games_per_pairing, concurrency, "7e" * 32, extra))
    return p


class Referee:
    """A `referee serve --port 0 --admin-token TOKEN` process (it prints `PORT <n>` once bound)."""

    def __init__(self, grace: float = 1.0):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--admin-token", TOKEN,
             "--grace", str(grace), "--log-level", "warning"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), f"referee did not print its port: {line!r}"
        self.address = f"127.0.0.1:{int(line.split()[1])}"
        self.channel = grpc.insecure_channel(self.address)
        self.admin = pb_grpc.AdminServiceStub(self.channel)

    def live_matches(self) -> dict[str, int]:
        """Match id -> status of the matches not yet over (waiting for seats or running)."""
        reply = self.admin.ListMatches(
            pb.ListMatchesRequest(), metadata=[("authorization", f"Bearer {TOKEN}")], timeout=5
        )
        live = (pb.MATCH_STATUS_WAITING, pb.MATCH_STATUS_RUNNING)
        return {m.match_id: m.status for m in reply.matches if m.status in live}

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (SIGKILL: dies at once; SIGTERM: graceful shutdown) and wait for the exit."""
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(15)

    def stop(self) -> None:
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def referees() -> Iterator[list[Referee]]:
    """Start referees with ``referees.append(Referee())``; all are stopped at the end."""
    started: list[Referee] = []
    yield started
    for r in started:
        r.stop()


def stored(out: Path) -> list[tuple[str, str, str]]:
    """(game id, match id, referee) of the rows stored so far (read-only; [] before the first)."""
    try:
        con = sqlite3.connect(f"file:{out / 'arena.sqlite'}?mode=ro", uri=True, timeout=5)
        try:
            found = con.execute("SELECT game_id, match_id, extra FROM games").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:
        return []
    return [(g, m, json.loads(extra).get("referee", "")) for g, m, extra in found]


class Arena:
    """`arena run` as a background process whose stdout/stderr are collected as they come."""

    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "run", *args, "--no-progress", "--bootstrap", "0"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )  # fmt: skip
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            into.append(line)

    def wait(self, timeout: float = 120) -> int:
        code = self.proc.wait(timeout)
        for t in self._readers:
            t.join(10)
        return code

    @property
    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)


def kill_mid_game(
    ref: Referee, arena_run: Arena, out: Path, after_stored: int, sig: int = signal.SIGKILL
) -> tuple[set[str], set[str]]:
    """Once ``after_stored`` games played on ``ref`` are stored and a match on it has been waiting for
    its seats for 0.15 s (the arena is watching it; the bot processes are still starting, so it cannot
    end in the next moment), send ``sig`` to ``ref`` and wait for it to exit.

    :returns: the ids of the matches that were live, and of those that had waited 0.15 s.
    """
    first_seen: dict[str, float] = {}
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and arena_run.proc.poll() is None:
        if sum(r == ref.address for _, _, r in stored(out)) >= after_stored:
            live = ref.live_matches()
            now = time.monotonic()
            waiting = {m for m, status in live.items() if status == pb.MATCH_STATUS_WAITING}
            for m in waiting:
                first_seen.setdefault(m, now)
            settled = {m for m in waiting if now - first_seen[m] >= 0.15}
            if settled:
                ref.kill(sig)
                return set(live), settled
        time.sleep(0.01)
    raise AssertionError(f"no live match on {ref.address} to kill it in: {arena_run.text}")


def check_all_normal(out: Path, games: list[dict]) -> None:
    """Every stored game was played to its end (instant bots never fail), once, with an audited record."""
    assert len({g["game_id"] for g in games}) == len(games)
    for g in games:
        assert g["terminations"] == ["normal", "normal"] and g["winner"] in (0, 1), g
        assert max(g["scores"]) >= 7 and len(g["reasons"]) == 1, g
    verify_records(out, games)


def test_external_referee_end_to_end(tmp_path: Path, referees: list[Referee]) -> None:
    """`arena run --referee HOST:PORT --admin-token T` against a real `referee serve` process."""
    referees.append(Referee())
    ref = referees[0]
    done = arena(str(config(tmp_path)), "--referee", ref.address, "--admin-token", TOKEN, "--bootstrap", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = rows(out)
    assert len(games) == 6 and {g["referee"] for g in games} == {ref.address}
    check_all_normal(out, games)
    assert not ref.live_matches()  # every match it refereed is over
    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["tournament"]["master_seed"] == "7e" * 32 and ratings["tournament"]["played"] == 6


def test_wrong_token_or_unreachable_referee_fails_fast(tmp_path: Path, referees: list[Referee]) -> None:
    """A refused admin token and an unreachable referee: one line naming the referee, nothing written."""
    referees.append(Referee())
    ref = referees[0]
    cfg = config(tmp_path)
    # "Fast" is an outcome: the arena gives up by itself (a hang or an endless retry would end in the
    # helper's TimeoutExpired), never a measured duration, which a busy machine stretches.
    # the token in the environment, as the docs say (on the command line it adds its ps warning)
    done = arena(str(cfg), "--referee", ref.address, env={"ALLFOURS_ADMIN_TOKEN": "not-the-token"}, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line_error(done)
    assert line.startswith(f"error: referee {ref.address} refused the admin token: UNAUTHENTICATED: "), line
    assert not (tmp_path / "out").exists()

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    done = arena(str(cfg), "--referee", ref.address, "--referee", dead, env={"ALLFOURS_ADMIN_TOKEN": TOKEN},
                 timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    line = one_line_error(done)
    assert line.startswith(f"error: referee {dead} is not reachable: UNAVAILABLE: "), line
    assert not (tmp_path / "out").exists()
    assert not ref.live_matches()


def test_games_spread_over_two_referees_one_killed(tmp_path: Path, referees: list[Referee]) -> None:
    """Two referees from the config (`referees`, `admin_token_env`); one is SIGKILLed mid-game. The games
    it had in flight are not stored: they are played again on the other, and the tournament finishes."""
    referees.extend([Referee(), Referee()])
    doomed, survivor = referees
    extra = f'referees = ["{doomed.address}", "{survivor.address}"]\nadmin_token_env = "ARENA_TEST_TOKEN"'
    cfg = config(tmp_path, games_per_pairing=8, concurrency=3, extra=extra)
    out = tmp_path / "out"
    run = Arena(str(cfg), env={"ARENA_TEST_TOKEN": TOKEN})
    lost, watched = kill_mid_game(doomed, run, out, after_stored=2)
    assert run.wait() == 0, run.text
    games = rows(out)
    assert len(games) == 24
    check_all_normal(out, games)
    on = Counter(g["referee"] for g in games)
    assert on[doomed.address] >= 2 and on[survivor.address] >= 2 and sum(on.values()) == 24, on
    assert not lost & {g["match_id"] for g in games}  # a lost match is never a result
    text = run.text
    for match_id in watched:
        assert f"referee {doomed.address}: match {match_id} lost: UNAVAILABLE" in text, text
    assert f"referee {doomed.address} retired for the rest of this run (1 left)" in text, text
    retried = {line.split(":")[1].strip() for line in text.splitlines() if "not stored" in line}
    assert retried and all(g["referee"] == survivor.address for g in games if g["game_id"] in retried), retried
    assert not survivor.live_matches()


WORKERS_CONFIG = """
[tournament]
name = "pools"
players = 4
games_per_pairing = 8
concurrency = 2
master_seed = "%s"
output = "out"
no_show_s = 2
referees = ["%s", "%s"]
admin_token_env = "ARENA_TEST_TOKEN"
[tournament.time_control]
decision_ms = 5000
join_ms = 20000
grace_ms = 500
""" + "".join(
    f'[[bots]]\nname = "{name}"\nmode = "worker"\nworkers = 2\nsandbox = "none"\n'
    'command = ["{python}", "-m", "arena.testing.instant_bot", "--mode", "slow", "--delay-ms", "5"]\n'
    for name in ("first", "second", "third")
)


def test_lobby_workers_of_a_match_lost_with_its_referee_stay_with_its_replay(
    tmp_path: Path, referees: list[Referee]
) -> None:
    """Three bots with two lobby workers each, 4-player games (a game takes all the workers of its two
    bots), two games at once, and one of the two referees SIGKILLed mid-game. The lost game's
    workers, once they give up on the dead referee, are held for its replay: no other game may take
    them first (the replay would wait past ``no_show_s`` while the other games kept the pools busy,
    and the run would stop with "no workers to play it again"). All 24 games are stored once."""
    referees.extend([Referee(), Referee()])
    doomed, survivor = referees
    cfg = tmp_path / "pools.toml"
    cfg.write_text(WORKERS_CONFIG % ("5c" * 32, doomed.address, survivor.address))
    out = tmp_path / "out"
    run = Arena(str(cfg), env={"ARENA_TEST_TOKEN": TOKEN})
    deadline = time.monotonic() + 120
    while not (len(stored(out)) >= 2 and doomed.live_matches()):
        assert time.monotonic() < deadline and run.proc.poll() is None, run.text
        time.sleep(0.01)
    doomed.kill()
    assert run.wait() == 0, run.text
    games = rows(out)
    assert len(games) == 24 and len({g["game_id"] for g in games}) == 24
    assert all(g["terminations"] == ["normal"] * 4 for g in games), games
    assert "not stored" in run.text and "no workers to play it again" not in run.text, run.text
    assert not survivor.live_matches()


def test_no_referee_left_then_the_next_run_finishes(tmp_path: Path, referees: list[Referee]) -> None:
    """The only referee shuts down mid-game (SIGTERM, no grace: it aborts its live matches): the run
    stops (exit 1) with the stored games intact and the aborted games unstored; the same command
    against a new referee plays exactly the rest."""
    referees.append(Referee(grace=0))
    gone = referees[0].address
    cfg = config(tmp_path, games_per_pairing=4, concurrency=2)
    out = tmp_path / "out"
    run = Arena(str(cfg), "--referee", gone, "--admin-token", TOKEN)
    lost, watched = kill_mid_game(referees[0], run, out, after_stored=1, sig=signal.SIGTERM)
    assert run.wait() == 1, run.text
    assert f"error: no referee left: {gone} (referee {gone}: " in run.text, run.text
    for match_id in watched:
        assert f"match {match_id} aborted by the referee: the referee is shutting down" in run.text, run.text
    assert "stored games are kept; run the same command to resume" in run.text
    assert "Traceback" not in run.text
    before = stored(out)
    assert 1 <= len(before) < 12 and not lost & {m for _, m, _ in before}

    referees.append(Referee())
    done = arena(str(cfg), "--referee", referees[1].address, "--admin-token", TOKEN, "--bootstrap", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(before)} already played" in done.stdout
    games = rows(out)
    assert len(games) == 12
    check_all_normal(out, games)
    first = {g for g, _, _ in before}
    assert {g["referee"] for g in games if g["game_id"] in first} == {gone}
    assert {g["referee"] for g in games if g["game_id"] not in first} == {referees[1].address}
    assert not lost & {g["match_id"] for g in games}


def test_pool_spreads_games_and_skips_retired_referees() -> None:
    """RefereePool.acquire: least loaded first, ties round robin, avoids a referee the game failed on."""
    conns = [RefereeConnection(f"h:{k}", "t", None, None) for k in (1, 2, 3)]  # type: ignore[arg-type]
    pool = RefereePool(conns)
    got = [pool.acquire() for _ in range(4)]
    assert [c.address for c in got if c] == ["h:1", "h:2", "h:3", "h:1"]  # one each, then round robin
    pool.release(conns[1])
    assert pool.acquire() is conns[1]  # the least loaded
    assert pool.acquire(avoid={"h:3"}) is conns[1]  # h:2 and h:3 tie; h:3 is avoided
    assert pool.retire(conns[0], "gone") and not pool.retire(conns[0], "gone")
    assert [c.address for c in pool.alive] == ["h:2", "h:3"] and pool.retired == {"h:1": "gone"}
    assert pool.acquire(avoid={"h:2", "h:3"}) in conns[1:]  # all live ones avoided: use one anyway
    pool.retire(conns[1], "gone")
    pool.retire(conns[2], "gone")
    assert pool.acquire() is None


class _Refused(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return "match m1 is not over (MATCH_STATUS_RUNNING)"


def test_record_not_over_yet_is_waited_for(tmp_path: Path) -> None:
    """A referee refuses GetRecord until the match is over (FAILED_PRECONDITION: the record shows hidden
    cards); right after WatchMatch's result that is a moment to wait, not a referee failure."""
    from arena.play.game import GrpcGameRunner
    from arena.tournament.schedule import make_schedule

    calls = []

    class Admin:
        def GetRecord(self, request, metadata=None, timeout=None):
            calls.append(request.match_id)
            if len(calls) < 3:
                raise _Refused()
            return pb.GetRecordResponse(lines=['{"type": "header"}'], complete=True)

    conn = RefereeConnection("h:1", "t", None, Admin())  # type: ignore[arg-type]
    runner = GrpcGameRunner.__new__(GrpcGameRunner)
    runner.output = tmp_path
    game = make_schedule("rec", ["a", "b"], 2, 2, bytes(32))[0]
    assert runner._save_record(conn, game, "m1") == f"records/{game.game_id}.jsonl"
    assert calls == ["m1"] * 3
    assert (tmp_path / "records" / f"{game.game_id}.jsonl").read_text() == '{"type": "header"}\n'


def test_dns_names_give_every_address(tmp_path: Path) -> None:
    """``dns:NAME:PORT`` stands for every address of NAME (Swarm: ``tasks.referee``); others pass through."""
    from arena.play.referees import RefereeError, resolve_referees

    found = resolve_referees(["dns:localhost:50051", "10.0.0.9:7"], wait_s=5)
    assert "127.0.0.1:50051" in found and found[-1] == "10.0.0.9:7" and len(found) == len(set(found))
    with pytest.raises(RefereeError, match="gives no address"):
        resolve_referees(["dns:no-such-name.invalid:1"], wait_s=1)


def test_healthcheck_command(tmp_path: Path) -> None:
    """``python -m referee.healthcheck`` (the images' health check): 0 for a serving referee, 1 otherwise."""
    from referee.server import ThreadedReferee

    with ThreadedReferee(grace_s=0.5, host="127.0.0.1", port=0) as ref:
        ok = subprocess.run([sys.executable, "-m", "referee.healthcheck", ref.address], timeout=30,
                            capture_output=True, text=True)
    gone = subprocess.run([sys.executable, "-m", "referee.healthcheck", ref.address], timeout=30,
                          capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert gone.returncode == 1 and "UNAVAILABLE" in gone.stderr


def test_a_vanished_referee_address_is_given_up_within_the_connect_timeout() -> None:
    """A referee address whose packets are dropped (a killed Swarm task's): the arena's connection
    attempt gives up on its own (UNAVAILABLE) well inside a 10 s call deadline, where gRPC's default
    (a 20 s connect timeout) would let the call run into its deadline (DEADLINE_EXCEEDED)."""
    with netns() as ns:
        ns.run("iptables", "-A", "INPUT", "-p", "tcp", "-j", "DROP")
        channel = referee_channel(f"{ns.ns_ip}:50051")
        try:
            with pytest.raises(grpc.RpcError) as got:
                pb_grpc.AdminServiceStub(channel).ListMatches(pb.ListMatchesRequest(), timeout=10)
        finally:
            channel.close()
    assert got.value.code() == grpc.StatusCode.UNAVAILABLE, got.value


def test_dns_watch_retires_a_referee_gone_from_dns_and_adds_a_new_one(referees: list[Referee]) -> None:
    """DnsWatch: an address that appears in a referee name's answer and takes the admin token joins the
    pool; one that leaves a non-empty answer is retired at the next round (no game goes to it); an
    empty answer (a failed lookup) retires nothing; an address back in DNS (a restart) joins again.
    Two names (one port each: both referees are on 127.0.0.1); the answers are the test's."""
    referees.extend([Referee(), Referee()])
    first, second = (r.address for r in referees)
    pool = connect_referees([first], TOKEN)
    names = [f"dns:ra:{first.rsplit(':', 1)[1]}", f"dns:rb:{second.rsplit(':', 1)[1]}"]
    answers: dict[str, list[str]] = {"ra": ["127.0.0.1"], "rb": []}
    events: list[str] = []
    watch = DnsWatch(pool, names, TOKEN, events.append, lookup=lambda name, port: answers[name])
    try:
        watch.check()
        assert [c.address for c in pool.alive] == [first] and events == []
        answers["rb"] = ["127.0.0.1"]  # the second referee's replica starts
        watch.check()
        assert [c.address for c in pool.alive] == [first, second]
        answers["rb"] = ["127.0.0.2"]  # its task is gone; another address (nothing listens) took its place
        watch.check()
        assert [c.address for c in pool.alive] == [first] and pool.retired == {second: "gone from DNS"}
        assert all(pool.acquire() is pool.alive[0] for _ in range(3))
        answers["ra"] = []  # a failed lookup of the other name
        watch.check()
        assert [c.address for c in pool.alive] == [first]
        answers.update(ra=["127.0.0.1"], rb=["127.0.0.1"])  # restarted at its old address
        watch.check()
        assert [c.address for c in pool.alive] == [first, second]
    finally:
        pool.close()
    assert [e.split(":")[0] for e in events] == [f"referee {second.split(':')[0]}"] * 3, events


def test_a_check_with_no_referee_left_says_so(tmp_path: Path) -> None:
    """A bot's check needs a referee for its practice match: with none left, ``check_bots`` raises
    RefereeError (the run stops with that line). Each check ran in a thread of its own, which died with
    the error, and the bot was taken to have passed."""
    from arena.config import parse_config
    from arena.play.game import GrpcGameRunner
    from arena.play.referees import RefereeError

    data = {"tournament": {"name": "t", "players": 2, "games_per_pairing": 2, "output": str(tmp_path / "out")},
            "bots": [{"name": b, "command": ["true"], "sandbox": "none"} for b in ("a", "b")]}
    gone = RefereeConnection("h:1", "t", None, None)  # type: ignore[arg-type]
    pool = RefereePool([gone])
    pool.retire(gone, "it stopped answering")
    runner = GrpcGameRunner(parse_config(data, str(tmp_path / "t.toml"), tmp_path), pool, tmp_path / "out")
    with pytest.raises(RefereeError, match=r"^no referee left to check the bots on$"):
        runner.check_bots(["a", "b"])
