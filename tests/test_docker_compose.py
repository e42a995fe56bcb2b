"""compose.yaml on a real dockerd: the README's compose command, and the same file as a Swarm stack
with a referee killed mid-tournament (its games are played again on the other: nothing lost or doubled).

Images are built on the Debian node base (docker/base-image.sh), with the host's CA bundle for pip
and npm (docker/build-ca.pem, git-ignored, removed afterwards when this test put it there).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import default_signals, require
from tests.docker_helpers import DOCKER, ROOT, base_image, docker_client, removing_replaced, scratch_image

pytestmark = [pytest.mark.slow, pytest.mark.docker]
STACK = f"aftest{os.getpid()}"
#: Games of examples/compose/demo.toml: 3 pairings x 4.
DEMO_GAMES = 12


def readme_command(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {marker} -->")
    end = lines.index(f"<!-- /{marker} -->")
    body = [x for x in lines[start + 1 : end] if x.strip() and not x.startswith("```")]
    assert len(body) == 1, body
    return body[0]


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


#: The secrets' folder this test's own `docker-compose build` and `down` calls name: compose.yaml does not
#: render without ALLFOURS_SECRETS, though neither call reads a secret (the demo scripts make their own).
RENDER_SECRETS = Path(os.environ.get("TMPDIR", "/tmp")) / f"allfours-test-secrets-{os.getpid()}"


def compose(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``docker-compose ARGS`` run by the test itself (a build, a clean-up): with a secrets folder to render."""
    RENDER_SECRETS.mkdir(mode=0o700, exist_ok=True)
    for name in ("admin_token", "token_random", "token_heuristic", "token_nodejs"):
        (RENDER_SECRETS / name).write_text("unused: this test's compose calls only render the file\n")
    return run(["docker-compose", *args], {**env, "ALLFOURS_SECRETS": str(RENDER_SECRETS)}, timeout)


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    docker_client()
    require(shutil.which("docker-compose") is not None, "docker-compose is not installed (run scripts/setup.sh)")
    ca = ROOT / "docker" / "build-ca.pem"
    created = not ca.exists()
    if created:
        shutil.copyfile("/etc/ssl/certs/ca-certificates.crt", ca)
    try:
        yield {
            **os.environ,
            "ALLFOURS_BASE": base_image("node"),
            "ALLFOURS_ADMIN_TOKEN": "compose-test-token",
            "COMPOSE_PROJECT_NAME": f"allfourstest{os.getpid()}",
            **{f"ALLFOURS_TOKEN_{b}": f"compose-test-token-of-{b.lower()}" for b in ("RANDOM", "HEURISTIC", "NODEJS")},
            "PATH": f"/usr/bin:{os.environ.get('PATH', '')}",  # Debian's docker CLI first
        }
    finally:
        if created:
            ca.unlink(missing_ok=True)
        shutil.rmtree(RENDER_SECRETS, ignore_errors=True)


@pytest.fixture(autouse=True)
def _removes_the_image_its_build_replaced() -> Iterator[None]:
    """Each test that builds ``allfours:dev`` (compose, the demo scripts) removes the image the tag named
    before (:func:`tests.docker_helpers.removing_replaced`): every CI run left one dangling, ~770 MB."""
    with removing_replaced(docker_client(), "allfours:dev"):
        yield


def test_the_image_a_rebuild_replaced_is_removed_unless_in_use() -> None:
    """:func:`removing_replaced`: the image a tag named before a rebuild is removed; one a container uses, or
    another tag names, stays (not forced)."""
    import docker.errors

    client = docker_client()
    tag, other = f"allfours-test/replaced:{os.getpid()}", f"allfours-test/replaced-other:{os.getpid()}"
    made = []
    try:
        made.append(scratch_image(client, tag, "ENV N=1\n").id)
        with removing_replaced(client, tag):
            made.append(scratch_image(client, tag, "ENV N=2\n").id)
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(made[0])
        used = client.containers.create(tag, command=["none"])  # never started
        try:
            with removing_replaced(client, tag):
                made.append(scratch_image(client, tag, "ENV N=3\n").id)
            assert client.images.get(made[1]).id == made[1]  # a container uses it
        finally:
            used.remove(force=True)
        client.images.get(made[2]).tag(other)
        with removing_replaced(client, tag):
            made.append(scratch_image(client, tag, "ENV N=4\n").id)
        assert client.images.get(made[2]).id == made[2]  # another tag names it
    finally:
        for name in (tag, other, *made):
            with contextlib.suppress(docker.errors.DockerException):
                client.images.remove(name, force=True)


def games(results: Path) -> list[dict[str, Any]]:
    path = results / "games.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def stored(results: Path) -> int:
    """Games in the arena's store so far (games.jsonl is written only at the end)."""
    try:
        with sqlite3.connect(f"file:{results / 'arena.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            return int(db.execute("select count(*) from games").fetchone()[0])
    except sqlite3.Error:
        return 0


def check_demo(results: Path) -> list[dict[str, Any]]:
    """The demo's results: every game once (file and store), a leaderboard, and both referees used."""
    played = games(results)
    assert len(played) == DEMO_GAMES and len({g["game_id"] for g in played}) == DEMO_GAMES
    with sqlite3.connect(results / "arena.sqlite") as db:
        assert db.execute("select count(*), count(distinct game_id) from games").fetchone() == (DEMO_GAMES,) * 2
    assert (results / "leaderboard.html").stat().st_size > 0
    assert all(g["terminations"] == ["normal"] * 4 for g in played), played
    return played


def _compose_containers(client: Any, project: str, service: str | None = None) -> list[dict[str, Any]]:
    """The low-level list of a compose project's containers (all states), of one service if given."""
    labels = [f"com.docker.compose.project={project}"]
    if service:
        labels.append(f"com.docker.compose.service={service}")
    return list(client.api.containers(all=True, filters={"label": labels}))


def locked_down(client: Any, container_id: str) -> tuple[str, bool, list[str], int, int]:
    """What docs/deploy.md promises of a referee or bot worker container, as docker reports it: its
    user, read-only root, dropped capabilities, memory limit (bytes) and CPU quota (nano-CPUs)."""
    c = client.api.inspect_container(container_id)
    host = c["HostConfig"]
    return c["Config"]["User"], host["ReadonlyRootfs"], host["CapDrop"] or [], host["Memory"], host["NanoCpus"]


def tokens(env: dict[str, str]) -> list[str]:
    """The stack's four tokens as this test gives them to the command (which keeps given tokens)."""
    return [v for k, v in env.items() if k == "ALLFOURS_ADMIN_TOKEN" or k.startswith("ALLFOURS_TOKEN_")]


def token_environment(client: Any, container_id: str, secrets: list[str]) -> tuple[list[str], list[str]]:
    """A container's token variables (names with TOKEN) and every variable whose value holds one of
    ``secrets``, as ``docker inspect`` shows them to anyone with access to docker."""
    variables = client.api.inspect_container(container_id)["Config"]["Env"] or []
    names = [v.split("=", 1)[0] for v in variables if "TOKEN" in v.split("=", 1)[0]]
    return names, [v.split("=", 1)[0] for v in variables if any(t in v for t in secrets)]


#: Run in a container: GET each URL given (with the bearer token in the file named by $TOKEN_FILE, if
#: set) and print each answer's HTTP status, one a line.
SCRAPE = """
import os, sys, urllib.error, urllib.request
path = os.environ.get("TOKEN_FILE")
headers = {"Authorization": "Bearer " + open(path).read().strip()} if path else {}
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            print(r.status)
    except urllib.error.HTTPError as e:
        print(e.code)
"""


def _scrape_from(client: Any, container_id: str, urls: list[str], token_file: str | None = None) -> list[str]:
    """The HTTP status of a GET of each of ``urls`` made inside the container (``docker exec``)."""
    env = {"TOKEN_FILE": token_file} if token_file else {}
    ex = client.api.exec_create(container_id, ["python3", "-c", SCRAPE, *urls], environment=env)
    out = client.api.exec_start(ex["Id"]).decode()
    return out.split()


def test_readme_compose_command_outlives_a_referee_killed_mid_run(env: dict[str, str], tmp_path: Path) -> None:
    """The README's compose command with one referee container killed after the first stored games:
    the arena retires it and plays on (12 of 12 games, each once), the command exits with the
    arena's status 0, and the stack is taken down (no container or network of the project left).
    While it runs, the referees and the bot workers are as docs/deploy.md says: user 10001, a read-only
    root, every capability dropped, memory and CPU limits (the referees had kept their capabilities);
    and no container's environment holds a token (docker inspect showed all four): each reads its
    token from a secret's file, through a ``*_FILE`` variable, and every game is played (the workers'
    tokens were accepted). A bot worker that scrapes the arena's or a referee's metrics on the stack's
    network gets 401 (they say which entrants play now); the arena, holding the metrics token, 200."""
    client = docker_client()
    project = env["COMPOSE_PROJECT_NAME"]
    results = tmp_path / "results"  # not created: the command makes the results folder itself
    out = tmp_path / "compose.out"
    e = {**env, "ALLFOURS_RESULTS": str(results)}
    try:
        with out.open("w") as sink:
            proc = subprocess.Popen(["bash", "-c", f"set -euo pipefail; {readme_command('compose-command')}"],
                                    cwd=ROOT, env=e, stdout=sink, stderr=subprocess.STDOUT, text=True)
            try:
                _wait("the first stored results", lambda: stored(results) >= 2 or proc.poll() is not None, 900)
                referees = [c for c in _compose_containers(client, project, "referee") if c["State"] == "running"]
                assert len(referees) == 2, (referees, out.read_text()[-3000:])
                bots = ("random", "heuristic", "nodejs")
                workers = [c for s in bots for c in _compose_containers(client, project, s)]
                for c in referees + workers:
                    user, read_only, dropped, memory, cpus = locked_down(client, c["Id"])
                    assert (user, read_only, dropped) == ("10001:10001", True, ["ALL"]), (c["Names"], dropped)
                    assert memory > 0 and cpus > 0, (c["Names"], memory, cpus)
                arena = _compose_containers(client, project, "arena")
                assert len(arena) == 1 and len(workers) == 4, (arena, workers)
                for c in referees + workers + arena:  # the tokens are secrets: files, not the environment
                    names, exposed = token_environment(client, c["Id"], tokens(env))
                    assert exposed == [] and names and all(n.endswith("_FILE") for n in names), (c["Names"], names)
                # the metrics (which entrants play now) are the host's: a worker on the stack's network
                # that scrapes them is refused, the metrics token's holder is answered
                urls = ["http://arena:9101/metrics", "http://referee:9100/metrics"]
                assert _scrape_from(client, workers[0]["Id"], urls) == ["401", "401"]
                assert _scrape_from(client, arena[0]["Id"], urls, "/run/secrets/metrics_token") == ["200", "200"]
                victim = referees[0]
                victim_ip = next(iter(victim["NetworkSettings"]["Networks"].values()))["IPAddress"]
                client.api.kill(victim["Id"])
                code = proc.wait(timeout=600)
                # what the command left behind, before this test's own clean-up
                left = [c["Names"] for c in _compose_containers(client, project)]
                nets = client.networks.list(filters={"label": f"com.docker.compose.project={project}"})
                left += [n.name for n in nets]
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        compose(["down", "--remove-orphans", "-t", "5"], e, timeout=120)
    log = out.read_text()
    assert code == 0, log[-3000:]
    played = check_demo(results)
    used = {g["referee"] for g in played}
    assert f"{victim_ip}:50051" in used and len(used) == 2, used
    assert "taking the stack down" in log
    assert left == [], left


def test_readme_compose_command_takes_the_stack_down_on_ctrl_c(env: dict[str, str], tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) once the stack runs: the
    command exits 130 and leaves no container or network of the project."""
    client = docker_client()
    project = f"{env['COMPOSE_PROJECT_NAME']}i"
    e = {**env, "ALLFOURS_RESULTS": str(tmp_path / "results"), "COMPOSE_PROJECT_NAME": project}
    command = default_signals(["bash", "-c", f"set -euo pipefail; {readme_command('compose-command')}"])
    proc = subprocess.Popen(command, cwd=ROOT, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        # once any container of the stack runs (the referees start before the arena, so a quick demo
        # cannot end between two looks); a command that ended by itself first fails the 130 below
        _wait("the stack's containers", lambda: proc.poll() is not None or any(
            c["State"] == "running" for c in _compose_containers(client, project)), 900)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=180)
        left = [c["Names"] for c in _compose_containers(client, project)]
        left += [n.name for n in client.networks.list(filters={"label": f"com.docker.compose.project={project}"})]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        compose(["down", "--remove-orphans", "-t", "5"], e, timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "taking the stack down" in err and left == [], (left, err[-2000:])


def _stack_containers(client: Any, service: str) -> list[Any]:
    return client.containers.list(filters={"label": f"com.docker.swarm.service.name={STACK}_{service}"})


def _wait(what: str, cond: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def fresh_clone(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked and new files; nothing git ignores:
    no arena-out/, no docker/build-ca.pem, no .venv)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True, timeout=60).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_documented_swarm_steps_from_a_fresh_clone_survive_a_killed_referee(
    env: dict[str, str], tmp_path: Path
) -> None:
    """docs/deploy.md's Swarm step, verbatim (`docker/swarm-demo.sh`), in a fresh clone on a one-node
    swarm with no image registry (tokens, base image, build, the results folder, deploy, follow, tear
    down); one referee task is killed after the first stored results: the arena retires it and the
    store holds every game exactly once; the stack and its network are gone at the end. The arena's
    results folder is shown as the node's (it printed /results, its folder inside the container)."""
    client = docker_client()
    clone = fresh_clone(tmp_path / "clone")
    results = clone / "arena-out" / "compose"  # the default: made by the script (a bind mount's source)
    (step,) = [x.strip() for x in (ROOT / "docs" / "deploy.md").read_text().splitlines()
               if x.strip().startswith("bash docker/swarm-demo.sh")]
    e = {k: v for k, v in env.items() if not k.startswith("ALLFOURS_")}  # the script draws the tokens
    e["ALLFOURS_STACK"] = STACK
    out = tmp_path / "swarm.out"
    joined = client.info()["Swarm"]["LocalNodeState"] == "active"
    # the script removes docker_gwbridge only when its own swarm init made it: one left by an earlier
    # swarm on this daemon is not the script's to remove
    had_gwbridge = bool(client.networks.list(names=["docker_gwbridge"]))
    try:
        with out.open("w") as sink:
            proc = subprocess.Popen(["bash", "-c", step], cwd=clone, env=e, stdout=sink, stderr=subprocess.STDOUT)
            try:
                _wait("the first stored results", lambda: stored(results) >= 2 or proc.poll() is not None, 900)
                victims = _stack_containers(client, "referee")
                assert len(victims) == 2, (victims, out.read_text()[-3000:])
                victim = victims[0]
                victim_ip = next(iter(victim.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]
                victim.kill()
                code = proc.wait(timeout=900)
                left = client.api.containers(all=True, filters={"label": f"com.docker.stack.namespace={STACK}"})
                left += client.networks.list(filters={"label": f"com.docker.stack.namespace={STACK}"})
            finally:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(180)
    finally:
        run([DOCKER, "stack", "rm", STACK], e)
        if not joined and client.info()["Swarm"]["LocalNodeState"] == "active":
            run([DOCKER, "swarm", "leave", "--force"], e, timeout=60)
    logs = out.read_text()
    assert code == 0, logs[-3000:]
    assert "referees: dns:referee:50051 -> " in logs
    assert "retired" in logs, logs[-3000:]
    # the results folder shown is the node's, not the arena's /results inside its container
    assert f"output: {results}  (" in logs and "output: /results" not in logs, logs[-3000:]
    played = check_demo(results)
    used = {g["referee"] for g in played}
    assert f"{victim_ip}:50051" in used, used
    assert left == [], left
    assert client.info()["Swarm"]["LocalNodeState"] == ("active" if joined else "inactive")
    if not joined and not had_gwbridge:  # swarm init's bridge goes with the swarm the script made
        assert not client.networks.list(names=["docker_gwbridge"])


def test_swarm_steps_report_a_rejected_task(env: dict[str, str], tmp_path: Path) -> None:
    """`docker stack deploy` succeeds though the swarm rejects a task (here the arena's, given a bind
    mount whose source does not exist on the node by an extra compose file); the script reports the
    rejection with the swarm's error in one line, fails, and removes the stack."""
    client = docker_client()
    missing = tmp_path / "not-on-the-node"
    extra = tmp_path / "extra.yaml"
    extra.write_text(f'version: "3.8"\nservices:\n  arena:\n    volumes:\n      - {missing}:/extra\n')
    e = {k: v for k, v in env.items() if not k.startswith("ALLFOURS_")}
    e.update(ALLFOURS_STACK=f"{STACK}r", ALLFOURS_SKIP_BUILD="1", ALLFOURS_RESULTS=str(tmp_path / "results"),
             ALLFOURS_COMPOSE_FILES=str(extra))
    joined = client.info()["Swarm"]["LocalNodeState"] == "active"
    try:
        r = run(["bash", "docker/swarm-demo.sh"], e, timeout=300)
        left = client.api.containers(all=True, filters={"label": f"com.docker.stack.namespace={STACK}r"})
    finally:
        run([DOCKER, "stack", "rm", f"{STACK}r"], e)
        if not joined and client.info()["Swarm"]["LocalNodeState"] == "active":
            run([DOCKER, "swarm", "leave", "--force"], e, timeout=60)
    assert r.returncode == 1, r.stderr[-2000:]
    assert "the swarm rejected tasks of the stack" in r.stderr
    rejected = [x for x in r.stderr.splitlines() if x.startswith(f"{STACK}r_arena.")]
    assert rejected and "bind source path does not exist" in rejected[0], r.stderr[-2000:]
    assert left == []


#: The last step of docs/deploy.md's "Several machines", run on the manager (the arena's node).
SEVERAL_MACHINES_STEP = (
    "ALLFOURS_SKIP_BUILD=1 ALLFOURS_RESULTS=/srv/results ALLFOURS_COMPOSE_FILES=docker/placement.yaml "
    "bash docker/swarm-demo.sh"
)


#: Capabilities of a node container: every one this machine's daemon may give (a privileged
#: container asks for all the kernel knows, and this machine's bounding set lacks SYS_RESOURCE).
NODE_CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
             "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
             "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
             "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
             "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ"]


class SwarmNodes:
    """``n`` swarm nodes as docker-in-docker containers (docker/swarm-node-image.sh) on a bridge network
    of their own, all labelled for clean-up: not privileged (see :data:`NODE_CAPS`) but unconfined, with
    the host's cgroup tree (each node's dockerd puts its containers under ``/<name>``); node 1 also gets
    ``results`` at /srv/results (the arena's results folder, read by the test on the host)."""

    def __init__(self, client: Any, image: str, n: int, results: Path):
        self.client = client
        self.prefix = f"{STACK}-node"
        self.labels = {"org.allfours.test": self.prefix}
        self.net = client.networks.create(f"{self.prefix}s", driver="bridge", labels=self.labels)
        self.nodes: list[Any] = []
        try:
            self._start(image, n, results)
        except BaseException:
            self.close()
            raise

    def _start(self, image: str, n: int, results: Path) -> None:
        for k in range(1, n + 1):
            # the CLI: the SDK cannot say systempaths=unconfined (no masked or read-only /proc paths)
            extra = ["-v", f"{results}:/srv/results"] if k == 1 else []
            r = subprocess.run(
                [DOCKER, "run", "-d", "--name", f"{self.prefix}{k}", "--hostname", f"node{k}", "--init",
                 "--network", self.net.name, "--label", f"org.allfours.test={self.prefix}", "--tmpfs", "/run",
                 "-v", "/var/lib/docker", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", *extra,
                 *(f"--cap-add={c}" for c in NODE_CAPS),
                 *(f"--security-opt={o}=unconfined" for o in ("seccomp", "apparmor", "systempaths")),
                 image, "dockerd", "--no-new-privileges", "--cgroup-parent", f"/{self.prefix}{k}"],
                capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            self.nodes.append(self.client.containers.get(f"{self.prefix}{k}"))

    def sh(self, k: int, script: str, timeout: float = 120, stdin: bytes | None = None) -> str:
        """Run ``script`` (bash) on node ``k`` (1-based); its stdout, or fail with its output."""
        r = subprocess.run([DOCKER, "exec", "-i", self.nodes[k - 1].name, "bash", "-c", script], input=stdin,
                           capture_output=True, timeout=timeout)
        assert r.returncode == 0, f"node{k}: {script}: {r.stdout[-1500:]!r} {r.stderr[-1500:]!r}"
        return r.stdout.decode()

    def ip(self, k: int) -> str:
        self.nodes[k - 1].reload()
        return str(self.nodes[k - 1].attrs["NetworkSettings"]["Networks"][self.net.name]["IPAddress"])

    def close(self) -> None:
        """Remove the nodes (their containers die with them), their volumes, network and cgroups."""
        mine = {"label": f"org.allfours.test={self.prefix}"}
        names = [c["Id"] for c in self.client.api.containers(all=True, filters=mine)]
        if names:  # the CLI, without the SDK's 30 s limit: a node's volume holds its images (a minute or more)
            r = subprocess.run([DOCKER, "rm", "-f", "-v", *names], capture_output=True, text=True, timeout=900)
            assert r.returncode == 0, r.stderr
        self.net.remove()
        for top in Path("/sys/fs/cgroup").glob(f"*/{self.prefix}*"):  # the nodes' containers' (empty now)
            for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                d.rmdir()
            top.rmdir()


def test_three_machines_swarm_with_a_node_stopped_mid_run(env: dict[str, str], tmp_path: Path) -> None:
    """docs/deploy.md, "Several machines", step by step on three nodes (docker-in-docker containers of
    the Debian base): swarm init and join, the images loaded on each node with docker save | docker
    load (no registry), the arena's node labelled, the results folder and the repository on it, then
    `docker/swarm-demo.sh` with docker/placement.yaml: the arena on node 1, referees and bot workers on
    nodes 2 and 3. Node 3 is killed (power off) after the first stored results: every game is stored
    exactly once."""
    client = docker_client()
    assert SEVERAL_MACHINES_STEP in (ROOT / "docs" / "deploy.md").read_text()  # the docs say what this does
    r = run(["bash", "docker/swarm-node-image.sh"], env, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    node_image = r.stdout.strip().splitlines()[-1]
    r = compose(["build"], env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    results = tmp_path / "results"
    results.mkdir()
    image = tmp_path / "allfours.tar"
    subprocess.run([DOCKER, "save", "-o", str(image), "allfours:dev"], check=True, timeout=600)
    clone = fresh_clone(tmp_path / "clone")
    nodes = SwarmNodes(client, node_image, 3, results)
    out = tmp_path / "swarm.out"
    try:
        for k in (1, 2, 3):
            nodes.sh(k, "for i in $(seq 60); do docker info >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1")
        manager = nodes.ip(1)
        nodes.sh(1, f"docker swarm init --advertise-addr {manager}")
        token = nodes.sh(1, "docker swarm join-token -q worker").strip()
        for k in (2, 3):
            nodes.sh(k, f"docker swarm join --token {token} {manager}:2377")
        for k in (1, 2, 3):  # docs: docker save allfours:dev | ssh NODE docker load
            nodes.sh(k, "docker load -q", timeout=600, stdin=image.read_bytes())
        nodes.sh(1, "docker node update --label-add arena=1 node1")
        tar = subprocess.run(["tar", "-C", str(clone), "-c", "."], capture_output=True, check=True, timeout=120).stdout
        nodes.sh(1, "mkdir -p /srv/allfours && tar -C /srv/allfours -x", stdin=tar)
        with out.open("w") as sink:
            proc = subprocess.Popen(
                [DOCKER, "exec", nodes.nodes[0].name, "bash", "-c", f"cd /srv/allfours && {SEVERAL_MACHINES_STEP}"],
                stdout=sink, stderr=subprocess.STDOUT)
            try:
                _wait("the first stored results", lambda: stored(results) >= 2 or proc.poll() is not None, 900)
                placed = nodes.sh(1, "docker stack ps allfours --filter desired-state=running "
                                     "--format '{{.Name}} {{.Node}}'").split("\n")
                nodes.nodes[2].kill()  # node 3: power off
                code = proc.wait(timeout=900)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(30)
    finally:
        nodes.close()
    log = out.read_text()
    assert code == 0, log[-3000:]
    where = dict(line.split() for line in placed if line.strip())
    assert {n for t, n in where.items() if t.startswith("allfours_arena.")} == {"node1"}, where
    elsewhere = {n for t, n in where.items() if not t.startswith("allfours_arena.")}
    assert elsewhere == {"node2", "node3"}, where
    played = games(results)
    assert len(played) == DEMO_GAMES and len({g["game_id"] for g in played}) == DEMO_GAMES
    with sqlite3.connect(results / "arena.sqlite") as db:
        assert db.execute("select count(*), count(distinct game_id) from games").fetchone() == (DEMO_GAMES,) * 2
