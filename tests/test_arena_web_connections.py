"""The web server's connections are bounded (arena/web/connections.py), against real servers on loopback:
one visitor holding idle or half-sent connections no longer takes every file descriptor of the process
(another visitor is still served), is refused past its cap in one line, and is cut off when a request's
head does not come in time, while a live-update stream being answered is not. Other client addresses are
other loopback addresses (127.0.0.K)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from arena.web import WebServer, start_in_thread
from arena.web.connections import HEAD_TIMEOUT_S, MAX_CONNECTIONS_PER_CLIENT
from referee.peers import client_key
from tests.web_helpers import ROOT, free_port

#: The open files the server process of the exhaustion test may have.
SERVER_FILES = 1024
#: Seconds a test waits for an answer the server should send (at most; never a duration asserted).
WAIT_S = 60


def connect(port: int, source: str = "127.0.0.1", send: bytes = b"") -> socket.socket:
    """A connection from ``source`` that has sent ``send`` (perhaps nothing, or half a request)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S, source_address=(source, 0))
    if send:
        s.sendall(send)
    return s


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def answer(s: socket.socket) -> tuple[int, bytes]:
    """The status and the body's first bytes of the answer on ``s`` (``(0, b"")``: closed without one)."""
    got = b""
    while b"\r\n\r\n" not in got:
        try:
            chunk = s.recv(4096)
        except ConnectionResetError:
            return 0, b""
        if not chunk:
            return 0, b""
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_idle_connections_of_one_visitor_leave_the_server_to_the_others(tmp_path: Path) -> None:
    """``arena web`` under a limit of 1,024 open files: one address opens 1,100 connections and sends one
    byte on each. Before, the server accepted them all, ran out of descriptors (its accept loop failing
    on EMFILE) and another address's request got no answer. Now that address holds its cap, the rest are
    refused with a one-line 503, and the other address is served."""
    (tmp_path / "out").mkdir()
    port = free_port()
    # the limit set by util-linux's prlimit: no preexec_fn (Python between fork and exec) in a process using gRPC
    limit = ["prlimit", f"--nofile={SERVER_FILES}:{SERVER_FILES}", "--"]
    proc = subprocess.Popen([*limit, sys.executable, "-m", "arena.cli", "web", str(tmp_path / "out"), "--port",
                             str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, "arena web ended"
            try:
                with connect(port, send=get("/api/live")) as s:
                    if answer(s)[0] == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "arena web did not answer"
            time.sleep(0.2)
        socks = [connect(port, send=b"G") for _ in range(SERVER_FILES + 76)]
        other = connect(port, "127.0.0.2", get("/api/live"))
        socks.append(other)
        assert answer(other)[0] == 200
        got = [answer(s) for s in socks[:-1]]  # the kept ones are cut off once their head is late (408)
        assert set(Counter(status for status, _ in got)) <= {408, 503}
        refused = [body for status, body in got if status == 503]
        assert len(refused) >= len(got) - 2 * MAX_CONNECTIONS_PER_CLIENT
        assert refused[0] == (f"too many connections from your address (at most {MAX_CONNECTIONS_PER_CLIENT}): "
                              "close some and retry\n").encode()
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=30)


def test_past_its_cap_a_visitor_is_refused_in_one_line_and_others_are_not(web: WebServer) -> None:
    """Idle connections of one address: the first ``MAX_CONNECTIONS_PER_CLIENT`` are kept, the next is a
    one-line 503; another address is still served; once some close, the first address is served again."""
    socks = [connect(web.port) for _ in range(MAX_CONNECTIONS_PER_CLIENT)]
    try:
        extra = connect(web.port, send=get("/api/live"))
        socks.append(extra)
        assert answer(extra) == (503, f"too many connections from your address (at most {MAX_CONNECTIONS_PER_CLIENT}): "
                                      "close some and retry\n".encode())
        other = connect(web.port, "127.0.0.2", get("/api/live"))
        socks.append(other)
        assert answer(other)[0] == 200
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + WAIT_S
    while True:  # the server notices the closed connections
        with connect(web.port, send=get("/api/live")) as again:
            if answer(again)[0] == 200:
                break
        assert time.monotonic() < deadline, "the address's connections were not given back"
        time.sleep(0.2)


@pytest.mark.parametrize("kept_alive", [False, True], ids=["new", "after-an-answer"])
def test_a_request_head_that_does_not_come_is_cut_off(web: WebServer, kept_alive: bool) -> None:
    """Half a request line, on a new connection or on one kept alive after an answer: before, the
    connection stayed open for ever (uvicorn stops its keep-alive timer at the first byte); now it gets
    a one-line 408 and is closed."""
    with connect(web.port) as s:
        if kept_alive:
            s.sendall(get("/api/live"))
            status, body = answer(s)
            assert status == 200
            while not body.rstrip().endswith(b"}"):  # the rest of the short JSON answer
                body += s.recv(4096)
        s.sendall(b"GET /api/li")
        assert answer(s) == (408, f"no request came within {HEAD_TIMEOUT_S:g} s: connection closed\n".encode())
        assert s.recv(4096) == b""


def test_a_live_update_stream_outlives_the_head_timeout(web: WebServer) -> None:
    """A request being answered is not timed: an ``/events`` stream still gets its keep-alive comment
    (sent after 15 s without news, past :data:`HEAD_TIMEOUT_S`) instead of being cut off."""
    with connect(web.port, send=b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n") as s:
        status, got = answer(s)
        assert status == 200
        while b": keep-alive" not in got:
            chunk = s.recv(4096)
            assert chunk, f"the stream was closed: {got!r}"
            got += chunk


def test_a_trusted_proxy_has_no_cap_of_its_own(tmp_path: Path) -> None:
    """A trusted reverse proxy carries every visitor: its connections past the per-address cap are served."""
    (tmp_path / "out").mkdir()
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, proxies=("127.0.0.1",), bootstrap=0)
    socks = [connect(server.port) for _ in range(MAX_CONNECTIONS_PER_CLIENT + 4)]
    try:
        for s in socks:
            s.sendall(get("/api/live"))
        assert Counter(answer(s)[0] for s in socks) == {200: len(socks)}
    finally:
        for s in socks:
            s.close()
        server.stop()


def test_an_ipv6_client_is_counted_by_its_64() -> None:
    """One machine holds a whole IPv6 /64: its addresses share one cap; IPv4-mapped ones count as IPv4."""
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::5") != client_key("2001:db8:1:2::5")
    assert client_key("::ffff:10.0.0.7") == "10.0.0.7"
    assert client_key("10.0.0.7") == "10.0.0.7"
