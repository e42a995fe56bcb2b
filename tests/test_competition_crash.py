"""What an `arena serve` killed at a bad moment (SIGKILL: no cleanup of its own runs) leaves of a
competition, and what its next start makes of it (docs/competition.md, "Restart").

The crash is simulated by what it leaves: a partial upload's folder, a killed process's build context
in the temp folder, a submission kept in the book before its files were moved in. The next start is
:func:`arena.competition.setup.open_competition`, the competition's part of `arena serve`'s start
(under its output lock), or its build queue's start alone, here with no dockerd (none of these needs one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from arena.competition.book import CompetitionBook, Submission
from arena.config import parse_config

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[str]]]:
    """Start the competition of ``tmp_path/out`` as `arena serve` does (its host's log lines returned);
    the temp folder is ``tmp_path/tmp`` (the sweeps of /tmp look there)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    bots = [{"name": n, "command": ["x"]} for n in ("a", "b")]
    config = parse_config({"tournament": {"name": "t"}, "bots": bots, "competition": {"checks": ["join"]}},
                          "c.toml", base=tmp_path)
    closers: list[Callable[[], None]] = []
    notes: list[str] = []

    def go() -> list[str]:
        from arena.competition.setup import open_competition
        from arena.lobby.tokens import TokenBook

        league = SimpleNamespace(request_reload=lambda: None, grow=None, lobby_services=[], after_game=[],
                                 reopened=[], tokens=TokenBook(), setup=None)
        closers.append(open_competition(config, tmp_path / "out", league, notes.append))  # type: ignore[arg-type]
        return notes

    yield go
    for close in closers:
        close()


def test_the_next_start_removes_every_partial_upload(tmp_path: Path, start: Callable[[], list[str]]) -> None:
    """`arena serve` killed during an upload left ``OUTPUT/submissions/incoming-<hex>/`` (the upload
    unpacked so far, up to ``image_upload_bytes`` of an image) for good, across restarts. The next start
    removes every such folder (none can be in use: the start holds the output lock and takes no upload
    yet) and says so in one line; the kept submissions' folders stay."""
    subs = tmp_path / "out" / "submissions"
    partial = [subs / "incoming-0123456789abcdef", subs / "incoming-fedcba9876543210"]
    (partial[0] / "bot").mkdir(parents=True)
    (partial[0] / "bot" / "evebot.py").write_bytes(b"x" * 3000)
    partial[1].mkdir()
    (partial[1] / "image.tar").write_bytes(b"y" * 1000)
    with CompetitionBook(tmp_path / "out") as book:
        sid = book.add_submission("eve", "evebot", "1", "python", "evebot:EveBot").id
    kept = subs / str(sid) / "bot"
    kept.mkdir(parents=True)
    notes = start()
    assert not any(p.exists() for p in partial) and kept.is_dir()
    said = [n for n in notes if "incoming-" in n]
    assert said == [f"removed 2 partial upload(s) (4000 bytes) that a stopped arena serve left in {subs}"
                    "/incoming-*"], notes


def test_the_next_start_says_nothing_when_no_upload_was_cut_short(start: Callable[[], list[str]]) -> None:
    assert not [n for n in start() if "partial upload" in n]


_BUILD_KILLED_MIDWAY = """
import sys, tempfile, time
tempfile.tempdir = sys.argv[1]
from arena.hosting.bots_build import build_image, plan_build

import docker.errors

class Api:
    def inspect_image(self, tag):
        raise docker.errors.ImageNotFound(f"No such image: {tag}")  # docker's answer: the tag names none yet

    def build(self, path, **kwargs):
        print(path, flush=True)
        time.sleep(600)  # the build under way, until SIGKILL

build_image(plan_build(sys.argv[2], "evebot", "1", "evebot:EveBot"), client=type("Client", (), {"api": Api()})())
"""


def test_a_build_killed_midway_leaves_no_competitors_code_in_tmp(tmp_path: Path,
                                                                 start: Callable[[], list[str]]) -> None:
    """A build context (the competitor's code, the SDK, the Dockerfile, build-ca.pem) is a temporary
    folder that only the arena that made it removed: after a SIGKILL mid-build it stayed in /tmp for good.
    It is named with the arena's pid now (``allfours-build-<pid>-…``), and the next start removes those of
    dead arenas (and only those: a live arena's build goes on)."""
    bot = tmp_path / "evebot"
    bot.mkdir()
    (bot / "evebot.py").write_text("from sdk.bot import Bot\n\nclass EveBot(Bot):\n    pass\n")
    builder = subprocess.Popen([sys.executable, "-c", _BUILD_KILLED_MIDWAY, str(tmp_path / "tmp"), str(bot)],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert builder.stdout is not None
        context = Path(builder.stdout.readline().strip())
    finally:
        builder.send_signal(signal.SIGKILL)
        builder.wait(30)
    assert context.parent == tmp_path / "tmp" and context.name.startswith(f"allfours-build-{builder.pid}-"), context
    assert (context / "bot" / "evebot.py").is_file()  # the competitor's code, left by the kill
    live = tmp_path / "tmp" / f"allfours-build-{os.getpid()}-live"
    live.mkdir()
    start()
    assert not context.exists() and live.is_dir()


def test_the_next_start_removes_a_killed_arenas_validation_sockets(tmp_path: Path,
                                                                   start: Callable[[], list[str]]) -> None:
    """A validation's socket folder (``allfours-validate-<pid>-…``) is swept as a build's is: the next
    start removes those of dead arenas, and leaves a live one's and a folder with no pid in its name."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    tmp = tmp_path / "tmp"
    stale = tmp / f"allfours-validate-{gone.stdout.strip()}-abc"
    alive = tmp / f"allfours-validate-{os.getpid()}-def"
    other = tmp / "allfours-validate-xyz"  # no pid in its name: not ours to judge
    for d in (stale, alive, other):
        d.mkdir()
    (stale / "referee.sock").write_text("")
    start()
    assert not stale.exists() and alive.exists() and other.exists()


class NoDocker:
    """A docker client the test expects not to be asked (any use raises)."""

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"docker was asked for {name}")


def _wait_done(out: Path, sids: list[int]) -> list[Submission]:
    """The submissions ``sids`` of ``out``'s book once none is ``received`` or ``building`` (60 s at most)."""
    deadline = time.monotonic() + 60
    with CompetitionBook(out) as book:
        while True:
            subs = [book.get(sid) for sid in sids]
            done = [s for s in subs if s is not None and s.status not in ("received", "building")]
            if len(done) == len(sids) or time.monotonic() > deadline:
                return done
            time.sleep(0.2)


def test_a_submission_kept_before_its_files_were_moved_in_fails_as_the_arenas_fault(tmp_path: Path) -> None:
    """A kill between the desk's two steps (the submission's row kept, then its unpacked folder moved to
    ``OUTPUT/submissions/ID``) left a row without files: the next start built it and *rejected* it,
    counted in the competitor's day, with a server path as the reason (`…/submissions/1/bot: not a
    folder`); a prebuilt image's failed with its path. Either is now ``failed`` (the arena's fault, not
    counted), with a reason that shows no path of the server, told in the host's log; docker is not asked."""
    from arena.competition.pipeline import BuildQueue
    from arena.config import CompetitionSettings

    out = tmp_path / "out"
    notes: list[str] = []
    with CompetitionBook(out) as book:
        book.add_competitor("ghost")
        sids = [book.add_submission("ghost", "ghost", "1", "python", "ghost:Ghost").id,
                book.add_submission("ghost", "ghost", "2", "image", "").id]
        queue = BuildQueue(book, CompetitionSettings(), out, lambda: None, notes.append, client=NoDocker())
        queue.start()  # the pipeline's start, as `arena serve` starts it
        try:
            subs = _wait_done(out, sids)
        finally:
            queue.stop()
        counted = book.count_since("ghost", 0.0)
    assert [(s.status, s.step) for s in subs] == [("failed", "build")] * 2, subs
    for s in subs:
        assert "/" not in s.reason and "submit it again" in s.reason, s.reason
        note = next((n for n in notes if n.startswith(f"submission {s.id} ({s.entrant}) failed")), None)
        assert note is not None and "not counted in ghost's day" in note and "/" not in note, notes
    assert counted == 0


def test_the_queue_waits_for_files_being_moved_in_rather_than_call_them_lost(tmp_path: Path) -> None:
    """The desk keeps a submission, then moves its files in; the queue's thread, looking every 2 s,
    could see the row between the two and call its files lost. The desk does both under the intake
    lock, and the queue waits on it before it decides: here the submission is built once its files are
    in (the build then fails on a docker that is not there: not a loss of files)."""
    import threading

    from arena.competition.pipeline import BuildQueue, submission_folder
    from arena.config import CompetitionSettings

    out = tmp_path / "out"
    with CompetitionBook(out) as book:
        queue = BuildQueue(book, CompetitionSettings(), out, lambda: None, lambda _: None, client=NoDocker())
        with queue.intake:  # as Desk.receive holds it, between keeping the row and moving the files in
            sub = book.add_submission("eve", "evebot", "1", "python", "evebot:EveBot")
            looking = threading.Thread(target=queue.process, args=(sub,))
            looking.start()
            looking.join(2)
            assert looking.is_alive()  # waiting for the move, not failing the submission meanwhile
            folder = submission_folder(out, sub.id)
            folder.mkdir(parents=True)
            (folder / "evebot.py").write_text("from sdk.bot import Bot\n\nclass EveBot(Bot):\n    pass\n")
        looking.join(60)
        got = book.get(sub.id)
    assert got is not None and got.status == "failed" and "lost its files" not in got.reason, got
    assert "docker was asked" in got.reason, got


def test_the_next_start_removes_the_files_no_submission_needs(tmp_path: Path, start: Callable[[], list[str]]) -> None:
    """`arena serve` killed between a decision and the removal of the files it frees (a rejection kept,
    a newer version accepted and the old one retired), or a folder whose submission the book does not
    have (a book restored from an older backup): the next start removes them, in one line, and keeps
    what is still needed: a scheduled entrant's unpacked files (what it would be rebuilt from), a failed
    one's (arena competition retry builds it again), every receipt (the archive's digest and size)."""
    out = tmp_path / "out"
    subs = out / "submissions"

    def folder(sid: int, *names: str) -> Path:
        for name in names:
            path = subs / str(sid) / name
            if name == "bot":
                path.mkdir(parents=True)
                (path / "evebot.py").write_bytes(b"x" * 1000)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"y" * 100)
        return subs / str(sid)

    with CompetitionBook(out) as book:
        def sub(version: str, kind: str, status: str) -> int:
            sid = book.add_submission("eve", "evebot", version, kind, "evebot:EveBot").id
            book.set_status(sid, status, image=f"img:{version}")
            return sid

        rejected = folder(sub("1", "python", "rejected"), "bot", "upload.json")
        rejected_image = folder(sub("2", "image", "rejected"), "image.tar", "upload.json")
        retired = sub("3", "python", "rated")
        book.retire(retired)
        retired_folder = folder(retired, "bot", "upload.json")
        accepted_image = folder(sub("4", "image", "accepted"), "image.tar", "upload.json")
        failed = folder(sub("5", "python", "failed"), "bot", "upload.json")
        playing = folder(sub("6", "python", "playing"), "bot", "upload.json")
    orphan = folder(99, "bot", "upload.json")
    notes = start()
    assert not orphan.exists()
    for gone in (rejected, rejected_image, retired_folder, accepted_image):
        assert sorted(p.name for p in gone.iterdir()) == ["upload.json"], gone
    for kept in (failed, playing):
        assert sorted(p.name for p in kept.iterdir()) == ["bot", "upload.json"], kept
    said = [n for n in notes if "no longer needed" in n]
    assert said == ["removed 5 submission file tree(s) no longer needed (3300 bytes): rejected or retired "
                    "submissions' files, and folders of no submission, that a stopped arena serve left"], notes
    from arena.competition.pipeline import prune_submission_files

    with CompetitionBook(out) as book:
        assert prune_submission_files(book, out) == (0, 0)  # nothing left for another start
