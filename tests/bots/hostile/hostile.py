"""HostileBot: a bot that attacks its sandbox (tests/test_docker_sandbox.py builds it into an image).

The attack is chosen by the environment variable ``HOSTILE`` (the tournament config's ``env``); each
prints one ``PROBE <what>: <outcome>`` line per finding to stdout, which the arena copies to the
seat's log. Between attacks it plays a random legal action.

- ``probe`` (at start, before joining): listens on TCP :data:`PEER_PORT`; tries "the internet": the
  canary ``PROBE_OUTSIDE`` (``ip:port``), a listener the test runs in a container on another docker
  network, reached only through the host's forwarding as the internet would be (no test sends a
  packet to an address outside this machine, not even a reserved one); the host
  (``PROBE_HOST`` = ``ip:port``, a service the test runs on the network's gateway), every other
  address of its /24 on :data:`PEER_PORT` (the other bots' and its partner's containers), its own
  address (the control: the scan does find a listener it may reach), the arena's database
  (``PROBE_DB``, a host path) and its environment for the admin token.
- ``oom``: at its first decision, allocates memory until it is killed.
- ``forkbomb``: at its first decision, forks until the pids limit stops it, then plays on.
- ``forkhang``: at its first decision, forks until the pids limit stops it, then never answers (as a
  bot whose threads the limit refused).
- ``flood``: at its first decision, writes 1 GB to stdout, then plays on.
- ``spin``: at its first decision, spins until it has used 30 s of CPU (far past any deadline under a
  small CPU quota), then plays on.
- ``sigterm``: ignores SIGTERM and, after the match, never exits.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from referee.rules import Action
from sdk.bot import Bot, Context

#: The port every ``probe`` bot listens on, for the others to try.
PEER_PORT = 7000


def report(what: str, outcome: str) -> None:
    print(f"PROBE {what}: {outcome}", flush=True)


def try_connect(host: str, port: int, timeout: float = 1.5) -> str:
    """``connected``, or the error's name (``timeout``, ``ENETUNREACH``, ``ECONNREFUSED`` …)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return "connected"
    except TimeoutError:
        return "timeout"
    except OSError as e:
        return os.strerror(e.errno) if e.errno else type(e).__name__


def _listen() -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", PEER_PORT))
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        conn.close()


def own_address() -> str:
    """This container's address on its network (the one a peer would dial)."""
    return socket.gethostbyname(socket.gethostname())


def probe() -> None:
    """Run every probe of the ``probe`` attack (see the module docstring)."""
    threading.Thread(target=_listen, daemon=True).start()
    time.sleep(3.0)  # the other seats' containers start their listeners meanwhile
    outside, outside_port = os.environ["PROBE_OUTSIDE"].rsplit(":", 1)
    report("internet", try_connect(outside, int(outside_port)))
    host, port = os.environ["PROBE_HOST"].rsplit(":", 1)
    report("host", try_connect(host, int(port)))
    me = own_address()
    report("self", try_connect(me, PEER_PORT))
    net = ipaddress.ip_network(f"{me}/24", strict=False)
    others = [str(a) for a in list(net.hosts())[1:24] if str(a) != me]  # .2 … .24, not the gateway
    with ThreadPoolExecutor(len(others)) as pool:
        outcomes = dict(zip(others, pool.map(lambda a: try_connect(a, PEER_PORT), others), strict=True))
    reached = sorted(a for a, o in outcomes.items() if o == "connected")
    report("peers", f"reached {','.join(reached)}" if reached else f"none of {len(others)} reachable")
    db = os.environ.get("PROBE_DB", "/nonexistent")
    try:
        with open(db, "rb") as f:
            report("database", f"read {len(f.read(100))} bytes")
    except OSError as e:
        report("database", os.strerror(e.errno) if e.errno else type(e).__name__)
    leaked = [k for k, v in os.environ.items() if "ADMIN" in k or "TOKEN" in k]
    report("environment", f"secrets {leaked}" if leaked else "no admin token")


def eat_memory() -> None:
    """Allocate (and touch) 16 MiB blocks until the kernel kills this process."""
    hoard = []
    while True:
        hoard.append(bytearray(16 << 20))
        report("memory", f"{16 * len(hoard)} MiB")


#: The fork bomb, run in a fresh interpreter (forking a process with gRPC's threads could hang in
#: gRPC's own fork handlers before the limit is ever reached).
FORK_BOMB = """
import os, time
n = 0
try:
    for _ in range(100_000):
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        n += 1
except OSError as e:
    print(f"PROBE forkbomb: stopped after {n} forks: {os.strerror(e.errno) if e.errno else e}", flush=True)
else:
    print(f"PROBE forkbomb: made {n} forks without a limit", flush=True)
"""


def fork_bomb() -> None:
    """Fork sleeping children until the pids limit refuses (they keep their pids); report how many."""
    subprocess.run([sys.executable, "-c", FORK_BOMB], timeout=60, check=False)


def spin() -> None:
    """Use 30 s of CPU time (the process's own), then report it."""
    while time.process_time() < 30:
        pass
    report("spin", "used 30 s of CPU")


def flood() -> None:
    """Write 1 GB to stdout in 1 MiB lines."""
    line = b"x" * ((1 << 20) - 1) + b"\n"
    for _ in range(1024):
        sys.stdout.buffer.write(line)
    sys.stdout.flush()
    report("flood", "wrote 1 GB")


class HostileBot(Bot):
    """Random legal play around the attack named by ``$HOSTILE``."""

    name = "hostile"
    version = "1"

    def __init__(self) -> None:
        self.mode = os.environ.get("HOSTILE", "probe")
        self.attacked = False
        if self.mode == "probe":
            probe()
        if self.mode == "sigterm":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()  # never exits
            report("sigterm", "ignoring SIGTERM")

    def act(self, ctx: Context) -> Action:
        if not self.attacked:
            self.attacked = True
            {"oom": eat_memory, "forkbomb": fork_bomb, "forkhang": fork_bomb, "flood": flood, "spin": spin}.get(
                self.mode, lambda: None)()
        if self.mode == "forkhang":
            time.sleep(3600)
        return ctx.rng.choice(ctx.legal)
