"""Hostile container bots against the real sandbox (arena/hosting/sandbox.py) on a real dockerd.

Every tournament here runs through ``arena run`` (a real process), its container bots built with
``arena bots build`` from tests/bots/hostile. Each hostile bot may change only its own games, with a
reason, and afterwards nothing of the tournament is left: no container, process, network, volume or
firewall chain.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from arena.hosting.sandbox import run_key
from tests.docker_helpers import ROOT, base_image, build_bot, docker_client, host_service, leftovers, output_in_image

pytestmark = [pytest.mark.slow, pytest.mark.docker]
HOSTILE = ROOT / "tests" / "bots" / "hostile"
#: In the environment of every hostile bot this test module starts (:func:`hostile_bot`): another
#: checkout running these tests on the same machine starts the same image with the same command line.
RUN_TAG = f"HOSTILE_RUN={uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


@pytest.fixture(scope="module")
def hostile_image(client: Any) -> str:
    # version 2: the bot with the forkhang mode (a tag is shared by every checkout on one dockerd: an
    # older checkout's build of version 1 must not stand in for it)
    return build_bot(HOSTILE, "hostile", "2", base_image("python"), entry="hostile:HostileBot")


def write_config(path: Path, players: int, bots: list[str], gpp: int = 2, concurrency: int = 2) -> Path:
    cfg = path / "t.toml"
    cfg.write_text(
        f"""[tournament]
name = "hostile-{path.name[-8:]}"
players = {players}
games_per_pairing = {gpp}
concurrency = {concurrency}
output = "out"
master_seed = "{"5a" * 32}"
[tournament.time_control]
join_ms = 20000
decision_ms = 1000
bank_ms = 4000

"""
        + "\n".join(bots)
    )
    return cfg


def run_arena(cfg: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"],
        capture_output=True, text=True, timeout=timeout, cwd=cfg.parent,
    )


def games(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines() if line.strip()]


def bot_processes(marker: str, tag: str = RUN_TAG) -> list[str]:
    """This module's host processes (containers' included) whose command line names ``marker``: those
    with ``tag`` in their environment (one that exited before it was read is not left over)."""
    r = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True, timeout=10)
    return [line for line in r.stdout.splitlines() if "pgrep" not in line and tag in _environment(line)]


def _environment(pgrep_line: str) -> list[str]:
    """The ``NAME=value`` entries of the process of one ``pgrep -a`` line (``[]`` once it is gone)."""
    try:
        raw = Path(f"/proc/{pgrep_line.split()[0]}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return []
    return raw.decode(errors="replace").split("\0")


CANARY = """
import socket
srv = socket.create_server(("0.0.0.0", 8080))
print("listening", flush=True)
while True:
    srv.accept()[0].close()
    print("accepted", flush=True)
"""


class Canary:
    """Stands for the internet: a listener in a container on docker's default bridge, which a bot's
    container could reach only through the host's forwarding (as any address beyond the machine)."""

    def __init__(self, client: Any, image: str):
        self.client = client
        self.container = client.containers.run(image, entrypoint=["python", "-c", CANARY], detach=True,
                                               labels={"org.allfours.test": "canary"}, network="bridge")
        deadline = time.monotonic() + 60
        while b"listening" not in self.container.logs() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.container.reload()
        self.address = f"{self.container.attrs['NetworkSettings']['Networks']['bridge']['IPAddress']}:8080"

    def reachable_from_a_plain_container(self) -> bool:
        """The control: a container on the same default bridge connects."""
        ip, port = self.address.split(":")
        probe = f"import socket; socket.create_connection(('{ip}', {port}), timeout=10); print('ok')"
        out = output_in_image(self.client, self.container.image.id, ["python", "-c", probe], network="bridge")
        return out.strip() == "ok"

    def accepted(self) -> int:
        return int(self.container.logs().decode().count("accepted"))

    def close(self) -> None:
        self.container.remove(force=True)


def test_probing_bots_reach_nothing_but_the_referee(client: Any, hostile_image: str, tmp_path: Path) -> None:
    """4 players, two container bots (so each side's partners are two containers of one bot): no bot
    reaches the internet (a canary on another docker network, reached only by forwarding: no test sends
    anything outside this machine, issue 24, item 9), the host's other services, another container (its
    partner's included), the arena's database or an admin token; every game is played to a normal end."""
    host = host_service(client)
    outside = Canary(client, hostile_image)
    try:
        with socket.create_connection(tuple(host.address.rsplit(":", 1)), timeout=5):  # the control: it is up
            pass
        assert outside.reachable_from_a_plain_container(), "the control: the canary listens"
        db = tmp_path / "out" / "arena.sqlite"
        env = (f'env = {{ HOSTILE = "probe", PROBE_HOST = "{host.address}", PROBE_DB = "{db}", '
               f'PROBE_OUTSIDE = "{outside.address}" }}')
        cfg = write_config(tmp_path, 4, [
            f'[[bots]]\nname = "a"\nimage = "{hostile_image}"\n{env}\n',
            f'[[bots]]\nname = "b"\nimage = "{hostile_image}"\n{env}\n',
        ], gpp=2, concurrency=1)
        r = run_arena(cfg)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert outside.accepted() == 1, "only the control connection reached the canary"
    finally:
        host.close()
        outside.close()
    assert host.accepted == 1, "only the test's own control connection reached the host service"
    played = games(tmp_path / "out")
    assert len(played) == 2
    for g in played:
        assert g["terminations"] == ["normal"] * 4, g
    logs = sorted((tmp_path / "out" / "logs").glob("*/seat*.log"))
    assert len(logs) == 8
    for log in logs:
        probes = dict(
            line.removeprefix("PROBE ").split(": ", 1) for line in log.read_text().splitlines()
            if line.startswith("PROBE ")
        )
        assert probes["self"] == "connected", (log, probes)  # the scan finds a listener it may reach
        assert probes["internet"] != "connected" and probes["host"] != "connected", (log, probes)
        assert probes["peers"] == "none of 22 reachable", (log, probes)
        assert probes["database"] == "No such file or directory", (log, probes)
        assert probes["environment"] == "no admin token", (log, probes)
        assert oct(log.stat().st_mode & 0o777) == "0o600"
    assert leftovers(client, run_key(tmp_path / "out")) == []


def play_all(cfg: Path, n: int) -> tuple[Path, list[dict[str, Any]]]:
    """``arena run`` ``cfg`` to its end (exit 0, ``n`` games); returns the output folder and its games."""
    r = run_arena(cfg, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    played = games(cfg.parent / "out")
    assert len(played) == n
    return cfg.parent / "out", played


def hostile_bot(image: str, name: str, mode: str, extra: str = "", run_tag: str = RUN_TAG) -> str:
    """A config's ``[[bots]]`` entry: the hostile image in attack ``mode`` (and ``run_tag`` in its
    environment), with ``extra`` lines."""
    tag, value = run_tag.split("=")
    return f'[[bots]]\nname = "{name}"\nimage = "{image}"\nenv = {{ HOSTILE = "{mode}", {tag} = "{value}" }}\n{extra}\n'


def test_memory_forks_floods_and_sigterm_change_only_their_own_games(
    client: Any, hostile_image: str, tmp_path: Path
) -> None:
    """A bot past its memory (forfeit, reason ``oom``), a fork bomb (stopped by the pids limit), 1 GB
    to stdout (the copied log stays under 1 MiB) and a bot ignoring SIGTERM (killed after the grace),
    each against a plain container bot; then nothing is left."""
    cfg = write_config(tmp_path, 2, [
        hostile_bot(hostile_image, "plain", "none"),
        hostile_bot(hostile_image, "hog", "oom", "memory = 64"),
        hostile_bot(hostile_image, "forker", "forkbomb", "pids = 32"),
        hostile_bot(hostile_image, "flooder", "flood"),
        hostile_bot(hostile_image, "stubborn", "sigterm"),
    ], gpp=2, concurrency=3)
    out, played = play_all(cfg, 20)
    for g in played:
        sides = [g["a"], g["b"]]
        for seat, term in enumerate(g["terminations"]):
            name = sides[seat % 2]  # seat k plays for side k % 2
            if name == "hog" and (term != "other_seat_forfeited" or "plain" in sides):
                assert term == "oom", (g.get("reasons"), g)
                assert any(x.startswith(f"seat {seat} (hog) oom: container was killed at its memory limit (64 MiB)")
                           for x in g["reasons"]), g
            elif name in ("plain", "stubborn"):
                assert term in ("normal", "other_seat_forfeited"), g  # only the hostile side's seat forfeits
        if "hog" in sides and "plain" in sides:
            assert sides[g["winner"]] == "plain", g
    for log in out.glob("logs/*/seat*.log"):
        assert log.stat().st_size <= (1 << 20) + 100, log
        text = log.read_text(errors="replace")
        if "PROBE forkbomb" in text:
            line = next(x for x in text.splitlines() if x.startswith("PROBE forkbomb"))
            assert line.startswith("PROBE forkbomb: stopped after"), line
            assert int(line.split()[4]) < 32, line
    assert leftovers(client, run_key(out)) == []
    assert bot_processes("hostile:HostileBot") == []


def test_a_bot_stopped_at_its_pids_limit_says_so(client: Any, hostile_image: str, tmp_path: Path) -> None:
    """A bot that forks until its pids limit refuses, then stops answering: the referee sees a timeout,
    the seat reads ``pids`` first (issue 24, "Reasons come first")."""
    bots = [hostile_bot(hostile_image, "plain", "none"), hostile_bot(hostile_image, "forker", "forkhang", "pids = 32")]
    cfg = write_config(tmp_path, 2, bots, gpp=2)
    out, played = play_all(cfg, 2)
    for g in played:
        forker = [g["a"], g["b"]].index("forker")
        assert g["winner"] == 1 - forker, g
        assert g["terminations"][forker] == "pids", g
        line = next(x for x in g["reasons"] if x.startswith(f"seat {forker} (forker)"))
        assert line.startswith(f"seat {forker} (forker) pids: container reached its pids limit (32)"), line
        assert "the referee saw timeout" in line, line
    assert leftovers(client, run_key(out)) == []


def test_arena_killed_leaves_nothing_behind(client: Any, hostile_image: str, tmp_path: Path) -> None:
    """SIGKILL to the arena mid-game: the reaper removes its containers, network and firewall chain;
    a leftover labelled with the run key is removed when the tournament starts again. While it plays,
    :func:`bot_processes` sees its bots (the control of the other tests' no-process-left checks)."""
    mine = f"HOSTILE_RUN={uuid.uuid4().hex}"  # not the module's: an earlier test's bots may still be exiting
    bots = [hostile_bot(hostile_image, name, "sigterm", run_tag=mine) for name in ("a", "b")]
    cfg = write_config(tmp_path, 2, bots, gpp=2, concurrency=2)
    key = run_key(tmp_path / "out")
    arena = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # both at once: the bots' check before the first game starts their containers and removes them
        # again, so a bot process seen then may have no container a moment later (seen under CI's load)
        deadline = time.monotonic() + 120
        running: list[Any] = []
        seen: list[str] = []
        while time.monotonic() < deadline and not (running and seen):
            running = client.containers.list(filters={"label": f"org.allfours.run={key}"})
            seen = bot_processes("hostile:HostileBot", mine)
            time.sleep(0.2)
        assert running, "no bot container started"
        assert seen, "this test's bot processes are not found by their tag"
    finally:
        os.kill(arena.pid, signal.SIGKILL)
        arena.wait(10)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (leftovers(client, key) or bot_processes("hostile:HostileBot", mine)):
        time.sleep(0.5)
    assert leftovers(client, key) == []
    assert bot_processes("hostile:HostileBot", mine) == []
    # a leftover from an earlier run (say the reaper was killed too) is removed at the next start
    stray = client.containers.run(hostile_image, name=f"allfours-{key}-stray", detach=True,
                                  labels={"org.allfours.run": key}, entrypoint=["sleep", "600"], network_mode="none")
    try:
        r = run_arena(cfg)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    finally:
        from contextlib import suppress
        with suppress(Exception):
            stray.remove(force=True)
    assert leftovers(client, key) == []
    assert len(games(tmp_path / "out")) == 2


def test_control_an_internal_network_alone_reaches_the_host(client: Any, hostile_image: str) -> None:
    """The control of the host probe: without the sandbox's INPUT chain, a container on an internal
    bridge does reach a host service through its gateway (so the probe above can see a leak)."""
    host = host_service(client)
    net = client.networks.create(f"allfours-control-{os.getpid()}", driver="bridge", internal=True)
    ip, port = host.address.rsplit(":", 1)
    try:
        dial = f"import socket; socket.create_connection(('{ip}', {port}), 5)"
        out = client.containers.run(hostile_image, entrypoint=["python3", "-c", dial], network=net.name, remove=True,
                                    stdout=True, stderr=True)
    finally:
        net.remove()
        host.close()
    assert out == b"" and host.accepted == 1


class _Net:
    """A docker network as docker-py gives it, made with IPv6 on (dockerd's default-network-opts)."""

    def __init__(self, ipv6: bool) -> None:
        self.attrs = {"EnableIPv6": ipv6, "IPAM": {"Config": [{"Gateway": "172.30.0.1", "Subnet": "172.30.0.0/16"}]}}
        self.removed = False

    def reload(self) -> None:
        pass

    def remove(self) -> None:
        self.removed = True


def test_a_network_docker_makes_with_ipv6_is_refused_and_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's walls are iptables rules, IPv4's alone: on a dockerd whose default-network-opts turn
    IPv6 on for new networks (docker 24 and later), a bot would reach the host's services on the gateway's
    IPv6 address past every wall. The network is asked for without IPv6 and refused (before any iptables
    rule) if docker makes it with IPv6 all the same."""
    import arena.hosting.sandbox as sandbox

    made: list[dict[str, Any]] = []
    net = _Net(ipv6=True)

    class Networks:
        def create(self, name: str, **kw: Any) -> _Net:
            made.append(kw)
            return net

    class Client:
        networks = Networks()

    monkeypatch.setattr(sandbox, "_iptables", lambda *a, **k: pytest.fail(f"iptables {a} for a refused network"))
    with pytest.raises(sandbox.SandboxError, match="made the network af-t with IPv6, which the sandbox's walls"):
        sandbox.walled_network(Client(), "af-t", "af-t", "AF-t", {}, internal=True)
    assert net.removed and made[0]["options"]["com.docker.network.enable_ipv6"] == "false"


def test_the_sandboxs_network_has_no_ipv6_on_a_real_dockerd(client: Any) -> None:
    """This dockerd takes the option that keeps IPv6 off (as docker 20.10 to 28 do) and makes the network
    without it."""
    from arena.hosting.sandbox import _remove_chain, walled_network

    name = f"allfours-v6probe-{os.getpid()}"
    bridge, chain = f"afv6-{os.getpid()}"[:15], f"AFV6-{os.getpid()}"
    try:
        walled_network(client, name, bridge, chain, {"allfours.test": "ipv6"}, internal=True)
        attrs = client.networks.get(name).attrs
        assert attrs["EnableIPv6"] is False and attrs["Options"]["com.docker.network.enable_ipv6"] == "false"
    finally:
        _remove_chain(chain, bridge)
        for net in client.networks.list(names=[name]):
            net.remove()


def test_a_container_sees_a_fixed_view_of_the_hosts_counters(client: Any, tmp_path: Path) -> None:
    """A container's ``/proc`` showed the host's counters: free memory, the load, every CPU's time, open
    files. Partners at a table of four are two containers of one bot, so one could hold memory or spin
    threads and the other read its hidden hand off them. A bot container (``Sandbox.start``) now reads
    each of those files twice, the host busy in between (memory held, a thread spinning, files open),
    and reads the same text both times: the view's (arena/hosting/procview.py) where runc lets a file be
    bound over ``/proc`` (``meminfo``, ``stat``, ``loadavg``…), empty (docker's masking) elsewhere, never
    the host's; ``/sys`` (the host's node0/meminfo, every disk's stat…) is masked whole, so Python counts
    the view's CPUs. Docker's own masked paths stay masked."""
    from arena.hosting.sandbox import Limits, Sandbox
    from tests.proc_helpers import NAMES, READER, host_load, host_text

    limits = Limits(cpus=1.0, memory_mb=200)
    sandbox = Sandbox(client, run_key(tmp_path), f"procview-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        bot = sandbox.start(base_image("python"), "signaller", "g00001-s0", {}, limits, command=["sleep", "600"])

        def read() -> dict[str, str]:
            code, out = bot.container.exec_run(["python3", "-c", READER, *NAMES], demux=False)
            assert code == 0, out
            return dict(json.loads(out.decode()))

        masked = client.api.inspect_container(bot.container.id)["HostConfig"]["MaskedPaths"]
        first = read()
        with host_load():
            second = read()
            host = host_text()
        sysfs = bot.container.exec_run(["ls", "-A", "/sys"])
        cpus = bot.container.exec_run(["python3", "-c", "import os; print(os.cpu_count())"])
        bot.stop(exit_wait_s=0)
    finally:
        sandbox.close()
    moved = {name for name in NAMES if first[name] != second[name]}
    assert not moved, f"these moved with the host's load: {sorted(moved)}"

    from arena.hosting.procview import HOST_WIDE, RUNC_BINDABLE, content, cpu_count

    assert NAMES == HOST_WIDE  # the test reads every file of the view
    for name in NAMES:
        if name in host:  # the view's text where runc binds it, else masked (empty); never the host's
            assert first[name] == (content(name, cpu_count(limits), 200) if name in RUNC_BINDABLE else ""), name
        else:  # absent from this kernel (schedstat without CONFIG_SCHEDSTATS): absent in the container too
            assert first[name].startswith("error "), (name, first[name])
    assert host["meminfo"] != first["meminfo"]
    assert first["meminfo"].split()[:3] == ["MemTotal:", str(200 * 1024), "kB"], first["meminfo"]
    assert {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"} <= set(masked)  # docker's own still
    assert sysfs.exit_code == 0 and sysfs.output == b""  # the host's sysfs (node0/meminfo, disks' stat…) masked
    assert cpus.exit_code == 0 and cpus.output.decode().strip() == str(cpu_count(limits))  # from the view's stat
    assert leftovers(client, run_key(tmp_path)) == []


#: A watch on ``/proc/meminfo`` (the view's file) for a few seconds: how many bytes of events came.
WATCH_MEMINFO = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
assert fd >= 0 and libc.inotify_add_watch(fd, b"/proc/meminfo", 0x1 | 0x20) >= 0  # IN_ACCESS | IN_OPEN
open("/tmp/watching", "w").close()
time.sleep(4)
try:
    print(len(os.read(fd, 4096)))
except BlockingIOError:
    print(0)
"""


def test_a_container_cannot_watch_its_partner_read_the_view(client: Any, tmp_path: Path) -> None:
    """A file watch (inotify, which docker's seccomp profile allows) sees every open and read of a file
    through any mount of it, and every container of a run was bound to the same files of the ``/proc``
    view: one container of a bot watching its ``/proc/meminfo`` saw another read its own (measured:
    IN_OPEN and IN_ACCESS), a channel with no noise. Each container now gets its own copy of the view's
    files, removed with it."""
    from arena.hosting.sandbox import Limits, Sandbox

    limits = Limits(cpus=1.0, memory_mb=200)
    sandbox = Sandbox(client, run_key(tmp_path), f"watch-{tmp_path.name[-8:]}")
    sandbox.open(reaper=False)
    try:
        image = base_image("python")
        watcher = sandbox.start(image, "signaller", "g00001-s0", {}, limits, command=["python3", "-c", WATCH_MEMINFO])
        reader = sandbox.start(image, "signaller", "g00001-s2", {}, limits, command=["sleep", "600"])
        folders = [c.copy_folder if c is not None else None for c in (watcher.view_copy, reader.view_copy)]
        deadline = time.monotonic() + 60
        while watcher.container.exec_run(["test", "-e", "/tmp/watching"]).exit_code != 0:
            assert time.monotonic() < deadline, "the watcher did not start"
            time.sleep(0.2)
        assert reader.container.exec_run(["cat", "/proc/meminfo"]).exit_code == 0
        assert watcher.wait(60) == 0
        events = watcher.container.logs().decode().strip()
        watcher.stop(exit_wait_s=0)
        reader.stop(exit_wait_s=0)
    finally:
        sandbox.close()
    assert events == "0", events
    assert None not in folders and folders[0] != folders[1], folders
    assert not any(f.exists() for f in folders if f is not None)  # removed with their containers
