"""Helpers of the docker tests (a real dockerd): images built once per session, leftovers checks.

Images are made the way a host without an image registry makes them: the Debian base images of
``docker/base-image.sh`` (cached by content: built once per machine), then ``arena bots build``.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
DOCKER = "/usr/bin/docker"  # Debian's CLI (a newer one elsewhere on PATH may lack the classic builder)


def docker_client() -> Any:
    """A docker SDK client, or skip (laptop) / fail (CI) the test when no dockerd answers."""
    require(os.path.exists(DOCKER), "Debian's docker.io is not installed (run scripts/setup.sh)")
    require(shutil.which("iptables") is not None, "iptables is not installed (run scripts/setup.sh)")
    require(os.geteuid() == 0, "the container sandbox needs root (iptables rules, the docker socket)")
    from arena.hosting.sandbox import SandboxError
    from arena.hosting.sandbox import docker_client as client

    try:
        return client()
    except SandboxError as e:
        require(False, f"{e} (run scripts/setup.sh)")


def base_image(kind: str) -> str:
    """The tag of the Debian base image ``kind`` (``python``/``node``), built on first use."""
    r = subprocess.run(
        ["bash", str(ROOT / "docker" / "base-image.sh"), kind], capture_output=True, text=True, timeout=1200
    )
    assert r.returncode == 0, f"docker/base-image.sh {kind} failed: {r.stderr[-2000:]}"
    return r.stdout.strip().splitlines()[-1]


def build_bot(folder: Path, name: str, version: str, base: str, entry: str | None = None) -> str:
    """``arena bots build`` (the CLI, as a user runs it); returns the image's tag."""
    cmd = [sys.executable, "-m", "arena.cli", "bots", "build", str(folder), "--name", name, "--version", version,
           "--base", base]
    if entry:
        cmd += ["--entry", entry]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, f"arena bots build failed ({r.returncode}): {r.stdout[-1000:]} {r.stderr[-2000:]}"
    return r.stdout.strip().splitlines()[-1]


@contextlib.contextmanager
def removing_replaced(client: Any, tag: str) -> Iterator[None]:
    """Within it, builds may tag ``tag`` anew (``docker-compose build`` of ``allfours:dev``); after it, the
    image ``tag`` named before is removed when another has taken the tag, no tag names it and no container
    uses it (not forced; docker's errors ignored), as :func:`arena.hosting.bots_build.build_image` does for
    a bot's image: each rebuild left the old one on the host's disk, dangling (about 770 MB a run)."""
    import docker.errors

    def image_id() -> str | None:
        with contextlib.suppress(docker.errors.DockerException):
            return str(client.api.inspect_image(tag)["Id"])
        return None

    before = image_id()
    try:
        yield
    finally:
        if before is not None and image_id() != before:
            with contextlib.suppress(docker.errors.DockerException):
                if not client.api.inspect_image(before).get("RepoTags"):
                    client.api.remove_image(before)


def add_tar_file(tar: tarfile.TarFile, name: str, body: bytes) -> None:
    """Add a regular file ``name`` holding ``body`` to ``tar`` (a build context, an archive a test sends)."""
    info = tarfile.TarInfo(name)
    info.size = len(body)
    tar.addfile(info, io.BytesIO(body))


def image_from_dockerfile(client: Any, tag: str, dockerfile: str, files: dict[str, bytes] | None = None) -> Any:
    """The image (docker SDK ``Image``) built from ``dockerfile`` and ``files`` (name: content, the build
    context beside it), tagged ``tag``."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        add_tar_file(tar, "Dockerfile", dockerfile.encode())
        for name, body in (files or {}).items():
            add_tar_file(tar, name, body)
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    return image


def scratch_image(client: Any, tag: str, dockerfile_tail: str = "") -> Any:
    """An image ``tag`` built from scratch holding one file ``/f`` (``FROM scratch``, ``COPY f /f``, then
    ``dockerfile_tail``, e.g. ``"VOLUME /data\n"``): the smallest image a test can hand the arena."""
    return image_from_dockerfile(client, tag, f"FROM scratch\nCOPY f /f\n{dockerfile_tail}", {"f": b"x"})


def tag_variant(client: Any, base: str, tag: str, variant: str) -> str:
    """Tag ``tag`` as an image of ``base`` plus the label ``variant`` (the same bot, another image ID: what a
    tag moved by ``arena bots build`` again or ``docker tag`` names); returns its ID (``sha256:…``)."""
    dockerfile = f'FROM {base}\nLABEL org.allfours.test.variant="{variant}"\n'
    return str(image_from_dockerfile(client, tag, dockerfile).id)


def remove_images(client: Any, ids: list[str]) -> None:
    """Remove the images ``ids``, last first (a child before the image it was built from), forced (every tag
    of each); one already gone, or any error of docker's, is passed over (clean-up after a test)."""
    for image_id in reversed(ids):
        with contextlib.suppress(Exception):
            client.images.remove(image_id, force=True)


def _text_of(container: Any, path: str) -> str:
    """The text of the file at ``path`` in ``container`` (created, running or exited), through docker's
    ``get_archive`` (a tar stream of that one file).

    :raises docker.errors.NotFound: if there is no such file."""
    import io
    import tarfile

    chunks, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        assert member is not None, f"{path} is not a file"
        return member.read().decode()


def file_in_image(client: Any, tag: str, path: str) -> str:
    """The text of the file at ``path`` in image ``tag``, read from a created (never started) container
    with ``get_archive``. Not ``containers.run(…, ["cat", path])``: dockerd waits at most 2 s for a
    container's output to be copied once it exits, so on a busy machine ``cat`` can come back empty (a
    CI run read ``''`` for a file that held a number).

    :raises KeyError: if the image has no file there (docker's NotFound, as KeyError)."""
    import docker.errors

    container = client.containers.create(tag, entrypoint=["true"], network_disabled=True)
    try:
        return _text_of(container, path)
    except docker.errors.NotFound:
        raise KeyError(f"{tag} has no {path}") from None
    finally:
        container.remove(force=True)


def output_in_image(client: Any, image: str, argv: list[str], **options: Any) -> str:
    """What ``argv`` prints (stdout and stderr) in a container of ``image`` (docker ``run`` ``options``,
    e.g. ``network``), removed after. The output goes to a file in the container, read with
    :func:`file_in_image`'s ``get_archive``, not to its log (see there: on a busy machine the log of a
    short-lived container can come back empty).

    :raises AssertionError: if the command exits with a failure status (its output in the message)."""
    wrapped = ["sh", "-c", '"$@" > /tmp/allfours-output 2>&1', "sh", *argv]
    container = client.containers.run(image, entrypoint=wrapped, detach=True, **options)
    try:
        code = container.wait(timeout=300)["StatusCode"]
        out = _text_of(container, "/tmp/allfours-output")
        assert code == 0, f"{argv} exited with status {code}: {out[-2000:]}"
        return out
    finally:
        container.remove(force=True)


def open_sandbox(client: Any, out: Path, name: str) -> Any:
    """The container sandbox (:class:`arena.hosting.sandbox.Sandbox`) of the run whose output folder is
    ``out``, for the tournament ``name``, opened without its reaper; the caller closes it."""
    from arena.hosting.sandbox import Sandbox, run_key

    sandbox = Sandbox(client, run_key(out), name)
    sandbox.open(reaper=False)
    return sandbox


@dataclass
class SeatStarter:
    """A game runner's container start alone (:meth:`arena.play.game.GrpcGameRunner._launch_container`, no
    referee: the caller stops each container it starts at once) of the container bot ``boxed`` version 1 by
    ``tag``, in ``sandbox``, with the output folder ``out``; ``notes`` gets each seat's one-line failure."""

    sandbox: Any
    out: Path
    tag: str
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from arena.config import BotSpec
        from arena.play.game import GrpcGameRunner

        self.runner = object.__new__(GrpcGameRunner)
        self.runner.sandbox, self.runner.output, self.runner.pinned = self.sandbox, self.out, {}
        self.runner.config = type("Config", (), {"bot_log_bytes": 4096})()
        self.bot = BotSpec("boxed", "1", (), image=self.tag)
        self.log_dir = self.out / "logs" / "g1"
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def launch(self, seat: int) -> Any:
        """Seat ``seat``'s started container (a :class:`arena.hosting.sandbox.BotContainer`), or ``None`` with
        a line in :attr:`notes`. Each start pins the runner's image as a game's start does."""
        conn = type("Conn", (), {"address": "127.0.0.1:1"})()
        return self.runner._launch_container(conn, self.bot, seat, "ticket", self.log_dir, self.notes)


def leftovers(client: Any, key: str) -> list[str]:
    """Everything run ``key`` left behind: containers, networks, volumes, the iptables chains (the
    tournament's and the build network's) and the chain's ``hashlimit`` table (the containers' connection rate)."""
    flt = {"label": f"org.allfours.run={key}"}
    found = [f"container {c['Names']}" for c in client.api.containers(all=True, filters=flt)]
    found += [f"network {n.name}" for n in client.networks.list(filters=flt)]
    found += [f"volume {v.name}" for v in client.volumes.list(filters=flt)]
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True, timeout=30).stdout
    found += [f"iptables {line}" for line in rules.splitlines() if f"AF-{key}" in line or f"AFB-{key}" in line]
    found += [f"hashlimit table {p}" for p in Path("/proc/net/ipt_hashlimit").glob(f"AF-{key}")]
    found += [f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob(f"*/allfours-build-{key}")]
    found += [f"cgroup {d}" for d in Path("/sys/fs/cgroup").glob(f"allfours-build-{key}")]
    return found


def play_against_random_in_container(tmp_path: Path, name: str, tag: str, memory_mib: int | None = None,
                                     games: int = 2, timeout: float = 600, **spec: str | int) -> list[dict[str, Any]]:
    """A ``games``-game 2-player tournament (``arena run``) of the container bot ``tag`` (named ``name``, with
    ``memory_mib`` MiB when given, and each of ``spec`` as a line of its ``[[bots]]`` table: ``mode="worker"``)
    against the Python random bot: the games played (games.jsonl), after checking the run ended with status 0
    within ``timeout`` s."""
    if memory_mib is not None:
        spec = {"memory": memory_mib, **spec}
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in spec.items())
    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "{name}-container"
players = 2
games_per_pairing = {games}
concurrency = 2
output = "out"
[tournament.time_control]
join_ms = 20000

[[bots]]
name = "random"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]

[[bots]]
name = "{name}"
image = "{tag}"
{lines}""")
    r = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress"], cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]


class TcpCanary:
    """A TCP listener of the host on ``host`` (``0.0.0.0``: every address of the host; never the
    outside), in a thread: ``peers`` are the addresses it accepted, ``address`` is ``host:port``."""

    def __init__(self, host: str = "0.0.0.0") -> None:
        self.sock = socket.create_server((host, 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.address = f"{host}:{self.port}"
        self.peers: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def accepted(self) -> int:
        """How many connections it accepted."""
        return len(self.peers)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            self.peers.append(str(peer[0]))
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def docker0_address(client: Any) -> str:
    """This machine's address on docker's default bridge (docker0): the IPAM config's ``Gateway``, which
    some dockerd versions leave out for the default bridge (Debian's 20.10 on a fresh machine: only
    ``Subnet``), and then the subnet's first host, the address dockerd gives docker0."""
    ipam = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    return str(ipam.get("Gateway") or next(ipaddress.ip_network(ipam["Subnet"]).hosts()))


def host_service(client: Any) -> TcpCanary:
    """A TCP service of the host on docker0's address (a docker network, never the outside): what a
    bot or a build must not reach; an internal bridge would reach it but for the sandbox's INPUT rule."""
    return TcpCanary(docker0_address(client))
