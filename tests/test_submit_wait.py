"""``arena submit --wait`` (arena/cli/competing.py, ``SubmissionClient.follow``) prints a status line only
when the status changes: a submission queued behind another build printed ``#2 alicebot@1 received``
twice (once as ``submitted: …``, once more at the first poll; fresh-user review). A fake client, no arena."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from arena.cli import competing
from arena.cli.commands import main
from arena.competition import client as client_module
from arena.competition.client import SubmissionClient


def _sub(status: str) -> SimpleNamespace:
    """Submission #2 of alicebot@1 with ``status`` (the fields ``arena submit`` prints)."""
    return SimpleNamespace(id=2, entrant="alicebot@1", status=status, step="", reason="", retired=False,
                           log_tail="", final_entry=False)


class FakeClient(SubmissionClient):
    """A Submission service that answers ``get`` with ``statuses`` in turn (the last one for ever)."""

    def __init__(self, statuses: list[str]) -> None:  # no channel
        self.statuses = statuses
        self.polls = 0

    def close(self) -> None:
        """Nothing to close."""

    def submit(self, archive: bytes, name: str, version: str = "next", entry: str = "",
               timeout_s: float = 600.0, image: bool = False) -> Any:
        return _sub("received")

    def get(self, sid: int) -> Any:
        self.polls += 1
        return _sub(self.statuses[min(self.polls, len(self.statuses)) - 1])


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The polling loop's sleeps take no time (its clock still runs)."""
    monkeypatch.setattr(client_module, "time", SimpleNamespace(monotonic=time.monotonic, sleep=lambda s: None))


def test_follow_calls_back_once_a_status(no_sleep: None) -> None:
    fake = FakeClient(["received", "received", "received", "building", "building", "validating", "rated"])
    seen: list[str] = []
    last = fake.follow(2, lambda s: seen.append(s.status), 60, shown="received")
    assert last.status == "rated" and fake.polls == 7
    assert seen == ["building", "validating", "rated"]


def test_submit_wait_prints_each_status_once(no_sleep: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "alicebot"
    folder.mkdir()
    (folder / "bot.py").write_text("pass\n")
    fake = FakeClient(["received", "received", "received", "building", "accepted", "playing", "playing", "rated"])
    monkeypatch.setattr(competing, "_client", lambda args: fake)
    status = main(["submit", str(folder), "--arena", "127.0.0.1:1", "--name", "alicebot", "--version", "1", "--wait"])
    out, err = capsys.readouterr()
    assert status == 0 and out.strip() == "2" and fake.polls == 8
    assert err.splitlines() == ["submitted: #2 alicebot@1 received", "#2 alicebot@1 building",
                                "#2 alicebot@1 accepted", "#2 alicebot@1 playing", "#2 alicebot@1 rated"]
