"""Bot processes' CPU, memory and pids limits (arena/hosting/procs.py, "Limits"): real processes in real cgroups.

A bot that spins past its CPU quota is throttled by the kernel (its cgroup's ``nr_throttled``); a bot
that starts 2000 threads, or forks 1000 processes, gets no further than its pids limit; one that
allocates past its memory limit is killed by the kernel (its cgroup's ``oom_kill`` count, SIGKILL); a
sandboxed bot filling its ``/tmp`` (tmpfs: memory) is stopped at its memory limit too; the limits
given reach the bot's cgroup files; and in a tournament (``arena run``) a process bot past its
``memory`` forfeits with ``oom`` while one that forks until its ``pids`` refuses says how far it got.

They run wherever the arena can write cgroup v2 (as root: CI, a hybrid host whose ``memory`` and
``pids`` controllers are cgroup v1 hierarchies included) and skip, saying why, only where it cannot:
there bots run under the subreaper, which sets no limits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from arena.hosting import procs
from arena.hosting.procs import PROCESS_LIMITS, BotProcess, Containment
from tests.test_arena_procs import wait_for

if TYPE_CHECKING:
    from arena.hosting.jail import Jail

ROOT = Path(__file__).resolve().parent.parent

#: Starts ``argv[1]`` threads (small stacks; each waits) and says how many it could.
THREADS = r"""
import sys, threading
threading.stack_size(64 * 1024)
stop = threading.Event()
started = 0
try:
    for _ in range(int(sys.argv[1])):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError as e:
    print(f"refused after {started} threads: {e}", flush=True)
else:
    print(f"started {started} threads", flush=True)
stop.set()
"""

#: Forks ``argv[1]`` children (each sleeps) and says how many it could.
FORKS = r"""
import os, sys, time
made = 0
try:
    for _ in range(int(sys.argv[1])):
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
        made += 1
except OSError as e:
    print(f"refused after {made} forks: {os.strerror(e.errno)}", flush=True)
else:
    print(f"made {made} forks", flush=True)
"""

#: Allocates (and touches) 16 MiB blocks, ``argv[1]`` of them, saying so after each.
HOG = r"""
import sys
hoard = []
for _ in range(int(sys.argv[1])):
    hoard.append(b"x" * (16 << 20))
    print(f"holding {16 * len(hoard)} MiB", flush=True)
print("allocated it all", flush=True)
"""

#: Writes ``argv[1]`` MiB to ``/tmp/fill`` (the sandbox's tmpfs).
FILL_TMP = r"""
import sys
with open("/tmp/fill", "wb") as f:
    for k in range(int(sys.argv[1])):
        f.write(b"x" * (1 << 20))
        f.flush()
print(f"wrote {sys.argv[1]} MiB to /tmp", flush=True)
"""


@pytest.fixture(autouse=True)
def writable_cgroups() -> None:
    if procs.containment()[0] is not Containment.CGROUP:
        pytest.skip("cgroup v2 is not writable here: bots run under the subreaper, which sets no limits")


@pytest.fixture
def jail() -> Iterator[Jail]:
    from arena.hosting.jail import Jail, JailError

    try:
        j = Jail.open()
    except JailError as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no sandbox here: {e}")
    yield j
    j.close()


def start(tmp_path: Path, *argv: str, **limits: float) -> BotProcess:
    """``argv`` as a bot process with :data:`PROCESS_LIMITS` but for ``limits`` (``cpus``, ``memory_mb``, ``pids``)."""
    return BotProcess.start(list(argv), cwd=str(tmp_path), env=dict(os.environ), log_path=tmp_path / "bot.log",
                            log_limit=1 << 20, limits=replace(PROCESS_LIMITS, **limits))


def ended(p: BotProcess, timeout: float = 120) -> tuple[int | None, str]:
    """Wait for the bot to exit on its own, then end what it left; its exit status and its log."""
    p.wait(timeout)
    return p.stop(exit_wait_s=0), p.pump.path.read_text()


def first_number(line: str) -> int:
    return next(int(w) for w in line.split() if w.isdigit())


def cpu_quota_us(cgroup: Path) -> tuple[int, int]:
    """A cgroup's CPU quota and period, microseconds (cgroup v2's ``cpu.max`` or v1's files)."""
    if (cgroup / "cpu.max").exists():
        quota, period = (cgroup / "cpu.max").read_text().split()
        return int(quota), int(period)
    return int((cgroup / "cpu.cfs_quota_us").read_text()), int((cgroup / "cpu.cfs_period_us").read_text())


def check_limits(tmp_path: Path, cores: float, mib: int, tasks: int, **given: float) -> None:
    """A bot started with ``given`` has ``cores`` of CPU quota, ``mib`` MiB (no swap beyond it) and
    ``tasks`` pids in its cgroups (cgroup v2's files or a hybrid host's v1 ones), and they go with it."""
    p = start(tmp_path, sys.executable, "-c", "import time; time.sleep(300)", **given)
    try:
        assert set(p.limit_cgroups) == {"cpu", "memory", "pids"}, "a bot process without its limits"
        assert cpu_quota_us(p.limit_cgroups["cpu"]) == (round(cores * 100_000), 100_000)
        memory = p.limit_cgroups["memory"]
        if (memory / "memory.max").exists():
            assert (memory / "memory.max").read_text().strip() == str(mib << 20)
            swap = memory / "memory.swap.max"
            assert not swap.exists() or swap.read_text().strip() == "0"
        else:
            assert (memory / "memory.limit_in_bytes").read_text().strip() == str(mib << 20)
            memsw = memory / "memory.memsw.limit_in_bytes"
            assert not memsw.exists() or memsw.read_text().strip() == str(mib << 20)
        assert (p.limit_cgroups["pids"] / "pids.max").read_text().strip() == str(tasks)
        main = p.cgroup
        assert main is not None
        assert wait_for(lambda: p.pid in procs._procs(main)), "never in its cgroup"  # the one it joins last
        for cgroup in p.limit_cgroups.values():
            assert p.pid in procs._procs(cgroup), cgroup
    finally:
        assert p.stop(exit_wait_s=0) == -signal.SIGTERM
    assert not any(c.exists() for c in (p.cgroup, *p.limit_cgroups.values()) if c is not None)
    assert not p.oom_killed and not p.pids_limited and p.cpu_throttled == 0


def test_the_limits_given_are_in_the_bot_cgroup(tmp_path: Path) -> None:
    check_limits(tmp_path, 0.3, 300, 77, cpus=0.3, memory_mb=300, pids=77)


def test_by_default_a_bot_gets_the_default_limits(tmp_path: Path) -> None:
    check_limits(tmp_path, procs.CPUS, procs.MEMORY_MB, procs.PIDS)


#: Two processes (the bot and a child) each spin until they have used ``argv[1]`` ms of CPU.
SPIN = r"""
import os, sys, time
child = os.fork()
while time.process_time() < int(sys.argv[1]) / 1000:
    pass
print(f"{os.getpid()} spun", flush=True)
if child:
    os.waitpid(child, 0)
"""


def test_a_bot_spinning_past_its_cpu_quota_is_throttled(tmp_path: Path) -> None:
    """0.05 cores is 5 ms of CPU a 100 ms period: two processes wanting 60 ms each are held back by the
    kernel (``nr_throttled``), then finish; a bot that sleeps is never held back (check_limits)."""
    p = start(tmp_path, sys.executable, "-c", SPIN, "60", cpus=0.05)
    code, out = ended(p)
    assert code == 0 and out.count("spun") == 2, out
    assert p.cpu_throttled > 0


def test_two_thousand_threads_stop_at_the_default_pids_limit(tmp_path: Path) -> None:
    p = start(tmp_path, sys.executable, "-c", THREADS, "2000")
    code, log = ended(p)
    assert code == 0, log
    assert log.startswith("refused after "), log
    started = first_number(log)
    assert procs.PIDS // 2 < started < procs.PIDS, log  # its main thread is one of the limit's tasks
    assert p.pids_limited


def test_a_thousand_forks_stop_at_a_configured_pids_limit(tmp_path: Path) -> None:
    p = start(tmp_path, sys.executable, "-c", FORKS, "1000", pids=40)
    code, log = ended(p)
    assert code == 0, log
    assert log.startswith("refused after ") and "Resource temporarily unavailable" in log, log
    assert 20 < first_number(log) < 40, log
    assert p.pids_limited and not p.oom_killed


def test_a_bot_past_its_memory_limit_is_killed(tmp_path: Path) -> None:
    p = start(tmp_path, sys.executable, "-c", HOG, "64", memory_mb=64)  # up to 1 GiB
    code, log = ended(p)
    assert code == -signal.SIGKILL, (code, log)
    assert "allocated it all" not in log
    held = [first_number(line) for line in log.splitlines() if line.startswith("holding ")]
    assert held and max(held) <= 64, log
    assert p.oom_killed  # its cgroup's oom_kill count, read before the cgroup was removed
    assert not p.pids_limited


def test_the_same_bot_under_its_limit_is_not_killed(tmp_path: Path) -> None:
    """The control of the test above: 256 MiB of the default 1024 are allowed."""
    p = start(tmp_path, sys.executable, "-c", HOG, "16")
    code, log = ended(p)
    assert code == 0 and log.endswith("allocated it all\n"), log
    assert not p.oom_killed


def test_a_sandboxed_bot_filling_its_tmp_stops_at_its_memory_limit(tmp_path: Path, jail: Jail) -> None:
    """The sandbox's ``/tmp`` is a tmpfs: what a bot writes there is memory in its cgroup, so even with a
    ``/tmp`` larger than its memory (``tmpfs_mb`` 1024; 16 MiB by default) writing 512 MiB with a 64 MiB
    limit gets it killed (the reviewer's bot wrote 2 GiB and 600 threads)."""
    p = BotProcess.start([sys.executable, "-c", FILL_TMP, "512"], cwd=str(tmp_path), env=dict(os.environ),
                         log_path=tmp_path / "bot.log", log_limit=1 << 20, jail=jail.for_bot("filler", tmpfs_mb=1024),
                         limits=replace(PROCESS_LIMITS, memory_mb=64))
    code, log = ended(p)
    assert "wrote 512 MiB" not in log, (code, log)
    assert p.oom_killed, (code, log)


def test_a_sandboxed_thread_bomb_stops_at_its_pids_limit(tmp_path: Path, jail: Jail) -> None:
    p = BotProcess.start([sys.executable, "-c", THREADS, "2000"], cwd=str(tmp_path), env=dict(os.environ),
                         log_path=tmp_path / "bot.log", log_limit=1 << 20, jail=jail,
                         limits=replace(PROCESS_LIMITS, pids=64))
    code, log = ended(p)
    assert log.startswith("refused after "), (code, log)
    assert 32 < first_number(log) < 64 - 2, log  # bwrap's two processes are in its cgroup too
    assert p.pids_limited


#: An arena process in its own cgroup (``argv[1]``): starts a bot twice, says what limits it got.
ARENA_IN = r"""
import os, sys
from pathlib import Path
from arena.hosting import procs
from arena.hosting.procs import BotProcess
for _ in range(2):
    p = BotProcess.start([sys.executable, "-c", "print(42)"], cwd="/tmp", env=dict(os.environ),
                         log_path=Path(sys.argv[1]), log_limit=1000)
    print("bot", p.wait(60), p.stop(0), Path(sys.argv[1]).read_text().strip(), sorted(p.limit_cgroups), flush=True)
print("arena in", procs._own_cgroup_dir(), flush=True)
"""


@pytest.fixture
def v2_cgroup() -> Iterator[Path]:
    """A cgroup v2 folder of this test (whose parent gives it ``cpu``, ``memory`` and ``pids``), removed after."""
    base = procs.containment()[1]
    places = procs.limit_places()
    if base is None or any(places.get(c) != base for c in procs.CONTROLLERS):
        pytest.skip("cgroup v2 here does not give its cgroups cpu, memory and pids (a hybrid host: they are cgroup v1 "
                    "hierarchies, which the other tests use)")
    made = base / f"allfours-{os.getpid()}-test-{uuid.uuid4().hex[:8]}"
    made.mkdir()
    yield made
    for cgroup in sorted(made.glob("*/"), reverse=True):
        procs._remove_cgroup(cgroup)
    procs._remove_cgroup(made)


def run_arena_in(cgroup: Path, tmp_path: Path) -> list[str]:
    """:data:`ARENA_IN` run as a process of ``cgroup``; its output lines."""
    done = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cgroup), sys.executable,
                           "-c", ARENA_IN, str(tmp_path / "bot.log")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def test_an_arena_alone_in_its_cgroup_moves_down_to_give_its_bots_limits(v2_cgroup: Path, tmp_path: Path) -> None:
    """cgroup v2 gives controllers only from a cgroup without processes: the arena moves itself to its
    leaf ``allfours-<pid>-arena``, enables ``cpu``, ``memory`` and ``pids``, and its bots get them."""
    lines = run_arena_in(v2_cgroup, tmp_path)
    assert lines[:2] == ["bot 0 0 42 ['cpu', 'memory', 'pids']"] * 2, lines
    assert lines[-1].startswith(f"arena in {v2_cgroup}/allfours-") and lines[-1].endswith("-arena"), lines
    assert procs._words(v2_cgroup / "cgroup.subtree_control") >= {"cpu", "memory", "pids"}


def test_an_arena_sharing_its_cgroup_sets_no_limits_says_so_once_and_its_bots_run(
    v2_cgroup: Path, tmp_path: Path
) -> None:
    """Another program's process in the arena's cgroup: it is not the arena's to move, so no controller
    is enabled (``pids`` alone would make the cgroup a thread root where no bot could start)."""
    other = subprocess.Popen(["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec sleep 300', str(v2_cgroup)])
    try:
        assert wait_for(lambda: other.pid in procs._procs(v2_cgroup))
        lines = run_arena_in(v2_cgroup, tmp_path)
    finally:
        other.kill()
        other.wait()
    warnings = [line for line in lines if "bot_limits_unavailable" in line]
    assert len(warnings) == 1 and "memory" in warnings[0] and "pids" in warnings[0], lines
    assert [line for line in lines if line.startswith("bot ")] == ["bot 0 0 42 []"] * 2, lines
    assert lines[-1] == f"arena in {v2_cgroup}", lines
    assert procs._words(v2_cgroup / "cgroup.subtree_control") == set()


def arena_config(tmp_path: Path, bots: str = "") -> Path:
    """Three sandboxed process bots from tests/bots/hostile: ``plain``, ``hog`` (past its 64 MiB at its
    first decision), ``forker`` (forks until its pids limit of 32 refuses, then plays on); or ``plain``
    and ``bots``' names (of :func:`bot`'s)."""
    cfg = tmp_path / "t.toml"
    cfg.write_text(f"""[tournament]
name = "limits"
players = 2
games_per_pairing = 2
concurrency = 2
output = "{tmp_path / 'out'}"
master_seed = "{'5a' * 32}"
[tournament.rules]
target = 3
[tournament.time_control]
join_ms = 20000
decision_ms = 2000
bank_ms = 8000
""" + bot("plain", "none", "") + (bots or bot("hog", "oom", "memory = 64") + bot("forker", "forkbomb", "pids = 32")))
    return cfg


def play(cfg: Path) -> tuple[list[dict[str, Any]], str]:
    """``arena run`` of ``cfg`` (it must end with exit 0): its stored games (``games.jsonl``) and its output."""
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    games = (cfg.parent / "out" / "games.jsonl").read_text().splitlines()
    return [json.loads(x) for x in games], done.stdout + done.stderr


def bot(name: str, mode: str, extra: str) -> str:
    """A ``[[bots]]`` table of tests/bots/hostile's bot in ``mode`` (``$HOSTILE``), with ``extra`` keys."""
    return (f'[[bots]]\nname = "{name}"\ncommand = ["{{python}}", "-m", "sdk.run", "hostile:HostileBot"]\n'
            f'cwd = "{ROOT / "tests" / "bots" / "hostile"}"\nenv = {{ HOSTILE = "{mode}" }}\n{extra}\n')


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CI") != "true",
                    reason="needs Debian's bubblewrap (scripts/setup.sh installs it)")
def test_in_a_tournament_a_process_bot_past_its_memory_forfeits_with_oom(tmp_path: Path) -> None:
    played, _ = play(arena_config(tmp_path))
    assert len(played) == 6
    for g in played:
        sides = [g["a"], g["b"]]
        for seat, term in enumerate(g["terminations"]):
            name = sides[seat % 2]
            if name == "hog" and (term != "other_seat_forfeited" or "plain" in sides):
                assert term == "oom", (g.get("reasons"), g)
                assert any(x.startswith(f"seat {seat} (hog) oom: process was killed at its memory limit (64 MiB)")
                           for x in g["reasons"]), g
            elif name == "plain":
                assert term in ("normal", "other_seat_forfeited"), g
        if sides.count("hog") == 1 and "plain" in sides:
            assert sides[g["winner"]] == "plain", g
    forks = [line for log in (tmp_path / "out" / "logs").rglob("*.log")
             for line in log.read_text(errors="replace").splitlines() if line.startswith("PROBE forkbomb")]
    assert forks, "the forker never forked"
    for line in forks:
        assert line.startswith("PROBE forkbomb: stopped after"), line
        assert int(line.split()[4]) < 32, line


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CI") != "true",
                    reason="needs Debian's bubblewrap (scripts/setup.sh installs it)")
def test_in_a_tournament_a_process_bot_held_at_its_cpu_quota_times_out_and_the_result_says_so(tmp_path: Path) -> None:
    """``spinner`` wants 30 s of CPU at its first decision with a quota of 0.05 cores (10 minutes of wall
    time): it runs out of its 2 s a decision and 8 s bank, and the game's reasons say its quota held it."""
    played, _ = play(arena_config(tmp_path, bot("spinner", "spin", "cpus = 0.05")))
    assert len(played) == 2
    for g in played:
        spinner = [g["a"], g["b"]].index("spinner")
        assert g["terminations"][spinner] == "timeout" and g["winner"] != spinner, g
        held = [x for x in g["reasons"] if x.startswith(f"seat {spinner} (spinner) process was held at its CPU "
                                                         "limit (0.05 cores) in ")]
        assert len(held) == 1 and first_number(held[0].split("in ")[-1]) > 0, g["reasons"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None and os.environ.get("CI") != "true",
                    reason="needs Debian's bubblewrap (scripts/setup.sh installs it)")
def test_a_lobby_worker_process_past_its_memory_forfeits_with_oom(tmp_path: Path) -> None:
    """``hog`` as a pool of two sandboxed worker processes (``mode = "worker"``) at a table of four, a
    duplicate pair against ``plain``: in each game a worker allocates past its 64 MiB and is killed by
    the kernel, its seat forfeits with ``oom`` (not the ``disconnect`` the referee saw), and the pool
    says so of that worker."""
    hog = bot("hog", "oom", 'memory = 64\nmode = "worker"\nworkers = 2')
    cfg = arena_config(tmp_path, hog)
    cfg.write_text(cfg.read_text().replace("players = 2", "players = 4"))
    played, said = play(cfg)
    assert len(played) == 2
    for g in played:
        hog_seats = [s for s in range(4) if [g["a"], g["b"]][s % 2] == "hog"]
        assert "oom" in [g["terminations"][s] for s in hog_seats], g
        seat = next(s for s in hog_seats if g["terminations"][s] == "oom")
        assert any(x.startswith(f"seat {seat} (hog) oom: worker process was killed at its memory limit (64 MiB)")
                   for x in g["reasons"]), g["reasons"]
        assert [g["a"], g["b"]][g["winner"]] == "plain", g
    assert "was killed at its memory limit (64 MiB): oom" in said
