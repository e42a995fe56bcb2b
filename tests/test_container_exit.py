"""How :class:`arena.hosting.sandbox.BotContainer` reads a bot container's end from docker's state,
with a stand-in for the docker SDK's container (its ``reload`` walks through given states): no
daemon needed, so the states docker's races produce can be given exactly."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from arena.hosting import sandbox
from arena.hosting.sandbox import BotContainer


class Replayed:
    """A docker SDK container whose ``attrs["State"]`` is the next of ``states`` at each ``reload``
    (the last one repeats)."""

    def __init__(self, *states: dict[str, Any]) -> None:
        self.states = list(states)
        self.id = "0" * 64
        self.attrs: dict[str, Any] = {}
        self.reloads = 0

    def reload(self) -> None:
        self.attrs = {"State": self.states[min(self.reloads, len(self.states) - 1)]}
        self.reloads += 1


def exited(code: int, oom: bool) -> dict[str, Any]:
    return {"Status": "exited", "ExitCode": code, "OOMKilled": oom}


@pytest.fixture(autouse=True)
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "OOM_MARK_WAIT_S", 1.0)


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
