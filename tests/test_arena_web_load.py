"""arena web under load: a finished game's replay is made once and kept (arena/web/replays.py), never
served stale, within its bounds, never to a spectator of a running game nor to another view (the one
record of ``arena web --record FILE`` too); and the live files (the games running) and that record are
read off the event loop, so one that stalls its reader stalls no other request; their reads are bounded
(arena/web/livereads.py): past the bound a live page answers 503 and the other pages keep answering."""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from web_helpers import (
    cards_in,
    held_yet_others_answer,
    live_from_record,
    record_lines,
    run_tournament,
    seat_knowledge,
    stalling,
)

import arena.web.data as data_module
import arena.web.replays as replays_module
from arena.report.live import LIVE_DIR
from arena.web import WebServer, start_in_thread
from arena.web.app import create_app
from arena.web.data import parse_record_text
from arena.web.frames import ALL, FrameBuilder, replay_frames
from arena.web.livereads import BUSY, MAX_LIVE_READS, LiveReads
from arena.web.replays import ReplayCache

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tournament(tmp_path_factory.mktemp("load"))


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[str | int]:
    """The view of every replay through the engine from now on (each :class:`FrameBuilder` made), in order."""
    made: list[str | int] = []
    init = FrameBuilder.__init__

    def counted(self: FrameBuilder, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self.view)

    monkeypatch.setattr(FrameBuilder, "__init__", counted)
    return made


def games_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def copy_of(out: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns(LIVE_DIR))
    return copy


def test_a_finished_games_replay_is_made_once_per_view(out: Path, replays: list[str | int]) -> None:
    """The page and the API of a finished game replay its record once; a seat's view is its own replay
    (kept apart: it never gets the all-hands view kept before it) and holds only what that seat knew."""
    c = TestClient(create_app(out, bootstrap=0))
    g = games_of(out)[0]
    gid = g["game_id"]
    page = c.get(f"/games/{gid}")
    assert page.status_code == 200 and replays == [ALL]
    assert c.get(f"/games/{gid}").text == page.text
    every = c.get(f"/api/games/{gid}/record").json()
    assert replays == [ALL], "the same finished game was replayed again"
    seat = c.get(f"/api/games/{gid}/record", params={"seat": 1}).json()
    assert replays == [ALL, 1] and seat["view"] == 1
    assert c.get(f"/games/{gid}", params={"seat": 1}).status_code == 200 and replays == [ALL, 1]
    lines = record_lines(out / g["record"])
    known = list(seat_knowledge(lines, 1))
    assert len(seat["frames"]) == len(known) and any(hidden for _, _, hidden in known)
    for frame, (_, may_know, hidden) in zip(seat["frames"], known, strict=True):
        assert cards_in(frame) <= may_know and not cards_in(frame) & hidden, frame["i"]
    assert every == json.loads(json.dumps(replay_frames(lines, ALL)))  # what was kept is the replay


def test_a_changed_record_is_replayed_again(tmp_path: Path, out: Path, replays: list[str | int]) -> None:
    """A record rewritten in place, or replaced by another file, is served as it is now, never as kept."""
    copy = copy_of(out, tmp_path)
    c = TestClient(create_app(copy, bootstrap=0))
    g = games_of(copy)[0]
    url = f"/api/games/{g['game_id']}/record"
    path = copy / g["record"]
    whole = path.read_text()
    first = c.get(url).json()["frames"]
    assert first[-1]["kind"] == "result"
    path.write_text("".join(x + "\n" for x in whole.splitlines() if json.loads(x)["type"] != "result"))
    cut = c.get(url).json()["frames"]
    assert [f["kind"] for f in cut] == [f["kind"] for f in first[:-1]] and replays == [ALL, ALL]
    other = path.with_name("new.jsonl")
    other.write_text(whole.replace('"seat_names":["', '"seat_names":["renamed '))
    os.replace(other, path)
    renamed = c.get(url).json()
    assert renamed["seat_names"][0].startswith("renamed ") and len(renamed["frames"]) == len(first)
    assert c.get(url).json() == renamed and replays == [ALL, ALL, ALL]


def test_the_kept_replays_stay_within_their_bounds(tmp_path: Path, out: Path, replays: list[str | int]) -> None:
    """At most ``max_replays`` replays and ``max_frames`` frames are kept, the least recently used out first;
    a replay of more frames than the bound is served, not kept."""
    records = tmp_path / "records"
    records.mkdir()
    g = games_of(out)[0]
    for name in "abc":
        shutil.copy(out / g["record"], records / f"{name}.jsonl")
    frames = len(replay_frames(record_lines(out / g["record"]))["frames"])
    replays.clear()
    kept = ReplayCache(max_replays=2)
    for name in "abcca":  # c used last of b and c: b goes when a comes back
        kept.replay(records, records / f"{name}.jsonl", ALL)
    assert len(kept) == 2 and kept.frames == 2 * frames and replays == [ALL] * 4
    kept.replay(records, records / "c.jsonl", ALL)
    kept.replay(records, records / "b.jsonl", ALL)
    assert len(kept) == 2 and replays == [ALL] * 5
    by_frames = ReplayCache(max_frames=2 * frames + 1)
    for name in "abc":
        by_frames.replay(records, records / f"{name}.jsonl", ALL)
    assert len(by_frames) == 2 and by_frames.frames == 2 * frames
    too_big = ReplayCache(max_frames=frames - 1)
    assert too_big.replay(records, records / "a.jsonl", ALL)["frames"] and len(too_big) == too_big.frames == 0


def test_a_spectator_is_never_served_a_kept_replay(tmp_path: Path, out: Path, replays: list[str | int]) -> None:
    """A running game's record kept whole (as if it had been stored and replayed) changes nothing of what its
    spectators see: their view is replayed from the live file at each request, cut a deal behind."""
    games = games_of(out)
    copy = copy_of(out, tmp_path)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games")  # both games of the pair are running
    app = create_app(copy, bootstrap=0)
    c = TestClient(app)
    a, b = (record_lines(out / g["record"]) for g in games)
    second = [n for n, o in enumerate(a) if o["type"] == "deal"][1]
    second_b = [n for n, o in enumerate(b) if o["type"] == "deal"][1]
    ga = games[0]["game_id"]
    whole = app.state.web.replays.replay(copy / "records", copy / games[0]["record"], ALL)
    dealt = next(f["hands"] for f in whole["frames"] if f["deal"] == 2 and f["kind"] == "deal")
    log_a = live_from_record(copy, a, ga, games[0]["pair"], upto=second + 3)
    log_b = live_from_record(copy, b, games[1]["game_id"], games[1]["pair"], upto=second_b + 2)
    try:
        for _ in range(2):
            seen = c.get(f"/api/live/{ga}").json()
            assert {f["deal"] for f in seen["frames"]} == {0, 1} and seen["hidden_from"] == "game 1 deal 2"
            assert len(seen["frames"]) == second - 1
            assert not [f for f in seen["frames"] if f["hands"] == dealt]  # deal 2's hands are not shown
        page = c.get(f"/live/{ga}").text
        assert "hidden from game 1 deal 2" in page
    finally:
        log_a.close()
        log_b.close()
    assert replays == [ALL] * 4 and len(app.state.web.replays) == 1


def test_a_live_file_that_stalls_its_reader_stalls_no_other_request(web: WebServer) -> None:
    """``/live`` and ``/api/live`` read the live files on the server's threads: while one stalls its reader
    (a slow disk), the games list still answers; the old code read them on the event loop, and every
    request waited."""
    output = web.app.state.web.data.output
    (output / LIVE_DIR).mkdir()
    path = output / LIVE_DIR / "g.jsonl"
    path.write_text(json.dumps({"type": "live", "game_id": "g", "pair_id": "p", "seat_names": ["a", "b"]}) + "\n")
    base = f"http://127.0.0.1:{web.port}"
    with httpx.Client(base_url=base, timeout=20) as client:
        with stalling(path):
            games = held_yet_others_answer(client, ["/live", "/api/live"])
            assert games.status_code == 200 and games.json()["games"] == []
        running = client.get("/api/live").json()["running"]
        assert [g["game_id"] for g in running] == ["g"]


@pytest.fixture
def served_record(tmp_path: Path, out: Path) -> Iterator[tuple[WebServer, Path]]:
    """``arena web --record FILE`` (a copy of a finished game's record, alone in its folder) in a thread of this
    process, on 127.0.0.1, and that file."""
    folder = tmp_path / "mine"
    folder.mkdir()
    record = folder / "match.jsonl"
    shutil.copyfile(out / games_of(out)[0]["record"], record)
    server = start_in_thread(folder, "127.0.0.1", 0, bootstrap=0, record=record)
    try:
        yield server, record
    finally:
        server.stop()


def test_a_served_record_is_replayed_once_per_view(served_record: tuple[WebServer, Path],
                                                   replays: list[str | int]) -> None:
    """``arena web --record FILE`` replayed its one record through the engine at every visit; now once per
    view, kept (:class:`ReplayCache`) while the file does not change."""
    server, record = served_record
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=20) as client:
        page = client.get("/")
        assert page.status_code == 200 and 'id="replay-data"' in page.text and replays == [ALL]
        assert client.get("/").text == page.text and replays == [ALL], "the same record was replayed again"
        assert client.get("/", params={"seat": 1}).status_code == 200 and replays == [ALL, 1]
        record.write_text(record.read_text() + "\n")  # another version of the file: replayed again
        assert client.get("/").status_code == 200 and replays == [ALL, 1, ALL]


def test_a_served_record_that_stalls_its_reader_stalls_no_other_request(served_record: tuple[WebServer, Path],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``arena web --record FILE`` read its record on the event loop: while the read was held (a slow disk, a big
    file), every request of the server waited. Now on the server's threads: the games list still answers. (The
    read is held by an event, at its parse: the record is opened without blocking, so a lease would not hold it.)"""
    server, _ = served_record
    go = threading.Event()

    def held(text: str) -> list[dict[str, Any]]:
        go.wait(30)
        return parse_record_text(text)

    monkeypatch.setattr(data_module, "parse_record_text", held)  # where the old viewer_of_file took it
    monkeypatch.setattr(replays_module, "parse_record_text", held)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=20) as client:
        try:
            assert held_yet_others_answer(client, ["/"]).status_code == 200
        finally:
            go.set()
        assert client.get("/").status_code == 200


def held_request(port: int, source: str, path: str) -> socket.socket:
    """A connection from the loopback address ``source`` to 127.0.0.1:``port`` that asked ``GET path`` (and
    the server to close it once answered); its answer is not read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    return sock


def answers(socks: list[socket.socket], count: int, within: float) -> dict[socket.socket, bytes]:
    """The whole answers (to the close) of the first ``count`` of ``socks`` to answer, waiting ``within``
    seconds at most for them (fewer if they do not come)."""
    got: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + within
    while len(got) < count and time.monotonic() < deadline:
        ready, _, _ = select.select([s for s in socks if s not in got], [], [], deadline - time.monotonic())
        for s in ready:
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            got[s] = data
    return got


def test_live_reads_past_their_bound_are_refused_and_leave_the_other_pages_answering(web: WebServer) -> None:
    """40 requests each held by a stalled live file took all 40 of anyio's threads, and every other read of the
    server waited behind them. Live reads are bounded now (MAX_LIVE_READS): past the bound a live request
    answers 503 with the documented line (BUSY), the leaderboard shows its running games as not read, and a
    page that reads no live file (the games list) still answers."""
    output = web.app.state.web.data.output
    (output / LIVE_DIR).mkdir()
    path = output / LIVE_DIR / "g.jsonl"
    path.write_text(json.dumps({"type": "live", "game_id": "g", "pair_id": "p", "seat_names": ["a", "b"]}) + "\n")
    base = f"http://127.0.0.1:{web.port}"
    socks: list[socket.socket] = []
    try:
        with stalling(path), httpx.Client(base_url=base, timeout=20) as client:
            # two source addresses: one address holds at most 32 connections (arena/web/connections.py)
            socks = [held_request(web.port, f"127.0.0.{2 + k % 2}", "/api/live") for k in range(40)]
            refused = answers(socks, 40 - MAX_LIVE_READS, within=20)
            assert len(refused) == 40 - MAX_LIVE_READS, "no live read past the bound was refused"
            for data in refused.values():
                head, _, body = data.partition(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 503 ") and json.loads(body) == {"error": BUSY}
            try:
                games = client.get("/api/games")
            except httpx.TimeoutException:
                pytest.fail("live reads held by a stalled file stalled every other read")
            assert games.status_code == 200 and games.json()["games"] == []
            over = client.get("/api/live")
            assert over.status_code == 503 and over.json() == {"error": BUSY}
            page = client.get("/live")
            assert page.status_code == 503 and BUSY in page.text
            board = client.get("/")
            assert board.status_code == 200 and "running games</a> not read now (busy)" in board.text
        held = answers([s for s in socks if s not in refused], MAX_LIVE_READS, within=20)  # the lease let go
        assert len(held) == MAX_LIVE_READS and all(d.startswith(b"HTTP/1.1 200 ") for d in held.values())
        assert web.app.state.web.live_reads.held == 0
    finally:
        for s in socks:
            s.close()


def test_run_if_free_reads_when_a_slot_is_free_and_is_none_when_the_bound_stays_full() -> None:
    """The one place both the leaderboard's and ``/me``'s running games (and the live-update stream's look) turn a
    full bound into "not read": the read's value while a slot is free, None (the read not run) once it stays full
    ``wait_s``, and the slot given back either way."""
    reads = LiveReads(limit=1, wait_s=0.1)
    ran: list[int] = []

    async def both() -> tuple[int | None, int | None]:
        gate = threading.Event()
        holder = asyncio.ensure_future(reads.run(gate.wait, 30))
        while reads.held < 1:
            await asyncio.sleep(0.01)
        busy = await reads.run_if_free(ran.append, 1)
        gate.set()
        await holder
        free = await reads.run_if_free(lambda: 7)
        return busy, free

    assert asyncio.run(both()) == (None, 7)
    assert ran == [] and reads.held == 0
