"""A seat connected at the match's end counts no crash for its bot's exit afterwards, with the exception docs/arena.md
states: a process killed at its memory limit counts one whenever the kill came (the cgroup's
``oom_kill`` counter: a helper process killed mid-game looks the same as the bot's own process after its
MatchEnd, so the arena cannot tell when): the docs' exception, pinned here. The bot plays to the end, reads its
MatchEnd, then fills its memory; the arena looks only after its exit (``exit_seen_after_result``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_exit_after_match_end import ROOT, exit_seen_after_result, play_one  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow

#: A raw bot that plays to the end, then (MatchEnd read, its stream closed) fills memory until killed.
GREEDY = """
import os
from arena.testing.instant_bot import Behaviour, play

ended = play(os.environ["ALLFOURS_REFEREE"], os.environ["ALLFOURS_TICKET"], Behaviour())
print(f"played to the end ({ended}), now filling memory", flush=True)
hog = []
while True:
    hog.append(bytearray(16 << 20))
"""


@pytest.mark.usefixtures("exit_seen_after_result")
def test_a_bot_killed_for_memory_after_its_match_end_counts_a_crash(tmp_path: Path) -> None:
    """A kill at the memory limit after the seat's MatchEnd: a note (no "before the match ended") and a crash."""
    (tmp_path / "greedy.py").write_text(GREEDY)
    res, seat = play_one(tmp_path, {"command": ["{python}", str(tmp_path / "greedy.py")], "cwd": str(ROOT),
                                    "sandbox": "none", "memory": 128})
    assert res.terminations == ("normal", "normal"), res.reasons
    assert any("killed at its memory limit" in r for r in res.reasons), res.reasons  # it was: after the end
    assert not [r for r in res.reasons if "before the match ended" in r], res.reasons
    assert res.failures is not None and res.failures[seat].crashes == 1, res.reasons
