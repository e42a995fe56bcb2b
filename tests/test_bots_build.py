"""`arena bots build`: its checks (no docker needed) and a Node.js bot built and played in a container."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from arena.hosting.bots_build import DOCKER_DIR, BuildError, build_image, plan_build
from arena.hosting.sandbox import run_key
from tests.docker_helpers import (
    ROOT,
    TcpCanary,
    base_image,
    build_bot,
    docker_client,
    file_in_image,
    leftovers,
    output_in_image,
    play_against_random_in_container,
)

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests


def test_plan_finds_the_kind_and_entry(tmp_path: Path) -> None:
    js = ROOT / "sample_bots" / "js"
    p = plan_build(js, "jsbot", "1.0")
    assert (p.kind, p.entry, p.tag) == ("node", "bot.js", "allfours-bots/jsbot:1.0")
    (tmp_path / "mine.py").write_text("class Mine: pass\n")
    p = plan_build(tmp_path, "mine", "2", entry="mine:Mine", tag="x/y:z")
    assert (p.kind, p.entry, p.tag) == ("python", "mine:Mine", "x/y:z")


def test_the_build_finds_the_projects_dockerfiles() -> None:
    """The Dockerfiles live in the project's docker/ folder, wherever the module sits in the package."""
    assert DOCKER_DIR == ROOT / "docker"
    for name in ("bot-python.Dockerfile", "bot-node.Dockerfile", "base-image.sh"):
        assert (DOCKER_DIR / name).is_file(), name


def test_a_node_entry_must_be_a_file_inside_the_folder(tmp_path: Path) -> None:
    """A submission's package.json "main" (or --entry) naming a host file outside the folder was accepted
    whenever that file existed: an oracle of which files the arena's host holds (issue 22's intake)."""
    import json

    (tmp_path / "package.json").write_text(json.dumps({"main": "../" * 12 + "etc/passwd"}))
    with pytest.raises(BuildError, match="a file inside the folder") as e:
        plan_build(tmp_path, "a", "1")
    assert "\n" not in str(e.value)
    with pytest.raises(BuildError, match="a file inside the folder"):
        plan_build(tmp_path, "a", "1", "/etc/passwd")
    (tmp_path / "bot.js").write_text("")
    assert plan_build(tmp_path, "a", "1", "./bot.js").entry == "./bot.js"


def test_a_node_entry_over_path_max_in_short_parts_is_refused_in_one_line(tmp_path: Path) -> None:
    """A package.json "main" of many one-byte parts, over PATH_MAX in all (each part under the 255-byte name limit,
    inside the folder), raised OSError (File name too long) out of plan_build, naming the server's path: the
    competition took it as the arena's fault, forgave the upload's count (refused_per_day) and told the
    competitor the path; an upload unpacked in full again and again, in no limit."""
    import json

    (tmp_path / "package.json").write_text(json.dumps({"main": "a/" * 2100 + "x.js"}))
    with pytest.raises(BuildError, match="a file inside the folder") as e:
        plan_build(tmp_path, "a", "1")
    assert str(tmp_path) not in str(e.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nowhere", "a", "1", None), "nowhere: not a folder"),
        ((".", "Big Name", "1", None), "--name 'Big Name'"),
        ((".", "a", "1 2", None), "--version '1 2'"),
        ((".", "a", "1", None), "a Python bot needs --entry module:Class of at most 200 characters (got None)"),
        ((".", "a", "1", "missing:Bot"), "no missing.py in the folder"),
        # a module name over 255 bytes raised OSError (File name too long) naming the server's path
        ((".", "a", "1", "a" * 300 + ":Bot"), "a Python bot needs --entry module:Class of at most 200 characters"),
    ],
)
def test_plan_errors_are_one_line(tmp_path: Path, args: tuple[Any, ...], message: str) -> None:
    folder = tmp_path / args[0] if args[0] != "." else tmp_path
    with pytest.raises(BuildError) as e:
        plan_build(folder, *args[1:])
    assert message in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < len(str(folder)) + 300


@pytest.mark.parametrize(
    "source",
    ["class Other: pass\n", "import os\nNOSUCH = 1\n", "def helper():\n    return 'nosuch'\n"],
)
def test_an_entry_class_the_module_lacks_is_refused_at_once(tmp_path: Path, source: str) -> None:
    """Seen entering a competition: `--entry alicebot:NoSuch` passed intake, then failed every one of the
    ~19 validation checks, "module has no NoSuch" buried after them. Now one line before any build (the base
    image is on a loopback registry, so a regression that built would still pull nothing off this machine)."""
    (tmp_path / "alicebot.py").write_text(source)
    r = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "build", str(tmp_path), "--name", "alice",
                        "--version", "1", "--entry", "alicebot:NoSuch", "--base", "127.0.0.1:9/none:1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--entry alicebot:NoSuch: alicebot.py defines or imports no NoSuch" in r.stderr, \
        r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize(
    "source",
    ["class NoSuch: pass\n", "from other import NoSuch\n", "from other import Base as NoSuch\n",
     "import other as NoSuch\n", "from other import *\n", "def __getattr__(name):\n    return object\n",
     "NoSuch = make()\n", "try:\n    from a import NoSuch\nexcept ImportError:\n    pass\n",
     "globals()['NoSuch'] = object\n", "class (broken\n", "for NoSuch in [1]:\n    pass\n"],
)
def test_an_entry_the_module_may_bind_passes_as_before(tmp_path: Path, source: str) -> None:
    """The check refuses only what is sure: anything that binds the name, or that it cannot read, passes."""
    (tmp_path / "alicebot.py").write_text(source)
    assert plan_build(tmp_path, "alice", "1", "alicebot:NoSuch").entry == "alicebot:NoSuch"
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "NoSuch.py").write_text("")  # a submodule: unsure (an import elsewhere may bind it)
    assert plan_build(tmp_path, "alice", "1", "pkg:NoSuch").entry == "pkg:NoSuch"


#: An entry module crafted for the parser: a list of a million zeros (2 MB of source; gzip makes it 2 KB).
CRAFTED = "NoSuch = 1\nx = [" + "0," * 1_000_000 + "]\n"
#: Prints the peak memory (KiB) of checking the entry ``alicebot:NoSuch`` of the folder ``sys.argv[1]``: its
#: VmHWM (getrusage's ru_maxrss keeps the forking parent's across exec: the test process's).
PEAK_OF_PLAN = ("import re, sys\nfrom arena.hosting.bots_build import plan_build\n"
                "plan_build(sys.argv[1], 'alice', '1', 'alicebot:NoSuch')\n"
                "print(re.search(r'VmHWM:\\s*(\\d+) kB', open('/proc/self/status').read()).group(1))")


def test_a_crafted_entry_module_costs_the_entry_check_little_memory(tmp_path: Path) -> None:
    """The entry check parsed the entry module whole with ast, in `arena serve`'s own process as a
    submission came in (and again at its build): some 500 bytes of memory a byte of a crafted module,
    holding the GIL (10 MB of ``0,`` took 4.9 GB and 22 s, the embedded referee's games stalled, and an
    upload refused or not, it counted in no daily limit). A module over ENTRY_PARSE_BYTES is not parsed
    (unsure: built and validated as before): 2 MB of it cost the check under 200 MiB (a process of its
    own measures it), and one of them that binds no such name is not refused."""
    (tmp_path / "alicebot.py").write_text(CRAFTED)
    r = subprocess.run([sys.executable, "-c", PEAK_OF_PLAN, str(tmp_path)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) < 200 * 1024, f"the check took {int(r.stdout) // 1024} MiB"
    (tmp_path / "alicebot.py").write_text(CRAFTED.replace("NoSuch = 1", "Other = 1"))
    assert plan_build(tmp_path, "alice", "1", "alicebot:NoSuch").entry == "alicebot:NoSuch"


def test_cli_refuses_a_bad_folder_with_status_2(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "arena.cli", "bots", "build", str(tmp_path), "--name", "a",
                        "--version", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "a Python bot needs --entry module:Class" in r.stderr, r.stderr


@pytest.mark.slow
def test_node_bot_built_from_debian_packages_plays_in_a_container(tmp_path: Path) -> None:
    """The sample Node.js bot, built with `arena bots build` on the Debian node base (npm ci with the
    host's CA bundle), plays a container game against a Python command bot to a normal end."""
    client = docker_client()
    tag = build_bot(ROOT / "sample_bots" / "js", "jsbot", "1", base_image("node"))
    assert client.images.get(tag).labels["org.allfours.bot"] == "jsbot"
    played = play_against_random_in_container(tmp_path, "js", tag, 128)
    assert len(played) == 2 and all(g["terminations"] == ["normal", "normal"] for g in played), played
    assert leftovers(client, run_key(tmp_path / "out")) == []


@pytest.mark.slow
def test_a_python_bot_without_requirements_txt_builds(tmp_path: Path) -> None:
    """issue 24, item 9: requirements.txt is optional (docs/deploy.md): a folder with only the bot's
    module builds (Docker 20.10 failed it: ``COPY failed: no source files were specified``)."""
    client = docker_client()
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copyfile(ROOT / "sample_bots" / "random_bot.py", folder / "plain.py")
    tag = build_bot(folder, "plainbot", "1", base_image("python"), entry="plain:RandomBot")
    try:
        assert client.images.get(tag).labels["org.allfours.bot"] == "plainbot"
        probe = ["python", "-c", "import plain, sdk; print(plain.RandomBot.__name__)"]
        assert output_in_image(client, tag, probe, network_disabled=True).strip() == "RandomBot"
    finally:
        client.images.remove(tag, force=True)


class _EndlessBuild:
    """A docker client whose build sends a line every 20 ms and never ends (no daemon needed)."""

    def __init__(self) -> None:
        self.api = self
        self.closed = False

    def build(self, **_: Any) -> Any:
        def lines() -> Any:
            while not self.closed:
                time.sleep(0.02)
                yield {"stream": "still building\n"}

        return lines()

    def inspect_image(self, tag: str) -> Any:
        raise docker.errors.ImageNotFound(f"No such image: {tag}")  # docker's answer: the tag names none yet

    def close(self) -> None:
        self.closed = True


def test_a_build_that_keeps_talking_is_stopped_at_the_time_limit_in_all(tmp_path: Path) -> None:
    """The build time limit counts in all, not only silence: a build streaming output past ``timeout_s``
    is given up with one line, and its connection closed (docker stops a build whose client went)."""
    (tmp_path / "chatty.py").write_text("class Bot:\n    pass\n")
    plan = plan_build(tmp_path, "chatty", "1", "chatty:Bot", "allfours-test/chatty:1")
    client = _EndlessBuild()
    over = r"^the build of allfours-test/chatty:1 went over the build time limit of 1 s$"
    with pytest.raises(BuildError, match=over):
        build_image(plan, "allfours-base:none", client=client, timeout_s=1)
    assert client.closed


def test_a_builds_own_code_is_held_to_the_build_memory_limit(tmp_path: Path) -> None:
    """A Node.js bot's package.json scripts (``preinstall``) run as root inside the build, as do a Python
    bot's sdists: a submitted bot's own code, which had no memory limit there (the host's memory was
    its to take). A build whose code takes more than ``memory_mb`` fails with one line."""
    docker_client()
    (tmp_path / "bot.js").write_text("")
    hog = "node -e \"const b = Buffer.alloc(600 * 1024 * 1024, 1); console.log(b.length)\""
    (tmp_path / "package.json").write_text(f'{{"name": "hog", "version": "1.0.0", "main": "bot.js", '
                                           f'"scripts": {{"preinstall": {json.dumps(hog)}}}}}')
    plan = plan_build(tmp_path, "buildhog", "1", tag="allfours-test/buildhog:1")
    with pytest.raises(BuildError, match=r"^the build of allfours-test/buildhog:1 failed: ") as e:
        image = build_image(plan, base_image("node"), memory_mb=256, timeout_s=300)
        docker_client().images.remove(image, force=True)
    assert "\n" not in str(e.value)


#: A Node.js bot's ``preinstall`` script (run as root by ``npm install`` during the build): its default
#: gateway (an internal network has none), then a TCP connection to the test's listener at each address
#: of targets.json and at that gateway; one line each in probe.txt, which the image keeps. It sends
#: nothing off this machine (no name is looked up: the resolver is not on this machine).
PROBE_JS = r"""
const fs = require("fs"), net = require("net");
const t = JSON.parse(fs.readFileSync("targets.json", "utf8"));
const route = fs.readFileSync("/proc/net/route", "utf8").split("\n").map((l) => l.split("\t"))
  .find((f) => f[1] === "00000000");
const gateway = route ? route[2].match(/../g).reverse().map((h) => parseInt(h, 16)).join(".") : null;
const connect = (host) => new Promise((done) => {
  const s = net.connect({ host, port: t.port, timeout: 3000 });
  s.on("connect", () => { s.destroy(); done(`TCP ${host} connected`); });
  s.on("timeout", () => { s.destroy(); done(`TCP ${host} failed: timeout`); });
  s.on("error", (e) => done(`TCP ${host} failed: ${e.code}`));
});
(async () => {
  const lines = [`GATEWAY ${gateway}`];
  for (const host of [gateway, ...t.hosts].filter(Boolean)) lines.push(await connect(host));
  fs.writeFileSync("probe.txt", lines.join("\n") + "\n");
})();
"""


def _host_addresses() -> list[str]:
    """The host's IPv4 addresses but loopback (docker0's 172.17.0.1 among them when docker runs)."""
    r = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=30)
    found = [line.split()[3].split("/")[0] for line in r.stdout.splitlines() if len(line.split()) > 3]
    return [a for a in dict.fromkeys(["172.17.0.1", *found]) if not a.startswith("127.")]


def _probe_folder(folder: Path, port: int, hosts: list[str]) -> None:
    """A Node.js bot whose preinstall script runs :data:`PROBE_JS` against ``hosts`` at ``port``."""
    import json

    folder.mkdir(parents=True)
    (folder / "bot.js").write_text("")
    (folder / "probe.js").write_text(PROBE_JS)
    (folder / "targets.json").write_text(json.dumps({"hosts": hosts, "port": port}))
    (folder / "package.json").write_text(json.dumps({"name": "prober", "version": "1.0.0", "main": "bot.js",
                                                     "scripts": {"preinstall": "node probe.js"}}))


def _probe_build(out: Path, prefix: str, port: int, hosts: list[str],
                 reaches: tuple[str, ...] = ()) -> tuple[str, str, list[str]]:
    """Build eve's prober@1 (:func:`_probe_folder`) through a real build queue of the competition in
    ``out`` (images ``prefix``/…, removed after; ``[competition] build_reaches = reaches``), its validation
    passing every image; returns its status, its probe.txt and what of the run was on docker while the
    queue was open."""
    from arena.competition.book import CompetitionBook
    from arena.competition.pipeline import BuildQueue, submission_folder, submission_tag
    from arena.competition.validate import Verdict
    from arena.config import CompetitionSettings

    client = docker_client()
    settings = CompetitionSettings(base_node=base_image("node"), image_prefix=prefix, build_reaches=reaches)
    tag = submission_tag(settings, out, "prober", "1")
    try:
        with CompetitionBook(out) as book:
            book.add_competitor("eve")
            sub = book.add_submission("eve", "prober", "1", "node", "")
            _probe_folder(submission_folder(out, sub.id), port, hosts)
            queue = BuildQueue(book, settings, out, lambda: None, lambda _: None,
                               validator=lambda *_: Verdict(True, (), ""), client=client)
            queue.start()  # the queue's thread takes the submission, as in `arena serve`
            try:
                deadline = time.monotonic() + 600
                while (got := book.get(sub.id)) is not None and got.status in ("received", "building"):
                    assert time.monotonic() < deadline, "the build did not end in 600 s"
                    time.sleep(0.5)
                assert got is not None
                while_open = leftovers(client, run_key(out))
            finally:
                queue.stop()
        probe = file_in_image(client, tag, "/opt/bot/probe.txt") if got.status == "accepted" else ""
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
    return got.status, probe, while_open


@pytest.mark.slow
def test_a_competition_build_reaches_no_service_of_the_host(tmp_path: Path) -> None:
    """A submission's build runs its own code as root (npm's preinstall). On docker's default bridge it
    reached every service of the host listening on 0.0.0.0 through the gateway (172.17.0.1). On the
    competition's build network no address of the host answers, the build still has a default route
    (not an internal network: its registries stay reachable), the build succeeds, and stopping the
    queue removes the network and its firewall chain."""
    out = tmp_path / "out"
    listener = TcpCanary()
    try:
        status, probe, while_open = _probe_build(out, "allfours-test-buildnet", listener.port, _host_addresses())
    finally:
        listener.close()
    assert status == "accepted", probe
    tried = [line for line in probe.splitlines() if line.startswith("TCP ")]
    assert len(tried) >= 3 and all(" failed: " in line for line in tried), probe
    assert listener.peers == [], (listener.peers, probe)
    assert probe.startswith("GATEWAY ") and not probe.startswith("GATEWAY null"), probe
    assert any("allfours-build-" in x for x in while_open), while_open
    assert leftovers(docker_client(), run_key(out)) == []


#: A cloud's metadata service (AWS, GCP, Azure, OpenStack): it hands the machine's credentials to whoever asks.
METADATA = "169.254.169.254"
#: A TCP listener (run in a network namespace): one line on stdout, the peer's address, per connection.
NS_LISTENER = """
import socket, sys
s = socket.create_server(("0.0.0.0", int(sys.argv[1])))
while True:
    c, peer = s.accept()
    print(peer[0], flush=True)
    c.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("reach", [False, True], ids=["walled", "build_reaches"])
def test_a_competition_build_reaches_no_private_or_link_local_address(tmp_path: Path, reach: bool) -> None:
    """The build network forwarded a build's traffic to any address the host routes to: a cloud host's
    metadata service (169.254.169.254: its credentials) and every machine of its private network, from
    the competitor's own code running as root in the build. A network namespace plays both (a machine at
    a 10.x address of this host's, answering at 169.254.169.254 too): this host reaches it (the control),
    the build reaches neither address and still succeeds (its name lookups and registries are elsewhere).
    With the machine's address in ``[competition] build_reaches`` (a host's own registry mirror or proxy)
    the build reaches it, and still not the metadata service."""
    import socket

    from tests.netns_helpers import netns

    port = 8080
    with netns() as ns:
        subprocess.run(["ip", "route", "add", f"{METADATA}/32", "via", ns.ns_ip], check=True, capture_output=True)
        try:
            ns.run("ip", "addr", "add", f"{METADATA}/32", "dev", "lo")
            listener = subprocess.Popen(ns.argv(sys.executable, "-c", NS_LISTENER, str(port)),
                                        stdout=subprocess.PIPE, text=True)
            try:
                for host in (ns.ns_ip, METADATA):  # the control, once the listener listens
                    deadline = time.monotonic() + 30
                    while True:
                        try:
                            socket.create_connection((host, port), timeout=5).close()
                            break
                        except OSError:
                            assert time.monotonic() < deadline, f"the control did not reach {host}:{port}"
                            time.sleep(0.2)
                status, probe, _ = _probe_build(tmp_path / "out", "allfours-test-buildlan", port, [ns.ns_ip, METADATA],
                                                (f"{ns.ns_ip}/32",) if reach else ())
            finally:
                listener.terminate()
                peers = listener.communicate(timeout=10)[0].split()
        finally:
            subprocess.run(["ip", "route", "del", f"{METADATA}/32"], capture_output=True, timeout=30)
    assert status == "accepted", probe
    assert f"TCP {METADATA} failed" in probe, probe
    if reach:  # the build's connection comes from this host's side of the link (docker masquerades it)
        assert f"TCP {ns.ns_ip} connected" in probe, probe
        assert peers == [ns.host_ip] * 3, (peers, probe)
    else:
        assert f"TCP {ns.ns_ip} failed" in probe, probe
        assert peers == [ns.host_ip, ns.host_ip], (peers, probe)  # the control's two connections only
    assert leftovers(docker_client(), run_key(tmp_path / "out")) == []


@pytest.mark.slow
def test_the_build_network_is_replaced_and_cleaned_up_by_run_key(tmp_path: Path) -> None:
    """A crashed run's build network and chains are replaced by the next open (one INPUT hook and one
    DOCKER-USER hook, not two); the run key's cleanup (the reaper's, ``python -m arena.hosting.sandbox
    clean``) removes them."""
    from arena.hosting.sandbox import PRIVATE_NETS, BuildNetwork, cleanup

    client = docker_client()
    key = run_key(tmp_path)
    try:
        BuildNetwork(client, key, "t").open()
        again = BuildNetwork(client, key, "t")
        assert again.open() == f"allfours-build-{key}" and again.gateway
        rules = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True, timeout=30).stdout
        assert [line for line in rules.splitlines() if f"AFB-{key}" in line] == [
            f"-A INPUT -i {again.bridge} -j AFB-{key}"], rules
        out = f"AFB-{key}-out"
        assert sorted(leftovers(client, key)) == sorted([
            f"network allfours-build-{key}", f"iptables -N AFB-{key}", f"iptables -A AFB-{key} -j DROP",
            f"iptables -A INPUT -i {again.bridge} -j AFB-{key}", f"iptables -N {out}",
            *[f"iptables -A {out} -p {p} -m {p} --dport 53 -j RETURN" for p in ("udp", "tcp")],
            *[f"iptables -A {out} -d {net} -j DROP" for net in PRIVATE_NETS],
            f"iptables -A DOCKER-USER -i {again.bridge} -j {out}", *[
                f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob(f"*/allfours-build-{key}")]])
        assert again.cgroup_parent == f"/allfours-build-{key}"  # the builds' pids limit (cgroupfs driver)
    finally:
        removed = cleanup(client, key)
    assert f"allfours-build-{key}" in removed and f"iptables chain AFB-{key}" in removed, removed
    assert f"iptables chain AFB-{key}-out" in removed, removed
    assert f"cgroup allfours-build-{key}" in removed, removed
    assert leftovers(client, key) == []


def _recording_builds(client: Any) -> list[str]:
    """Tee every build ``client`` makes: returns the list its output lines (``stream``) are added to."""
    lines: list[str] = []
    build = client.api.build

    def tee(*args: Any, **kwargs: Any) -> Any:
        stream = build(*args, **kwargs)

        class Tee:
            def __iter__(self) -> Any:
                for chunk in stream:
                    lines.extend(str(chunk.get("stream") or "").splitlines())
                    yield chunk

            def close(self) -> None:
                stream.close()

        return Tee()

    client.api.build = tee
    return lines


def test_a_failed_build_leaves_no_images_of_its_steps(tmp_path: Path) -> None:
    """The classic builder commits an image after each step; a build that fails keeps those of the steps
    before the failing one (untagged, in no ``docker images`` without ``-a``, never removed). A Node.js
    bot whose ``preinstall`` fails left its whole folder (``COPY bot``, up to the submission's unpacked
    size) on the host's disk at every rejected submission. The images a failed build made are removed."""
    import uuid

    client = docker_client()
    (tmp_path / "bot.js").write_text("")
    (tmp_path / "payload.bin").write_bytes(uuid.uuid4().bytes * (1024 * 1024 // 16))  # unique: no cache hit
    (tmp_path / "package.json").write_text('{"name": "fails", "version": "1.0.0", "main": "bot.js", '
                                           '"scripts": {"preinstall": "exit 3"}}')
    plan = plan_build(tmp_path, "fails", "1", tag="allfours-test/fails:1")
    lines = _recording_builds(client)
    with pytest.raises(BuildError, match=r"^the build of allfours-test/fails:1 failed: "):
        build_image(plan, base_image("node"), client=client, timeout_s=300)
    made = [m.group(1) for i, line in enumerate(lines) if (m := re.fullmatch(r"\s*---> ([0-9a-f]{12,64})", line))
            and "Using cache" not in lines[i - 1] and " : FROM " not in "".join(lines[i - 2:i])]
    assert made, lines  # the build got past its COPY steps
    import docker.errors

    kept = []
    for image in made:
        with contextlib.suppress(docker.errors.ImageNotFound):
            kept.append(client.images.get(image).id)
    assert kept == [], lines


def _file_maker(folder: Path, files: int, then_sleep_s: int) -> None:
    """A Node.js bot whose ``preinstall`` (run in the build, as root) makes ``files`` empty files in the
    image, then sleeps ``then_sleep_s`` seconds."""
    (folder / "bot.js").write_text("")
    script = (f"node -e \"const fs = require('fs'); fs.mkdirSync('many'); for (let i = 0; i < {files}; i++) "
              f"fs.writeFileSync('many/' + i, ''); setTimeout(() => {{}}, {then_sleep_s * 1000})\"")
    (folder / "package.json").write_text(f'{{"name": "inodes", "version": "1.0.0", "main": "bot.js", '
                                         f'"scripts": {{"preinstall": {json.dumps(script)}}}}}')


def test_a_build_step_making_too_many_empty_files_is_killed(tmp_path: Path) -> None:
    """Empty files take no bytes (the disk watch and ``image_bytes`` saw nothing) but each takes one of
    the host disk's inodes: a build step making millions (about 6,000 a second here) ran the host's
    file system out of inodes, and the image kept them. Over ``files_limit`` the step is killed."""
    client = docker_client()
    _file_maker(tmp_path, 3000, 5)
    plan = plan_build(tmp_path, "inodes", "1", tag="allfours-test/inodes:1")
    with pytest.raises(BuildError, match=r"^the build of allfours-test/inodes:1 failed: a build step made over "
                                         r"1000 files, folders and links, over the image limit of files$"):
        image = build_image(plan, base_image("node"), client=client, timeout_s=300, files_limit=1000)
        client.images.remove(image, force=True)


def test_the_files_of_an_image_above_its_base_are_counted(tmp_path: Path) -> None:
    """What a step made too fast for the watch is counted in the built image (the competition service
    rejects an image over ``image_files``): its own layers only, not its base's."""
    from arena.hosting.bots_build import image_files

    client = docker_client()
    _file_maker(tmp_path, 3000, 0)
    plan = plan_build(tmp_path, "inodes", "2", tag="allfours-test/inodes:2")
    image = build_image(plan, base_image("node"), client=client, timeout_s=300)
    try:
        assert image_files(client, image, base_image("node"), 1000) == 1001
        assert 3000 < (image_files(client, image, base_image("node"), 10**6) or 0) < 3100
        assert (image_files(client, image, None, 10**6) or 0) > 3100  # the base's files too
    finally:
        client.images.remove("allfours-test/inodes:2", force=True)


def test_building_a_name_and_version_again_removes_the_image_it_replaces(tmp_path: Path) -> None:
    """`arena bots build` of a name and version already built tagged the new image and left the old one on the
    host's disk, dangling, for good (this project's own suite left about 2 GB a run so). The build now removes
    the image its tag named before, when nothing else names or runs it."""
    import docker.errors

    client = docker_client()
    folder = tmp_path / "again"
    folder.mkdir()
    shutil.copyfile(ROOT / "sample_bots" / "random_bot.py", folder / "again.py")
    tags = []
    try:
        for n in range(2):
            (folder / "nonce.txt").write_text(f"{os.getpid()} {time.time()} {n}")  # a new image each time
            tags.append(build_bot(folder, "againbot", "1", base_image("python"), entry="again:RandomBot"))
            if n == 0:
                first = client.images.get(tags[0]).id
        assert tags[0] == tags[1] and client.images.get(tags[1]).id != first
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(first)
    finally:
        client.images.remove(tags[-1], force=True)


def _descends(images: list[dict[str, Any]], image: str, ancestors: list[str]) -> bool:
    """Whether ``image`` (an id) is one of ``ancestors`` (short or full ids) or descends from one."""
    parents = {i["Id"]: i.get("ParentId") or "" for i in images}
    seen: str | None = image
    while seen:
        if any(seen.removeprefix("sha256:").startswith(a.removeprefix("sha256:")) for a in ancestors):
            return True
        seen = parents.get(seen)
    return False


def test_a_given_up_build_leaves_no_images_of_its_steps(tmp_path: Path) -> None:
    """A build whose step runs past the time limit was given up, but its connection stayed open until the
    arena let go of the stream: docker went on building, the RUN step's container kept the step images
    before it in use (the arena's removal of them failed), and the step committed its own image after the
    arena had stopped reading (a silent step raised urllib3's ReadTimeoutError, not BuildError, when the
    client's own read timeout came first). Now the
    connection is shut at the limit (docker cancels the build), the arena waits for docker to be done with
    the step, and removes every image the build made, those it committed after the limit too."""
    import uuid

    from arena.hosting.sandbox import docker_client as timed_client

    docker_client()
    limit = 30
    client = timed_client(timeout=4 * limit)  # its reads wait past the limit (the arena's own waits it out)
    (tmp_path / "bot.js").write_text(f"// {uuid.uuid4()}\n")  # unique: no cache hit
    script = f"for i in $(seq {limit + 15}); do echo $i; sleep 1; done"  # past the limit, then done
    (tmp_path / "package.json").write_text(json.dumps({"name": "slow", "version": "1.0.0", "main": "bot.js",
                                                       "scripts": {"preinstall": script}}))
    plan = plan_build(tmp_path, "slow", "1", tag="allfours-test/slow:1")
    lines = _recording_builds(client)
    before = {i["Id"] for i in client.api.images(all=True)}
    over = rf"^the build of allfours-test/slow:1 went over the build time limit of {limit} s$"
    with pytest.raises(BuildError, match=over):
        image = build_image(plan, base_image("node"), client=client, timeout_s=limit)
        client.images.remove(image, force=True)
    made = [m.group(1) for i, line in enumerate(lines) if (m := re.fullmatch(r"\s*---> ([0-9a-f]{12,64})", line))
            and "Using cache" not in lines[i - 1] and " : FROM " not in "".join(lines[i - 2:i])]
    assert made and any("Running in" in line for line in lines), lines  # the RUN step was under way
    images = client.api.images(all=True)
    kept = [i["Id"] for i in images if i["Id"] not in before and _descends(images, i["Id"], made)]
    assert kept == [], lines
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get("allfours-test/slow:1")
