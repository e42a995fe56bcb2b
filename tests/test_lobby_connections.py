"""A client with no token (or ticket) that only opens connections and keeps them, against the ports a stranger
reaches: the lobby's own (``tournament.lobby``: the Submission service, remote workers) and the referee's remote
listener (where remote workers play). gRPC held every connection, with no bound and no timer (the client's
library answers the keepalive pings by itself), so the arena's process ran out of file descriptors: every accept
failed ("File descriptor limit reached"), and in ``arena serve``, one process, so did the book, the records, the
logs and the bots' referee connections. Real server processes over real sockets; the test counts the server's
open sockets (``/proc/PID/fd``), never a time."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from arena.lobby import service
from referee.server import REMOTE_MAX_CONNECTIONS

ROOT = Path(__file__).resolve().parent.parent

#: The two servers, each in a process of its own, printing the address a stranger reaches.
_SERVERS = {
    "lobby": textwrap.dedent("""
        import signal
        from arena.lobby.service import Lobby
        from arena.lobby.tokens import TokenBook
        lobby = Lobby("flood", TokenBook(), "127.0.0.1", 0)
        print("ADDRESS", lobby.start(), flush=True)
        signal.sigwait([signal.SIGTERM])
        lobby.stop()
    """),
    "referee": textwrap.dedent("""
        import signal
        from referee.server import ThreadedReferee
        referee = ThreadedReferee()
        referee.start()
        print("ADDRESS", f"127.0.0.1:{referee.listen_remote('127.0.0.1', 0)}", flush=True)
        signal.sigwait([signal.SIGTERM])
        referee.stop()
    """),
}
#: Each server's bound (the lobby's port, the referee's remote listener).
_BOUNDS = {"lobby": service.MAX_CONNECTIONS, "referee": REMOTE_MAX_CONNECTIONS}


@pytest.fixture(params=sorted(_SERVERS))
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, int, int]]:
    """A lobby, or the referee's remote listener, in a process of its own on a loopback port: (its address, its
    pid, its bound)."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVERS[request.param]], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        line = "-"
        while line and not line.startswith("ADDRESS "):  # the referee logs to stdout too
            line = proc.stdout.readline()
        assert line, f"the {request.param} did not start"
        address = line.split()[1]
        yield address, proc.pid, _BOUNDS[request.param]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _sockets(pid: int) -> int:
    """The sockets process ``pid`` holds open."""
    fds = Path(f"/proc/{pid}/fd")
    out = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            out += os.readlink(fd).startswith("socket:")
    return out


def test_a_client_with_no_token_cannot_hold_every_connection(server: tuple[str, int, int]) -> None:
    address, pid, bound = server
    before = _sockets(pid)
    channels = []
    try:
        for i in range(bound + 64):
            # a connection of its own each (no subchannel shared between the channels)
            ch = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1), ("test.n", i)])
            channels.append(ch)
            try:
                grpc.channel_ready_future(ch).result(timeout=10)
            except grpc.FutureTimeoutError:
                assert i >= bound, f"connection {i} of {address} refused under the bound {bound}"
                break  # refused past the bound: the rest would be too
        held = _sockets(pid) - before
    finally:
        for ch in channels:
            ch.close()
    assert held <= bound + 4, f"the server holds {held} connections of one client with no token"
