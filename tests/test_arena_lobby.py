"""The lobby and bot workers over real sockets with real processes (docs/protocol.md, docs/arena.md).

A pool of local workers plays 100 games, partners always on two workers; a worker killed mid-game
forfeits only its game and is restarted; a bot whose workers keep dying forfeits the rest at once;
remote workers dial in with `python -m sdk.run --arena` and a token from `arena token`; wrong,
revoked and borrowed tokens are refused with one line; a remote bot that never comes forfeits by
no_show once `arena run` has only its games left (and no_show_s more passed), while a served league waits
for a late one's first worker and plays all its games; the lobby drops a frozen worker within 15 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

import arena.lobby.service as lobby_module
from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import lobby_pb2_grpc as lpb_grpc
from arena.lobby import tokens as tokens_module
from arena.lobby.service import Lobby
from arena.lobby.tokens import TokenBook, token_digest
from arena.play.referees import RefereePool, connect_referee
from referee import wire
from referee.outcome import Termination
from tests.conftest import require
from tests.netns_helpers import netns

ROOT = Path(__file__).resolve().parent.parent
INSTANT = '["{python}", "-m", "arena.testing.instant_bot"]'

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(tmp: Path, bots: str, players: int = 4, gpp: int = 2, extra: str = "", name: str = "lob") -> Path:
    cfg = tmp / f"{name}.toml"
    cfg.write_text(
        f"""
[tournament]
name = "{name}"
players = {players}
games_per_pairing = {gpp}
concurrency = 2
output = "out"
master_seed = "{"ab" * 32}"
{extra}
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
{bots}
"""
    )
    return cfg


def worker_bot(name: str, command: str = INSTANT, extra: str = "") -> str:
    return f'\n[[bots]]\nname = "{name}"\nmode = "worker"\ncommand = {command}\ncwd = "{ROOT}"\n{extra}\n'


def arena(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def run(cfg: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    done = arena("run", str(cfg), "--no-progress", "--bootstrap", "50", timeout=timeout)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def rows(cfg: Path) -> list[dict]:
    return [json.loads(x) for x in (cfg.parent / "out" / "games.jsonl").read_text().splitlines()]


def check_partners_apart(games: list[dict], players: int = 4) -> None:
    """No game gave both seats of a side to one worker (4 players: seats s and s + 2)."""
    for g in games:
        w = g.get("workers")
        if w is None or players != 4:
            continue
        for side in (0, 1):
            if w[side] is not None:
                assert w[side] != w[side + 2], (g["game_id"], w)


# ------------------------------------------------------------------------------------ the service


@pytest.fixture()
def lobby():
    book = TokenBook()
    lob = Lobby("t", book)
    lob.start()
    try:
        yield lob
    finally:
        lob.stop()


def connect(lob: Lobby, *first: lpb.ConnectRequest, wait_s: float = 5.0) -> list[lpb.ConnectResponse]:
    """Open a stream, send ``first``, half-close, and return what came back (raises grpc.RpcError)."""
    with grpc.insecure_channel(lob.address) as ch:
        return list(lpb_grpc.LobbyServiceStub(ch).Connect(iter(first), timeout=wait_s))


def register(token: str, name: str, version: str = wire.PROTOCOL_VERSION) -> lpb.ConnectRequest:
    return lpb.ConnectRequest(register=lpb.Register(token=token, bot_name=name, protocol_version=version))


def refusal(lob: Lobby, *first: lpb.ConnectRequest) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as e:
        connect(lob, *first)
    return e.value.code(), e.value.details()


def test_lobby_refuses_bad_registrations_with_one_line(lobby: Lobby) -> None:
    good = lobby.tokens.issue("alpha")
    other = lobby.tokens.issue("beta")
    code, msg = refusal(lobby, register("x" * 32, "alpha"))
    assert (code, msg) == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
    code, msg = refusal(lobby, register(other, "alpha"))
    # names the bot it is for: a competitor's remote entry registers as 'name@N', and 'name' alone was
    # told only "this token is not bot 'name''s" (the holder of a token may know its bot's name)
    assert (code, msg) == (grpc.StatusCode.UNAUTHENTICATED, "this token is bot 'beta''s, not 'alpha''s: register "
                                                            "as 'beta' (a token plays only as its own bot)")
    code, msg = refusal(lobby, register(good, "alpha", version="allfours.v0"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "protocol_version" in msg
    code, msg = refusal(lobby, lpb.ConnectRequest(ready=lpb.Ready(match_id="m")))
    assert (code, msg) == (grpc.StatusCode.INVALID_ARGUMENT, "the first message must be a Register, got ready")
    code, msg = refusal(lobby, register(good, "alpha"), lpb.ConnectRequest(ready=lpb.Ready(match_id="nope")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "no match" in msg
    lobby.tokens.revoke(token_digest(good))
    assert refusal(lobby, register(good, "alpha")) == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
    assert lobby.counts() == {}


def test_a_token_added_as_registered_and_revoked_before_the_reload_is_refused_after_it(
        lobby: Lobby, tmp_path: Path) -> None:
    """A competitor's remote entry's token reaches the lobby as RegisterRemote answers (``TokenBook.tell``), before
    the league re-opens with the entry. If the competitor is disqualified before that re-opening (its tokens revoked
    in the store, its entry never in the config), the reload still drops the token, though the config does not name
    its bot: read only for the config's remote bots, it stayed accepted for as long as the arena ran."""
    from arena.config import load_config
    from arena.lobby.setup import LobbySetup
    from arena.tournament.store import Store

    entrant, token = "erin-remote@1", tokens_module.new_token()
    house = lobby.tokens.issue("alpha")
    config = load_config(write_config(tmp_path, worker_bot("alpha") + worker_bot("beta"), players=2))
    with Store(tmp_path / "arena.sqlite") as store:
        lobby.tokens.tell(entrant, token_digest(token), lambda: store.add_token(entrant, token_digest(token)))
        assert connect(lobby, register(token, entrant))[0].WhichOneof("msg") == "registered"
        LobbySetup(lobby, {}).reload_tokens(config, store)  # a reload meanwhile keeps it (still valid)
        assert connect(lobby, register(token, entrant))[0].WhichOneof("msg") == "registered"
        assert store.revoke_tokens(entrant) == 1  # arena competitor disqualify, in another process
        LobbySetup(lobby, {}).reload_tokens(config, store)
    assert refusal(lobby, register(token, entrant)) == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
    assert connect(lobby, register(house, "alpha"))[0].WhichOneof("msg") == "registered"  # the house's stays


class _StubRunner:
    """What :meth:`arena.tournament.league.League.open` asks of a runner to open its lobby (no games are played)."""

    secret_names: tuple[str, ...] = ()
    secret_values: tuple[str, ...] = ()
    jail = None

    pool = types.SimpleNamespace(embedded_loop=lambda: None)  # its referees' pool: the lobby gets a loop of its own

    def attach_lobby(self, lobby: Lobby, kinds: object) -> None:
        pass


def _league(tmp_path: Path) -> tuple[Any, Any, Path]:
    """An unopened League of two remote house bots (lobby on a free port) and a competition desk hooked to it as
    ``arena serve`` hooks them (``_ask_the_lobby``), competitor ``erin`` added; and the config's path."""
    from rich.console import Console

    from arena.competition.book import CompetitionBook
    from arena.competition.desk import Desk
    from arena.competition.setup import _ask_the_lobby
    from arena.config import CompetitionSettings
    from arena.tournament.league import League

    cfg = write_config(tmp_path, '\n[[bots]]\nname = "far"\nremote = true\n[[bots]]\nname = "near"\nremote = true\n',
                       players=2, extra=f'lobby = "127.0.0.1:{free_port()}"')
    league = League(str(cfg), tmp_path / "out", Console(file=io.StringIO()), lambda t: None, lambda _: _StubRunner())
    book = CompetitionBook(tmp_path / "out")
    book.add_competitor("erin")
    desk = Desk(CompetitionSettings(), tmp_path / "out", book, lambda: None, players=2)
    _ask_the_lobby(desk, league)
    return league, desk, cfg


def test_a_remote_entry_registered_while_the_lobby_opens_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Submission service answers on the lobby's port from the moment it listens, before ``arena serve``'s
    league holds the opened lobby. A remote entry registered then (its token stored after the opening read the
    store's tokens) was told to no lobby (``league.setup`` was None), so its worker was refused "unknown or
    revoked bot token", for good, until a reload the games in flight hold back. The league's token book is made
    before the lobby opens, and a told token is stored and accepted in one step. The registration is made at the
    exact point: the opening has read the store's tokens and not yet handed the lobby to the league."""
    from arena.config import load_config
    from arena.lobby.setup import LobbySetup

    league, desk, cfg = _league(tmp_path)
    read, go = threading.Event(), threading.Event()
    reload_tokens = LobbySetup.reload_tokens

    def held(self: LobbySetup, config: Any, store: Any) -> None:
        reload_tokens(self, config, store)
        if not read.is_set():  # the opening's read: hold it there
            read.set()
            assert go.wait(60)

    monkeypatch.setattr(LobbySetup, "reload_tokens", held)
    opened, done = threading.Event(), threading.Event()

    def serve() -> None:  # as arena serve does, in one thread (the store's)
        try:
            league.open(load_config(cfg))
            opened.set()
            done.wait(60)
        finally:
            league.close()

    serving = threading.Thread(target=serve, daemon=True)
    serving.start()
    try:
        assert read.wait(60)
        assert league.setup is None  # the lobby listens; the league does not hold it yet
        sub, token = desk.register_remote("erin", "erinbot", "next")
        go.set()
        assert opened.wait(60) and league.setup is not None
        assert connect(league.setup.lobby, register(token, sub.entrant))[0].WhichOneof("msg") == "registered"
    finally:
        go.set()
        done.set()
        serving.join(60)
        desk.book.close()


class _NotedLock:
    """A lock that notes the name of each thread that asks for it (to see a tell waiting), then takes it."""

    def __init__(self, asked: Any) -> None:
        self._lock, self._asked = threading.Lock(), asked

    def __enter__(self) -> None:
        self._asked(threading.current_thread().name)
        self._lock.acquire()

    def __exit__(self, *_: object) -> None:
        self._lock.release()


def test_a_token_told_while_a_reload_is_between_its_store_read_and_its_set_is_accepted(tmp_path: Path) -> None:
    """A reload reads the store's tokens, then sets the lobby's; a registration stores its token, then tells the
    lobby. Interleaved (the reload read before the store write, set after the tell), the fresh token was lost
    until another reload, and its worker refused for good. One lock holds both steps of each: here the
    registration asks for it while the reload is held between its read and its set, waits, and its token is
    accepted after both."""
    from arena.config import load_config
    from arena.lobby.setup import LobbySetup
    from arena.tournament.store import Store

    league, desk, cfg = _league(tmp_path)
    asked: list[str] = []
    telling, read, go = threading.Event(), threading.Event(), threading.Event()

    def note(name: str) -> None:
        asked.append(name)
        if name == "registration":
            telling.set()

    league.tokens._store_lock = _NotedLock(note)  # the book's lock between the store and itself
    lobby = Lobby("t", league.tokens)
    lobby.start()
    league.setup = setup = LobbySetup(lobby, {})
    got: list[tuple[Any, str]] = []
    registration = threading.Thread(target=lambda: got.append(desk.register_remote("erin", "erinbot", "next")),
                                    name="registration", daemon=True)

    class HeldStore:
        """The league's store, whose token read (in the reload's thread, the store's) holds the reload after it
        until ``go``."""

        @staticmethod
        def token_digests() -> dict[str, list[str]]:
            with Store(tmp_path / "out" / "arena.sqlite") as store:
                digests = store.token_digests()
            read.set()
            assert go.wait(60)
            return digests

    try:
        reload = threading.Thread(target=setup.reload_tokens, args=(load_config(cfg), HeldStore()), name="reload",
                                  daemon=True)
        reload.start()
        assert read.wait(60)
        registration.start()
        assert telling.wait(60)  # the registration asks for the lock the reload holds
        go.set()
        reload.join(60)
        registration.join(60)
        assert asked == ["reload", "registration"] and len(got) == 1
        sub, token = got[0]
        assert connect(lobby, register(token, sub.entrant))[0].WhichOneof("msg") == "registered"
    finally:
        go.set()
        lobby.stop()
        desk.book.close()


def test_a_remote_entrys_token_is_refused_once_a_reload_drops_the_retired_entry(tmp_path: Path) -> None:
    """A competitor's remote entry retires when a newer version of theirs takes its place (``in_play``). Its
    token, told to the lobby as it registered, was still read again at every reload (the lobby held it) and
    accepted for as long as it was valid in the store: the retired entry's worker went on registering, though
    none of its games is scheduled. Now the reload that drops the entry drops its token; the new entry's plays."""
    from arena.config import load_config
    from arena.lobby.setup import LobbySetup
    from arena.tournament.store import Store

    league, desk, cfg = _league(tmp_path)
    lobby = Lobby("t", TokenBook())
    lobby.start()
    league.setup = setup = LobbySetup(lobby, {})
    league.tokens = lobby.tokens  # as League.open opens the lobby with the league's book
    try:
        with Store(tmp_path / "out" / "arena.sqlite") as store:
            old, old_token = desk.register_remote("erin", "erinbot", "next")
            setup.reload_tokens(desk.grow(load_config(cfg)), store)  # the league re-opens with the entry
            assert connect(lobby, register(old_token, old.entrant))[0].WhichOneof("msg") == "registered"
            new, new_token = desk.register_remote("erin", "erinbot", "next")  # in_play = 1: the old one retires
            assert [s.entrant for s in desk.book.submissions("erin") if s.retired] == [old.entrant]
            grown = desk.grow(load_config(cfg))
            assert old.entrant not in {b.name for b in grown.bots} and store.token_digests(old.entrant)
            setup.reload_tokens(grown, store)
        assert refusal(lobby, register(old_token, old.entrant)) == (grpc.StatusCode.UNAUTHENTICATED,
                                                                    "unknown or revoked bot token")
        assert connect(lobby, register(new_token, new.entrant))[0].WhichOneof("msg") == "registered"
    finally:
        lobby.stop()
        desk.book.close()


#: Bytes that are not a ConnectRequest: a truncated length-delimited field, and a Register whose token is not UTF-8.
GARBAGE = [b"\x0a\xff\x01", b"\x0a\x04\x0a\x02\xff\xfe"]


def raw_refusal(lob: Lobby, *first: bytes) -> tuple[grpc.StatusCode, str]:
    """Send raw bytes on ``Connect`` (a worker written without the SDK) and return the refusal."""
    with grpc.insecure_channel(lob.address) as ch:
        call = ch.stream_stream("/allfours.v1.LobbyService/Connect", request_serializer=lambda b: b,
                                response_deserializer=lpb.ConnectResponse.FromString)
        with pytest.raises(grpc.RpcError) as e:
            list(call(iter(first), timeout=5))
    return e.value.code(), e.value.details() or ""


@pytest.mark.parametrize("garbage", GARBAGE)
def test_lobby_refuses_undecodable_bytes_with_one_line(lobby: Lobby, garbage: bytes) -> None:
    """Bytes that are not a ConnectRequest, first or after Register: INVALID_ARGUMENT in one short line
    naming their size (as the referee's Play does), not UNKNOWN with a Python exception's text."""
    token = lobby.tokens.issue("alpha")
    for first, who in [((garbage,), "the first message"),
                       ((register(token, "alpha").SerializeToString(), garbage), "a message after Register")]:
        code, msg = raw_refusal(lobby, *first)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, msg)
        assert msg == (f"{who} is not a ConnectRequest ({len(garbage)} bytes that do not decode as "
                       "allfours.v1.ConnectRequest)"), msg
    assert lobby.counts() == {}


def test_a_lobby_on_the_embedded_referees_loop_serves_and_stops_leaving_the_referee_up() -> None:
    """``arena run`` serves the lobby on its embedded referee's event loop (one loop for gRPC's asyncio
    layer in the process, no thread hop per event): workers register there, and stopping the lobby
    leaves that loop, and the referee on it, serving."""
    conn = connect_referee(None, None)
    try:
        loop = conn.embedded.loop
        assert RefereePool([conn]).embedded_loop() is loop
        lob = Lobby("t", TokenBook(), loop=loop)
        lob.start()
        token = lob.tokens.issue("alpha")
        with grpc.insecure_channel(lob.address) as ch:
            stream = lpb_grpc.LobbyServiceStub(ch).Connect(iter([register(token, "alpha")]), timeout=10)
            assert next(stream).WhichOneof("msg") == "registered"
            stream.cancel()
        assert not [t for t in threading.enumerate() if t.name == "lobby"]  # no loop thread of its own
        lob.stop()
        lob.stop()  # idempotent
        assert loop.is_running()
        assert conn.healthy()  # the referee still answers on that loop
        with pytest.raises(grpc.RpcError) as e:
            connect(lob, register(token, "alpha"), wait_s=2)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE  # the lobby's port is closed
    finally:
        conn.close()


def test_the_lobbys_port_answers_the_standard_health_check() -> None:
    """``arena run``/``arena serve`` had no health check an orchestrator could call (only the referee's);
    the lobby's port serves ``grpc.health.v1.Health`` now: ``python -m referee.healthcheck`` (a real
    process) exits 0 while it serves and 1, with one line, once it has stopped."""
    lob = Lobby("t", TokenBook())
    lob.start()

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "referee.healthcheck", lob.address], cwd=ROOT, text=True,
                              capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})

    try:
        up = check()
        assert up.returncode == 0, up.stderr
    finally:
        lob.stop()
    down = check()
    assert down.returncode == 1 and len(down.stderr.strip().splitlines()) == 1, down.stderr


def test_health_watch_streams_of_one_address_do_not_take_the_lobbys_port() -> None:
    """A health ``Watch`` stream takes no token and stays open as long as its client likes, each holding one
    of the lobby server's 1024 RPC slots: one anonymous client's 1100 of them made the port refuse every
    worker's Connect (and the Submission service's calls) with "Concurrent RPC limit exceeded!". Now one
    address's Watch streams are capped: the rest are refused at once in one line, and a worker's
    Connect and a health Check still answer."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from referee.streams import WATCHES_PER_PEER

    lob = Lobby("t", TokenBook())
    address = lob.start()
    flood = 1100

    async def attack() -> tuple[int, list[tuple[grpc.StatusCode, str]], tuple[grpc.StatusCode, str], int]:
        channels = [grpc.aio.insecure_channel(address) for _ in range(8)]
        calls = [health_pb2_grpc.HealthStub(channels[k % 8]).Watch(health_pb2.HealthCheckRequest(), timeout=60)
                 for k in range(flood)]
        firsts = await asyncio.gather(*(c.read() for c in calls), return_exceptions=True)
        watching = sum(isinstance(f, health_pb2.HealthCheckResponse) for f in firsts)
        refused = [(f.code(), f.details()) for f in firsts if isinstance(f, grpc.aio.AioRpcError)]
        async with grpc.aio.insecure_channel(address) as ch:
            try:
                await lpb_grpc.LobbyServiceStub(ch).Connect(iter([register("nope", "b")]), timeout=30).read()
                worker = (grpc.StatusCode.OK, "")
            except grpc.aio.AioRpcError as e:
                worker = (e.code(), e.details() or "")
            status = (await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=30)).status
        for c in calls:
            c.cancel()
        for c in channels:
            await c.close()
        return watching, refused, worker, status

    try:
        watching, refused, worker, status = asyncio.run(attack())
    finally:
        lob.stop()
    assert worker[0] == grpc.StatusCode.UNAUTHENTICATED, worker  # the lobby's own answer to a bad token
    assert status == health_pb2.HealthCheckResponse.SERVING
    assert watching == WATCHES_PER_PEER
    line = f"{WATCHES_PER_PEER} health Watch streams of your address are open: close one"
    capped = [r for r in refused if r == (grpc.StatusCode.RESOURCE_EXHAUSTED, line)]
    # every other stream ended at once (now and then gRPC reports one aborted as it opened as CANCELLED)
    assert len(refused) == flood - watching and len(capped) > flood // 2, refused[:3]
    assert all(code == grpc.StatusCode.CANCELLED for code, d in refused if d != line), refused[:3]


def test_lobby_refuses_a_stream_silent_past_the_register_timeout(lobby: Lobby,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """No first message within REGISTER_TIMEOUT_S: INVALID_ARGUMENT in one line (the stream stays open)."""
    monkeypatch.setattr(lobby_module, "REGISTER_TIMEOUT_S", 1.0)
    hold = threading.Event()

    def nothing() -> Iterator[lpb.ConnectRequest]:
        hold.wait(10)  # the open stream sends nothing until the lobby gives up
        yield from ()

    try:
        with grpc.insecure_channel(lobby.address) as ch, pytest.raises(grpc.RpcError) as e:
            list(lpb_grpc.LobbyServiceStub(ch).Connect(nothing(), timeout=5))
    finally:
        hold.set()
    assert (e.value.code(), e.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                   "no Register within 1 s of opening the stream")


def test_lobby_drops_a_frozen_worker_within_15_seconds(lobby: Lobby, tmp_path: Path) -> None:
    """A worker process that stops answering (SIGSTOP: its gRPC threads freeze too) is dropped by the
    lobby's keepalive within 15 s, and a worker whose process dies is dropped at once."""
    procs = [  # a token of its own each, as the arena issues them (one worker a token)
        subprocess.Popen(
            [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena", lobby.address,
             "--token", lobby.tokens.issue("alpha"), "--name", "alpha", "--reconnect", "1"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 30
        while lobby.counts().get("alpha", (0, 0))[1] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lobby.counts()["alpha"] == (2, 2)
        procs[0].send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        while lobby.counts().get("alpha", (0, 0))[0] > 1 and time.monotonic() - frozen < 20:
            time.sleep(0.1)
        assert lobby.counts()["alpha"][0] == 1 and time.monotonic() - frozen < 15
        procs[1].kill()
        killed = time.monotonic()
        while lobby.counts().get("alpha", (0, 0))[0] > 0 and time.monotonic() - killed < 20:
            time.sleep(0.05)
        assert "alpha" not in lobby.counts() and time.monotonic() - killed < 2
    finally:
        for p in procs:
            p.kill()
            p.wait(10)


# ------------------------------------------------------------------------------------ local workers


def test_a_pool_of_workers_plays_100_games_partners_on_two_workers(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, worker_bot("one") + worker_bot("two"), gpp=100)
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(cfg)
    assert len(games) == 100 and len({g["game_id"] for g in games}) == 100
    assert all(g["reasons"][0].startswith("side ") and "reached" in g["reasons"][0] for g in games)
    assert all(g["terminations"] == ["normal"] * 4 for g in games)
    # a worker seat has no per-game process: that is not a crash (each seat's failures all zero)
    assert all(all(not any(f.values()) for f in g["failures"]) for g in games), games[0]["failures"]
    check_partners_apart(games)
    per_worker = Counter(w for g in games for w in g["workers"])
    # two pools of 4 (concurrency 2 x 2 seats), no restarts; every worker played many games
    assert len(per_worker) == 8 and min(per_worker.values()) >= 20, per_worker
    assert sum(per_worker.values()) == 400


def test_a_worker_killed_mid_game_forfeits_only_that_game_and_is_restarted(tmp_path: Path) -> None:
    once = tmp_path / "crashed"
    crashy = f'["{{python}}", "-m", "arena.testing.instant_bot", "--mode", "crash", "--after", "3", "--once", "{once}"]'
    # unsandboxed: its --once marker is a file it writes on this machine (a sandboxed bot cannot)
    cfg = write_config(tmp_path, worker_bot("crashy", crashy, 'sandbox = "none"') + worker_bot("steady"), gpp=8)
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "crashed").exists()
    games = rows(cfg)
    assert len(games) == 8
    lost = [g for g in games if any("left during the game" in r for r in g["reasons"])]
    assert len(lost) == 1, [g["reasons"] for g in games]
    g = lost[0]
    crashy_side = g["sides"].index("crashy") if "sides" in g else [g["a"], g["b"]].index("crashy")
    assert g["winner"] == 1 - crashy_side
    assert any(f"side {crashy_side} (crashy) forfeited" in r for r in g["reasons"])
    assert "disconnect" in g["terminations"]
    others = [x for x in games if x is not g]
    assert all(x["terminations"] == ["normal"] * 4 for x in others)
    check_partners_apart(games)
    assert "workers: bot crashy worker" in done.stdout and "exited with status 1" in done.stdout
    assert "restarting it in 0.5 s" in done.stdout
    log = (tmp_path / "out" / "logs" / "workers" / "crashy").glob("worker*.log")
    assert "crashing on purpose" in "".join(p.read_text() for p in log)


def test_a_bot_whose_workers_keep_dying_forfeits_its_games_at_once(tmp_path: Path) -> None:
    dying = '["{python}", "-c", "import sys; sys.exit(\'no weights\')"]'
    cfg = write_config(tmp_path, worker_bot("dying", dying) + worker_bot("fine"), gpp=4)
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(cfg)
    assert len(games) == 4
    for g in games:
        side = [g["a"], g["b"]].index("dying")
        assert g["winner"] == 1 - side
        (reason,) = g["reasons"]
        assert reason.startswith(f"side {side} (dying) forfeited: broken: its workers died 3 times in a row")
        assert "no weights" in reason
    # The reason above says "broken", not no_show: the games were forfeited at once, not left to run
    # out join_ms (20 s); an outcome, so a busy machine cannot fail it.


# ------------------------------------------------------------------------------------ remote workers


def remote_worker(port: int, token: str, name: str, *extra: str) -> subprocess.Popen[str]:
    """``sdk.run`` as a remote worker, its token in the environment as the docs say (not ``--token``)."""
    args = [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena", f"127.0.0.1:{port}",
            "--name", name, "--log-level", "warning", "--reconnect", "60", *extra]
    env = {**os.environ, "ALLFOURS_BOT_TOKEN": token}
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_remote_workers_with_tokens(tmp_path: Path) -> None:
    port = free_port()
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    cfg = write_config(tmp_path, bots, gpp=6, extra=f'lobby = "127.0.0.1:{port}"\nno_show_s = 60')
    first = arena("token", str(cfg), "far")
    assert first.returncode == 0, first.stderr
    old = first.stdout.strip()
    again = arena("token", str(cfg), "far")
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1 and "--revoke" in again.stderr
    assert arena("token", str(cfg), "far", "--revoke").returncode == 0
    new = arena("token", str(cfg), "far").stdout.strip()
    assert len(new) >= 22 and new != old  # >= 128 bits in URL-safe base64
    db = (tmp_path / "out" / "arena.sqlite").read_bytes()
    assert new.encode() not in db and token_digest(new).encode() in db
    assert arena("token", str(cfg), "near").returncode == 2  # not a remote bot

    arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                   "--bootstrap", "50"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    workers: list[subprocess.Popen[str]] = []
    try:
        for token, name, why in ((old, "far", "unknown or revoked bot token"), ("w" * 32, "far", "unknown or revoked"),
                                 (new, "near", "plays only as its own bot")):
            bad = remote_worker(port, token, name)
            _, err = bad.communicate(timeout=60)
            lines = err.strip().splitlines()
            assert bad.returncode == 1 and len(lines) == 1, err
            assert "UNAUTHENTICATED" in lines[0] and why in lines[0], lines
        workers.append(remote_worker(port, new, "far", "--workers", "2"))
        out, err = arena_proc.communicate(timeout=240)
        assert arena_proc.returncode == 0, out + err
    finally:
        for p in [arena_proc, *workers]:
            p.kill()
            p.wait(10)
    games = rows(cfg)
    assert len(games) == 6 and all(g["terminations"] == ["normal"] * 4 for g in games), games
    check_partners_apart(games)
    assert all(all(w is not None for w in g["workers"]) for g in games)
    # a remote bot's workers may remember a game's cards: its pairs are two games dealt on their own
    seeds: dict[str, set[str]] = {}
    for g in games:
        seeds.setdefault(g["pair"], set()).add(g["seed"])
    assert len(seeds) == 3 and all(len(s) == 2 for s in seeds.values()), seeds


def test_arena_token_revoke_is_refused_by_a_running_serve_without_a_sighup(tmp_path: Path) -> None:
    """A host revoking a leaked token expects it refused at once; a running `arena serve` read the store's tokens
    only at its next SIGHUP, so the holder's worker went on playing, and dialled in again, until the host also sent
    the signal. Now the serve sees the store change: the connected worker is dropped, its dial again refused, and
    so is any other with that token; no signal sent."""
    port = free_port()
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=2, extra=f'lobby = "127.0.0.1:{port}"')
    token = arena("token", str(cfg), "far").stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = remote_worker(port, token, "far")
    try:
        _served(cfg, proc, lambda games: sum("far" in (g["a"], g["b"]) for g in games) >= 2)  # it played
        assert worker.poll() is None
        revoked = arena("token", str(cfg), "far", "--revoke")
        assert revoked.returncode == 0, revoked.stderr
        _, err = worker.communicate(timeout=120)  # dropped, it dials again and is refused: it exits
        assert worker.returncode == 1 and "UNAUTHENTICATED: unknown or revoked bot token" in err, err
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch, pytest.raises(grpc.RpcError) as e:
            list(lpb_grpc.LobbyServiceStub(ch).Connect(iter([register(token, "far")]), timeout=30))
        assert (e.value.code(), e.value.details()) == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked bot token")
    finally:
        out = _stopped(proc, worker)
    assert proc.returncode == 0 and "Traceback" not in out, out
    assert "remote bots' tokens changed in the store: taken; 1 worker(s) of a revoked token dropped" in out, out


def test_a_remote_worker_on_another_machine_is_told_a_referee_it_reaches(tmp_path: Path) -> None:
    """A lobby on a non-loopback address with the embedded referee: a remote worker in a network
    namespace of its own (its 127.0.0.1 is not the arena's) plays every game normally, so it was told
    a referee address it reaches (the lobby's host), not 127.0.0.1. A wildcard lobby without
    --referee-advertise is refused at start with one line (workers could not be told an address)."""
    with netns() as ns:
        port = free_port()
        bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
        cfg = write_config(tmp_path, bots, players=2, gpp=2, extra=f'lobby = "{ns.host_ip}:{port}"\nno_show_s = 60')
        token = arena("token", str(cfg), "far").stdout.strip()
        arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                       "--bootstrap", "50"], cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        worker = subprocess.Popen(
            ns.argv(sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                    f"{ns.host_ip}:{port}", "--name", "far", "--log-level", "warning", "--reconnect", "60"),
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "ALLFOURS_BOT_TOKEN": token},
        )
        out, err = ended(arena_proc, worker)
    assert arena_proc.returncode == 0, out + err
    games = rows(cfg)
    assert len(games) == 2 and all(g["terminations"] == ["normal"] * 2 for g in games), games
    assert all(None not in g["workers"] for g in games), games
    cfg.write_text(cfg.read_text().replace(f'lobby = "{ns.host_ip}:{port}"', f'lobby = "0.0.0.0:{port}"'))
    (tmp_path / "out").rename(tmp_path / "out-before")
    refused = run(cfg, timeout=60)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "--referee-advertise" in lines[0], refused.stderr


def ended(arena_proc: subprocess.Popen[str], *others: subprocess.Popen[str]) -> tuple[str, str]:
    """``arena_proc``'s stdout and stderr once it ends (240 s at most); it and ``others`` (its remote workers,
    which outlive it) are killed after, whatever happened."""
    try:
        return arena_proc.communicate(timeout=240)
    finally:
        for p in (arena_proc, *others):
            p.kill()
            p.wait(10)


def test_a_wildcard_lobby_with_remote_bots_names_no_second_address(tmp_path: Path) -> None:
    """Seen hosting the compose demo (`lobby = "0.0.0.0:50100"`, remote bots): `arena run` printed
    `lobby: 0.0.0.0:50100, remote workers at None`. The lobby listens for remote workers on that
    address itself (no second listener), so the line names it alone, as `arena serve`'s does."""
    port = free_port()
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=2, extra=f'lobby = "0.0.0.0:{port}"\nno_show_s = 60')
    token = arena("token", str(cfg), "far").stdout.strip()
    arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                   "--bootstrap", "50", "--referee-advertise", "127.0.0.1"], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = remote_worker(port, token, "far")
    out, err = ended(arena_proc, worker)
    assert arena_proc.returncode == 0, out + err
    assert f"lobby: 0.0.0.0:{port}\n" in out, out
    assert "None" not in out, out


def test_a_remote_bot_added_on_sighup_is_told_a_referee_it_reaches(tmp_path: Path) -> None:
    """`arena serve` on a non-loopback lobby with no remote bot yet: its embedded referee listened on
    127.0.0.1 alone (no worker from another machine could come), so a remote bot a reload (SIGHUP) added
    had its worker told 127.0.0.1, which on its machine is not the arena: every game of it a no-show until
    a restart. The reload now opens the referee's listener for remote workers on the lobby's host: the
    worker, in a network namespace of its own, plays its games normally."""
    with netns() as ns:
        port = free_port()
        head = f'lobby = "{ns.host_ip}:{port}"\nno_show_s = 60'
        cfg = write_config(tmp_path, worker_bot("one") + worker_bot("two"), players=2, gpp=2, extra=head)
        proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        worker = None
        try:
            _served(cfg, proc, lambda games: len(games) >= 2)
            cfg.write_text(cfg.read_text() + '\n[[bots]]\nname = "far"\nremote = true\n')
            token = arena("token", str(cfg), "far").stdout.strip()
            worker = subprocess.Popen(
                ns.argv(sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena",
                        f"{ns.host_ip}:{port}", "--name", "far", "--log-level", "warning", "--reconnect", "120"),
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env={**os.environ, "ALLFOURS_BOT_TOKEN": token},
            )
            proc.send_signal(signal.SIGHUP)
            games = _served(cfg, proc, lambda games: sum("far" in (g["a"], g["b"]) for g in games) >= 4)
        finally:
            out = _stopped(proc, worker)
    _played_its_four(games, "far", proc, out)


@dataclass
class _Embedded:
    """An embedded referee's stand-in for :func:`arena.cli.commands.reach_remote_workers`: records where it
    was asked to listen for remote workers, and answers with port 7777."""

    asked: list[tuple[str, int]]

    def listen_remote(self, host: str, port: int, tls: object) -> int:
        self.asked.append((host, port))
        return 7777


@pytest.mark.parametrize(
    ("address", "in_sandbox", "lobby", "advertise", "expected"),
    [
        # a league started with container bots and no remote one: the referee on the sandbox's gateway
        ("172.18.0.1:5000", True, "10.231.0.1:7000", None, "10.231.0.1:7777"),
        # started without containers or remote bots: on loopback
        ("127.0.0.1:5000", False, "10.231.0.1:7000", None, "10.231.0.1:7777"),
        # a wildcard lobby, told the address other machines dial
        ("127.0.0.1:5000", False, "0.0.0.0:7000", "arena.example", "arena.example:7777"),
        # already where other machines reach it (started with a remote bot): nothing to open
        ("10.231.0.1:5000", False, "10.231.0.1:7000", None, None),
    ],
)
def test_a_reload_opens_the_listener_for_remote_workers_where_the_referee_was_out_of_reach(
        tmp_path: Path, address: str, in_sandbox: bool, lobby: str, advertise: str | None, expected: str | None
) -> None:
    from argparse import Namespace

    from arena.cli.commands import reach_remote_workers
    from arena.config import load_config
    from arena.play.referees import RefereeConnection

    cfg = load_config(str(write_config(tmp_path, worker_bot("one") + '\n[[bots]]\nname = "far"\nremote = true\n',
                                       players=2, extra=f'lobby = "{lobby}"')))
    embedded = _Embedded([])
    conn = RefereeConnection(address, "t", None, None, embedded=embedded)  # type: ignore[arg-type]
    pool = Namespace(conns=[conn])
    reach_remote_workers(cfg, Namespace(referee_advertise=advertise, referee_port=0), pool, in_sandbox)  # type: ignore[arg-type]
    assert conn.remote == expected
    assert len(embedded.asked) == (expected is not None)


def test_a_reload_adding_a_remote_bot_on_a_wildcard_lobby_without_an_advertised_address_is_refused(
        tmp_path: Path) -> None:
    """One line naming tournament.lobby, so the league keeps its old config (arena/tournament/league.py)."""
    from argparse import Namespace

    from arena.cli.commands import reach_remote_workers
    from arena.config import ConfigError, load_config
    from arena.play.referees import RefereeConnection

    cfg = load_config(str(write_config(tmp_path, worker_bot("one") + '\n[[bots]]\nname = "far"\nremote = true\n',
                                       players=2, extra='lobby = "0.0.0.0:7000"')))
    conn = RefereeConnection("127.0.0.1:5000", "t", None, None, embedded=_Embedded([]))  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as e:
        reach_remote_workers(cfg, Namespace(referee_advertise=None, referee_port=0), Namespace(conns=[conn]), False)  # type: ignore[arg-type]
    assert "tournament.lobby: remote workers cannot be told a referee they reach" in str(e.value)
    assert "--referee-advertise" in str(e.value) and "\n" not in str(e.value) and conn.remote is None


def _stopped(league: subprocess.Popen[str], worker: subprocess.Popen[str] | None) -> str:
    """A served league's output once SIGTERM ended it (120 s at most); its remote ``worker``, if started,
    killed after."""
    league.send_signal(signal.SIGTERM)
    try:
        return league.communicate(timeout=120)[0]
    finally:
        if worker is not None:
            worker.kill()
            worker.wait(10)


def _played_its_four(games: list[dict[str, Any]], bot: str, league: subprocess.Popen[str], out: str) -> None:
    """The league exited 0 without a traceback, and ``bot`` played its four games to the end, every seat."""
    assert league.returncode == 0 and "Traceback" not in out, out
    its = [g for g in games if bot in (g["a"], g["b"])]
    assert len(its) == 4 and all(g["terminations"] == ["normal"] * 2 for g in its), (its, out)


def _served(cfg: Path, proc: subprocess.Popen[str], enough: Any) -> list[dict[str, Any]]:
    """The rows of a served league's games.jsonl once ``enough`` of them (180 s at most)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            games = rows(cfg)
        except (OSError, json.JSONDecodeError):  # not yet written, or caught mid-write
            games = []
        if enough(games):
            return games
        time.sleep(0.2)
    raise AssertionError("the games awaited were not stored within 180 s")


def test_a_remote_bot_that_never_comes_forfeits_by_no_show(tmp_path: Path) -> None:
    """`arena run` ends though a remote bot's worker never comes: its games are passed over while the others
    are played, then, once only they are left, wait no_show_s more (one line says so) and are forfeited
    (no_show) as before."""
    bots = worker_bot("near") + worker_bot("also") + '\n[[bots]]\nname = "ghost"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=4, extra="no_show_s = 1")
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(cfg)
    assert len(games) == 12
    ghost = [g for g in games if "ghost" in (g["a"], g["b"])]
    assert len(ghost) == 8
    for g in ghost:
        side = [g["a"], g["b"]].index("ghost")
        assert g["winner"] == 1 - side
        assert g["reasons"] == [f"side {side} (ghost) forfeited: no_show: too few workers connected for 1 s"]
    assert all(g["terminations"] == ["normal"] * 2 for g in games if g not in ghost), games
    lines = done.stdout.splitlines()
    said = [ln for ln in lines if "the games left wait for the workers of remote bot(s) 'ghost'" in ln]
    assert len(said) == 1 and "at most no_show_s (1 s)" in said[0], done.stdout
    warned = [ln for ln in lines if "no worker of remote bot(s) 'ghost' connected in time" in ln]
    assert len(warned) == 1 and lines.index(said[0]) < lines.index(warned[0]), done.stdout  # once it ran out


def test_a_run_of_remote_bots_only_says_their_games_wait_and_warns_of_no_forfeit(tmp_path: Path) -> None:
    """Seen in the compose demo: `arena run` of a tournament whose only bots are remote, their workers started
    with it, printed at its first look that the games are forfeited after no_show_s, before any worker had a
    chance to dial; every game was then played. Now one line says the games wait for their workers, and for
    how long at most, and nothing speaks of a forfeit, since none happened."""
    port = free_port()
    bots = '\n[[bots]]\nname = "far"\nremote = true\n\n[[bots]]\nname = "farther"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=2, extra=f'lobby = "127.0.0.1:{port}"\nno_show_s = 120')
    tokens = {b: arena("token", str(cfg), b).stdout.strip() for b in ("far", "farther")}
    arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                   "--bootstrap", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    workers = []
    try:
        workers = [remote_worker(port, token, bot) for bot, token in tokens.items()]
        out, err = arena_proc.communicate(timeout=240)
        assert arena_proc.returncode == 0, out + err
    finally:
        for p in (arena_proc, *workers):
            p.kill()
            p.wait(10)
    games = rows(cfg)
    assert len(games) == 2 and all(g["terminations"] == ["normal"] * 2 for g in games), games
    said = [ln for ln in out.splitlines() if "remote bot(s) 'far', 'farther'" in ln]
    assert len(said) == 1 and "wait for the workers" in said[0] and "at most no_show_s (120 s)" in said[0], out
    assert not [ln for ln in out.splitlines() if ln.startswith("workers:") and "forfeit" in ln], out


def test_a_remote_bot_whose_worker_comes_late_plays_all_its_games_in_a_served_league(tmp_path: Path) -> None:
    """Seen in a competition: an entry enrolled, its competitor started its workers a few minutes later, and
    every game of it was already lost as a no_show. A served league passes over the games of a remote bot
    none of whose workers has connected (one line says so) while the others are played, and plays them
    when its worker comes, however late: none is forfeited, though no_show_s is 1 s."""
    port = free_port()
    bots = worker_bot("one") + worker_bot("two") + '\n[[bots]]\nname = "late"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=2, extra=f'lobby = "127.0.0.1:{port}"\nno_show_s = 1')
    token = arena("token", str(cfg), "late").stdout.strip()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker = None
    try:
        first = _served(cfg, proc, lambda games: len(games) >= 2)  # one v two: the others go on
        assert all("late" not in (g["a"], g["b"]) for g in first), first
        time.sleep(3)  # three times no_show_s: long enough for its games to be forfeited, were they not waited for
        assert all("late" not in (g["a"], g["b"]) for g in rows(cfg)), rows(cfg)
        worker = remote_worker(port, token, "late")
        games = _served(cfg, proc, lambda games: len(games) >= 6)
    finally:
        out = _stopped(proc, worker)
    _played_its_four(games, "late", proc, out)
    assert "remote bot(s) 'late' wait for their first worker" in out, out


def test_a_config_may_refuse_remote_bots_at_four_players(tmp_path: Path) -> None:
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    cfg = write_config(tmp_path, bots, extra="remote_in_4p = false")
    done = run(cfg)
    assert done.returncode == 2
    assert "bots[1].remote" in done.stderr and "remote_in_4p" in done.stderr


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the test makes its throwaway certificate with openssl")
def test_the_lobby_serves_tls_and_refuses_plaintext(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    port = free_port()
    bots = worker_bot("near") + '\n[[bots]]\nname = "far"\nremote = true\n'
    extra = f'lobby = "127.0.0.1:{port}"\nlobby_tls_cert = "{cert}"\nlobby_tls_key = "{key}"'
    cfg = write_config(tmp_path, bots, players=2, gpp=4, extra=extra)
    made = arena("token", str(cfg), "far")
    assert made.returncode == 0 and made.stdout.strip(), made.stdout + made.stderr
    token = made.stdout.strip()
    arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                   "--bootstrap", "50"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    worker = None
    try:
        plain = remote_worker(port, token, "far", "--reconnect", "3")
        _, err = plain.communicate(timeout=60)
        assert plain.returncode == 1 and "cannot reach the lobby" in err, err
        worker = remote_worker(port, token, "far", "--tls-ca", str(cert))
        out, err = arena_proc.communicate(timeout=240)
        assert arena_proc.returncode == 0, out + err
        assert "(TLS)" in out
    finally:
        for p in (arena_proc, worker):
            if p is not None:
                p.kill()
                p.wait(10)
    games = rows(cfg)
    assert len(games) == 4 and all(g["terminations"] == ["normal"] * 2 for g in games)


def test_the_nodejs_sample_bot_plays_as_a_pool_of_workers(tmp_path: Path) -> None:
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    node = '["node", "sample_bots/js/bot.js"]'
    cfg = write_config(tmp_path, worker_bot("node", node) + worker_bot("instant"), gpp=4)
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(cfg)
    assert len(games) == 4 and all(g["terminations"] == ["normal"] * 4 for g in games), games
    check_partners_apart(games)
    per_worker = Counter(w for g in games for k, w in enumerate(g["workers"]) if [g["a"], g["b"]][k % 2] == "node")
    assert len(per_worker) <= 4 and sum(per_worker.values()) == 8  # one pool of 4 long-lived node workers


def stored_ids(cfg: Path) -> set[str]:
    """The game ids in the arena's store right now (read while the arena runs; WAL allows it)."""
    import sqlite3

    db = cfg.parent / "out" / "arena.sqlite"
    if not db.exists():
        return set()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
        try:
            return {r[0] for r in con.execute("SELECT game_id FROM games")}
        except sqlite3.OperationalError:
            return set()


def test_a_bot_without_workers_does_not_block_the_others(tmp_path: Path) -> None:
    """The games of two local bots are played while a remote bot's games wait for its workers; when a
    worker dials in, its games are played too (nothing forfeited: no_show_s is long)."""
    port = free_port()
    bots = worker_bot("one") + worker_bot("two") + '\n[[bots]]\nname = "late"\nremote = true\n'
    cfg = write_config(tmp_path, bots, players=2, gpp=4, extra=f'lobby = "127.0.0.1:{port}"\nno_show_s = 300')
    token = arena("token", str(cfg), "late").stdout.strip()
    arena_proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress",
                                   "--bootstrap", "50"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
    worker = None
    try:
        deadline = time.monotonic() + 120
        while len(stored_ids(cfg)) < 4 and time.monotonic() < deadline:  # one vs two: 4 games
            assert arena_proc.poll() is None, arena_proc.communicate()
            time.sleep(0.2)
        first = stored_ids(cfg)
        assert first == {f"lob-p0-1-g{k}" for k in range(4)}, first  # every game without "late", none with it
        worker = remote_worker(port, token, "late", "--workers", "1")
        out, err = arena_proc.communicate(timeout=240)
        assert arena_proc.returncode == 0, out + err
    finally:
        for p in (arena_proc, worker):
            if p is not None:
                p.kill()
                p.wait(10)
    games = rows(cfg)
    assert len(games) == 12 and all(g["terminations"] == ["normal"] * 2 for g in games)


# ------------------------------------------------------------------------------- a lobby that is down


def _node_worker_says(script: str) -> Any:
    """What ``script`` (JavaScript, given sample_bots/js/bot.js as ``bot``) prints as JSON."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    done = subprocess.run(["node", "-e", f"const bot = require('./sample_bots/js/bot.js'); {script}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "ALLFOURS_BOT_TOKEN": "t"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_worker_dials_a_lost_lobby_on_for_ever_unless_told_a_bound() -> None:
    """An arena upgrade may take hours: the Python and Node.js workers, as the C++ one, dial a lost lobby for
    as long as they run by default (they gave up after 300 s); ``--reconnect S`` still gives up after S s
    (the C++ worker's bound: the real-process test below)."""
    from sdk.run import _parser
    from sdk.worker import LobbyWorker, gives_up

    assert _parser().parse_args(["m:C", "--arena", "h:1"]).reconnect is None
    assert _parser().parse_args(["m:C", "--reconnect", "2.5"]).reconnect == 2.5
    assert LobbyWorker(lambda a: None, "h:1", "t", "alpha").reconnect_s is None
    week = 7 * 24 * 3600.0
    assert [gives_up(now, 100.0, None) for now in (100.0, 400.0, 100.0 + week)] == [False, False, False]
    assert [gives_up(now, 100.0, 60.0) for now in (100.0, 159.9, 160.0, 400.0)] == [False, False, True, True]
    assert gives_up(100.0, 100.0, 0.0)  # --reconnect 0: the first failed dial ends it
    node = _node_worker_says(
        "const o = bot.parseArgs(['--arena', 'h:1']); const b = bot.parseArgs(['--arena', 'h:1', '--reconnect', '60']);"
        " console.log(JSON.stringify([o.reconnectMs, b.reconnectMs, [100, 400, 100 + 604800000].map("
        "(n) => bot.givesUp(n, 100, o.reconnectMs)), [59999, 60000].map((n) => bot.givesUp(n, 0, b.reconnectMs))]))")
    assert node == [None, 60000, [False, False, False], [False, True]], node


def test_workers_dial_a_lobby_down_past_a_small_bound_and_register_when_it_is_back(tmp_path: Path) -> None:
    """Real workers dialling a port where no lobby listens: with ``--reconnect 1`` the Python, Node.js and C++
    ones give up (exit 1, one line), without it they are still dialling after that and register once a lobby
    listens there."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    cpp = ROOT / "sample_bots/cpp/build/allfours-cpp-bot"
    require(cpp.is_file(), "sample_bots/cpp is not built (run scripts/setup.sh or bash sample_bots/cpp/build.sh)")
    port, book = free_port(), TokenBook()
    address = f"127.0.0.1:{port}"
    commands = {"py": [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena", address],
                "js": ["node", "sample_bots/js/bot.js", "--arena", address], "cc": [str(cpp)]}  # C++: ALLFOURS_LOBBY

    def worker(name: str, *extra: str) -> subprocess.Popen[str]:
        env = {**os.environ, "ALLFOURS_BOT_TOKEN": book.issue(name), "ALLFOURS_BOT_NAME": name,
               "ALLFOURS_LOBBY": address}
        return subprocess.Popen([*commands[name], *extra], cwd=ROOT, env=env, text=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    bounded = [worker(name, "--reconnect", "1") for name in commands]
    endless = [worker(name) for name in commands]
    lobby = None
    try:
        for w in bounded:
            _, err = w.communicate(timeout=60)
            assert w.returncode == 1 and "cannot reach the lobby at" in err, err
        assert [w.poll() for w in endless] == [None] * 3  # still dialling, past the bound the others gave up at
        lobby = Lobby("t", book, port=port)
        lobby.start()
        deadline = time.monotonic() + 60
        while not all(lobby.came(name) for name in commands):
            assert time.monotonic() < deadline and [w.poll() for w in endless] == [None] * 3, lobby.counts()
            time.sleep(0.1)
    finally:
        for w in bounded + endless:
            w.kill()
            w.wait(10)
        if lobby is not None:
            lobby.stop()


def test_a_new_token_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token after ``--token`` that starts with ``-`` reads as an option (a 1-in-64 flake of the test above)."""
    made = iter(["-" + "a" * 31, "b" * 32])
    monkeypatch.setattr(tokens_module.secrets, "token_urlsafe", lambda n: next(made))
    assert tokens_module.new_token() == "b" * 32


def test_each_dial_of_a_lost_lobby_is_a_new_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's worker dialled again on the channel it had kept since its start: after an outage that
    channel waits out gRPC's own reconnect back-off (1 s growing 1.6-fold, up to 120 s), during which every
    dial fails at once, whatever the worker's own back-off (capped at 5 s). Measured: a lobby down 30 s
    was found again 12.6 s after it came back; after a long upgrade, up to two minutes. Each dial now
    opens a new channel (and closes it after the stream)."""
    import sdk.worker as worker_module

    opened: list[grpc.Channel] = []
    real = worker_module.grpc.insecure_channel

    def counted(target: str) -> grpc.Channel:
        opened.append(real(target))
        return opened[-1]

    monkeypatch.setattr(worker_module.grpc, "insecure_channel", counted)
    with socket.socket() as probe:  # a port nothing listens on: every dial fails
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(worker_module.WorkerError, match="cannot reach the lobby"):
        worker_module.LobbyWorker(lambda a: None, address, "t", "alpha", reconnect_s=1.0).run()
    assert len(opened) >= 2, opened  # 0.5 s, then 1 s of back-off (± 20%): two or three dials


def test_a_full_pool_is_retried_and_an_oversized_message_is_final(lobby: Lobby,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 24, item 9: both are RESOURCE_EXHAUSTED (docs/protocol.md): "already has N workers" is worth
    dialling again (a worker may leave), a message over the lobby's 16 KiB limit never is."""
    from sdk.worker import LobbyWorker, WorkerError

    token = lobby.tokens.issue("alpha")
    big = LobbyWorker(lambda a: None, lobby.address, token, "alpha" * 4000, reconnect_s=60)
    with pytest.raises(WorkerError) as e:
        big.run()  # at once: dialling again would send the same 20 kB
    assert "RESOURCE_EXHAUSTED" in str(e.value) and "16384" in str(e.value), e.value
    monkeypatch.setattr(lobby_module, "MAX_WORKERS_PER_BOT", 1)
    with grpc.insecure_channel(lobby.address) as ch:
        leave = threading.Event()

        def held_open() -> Iterator[lpb.ConnectRequest]:
            yield register(token, "alpha")
            leave.wait(120)  # the stream stays open (a half-close leaves the lobby)

        first = lpb_grpc.LobbyServiceStub(ch).Connect(held_open(), timeout=120)
        assert next(first).WhichOneof("msg") == "registered"
        other = lobby.tokens.issue("alpha")  # another worker's (one worker a token of the arena's)
        assert refusal(lobby, register(other, "alpha")) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED, "bot 'alpha' already has 1 workers connected: dial again later")
        second = LobbyWorker(lambda a: None, lobby.address, other, "alpha", reconnect_s=60)
        errors: list[str] = []
        thread = threading.Thread(target=_run_collecting, args=(second, errors))
        retries = _Retries()
        logging.getLogger("sdk.worker").addHandler(retries)
        logging.getLogger("sdk.worker").setLevel(logging.INFO)
        thread.start()
        try:
            assert retries.refused.wait(60) or errors, "the second worker was not refused"
            assert not errors, errors  # refused, and dialling again (it was final: WorkerError)
            first.cancel()  # the first worker leaves: the second, dialling again, takes its place
            leave.set()
            deadline = time.monotonic() + 60
            while not second.worker_id and thread.is_alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert second.worker_id and not errors, errors
        finally:
            logging.getLogger("sdk.worker").removeHandler(retries)
            second.stop.set()
            lobby.stop()
            thread.join(30)


class _Retries(logging.Handler):
    """Sets ``refused`` once the worker logs that it dials again after RESOURCE_EXHAUSTED."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "RESOURCE_EXHAUSTED" in record.getMessage():
            self.refused.set()


def _run_collecting(worker: Any, errors: list[str]) -> None:
    try:
        worker.run()
    except Exception as e:
        errors.append(str(e))


def test_the_nodejs_worker_dials_a_full_pool_again(lobby: Lobby, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 24, item 9: the Node.js bot treats the lobby's "already has N workers" as worth dialling
    again (it exited on every RESOURCE_EXHAUSTED), and gets the place once a worker leaves."""
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    monkeypatch.setattr(lobby_module, "MAX_WORKERS_PER_BOT", 1)
    token = lobby.tokens.issue("alpha")
    leave = threading.Event()

    def held_open() -> Iterator[lpb.ConnectRequest]:
        yield register(token, "alpha")
        leave.wait(120)

    with grpc.insecure_channel(lobby.address) as ch:
        first = lpb_grpc.LobbyServiceStub(ch).Connect(held_open(), timeout=120)
        assert next(first).WhichOneof("msg") == "registered"
        node = subprocess.Popen(["node", "sample_bots/js/bot.js", "--arena", lobby.address, "--name", "alpha"],
                                cwd=ROOT, env={**os.environ, "ALLFOURS_BOT_TOKEN": lobby.tokens.issue("alpha")},
                                text=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert node.stderr is not None
            line = node.stderr.readline()  # refused: a full pool, and it says it dials again
            assert "RESOURCE_EXHAUSTED" in line or "8:" in line, line
            assert "dialling again" in line, line
            first.cancel()
            leave.set()
            line = node.stderr.readline()
            while line and "registered at" not in line:
                line = node.stderr.readline()
            assert "registered at" in line, line
        finally:
            leave.set()
            node.kill()
            node.wait(10)


def test_a_worker_done_with_its_match_stays_its_games_until_the_game_lets_it_go(lobby: Lobby) -> None:
    """The race behind a red CI: a referee dies, the game's workers hear of it first and send Ready
    before the arena's game has heard (it is still reading the dead referee's stream). They must not
    go idle then: the scheduler would give them to another game, and the lost game's replay would
    wait past ``no_show_s`` for them ("no workers to play it again"). A worker is its game's from
    :meth:`Lobby.reserve` until :meth:`Lobby.release`; :meth:`Lobby.reclaim` takes it back for the replay."""
    import queue

    tokens = [lobby.tokens.issue("alpha") for _ in range(2)]  # one worker a token, as the arena's
    leave = threading.Event()
    with grpc.insecure_channel(lobby.address) as ch:
        outs: list[queue.Queue[str]] = [queue.Queue(), queue.Queue()]
        got: queue.Queue[tuple[int, str]] = queue.Queue()

        def requests(k: int) -> Iterator[lpb.ConnectRequest]:
            yield register(tokens[k], "alpha")
            while not leave.is_set():  # the stream stays open; Ready when the test says
                with contextlib.suppress(queue.Empty):
                    yield lpb.ConnectRequest(ready=lpb.Ready(match_id=outs[k].get(timeout=0.05)))

        def read(k: int, stream: Any) -> None:
            with contextlib.suppress(grpc.RpcError):
                for msg in stream:
                    got.put((k, msg.assignment.match_id if msg.WhichOneof("msg") == "assignment" else ""))

        streams = [lpb_grpc.LobbyServiceStub(ch).Connect(requests(k), timeout=120) for k in range(2)]
        readers = [threading.Thread(target=read, args=(k, s), daemon=True) for k, s in enumerate(streams)]
        for t in readers:
            t.start()
        try:
            deadline = time.monotonic() + 30
            while lobby.counts().get("alpha") != (2, 2):
                assert time.monotonic() < deadline, lobby.counts()
                time.sleep(0.01)
            game = lobby.reserve(["alpha"])
            assert game is not None and game[0] is not None
            mine = game[0]
            assert lobby.assign(mine, lpb.Assignment(match_id="lost-match", referee="r:1", ticket="t"))
            while (news := got.get(timeout=30))[1] != "lost-match":
                pass
            outs[news[0]].put("lost-match")  # the worker is done with the lost match before the arena knows
            while mine.state == "busy":
                assert time.monotonic() < deadline, mine
                time.sleep(0.01)
            assert mine.state == "reserved" and lobby.counts()["alpha"] == (2, 1)  # still the game's
            assert lobby.reserve(["alpha", "alpha"]) is None  # another game cannot take it
            assert lobby.reclaim(game) == [mine]  # the replay gets the same worker
            lobby.release(game)
            assert lobby.counts()["alpha"] == (2, 2) and mine.state == "idle"
            lobby.release(game)  # a second release of the same game changes nothing
            assert lobby.counts()["alpha"] == (2, 2)
        finally:
            leave.set()
            for s in streams:
                s.cancel()


@dataclass(frozen=True)
class LeftCase:
    """A lobby worker's seat at the end of its game: whether the lobby has seen its stream close yet
    (``lobby_saw``), what the referee made of the seat (``referee``), and whether its container was
    killed at its memory limit (``killed``); ``cause`` is the arena's reason (None: the referee's
    stands) and ``asked`` whether the pool was asked about the container."""

    lobby_saw: bool
    referee: Termination
    killed: bool
    cause: Termination | None
    asked: bool


WORKER_LEFT_CASES = {
    "the lobby saw it leave, killed for memory": LeftCase(True, Termination.DISCONNECT, True, Termination.OOM, True),
    # the CI failure: the referee's Play stream closed before the lobby's Connect stream was read
    "the lobby has not seen it leave yet, the referee saw a disconnect":
        LeftCase(False, Termination.DISCONNECT, True, Termination.OOM, True),
    "a disconnect of a worker that was not killed": LeftCase(False, Termination.DISCONNECT, False, None, True),
    "a timeout of a worker still connected: its container is not waited for":
        LeftCase(False, Termination.TIMEOUT, True, None, False),
    "played to the end": LeftCase(False, Termination.NORMAL, True, None, False),
}


@pytest.mark.parametrize("case", list(WORKER_LEFT_CASES))
def test_a_worker_killed_for_memory_reads_oom_whichever_stream_closed_first(case: str) -> None:
    """A worker container killed at its memory limit closes two streams: its Play stream to the referee
    and its Connect stream to the lobby. On a busy machine the referee ended the match (a disconnect)
    before the lobby's loop had read the close, and the seat read ``disconnect``, not ``oom``
    (tests/test_docker_workers.py's hog, in a CI run). A seat the referee forfeited for a disconnect is
    now asked about, as one the lobby saw leave."""
    from arena.config import BotSpec
    from arena.hosting.sandbox import Limits
    from arena.lobby.service import WorkerRef
    from arena.play.game import GrpcGameRunner, _SeatEnds
    from arena.tournament.schedule import make_schedule

    c = WORKER_LEFT_CASES[case]
    game = make_schedule("oom", ["hog", "b"], 2, 2, bytes(32))[0]
    seat = game.seats.index("hog")
    workers = [WorkerRef(f"w{k}", name, "1", "peer", f"d{k}") for k, name in enumerate(game.seats)]
    if c.lobby_saw:
        workers[seat].left = "its connection closed"
    asked: list[str] = []

    class Lobby:
        def gone(self, worker: WorkerRef) -> str | None:
            return worker.left

    class Pool:
        def killed_for_memory(self, digest: str) -> bool:
            asked.append(digest)
            return c.killed

    runner = GrpcGameRunner.__new__(GrpcGameRunner)
    runner.lobby = Lobby()  # type: ignore[assignment]
    runner.kinds = {"hog": Pool()}  # type: ignore[dict-item]
    runner.bots = {"hog": BotSpec("hog", "1", (), image="hog:1", limits=Limits(memory_mb=64), mode="worker")}
    forfeited = {seat: c.referee} if c.referee.forfeits else {}
    ends = _SeatEnds([None] * 4, [None] * 4, [None] * 4, list(workers), forfeited)
    notes: list[str] = []
    causes = runner._worker_causes(game, ends, notes)
    assert (causes[seat].termination if seat in causes else None) == c.cause
    assert asked == ([f"d{seat}"] if c.asked else [])
    if c.cause is not None:
        assert causes[seat].text == "worker container was killed at its memory limit (64 MiB)"
    assert len(notes) == int(c.lobby_saw)  # "left during the game" only for what the lobby saw


def test_a_refused_worker_still_counts_the_matches_it_played() -> None:
    """`sdk.run --arena` ends with `worker mode: N matches played`; a worker that the lobby then refused
    (its token revoked, or the lobby gone for --reconnect) used to count 0, whatever it had played."""
    from sdk.worker import LobbyWorker, WorkerError, run_workers

    class Played(LobbyWorker):
        def run(self) -> int:
            self.played = 3
            raise WorkerError("lobby 127.0.0.1:1 refused the worker: UNAUTHENTICATED: unknown or revoked bot token")

    played, errors = run_workers(lambda stop: Played(lambda a: None, "127.0.0.1:1", "t", "x", stop=stop), 2)
    assert played == 6 and len(errors) == 2, (played, errors)


def test_a_place_restarted_for_ever_keeps_only_its_newest_restart_logs(tmp_path: Path) -> None:
    # a worker that dies after every game is restarted as long as the league runs: one log file a restart
    from arena.hosting.workers.local import KEPT_RESTART_LOGS, Slot, prune_restart_logs

    slot = Slot(index=1)
    for _ in range(KEPT_RESTART_LOGS + 20):  # as LocalWorkers._launch: count the start, prune, open its log
        slot.starts += 1
        prune_restart_logs(tmp_path, slot)
        (tmp_path / slot.log_name).write_text("a worker's output\n")
    newest = range(20, KEPT_RESTART_LOGS + 20)  # the last start is restart KEPT_RESTART_LOGS + 19
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["worker1.log", *(f"worker1.restart{n}.log"
                                                                                 for n in newest)])


DOUBLE = '''"""A worker bot that says which seat of which match each of its answers is for: one write of the whole
line (its two workers are threads of one process: print writes the text and its newline apart, so two
lines could mix)."""
import os

from sdk.bot import Bot, Context


class Double(Bot):
    name = "double"

    def act(self, ctx: Context):
        os.write(1, f"SEAT {ctx.match_id} {ctx.seat}\\n".encode())
        return ctx.legal[0]
'''


def test_a_local_worker_process_registering_twice_never_holds_both_partner_seats(tmp_path: Path) -> None:
    """A local worker's token is its process's own, but the lobby took it for as many workers as the
    process registered: a sandboxed worker process that registered twice (``sdk.run --workers 2``, or
    a second Connect of its own) was given both seats of its side at four players, so it saw its
    partner's hand. An arena's own token now holds one worker at a time; the second is refused with a
    line ending ``dial again later`` (an honest worker's new stream may come before its old one is
    seen gone), and every seat of every game still plays."""
    folder = tmp_path / "double"
    folder.mkdir()
    (folder / "double.py").write_text(DOUBLE)
    command = '["{python}", "-m", "sdk.run", "double:Double", "--workers", "2"]'
    bots = (f'\n[[bots]]\nname = "double"\nmode = "worker"\nworkers = 2\ncommand = {command}\ncwd = "{folder}"\n'
            + worker_bot("other"))
    cfg = write_config(tmp_path, bots, gpp=6)
    done = run(cfg)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(cfg)
    assert len(games) == 6 and all(g["terminations"] == ["normal"] * 4 for g in games), games
    logs = sorted((tmp_path / "out" / "logs" / "workers" / "double").glob("*.log"))
    assert logs
    for log in logs:
        seats: dict[str, set[str]] = {}
        for line in log.read_text().splitlines():
            if line.startswith("SEAT "):
                _, match, seat = line.split()
                seats.setdefault(match, set()).add(seat)
        assert all(len(s) == 1 for s in seats.values()), (log.name, seats)
