"""Network namespaces for tests: a "remote machine" on this one, joined by a veth pair.

A :func:`netns` is a namespace of its own (its own loopback: 127.0.0.1 inside is not this host's)
with one veth interface; the host side has ``host_ip``, the inside ``ns_ip`` (a /30 of 10.231.0.0/16,
chosen per test process; nothing outside this machine is ever addressed). Removed on exit.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tests.conftest import require

_serial = itertools.count()


@dataclass(frozen=True)
class Netns:
    """A namespace ``name``; ``host_ip`` (this host's end of the link) and ``ns_ip`` (the inside end)."""

    name: str
    host_ip: str
    ns_ip: str

    def argv(self, *cmd: str) -> list[str]:
        """``cmd`` run inside the namespace."""
        return ["ip", "netns", "exec", self.name, *cmd]

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` inside the namespace (checked)."""
        return subprocess.run(self.argv(*cmd), check=True, capture_output=True, text=True, timeout=30)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextmanager
def netns() -> Iterator[Netns]:
    """A fresh namespace linked to this host (see the module docstring); needs root and iproute2."""
    require(os.geteuid() == 0, "network namespaces need root")
    require(shutil.which("ip") is not None, "iproute2 (ip) is not installed")
    k = next(_serial)
    name = f"aft{os.getpid()}n{k}"
    host_if, ns_if = f"af{os.getpid() % 100000}h{k}", f"af{os.getpid() % 100000}n{k}"
    base = 4 * ((os.getpid() * 7 + k) % 16000)
    prefix = f"10.231.{base // 256 % 256}"
    host_ip, ns_ip = f"{prefix}.{base % 256 + 1}", f"{prefix}.{base % 256 + 2}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", name)
        _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        ns = Netns(name, host_ip, ns_ip)
        ns.run("ip", "addr", "add", f"{ns_ip}/30", "dev", ns_if)
        ns.run("ip", "link", "set", ns_if, "up")
        ns.run("ip", "link", "set", "lo", "up")
        yield ns
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
