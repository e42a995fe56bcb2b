"""How :class:`arena.hosting.sandbox.BotContainer` reads a bot container's end from docker's state
and, when docker lost the OOM mark, from the kernel's log; with a stand-in for the docker SDK's
container (its ``reload`` walks through given states) and a file for the kernel's log: no daemon
needed, so the states docker's races produce can be given exactly."""

from __future__ import annotations

import itertools
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arena.config import BotSpec
from arena.hosting import sandbox
from arena.hosting.sandbox import BotContainer
from arena.hosting.workers.container import ContainerWorkers
from arena.hosting.workers.local import REMEMBERED_PER_SLOT


class Replayed:
    """A docker SDK container whose ``attrs["State"]`` is the next of ``states`` at each ``reload``
    (the last one repeats)."""

    def __init__(self, *states: dict[str, Any], id: str = "0" * 64) -> None:
        self.states = list(states)
        self.id = id
        self.attrs: dict[str, Any] = {}
        self.reloads = 0

    def reload(self) -> None:
        self.attrs = {"State": self.states[min(self.reloads, len(self.states) - 1)]}
        self.reloads += 1


def exited(code: int, oom: bool) -> dict[str, Any]:
    return {"Status": "exited", "ExitCode": code, "OOMKilled": oom}


@pytest.fixture(autouse=True)
def short_wait(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A one-second wait for a late mark, and an empty kernel log (a file); returns the log's path."""
    monkeypatch.setattr(sandbox, "OOM_MARK_WAIT_S", 1.0)
    log = tmp_path / "kmsg"
    log.write_text("6,1,100,-;eth0: link up\n")
    monkeypatch.setattr(sandbox, "KERNEL_LOG", log)
    return log


def oom_kill_record(container_id: str) -> str:
    """The kernel's record of an OOM kill in a docker container's cgroup (as Linux 6 writes it)."""
    memcg = f"/docker/{container_id}"
    return (f"6,1753,35183507272,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={container_id},"
            f"mems_allowed=0,oom_memcg={memcg},task_memcg={memcg},task=python,pid=18267,uid=10001\n")


KILLED = 128 + signal.SIGKILL


@pytest.mark.parametrize(("states", "signalled", "oom", "code"), [
    # docker marked it at once
    ([exited(KILLED, True)], False, True, KILLED),
    # the OOM event reached dockerd after the exit event: the mark comes a moment later (the CI failure)
    ([exited(KILLED, False), exited(KILLED, False), exited(KILLED, True)], False, True, KILLED),
    # killed by SIGKILL and never marked: not for memory (e.g. the bot killed itself)
    ([exited(KILLED, False)], False, False, KILLED),
    # a plain failure exit is not waited on, whatever docker says later
    ([exited(1, False), exited(1, True)], False, False, 1),
    # stopped by the arena (docker stop's SIGKILL): a stop, like a process's -SIGKILL, not a memory kill
    ([exited(KILLED, False), exited(KILLED, True)], True, False, -signal.SIGKILL),
], ids=["marked", "marked-late", "never-marked", "failure-exit", "stopped-by-us"])
def test_an_exit_is_read_with_its_cause(states: list[dict[str, Any]], signalled: bool, oom: bool, code: int) -> None:
    box = BotContainer(container=Replayed(*states), name="seat0")
    box._signalled = signalled
    assert box.poll() == code
    assert box.oom_killed is oom


def test_a_running_container_has_no_exit_yet() -> None:
    box = BotContainer(container=Replayed({"Status": "running"}, exited(0, False)), name="seat0")
    assert box.poll() is None
    assert box.poll() == 0
    assert box.oom_killed is False


HOG = "3f" * 32
OTHER = "8a" * 32


@pytest.mark.parametrize(("records", "oom"), [
    ([oom_kill_record(HOG)], True),  # docker lost the mark; the kernel's log names this container
    ([oom_kill_record(OTHER)], False),  # another container's kill
    ([oom_kill_record(OTHER), "6,2,5,-;" + "x" * 9000 + "\n", oom_kill_record(HOG)], True),  # past a long record
    ([], False),
], ids=["this-container", "another-container", "after-a-long-record", "no-kill"])
def test_a_kill_docker_did_not_mark_is_found_in_the_kernels_log(
    short_wait: Path, records: list[str], oom: bool
) -> None:
    with short_wait.open("a") as f:
        f.writelines(records)
    box = BotContainer(container=Replayed(exited(KILLED, False), id=HOG), name="seat0")
    assert box.poll() == KILLED
    assert box.oom_killed is oom


def test_an_unreadable_kernel_log_leaves_the_kill_unexplained(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "KERNEL_LOG", tmp_path / "missing")
    box = BotContainer(container=Replayed(exited(KILLED, False), id=HOG), name="seat0")
    assert box.poll() == KILLED
    assert box.oom_killed is False


def test_the_kernels_log_is_not_read_for_an_exit_that_is_no_kill(short_wait: Path) -> None:
    short_wait.write_text(oom_kill_record(HOG))  # even a matching record does not turn an exit 1 into a kill
    box = BotContainer(container=Replayed(exited(1, False), id=HOG), name="seat0")
    assert box.poll() == 1
    assert box.oom_killed is False



class Removed:
    """A docker SDK container already removed (by the pool's watcher, after it read the exit)."""

    def __init__(self) -> None:
        self.id = HOG
        self.attrs: dict[str, Any] = {}

    def reload(self) -> None:
        raise RuntimeError("404 Client Error: No such container")


@pytest.mark.parametrize(("records", "oom"), [([oom_kill_record(HOG)], True), ([oom_kill_record(OTHER)], False)],
                         ids=["killed-for-memory", "another-container"])
def test_a_container_removed_before_its_exit_was_read_asks_the_kernels_log(
    short_wait: Path, records: list[str], oom: bool
) -> None:
    """A game's end asks about a worker the watcher has just removed: the kernel's log still says
    whether it was killed for memory (before, such a kill read as a plain SIGKILL)."""
    with short_wait.open("a") as f:
        f.writelines(records)
    box = BotContainer(container=Removed(), name="worker0")
    assert box.poll() == -signal.SIGKILL
    assert box.oom_killed is oom


def _pool_with_one_worker(tmp_path: Path, container_id: str) -> tuple[ContainerWorkers, str]:
    """A container-worker pool of one whose worker ran in container ``container_id``, then was
    replaced (its slot now holds a new worker's token); returns the pool and the old token's digest."""
    tokens = (f"token-{n}" for n in itertools.count())
    issuer = SimpleNamespace(issue=lambda name: next(tokens), revoke=lambda digest: None)
    ctx = SimpleNamespace(lobby=SimpleNamespace(tokens=issuer), log_limit=1 << 16, log_dir=tmp_path)
    sandbox_ = SimpleNamespace(start=lambda *a, **k: BotContainer(container=Replayed({"Status": "running"},
                                                                                   id=container_id), name="w"),
                               image_id=lambda tag: None)  # docker not answering: the pool starts by the tag
    pool = ContainerWorkers(BotSpec("hog", "1", (), image="hog:1"), 1, sandbox_, "lobby:1")  # type: ignore[arg-type]
    pool._ctx = ctx  # type: ignore[assignment]
    slot = pool._slots[0]
    pool._launch(slot)
    old = slot.digest
    slot.proc = None  # the watcher read its exit and stopped it ...
    pool._launch(slot)  # ... and started the next worker in its place
    assert slot.digest != old
    return pool, old


@pytest.mark.parametrize(("records", "oom"), [([oom_kill_record(HOG)], True), ([oom_kill_record(OTHER)], False)],
                         ids=["killed-for-memory", "another-container"])
def test_a_replaced_worker_killed_for_memory_is_still_known_by_its_token(
    short_wait: Path, tmp_path: Path, records: list[str], oom: bool
) -> None:
    """The arena asks about a forfeited seat's worker by its token: after the pool replaced that worker,
    the kernel's record of the container it ran in still answers (the CI's ``disconnect`` for ``oom``)."""
    with short_wait.open("a") as f:
        f.writelines(records)
    pool, digest = _pool_with_one_worker(tmp_path, HOG)
    assert pool.killed_for_memory(digest, wait_s=0.0) is oom


def test_a_pool_remembers_only_its_newest_containers(short_wait: Path, tmp_path: Path) -> None:
    """A bot whose workers die at every game does not grow the pool's memory: only the newest
    REMEMBERED_PER_SLOT containers a place are asked about; an older token is no longer known."""
    with short_wait.open("a") as f:
        f.write(oom_kill_record(HOG))
    pool, first = _pool_with_one_worker(tmp_path, HOG)
    slot = pool._slots[0]
    for _ in range(10):
        slot.proc = None
        pool._launch(slot)
        pool._oom.add(slot.digest)  # each killed for memory, as the watcher notes it
    assert len(pool._container_of) == REMEMBERED_PER_SLOT and len(pool._oom) <= REMEMBERED_PER_SLOT
    assert pool.killed_for_memory(slot.digest, wait_s=0.0) is True
    assert pool.killed_for_memory(first, wait_s=0.0) is False


class DeafToSigterm:
    """A docker SDK container whose bot ignores SIGTERM and dies at SIGKILL; it exits (as docker reports
    it) a few reloads after its kill. ``events`` (shared by several) records ``kill <name>`` and
    ``exited <name>`` in the order they happened."""

    def __init__(self, name: str, events: list[str], lock: Any) -> None:
        self.name, self.events, self.lock = name, events, lock
        self.id = name * 8
        self.attrs: dict[str, Any] = {}
        self.killed = False
        self.reloads_since_kill = 0

    def kill(self, signal: str = "SIGKILL") -> None:
        if signal == "SIGKILL":
            with self.lock:
                self.events.append(f"kill {self.name}")
            self.killed = True

    def reload(self) -> None:
        if self.killed:
            self.reloads_since_kill += 1
            if self.reloads_since_kill == 3:
                with self.lock:
                    self.events.append(f"exited {self.name}")
        gone = self.reloads_since_kill >= 3
        self.attrs = {"State": exited(KILLED, False) if gone else {"Status": "running"}}

    def logs(self, **_: Any) -> bytes:
        return b""

    def remove(self, **_: Any) -> None:
        pass


def test_containers_stopped_together_are_killed_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four seats' bots that ignore SIGTERM, stopped together (:func:`arena.hosting.procs.stop_all`):
    each SIGKILL waits until docker has seen the one before exit. Killed together, they died at the
    same moment, and Debian's docker 20.10 deadlocked in libnetwork (moby/moby#46661) in a CI run."""
    import threading

    from arena.hosting.procs import stop_all

    monkeypatch.setattr(sandbox, "STOP_GRACE_S", 0.3)
    events: list[str] = []
    lock = threading.Lock()
    boxes = [BotContainer(container=DeafToSigterm(f"s{k}", events, lock), name=f"seat{k}") for k in range(4)]
    codes = stop_all(boxes, exit_wait_s=0.2)
    assert codes == [-signal.SIGKILL] * 4
    assert len(events) == 8 and {e.split()[1] for e in events} == {"s0", "s1", "s2", "s3"}
    for k in range(0, 8, 2):  # kill A, A exited, kill B, B exited, ...: never two kills in a row
        kill, done = events[k].split(), events[k + 1].split()
        assert kill[0] == "kill" and done == ["exited", kill[1]], events
