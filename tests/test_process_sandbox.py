"""Process bots run sandboxed (bubblewrap, arena/hosting/jail.py): end to end with `arena run`.

A hostile bot (per game, and as a lobby worker) tries to read the arena's database (the unrevealed
master seed), the records and the other seats' logs, the host's home and the repository, to connect
to a canary listener this test starts on 127.0.0.1, and to leave a detached child behind. Each is
blocked and its games end normally. The same code run as a trusted bot (``sandbox = "none"``) reads
the database and reaches its own canary (so the probes work), and is named in the leaderboard's notes.
A missing ``bwrap`` is a one-line error naming the package.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CI") != "true",
                       reason="needs Debian's bubblewrap (scripts/setup.sh installs it)"),
]

HOSTILE = '''"""A hostile bot: probes what its sandbox must block (once, at import), then plays a legal action."""
import os, socket, subprocess, sys

from sdk.bot import Bot, Context


def probe(name, attempt):
    who = os.environ["PROBE_WHO"]
    try:
        print(f"PROBE {who} {name}: open {attempt()}", flush=True)
    except Exception as e:  # the sandbox's answer
        print(f"PROBE {who} {name}: blocked {type(e).__name__}", flush=True)


def home_files():
    home = os.environ["PROBE_HOME"]
    files = [n for n in os.listdir(home) if os.path.isfile(os.path.join(home, n))]
    if not files:
        raise FileNotFoundError(home)
    return files


out = os.environ["PROBE_OUTPUT"]
probe("db", lambda: len(open(os.path.join(out, "arena.sqlite"), "rb").read(100)))
probe("records", lambda: os.listdir(os.path.join(out, "records")))
probe("logs", lambda: os.listdir(os.path.join(out, "logs")))
probe("home", home_files)
probe("repository", lambda: os.listdir(os.environ["PROBE_REPO"] + "/arena"))
probe("canary", lambda: socket.create_connection(("127.0.0.1", int(os.environ["PROBE_CANARY"])), 3).close())
marker = os.environ["PROBE_MARKER"]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"PROBE {os.environ['PROBE_WHO']} child: started", flush=True)


class HostileBot(Bot):
    name = "hostile"

    def act(self, ctx: Context):
        return ctx.legal[0]
'''


class Canary:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def canaries() -> Iterator[tuple[Canary, Canary]]:
    """The canary the sandboxed bots are pointed at, and the trusted bot's (the control)."""
    pair = Canary(), Canary()
    yield pair
    for c in pair:
        c.close()


def arena_run(config: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", "run", str(config), "--no-progress",
                           "--bootstrap", "0"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def write_config(tmp: Path, bots: str) -> Path:
    config = tmp / "cup.toml"
    config.write_text(f'''
[tournament]
name = "cup"
players = 2
games_per_pairing = 2
output = "{tmp / 'out'}"
[tournament.rules]
target = 3
{bots}''')
    return config


def bot_entry(name: str, folder: Path, canary: int, marker: str, extra: str = "") -> str:
    env = (f'{{ PROBE_WHO = "{name}", PROBE_OUTPUT = "{folder.parent / "out"}", PROBE_HOME = "{Path.home()}", '
           f'PROBE_REPO = "{ROOT}", PROBE_CANARY = "{canary}", PROBE_MARKER = "{marker}" }}')
    return f'''
[[bots]]
name = "{name}"
command = ["{{python}}", "-m", "sdk.run", "hostile:HostileBot"]
cwd = "{folder}"
env = {env}
{extra}
'''


def probes(out: Path) -> dict[str, dict[str, set[str]]]:
    """Per bot, each probe's outcomes (``open`` / ``blocked`` / ``started``) over every bot log of ``out``."""
    seen: dict[str, dict[str, set[str]]] = {}
    for log in (out / "logs").rglob("*.log"):
        for line in log.read_text().splitlines():
            if line.startswith("PROBE "):
                who, name, outcome = line[len("PROBE "):].replace(":", "", 1).split(" ", 2)
                seen.setdefault(who, {}).setdefault(name, set()).add(outcome.split()[0])
    return seen


def left_behind(marker: str) -> list[int]:
    """Pids of live processes carrying ``marker`` on their command line."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and marker.encode() in (d / "cmdline").read_bytes():
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


def test_hostile_bots_are_blocked_and_a_trusted_one_is_named(tmp_path: Path, canaries: tuple[Canary, Canary]) -> None:
    jailed, control = canaries
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "hostile.py").write_text(HOSTILE)
    marker = f"allfours-left-behind-{uuid.uuid4().hex}"
    config = write_config(tmp_path, bot_entry("hostile", folder, jailed.port, marker)
                          + bot_entry("hostile-worker", folder, jailed.port, marker, 'mode = "worker"\nworkers = 1')
                          + bot_entry("trusted", folder, control.port, marker, 'sandbox = "none"'))
    done = arena_run(config)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    games = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert len(games) == 6
    for g in games:
        assert g["terminations"] == ["normal", "normal"] and g["winner"] in (0, 1), g
    seen = probes(out)
    everything = ("db", "records", "logs", "home", "repository", "canary")
    for who in ("hostile", "hostile-worker"):
        assert {name: seen[who].get(name) for name in everything} == {name: {"blocked"} for name in everything}, who
        assert seen[who]["child"] == {"started"}
    assert jailed.accepted == 0
    # the control: the same probes, unsandboxed, reach the database and their canary
    assert seen["trusted"]["db"] == {"open"} and control.accepted >= 1
    assert left_behind(marker) == []
    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["tournament"]["unsandboxed"] == ["trusted"]
    page = (out / "leaderboard.html").read_text()
    assert 'id="unsandboxed"' in page and "trusted" in page.split('id="unsandboxed"')[1].split("</p>")[0]


def test_missing_bwrap_is_one_line_naming_the_package(tmp_path: Path) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "hostile.py").write_text(HOSTILE)
    config = write_config(tmp_path, bot_entry("a", folder, 1, "m") + bot_entry("b", folder, 1, "m"))
    empty = tmp_path / "bin"
    empty.mkdir()
    done = arena_run(config, {"PATH": str(empty)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "bubblewrap" in lines[0] and "bwrap" in lines[0], done.stderr
    assert not (tmp_path / "out" / "arena.sqlite").exists()


def test_a_bwrap_that_cannot_make_namespaces_is_one_line_at_start(tmp_path: Path) -> None:
    """bwrap installed where it cannot work (a container without user namespaces, a kernel that forbids
    them): the run stops at start with one line quoting bwrap's own reason, before any game, instead of
    every bot failing to start and every game being forfeited."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "hostile.py").write_text(HOSTILE)
    config = write_config(tmp_path, bot_entry("a", folder, 1, "m") + bot_entry("b", folder, 1, "m"))
    fake = tmp_path / "bin"
    fake.mkdir()
    bwrap = fake / "bwrap"  # what Debian's bwrap says in a default docker container
    bwrap.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel "
                     "does not allow non-privileged user namespaces.' >&2\nexit 1\n")
    bwrap.chmod(0o755)
    done = arena_run(config, {"PATH": f"{fake}:{os.environ['PATH']}"})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "No permissions to create new namespace" in lines[0], done.stderr
    assert 'sandbox = "none"' in lines[0], lines[0]
    assert not (tmp_path / "out" / "arena.sqlite").exists()


def test_a_sandboxed_bot_whose_folder_holds_the_output_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "cup.toml"
    config.write_text(f'''
[tournament]
name = "cup"
players = 2
output = "{tmp_path / 'bots' / 'out'}"
[[bots]]
name = "a"
command = ["{{python}}", "-m", "sdk.run", "x:X"]
cwd = "{tmp_path / 'bots'}"
[[bots]]
name = "b"
command = ["{{python}}", "-m", "sdk.run", "x:X"]
cwd = "{tmp_path / 'bots'}"
sandbox = "none"
''')
    (tmp_path / "bots").mkdir()
    done = arena_run(config)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "bots[0].cwd" in lines[0] and "holds the output folder" in lines[0], done.stderr


def test_the_sandbox_alone_leaves_nothing_behind(tmp_path: Path) -> None:
    """Without the cgroup or the shepherd (plain ``subprocess``): a bot that starts a child, one in a
    new session and a double-forked daemon, then exits, takes all three with it (its pid namespace),
    and one killed from outside does too (``--die-with-parent`` and the namespace)."""
    from arena.hosting.jail import Jail
    from tests.test_arena_procs import NASTY, tagged, wait_for

    jail = Jail.open()
    try:
        tag = f"allfours-jail-{uuid.uuid4().hex}"
        done = subprocess.run(jail.wrap([sys.executable, "-c", NASTY, tag, "1"], str(tmp_path)), capture_output=True,
                              text=True, timeout=60)
        assert done.stdout == "started\n", done.stderr
        assert wait_for(lambda: not tagged(tag), 5.0), f"leftovers: {tagged(tag)}"
        tag = f"allfours-jail-{uuid.uuid4().hex}"
        bot = subprocess.Popen(jail.wrap([sys.executable, "-c", NASTY, tag, "300"], str(tmp_path)),
                               stdout=subprocess.DEVNULL)
        assert wait_for(lambda: len(tagged(tag)) == 3), tagged(tag)
        bot.kill()  # bwrap itself, SIGKILL: no chance to clean up
        bot.wait(10)
        assert wait_for(lambda: not tagged(tag), 5.0), f"leftovers: {tagged(tag)}"
    finally:
        jail.close()


def test_socket_folders_of_gone_arenas_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An arena killed with SIGKILL leaves its socket folder; the next one removes it (only socket
    folders of processes that are gone)."""
    import tempfile

    from arena.hosting.jail import Jail

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"allfours-{gone.stdout.strip()}-abc"
    stale.mkdir()
    socket.socket(socket.AF_UNIX).bind(str(stale / "referee.sock"))
    alive = tmp_path / f"allfours-{os.getpid()}-def"
    alive.mkdir()
    other = tmp_path / "allfours-1-xyz"  # pid 1 lives
    other.mkdir()
    jail = Jail.open()
    try:
        assert not stale.exists() and alive.exists() and other.exists()
        assert jail.sockets.parent == tmp_path and jail.sockets.name.startswith(f"allfours-{os.getpid()}-")
    finally:
        jail.close()
    assert not jail.sockets.exists()


def test_a_sandboxed_bots_tmp_is_as_small_as_its_table_says(tmp_path: Path) -> None:
    """A sandboxed bot's ``/tmp`` was a tmpfs with no size: a reviewer's bot wrote 2 GiB of the host's
    memory there (tmpfs is RAM), and a few such bots could exhaust it. It is now ``tmpfs_mb`` (16 MiB by
    default, as in a container): writing past it fails with ENOSPC inside the sandbox. Each bot also
    sees only its own socket folder (``Jail.for_bot``)."""
    from arena.hosting.jail import SOCKET_DIR, Jail

    fill = ("import errno, os\nwritten = 0\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
            "        for _ in range(64):\n            f.write(b'x' * (1 << 20)); f.flush(); written += 1\n"
            "except OSError as e:\n    print('ENOSPC' if e.errno == errno.ENOSPC else e)\n"
            f"print(written, sorted(os.listdir({SOCKET_DIR!r})))\n")
    jail = Jail.open()
    try:
        small, other = jail.for_bot("small", tmpfs_mb=4), jail.for_bot("other")
        (other.sockets / "marker").write_text("")
        out = subprocess.run(small.wrap([sys.executable, "-c", fill], str(tmp_path)), capture_output=True,
                             text=True, timeout=120)
        default = subprocess.run(other.wrap([sys.executable, "-c", fill], str(tmp_path)), capture_output=True,
                                 text=True, timeout=120)
    finally:
        jail.close()
    assert out.stdout.splitlines()[0] == "ENOSPC", out.stdout + out.stderr
    assert int(out.stdout.split()[1]) <= 4, out.stdout  # not a megabyte past its 4 MiB
    assert default.stdout.splitlines()[0] == "ENOSPC" and int(default.stdout.split()[1]) <= 16, default.stdout
    assert default.stdout.rstrip().endswith("['marker']") and out.stdout.rstrip().endswith("[]")  # own folder only


def test_a_sandboxed_bot_writes_nowhere_but_its_small_tmpfs(tmp_path: Path) -> None:
    """The 16 MiB ``/tmp`` was the only limited place a sandboxed bot could write: the empty root bwrap
    makes (``/``, ``/run``, ``/etc``) and the minimal ``/dev`` (``/dev/shm`` too) are tmpfs mounts of
    no size, the bot their owner, so a hostile bot wrote 64 MiB of the host's memory to each (and as
    much more as it liked). The root and ``/dev`` are read-only now; ``/dev/shm`` (POSIX semaphores,
    Python's ``multiprocessing`` locks) is a tmpfs of the same ``tmpfs_mb`` as ``/tmp``."""
    from arena.hosting.jail import Jail

    places = ["/f", "/run/f", "/etc/f", "/dev/f", "/dev/shm/f", "/tmp/f"]
    fill = ("import contextlib, errno, multiprocessing, os, sys\nfor path in sys.argv[1:]:\n    written = 0\n"
            "    try:\n        with open(path, 'wb') as f:\n            for _ in range(64):\n"
            "                f.write(b'x' * (1 << 20)); f.flush(); written += 1\n"
            "    except OSError as e:\n        written = errno.errorcode[e.errno]\n    print(path, written)\n"
            "    with contextlib.suppress(OSError):\n        os.unlink(path)\n"
            "multiprocessing.Lock()\nprint('lock')\n")
    jail = Jail.open()
    try:
        small = jail.for_bot("small", tmpfs_mb=4)
        out = subprocess.run(small.wrap([sys.executable, "-c", fill, *places], str(tmp_path)), capture_output=True,
                             text=True, timeout=120)
    finally:
        jail.close()
    written = dict(line.split() for line in out.stdout.splitlines() if line != "lock")
    assert {p: written.get(p) for p in places} == {
        "/f": "EROFS", "/run/f": "EROFS", "/etc/f": "EROFS", "/dev/f": "EROFS", "/dev/shm/f": "ENOSPC",
        "/tmp/f": "ENOSPC"}, out.stdout + out.stderr
    assert out.stdout.rstrip().endswith("lock"), out.stderr  # POSIX semaphores still work in /dev/shm


def play_at_four(tmp: Path, bot: str, tournament: str, target: int = 3) -> tuple[Path, list[dict[str, Any]]]:
    """``arena run`` of the bot whose ``[[bots]]`` table is ``bot`` against the random bot at a table of four,
    with the ``[tournament]`` lines ``tournament`` (``games_per_pairing`` among them) and games to ``target``
    points; the output folder and its games, every one asserted played to its end. At a target of 3 a game
    may end at its first kick (a jack scores 3, docs/rules.md, Deal) before any seat acts."""
    config = tmp / "cup.toml"
    config.write_text(f'''
[tournament]
name = "cup"
players = 4
output = "{tmp / 'out'}"
{tournament}
[tournament.rules]
target = {target}
[[bots]]
{bot}
[[bots]]
name = "random"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot"]
cwd = "{ROOT}"
''')
    done = arena_run(config)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp / "out"
    games = [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]
    assert games and all(g["terminations"] == ["normal"] * 4 for g in games), games
    return out, games


SOCKETS = '''"""Says which socket folder of the host it was given (its mount's source) for which seat of which match."""
from sdk.bot import Bot, Context, MatchInfo

FOLDER = next(line.split()[3] for line in open("/proc/self/mountinfo") if line.split()[4] == "/run/allfours")


class Sockets(Bot):
    name = "sockets"

    def on_welcome(self, info: MatchInfo):  # at the Welcome: a game may end at the kick before a seat acts
        print(f"SOCKET {info.match_id} {info.seat} {FOLDER}", flush=True)

    def act(self, ctx: Context):
        return ctx.legal[0]
'''


def test_two_processes_of_one_bot_at_once_share_no_socket(tmp_path: Path) -> None:
    """A side's two seats at four players (and a duplicate pair's two games under concurrency) are two
    processes of one bot. They dialled the same socket, the bot's, whose server counts what is held
    open on it: one process holding N silent streams left the other 128 - N before its refusal, so
    partners passed each other their hands in a few rounds. Each process now has a socket folder of its
    own (``Jail.for_process``), given up when its game ends; the games play as before."""
    folder = tmp_path / "sockets"
    folder.mkdir()
    (folder / "sockets.py").write_text(SOCKETS)
    out, games = play_at_four(tmp_path, f'''name = "sockets"
command = ["{{python}}", "-m", "sdk.run", "sockets:Sockets"]
cwd = "{folder}"''', "games_per_pairing = 4\nconcurrency = 2")
    sockets: dict[str, dict[str, str]] = {}
    for game in games:
        for log in (out / "logs" / game["game_id"]).glob("seat*.log"):
            for line in log.read_text().splitlines():
                if line.startswith("SOCKET "):
                    _, _, seat, where = line.split()
                    sockets.setdefault(game["game_id"], {})[seat] = where
    assert len(sockets) == 4, sockets
    for game_id, seen in sockets.items():
        assert len(seen) == 2 and len(set(seen.values())) == 2, (game_id, seen)  # partners: a folder each
    assert len({f for seen in sockets.values() for f in seen.values()}) == 8, sockets  # every game its own


PARTNER = '''"""A worker that, at the first move its process makes, probes its referee socket (a Hello with an unknown
ticket: answered, or refused because the socket's silent streams are all held), then holds every silent
stream that socket allows (128) until it is refused, the count its partner would read, and says so."""
import asyncio, threading

import grpc
from allfours.v1 import referee_pb2 as pb, referee_pb2_grpc as pb_grpc
from referee import wire
from sdk.bot import Bot, Context

ADDRESS = "unix:/run/allfours/referee.sock"
FOLDER = next(line.split()[3] for line in open("/proc/self/mountinfo") if line.split()[4] == "/run/allfours")
LOOP = asyncio.new_event_loop()
threading.Thread(target=LOOP.run_forever, daemon=True).start()
HELD = []
DONE = []


async def silent():
    await asyncio.Event().wait()
    yield pb.PlayRequest()


async def probe():
    hello = pb.PlayRequest(hello=pb.Hello(ticket="t-no-such", protocol_version=wire.PROTOCOL_VERSION))
    async with grpc.aio.insecure_channel(ADDRESS) as ch:
        try:
            async for _ in pb_grpc.RefereeServiceStub(ch).Play(iter([hello]), timeout=30):
                pass
            return "OK"
        except grpc.aio.AioRpcError as e:
            return e.code().name


async def signal():
    first = await probe()
    own = [("grpc.use_local_subchannel_pool", 1)]  # a connection each: 64 streams at most on one
    stubs = [pb_grpc.RefereeServiceStub(grpc.aio.insecure_channel(ADDRESS, options=own)) for _ in range(4)]
    for _ in range(600):  # until its socket's server holds 128 at once (its next stream refused), at most ~60 s:
        HELD[:] = [call for call in HELD if not call.done()]  # on a busy machine, the first may time out first
        HELD.extend(stubs[k % 4].Play(silent(), timeout=60) for k in range(128 - len(HELD)))
        if await probe() == "RESOURCE_EXHAUSTED":
            return first, "held"
        await asyncio.sleep(0.1)
    return first, "not-held"


class Partner(Bot):
    name = "partner"

    def act(self, ctx: Context):
        if not DONE:
            DONE.append(ctx.match_id)
            try:
                first, held = asyncio.run_coroutine_threadsafe(signal(), LOOP).result(60)
            except Exception as e:  # said, so that a failing test shows why
                first, held = "error", repr(e).replace(" ", "_")
            print(f"SIGNAL {ctx.match_id} {ctx.seat} {first} {held} {FOLDER}", flush=True)
        return ctx.legal[0]
'''


JACK_KICKED = "0c" * 32  # its first pair's first deal kicks the jack of spades: 3 points to the dealer's side


def test_two_workers_of_one_bot_seated_as_partners_share_no_socket(tmp_path: Path) -> None:
    """A bot's lobby workers (``mode = "worker"``) shared their bot's one socket pair (``Jail.for_bot``),
    so two of them seated as partners at four players could pass each other bits through the counts its
    servers keep: one holding the 128 silent streams the referee socket allows made its partner's next
    stream refused (7 bits a round, their hands in a few). Each worker process now has a socket folder of
    its own (``Jail.for_process``, given up when it ends): the second partner's probe is answered
    (``unknown ticket``) while the first holds its whole allowance, and their folders differ. The games go
    to 4 points, which no kick reaches alone, so both partners act in the first game on any deal: at 3, a
    duplicate pair whose deal kicked a jack (1 master seed in 13, ``JACK_KICKED`` one) ended both its games
    at the kick, before either partner acted, and no worker said anything."""
    folder = tmp_path / "partner"
    folder.mkdir()
    (folder / "partner.py").write_text(PARTNER)
    out, _ = play_at_four(tmp_path, f'''name = "partner"
command = ["{{python}}", "-m", "sdk.run", "partner:Partner"]
cwd = "{folder}"
mode = "worker"
workers = 2''', f"games_per_pairing = 2\nmaster_seed = \"{JACK_KICKED}\"\n"
                          "[tournament.time_control]\ndecision_ms = 60000", target=4)
    signals = [line.split()[1:] for log in (out / "logs" / "workers" / "partner").glob("worker*.log")
               for line in log.read_text().splitlines() if line.startswith("SIGNAL ")]
    assert len(signals) == 2, signals  # each worker's first move, in the first game both play
    assert signals[0][0] == signals[1][0] and signals[0][1] != signals[1][1], signals  # partners in one game
    # neither's probe is refused, though its partner held all 128 silent streams of its socket before it
    assert [(first, held) for _, _, first, held, _ in signals] == [("UNAUTHENTICATED", "held")] * 2, signals
    assert signals[0][4] != signals[1][4], signals  # a socket folder each


def test_a_workers_socket_folder_is_its_own_and_goes_with_it(tmp_path: Path) -> None:
    """Each lobby worker process of a sandboxed bot has a socket folder of its own (``Jail.for_process``),
    served while it runs: a worker that exits gives its folder up (unlistened, removed) and its restart
    gets a new one, so a pool holds at most one folder a worker, and none once it is stopped. Before,
    a bot's workers shared one folder, the bot's, kept for the whole run."""
    from arena.config import BotSpec
    from arena.hosting.jail import Jail
    from arena.hosting.workers.kind import WorkerContext
    from arena.hosting.workers.local import MAX_DEATHS, LocalWorkers
    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook

    def worker(name: str, code: str, size: int) -> LocalWorkers:
        return LocalWorkers(BotSpec(name, "1", (sys.executable, "-c", code), cwd=str(tmp_path), mode="worker"), size)

    jail = Jail.open()
    listened: list[Path] = []
    unlistened: list[Path] = []
    jail.on_bot_folder(listened.append, "t", unlistened.append)
    loop = asyncio.new_event_loop()  # the lobby's, never run: its workers here never dial it
    ctx = WorkerContext(Lobby("t", TokenBook(), loop=loop), tmp_path / "logs", str(tmp_path), (), (), lambda: None,
                        jail=jail)
    dying, living = worker("dying", "raise SystemExit(3)", 1), worker("living", "import time; time.sleep(600)", 2)
    try:
        living.start(ctx)
        dying.start(ctx)
        for _ in range(1200):  # its three starts, 0.5 s and 1 s apart; at most 120 s on a busy machine
            if dying.broken:
                break
            time.sleep(0.1)
        assert dying.broken, "the dying worker was not restarted until broken"
        running = sorted(p for p in jail.sockets.iterdir())
        assert len(listened) == 2 + MAX_DEATHS and len(set(listened)) == len(listened), listened
        assert sorted(unlistened) == sorted(set(listened) - set(running)) and len(running) == 2, (unlistened, running)
        assert len(living.pids()) == 2
        living.stop()
        assert sorted(unlistened) == sorted(listened) and list(jail.sockets.iterdir()) == []
    finally:
        living.stop()
        dying.stop()
        jail.close()
        loop.close()


def test_a_worker_whose_sockets_cannot_be_made_is_a_death_not_the_pools_end(tmp_path: Path) -> None:
    """A worker's restart makes a socket folder and binds two servers (``Jail.for_process``); when that
    fails (a bind refused, ``/tmp`` cleaned under a long run) the restart is one more death of the
    bot, said and counted until it is broken, and the half-made folder's servers are stopped and the
    folder removed. Before, the error ended the pool's watcher thread: nothing restarted, the bot was
    never declared broken, and the folder stayed."""
    from arena.config import BotSpec
    from arena.hosting.jail import Jail
    from arena.hosting.workers.kind import WorkerContext
    from arena.hosting.workers.local import LocalWorkers
    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook

    jail = Jail.open()
    bound: list[Path] = []
    unlistened: list[Path] = []

    def listen(folder: Path) -> None:
        bound.append(folder)
        if len(bound) > 1:
            raise RuntimeError(f"could not bind unix:{folder}/lobby.sock")

    jail.on_bot_folder(listen, "t", unlistened.append)
    loop = asyncio.new_event_loop()  # the lobby's, never run: its worker never dials it
    events: list[str] = []
    ctx = WorkerContext(Lobby("t", TokenBook(), loop=loop), tmp_path / "logs", str(tmp_path), (), (),
                        lambda: None, jail=jail, on_event=events.append)
    pool = LocalWorkers(BotSpec("dying", "1", (sys.executable, "-c", "raise SystemExit(3)"), cwd=str(tmp_path),
                                mode="worker"), 1)
    try:
        pool.start(ctx)
        for _ in range(1200):  # three deaths, 0.5 s and 1 s apart; at most 120 s on a busy machine
            if pool.broken:
                break
            time.sleep(0.1)
        assert pool.broken and "could not get its sockets" in pool.broken, (pool.broken, events)
        assert len(bound) >= 2 and sorted(unlistened) == sorted(bound), (bound, unlistened)
        assert list(jail.sockets.iterdir()) == [], "a half-made socket folder was left"
    finally:
        pool.stop()
        jail.close()
        loop.close()


def test_a_socket_folders_name_tells_a_bot_nothing_and_every_server_there_stops(tmp_path: Path) -> None:
    """A bot reads its socket folder's host path in ``/proc/self/mountinfo``. Named from the bot's name
    and a run-wide count of processes, it told a bot how many processes of every bot the run had
    started (another bot's restarts, a signal); now the name is random. And giving a folder up stops
    every server there though one fails to stop, and removes the folder: the first failure stopped
    the rest, and left the folder."""
    import hashlib

    from arena.hosting.jail import Jail

    jail = Jail.open()
    stopped: list[str] = []

    def failing(folder: Path) -> None:
        stopped.append("first")
        raise RuntimeError("the first server would not stop")

    jail.on_bot_folder(lambda folder: None, "a", failing)
    jail.on_bot_folder(lambda folder: None, "b", lambda folder: stopped.append("second"))
    try:
        sandboxes = [jail.for_process("bot") for _ in range(4)]
        guesses = {hashlib.sha256(f"bot\0{n}".encode()).hexdigest()[:16] for n in range(1000)}
        guesses.add(hashlib.sha256(b"bot").hexdigest()[:16])
        assert not {s.sockets.name for s in sandboxes} & guesses, "a folder's name is made of the bot's name"
        with pytest.raises(RuntimeError, match="would not stop"):
            jail.release(sandboxes[0])
        assert stopped == ["first", "second"] and not sandboxes[0].sockets.exists(), stopped
    finally:
        jail.close()


def test_a_sandboxed_bot_sees_a_fixed_view_of_the_hosts_counters(tmp_path: Path) -> None:
    """``--proc /proc`` gave a bot its own processes but the whole host's counters: free memory, the
    load, every CPU's time, open files (``/proc/meminfo``, ``loadavg``, ``stat``, ``/proc/sys/fs/file-nr``…).
    Partners at a table of four are two processes of one bot, so one could hold memory or spin threads
    and the other read its hidden hand off them. Now each of those files is a read-only file of a fixed
    view (arena/hosting/procview.py): a bot reads it twice, the host busy in between (memory held, a
    thread spinning, files open), and reads the same text both times, the view's, not the host's;
    Python's ``os.cpu_count`` still answers (the view's CPUs: no ``/sys`` in the sandbox)."""
    from arena.hosting.jail import Jail
    from tests.proc_helpers import NAMES, READER, host_load, host_text

    jail = Jail.open()
    try:
        bot = jail.for_process("signaller")
        reader = subprocess.Popen(bot.wrap([sys.executable, "-c", READER, "--twice", *NAMES], str(tmp_path)),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert reader.stdin is not None and reader.stdout is not None
        first = json.loads(reader.stdout.readline() or "{}")
        with host_load():
            reader.stdin.write("again\n")
            reader.stdin.flush()
            second = json.loads(reader.stdout.readline() or "{}")
            host = host_text()
        _, err = reader.communicate(timeout=60)
        cpus = subprocess.run(bot.wrap([sys.executable, "-c", "import os; print(os.cpu_count())"], str(tmp_path)),
                              capture_output=True, text=True, timeout=120)
    finally:
        jail.close()
    assert set(first) == set(NAMES), err
    moved = {name for name in NAMES if first[name] != second[name]}
    assert not moved, f"these moved with the host's load: {sorted(moved)}"

    from arena.hosting.procview import HOST_WIDE, content, cpu_count
    from arena.hosting.sandbox import Limits

    assert NAMES == HOST_WIDE  # the test reads every file of the view

    shown = cpu_count(Limits())
    for name in NAMES:
        if name in host:  # on this kernel: the view's text (empty where no runtime reads it), not the host's
            assert first[name] == content(name, shown, Limits().memory_mb), name
        else:  # absent from this kernel (schedstat without CONFIG_SCHEDSTATS): absent in the sandbox too
            assert first[name].startswith("error "), (name, first[name])
    assert host["meminfo"] != first["meminfo"]
    assert first["meminfo"].split()[:3] == ["MemTotal:", str(Limits().memory_mb * 1024), "kB"], first["meminfo"]
    assert cpus.returncode == 0 and cpus.stdout.strip() == str(shown), cpus.stdout + cpus.stderr


def test_the_proc_view_is_private_made_once_and_gone_at_exit(tmp_path: Path) -> None:
    """The view's files (arena/hosting/procview.py) are in a folder of the arena's own (0700, files 0444:
    the container's user reads them through the bind), written once per (CPUs, memory) pair, removed when
    the arena exits; a killed arena's folder goes at the next start (as the build folders)."""
    probe = (
        "import json, os, stat, sys\n"
        "from arena.hosting.procview import view\n"
        "from arena.hosting.sandbox import Limits\n"
        "a, b = view(Limits(cpus=2.5, memory_mb=300)), view(Limits(cpus=2.5, memory_mb=300))\n"
        "folder = next(iter(a.files.values())).parents[1]\n"
        "modes = {n: oct(stat.S_IMODE(f.stat().st_mode)) for n, f in a.files.items()}\n"
        "print(json.dumps([str(folder), oct(stat.S_IMODE(folder.stat().st_mode)), a is b, a.cpus, modes,\n"
        "                  a.files['stat'].read_text(), os.path.exists(sys.argv[1])]))\n"
    )
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"allfours-procview-{dead.pid}-x"
    (stale / "cpus1-mem256").mkdir(parents=True)
    (stale / "cpus1-mem256" / "meminfo").write_text("old")
    done = subprocess.run([sys.executable, "-c", probe, str(stale)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    folder, mode, same, cpus, modes, stat_text, stale_left = json.loads(done.stdout)
    assert Path(folder).parent == tmp_path and mode == "0o700" and same and not stale_left
    assert set(modes.values()) == {"0o444"} and "meminfo" in modes and "loadavg" in modes, modes
    assert cpus == min(3, len(os.sched_getaffinity(0)))
    assert [line.split()[0] for line in stat_text.splitlines()][:cpus + 1] == ["cpu", *(f"cpu{i}" for i in range(cpus))]
    assert not Path(folder).exists()  # gone with its arena


def test_release_gives_up_a_process_s_folder_and_nothing_else() -> None:
    """``Jail.release``: a per-game process's socket folder is unlistened and removed, once; a bot's own
    folder (``for_bot``) and a folder released already are left alone."""
    from arena.hosting.jail import Jail

    jail = Jail.open()
    try:
        listened: list[Path] = []
        unlistened: list[Path] = []
        jail.on_bot_folder(listened.append, "t", unlistened.append)
        bot = jail.for_bot("b")
        first, second = jail.for_process("b"), jail.for_process("b")
        assert len({bot.sockets, first.sockets, second.sockets}) == 3
        assert listened == [bot.sockets, first.sockets, second.sockets]
        jail.release(first)
        jail.release(first)
        jail.release(bot)
        assert unlistened == [first.sockets]
        assert not first.sockets.exists() and second.sockets.is_dir() and bot.sockets.is_dir()
        jail.release(second)
        assert unlistened == [first.sockets, second.sockets] and not second.sockets.exists()
        assert jail.for_bot("b").sockets == bot.sockets  # the bot's own folder is still its own
    finally:
        jail.close()


LOCKS_READER = '''import sys
def read():
    with open("/proc/locks") as f:
        return f.read()
print(repr(read()), flush=True)
sys.stdin.readline()
print(repr(read()), flush=True)
'''


def test_a_file_lock_is_not_seen_in_a_sandbox(tmp_path: Path) -> None:
    """``/proc/locks`` lists the whole host's file locks, and an open file description's lock (``F_OFD_SETLK``)
    has no process, so no pid namespace hides it: a partner (another process of the same bot, in a sandbox of
    its own) that locked a file in its own ``/tmp`` added a line to the other's ``/proc/locks``, a channel with
    no noise from anything else. The view shows it empty (arena/hosting/procview.py). A sandboxed bot now may
    take no lock at all (the seccomp filter, tests/test_process_sandbox_counts.py), so the lock here is taken
    outside, by this test, as any process of the host may."""
    import fcntl
    import struct

    from arena.hosting.jail import Jail

    jail = Jail.open()
    try:
        reader = subprocess.Popen(jail.for_process("reader").wrap([sys.executable, "-c", LOCKS_READER], str(tmp_path)),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert reader.stdin is not None and reader.stdout is not None
        before = reader.stdout.readline()
        with open(tmp_path / "held", "w") as held:
            fcntl.fcntl(held, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0) + bytes(4))
            assert str((tmp_path / "held").stat().st_ino) in Path("/proc/locks").read_text()  # the host sees it
            reader.stdin.write("again\n")
            reader.stdin.flush()
            after = reader.stdout.readline()
        _, err = reader.communicate(timeout=60)
    finally:
        jail.close()
    assert before and before == after, (before, after, err)


KEY_ADDER = '''import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key = {"x86_64": 248, "aarch64": 217}[os.uname().machine]
hand = b"7H JS QD " * 63  # 504 bytes a key: 10 keys would move the partner's byte count by over 5,000
made = [libc.syscall(add_key, b"user", f"hand{i}".encode(), hand, len(hand), -2) for i in range(10)]  # process keyring
print(sum(k > 0 for k in made), os.strerror(ctypes.get_errno()), flush=True)
sys.stdin.readline()
'''

KEY_USERS_READER = '''import sys
def read():
    try:
        with open("/proc/key-users") as f:
            return f.read()
    except OSError as e:
        return type(e).__name__
print(repr(read()), flush=True)
sys.stdin.readline()
print(repr(read()), flush=True)
'''


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="the keyring filter's architectures")
def test_a_bot_cannot_use_the_kernel_keyring_its_partner_sees(tmp_path: Path) -> None:
    """Kernel keys are counted per user of the host, and every process sandbox runs as the arena's user:
    a bot that added keys to its process keyring moved its partner's ``/proc/key-users`` (its own
    sandbox's process, another bot's) by their count and bytes, and their descriptions (any text) showed
    in ``/proc/keys``. bwrap's seccomp filter now refuses ``add_key``, ``keyctl`` and ``request_key``
    (EPERM), as docker's default profile does in containers (arena/hosting/seccomp.py)."""
    from arena.hosting.jail import Jail

    jail = Jail.open()
    try:
        def start(script: str) -> subprocess.Popen[str]:
            return subprocess.Popen(jail.for_process("signaller").wrap([sys.executable, "-c", script], str(tmp_path)),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        reader = start(KEY_USERS_READER)
        assert reader.stdin is not None and reader.stdout is not None
        before = reader.stdout.readline()
        adder = start(KEY_ADDER)
        added, _ = adder.communicate("done\n", timeout=60)
        reader.stdin.write("again\n")
        reader.stdin.flush()
        after = reader.stdout.readline()
        _, err = reader.communicate(timeout=60)
    finally:
        jail.close()
    assert added == "0 Operation not permitted\n", added
    assert key_bytes(after) - key_bytes(before) < 5_000, (before, after, err)


def key_bytes(key_users: str) -> int:
    """The bytes of keys the sandbox's user holds, from a ``repr`` of ``/proc/key-users`` as KEY_USERS_READER
    prints it: one line ``uid: usage nkeys/nikeys qnkeys/maxkeys qnbytes/maxbytes`` (the arena's user, seen
    as 65534 inside the sandbox). Other processes of that user on the host (docker's containers, each with
    its session keyring, when the arena runs as root) move it by tens of bytes while the test runs, so the
    test bounds the change below the 5,000 bytes the adder would add (within a user's 20,000-byte quota
    when the arena is not root) rather than asking for none."""
    text = ast.literal_eval(key_users.strip())
    (line,) = text.splitlines()
    return int(line.split()[-1].split("/")[0])


WATCHER = '''import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
print(fd, os.strerror(ctypes.get_errno()), flush=True)
if fd >= 0:
    for path in (b"/proc/meminfo", b"/etc/ld.so.cache"):
        libc.inotify_add_watch(fd, path, 0x1 | 0x20)  # IN_ACCESS | IN_OPEN
    print("watching", flush=True)
    sys.stdin.readline()
    try:
        print(len(os.read(fd, 4096)), "bytes of events", flush=True)
    except BlockingIOError:
        print("no events", flush=True)
'''


def test_a_bot_cannot_watch_the_files_its_partner_reads(tmp_path: Path) -> None:
    """A file watch (inotify) sees every open and read of a file through any mount of it, and the
    sandboxes share ``/usr``, the linker's cache and the ``/proc`` view's files: a bot watching a file
    no one else reads (a ``/usr/share/zoneinfo`` file; here the view's ``meminfo``) saw its partner
    (its own process in another sandbox) open and read it, a channel with no noise. bwrap's seccomp
    filter refuses ``inotify_init1`` and the other watch calls (EPERM)."""
    from arena.hosting.jail import Jail

    jail = Jail.open()
    try:
        watcher = subprocess.Popen(jail.for_process("signaller").wrap([sys.executable, "-c", WATCHER], str(tmp_path)),
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert watcher.stdout is not None
        first = watcher.stdout.readline()
        reading = "open('/proc/meminfo').read()"
        subprocess.run(jail.for_process("signaller").wrap([sys.executable, "-c", reading], str(tmp_path)),
                       capture_output=True, timeout=60, check=True)
        out, err = watcher.communicate("go\n", timeout=60)
    finally:
        jail.close()
    assert first == "-1 Operation not permitted\n", (first, out, err)
