"""A disqualification and its undo killed half-way, and an upload cancelled across midnight: what a review of the
held tokens and the upload day found (each test failed on their first version; the `before` cases guard the fix)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from arena.competition.book import CompetitionBook
from arena.competition.desk import Header, Refused
from tests.test_competition_disqualify import REASON, ROOT, _register, _valid_tokens, arena, write_config
from tests.test_competition_hostile import MIDNIGHT, _archive, uploads_across_midnight

#: Runs the CLI in a real process that is killed (SIGKILL: a power cut, an OOM kill) right after ``Store.METHOD``
#: has written the league's store (autocommitted), before the competition book's transaction commits.
_KILLED = """
import os, runpy, signal, sys
from arena.tournament.store import Store
when, names = sys.argv[1], sys.argv[2].split(",")
def killing(original):
    def then_killed(self, *a):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        out = original(self, *a)
        os.kill(os.getpid(), signal.SIGKILL)
        return out
    return then_killed
for name in names:  # the first version's name of the step (take_tokens), or the one now (revoke_digests)
    if hasattr(Store, name):
        setattr(Store, name, killing(getattr(Store, name)))
sys.argv = ["arena", *sys.argv[3:]]
runpy.run_module("arena.cli", run_name="__main__")
"""
REVOKE = "take_tokens,revoke_digests"


def _killed(when: str, methods: str, *args: str) -> int:
    return subprocess.run([sys.executable, "-c", _KILLED, when, methods, *args], cwd=ROOT, capture_output=True,
                          timeout=120).returncode


def mal_registered(tmp_path: Path) -> tuple[Path, Path, str]:
    """A competition config in ``tmp_path`` with competitor mal, whose remote entry malbot is registered: the
    config, the output folder and the digest of malbot's bot token."""
    from arena.lobby.tokens import token_digest

    cfg = write_config(tmp_path)
    out = tmp_path / "out"
    assert arena("competitor", "add", str(cfg), "mal").returncode == 0
    return cfg, out, token_digest(_register(out, "mal", "malbot"))


@pytest.mark.parametrize("when", ["after", "before"])
def test_a_disqualify_killed_between_the_two_stores_loses_the_tokens_its_undo_gives_back(tmp_path: Path,
                                                                                        when: str) -> None:
    cfg, out, digest = mal_registered(tmp_path)
    assert _killed(when, REVOKE, "competitor", "disqualify", str(cfg), "mal", "--reason", REASON) == -9
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0  # the host again
    assert arena("competitor", "disqualify", str(cfg), "mal", "--undo").returncode == 0
    assert _valid_tokens(out) == {"malbot@1": [digest]}  # the first version: {} (never given back)


@pytest.mark.parametrize("when", ["after", "before"])
def test_an_undo_killed_between_the_two_stores_leaves_a_disqualified_entry_a_valid_token(tmp_path: Path,
                                                                                        when: str) -> None:
    cfg, out, digest = mal_registered(tmp_path)
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    assert _killed(when, "restore_tokens", "competitor", "disqualify", str(cfg), "mal", "--undo") == -9
    with CompetitionBook(out) as book:
        standing = book.disqualified()
    assert "mal" not in standing or _valid_tokens(out) == {}  # the first version (after): disqualified, the token valid
    assert arena("competitor", "disqualify", str(cfg), "mal", "--undo").returncode == 0  # the host again
    assert _valid_tokens(out) == {"malbot@1": [digest]}
    with CompetitionBook(out) as book:
        assert book.disqualified() == {}


def test_an_upload_its_client_withdrew_as_it_was_kept_is_charged_to_the_day_it_began(tmp_path: Path) -> None:
    """The service's order on a client's cancel once the archive was read: settle (Submission._receive's
    CancelledError), then the intake, still running, keeps it (Desk.receive)."""
    desk, now, late = uploads_across_midnight(tmp_path)
    desk.settle(late)  # its client cancelled: Submission._receive settles it at once
    now[0] = MIDNIGHT + 5
    with pytest.raises(Refused, match="1 submissions today"):  # the first version: kept, charged to the new day
        desk.receive("eve", Header("evebot", "2", "python", "bot:Bot"), io.BytesIO(_archive()), late)
