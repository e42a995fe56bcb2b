"""How :class:`arena.hosting.sandbox.BotContainer` reads a bot container's end from docker's state
and, when docker lost the OOM mark, from the kernel's log; with a stand-in for the docker SDK's
container (its ``reload`` walks through given states) and a file for the kernel's log: no daemon
needed, so the states docker's races produce can be given exactly."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from arena.hosting import sandbox
from arena.hosting.sandbox import BotContainer


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
