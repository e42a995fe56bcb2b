"""Two containers of one entrant on the container sandbox's network share no count of the arena's servers
(a real dockerd, the arena's embedded referee and lobby on the network's gateway, as ``arena run`` wires them).

Every container reaches the referee and the lobby at the gateway, and those servers kept counts over every
address: the health ``Watch`` streams (4 an address, 64 in all), the reflection streams, the calls waiting
for their request, the silent streams (the lobby's 16 an address, 256 in all) and gRPC's own RPC slots
(``maximum_concurrent_rpcs``). About 16 containers of one entrant at once (a bot with many ``workers``, or
two seats of a side with their workers) could hold one of them near its limit, and a seated partner read a
bit from whether its next stream was refused. Each container now counts against its own address's caps
alone (``referee.peers.BotNetwork``). The shared limits are lowered here to what one container holds, which
stands for the 16 containers it takes at the real ones (each container's own caps are the real ones).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker_client

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: What a probe inside a container runs (``python3 -c``): open streams of each kind on the referee and the
#: lobby (``$REFEREE``, ``$LOBBY``) and say, one JSON line, which were refused (RESOURCE_EXHAUSTED). ``$HOLD``:
#: ``hold`` opens as many as one address may hold, then one more of each, and keeps them (until the container
#: goes) after writing its answer to /tmp/held; ``ask`` opens one of each that says something and waits for
#: the answer.
PROBE = r"""
import asyncio, json, os, grpc
REF, LOBBY, HOLD = os.environ["REFEREE"], os.environ["LOBBY"], os.environ["HOLD"] == "hold"
KINDS = {  # kind: (server, method, the first message (empty bytes: an empty message) or None: silent, how many held)
    "connect": (LOBBY, "/allfours.v1.LobbyService/Connect", None, 16),
    "play": (REF, "/allfours.v1.RefereeService/Play", None, 128),
    "watch": (REF, "/grpc.health.v1.Health/Watch", b"", 4),
    "reflection": (REF, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", None, 4),
    "check": (REF, "/grpc.health.v1.Health/Check", None, 16),
}

async def outcome(call, wait_s):
    try:
        await asyncio.wait_for(asyncio.shield(call.code()), wait_s)
    except asyncio.TimeoutError:
        return "held"
    code = await call.code()
    return "refused" if code == grpc.StatusCode.RESOURCE_EXHAUSTED else "served"

async def asked(channel, method):
    # "served": the server answered (a message, or an end of its own such as INVALID_ARGUMENT for an empty
    # Hello); "refused": RESOURCE_EXHAUSTED; else what went wrong (no answer, UNAVAILABLE, ...), never "served"
    call = channel.stream_stream(method)()
    try:
        await call.write(b"")
        await call.done_writing()
        reply = await asyncio.wait_for(call.read(), 60)
    except (asyncio.TimeoutError, grpc.aio.AioRpcError):
        reply = None
    if reply is not None and reply is not grpc.aio.EOF:
        return "served"
    try:
        code = await asyncio.wait_for(call.code(), 1) if call.done() else None
    except asyncio.TimeoutError:
        code = None
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return "refused"
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.OK):
        return "served"
    return "no answer" if code is None else code.name

async def main():
    out, calls = {}, []
    for kind, (where, method, first, many) in KINDS.items():
        # 64 streams a connection, and a connection a channel (not one shared by every channel to the server)
        channels = [grpc.aio.insecure_channel(where, options=[("grpc.use_local_subchannel_pool", 1)])
                    for _ in range(3)]
        if not HOLD:
            out[kind] = await asked(channels[0], method)
            continue
        for k in range(many + 1):
            if k == many:
                await asyncio.sleep(5)  # the server has counted them
            call = channels[k // 60].stream_stream(method)()
            if first is not None:
                try:
                    await call.write(first)
                    if k < many:
                        await call.read()  # the Watch's SERVING: it is counted
                except grpc.aio.AioRpcError:
                    pass  # refused: its outcome is the answer's
            calls.append(call)
        out[kind] = await outcome(calls[-1], 20)  # the one over its own address's cap
        print(kind, out[kind], flush=True)
    print(json.dumps(out), flush=True)
    if HOLD:
        with open("/tmp/held", "w") as f:
            f.write(json.dumps(out))
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def _hold(container: Any, referee: str, lobby: str) -> None:
    """Start :data:`PROBE` holding in ``container`` (detached; its output in /tmp/out)."""
    container.exec_run(["sh", "-c", 'exec python3 -c "$PROBE" >/tmp/out 2>&1'], detach=True,
                       environment={"REFEREE": referee, "LOBBY": lobby, "HOLD": "hold", "PROBE": PROBE})


def _held(container: Any) -> dict[str, str]:
    """The holding probe's answer, once it has written it (300 s at most)."""
    deadline = time.monotonic() + 300
    while True:
        r = container.exec_run(["cat", "/tmp/held"])
        if r.exit_code == 0 and r.output.strip():
            return dict(json.loads(r.output))
        out = container.exec_run(["cat", "/tmp/out"]).output.decode(errors="replace")[-2000:]
        assert time.monotonic() < deadline and "Traceback" not in out, f"the holding probe did not answer: {out}"
        time.sleep(0.5)


def test_two_containers_of_one_bot_share_no_count_of_the_referee_or_the_lobby(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import arena.lobby.service as lobby_service
    import referee.server as referee_server
    import referee.streams as streams
    from arena.hosting.sandbox import Limits, Sandbox
    from arena.lobby.setup import _start_lobby
    from arena.play.referees import connect_referees
    from sdk.worker import LOBBY_ENV, NAME_ENV, TOKEN_ENV

    client = docker_client()
    image = build_bot(ROOT / "tests" / "bots" / "hostile", "hostile", "2", base_image("python"),
                      entry="hostile:HostileBot")
    # the counts every address shared, lowered to what one container holds (its own caps stay the real ones)
    monkeypatch.setattr(lobby_service, "PENDING_ALL", lobby_service.PENDING_PER_PEER)
    monkeypatch.setattr(referee_server, "MAXIMUM_CONCURRENT_RPCS", 100)
    monkeypatch.setattr(referee_server, "CappedHealth", functools.partial(streams.CappedHealth, in_all=4))
    monkeypatch.setattr(referee_server, "REFLECTIONS_ALL", 4)
    monkeypatch.setattr(referee_server, "UnaryRequests", functools.partial(streams.UnaryRequests, in_all=16))
    # the silent streams stay for the whole test
    monkeypatch.setattr(referee_server, "HELLO_TIMEOUT_S", 600.0)
    monkeypatch.setattr(streams, "REQUEST_TIMEOUT_S", 600.0)
    monkeypatch.setattr(lobby_service, "REGISTER_TIMEOUT_S", 600.0)

    sandbox = Sandbox(client, run_key(tmp_path), f"partners-{tmp_path.name[-8:]}")
    gateway = sandbox.open(reaper=False)
    lobby, pool = None, None
    try:
        # as arena run: the referee (commands._connect) and the lobby (lobby.setup) on the gateway
        pool = connect_referees([], None, host=gateway, bots=sandbox.bot_network())
        referee = pool.conns[0].address
        sandbox.allow(int(referee.rsplit(":", 1)[1]))
        config = SimpleNamespace(lobby_tls=None, lobby="127.0.0.1:0", name="partners", source=str(tmp_path / "t.toml"))
        lobby = _start_lobby(config, sandbox, None, None)  # type: ignore[arg-type]
        # two workers of one bot (partners at four players), registered with the lobby and waiting for a seat
        seats = [sandbox.start(image, "partners", f"worker{k}-1", {
            "HOSTILE": "none", LOBBY_ENV: lobby.address, TOKEN_ENV: lobby.tokens.issue("partners"),
            NAME_ENV: "partners"}, Limits()) for k in (0, 1)]
        deadline = time.monotonic() + 120
        while lobby.counts().get("partners", (0, 0))[0] < 2:  # both registered: the containers are up
            assert time.monotonic() < deadline and all(s.poll() is None for s in seats), lobby.counts()
            time.sleep(0.2)
        _hold(seats[0].container, referee, lobby.address)
        held = _held(seats[0].container)
        asked = seats[1].container.exec_run(["python3", "-c", PROBE],
                                            environment={"REFEREE": referee, "LOBBY": lobby.address, "HOLD": "ask"})
        for seat in seats:
            seat.stop(exit_wait_s=0)
    finally:
        if lobby is not None:
            lobby.stop()
        if pool is not None:
            pool.close()
        sandbox.close()
    assert asked.exit_code == 0, asked.output.decode()[-2000:]
    answer = json.loads(asked.output.decode().strip().splitlines()[-1])
    # the partner's streams are served, whatever the first container holds
    assert answer == dict.fromkeys(("connect", "play", "watch", "reflection", "check"), "served"), (answer, held)
    # and the first container's own caps still hold: one more of each kind is refused
    assert held == dict.fromkeys(("connect", "play", "watch", "reflection", "check"), "refused"), held


#: Opens up to ``$MANY`` TCP connections to ``$TARGET`` (``host:port``), says how many opened, keeps them.
CONNECT_MANY = r"""
import os, socket, time
host, port = os.environ["TARGET"].rsplit(":", 1)
held = []
for _ in range(int(os.environ["MANY"])):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect((host, int(port)))
    except OSError:
        s.close()
        continue
    held.append(s)
print(len(held), flush=True)
time.sleep(600)
"""


def test_a_containers_connections_are_bounded_by_its_own_address(tmp_path: Path) -> None:
    """Every TCP connection a container opens to the referee or the lobby takes one of the arena process's
    open files, a count over every address: containers of one entrant opening thousands of idle connections
    could hold it near its limit (a partner's next connection failing: a bit; and the arena accepting none).
    The sandbox's firewall chain resets a container's connections past its own bound
    (``CONNECTIONS_PER_CONTAINER``, counted by its address), and another container still connects."""
    import socket
    import threading

    from arena.hosting.sandbox import CONNECTIONS_PER_CONTAINER, Limits, Sandbox

    client = docker_client()
    sandbox = Sandbox(client, run_key(tmp_path), f"conns-{tmp_path.name[-8:]}")
    gateway = sandbox.open(reaper=False)
    server = socket.socket()
    stop = threading.Event()
    try:
        server.bind((gateway, 0))
        server.listen(256)
        server.settimeout(0.2)
        accepted: list[socket.socket] = []

        def accept() -> None:  # the referee's side: every connection taken and kept
            while not stop.is_set():
                try:
                    accepted.append(server.accept()[0])
                except OSError:
                    continue

        taker = threading.Thread(target=accept, daemon=True)
        taker.start()
        target = f"{gateway}:{server.getsockname()[1]}"
        sandbox.allow(server.getsockname()[1])
        many = CONNECTIONS_PER_CONTAINER + 8
        env = {"TARGET": target, "MANY": str(many)}
        image = base_image("python")
        opened = []
        for k in (0, 1):  # the second starts once the first holds its connections
            bot = sandbox.start(image, "partners", f"worker{k}-1", env, Limits(),
                                command=["python3", "-c", CONNECT_MANY])
            deadline = time.monotonic() + 120
            while not bot.container.logs().strip():
                assert time.monotonic() < deadline and bot.poll() is None, bot.container.logs()
                time.sleep(0.5)
            opened.append(int(bot.container.logs().decode().split()[0]))
        stop.set()
        taker.join(10)
        for c in accepted:
            c.close()
    finally:
        stop.set()
        server.close()
        sandbox.close()
    assert opened == [CONNECTIONS_PER_CONTAINER, CONNECTIONS_PER_CONTAINER], opened
