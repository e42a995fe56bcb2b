"""A disqualification and its undo killed half-way, and an upload cancelled across midnight: what a review of the
held tokens and the upload day found (each test failed on their first version; the `before` cases guard the fix);
and the host's disqualifies, undos and revokes run at once (real processes on one folder), which take turns."""

from __future__ import annotations

import io
import subprocess
import sys
import time
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


#: Runs the CLI in a real process whose methods named in ``argv[1]`` (JSON: ``{"Class.method": seconds}``, a
#: ``Store`` or ``CompetitionBook`` method) first sleep that long: widens a command's window between its book's and
#: its league store's writes, where another host command can step in (test-only; the product has no such hook).
_PAUSED = """
import json, runpy, sys, time
from arena.competition.book import CompetitionBook
from arena.tournament.store import Store
for where, seconds in json.loads(sys.argv[1]).items():
    owner, name = where.split(".")
    cls = {"Store": Store, "CompetitionBook": CompetitionBook}[owner]
    def paused(*a, _original=getattr(cls, name), _seconds=seconds, **k):
        time.sleep(_seconds)
        return _original(*a, **k)
    setattr(cls, name, paused)
sys.argv = ["arena", *sys.argv[2:]]
runpy.run_module("arena.cli", run_name="__main__")
"""
#: An undo that gives the held tokens back late: a change started with it writes its book in between (its own pause
#: before it, longer than the processes' start-up differs, shorter than this).
UNDO_LATE = ({"Store.restore_tokens": 4.0}, "--undo")
#: A change's pause before it writes its book.
BETWEEN_S = 1.5


def _at_once(*commands: tuple[dict[str, float], tuple[str, ...]]) -> list[subprocess.CompletedProcess[str]]:
    """Start every ``(pauses, arena arguments)`` at once (:data:`_PAUSED`), each a process; their ends."""
    import json

    procs = [subprocess.Popen([sys.executable, "-c", _PAUSED, json.dumps(pauses), *args], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for pauses, args in commands]
    ends = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        ends.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return ends


def test_disqualifies_and_undos_at_once_leave_the_tokens_as_the_last_one_says(tmp_path: Path) -> None:
    """Each command writes the book, then the league's store: an undo that had marked the disqualification undone
    and read the held tokens gave them back after a disqualify that came between had recorded the competitor
    disqualified again and revoked (the same, still revoked) tokens: disqualified, with a valid remote token. The
    host's changes of one competition now take turns on the folder's lock (arena/tournament/lock.py,
    lock_changes), each holding it across both writes. Three disqualifies and three undos at once: disqualified, no
    token valid; undone, exactly the held one; and the undo run after still gives it back (none was lost)."""
    cfg, out, digest = mal_registered(tmp_path)
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    undo = (UNDO_LATE[0], ("competitor", "disqualify", str(cfg), "mal", UNDO_LATE[1]))
    again = ({"CompetitionBook.disqualify": BETWEEN_S}, ("competitor", "disqualify", str(cfg), "mal", "--reason",
                                                          REASON))
    ends = _at_once(*[undo, again] * 3)
    assert [e.returncode for e in ends] == [0] * 6, [e.stderr for e in ends]
    with CompetitionBook(out) as book:
        disqualified = "mal" in book.disqualified()
    # the first version: disqualified, {"malbot@1": [digest]}
    assert _valid_tokens(out) == ({} if disqualified else {"malbot@1": [digest]}), disqualified
    assert arena("competitor", "disqualify", str(cfg), "mal", "--undo").returncode == 0
    assert _valid_tokens(out) == {"malbot@1": [digest]}
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    assert _valid_tokens(out) == {}


def test_a_revoke_during_an_undo_leaves_the_revoked_competitors_remote_bot_no_token(tmp_path: Path) -> None:
    """`arena competitor add --revoke` drops the tokens a disqualification holds (the host's to keep revoked) and
    revokes the remote bots' valid ones: between an undo's reading of the held tokens and its giving them back, it
    revoked nothing (they were still revoked), and the undo then made the revoked competitor's remote bot's token
    valid. It takes its turn on the folder's lock too, across its writes (through LeagueTokens, as the
    disqualification's)."""
    cfg, out, _ = mal_registered(tmp_path)
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    revoke = ({"CompetitionBook.revoke_competitor": BETWEEN_S}, ("competitor", "add", str(cfg), "mal", "--revoke"))
    ends = _at_once((UNDO_LATE[0], ("competitor", "disqualify", str(cfg), "mal", UNDO_LATE[1])), revoke)
    assert [e.returncode for e in ends] == [0, 0], [e.stderr for e in ends]
    assert _valid_tokens(out) == {}, [e.stderr for e in ends]  # the first version: {"malbot@1": [its digest]}
    with CompetitionBook(out) as book:
        assert ("mal", False) in book.competitors()


def test_a_remote_entry_registered_as_its_competitor_is_revoked_gets_no_valid_token(tmp_path: Path) -> None:
    """RegisterRemote checks the competitor's token (the service's ``_who``), then the desk keeps the entry and its
    bot token (``add_remote``). `arena competitor add --revoke` between the two (it revokes the competitor and, in
    its turn, their remote bots' valid tokens) listed no such entry yet: the entry was kept after it, with a valid
    token, so the revoked competitor's new remote bot played the league. ``add_remote`` now refuses a revoked
    competitor in its transaction, as it refuses a disqualified one."""
    from arena.competition.desk import Desk
    from arena.config import CompetitionSettings

    cfg, out, _ = mal_registered(tmp_path)
    with CompetitionBook(out) as book:
        desk = Desk(CompetitionSettings(), out, book, lambda: None)
        assert book.competitors() == [("mal", True)]  # what the service's check of their token saw
        revoke = arena("competitor", "add", str(cfg), "mal", "--revoke")  # the host, in between
        assert revoke.returncode == 0, revoke.stderr
        with pytest.raises(Refused, match="revoked"):  # the first version: kept, its bot token valid
            desk.register_remote("mal", "malbot2", "1")
    assert _valid_tokens(out) == {}


def test_a_disqualify_during_a_restore_is_not_lost_with_the_replaced_folder(tmp_path: Path) -> None:
    """`arena restore` replaces the output folder (its book and store) under the folder's lock, which a host
    command changing disqualifications does not take: a disqualify that had opened the book before the restore
    moved the folder aside recorded the disqualification in the folder moved aside, said `disqualified` (exit 0),
    and the restored folder, which `arena serve` then plays, has none. The restore now takes its turn on the
    changes' lock too, and a change opens the book once it has its turn: the disqualification is in the folder
    served (the restore then refuses a backup made before it, as for any disqualification)."""
    import json

    from arena.tournament.lock import CHANGES_LOCK, _flock_pids

    cfg, out, _ = mal_registered(tmp_path)
    assert arena("backup", str(out), str(tmp_path / "mid")).returncode == 0
    again = subprocess.Popen([sys.executable, "-c", _PAUSED, json.dumps({"CompetitionBook.disqualify": BETWEEN_S * 2}),
                              "competitor", "disqualify", str(cfg), "mal", "--reason", REASON], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not ((out / CHANGES_LOCK).exists()
                   and _flock_pids((st := (out / CHANGES_LOCK).stat()).st_dev, st.st_ino)):  # its turn, book open
            assert again.poll() is None, again.communicate()
            time.sleep(0.01)
        restored = arena("restore", str(tmp_path / "mid"), str(out))
        _, said = again.communicate(timeout=120)
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()
    with CompetitionBook(out) as book:
        gone = "mal" in book.disqualified()
    # the first version: restored (exit 0), the disqualify said "disqualified" (exit 0), and mal not disqualified
    assert gone or again.returncode != 0, (again.returncode, said, restored.returncode, restored.stderr)
    assert _valid_tokens(out) == {}, restored.stderr  # held and revoked in the folder served
