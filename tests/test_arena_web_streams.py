"""The live-update stream's limits (``/events``) against a real server on loopback: the slots are taken
before the answer starts (concurrent requests cannot all pass the check), one client address holds at
most ``MAX_STREAMS_PER_CLIENT`` of them (it cannot lock every other visitor out), and a slot comes back
when its client goes. Other client addresses are other loopback addresses (127.0.0.K). Behind a
trusted reverse proxy (``proxies``) the client is the one its ``X-Forwarded-For`` names; from any other
peer that header changes nothing. A look that finds no live-read slot, or the database held by another
process, says ``: busy`` and the stream goes on. Then the slot's own life in process: given back when a
response is dropped unsent, cancelled, or cannot send."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import ClientDisconnect

from arena.report import live
from arena.report.live import LiveLog
from arena.tournament.runner import DB_NAME
from arena.tournament.store import Store
from arena.web import WebServer, start_in_thread, trusted_proxies
from arena.web.app import BUSY_LOOK, MAX_STREAMS, MAX_STREAMS_PER_CLIENT, SlotStream, StreamSlots

#: Seconds a test waits for the server to notice clients that went (it looks every second).
GONE_S = 30


def ask(port: int, source: str = "127.0.0.1", forwarded_for: str = "") -> socket.socket:
    """A connection from ``source`` that has sent ``GET /events`` (its answer not read yet), saying it
    forwards for ``forwarded_for`` when given (a header only: nothing is sent to that address)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=20, source_address=(source, 0))
    forwarded = f"X-Forwarded-For: {forwarded_for}\r\n".encode() if forwarded_for else b""
    s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + forwarded + b"\r\n")
    return s


def answer(s: socket.socket) -> tuple[int, bytes]:
    """The status of the answer on ``s`` and its body: all of it when the head gives a Content-Length (a
    refusal; under load its body can come in a later packet than the head), else what came with the head
    (a stream's start)."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        assert chunk, f"the server closed the connection before answering: {got!r}"
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                   if line.lower().startswith(b"content-length:")), None)
    while length is not None and len(body) < length:
        chunk = s.recv(4096)
        assert chunk, f"the server closed the connection inside the body: {body!r}"
        body += chunk
    return int(head.split(b" ", 2)[1]), body


class _Packets:
    """A socket's ``recv`` that hands out the given packets one at a time."""

    def __init__(self, *packets: bytes) -> None:
        self.packets = list(packets)

    def recv(self, _size: int) -> bytes:
        return self.packets.pop(0) if self.packets else b""


def test_answer_reads_a_refusals_body_that_comes_after_its_head() -> None:
    """Under load a 503's body came in a later packet than its head, and this file's ``answer`` returned an
    empty body (a JSONDecodeError in the cap test, seen once on a busy machine): it now reads to the
    Content-Length."""
    head = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 13\r\ncontent-type: application/json\r\n\r\n"
    assert answer(_Packets(head, b'{"error": "x"', b"")) == (503, b'{"error": "x"')  # type: ignore[arg-type]
    assert answer(_Packets(head + b'{"error": "x"')) == (503, b'{"error": "x"')  # type: ignore[arg-type]


def statuses(socks: list[socket.socket]) -> Counter[int]:
    return Counter(answer(s)[0] for s in socks)


def close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


def wait_all_released(server: WebServer) -> None:
    """Wait (bounded) until the server has given back every slot of the clients that went."""
    deadline = time.monotonic() + GONE_S
    while server.app.state.web.streams.open:
        assert time.monotonic() < deadline, f"slots still held: {server.app.state.web.streams.open}"
        time.sleep(0.1)


def test_one_client_holds_at_most_its_cap_of_streams_even_all_at_once(web: WebServer) -> None:
    """Every request is sent before any answer is read: the old check (a counter raised only once the
    answer streamed) let them all through (400 of 400 were 200). Now exactly the per-client cap get a
    stream and the rest a one-line 503; another address still gets one; closed, the slots come back."""
    extra = 12
    socks = [ask(web.port) for _ in range(MAX_STREAMS_PER_CLIENT + extra)]
    try:
        got = [answer(s) for s in socks]
        assert Counter(status for status, _ in got) == {200: MAX_STREAMS_PER_CLIENT, 503: extra}
        refusal = next(body for status, body in got if status == 503)
        assert json.loads(refusal) == {"error": f"{MAX_STREAMS_PER_CLIENT} live-update streams of your address "
                                                "are open already: close one or reload later"}
        other = ask(web.port, "127.0.0.2")
        socks.append(other)
        assert answer(other)[0] == 200
    finally:
        close_all(socks)
    wait_all_released(web)
    again = ask(web.port)
    try:
        assert answer(again)[0] == 200
    finally:
        again.close()


def test_many_clients_together_get_no_more_than_the_total(web: WebServer) -> None:
    """Clients of several addresses, each asking for its cap at once, all together past the total:
    exactly the total get a stream."""
    clients = MAX_STREAMS // MAX_STREAMS_PER_CLIENT + 1
    socks = [ask(web.port, f"127.0.0.{k + 1}") for k in range(clients) for _ in range(MAX_STREAMS_PER_CLIENT)]
    try:
        assert statuses(socks) == {200: MAX_STREAMS, 503: clients * MAX_STREAMS_PER_CLIENT - MAX_STREAMS}
    finally:
        close_all(socks)
    wait_all_released(web)


@pytest.mark.parametrize("proxies", [(), ("127.0.0.2",)], ids=["no-proxy", "another-proxy"])
def test_a_forwarded_for_header_from_an_untrusted_peer_changes_nothing(tmp_path: Path, proxies: tuple[str]) -> None:
    """Without a trusted proxy, or from a peer that is not the one trusted, each request claiming another
    client is still the peer's: the cap holds (a visitor cannot spread its streams over made-up addresses)."""
    (tmp_path / "out").mkdir()
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, proxies, bootstrap=0)
    socks = [ask(server.port, forwarded_for=f"10.9.0.{k + 1}") for k in range(MAX_STREAMS_PER_CLIENT + 2)]
    try:
        assert statuses(socks) == {200: MAX_STREAMS_PER_CLIENT, 503: 2}
    finally:
        close_all(socks)
        server.stop()


def test_behind_a_trusted_proxy_each_visitor_has_its_own_cap(tmp_path: Path) -> None:
    """Every visitor through a reverse proxy reaches the server from the proxy's address: without
    ``proxies`` the ninth visitor's live updates were refused (503). Trusting the proxy (127.0.0.1 here;
    a network such as 127.0.0.0/8 alike), each visitor named by ``X-Forwarded-For`` has its own cap."""
    (tmp_path / "out").mkdir()
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, trusted_proxies(["127.0.0.0/8"]), bootstrap=0)
    visitors = [ask(server.port, forwarded_for=f"10.9.0.{k + 1}") for k in range(MAX_STREAMS_PER_CLIENT + 4)]
    one = [ask(server.port, forwarded_for="10.9.1.1") for _ in range(MAX_STREAMS_PER_CLIENT + 1)]
    try:
        assert statuses(visitors) == {200: MAX_STREAMS_PER_CLIENT + 4}
        assert statuses(one) == {200: MAX_STREAMS_PER_CLIENT, 503: 1}
    finally:
        close_all(visitors + one)
        server.stop()


def test_an_ipv6_visitor_has_one_cap_for_its_64(tmp_path: Path) -> None:
    """An IPv6 visitor holds a whole /64 (2^64 addresses): counted per address, one visitor took every one
    of the MAX_STREAMS streams from 8 of its own addresses and no one else had live updates. Its streams
    are counted per /64 now; another /64 has its own cap. (IPv6 visitors through a trusted proxy: a real
    server on IPv4 loopback, the visitors named by ``X-Forwarded-For``.)"""
    (tmp_path / "out").mkdir()
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, trusted_proxies(["127.0.0.1"]), bootstrap=0)
    one = [ask(server.port, forwarded_for=f"2001:db8:1:2::{k + 1:x}") for k in range(MAX_STREAMS_PER_CLIENT + 2)]
    other = [ask(server.port, forwarded_for="2001:db8:1:3::1")]
    try:
        assert statuses(one) == {200: MAX_STREAMS_PER_CLIENT, 503: 2}
        assert statuses(other) == {200: 1}
    finally:
        close_all(one + other)
        server.stop()


def first_event(port: int) -> dict[str, Any]:
    """The data of the first ``event: games`` of a new ``/events`` stream."""
    s = ask(port)
    try:
        status, got = answer(s)
        assert status == 200
        while b"event: games\ndata: " not in got or not got.split(b"event: games\ndata: ", 1)[1].count(b"\n"):
            chunk = s.recv(4096)
            assert chunk, f"the stream ended: {got!r}"
            got += chunk
        data: dict[str, Any] = json.loads(got.split(b"event: games\ndata: ", 1)[1].split(b"\n", 1)[0])
        return data
    finally:
        s.close()


def test_the_stream_tells_nothing_of_a_blind_running_games_entrants(tmp_path: Path) -> None:
    """The stream's events carried ``live``, the summed size of the live files, which a blind running game's
    header (its entrants' names, its pairing's numbers) makes: anyone could tell apart the pairings about to
    be played by the size by which a new game's file grew the sum. Two folders, each running one blind game
    of the same seed and length of id, whose entrants' names differ in length only: their events are alike."""
    seen = []
    for k, names in enumerate((["ann@1", "bob@1"], ["a-much-longer-name@1", "bob@1"])):
        out = tmp_path / f"out{k}"
        out.mkdir()
        with LiveLog(out, "league-p0-1-g0", "league-p0-1", names, {"target": 7}, bytes(32), blind=True):
            server = start_in_thread(out, "127.0.0.1", 0, bootstrap=0)
            try:
                seen.append(first_event(server.port))
            finally:
                server.stop()
    assert seen[0] == seen[1]


def blocks(lines: Iterator[str]) -> Iterator[str]:
    """A stream's blocks (its lines up to each blank line, joined by newlines) from its ``lines``."""
    block: list[str] = []
    for line in lines:
        if line:
            block.append(line)
        elif block:
            yield "\n".join(block)
            block = []


@contextlib.contextmanager
def events_of(port: int, timeout: float) -> Iterator[Iterator[str]]:
    """The blocks of a ``/events`` stream of the server on loopback ``port``, its answer 200 and its first block,
    ``retry: 2000``, read."""
    with httpx.stream("GET", f"http://127.0.0.1:{port}/events", timeout=timeout) as stream:
        assert stream.status_code == 200
        told = blocks(stream.iter_lines())
        assert next(told) == "retry: 2000"
        yield told


def hold_every_live_read(web: WebServer, gate: threading.Event, wait_s: float) -> list[Future[bool]]:
    """Take every public live-read slot of ``web`` with a read that waits for ``gate`` (at most ``wait_s`` seconds);
    returns once all are held (the futures of those reads, each True once ``gate`` is set)."""
    state = web.app.state.web
    assert state.loop is not None
    holders = [asyncio.run_coroutine_threadsafe(state.live_reads.run(gate.wait, wait_s), state.loop)
               for _ in range(state.live_reads.limit)]
    deadline = time.monotonic() + GONE_S
    while state.live_reads.held < state.live_reads.limit:
        if time.monotonic() > deadline:
            gate.set()
            raise AssertionError("the reads holding the bound did not start")
        time.sleep(0.05)
    return holders


def test_a_streams_look_at_the_live_files_waits_for_the_live_reads_bound(
    web: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's look at the live files' sizes ran on the shared thread pool outside the live reads' bound, so a
    flood of streams could hold the pool the bound keeps for the other pages. Now it takes a public live-read slot:
    with every slot held, a stream reads no live file and says ``: busy``; once they are let go it looks again."""
    looks: list[Path] = []
    progress_mark = live.progress_mark

    def counted(output: Path) -> int:
        looks.append(output)
        return progress_mark(output)

    monkeypatch.setattr(live, "progress_mark", counted)
    gate = threading.Event()
    holders = hold_every_live_read(web, gate, 60)
    try:
        with events_of(web.port, GONE_S) as told:
            busy = next(told)
            assert busy == f": {BUSY_LOOK}" and looks == [], (busy, looks)
            gate.set()
            for h in holders:
                assert h.result(GONE_S) is True
            block = next(b for b in told if b != busy)
            assert block.startswith("event: games\ndata: ") and looks, (block, looks)
    finally:
        gate.set()


def test_a_stream_waiting_for_a_live_read_slot_ends_at_once_when_the_server_stops(
    web: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream whose look waited for a slot kept waiting (up to the bound's wait) when the server was told to stop,
    then said ``: busy`` and only then ended, holding the graceful stop back. Now it gives up the wait and ends,
    saying nothing more. (The wait is made long, so the stream is surely still waiting when the stop comes.)"""
    state = web.app.state.web
    monkeypatch.setattr(state.live_reads, "wait_s", float(GONE_S))
    gate = threading.Event()
    holders = hold_every_live_read(web, gate, 2 * GONE_S)
    try:
        with httpx.stream("GET", f"http://127.0.0.1:{web.port}/events", timeout=2 * GONE_S) as stream:
            told = blocks(stream.iter_lines())
            assert next(told) == "retry: 2000"
            state.close_streams()
            assert list(told) == []
    finally:
        gate.set()
        for h in holders:
            h.result(GONE_S)


def next_said(told: Iterator[str], skip: tuple[str, ...] = (": keep-alive",)) -> str:
    """The stream's next block but those in ``skip``; fails (not StopIteration) when the stream ends first."""
    block = next((b for b in told if b not in skip), None)
    assert block is not None, "the stream ended"
    return block


def test_a_stream_goes_on_through_a_database_another_process_holds(tmp_path: Path) -> None:
    """A stream's look at the results database that another process held locked (a final's run or a host command
    locking it whole) raised the data layer's ``Busy`` out of the stream, and the stream ended: a browser's live
    board lost its updates while the lock was held. Now such a look is no look this time: the stream says ``: busy``
    and stays open, and once the holder lets go the next game stored comes as ``event: games`` on the same stream.
    (A real server over loopback, the lock held by a real second process.)"""
    from tests.test_competition_final_bar import _book_held
    from tests.test_publish_cache import league, result_of

    t = league(tmp_path, ["b0", "b1"])
    first, second = list(t.schedule)[:2]
    with t.store as store:  # closed: the holder locks the database whole
        store.record(result_of(first, 0))
    server = start_in_thread(tmp_path / "store", "127.0.0.1", 0, bootstrap=0)
    try:
        with events_of(server.port, GONE_S) as told:
            games = next_said(told)
            assert games.startswith("event: games\ndata: ") and json.loads(games.split("data: ", 1)[1])["played"] == 1
            with _book_held(tmp_path / "store" / DB_NAME):
                busy = next_said(told)
                assert busy == f": {BUSY_LOOK}", busy
                assert next_said(told) == busy  # still open: it looks again at the next poll
            with Store(tmp_path / "store" / DB_NAME) as store:
                store.record(result_of(second, 1))
            games = next_said(told, (": keep-alive", busy))
            assert games.startswith("event: games\ndata: ") and json.loads(games.split("data: ", 1)[1])["played"] == 2
    finally:
        server.stop()


def test_a_client_that_goes_before_its_answer_gives_its_slot_back(web: WebServer) -> None:
    """Connections that send the request and close at once (before the stream's first byte could be
    sent) leave no slot taken: the client soon gets its whole cap again. (When the server takes and
    gives back their slots is not seen from here: the client asks again, bounded, until it does.)"""
    for _ in range(MAX_STREAMS_PER_CLIENT * 2):
        ask(web.port).close()
    deadline = time.monotonic() + GONE_S
    while True:
        socks = [ask(web.port) for _ in range(MAX_STREAMS_PER_CLIENT)]
        try:
            got = statuses(socks)
        finally:
            close_all(socks)
        if got == {200: MAX_STREAMS_PER_CLIENT}:
            break
        assert time.monotonic() < deadline, f"the slots of clients that went are still held: {got}"
        wait_all_released(web)  # these answered: their slots are counted, so this wait is not too early


async def _forever() -> AsyncIterator[str]:
    """A stream that sends one event, then nothing until cancelled."""
    yield "retry: 2000\n\n"
    await asyncio.Event().wait()


def test_a_stream_dropped_unsent_gives_its_slot_back() -> None:
    """A response made (its slot taken) but never sent, e.g. the request's task ended first."""
    slots = StreamSlots(total=2, per_client=1)
    assert slots.take("a") is None
    assert slots.take("a") == "1 live-update streams of your address are open already: close one or reload later"
    response = SlotStream(_forever(), slots, "a", "text/event-stream", {})
    assert slots.open == {"a": 1}
    del response
    gc.collect()
    assert slots.open == {}


@pytest.mark.parametrize("spec", ["2.3", "2.4"])
def test_a_stream_cancelled_or_failing_to_send_gives_its_slot_back_once(spec: str) -> None:
    """Both of Starlette's ways of streaming (listening for the disconnect below ASGI 2.4, or not): the
    request's task cancelled mid-stream, and a send that fails (the client went) free the slot, once."""
    slots = StreamSlots(total=2, per_client=2)
    scope = {"type": "http", "asgi": {"spec_version": spec}}

    async def receive() -> dict[str, str]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def cancelled() -> None:
        assert slots.take("a") is None
        response = SlotStream(_forever(), slots, "a", "text/event-stream", {})
        first = asyncio.Event()

        async def send(message: Any) -> None:
            if message["type"] == "http.response.body":
                first.set()

        task = asyncio.create_task(response(scope, receive, send))
        await first.wait()
        assert slots.open == {"a": 1}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert slots.open == {}
        response.release()  # again: nothing more is given back
        assert slots.open == {}

    async def send_fails() -> None:
        assert slots.take("b") is None
        response = SlotStream(_forever(), slots, "b", "text/event-stream", {})

        async def gone(message: Any) -> None:
            raise OSError("the client went")

        with pytest.raises((OSError, ClientDisconnect)):
            await response(scope, receive, gone)
        assert slots.open == {}

    asyncio.run(cancelled())
    asyncio.run(send_fails())
