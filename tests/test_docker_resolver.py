"""Docker's embedded resolver is shut in every bot container (a real dockerd, iptables and nsenter).

Every container of a user-defined network has 127.0.0.11:53 answered by dockerd itself, inside the container's
own network namespace, so the sandbox's firewall chain on the host never sees those packets: one container's
query flood took 9.8 s of dockerd's CPU in 10 s. A bot needs no name (the referee and the lobby are given by
the gateway's address), so :func:`arena.hosting.sandbox.close_resolver` refuses every packet to 127.0.0.11 from
the container's own OUTPUT chain as soon as it has started. The probe waits for the test's word (sent once
:meth:`Sandbox.start` has returned: the rule's documented window is the bot's first moments, not tested here),
then looks up its own container's name, which dockerd answers, and sends a raw query over UDP and a TCP
connection to 127.0.0.11:53. Nothing goes to an address outside this machine.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from arena.hosting.sandbox import BotContainer, Limits, Sandbox, run_key
from tests.docker_helpers import base_image, docker_client, leftovers

pytestmark = [pytest.mark.slow, pytest.mark.docker]

#: The probe (``python3 -c``): connects to ``$GO`` (a listener of the test on the gateway), reads ``go NAME``,
#: then prints one line per attempt through Docker's resolver: ``LOOKUP resolved|failed``, ``UDP
#: answered|no answer``, ``TCP connected|refused``.
PROBE = r"""
import os, socket, struct
host, port = os.environ["GO"].rsplit(":", 1)
go = socket.create_connection((host, int(port)), timeout=120)
go.settimeout(120)
word = b""
while not word.endswith(b"\n"):
    part = go.recv(100)
    if not part:
        break
    word += part
go.close()
name = word.decode().split()[1]
try:
    print("LOOKUP resolved", socket.getaddrinfo(name, 80, socket.AF_INET)[0][4][0], flush=True)
except OSError as e:
    print("LOOKUP failed", e, flush=True)
query = struct.pack(">HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
    bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
try:
    s.sendto(query, ("127.0.0.11", 53))
    s.recv(512)
    print("UDP answered", flush=True)
except OSError as e:
    print("UDP no answer", e, flush=True)
try:
    socket.create_connection(("127.0.0.11", 53), timeout=5).close()
    print("TCP connected", flush=True)
except OSError as e:
    print("TCP refused", e, flush=True)
"""


def probe_once(sandbox: Sandbox, role: str) -> tuple[list[str], list[str]]:
    """Start the probe in a container of ``sandbox``, give it its own name once it is started, wait for it;
    (its output's lines, the rules of OUTPUT in its network namespace while it ran)."""
    listener = socket.create_server((str(sandbox.gateway), 0))
    listener.settimeout(120)
    sandbox.allow(int(listener.getsockname()[1]))
    bot: BotContainer | None = None
    try:
        bot = sandbox.start(base_image("python"), "resolver-probe", role,
                            {"GO": f"{sandbox.gateway}:{listener.getsockname()[1]}"}, Limits(),
                            command=["python3", "-c", PROBE])
        conn, _ = listener.accept()
        rules = namespace_rules(bot)
        conn.sendall(f"go {bot.name}\n".encode())
        conn.close()
        assert bot.wait(120) is not None, "the probe did not finish"
        return bot.container.logs().decode().splitlines(), rules
    finally:
        listener.close()
        if bot is not None:
            bot.stop(exit_wait_s=0)


def namespace_rules(bot: BotContainer) -> list[str]:
    """The rules of OUTPUT (``iptables -S OUTPUT``) in the running ``bot``'s network namespace."""
    bot.container.reload()
    pid = bot.container.attrs["State"]["Pid"]
    r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "iptables", "-w", "10", "-S", "OUTPUT"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def host_rules_for_resolver() -> list[str]:
    """The host's own iptables rules naming Docker's resolver (none: the rule lives in containers only)."""
    out = subprocess.run(["iptables", "-w", "10", "-S"], capture_output=True, text=True, timeout=30).stdout
    return [line for line in out.splitlines() if "127.0.0.11" in line]


def test_a_bot_container_gets_no_answer_from_dockers_resolver(tmp_path: Path) -> None:
    """A container of the sandbox, once started, cannot look up its own container's name through Docker's
    resolver, a raw UDP query to 127.0.0.11:53 gets no answer and a TCP connection to it is refused, while
    its connection to the gateway (where the referee listens) works; the rule is in its own namespace only
    and the host is left as it was. On the old code the lookup resolved to the container's address, the UDP
    query was answered and the TCP connection made."""
    before = host_rules_for_resolver()
    sandbox = Sandbox(docker_client(), run_key(tmp_path), f"resolver-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        lines, rules = probe_once(sandbox, "g00001-s0")
        second, _ = probe_once(sandbox, "worker0-1")  # a second container: its own namespace, its own rule
    finally:
        sandbox.close()
    assert leftovers(docker_client(), sandbox.key) == []
    assert host_rules_for_resolver() == before
    for output in (lines, second):
        assert [line.split()[:2] for line in output] == [["LOOKUP", "failed"], ["UDP", "no"], ["TCP", "refused"]], \
            output
    assert "-A OUTPUT -d 127.0.0.11/32 -j REJECT --reject-with icmp-port-unreachable" in rules, rules


def test_a_container_whose_rule_fails_is_removed_and_its_start_fails_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When iptables refuses the rule in the container's namespace (here: a target that does not exist) while
    the container runs, the bot's start fails with one line naming the bot and the container is gone: no bot
    runs with Docker's resolver open."""
    import arena.hosting.sandbox as sandbox_module
    from arena.hosting.sandbox import SandboxError

    monkeypatch.setattr(sandbox_module, "RESOLVER_RULE", ("-d", "127.0.0.11", "-j", "NO-SUCH-TARGET"))
    sandbox = Sandbox(docker_client(), run_key(tmp_path), f"resolver-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        with pytest.raises(SandboxError) as raised:
            sandbox.start(base_image("python"), "sleeper", "g00001-s0", {}, Limits(),
                          command=["python3", "-c", "import time; time.sleep(120)"])
        flt = {"label": f"org.allfours.run={sandbox.key}"}
        left = docker_client().api.containers(all=True, filters=flt)
    finally:
        sandbox.close()
    message = str(raised.value)
    assert "\n" not in message and message.startswith("bot sleeper: cannot close Docker's resolver"), message
    assert left == []
    assert leftovers(docker_client(), sandbox.key) == []
