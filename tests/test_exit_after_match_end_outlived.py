"""``connected_at_end`` says the seat's *stream* was open at the end, not that the
bot's *process* was alive then; the arena applies it to the exit status of the process it started. A bot whose
own process (a launcher) exits with status 3 mid-game while its child (which holds the stream and ignores
SIGTERM) plays on is "connected at the end" however long before the end the launcher died: the arena writes
"exited with status 3 after the match ended" and counted no crash, before ``BotProcess.outlived``.

Deterministic: the child waits until the launcher has exited (it is reparented) before it sends the malformed
actions that forfeit its seat (protocol_error): the match surely ends after the launcher's exit. The arena's
grace before SIGKILL is raised so that its cgroup watcher (which SIGTERMs the child when the launcher exits)
cannot kill the child first; the child exits on its own once it has read MatchEnd."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.hosting import procs as procs_module
from tests.test_exit_after_match_end import ROOT, play_one

pytestmark = pytest.mark.slow


#: The launcher: starts CHILD, waits until the child is at its third request, then exits 3 (mid-game).
LAUNCHER = """
import os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
ready = os.path.join(here, "ready")
subprocess.Popen([sys.executable, os.path.join(here, "child.py"), ready])
while not os.path.exists(ready):
    time.sleep(0.01)
print("launcher exiting with status 3 mid-game", flush=True)
os._exit(3)
"""

#: The child: the raw instant bot (mode first); at its third request it tells the launcher, waits until the
#: launcher is gone, then answers with malformed actions only (its seat forfeits: protocol_error).
CHILD = """
import asyncio, os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
from arena.testing import instant_bot

launcher = os.getppid()


async def once_the_launcher_is_gone(b, answered):
    open(sys.argv[1], "w").close()
    while os.getppid() == launcher:
        await asyncio.sleep(0.01)
    print("child: launcher gone, now garbage", flush=True)
    b.mode = "garbage"

instant_bot._fault_at = once_the_launcher_is_gone
ended = instant_bot.play(os.environ["ALLFOURS_REFEREE"], os.environ["ALLFOURS_TICKET"],
                         instant_bot.Behaviour(after=2))
print(f"child: play returned {ended}", flush=True)
os._exit(0)
"""


def test_a_launcher_that_died_mid_game_did_not_exit_after_the_match_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs_module, "GRACE_S", 120.0)
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "launcher.py").write_text(LAUNCHER)
    (bot / "child.py").write_text(CHILD)
    res, seat = play_one(tmp_path, {"command": ["{python}", str(bot / "launcher.py")], "cwd": str(ROOT),
                                    "sandbox": "none", "env": {"PYTHONPATH": str(ROOT)}}, decision_ms=1000)
    log = next((tmp_path / "out" / "logs").glob(f"*/seat{seat}.log")).read_text()
    # the order is the test's own: the launcher exited, then the child broke the protocol and the match ended
    assert "launcher exiting with status 3 mid-game" in log and "child: launcher gone, now garbage" in log, log
    assert res.terminations[seat] == "protocol_error", res.reasons
    assert not [r for r in res.reasons if "after the match ended" in r], res.reasons
    assert res.failures is not None and res.failures[seat].crashes == 1, res.reasons
    assert any("exited with status 3 before the match ended" in r for r in res.reasons), res.reasons
