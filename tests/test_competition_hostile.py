"""A hostile competitor's uploads against the Submission service (issue 22): the per-day limit under
concurrent uploads, one upload at a time per competitor, and a stalled upload. The service runs over a
real loopback socket in a thread of this process (no docker: the build queue is not woken)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import subprocess
import tarfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import IO, Any

import grpc
import pytest

from allfours.v1 import submission_pb2 as spb
from allfours.v1 import submission_pb2_grpc as spb_grpc
from arena.competition import service
from arena.competition.book import CompetitionBook, Submission
from arena.competition.desk import Desk, Header, Refused
from arena.competition.pipeline import submission_tag
from arena.config import CompetitionSettings
from tests.docker_helpers import add_tar_file

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests


def _archive() -> bytes:
    """A tar.gz of a Python bot ``bot:Bot`` (enough for the desk's plan; it is never built here)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        add_tar_file(tar, "bot.py", b"class Bot:\n    pass\n")
    return buf.getvalue()


def _upload(desk: Desk, competitor: str, header: Header, archive: IO[bytes]) -> Submission:
    """``archive`` sent as the Submission service sends it on: counted as its upload begins (:meth:`Desk.begin_upload`,
    the one way an upload is counted), then received and settled."""
    counted = desk.begin_upload(competitor, desk.clock())
    try:
        return desk.receive(competitor, header, archive, counted)
    finally:
        desk.settle(counted)


def _desk(tmp_path: Path, per_day: int = 1) -> Desk:
    return Desk(CompetitionSettings(submissions_per_day=per_day), tmp_path, CompetitionBook(tmp_path), lambda: None)


def test_uploads_that_passed_the_check_together_do_not_pass_the_daily_limit(tmp_path: Path) -> None:
    """Two uploads both pass Submit's early check (none kept yet); the second to be kept is refused."""
    desk = _desk(tmp_path, per_day=1)
    desk.book.add_competitor("eve")
    first, second = desk.begin_upload("eve", desk.clock()), desk.begin_upload("eve", desk.clock())
    desk.receive("eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()), first)
    with pytest.raises(Refused, match="1 submissions today, the limit of a day") as e:
        desk.receive("eve", Header("evebot", "2", "python", "bot:Bot"), io.BytesIO(_archive()), second)
    assert e.value.kind == "exhausted"
    assert len(desk.book.submissions("eve")) == 1
    assert not list((tmp_path / "submissions").glob("incoming-*"))  # nothing left of the refused one



#: A UTC midnight: 2024-10-04T00:00:00Z.
MIDNIGHT = 20_000 * 86_400.0


def uploads_across_midnight(tmp_path: Path) -> tuple[Desk, list[float], int]:
    """A desk allowing one submission a day (its clock ``now[0]``) and competitor eve's two uploads begun before
    MIDNIGHT while that allowed one: the one begun second kept and settled before midnight. Returns the desk,
    the clock and the first upload's count (:meth:`Desk.begin_upload`), still under way."""
    now = [MIDNIGHT - 10]
    desk = Desk(CompetitionSettings(submissions_per_day=1), tmp_path, CompetitionBook(tmp_path), lambda: None,
                clock=lambda: now[0])
    desk.book.add_competitor("eve")
    late, early = desk.begin_upload("eve", MIDNIGHT - 10), desk.begin_upload("eve", MIDNIGHT - 5)
    now[0] = MIDNIGHT - 4
    desk.receive("eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()), early)
    desk.settle(early)
    return desk, now, late


def test_an_upload_that_spans_midnight_is_charged_to_the_day_it_began(tmp_path: Path) -> None:
    """An upload began before a UTC midnight and kept after it was checked, as it was kept, against the new
    day's counts (less its own refusal, which is in the old day): an upload begun beside another while the old
    day's limit allowed one was kept past that limit, and its submission counted in the new day, which it never
    was checked against as it began. Now the day is the one it began on, for every check and count (clock
    injected)."""
    desk, now, late = uploads_across_midnight(tmp_path)
    now[0] = MIDNIGHT + 5
    with pytest.raises(Refused, match=r"^1 submissions today, the limit of a day: try again after "
                                      r"2024-10-04T00:00:00Z \(in 0 s\)$") as e:
        desk.receive("eve", Header("evebot", "2", "python", "bot:Bot"), io.BytesIO(_archive()), late)
    desk.settle(late)
    assert e.value.kind == "exhausted"
    now[0] = MIDNIGHT + 6  # the new day is whole: one upload begun in it is kept, and counted in it
    kept = _upload(desk, "eve", Header("evebot", "3", "python", "bot:Bot"), io.BytesIO(_archive()))
    assert kept.created_at == MIDNIGHT + 6
    assert [desk.book.count_since("eve", day, day + 86_400) for day in (MIDNIGHT - 86_400, MIDNIGHT)] == [1, 1]
    assert [desk.book.refusals_since("eve", day, day + 86_400) for day in (MIDNIGHT - 86_400, MIDNIGHT)] == [0, 0]


def test_a_kept_upload_that_spans_midnight_counts_in_the_day_it_began(tmp_path: Path) -> None:
    """The other side of the midnight: an upload begun before it and kept after counted in the new day, so
    the competitor's first upload of that day was refused though none of it had begun in it."""
    midnight = 20_000 * 86_400.0
    now = [midnight - 10]
    desk = Desk(CompetitionSettings(submissions_per_day=1), tmp_path, CompetitionBook(tmp_path), lambda: None,
                clock=lambda: now[0])
    desk.book.add_competitor("eve")
    spanning = desk.begin_upload("eve", midnight - 10)
    now[0] = midnight + 5
    sub = desk.receive("eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()), spanning)
    desk.settle(spanning)
    assert sub.created_at == midnight - 10
    now[0] = midnight + 6
    assert _upload(desk, "eve", Header("evebot", "2", "python", "bot:Bot"), io.BytesIO(_archive())).version == "2"


def test_an_upload_is_counted_one_way_only(tmp_path: Path) -> None:
    """``Desk.receive`` without the refusal its upload began with (:meth:`Desk.begin_upload`) counted a refusal
    itself, a second way to count an upload that only tests took. It needs that refusal now: nothing is taken in,
    counted or kept without it."""
    desk = _desk(tmp_path)
    desk.book.add_competitor("eve")
    with pytest.raises(TypeError, match="counted"):
        desk.receive("eve", Header("evebot", "1", "", ""), io.BytesIO(_archive()))  # type: ignore[call-arg]
    assert desk.book.refusals_since("eve", 0.0) == 0 and desk.book.submissions("eve") == []


def test_uploads_refused_once_unpacked_are_limited_a_day(tmp_path: Path) -> None:
    """An upload refused after it was unpacked (no bot in it, a version taken) counted in no limit, so a
    competitor could send them without end, one at a time, each spooled, unpacked and planned by the
    server. Past ``refused_per_day`` such refusals in a UTC day the competitor's uploads are not taken in
    (``exhausted``, with when to retry), across a restart (the book keeps them), another competitor
    untouched; an accepted upload counts only in ``submissions_per_day``."""
    import time

    settings = CompetitionSettings(submissions_per_day=10, refused_per_day=2)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        add_tar_file(tar, "README", b"no bot here\n")
    no_bot = buf.getvalue()
    with CompetitionBook(tmp_path) as book:
        desk = Desk(settings, tmp_path, book, lambda: None)
        for who in ("eve", "bob"):
            book.add_competitor(who)
        _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
        with pytest.raises(Refused) as e:
            _upload(desk, "eve", Header("evebot", "2", "python", "bot:Bot"), io.BytesIO(no_bot))
        assert e.value.kind == "invalid"
        with pytest.raises(Refused) as e:  # evebot@1 again: a version taken
            _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
        assert e.value.kind == "exists"
        desk.check_open("bob", time.time())
    with CompetitionBook(tmp_path) as book:  # arena serve started again
        desk = Desk(settings, tmp_path, book, lambda: None)
        with pytest.raises(Refused, match=r"^2 uploads of yours refused today, the limit of a day \(check a bot "
                                          r"with arena bots build and python -m sdk.conformance first\): try "
                                          r"again after \d{4}-\d\d-\d\dT00:00:00Z \(in \d+ s\)$") as e:
            _upload(desk, "eve", Header("evebot", "3", "python", "bot:Bot"), io.BytesIO(_archive()))
        assert e.value.kind == "exhausted"
        _upload(desk, "bob", Header("bobbot", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
        desk.check_open("eve", time.time() + 86400)  # the next day
        assert [s.version for s in book.submissions("eve")] == ["1"]
    assert not list((tmp_path / "submissions").glob("incoming-*"))


def test_a_kind_that_is_not_the_files_is_invalid_and_counted(tmp_path: Path) -> None:
    """A kind given that is not the files' (a Python bot sent as ``node``) is refused ``invalid`` in one line,
    leaves no files, and counts in ``refused_per_day`` as the intake's other refusals do."""
    with CompetitionBook(tmp_path) as book:
        desk = Desk(CompetitionSettings(refused_per_day=5), tmp_path, book, lambda: None)
        book.add_competitor("eve")
        with pytest.raises(Refused, match=r"^kind node was given, but the files make a python bot$") as e:
            _upload(desk, "eve", Header("evebot", "1", "node", "bot:Bot"), io.BytesIO(_archive()))
        assert e.value.kind == "invalid"
        assert book.refusals_since("eve", 0.0) == 1 and book.submissions("eve") == []
    assert not list((tmp_path / "submissions").glob("incoming-*"))


def test_an_archive_withdrawn_during_its_intake_is_invalid_and_counted(tmp_path: Path) -> None:
    """An upload whose call ends while it is taken in (:func:`withdrawable`: its reads refused from then on, here
    once its digest is taken, as the unpack reads) is refused ``invalid`` in one line, leaves no files and counts
    in ``refused_per_day`` as the intake's other refusals do."""
    from arena.competition.intake import WITHDRAWN, withdrawable

    reads = iter(range(100))
    with CompetitionBook(tmp_path) as book:
        desk = Desk(CompetitionSettings(refused_per_day=5), tmp_path, book, lambda: None)
        book.add_competitor("eve")
        archive = withdrawable(io.BytesIO(_archive()), lambda: next(reads) >= 3)
        with pytest.raises(Refused, match=f"^{WITHDRAWN}$") as e:
            _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), archive)
        assert e.value.kind == "invalid"
        assert book.refusals_since("eve", 0.0) == 1 and book.submissions("eve") == []
    assert not list((tmp_path / "submissions").glob("incoming-*"))


def test_a_folder_bot_retired_by_a_remote_registration_leaves_only_its_receipt(tmp_path: Path) -> None:
    """A remote version past ``in_play`` retires the competitor's accepted folder bot at once, without
    the build queue: its unpacked files (it ran from its image) go then, not at the next decision or
    start; the receipt kept by the desk (the archive's SHA-256 and size, 0600) stays."""
    import hashlib
    import json

    desk = _desk(tmp_path, per_day=10)
    desk.book.add_competitor("eve")
    archive = _archive()
    sub = _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(archive))
    folder = tmp_path / "submissions" / str(sub.id)
    receipt = folder / "upload.json"
    assert json.loads(receipt.read_text()) == {"sha256": hashlib.sha256(archive).hexdigest(), "bytes": len(archive)}
    assert (receipt.stat().st_mode & 0o777, folder.stat().st_mode & 0o777) == (0o600, 0o700)
    desk.book.set_status(sub.id, "accepted", image="evebot-image")  # as the build queue accepts it
    desk.register_remote("eve", "evebot", "2")
    assert desk.book.submissions("eve")[0].retired
    assert sorted(p.name for p in folder.iterdir()) == ["upload.json"]

def test_a_remote_registration_stands_when_the_retired_bots_files_cannot_be_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The removal of a retired folder bot's files ran after the remote entry was accepted and its token's
    digest stored, and before it was enrolled: an OSError there ended RegisterRemote with the entry kept
    but its token (told only in the answer) lost and the bot not scheduled. The registration stands now;
    the build queue's next prune removes the files (and says it if it cannot)."""
    import arena.competition.desk as desk_module

    def refuse(*_: object) -> tuple[int, int]:
        raise PermissionError(13, "Permission denied", "submissions/1/bot")

    enrolled: list[int] = []
    desk = _desk(tmp_path, per_day=10)
    desk.enroll = lambda: enrolled.append(1)
    desk.book.add_competitor("eve")
    sub = _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
    desk.book.set_status(sub.id, "accepted", image="evebot-image")
    monkeypatch.setattr(desk_module, "prune_submission_files", refuse)
    entry, token = desk.register_remote("eve", "evebot", "2")
    assert entry.status == "accepted" and token and enrolled == [1]
    assert desk.book.submissions("eve")[0].retired


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, Desk]]:
    """The service over a fresh desk on a loopback port: (address, eve's token, the desk)."""
    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    started, done = threading.Event(), threading.Event()
    ports: list[int] = []

    async def main() -> None:
        server = grpc.aio.server()
        service.add_to_server(desk)(server)
        ports.append(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        started.set()
        await asyncio.to_thread(done.wait)
        await server.stop(None)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(30)
    yield f"127.0.0.1:{ports[0]}", token, desk
    done.set()
    thread.join(30)
    desk.book.close()


def _stalled(release: threading.Event) -> Iterator[spb.SubmitRequest]:
    """A header, one chunk, then nothing until ``release`` (a competitor who never finishes)."""
    yield spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="1", kind=spb.SUBMISSION_KIND_PYTHON,
                                                    entry="bot:Bot"))
    yield spb.SubmitRequest(chunk=b"\x1f\x8b")
    release.wait(60)


def test_one_upload_at_a_time_per_competitor(served: tuple[str, str, Desk]) -> None:
    """Every upload spools up to its limit to disk: a second one while the first is under way is refused."""
    address, token, desk = served
    under_way = threading.Event()
    check = desk.check_open

    def check_open(competitor: str, now: float) -> None:
        check(competitor, now)
        under_way.set()

    desk.check_open = check_open  # type: ignore[method-assign]
    meta = (("authorization", f"Bearer {token}"),)
    release = threading.Event()
    with grpc.insecure_channel(address) as channel:
        stub = spb_grpc.SubmissionServiceStub(channel)
        first = stub.Submit.future(_stalled(release), metadata=meta)
        try:
            assert under_way.wait(30)  # the first upload holds the competitor's slot
            with pytest.raises(grpc.RpcError) as e:
                stub.Submit(iter([spb.SubmitRequest(header=spb.SubmitHeader(name="evebot"))]), metadata=meta)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value.details()
            assert "an upload of yours is under way" in (e.value.details() or "")
        finally:
            release.set()
            first.cancel()


def test_a_stalled_upload_ends_at_the_upload_timeout(served: tuple[str, str, Desk],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    address, token, _ = served
    monkeypatch.setattr(service, "UPLOAD_TIMEOUT_S", 1.0)
    release = threading.Event()
    with grpc.insecure_channel(address) as channel:
        stub = spb_grpc.SubmissionServiceStub(channel)
        try:
            with pytest.raises(grpc.RpcError) as e:
                stub.Submit(_stalled(release), metadata=(("authorization", f"Bearer {token}"),), timeout=60)
        finally:
            release.set()
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED, e.value.details()
    assert "the upload took over 1 s" in (e.value.details() or "")


def test_a_competitor_lists_their_games_and_reads_their_seat_logs_on_the_command_line(
        served: tuple[str, str, Desk], tmp_path: Path) -> None:
    """docs/competition.md sent a competitor to /me (a browser) or to Python (``SubmissionClient``) for
    their games and seat logs: ``arena submissions`` listed submissions only. ``--games`` lists the games
    (as ListGames), ``--log GAME SEAT`` prints that seat's log as stored (GetSeatLog); another's seat is
    one line and exit 1."""
    import json
    import os
    import sys

    address, token, desk = served
    desk.register_remote("eve", "evebot", "next")
    game = "cup-p0-1-g0"
    with (tmp_path / "games.jsonl").open("w") as f:
        f.write(json.dumps({"game_id": game, "a": "evebot@1", "b": "house", "scores": [14, 9], "winner": 0,
                            "record": "records/x.jsonl"}) + "\n")
    (tmp_path / "logs" / game).mkdir(parents=True)
    (tmp_path / "logs" / game / "seat0.log").write_bytes(b"evebot: hello from seat 0\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": token, "PYTHONPATH": str(root)}

    def submissions(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arena.cli", "submissions", "--arena", address, *extra],
                              capture_output=True, text=True, timeout=120, env=env, cwd=root)

    games = submissions("--games")
    assert games.returncode == 0, games.stderr
    row = next(line for line in games.stdout.splitlines() if game in line)
    assert "evebot@1" in row and "house" in row and "14-9" in row, games.stdout
    log = submissions("--log", game, "0")
    assert log.returncode == 0 and log.stdout == "evebot: hello from seat 0\n", log
    other = submissions("--log", game, "1")
    assert other.returncode == 1 and other.stdout == "", other
    assert other.stderr.strip() == f"error: PERMISSION_DENIED: seat 1 of game {game} is not yours", other.stderr
    bad = submissions("--log", game, "one")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_a_competitor_registers_a_remote_bot_on_the_command_line(served: tuple[str, str, Desk]) -> None:
    """docs/competition.md had a competitor register a bot that runs on their own machine in Python
    (``SubmissionClient(...).register_remote``), whatever their bot's language. ``arena submit --remote
    --name NAME`` does it: the bot token alone on stdout (once), the entrant and how to run its workers
    on stderr; the token is the lobby's for that entrant. Its line and `arena submissions` say its games wait
    for its workers until the lobby has seen one (they are not forfeited meanwhile)."""
    import os
    import sys

    from arena.competition.desk import WAITING_NOTE

    address, token, desk = served
    came: set[str] = set()  # the entrants a worker of which the lobby has seen (Lobby.came)
    desk.workers_came = came.__contains__
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": token, "PYTHONPATH": str(root)}

    def submit(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arena.cli", "submit", "--arena", address, *extra],
                              capture_output=True, text=True, timeout=120, env=env, cwd=root)

    done = submit("--remote", "--name", "evejs")
    assert done.returncode == 0, done.stderr
    bot_token = done.stdout.strip()
    assert len(bot_token) >= 32 and "\n" not in bot_token
    assert "evejs@1" in done.stderr and "--name evejs@1" in done.stderr and bot_token not in done.stderr
    assert "#1 evejs@1 accepted (its games wait for its workers: none has connected yet" in done.stderr, done.stderr
    assert "wait for its first worker (none is forfeited before one connects" in done.stderr, done.stderr

    def listed() -> str:  # `arena submissions`: a table with the reason column, on a terminal wide enough
        done = subprocess.run([sys.executable, "-m", "arena.cli", "submissions", "--arena", address],
                              capture_output=True, text=True, timeout=120, env={**env, "COLUMNS": "400"}, cwd=root)
        assert done.returncode == 0, done.stderr
        row = next(ln for ln in done.stdout.splitlines() if "evejs@1" in ln)
        return " ".join(row.replace("│", " ").split())

    assert listed() == f"1 evejs@1 (final entry) accepted 0 {WAITING_NOTE}"
    came.add("evejs@1")  # its first worker registered with the lobby
    assert listed() == "1 evejs@1 (final entry) accepted 0"
    assert desk.entrants("eve") == {"evejs@1"}
    again = submit("--remote", "--name", "evejs", "--version", "1")
    assert again.returncode == 1 and "ALREADY_EXISTS" in again.stderr and again.stdout == "", again
    both = submit("--remote", "somefolder", "--name", "x")
    assert both.returncode == 2 and len(both.stderr.strip().splitlines()) == 1, both.stderr


def test_a_cross_site_form_cannot_sign_in_or_out(tmp_path: Path) -> None:
    """Login CSRF: another site's form posting the attacker's token would sign the victim's browser in as
    the attacker (SameSite guards sending a cookie, not setting one); a cross-site sign-out would end the
    victim's session. Both are refused by the request's Origin / Sec-Fetch-Site, one line."""
    from starlette.testclient import TestClient

    from arena.web.app import create_app

    with CompetitionBook(tmp_path) as book:
        token = book.add_competitor("mal")
    form = {"content-type": "application/x-www-form-urlencoded"}
    c = TestClient(create_app(tmp_path, bootstrap=20))
    for foreign in ({"origin": "http://evil.test"}, {"sec-fetch-site": "cross-site"},
                    {"origin": "null", "sec-fetch-site": "same-site"}):
        r = c.post("/me/login", content=f"token={token}", headers={**form, **foreign}, follow_redirects=False)
        assert r.status_code == 403 and "af_session" not in r.headers.get("set-cookie", ""), r.text
        assert "another site" in r.text
    for own in ({"origin": "http://testserver"}, {"origin": "null", "sec-fetch-site": "same-origin"}):
        # chromium sends Origin: null from this site's own form (the pages' no-referrer policy)
        ok = c.post("/me/login", content=f"token={token}", follow_redirects=False, headers={**form, **own})
        assert ok.status_code == 303 and "af_session" in ok.headers["set-cookie"]
    out = c.post("/me/logout", headers={"origin": "http://evil.test"}, follow_redirects=False)
    assert out.status_code == 403 and "af_session" not in out.headers.get("set-cookie", "")
    assert 'id="who"' in c.get("/me").text  # still signed in


def test_a_house_bots_name_is_refused(tmp_path: Path) -> None:
    """A host's bot entered in two versions is ``heuristic@1``, ``heuristic@2``: a competitor's
    ``heuristic`` version 1 would be the same entrant, seeing the house bot's games and seat logs as
    its own (and, registered as remote, a bot token for the house entrant)."""
    desk = Desk(CompetitionSettings(), tmp_path, CompetitionBook(tmp_path), lambda: None,
                house=frozenset({"heuristic"}))
    desk.book.add_competitor("eve")
    with pytest.raises(Refused, match="the bot name 'heuristic' belongs to the host's bots") as e:
        _upload(desk, "eve", Header("heuristic", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
    assert e.value.kind == "exists"
    with pytest.raises(Refused, match="belongs to the host's bots"):
        desk.register_remote("eve", "heuristic", "1")
    assert desk.book.submissions("eve") == []
    assert desk.entrants("eve") == set()


#: Names a competitor could take to pass for the house bot ``house2``: equal to it once case and every
#: character that is not a letter or digit are gone.
HOUSE_LOOKALIKES = ["house2.", "house-2", "house_2", "house.2", "h-o-u-s-e-2", "house2-", "House-2", "HOUSE2"]


@pytest.mark.parametrize("name", HOUSE_LOOKALIKES)
def test_a_name_like_a_house_bots_is_refused(tmp_path: Path, name: str) -> None:
    """``register_remote("house2.")`` was accepted (entrant ``house2.@1``) beside the house bot ``house2``:
    on the leaderboard it passes for the host's bot. Refused as the house bot's own name is, one line."""
    desk = Desk(CompetitionSettings(submissions_per_day=10), tmp_path, CompetitionBook(tmp_path), lambda: None,
                house=frozenset({"house2"}))
    desk.book.add_competitor("eve")
    line = f"the bot name {name!r} is too like 'house2', a name of the host's bots: choose another --name"
    with pytest.raises(Refused) as e:
        desk.register_remote("eve", name, "1")
    assert (e.value.kind, str(e.value)) == ("exists", line)
    with pytest.raises(Refused) as e:
        _upload(desk, "eve", Header(name, "1", "python", "bot:Bot"), io.BytesIO(_archive()))
    assert (e.value.kind, str(e.value)) == ("exists", line)
    assert desk.book.submissions("eve") == []


@pytest.mark.parametrize("name", ["my-bot", "my_bot", "mybot.", "my.bot", "m-y-b-o-t", "mybot-"])
def test_a_name_like_another_competitors_is_refused(tmp_path: Path, name: str) -> None:
    """``mybot`` is mal's: eve's ``my-bot`` would pass for it. Refused as ``mybot`` itself is, one line."""
    desk = _desk(tmp_path, per_day=10)
    desk.book.add_competitor("mal")
    desk.book.add_competitor("eve")
    desk.register_remote("mal", "mybot", "1")
    with pytest.raises(Refused) as e:
        desk.register_remote("eve", name, "1")
    assert (e.value.kind, str(e.value)) == (
        "exists", f"the bot name {name!r} is too like 'mybot', another competitor's: choose another --name")
    with pytest.raises(Refused, match=f"the bot name {name!r} is too like 'mybot', another competitor's"):
        _upload(desk, "eve", Header(name, "1", "python", "bot:Bot"), io.BytesIO(_archive()))
    assert desk.book.submissions("eve") == []


def test_names_unlike_any_taken_one_still_work(tmp_path: Path) -> None:
    """Other letters or digits make another name (``house3``, ``mybot2``, ``my-bots``), for anyone; and a
    competitor's own names stay theirs, lookalikes of them included."""
    desk = Desk(CompetitionSettings(submissions_per_day=10), tmp_path, CompetitionBook(tmp_path), lambda: None,
                house=frozenset({"house2"}))
    for who in ("mal", "eve"):
        desk.book.add_competitor(who)
    desk.register_remote("mal", "mybot", "1")
    made = [desk.register_remote("eve", name, "1")[0] for name in ("house3", "mybot2", "my-bots", "house")]
    made.append(_upload(desk, "eve", Header("ahouse2", "1", "python", "bot:Bot"), io.BytesIO(_archive())))
    made += [desk.register_remote("mal", name, "next")[0] for name in ("mybot", "my-bot")]
    assert [s.entrant for s in made] == ["house3@1", "mybot2@1", "my-bots@1", "house@1", "ahouse2@1",
                                         "mybot@2", "my-bot@1"]


def test_a_prebuilt_image_declaring_a_volume_is_rejected(tmp_path: Path) -> None:
    """``VOLUME /data`` in an image gives each of its containers a writable anonymous volume on the host's
    disk, past ``--read-only`` and the 16 MiB /tmp: a bot could fill the host's disk. Refused at load."""
    import os

    from arena.competition.intake import copy_image_archive
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from arena.hosting.bots_build import BuildError
    from tests.docker_helpers import docker_client, scratch_image

    client = docker_client()
    tag = f"allfours-test-volume:{os.getpid()}"
    image = scratch_image(client, tag, "VOLUME /data\n")
    book = CompetitionBook(tmp_path)
    settings = CompetitionSettings(image_prefix="allfours-test-volume-sub")
    try:
        saved = b"".join(image.save(named=True))
        sub = book.add_submission("eve", "evevol", str(os.getpid()), "image", "")
        folder = submission_folder(tmp_path, sub.id).parent
        folder.mkdir(parents=True)
        copy_image_archive(io.BytesIO(saved), folder / IMAGE_ARCHIVE, settings.image_bytes)
        queue = BuildQueue(book, settings, tmp_path, lambda: None, lambda _: None, client=client)
        with pytest.raises(BuildError, match="declares volumes") as e:
            queue._build(sub)
        assert "\n" not in str(e.value)
        assert not client.images.list(name=submission_tag(settings, tmp_path, "evevol", sub.version).partition(":")[0])
        assert client.images.get(tag).id == image.id  # another's tag of the same image is left alone
    finally:
        client.images.remove(tag, force=True)
        book.close()


def test_a_revoked_competitors_session_ends(tmp_path: Path) -> None:
    """``arena competitor add --revoke`` takes the token away; a browser signed in before kept its
    session (my page, my logs) until the arena restarted."""
    from starlette.testclient import TestClient

    from arena.web.app import create_app

    with CompetitionBook(tmp_path) as book:
        token = book.add_competitor("mal")
    c = TestClient(create_app(tmp_path, bootstrap=20))
    c.post("/me/login", content=f"token={token}", headers={"content-type": "application/x-www-form-urlencoded"})
    assert 'id="who"' in c.get("/me").text
    with CompetitionBook(tmp_path) as book:
        assert book.revoke_competitor("mal")
    assert 'id="who"' not in c.get("/me").text
    assert c.get("/me/logs/g1/0").status_code == 401


def test_the_hosts_console_gets_no_escape_sequences_from_a_submission(tmp_path: Path) -> None:
    """docker's refusal of an image archive quotes the archive's own file names: an ESC sequence in
    them reached the host's console through the queue's notes (clearing it, retitling the terminal)."""
    import json

    from arena.competition.intake import copy_image_archive
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from tests.docker_helpers import docker_client

    client = docker_client()
    manifest = json.dumps([{"Config": "\x1b[2J\x1b]0;owned\x07.json", "RepoTags": None, "Layers": []}]).encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        add_tar_file(tar, "manifest.json", manifest)
    archive.seek(0)
    book = CompetitionBook(tmp_path)
    try:
        sub = book.add_submission("eve", "evesc", "1", "image", "")
        folder = submission_folder(tmp_path, sub.id).parent
        folder.mkdir(parents=True)
        copy_image_archive(archive, folder / IMAGE_ARCHIVE, 1024 * 1024)
        notes: list[str] = []
        BuildQueue(book, CompetitionSettings(image_prefix="allfours-test-esc"), tmp_path, lambda: None,
                   notes.append, client=client).process(sub)
        assert book.get(sub.id).status == "rejected"  # type: ignore[union-attr]
        assert notes and all(n.isprintable() for n in notes), notes
    finally:
        book.close()


def test_a_refusal_names_no_path_of_the_server(tmp_path: Path) -> None:
    """``arena bots build``'s plan names the folder it was given: for a submission, the server's own
    ``OUTPUT/submissions/incoming-...`` path went to the competitor."""
    desk = _desk(tmp_path)
    desk.book.add_competitor("eve")
    with pytest.raises(Refused, match="the archive: a Python bot needs --entry module:Class") as e:
        _upload(desk, "eve", Header("evebot", "1", "", ""), io.BytesIO(_archive()))
    assert str(tmp_path) not in str(e.value)


@pytest.mark.parametrize("entry", ["n" * 300, "bot\x00.js"], ids=["name too long", "nul"])
def test_an_entry_that_names_no_file_is_one_line_naming_no_path_of_the_server(tmp_path: Path, entry: str) -> None:
    """A Node.js entry the file system cannot take (a name over 255 bytes, a NUL) raised OSError or ValueError
    out of the plan: the competitor read ``UNKNOWN: Unexpected <class 'OSError'>: [Errno 36] File name too
    long: '/OUTPUT/submissions/incoming-…/bot/nnn…'``, the server's own path. Now the plan's one line."""
    desk = _desk(tmp_path)
    desk.book.add_competitor("eve")
    with pytest.raises(Refused, match="the entry must be a file inside the folder") as e:
        _upload(desk, "eve", Header("evejs", "1", "", entry), io.BytesIO(_node_archive(b'{"main": "bot.js"}')))
    assert e.value.kind == "invalid" and str(tmp_path) not in str(e.value) and len(str(e.value)) < 300, str(e.value)


def test_a_build_that_keeps_talking_stops_at_the_build_time_limit(tmp_path: Path) -> None:
    """The build limit was docker's read timeout: a build printing a line a second (npm runs the
    package's own preinstall script) never went quiet for ``build_s``, so it held the one-at-a-time
    build queue as long as it liked. It is a limit on the whole build now."""
    import json

    from arena.hosting.bots_build import BuildError, build_image, plan_build
    from tests.docker_helpers import base_image, docker_client

    client = docker_client()
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.js").write_text("")
    script = "for i in $(seq 40); do echo still building $i; sleep 1; done"
    (bot / "package.json").write_text(json.dumps({"name": "talker", "version": "1.0.0", "main": "bot.js",
                                                  "scripts": {"preinstall": script}}))
    plan = plan_build(bot, "allfours-test-talker", "1", tag="allfours-test-talker:1")
    try:
        with pytest.raises(BuildError, match="over the build time limit of 10 s") as e:
            build_image(plan, base_image("node"), client=client, timeout_s=10)
        assert "\n" not in str(e.value)
    finally:
        for image in client.images.list(name="allfours-test-talker"):
            client.images.remove(image.id, force=True)


def test_remote_registrations_together_do_not_pass_the_daily_limit(tmp_path: Path) -> None:
    """RegisterRemote checked the limit before the desk kept the entry: calls sent together all passed."""
    desk = _desk(tmp_path, per_day=1)
    desk.book.add_competitor("eve")
    desk.register_remote("eve", "everemote", "1")
    with pytest.raises(Refused, match="the limit of a day") as e:
        desk.register_remote("eve", "everemote", "2")
    assert e.value.kind == "exhausted"
    assert [s.entrant for s in desk.book.submissions("eve")] == ["everemote@1"]


def test_a_competitor_signing_in_again_and_again_keeps_a_few_sessions(tmp_path: Path) -> None:
    """Every sign-in made a session kept until the arena stopped: a script signing in in a loop grew
    the web server (now the book) without bound. A competitor keeps their newest few; older ones end."""
    import contextlib
    import sqlite3

    from arena.web.competitor import SESSIONS_EACH, Sessions

    sessions = Sessions()
    with CompetitionBook(tmp_path) as book:
        ids = [sessions.open(book, "mal") for _ in range(SESSIONS_EACH + 50)]
        other = sessions.open(book, "ann")
        assert sessions.who(book, ids[0]) is None and sessions.who(book, ids[-1]) == "mal"
        assert sum(sessions.who(book, s) == "mal" for s in ids) == SESSIONS_EACH
        assert sessions.who(book, other) == "ann"
    with contextlib.closing(sqlite3.connect(tmp_path / "competition.sqlite")) as db:
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone() == (SESSIONS_EACH + 1,)


def test_a_fork_bomb_in_a_build_stops_at_the_builds_pids_limit(tmp_path: Path) -> None:
    """npm runs a Node submission's preinstall script as root in the build. Docker's build API has no
    pids limit, so each step's container had none (``pids.max`` = max): a fork bomb there takes every
    pid of the host (1500 sleepers of a build were 1500 processes of the host; ``kernel.pid_max`` is
    32768, well within the build's 2 GiB). The competition's builds run under a parent cgroup with
    :data:`arena.hosting.sandbox.BUILD_PIDS`; here a script that starts up to 1000 processes gets
    fewer than that limit, the build still ends (and is accepted), and stopping the queue removes the
    cgroup."""
    import contextlib

    from arena.hosting.sandbox import BUILD_PIDS, run_key
    from tests.docker_helpers import base_image, docker_client, file_in_image, leftovers

    client = docker_client()
    out = tmp_path / "out"
    settings = CompetitionSettings(base_node=base_image("node"), image_prefix="allfours-test-forks")
    tag = submission_tag(settings, out, "forker", "1")
    # the Node base image holds python3: it counts the processes it got, then ends them all
    script = ("python3 -c \"import subprocess\nps = []\ntry:\n    for _ in range(1000): "
              "ps.append(subprocess.Popen(['sleep', '60']))\nexcept OSError: pass\n"
              "open('forked.txt', 'w').write(str(len(ps)))\nfor p in ps: p.kill(); p.wait()\"")
    try:
        got = _build_with_preinstall(client, out, settings, "forker", script)
        assert got.status == "accepted", got
        forked = file_in_image(client, tag, "/opt/bot/forked.txt")
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
    assert 0 < int(forked) < BUILD_PIDS, f"the build's script started {forked} processes"
    assert leftovers(client, run_key(out)) == []


Refusals = list[tuple[grpc.StatusCode, str]]


def _own_channels(target: str, count: int) -> list[grpc.aio.Channel]:
    """``count`` channels to ``target``, each its own connection (channels to one address share theirs by
    default, and a connection carries 64 streams at most)."""
    return [grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)]) for _ in range(count)]


Flood = Callable[[list[grpc.aio.Channel], asyncio.Event], list[Any]]


async def _flood_then(open_channels: Callable[[], list[grpc.aio.Channel]], flood: Flood,
                      enough: Callable[[int], bool], probe: Callable[[], Awaitable[Any]]) -> tuple[Refusals, Any]:
    """On ``open_channels()`` (opened here, in the running loop), open ``flood(channels, release)``'s silent calls
    until ``enough(refusals seen)``, then await ``probe()`` (another client's call, meanwhile); release and close
    the flood; returns its refusals and the probe's answer."""
    channels = open_channels()
    release = asyncio.Event()
    refused, tasks = await _follow_refusals(flood(channels, release), enough)
    answer = await probe()
    release.set()
    await asyncio.gather(*tasks)
    for c in channels:
        await c.close()
    return refused, answer


def _attack_then_stop(attack: Callable[[], Coroutine[Any, Any, tuple[Refusals, Any]]], lobby: Any,
                      desk: Desk) -> tuple[Refusals, Any]:
    """Run ``attack()``, then stop the lobby and close the desk's book whatever happened."""
    try:
        return asyncio.run(attack())
    finally:
        lobby.stop()
        desk.book.close()


async def _listed(target: str, token: str) -> Any:
    """A competitor's ListSubmissions on ``target``: its response, or (code, details)."""
    async with grpc.aio.insecure_channel(target) as ch:
        try:
            return await spb_grpc.SubmissionServiceStub(ch).ListSubmissions(
                spb.ListSubmissionsRequest(), metadata=(("authorization", f"Bearer {token}"),), timeout=30)
        except grpc.aio.AioRpcError as e:
            return (e.code(), e.details())


async def _hello(sock: str) -> tuple[grpc.StatusCode, str]:
    """A seat's Play on the referee's unix ``sock`` with an unknown ticket: (code, details)."""
    from allfours.v1 import referee_pb2 as pb
    from allfours.v1 import referee_pb2_grpc as pb_grpc
    from referee import wire

    async with grpc.aio.insecure_channel(sock) as ch:
        hello = pb.PlayRequest(hello=pb.Hello(ticket="t-no-such", protocol_version=wire.PROTOCOL_VERSION))
        try:
            async for _ in pb_grpc.RefereeServiceStub(ch).Play(iter([hello]), timeout=30):
                pass
        except grpc.aio.AioRpcError as e:
            return (e.code(), e.details() or "")
    return (grpc.StatusCode.OK, "")


def test_silent_lobby_streams_of_one_address_do_not_stop_the_submission_service(tmp_path: Path) -> None:
    """Every stream holds one of the lobby server's 1024 RPC slots before any token is seen (the lobby's
    Connect waits 10 s for a Register). An anonymous client holding 1100 silent Connect streams made the
    server refuse every other call, the Submission service's on the same port too ("Concurrent RPC
    limit exceeded!"). Now the streams of one address waiting to register are capped: the rest are
    refused at once, one line a worker dials again after, and a competitor's call still answers."""
    from allfours.v1 import lobby_pb2_grpc as lpb_grpc
    from arena.lobby.service import PENDING_PER_PEER, Lobby
    from arena.lobby.tokens import TokenBook
    from sdk.worker import is_final

    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    lobby = Lobby("t", TokenBook(), services=[service.add_to_server(desk)])
    address = lobby.start()
    flood = 1100

    def connects(channels: list[grpc.aio.Channel], release: asyncio.Event) -> list[Any]:
        return [lpb_grpc.LobbyServiceStub(channels[k % 8]).Connect(_silent(release), timeout=60) for k in range(flood)]

    async def attack() -> tuple[Refusals, Any]:
        return await _flood_then(lambda: [grpc.aio.insecure_channel(address) for _ in range(8)], connects,
                                 lambda seen: seen >= flood - 1024, lambda: _listed(address, token))

    refused, answer = _attack_then_stop(attack, lobby, desk)
    assert isinstance(answer, spb.ListSubmissionsResponse), answer
    capped = [d for code, d in refused if code == grpc.StatusCode.RESOURCE_EXHAUSTED
              and d == f"{PENDING_PER_PEER} streams of your address are waiting to send a Register: dial again later"]
    # all but the 16 allowed ended at once (now and then gRPC reports one aborted as it opened as CANCELLED)
    assert len(refused) >= flood - PENDING_PER_PEER and len(capped) > flood // 2, refused[:3]
    assert all(code == grpc.StatusCode.CANCELLED for code, d in refused if d not in capped), refused[:3]
    assert not is_final(grpc.StatusCode.RESOURCE_EXHAUSTED, capped[0])  # a worker dials again


def test_silent_play_streams_of_one_address_do_not_stop_the_referee(tmp_path: Path) -> None:
    """A submitted bot reaches the embedded referee from its container (it must, to play). Every Play
    stream holds one of the referee's 2048 RPC slots until its Hello (10 s): one bot holding 4000
    silent streams over 80 connections made the referee refuse every other seat's stream ("Concurrent
    RPC limit exceeded!"), so every other game of the league forfeited. The streams of one address
    waiting for their Hello are capped now: another seat's stream (here a sandboxed process bot's, on the
    referee's unix socket, as the slots are the server's whatever the address) is still answered."""
    from allfours.v1 import referee_pb2_grpc as pb_grpc
    from referee.server import PENDING_HELLOS_PER_PEER, ThreadedReferee

    flood = 4000

    sock = f"unix:{tmp_path}/referee.sock"
    with ThreadedReferee(unix_socket=sock) as ref:
        refused, other = asyncio.run(_flood_then(
            lambda: _own_channels(ref.address, 80), lambda chs, release: [pb_grpc.RefereeServiceStub(chs[k % 80]).Play(
                _silent(release), timeout=60) for k in range(flood)], lambda seen: seen > 0, lambda: _hello(sock)))
    assert other == (grpc.StatusCode.UNAUTHENTICATED, "unknown ticket"), other  # served: its ticket was read
    line = f"{PENDING_HELLOS_PER_PEER} streams of your address are waiting to send a Hello: dial again later"
    capped = [d for code, d in refused if code == grpc.StatusCode.RESOURCE_EXHAUSTED and d == line]
    assert len(refused) >= flood - PENDING_HELLOS_PER_PEER and len(capped) > flood // 2, refused[:3]


def test_a_client_that_gets_the_arenas_tls_wrong_is_told_what_to_change(tmp_path: Path) -> None:
    """A plaintext `arena submissions` against the arena's TLS port said only `UNAVAILABLE: failed to
    connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:PORT: Socket closed` (as for an
    arena that is not there); --tls-ca against a plaintext port, or another certificate, an OpenSSL
    code. Each now ends in what to change; a wrong token over TLS is one precise line."""
    import os
    import subprocess
    import sys

    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook
    from tests.test_tls import make_cert

    cert, key = make_cert(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    other_cert, _ = make_cert(other)
    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    tls = Lobby("t", TokenBook(), tls=(cert.read_bytes(), key.read_bytes()), services=[service.add_to_server(desk)])
    plain = Lobby("t", TokenBook(), services=[service.add_to_server(desk)])
    tls_address, plain_address = tls.start(), plain.start()
    root = Path(__file__).resolve().parents[1]

    def submissions(address: str, *extra: str, tok: str = token) -> tuple[int, str]:
        env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": tok, "PYTHONPATH": str(root)}
        r = subprocess.run([sys.executable, "-m", "arena.cli", "submissions", "--arena", address, *extra],
                           capture_output=True, text=True, timeout=120, env=env, cwd=root)
        return r.returncode, r.stderr.strip()

    try:
        plaintext = submissions(tls_address)
        no_tls_there = submissions(plain_address, "--tls-ca", str(cert))
        another_cert = submissions(tls_address, "--tls-ca", str(other_cert))
        wrong_token = submissions(tls_address, "--tls-ca", str(cert), tok="not-a-token")
        right = submissions(tls_address, "--tls-ca", str(cert))
    finally:
        tls.stop()
        plain.stop()
        desk.book.close()
    assert plaintext[0] == 1 and plaintext[1].endswith(
        f"(does {tls_address} serve TLS? then pass --tls-ca with the certificate the host gives out)"), plaintext
    assert no_tls_there[0] == 1 and no_tls_there[1].endswith(
        f"({plain_address} does not speak TLS: leave out --tls-ca)"), no_tls_there
    assert another_cert[0] == 1 and another_cert[1].endswith(
        f"(the certificate of {tls_address} is not the one of --tls-ca {other_cert}: ask the host for theirs)"), \
        another_cert
    assert wrong_token == (1, "error: UNAUTHENTICATED: unknown or revoked competitor token"), wrong_token
    assert right[0] == 0, right
    for _, text in (plaintext, no_tls_there, another_cert, wrong_token):
        assert "\n" not in text and token not in text


@pytest.mark.parametrize("command", ["submit", "submissions"])
def test_a_tls_ca_that_is_missing_or_not_pem_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """``arena submit --tls-ca`` read the file itself: a missing file was a FileNotFoundError traceback, a
    file with no certificate gRPC's handshake error at the first call. Now one line naming the option, the
    file and the problem, exit 2, and no connection tried (:func:`referee.credentials.read_pem`)."""
    from arena.cli.commands import main

    monkeypatch.setenv("ALLFOURS_COMPETITOR_TOKEN", "t")
    folder = tmp_path / "alicebot"
    folder.mkdir()
    (folder / "bot.py").write_text("class Bot:\n    pass\n")
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    missing = tmp_path / "missing.pem"
    bot = [str(folder), "--name", "alicebot"] if command == "submit" else []
    for ca, problem in ((missing, f"cannot read --tls-ca {missing}: No such file or directory"),
                        (not_pem, f"--tls-ca {not_pem} is not a PEM certificate")):
        status = main([command, *bot, "--arena", "127.0.0.1:1", "--tls-ca", str(ca)])
        out, err = capsys.readouterr()
        assert status == 2 and out == "", (status, out, err)
        assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: {problem}"), err


_DIES_MID_UPLOAD = """
import os, signal
from concurrent import futures
import grpc
from allfours.v1 import submission_pb2_grpc as spb_grpc

class Dies(spb_grpc.SubmissionServiceServicer):
    def Submit(self, requests, context):
        next(requests), next(requests)  # the header and a first chunk of the archive
        os.kill(os.getpid(), signal.SIGKILL)  # as `kill -9` of arena serve during an upload

server = grpc.server(futures.ThreadPoolExecutor(2))
spb_grpc.add_SubmissionServiceServicer_to_server(Dies(), server)
print(server.add_insecure_port("127.0.0.1:0"), flush=True)
server.start()
server.wait_for_termination()
"""


def test_an_arena_gone_mid_upload_is_told_as_such_not_as_tls(tmp_path: Path) -> None:
    """`arena submit` to an arena killed during the upload printed `error: UNAVAILABLE: Stream removed
    (Socket closed) (does HOST:PORT serve TLS? then pass --tls-ca …)`: the TLS hint, though the
    connection had been up (TLS was no cause). It now says the arena closed the connection during the
    upload and the submission was not received (one line); the TLS hint stays for a connection that
    never came up (the test above)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    bot = tmp_path / "evebot"
    bot.mkdir()
    (bot / "evebot.py").write_bytes(os.urandom(1024 * 1024))  # several chunks, beyond a stream's first window
    server = subprocess.Popen([sys.executable, "-c", _DIES_MID_UPLOAD], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        assert server.stdout is not None
        address = f"127.0.0.1:{server.stdout.readline().strip()}"
        env = {**os.environ, "ALLFOURS_COMPETITOR_TOKEN": "t0ken", "PYTHONPATH": str(root)}
        r = subprocess.run([sys.executable, "-m", "arena.cli", "submit", str(bot), "--arena", address, "--entry",
                            "evebot:EveBot"], capture_output=True, text=True, timeout=120, env=env, cwd=root)
        assert server.wait(60) == -9  # it died in the upload, as arena serve did
    finally:
        server.kill()
        server.wait(30)
    err = r.stderr.strip()
    assert r.returncode == 1 and err.startswith("error: UNAVAILABLE: ") and "\n" not in err, r
    assert "TLS" not in err and "--tls-ca" not in err, err
    assert err.endswith("(the arena closed the connection during the upload (stopped or restarted?): the submission "
                        "was not received; submit it again once the arena is back)"), err


def test_revoking_a_competitor_revokes_their_remote_bots_tokens(tmp_path: Path) -> None:
    """A remote bot (RegisterRemote) plays from the competitor's own machine with a lobby token of its
    own. Revoking the competitor ended their competitor token and web sessions, but the remote bot's
    token stayed valid: on a real `arena serve`, a revoked competitor's worker went on registering
    and playing league games (after SIGHUP too). `arena competitor add --revoke` now revokes those
    tokens as well (a running serve drops the workers on SIGHUP, as for `arena token --revoke`)."""
    import os
    import subprocess
    import sys

    from arena.tournament.runner import DB_NAME
    from arena.tournament.store import Store

    root = Path(__file__).resolve().parents[1]
    cfg = tmp_path / "c.toml"
    bot = '[[bots]]\nname = "{n}"\nversion = "1"\ncommand = ["{{python}}", "-m", "sdk.run", "x:X"]\n'
    cfg.write_text('[tournament]\nname = "revoke"\nplayers = 2\noutput = "out"\n[competition]\n'
                   + bot.format(n="h1") + bot.format(n="h2"))
    env = {**os.environ, "PYTHONPATH": str(root)}

    def arena(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arena.cli", *args], capture_output=True, text=True,
                              timeout=120, env=env, cwd=root)

    added = arena("competitor", "add", str(cfg), "erin")
    assert added.returncode == 0, added.stderr
    out = tmp_path / "out"
    with CompetitionBook(out) as book:
        desk = Desk(CompetitionSettings(), out, book, lambda: None, players=2)
        sub, token = desk.register_remote("erin", "erinbot", "next")
    with Store(out / DB_NAME) as store:
        assert store.token_digests(sub.entrant), "the remote bot has a token"
    revoked = arena("competitor", "add", str(cfg), "erin", "--revoke")
    assert revoked.returncode == 0, revoked.stderr
    with Store(out / DB_NAME) as store:
        assert store.token_digests(sub.entrant) == {}, revoked.stderr
    assert f"erin's remote bots ({sub.entrant}): 1 token(s) revoked" in revoked.stderr, revoked.stderr
    assert token not in revoked.stderr + revoked.stdout


def test_a_build_that_fills_the_disk_is_stopped_at_the_image_limit(tmp_path: Path) -> None:
    """Docker's build API has no disk limit, and the image's size was checked only once the build had
    ended: a preinstall script could write to the host's disk (its container's layer under
    /var/lib/docker) for the whole build time (600 s); here 400 MB went through with a limit of 64 MiB
    before the build was rejected. The step's writable layer is watched now: past ``image_bytes`` the
    step is killed and the submission rejected, saying why."""
    import contextlib

    from arena.hosting.sandbox import run_key
    from tests.docker_helpers import base_image, docker_client, leftovers

    client = docker_client()
    out = tmp_path / "out"
    limit = 64 << 20
    settings = CompetitionSettings(base_node=base_image("node"), image_prefix="allfours-test-disk", image_bytes=limit)
    tag = submission_tag(settings, out, "filler", "1")
    script = "for i in $(seq 40); do dd if=/dev/zero of=fill$i bs=1M count=10 status=none; sleep 0.3; done"
    try:
        got = _build_with_preinstall(client, out, settings, "filler", script)
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(tag, force=True)
    assert got is not None and got.status == "rejected" and got.step == "image", got
    assert "a build step wrote" in got.reason and f"over the image limit of {limit} bytes" in got.reason, got.reason
    assert leftovers(client, run_key(out)) == []


def _build_with_preinstall(client: Any, out: Path, settings: CompetitionSettings, name: str, script: str) -> Any:
    """Eve's Node.js submission ``name``@1 whose package.json runs ``script`` as its ``preinstall`` (the
    competitor's own code, as root in the build), through a real build queue with a validator that passes
    every image; returns the submission once the queue is done with it (at most 600 s)."""
    import json
    import time

    from arena.competition.pipeline import BuildQueue, submission_folder
    from arena.competition.validate import Verdict

    with CompetitionBook(out) as book:
        book.add_competitor("eve")
        sub = book.add_submission("eve", name, "1", "node", "")
        bot = submission_folder(out, sub.id)
        bot.mkdir(parents=True)
        (bot / "bot.js").write_text("")
        (bot / "package.json").write_text(json.dumps({"name": name, "version": "1.0.0", "main": "bot.js",
                                                      "scripts": {"preinstall": script}}))
        queue = BuildQueue(book, settings, out, lambda: None, lambda _: None,
                           validator=lambda *_: Verdict(True, (), ""), client=client)
        queue.start()
        try:
            deadline = time.monotonic() + 600
            while (got := book.get(sub.id)) is not None and got.status in ("received", "building", "validating"):
                assert time.monotonic() < deadline, "the build did not end in 600 s"
                time.sleep(0.5)
        finally:
            queue.stop()
    assert got is not None
    return got


async def _silent(release: asyncio.Event) -> Any:
    """A request stream that sends nothing and ends when ``release`` is set: a stream that never says Hello."""
    await release.wait()
    return
    yield


async def _follow_refusals(calls: list[Any], settled: Callable[[int], bool]) -> tuple[
        list[tuple[grpc.StatusCode, str]], list[asyncio.Future[None]]]:
    """Follow every streaming call of a flood, noting each refusal ``(code, details)`` in the returned list
    (it fills on while the returned tasks run); return once the refusals stop coming (two looks 0.5 s
    apart see as many, and ``settled(that many)``: the server has seen every stream), within 7 s, before
    the server's 10 s for a first message ends every silent stream itself."""
    refused: list[tuple[grpc.StatusCode, str]] = []

    async def follow(call: Any) -> None:
        try:
            async for _ in call:
                pass
        except grpc.aio.AioRpcError as e:
            refused.append((e.code(), e.details() or ""))

    tasks = [asyncio.ensure_future(follow(c)) for c in calls]
    seen = -1
    for _ in range(14):
        await asyncio.sleep(0.5)
        if len(refused) == seen and settled(seen):
            break
        seen = len(refused)
    return refused, tasks


def test_a_sandboxed_bot_flooding_its_sockets_fails_only_its_own_games(tmp_path: Path) -> None:
    """A sandboxed process bot reaches the embedded referee and the lobby over unix sockets, whose peers
    carry no address to count them by: one bot opening 2600 streams that never say Hello took all 2048
    RPC slots of the referee (and the lobby's 1024), and every other game of the run failed on
    "Concurrent RPC limit exceeded!" until the arena gave up (a reviewer's `arena run`: rc 1). Now each
    sandboxed bot dials sockets of its own (``Jail.for_bot``), served by servers of their own: the flood
    is refused past the pending cap on the flooder's own socket, while another bot's socket and the
    admin calls are answered."""
    from allfours.v1 import lobby_pb2 as lpb
    from allfours.v1 import lobby_pb2_grpc as lpb_grpc
    from allfours.v1 import referee_pb2 as pb
    from allfours.v1 import referee_pb2_grpc as pb_grpc
    from arena.hosting.jail import LOBBY_SOCKET, REFEREE_SOCKET, Jail
    from arena.lobby.service import PENDING_PER_PEER, Lobby
    from arena.lobby.tokens import TokenBook
    from referee import wire
    from referee.server import PENDING_HELLOS_PER_PEER, ThreadedReferee

    flood = 2600
    hello = pb.PlayRequest(hello=pb.Hello(ticket="t-no-such", protocol_version=wire.PROTOCOL_VERSION))
    register = lpb.ConnectRequest(register=lpb.Register(token="no-such-token", bot_name="honest",
                                                        protocol_version=wire.PROTOCOL_VERSION))

    async def answer(call: Any) -> tuple[grpc.StatusCode, str]:
        try:
            async for _ in call:
                pass
            return grpc.StatusCode.OK, ""
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or ""

    async def attack(hostile: Path, honest: Path, admin: str, token: str) -> dict[str, Any]:
        release = asyncio.Event()

        own = [("grpc.use_local_subchannel_pool", 1)]
        seen: dict[str, Any] = {}
        for sock, stub, first in ((REFEREE_SOCKET, pb_grpc.RefereeServiceStub, hello),
                                  (LOBBY_SOCKET, lpb_grpc.LobbyServiceStub, register)):
            channels = [grpc.aio.insecure_channel(f"unix:{hostile / sock}", options=own) for _ in range(50)]
            method = "Play" if sock == REFEREE_SOCKET else "Connect"
            calls = [getattr(stub(channels[k % 50]), method)(_silent(release), timeout=60) for k in range(flood)]
            seen[f"{sock} refused"], tasks = await _follow_refusals(calls, lambda n: n > 0)
            for who, folder in (("honest", honest), ("hostile", hostile)):
                async with grpc.aio.insecure_channel(f"unix:{folder / sock}") as ch:
                    seen[f"{sock} {who}"] = await answer(getattr(stub(ch), method)(iter([first]), timeout=30))
            async with grpc.aio.insecure_channel(admin) as ch:
                listed = await pb_grpc.AdminServiceStub(ch).ListMatches(
                    pb.ListMatchesRequest(), metadata=(("authorization", f"Bearer {token}"),), timeout=30)
                seen[f"{sock} admin"] = type(listed).__name__
            release.set()
            await asyncio.gather(*tasks)
            release.clear()
            for c in channels:
                await c.close()
        return seen

    sockets = tmp_path / "sockets"
    sockets.mkdir()
    jail = Jail("bwrap", sockets, runtime=[])
    with ThreadedReferee() as ref:
        lobby = Lobby("t", TokenBook(), loop=ref.loop)
        lobby.start()
        try:
            hostile = jail.for_bot("hostile").sockets  # made before anyone listens: served once they do
            jail.on_bot_folder(lambda d: ref.listen_unix(f"unix:{d / REFEREE_SOCKET}"))
            jail.on_bot_folder(lambda d: lobby.listen_unix(f"unix:{d / LOBBY_SOCKET}"))
            honest = jail.for_bot("honest").sockets
            assert hostile != honest and hostile.parent == honest.parent == sockets
            seen = asyncio.run(attack(hostile, honest, ref.address, ref.admin_token))
        finally:
            lobby.stop()
    for sock, cap, kind in ((REFEREE_SOCKET, PENDING_HELLOS_PER_PEER, "Hello"),
                            (LOBBY_SOCKET, PENDING_PER_PEER, "Register")):
        line = f"{cap} streams of your address are waiting to send a {kind}: dial again later"
        capped = [d for code, d in seen[f"{sock} refused"] if code == grpc.StatusCode.RESOURCE_EXHAUSTED and d == line]
        assert len(capped) > flood // 2, seen[f"{sock} refused"][:3]
        # its own games fail: its stream is refused before its ticket is read (mostly by the cap's line; now
        # and then, as gRPC churns through the flood's refusals, by gRPC itself: INTERNAL, CANCELLED)
        own = seen[f"{sock} hostile"]
        assert own[0] not in (grpc.StatusCode.OK, grpc.StatusCode.UNAUTHENTICATED), own
        assert seen[f"{sock} admin"] == "ListMatchesResponse"
    assert seen[f"{REFEREE_SOCKET} honest"] == (grpc.StatusCode.UNAUTHENTICATED, "unknown ticket")
    assert seen[f"{LOBBY_SOCKET} honest"][0] == grpc.StatusCode.UNAUTHENTICATED, seen[f"{LOBBY_SOCKET} honest"]


def test_what_one_sandboxed_bot_holds_open_on_its_socket_another_bots_socket_does_not_show(tmp_path: Path) -> None:
    """Each sandboxed bot's referee socket had the referee's one health service, whose ``Watch`` streams are
    capped at 4 of one address, every unix peer counted as one: a bot holding 4 Watch streams on its socket
    made the next Watch on any other bot's socket refused (RESOURCE_EXHAUSTED), so two bots, each told only
    its own socket, could pass each other bits (a hand, who they are in a blind tournament) by opening and
    probing, beside the referee. The bots' sockets serve Play alone now (no bot checks the referee's health;
    the lobby's bot sockets never served it): what one holds open, another does not see."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from arena.hosting.jail import REFEREE_SOCKET, Jail
    from referee.server import ThreadedReferee
    from referee.streams import WATCHES_PER_PEER

    async def watch(folder: Path) -> tuple[str, Any]:
        """The first answer of a health Watch on ``folder``'s referee socket, the call left open."""
        ch = grpc.aio.insecure_channel(f"unix:{folder / REFEREE_SOCKET}")
        call = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""), timeout=30)
        try:
            return str((await call.read()).status), (ch, call)
        except grpc.aio.AioRpcError as e:
            return e.code().name, (ch, call)

    async def probe(sender: Path, receiver: Path) -> dict[str, str]:
        alone = await watch(receiver)
        await close([alone])
        held = [await watch(sender) for _ in range(WATCHES_PER_PEER)]
        beside = await watch(receiver)
        await close([*held, beside])
        return {"alone": alone[0], "beside": beside[0]}

    async def close(calls: list[tuple[str, Any]]) -> None:
        for _, (ch, call) in calls:
            call.cancel()
            await ch.close()

    jail = Jail("bwrap", tmp_path, runtime=[])
    with ThreadedReferee() as ref:
        jail.on_bot_folder(lambda d: ref.listen_unix(f"unix:{d / REFEREE_SOCKET}"))
        seen = asyncio.run(probe(jail.for_bot("sender").sockets, jail.for_bot("receiver").sockets))
    assert seen["alone"] == seen["beside"], seen


def test_what_one_process_of_a_bot_holds_open_its_partner_process_does_not_see(tmp_path: Path) -> None:
    """Two processes of one sandboxed bot at once (partners at four, a pair's twins under concurrency) had the
    bot's one socket: a process holding the 128 silent streams the socket's server allows made its partner's
    next stream refused (``128 streams of your address are waiting to send a Hello``), whatever it said, so
    the count it held (0-128) passed 7 bits a round. Each process has a socket folder of its own now
    (``Jail.for_process``): the partner's Hello is read (an unknown ticket here), and a folder given up
    (``Jail.release``) is no longer served."""
    from allfours.v1 import referee_pb2 as pb
    from allfours.v1 import referee_pb2_grpc as pb_grpc
    from arena.hosting.jail import REFEREE_SOCKET, Jail
    from referee import wire
    from referee.server import PENDING_HELLOS_PER_PEER, ThreadedReferee

    hello = pb.PlayRequest(hello=pb.Hello(ticket="t-no-such", protocol_version=wire.PROTOCOL_VERSION))

    async def first_answer(folder: Path) -> str:
        async with grpc.aio.insecure_channel(f"unix:{folder / REFEREE_SOCKET}") as ch:
            try:
                async for _ in pb_grpc.RefereeServiceStub(ch).Play(iter([hello]), timeout=30):
                    pass
                return "OK"
            except grpc.aio.AioRpcError as e:
                return f"{e.code().name}: {e.details()}"

    async def probe(sender: Path, receiver: Path) -> str:
        release = asyncio.Event()
        own = [("grpc.use_local_subchannel_pool", 1)]  # a connection each: 64 streams at most on one
        channels = [grpc.aio.insecure_channel(f"unix:{sender / REFEREE_SOCKET}", options=own) for _ in range(4)]
        calls = [pb_grpc.RefereeServiceStub(channels[k % 4]).Play(_silent(release), timeout=60)
                 for k in range(PENDING_HELLOS_PER_PEER)]
        for _ in range(200):  # until the server holds them all (its next one refused), at most 10 s
            if (await first_answer(sender)).startswith("RESOURCE_EXHAUSTED"):
                break
            await asyncio.sleep(0.05)
        got = await first_answer(receiver)
        release.set()
        for c in calls:
            c.cancel()
        for ch in channels:
            await ch.close()
        return got

    jail = Jail("bwrap", tmp_path, runtime=[])
    with ThreadedReferee() as ref:
        jail.on_bot_folder(lambda d: ref.listen_unix(f"unix:{d / REFEREE_SOCKET}"), key=ref,
                           unlisten=lambda d: ref.stop_unix(f"unix:{d / REFEREE_SOCKET}"))
        sender, receiver = jail.for_process("bot"), jail.for_process("bot")
        got = asyncio.run(probe(sender.sockets, receiver.sockets))
        jail.release(receiver)
        gone = asyncio.run(first_answer(receiver.sockets))
    assert got == "UNAUTHENTICATED: unknown ticket", got
    assert gone.startswith("UNAVAILABLE"), gone


def test_another_competitors_submission_id_answers_as_an_unknown_one(served: tuple[str, str, Desk]) -> None:
    """Getting or selecting a submission id that is another competitor's answered PERMISSION_DENIED, an
    unknown one NOT_FOUND: a competitor could tell which ids exist (and count the others' submissions).
    Both now answer NOT_FOUND with the same line, in every call that takes a submission id."""
    from arena.competition.client import SubmissionClient

    address, token, desk = served
    desk.book.add_competitor("ann")
    theirs = desk.book.add_submission("ann", "annbot", "1", "python", "bot:Bot")
    desk.book.set_status(theirs.id, "accepted", image="x")
    unknown = theirs.id + 100
    eve = SubmissionClient(address, token)
    try:
        for call in (eve.get, eve.select):
            for sid in (theirs.id, unknown):
                with pytest.raises(grpc.RpcError) as e:
                    call(sid)
                assert (e.value.code(), e.value.details()) == (grpc.StatusCode.NOT_FOUND,
                                                               f"no submission {sid} of yours"), call
    finally:
        eve.close()


def _node_archive(package_json: bytes) -> bytes:
    """A tar.gz of a Node.js bot ``bot.js`` whose package.json is ``package_json``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        add_tar_file(tar, "bot.js", b"")
        add_tar_file(tar, "package.json", package_json)
    return buf.getvalue()


@pytest.mark.parametrize(("package_json", "words"), [
    (b"[" * 100_000 + b"]" * 100_000, "package.json: not a JSON object: nested too deep"),
    (b'{"main": "bot.js", "x": [' + b"{}," * 1_000_000 + b'{}]}', "package.json is over 1048576 bytes"),
], ids=["deep", "large"])
def test_a_crafted_package_json_is_one_line_and_leaves_no_files(served: tuple[str, str, Desk], package_json: bytes,
                                                                words: str) -> None:
    """A package.json of 100,000 nested arrays made the plan raise RecursionError, which no one caught:
    the competitor got ``UNKNOWN: Unexpected <class 'RecursionError'>``, and the unpacked upload stayed in
    ``OUTPUT/submissions/incoming-*`` (up to ``unpacked_bytes`` each time, in no daily limit, until the
    next start). A large one was read whole into arena serve's memory (30 MB of ``{},`` took 775 MB).
    Each is now INVALID_ARGUMENT with one line, and nothing of it is left on disk."""
    from arena.competition.client import SubmissionClient

    address, token, desk = served
    eve = SubmissionClient(address, token)
    try:
        with pytest.raises(grpc.RpcError) as e:
            eve.submit(_node_archive(package_json), "evejs")
    finally:
        eve.close()
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert words in (e.value.details() or ""), e.value.details()
    assert list((desk.output / "submissions").glob("incoming-*")) == []


def test_a_prebuilt_images_archive_is_not_kept_once_it_is_judged(tmp_path: Path) -> None:
    """A prebuilt image's upload (``OUTPUT/submissions/ID/image.tar``, up to ``image_upload_bytes``, 512 MiB)
    was kept for ever after docker loaded it: a competitor's five a day, rejected or not, put 2.5 GiB a day
    on the host's disk (and into every backup). Once accepted (the image is in docker) or rejected (never
    built again) it goes; a ``failed`` one keeps it for ``arena competition retry``."""
    import os

    from arena.competition.intake import copy_image_archive
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from arena.competition.validate import Verdict
    from tests.docker_helpers import docker_client, scratch_image

    client = docker_client()
    tag = f"allfours-test-archive:{os.getpid()}"
    image = scratch_image(client, tag)
    saved = b"".join(image.save(named=True))
    verdicts = {"pass": Verdict(True, (), ""), "fail": Verdict(False, ("players-2",), "it folded"),
                "fault": Verdict(False, ("suite",), "", "docker failed during the validation")}
    settings = CompetitionSettings(image_prefix="allfours-test-archive-sub")
    book = CompetitionBook(tmp_path)
    queue = BuildQueue(book, settings, tmp_path, lambda: None, lambda _: None, client=client,
                       validator=lambda _image, _key, sub: verdicts[sub.name.removeprefix("eve")])
    kept: dict[str, bool] = {}
    try:
        for case in verdicts:
            sub = book.add_submission("eve", f"eve{case}", "1", "image", "")
            folder = submission_folder(tmp_path, sub.id).parent
            folder.mkdir(parents=True)
            copy_image_archive(io.BytesIO(saved), folder / IMAGE_ARCHIVE, settings.image_bytes)
            queue.process(sub)
            judged = book.get(sub.id)
            assert judged is not None
            kept[judged.status] = (folder / IMAGE_ARCHIVE).exists()
    finally:
        for case in verdicts:
            with contextlib.suppress(Exception):
                client.images.remove(submission_tag(settings, tmp_path, f"eve{case}", "1"), force=True)
        client.images.remove(tag, force=True)
        book.close()
    assert kept == {"accepted": False, "rejected": False, "failed": True}



def _first_reply(address: str, token: str, bot: str) -> str:
    """The lobby's first answer at ``address`` (``host:port`` or ``unix:PATH``) to a Register of ``bot`` with
    ``token``: "registered", or the refusal's status and line."""
    from allfours.v1 import lobby_pb2 as lpb
    from allfours.v1 import lobby_pb2_grpc as lpb_grpc

    with grpc.insecure_channel(address) as ch:
        hello = lpb.ConnectRequest(register=lpb.Register(token=token, bot_name=bot, protocol_version="allfours.v1"))
        release = threading.Event()

        def requests() -> Iterator[lpb.ConnectRequest]:
            yield hello
            release.wait(30)

        call = lpb_grpc.LobbyServiceStub(ch).Connect(requests(), timeout=30)
        try:
            return str(next(call).WhichOneof("msg"))
        except grpc.RpcError as e:
            return f"{e.code().name}: {e.details()}"
        finally:
            release.set()
            call.cancel()


def _gateway_probe(folder: str, lobby_at: str) -> dict[str, str]:
    """A competition's lobby wired as arena serve wires it with a container sandbox (_start_lobby), the
    gateway played by 127.0.0.2 and ``tournament.lobby`` = ``lobby_at``; what a Submission call (a
    competitor's token) and a Connect (an unknown bot token) get at the gateway's address and at the
    competitors' (``bots`` and ``competitors``: ``host:port``; ``start``: the lobby's start refused)."""
    from types import SimpleNamespace

    from arena.config import ConfigError
    from arena.lobby.setup import _start_lobby
    from arena.lobby.tokens import token_digest
    from referee.peers import BotNetwork

    tmp = Path(folder)
    allowed: list[int] = []
    sandbox = SimpleNamespace(gateway="127.0.0.2", allow=allowed.append,  # a network of the gateway alone
                              bot_network=lambda: BotNetwork.parse("127.0.0.2/32", "127.0.0.2"))
    config = SimpleNamespace(lobby_tls=None, lobby=lobby_at, name="t", source=str(tmp / "t.toml"))
    desk = _desk(tmp, per_day=10)
    token = desk.book.add_competitor("eve")
    try:
        lobby = _start_lobby(config, sandbox, None, None, [service.add_to_server(desk)])  # type: ignore[arg-type]
    except ConfigError as e:
        desk.book.close()
        return {"start": str(e)}
    port = lobby.remote_port
    out = {"bots": lobby.address, "competitors": f"127.0.0.1:{port}", "remote": str(lobby.remote_address),
           "allowed": ",".join(map(str, allowed))}

    def submissions(address: str) -> str:
        with grpc.insecure_channel(address) as ch:
            try:
                spb_grpc.SubmissionServiceStub(ch).ListSubmissions(
                    spb.ListSubmissionsRequest(), metadata=(("authorization", f"Bearer {token}"),), timeout=30)
            except grpc.RpcError as e:
                return str(e.code().name)
        return "OK"

    remote = "r" * 32  # a remote entry's token; an arena worker's below (one worker a token)
    lobby.tokens.set_bot("far", [token_digest(remote)])
    try:
        for who in ("bots", "competitors"):
            out[f"{who}_submissions"] = submissions(out[who])
            out[f"{who}_connect"] = _first_reply(out[who], "x" * 32, "b")
            out[f"{who}_remote"] = _first_reply(out[who], remote, "far")
            out[f"{who}_own"] = _first_reply(out[who], lobby.tokens.issue("near"), "near")
    finally:
        lobby.stop()
        desk.book.close()
    return out


def test_the_sandbox_gateway_serves_bots_the_lobby_alone_not_the_submission_service(tmp_path: Path) -> None:
    """A competition's lobby listens on the container sandbox's gateway (the only address of the host a
    submitted bot's container reaches, its port let through the firewall) and on ``tournament.lobby``'s
    host, where competitors come. It was one gRPC server on both, the Submission service included, so a
    submitted bot holding its author's competitor token could call it from inside its game: GetSeatLog
    handed it its own log of a duplicate pair's stored first game (every card of every deal, written as
    it played) while it played the second, on the same decks; Submit and SelectSubmission worked as well.
    Now the gateway serves Connect alone (UNIMPLEMENTED for the rest), at a port of its own (the one the
    firewall lets through), and the competitors' host all of it. Nor does the gateway take a remote
    entry's bot token (its author's too): a submitted bot connecting as a worker of that entry would play
    its seats from inside its container, beside a partner seat on its author's machine at four players."""
    from arena.lobby.service import REMOTE_TOKEN_ON_GATEWAY

    got = _gateway_probe(str(tmp_path), "127.0.0.1:0")
    assert "start" not in got, got
    port = got["bots"].rpartition(":")[2]
    assert got["bots"].startswith("127.0.0.2:") and got["allowed"] == port, got
    assert got["remote"] == got["competitors"] and not got["competitors"].endswith(f":{port}"), got
    assert got["bots_submissions"] == "UNIMPLEMENTED" and got["competitors_submissions"] == "OK", got
    assert got["bots_connect"] == got["competitors_connect"] == "UNAUTHENTICATED: unknown or revoked bot token", got
    assert got["bots_own"] == got["competitors_own"] == got["competitors_remote"] == "registered", got
    assert got["bots_remote"] == f"UNAUTHENTICATED: {REMOTE_TOKEN_ON_GATEWAY}", got


def test_a_wildcard_lobby_beside_the_sandbox_starts_and_keeps_the_gateway_to_connect(tmp_path: Path) -> None:
    """``lobby = "0.0.0.0:PORT"`` is how a competition takes submissions from other machines
    (examples/competition.toml), and a competition always has the container sandbox. The lobby bound the
    gateway and then the wildcard at the same port, which the wildcard's bind refuses (the lobby sets no
    SO_REUSEPORT): arena serve stopped at once with ``tournament.lobby: cannot listen there: Failed to
    bind to address 0.0.0.0:PORT``. Run in a network namespace of its own (its wildcard reaches nothing
    of this host's); its loopback plays the gateway (127.0.0.2) and the competitors' address."""
    import json
    import sys

    from arena.lobby.service import REMOTE_TOKEN_ON_GATEWAY
    from tests.netns_helpers import netns

    root = Path(__file__).resolve().parent.parent
    code = ("import json, sys; from tests.test_competition_hostile import _gateway_probe; "
            "print(json.dumps(_gateway_probe(sys.argv[1], '0.0.0.0:0')))")
    with netns() as ns:
        done = subprocess.run(ns.argv(sys.executable, "-c", code, str(tmp_path)), cwd=root, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "start" not in got, got
    assert got["remote"].startswith("0.0.0.0:"), got
    assert got["bots_submissions"] == "UNIMPLEMENTED" and got["competitors_submissions"] == "OK", got
    assert got["bots_connect"] == got["competitors_connect"] == "UNAUTHENTICATED: unknown or revoked bot token", got
    assert got["bots_own"] == got["competitors_own"] == got["competitors_remote"] == "registered", got
    assert got["bots_remote"] == f"UNAUTHENTICATED: {REMOTE_TOKEN_ON_GATEWAY}", got


def test_a_sandboxed_bots_own_socket_takes_no_remote_bots_token(tmp_path: Path) -> None:
    """A sandboxed process bot reaches the lobby only by a unix socket of its own; like the container
    sandbox's gateway, that socket took any live token, a remote entry's included, so a bot whose author
    also runs a remote entry could play that entry's seats from inside its sandbox (beside a partner seat on
    its author's machine at four players). It now takes the arena's own workers' tokens alone, refusing a
    remote bot's with one line; the same remote token registers on the lobby's own address."""
    from arena.lobby.service import REMOTE_TOKEN_ON_GATEWAY, Lobby
    from arena.lobby.tokens import TokenBook, token_digest

    lobby = Lobby("t", TokenBook())
    lobby.start()
    socket_path = tmp_path / "lobby.sock"
    try:
        lobby.listen_unix(f"unix:{socket_path}")
        remote = "r" * 32
        lobby.tokens.set_bot("far", [token_digest(remote)])
        got = {(where, who): _first_reply(address, token, bot)  # an arena worker's token: one worker each
               for where, address in (("socket", f"unix:{socket_path}"), ("lobby", lobby.address))
               for who, token, bot in (("remote", remote, "far"), ("own", lobby.tokens.issue("near"), "near"))}
    finally:
        lobby.stop()
    assert got[("socket", "remote")] == f"UNAUTHENTICATED: {REMOTE_TOKEN_ON_GATEWAY}", got
    assert got[("socket", "own")] == got[("lobby", "own")] == got[("lobby", "remote")] == "registered", got


def test_a_prebuilt_image_of_too_many_files_is_rejected_and_removed(tmp_path: Path) -> None:
    """A prebuilt image's layer of empty files (512 bytes of archive each) is tiny for ``image_bytes`` but
    takes an inode of the host's disk per file, for good once accepted. An image whose own layers hold
    over ``image_files`` files, folders and links is rejected and removed (so is a built one)."""
    import os

    from arena.competition.intake import copy_image_archive
    from arena.competition.pipeline import IMAGE_ARCHIVE, BuildQueue, submission_folder
    from tests.docker_helpers import docker_client

    client = docker_client()
    tag = f"allfours-test-inodes:{os.getpid()}"
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        add_tar_file(tar, "Dockerfile", b"FROM scratch\nCOPY d /d\n")
        for i in range(1500):
            tar.addfile(tarfile.TarInfo(f"d/{i}"), io.BytesIO(b""))
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    settings = CompetitionSettings(image_prefix="allfours-test-inodes-sub", image_files=1000)
    book = CompetitionBook(tmp_path)
    try:
        saved = b"".join(image.save(named=True))
        sub = book.add_submission("eve", "many", "1", "image", "")
        folder = submission_folder(tmp_path, sub.id).parent
        folder.mkdir(parents=True)
        copy_image_archive(io.BytesIO(saved), folder / IMAGE_ARCHIVE, settings.image_bytes)
        BuildQueue(book, settings, tmp_path, lambda: None, lambda _: None, client=client,
                   validator=lambda *_: pytest.fail("an image over the limit was validated")).process(sub)
        judged = book.get(sub.id)
        assert judged is not None and judged.status == "rejected", judged
        assert "the image holds over 1000 files, folders and links of its own" in judged.reason, judged
        assert client.images.list(name=submission_tag(settings, tmp_path, "many", "1")) == []
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(submission_tag(settings, tmp_path, "many", "1"), force=True)
        client.images.remove(tag, force=True)
        book.close()


def test_a_competitors_reads_are_limited_a_minute(served: tuple[str, str, Desk]) -> None:
    """A competitor's script reading in a loop (a seat log is up to 512 KiB from disk each time) made
    arena serve, which hosts the embedded referee, do it without end. Now each competitor's reads count
    against ``reads_per_minute``, a quarter of it at once (the allowance's clock stands still here: no
    read comes back while the test runs); another competitor's reads and a wrong token are not theirs."""
    from arena.competition.reads import ReadAllowance

    address, token, desk = served
    desk.settings = dataclasses.replace(desk.settings, reads_per_minute=8)  # 2 at once
    desk.reads = ReadAllowance(clock=lambda: 0.0)
    other = desk.book.add_competitor("dan")

    def meta(t: str) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {t}"),)

    with grpc.insecure_channel(address) as channel:
        stub = spb_grpc.SubmissionServiceStub(channel)
        stub.ListSubmissions(spb.ListSubmissionsRequest(), metadata=meta(token), timeout=30)
        stub.ListGames(spb.ListGamesRequest(), metadata=meta(token), timeout=30)
        for call in (lambda: stub.GetSeatLog(spb.GetSeatLogRequest(game_id="g", seat=0), metadata=meta(token),
                                             timeout=30),
                     lambda: stub.GetSubmission(spb.GetSubmissionRequest(id=1), metadata=meta(token), timeout=30),
                     lambda: stub.ListSubmissions(spb.ListSubmissionsRequest(), metadata=meta(token), timeout=30)):
            with pytest.raises(grpc.RpcError) as e:
                call()
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value.details()
            assert e.value.details() == ("too many reads: at most 8 a minute (reads_per_minute), 2 at once; "
                                         "try again in 8 s")
        assert stub.ListSubmissions(spb.ListSubmissionsRequest(), metadata=meta(other), timeout=30).submissions == []
        with pytest.raises(grpc.RpcError) as e:
            stub.ListGames(spb.ListGamesRequest(), metadata=meta("nope"), timeout=30)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_arena_submit_wait_asks_again_after_a_refused_read(served: tuple[str, str, Desk],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`arena submit --wait` polls its submission: a poll refused for reads_per_minute (the competitor's
    other scripts used the minute's reads) is asked again later, not the command's end."""
    from arena.competition import client as client_module
    from arena.competition.reads import ReadAllowance

    address, token, desk = served
    desk.settings = dataclasses.replace(desk.settings, reads_per_minute=4)  # 1 at once
    times = iter([0.0, 0.0, 60.0])  # the second read is refused; the third comes a minute later
    desk.reads = ReadAllowance(clock=lambda: next(times))
    sub = desk.book.add_submission("eve", "evebot", "1", "python", "bot:Bot")
    desk.book.set_status(sub.id, "rated", image="x")
    monkeypatch.setattr(client_module, "READS_WAIT_S", 0.0)
    competitor = client_module.SubmissionClient(address, token)
    try:
        assert [s.id for s in competitor.submissions()] == [sub.id]  # the minute's one read
        seen: list[str] = []
        last = competitor.follow(sub.id, lambda s: seen.append(s.status), timeout_s=600)
    finally:
        competitor.close()
    assert last.status == "rated" and seen == ["rated"]
    assert next(times, None) is None  # asked three times in all


def _silent_calls(channels: list[Any], method: str, release: asyncio.Event, count: int) -> list[Any]:
    """``count`` calls of ``method`` (a unary one: ``/pkg.Service/Method``) over ``channels`` in turn, each
    opened and never sending its request until ``release``: a client that calls and stays silent."""
    return [channels[k % len(channels)].stream_stream(method, request_serializer=bytes, response_deserializer=bytes)(
        _silent(release), timeout=60) for k in range(count)]


@pytest.mark.parametrize("method", ["/allfours.v1.SubmissionService/GetSubmission", "/grpc.health.v1.Health/Check"])
def test_silent_unary_calls_of_one_address_do_not_stop_the_lobby(tmp_path: Path, method: str) -> None:
    """gRPC reads a unary call's request before its handler runs, with no time limit, and the call holds one
    of the lobby server's 1024 RPC slots meanwhile, before any token is seen. An anonymous client holding 1100
    GetSubmission (or health Check) calls that never sent their request made the lobby's port refuse every
    competitor's call and every worker's Connect ("Concurrent RPC limit exceeded!") for as long as it
    liked. Now the calls of one address waiting for their request are capped: the rest are refused at once
    with one line, and a competitor from another address (here IPv6 loopback) is answered."""
    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook
    from referee.streams import REQUESTS_PER_PEER

    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    lobby = Lobby("t", TokenBook(), host="localhost", services=[service.add_to_server(desk)])  # 127.0.0.1 and ::1
    port = lobby.start().rpartition(":")[2]
    flood = 1100

    async def attack() -> tuple[Refusals, Any]:
        return await _flood_then(lambda: _own_channels(f"ipv4:127.0.0.1:{port}", 8),
                                 lambda chs, release: _silent_calls(chs, method, release, flood),
                                 lambda seen: seen >= flood - REQUESTS_PER_PEER,
                                 lambda: _listed(f"ipv6:[::1]:{port}", token))

    refused, answer = _attack_then_stop(attack, lobby, desk)
    assert isinstance(answer, spb.ListSubmissionsResponse), answer
    line = f"{REQUESTS_PER_PEER} calls of your address are waiting to send their request: dial again later"
    capped = [d for code, d in refused if code == grpc.StatusCode.RESOURCE_EXHAUSTED and d == line]
    assert len(refused) >= flood - REQUESTS_PER_PEER and len(capped) > flood // 2, refused[:3]


def test_a_unary_call_without_its_request_ends_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that sends no request ends at the request time limit (INVALID_ARGUMENT, one line), one that ends
    without it at once; the unary calls that send theirs are answered as before, health's Watch too."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook
    from referee import streams

    monkeypatch.setattr(streams, "REQUEST_TIMEOUT_S", 1.0)
    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    lobby = Lobby("t", TokenBook(), services=[service.add_to_server(desk)])
    address = lobby.start()

    async def calls() -> list[str]:
        async def outcome(call: Any) -> str:
            try:
                got = [m async for m in call] if hasattr(call, "__aiter__") else [await call]
                return f"OK {len(got)}"
            except grpc.aio.AioRpcError as e:
                return f"{e.code().name}: {e.details()}"

        release = asyncio.Event()
        meta = (("authorization", f"Bearer {token}"),)
        async with grpc.aio.insecure_channel(address) as ch:
            silent = _silent_calls([ch], "/allfours.v1.SubmissionService/GetSubmission", release, 1)[0]
            ended = ch.stream_stream("/allfours.v1.SubmissionService/GetSubmission", request_serializer=bytes,
                                     response_deserializer=bytes)(iter(()), metadata=meta, timeout=30)
            stub = spb_grpc.SubmissionServiceStub(ch)
            got = [await outcome(silent), await outcome(ended),
                   await outcome(stub.GetSubmission(spb.GetSubmissionRequest(id=7), metadata=meta, timeout=30)),
                   await outcome(health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=30))]
            watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(), timeout=30)
            got.append(health_pb2.HealthCheckResponse.ServingStatus.Name((await watch.read()).status))
            watch.cancel()
            release.set()
        return got

    try:
        got = asyncio.run(calls())
    finally:
        lobby.stop()
        desk.book.close()
    assert got == ["INVALID_ARGUMENT: no request within 1 s of opening the call",
                   "INVALID_ARGUMENT: the call ended without its request",
                   "NOT_FOUND: no submission 7 of yours", "OK 1", "SERVING"], got


def test_silent_unary_calls_of_one_address_do_not_stop_the_referee(tmp_path: Path) -> None:
    """A submitted bot's container reaches the embedded referee, whose health service (and AdminService) take
    unary calls: 4000 health Check calls that never sent their request (over 80 connections) held every one of
    the referee's 2048 RPC slots, so every seat's Play stream was refused ("Concurrent RPC limit exceeded!")
    and every other game forfeited. Now they are capped per address as silent Play streams are: another
    seat's stream (a sandboxed process bot's, on the referee's unix socket) is still answered."""
    from referee.server import ThreadedReferee
    from referee.streams import REQUESTS_PER_PEER

    flood = 4000

    sock = f"unix:{tmp_path}/referee.sock"
    with ThreadedReferee(unix_socket=sock) as ref:
        refused, other = asyncio.run(_flood_then(
            lambda: _own_channels(ref.address, 80),
            lambda chs, release: _silent_calls(chs, "/grpc.health.v1.Health/Check", release, flood),
            lambda seen: seen >= flood - REQUESTS_PER_PEER, lambda: _hello(sock)))
    assert other == (grpc.StatusCode.UNAUTHENTICATED, "unknown ticket"), other  # served: its ticket was read
    line = f"{REQUESTS_PER_PEER} calls of your address are waiting to send their request: dial again later"
    capped = [d for code, d in refused if code == grpc.StatusCode.RESOURCE_EXHAUSTED and d == line]
    assert len(refused) >= flood - REQUESTS_PER_PEER and len(capped) > flood // 2, refused[:3]


def test_bytes_that_are_no_request_are_one_line_not_the_parsers_exception(served: tuple[str, str, Desk]) -> None:
    """Bytes that do not decode as a Submission method's request (not protobuf, or a name that is not UTF-8)
    were answered UNKNOWN with the server's Python exception ("Unexpected <class
    'google.protobuf.message.DecodeError'>: Error parsing message with type ..."), Submit's too; now
    INVALID_ARGUMENT with one line naming their size, as the referee and the lobby answer on their streams."""
    address, token, _ = served
    meta = (("authorization", f"Bearer {token}"),)
    bad_utf8 = b"\x0a\x02\xff\xfe"  # field 1 (a name), 2 bytes that are not UTF-8
    got = []
    with grpc.insecure_channel(address) as channel:
        for method, body in (("GetSubmission", b"\xff\xff\xff"), ("RegisterRemote", bad_utf8),
                             ("GetSeatLog", b"\xff\xff\xff")):
            call = channel.unary_unary(f"/allfours.v1.SubmissionService/{method}", request_serializer=bytes,
                                       response_deserializer=bytes)
            with pytest.raises(grpc.RpcError) as e:
                call(body, metadata=meta, timeout=30)
            got.append((e.value.code(), e.value.details()))
        header = spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", kind=spb.SUBMISSION_KIND_PYTHON,
                                                           entry="bot:Bot")).SerializeToString()
        submit = channel.stream_unary("/allfours.v1.SubmissionService/Submit", request_serializer=bytes,
                                      response_deserializer=bytes)
        for messages in ([b"\xff\xff\xff"], [header, b"\xff\xff\xff"]):
            with pytest.raises(grpc.RpcError) as e:
                submit(iter(messages), metadata=meta, timeout=30)
            got.append((e.value.code(), e.value.details()))
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert got == [
        (invalid, "the request is not a GetSubmissionRequest (3 bytes that do not decode as "
                  "allfours.v1.GetSubmissionRequest)"),
        (invalid, "the request is not a RegisterRemoteRequest (4 bytes that do not decode as "
                  "allfours.v1.RegisterRemoteRequest)"),
        (invalid, "the request is not a GetSeatLogRequest (3 bytes that do not decode as "
                  "allfours.v1.GetSeatLogRequest)"),
        (invalid, "the first message is not a SubmitRequest (3 bytes that do not decode as "
                  "allfours.v1.SubmitRequest)"),
        (invalid, "a message after the header is not a SubmitRequest (3 bytes that do not decode as "
                  "allfours.v1.SubmitRequest)"),
    ], got


def test_the_arenas_own_calls_on_the_referees_unix_socket_are_not_capped(tmp_path: Path) -> None:
    """The embedded referee's unix socket carries the arena's own admin calls (every game's CreateMatch, from
    as many threads as games run at once): its calls are not capped as one address's, so more of them at once
    than a TCP address may have waiting are never refused; each is still timed."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from referee.server import ThreadedReferee
    from referee.streams import REQUESTS_PER_PEER

    async def calls(sock: str) -> str:
        release = asyncio.Event()
        async with grpc.aio.insecure_channel(sock) as ch:
            silent = _silent_calls([ch], "/grpc.health.v1.Health/Check", release, REQUESTS_PER_PEER + 4)
            await asyncio.sleep(1)  # the server holds them (capped, the next would be refused at once)
            try:
                got = await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=30)
                answer = health_pb2.HealthCheckResponse.ServingStatus.Name(got.status)
            except grpc.aio.AioRpcError as e:
                answer = f"{e.code().name}: {e.details()}"
            release.set()
            for c in silent:
                c.cancel()
        return answer

    sock = f"unix:{tmp_path}/referee.sock"
    with ThreadedReferee(unix_socket=sock):
        answer = asyncio.run(calls(sock))
    assert answer == "SERVING", answer


@pytest.mark.parametrize("held", ["competitor_for", "select"])
def test_a_call_waiting_on_the_book_does_not_hold_the_lobbys_event_loop(tmp_path: Path, held: str) -> None:
    """The Submission service shares its event loop with the lobby and the embedded referee (every game's
    seats). It read and wrote the competition's book on that loop, and the book waits on its lock while the
    build queue writes and on another process's write, each a disk sync; a competitor's SelectSubmission
    calls (no limit: choices are not reads) each synced the disk there. A call whose book access waits (here
    held until released: the token's look-up, or a choice's write) stopped every other call of the port, and
    every game; now it waits in a worker thread and the port answers meanwhile (health Check, SERVING)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from arena.lobby.service import Lobby
    from arena.lobby.tokens import TokenBook

    desk = _desk(tmp_path, per_day=10)
    token = desk.book.add_competitor("eve")
    sub = _upload(desk, "eve", Header("evebot", "1", "python", "bot:Bot"), io.BytesIO(_archive()))
    desk.book.set_status(sub.id, "accepted")
    entered, release = threading.Event(), threading.Event()
    original = getattr(desk.book, held)

    def waiting(*args: Any) -> Any:
        entered.set()
        release.wait(60)
        return original(*args)

    setattr(desk.book, held, waiting)
    lobby = Lobby("t", TokenBook(), services=[service.add_to_server(desk)])
    address = lobby.start()
    try:
        with grpc.insecure_channel(address) as channel:
            stub = spb_grpc.SubmissionServiceStub(channel)
            chosen = stub.SelectSubmission.future(spb.SelectSubmissionRequest(id=sub.id),
                                                  metadata=(("authorization", f"Bearer {token}"),), timeout=60)
            assert entered.wait(30)
            try:
                got = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
                answer = health_pb2.HealthCheckResponse.ServingStatus.Name(got.status)
            except grpc.RpcError as e:
                answer = f"{e.code().name}: {e.details()}"
            release.set()
            assert chosen.result().submission.final_entry
    finally:
        release.set()
        lobby.stop()
        desk.book.close()
    assert answer == "SERVING", answer


#: A server process serving the Submission service on a lobby's port over a fresh competition in ``argv[1]``
#: (eve the one competitor, one refused upload a day; uploads of up to 64 MiB), printing its address and
#: eve's token, until its stdin closes.
_SERVES_ONE_REFUSAL_A_DAY = """
import sys
from pathlib import Path
from arena.competition import service
from arena.competition.book import CompetitionBook, Submission
from arena.competition.desk import Desk
from arena.config import CompetitionSettings
from arena.lobby.service import Lobby
from arena.lobby.tokens import TokenBook

output = Path(sys.argv[1])
settings = CompetitionSettings(refused_per_day=1, upload_bytes=64 << 20, unpacked_bytes=128 << 20)
desk = Desk(settings, output, CompetitionBook(output), lambda: None)
token = desk.book.add_competitor("eve")
lobby = Lobby("t", TokenBook(), services=[service.add_to_server(desk)])
print(lobby.start(), token, flush=True)
sys.stdin.read()
lobby.stop()
desk.book.close()
"""


def _large_upload(files: int, each: int) -> Iterator[spb.SubmitRequest]:
    """Submit's messages for a tar of ``files`` files of ``each`` random bytes (no bot in it: never kept)."""
    import os

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for k in range(files):
            add_tar_file(tar, f"data/{k}.bin", os.urandom(each))
    data = buf.getvalue()
    yield spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="next", kind=spb.SUBMISSION_KIND_PYTHON,
                                                    entry="bot:Bot"))
    for at in range(0, len(data), service.CHUNK_BYTES):
        yield spb.SubmitRequest(chunk=data[at:at + service.CHUNK_BYTES])


def test_an_upload_cancelled_while_it_is_unpacked_counts_as_refused(tmp_path: Path) -> None:
    """A competitor's Submit cancelled by its client while the arena unpacked the archive was counted nowhere:
    the call's end closed the spooled archive under the intake, whose next read failed as the arena's fault, so
    a client could send a large upload and cancel it once sent, again and again, and have the server unpack
    each in no limit. Now the intake stops at its next read and the upload counts as refused: with
    ``refused_per_day`` 1, eve's next upload is refused for the day (a real server process, a real client that
    cancels once the arena has begun writing the archive's files)."""
    import os
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[1]
    output = tmp_path / "out"
    server = subprocess.Popen([sys.executable, "-c", _SERVES_ONE_REFUSAL_A_DAY, str(output)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert server.stdout is not None and server.stdin is not None
        address, token = server.stdout.readline().split()
        meta = (("authorization", f"Bearer {token}"),)
        with grpc.insecure_channel(address) as channel:
            stub = spb_grpc.SubmissionServiceStub(channel)
            upload = stub.Submit.future(_large_upload(1200, 40 * 1024), metadata=meta, timeout=300)
            deadline = time.monotonic() + 240
            while not any((output / "submissions").glob("incoming-*/bot/data/*")):  # the arena unpacks it
                assert not upload.done() and time.monotonic() < deadline, upload
                time.sleep(0.005)
            upload.cancel()
            refused = _next_upload(stub, meta)
        server.stdin.close()
        assert server.wait(60) == 0
    finally:
        server.kill()
        server.wait(30)
    assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.details()
    assert (refused.details() or "").startswith("1 uploads of yours refused today, the limit of a day"), refused

    with CompetitionBook(output) as book:
        assert (book.refusals_since("eve", 0), book.count_since("eve", 0)) == (1, 0)
    assert not list((output / "submissions").glob("incoming-*")), "the cancelled upload's files are gone"


def _next_upload(stub: spb_grpc.SubmissionServiceStub, meta: Any) -> grpc.RpcError:
    """A small valid upload of eve's, sent again while her last one is still under way; its refusal (the test
    fails if it is kept)."""
    import time

    deadline = time.monotonic() + 120
    while True:
        try:
            kept = stub.Submit(iter([spb.SubmitRequest(header=spb.SubmitHeader(name="evebot", version="next",
                                                                               entry="bot:Bot")),
                                     spb.SubmitRequest(chunk=_archive())]), metadata=meta, timeout=60)
        except grpc.RpcError as e:
            if "an upload of yours is under way" not in (e.details() or "") or time.monotonic() > deadline:
                return e
            time.sleep(0.2)
        else:
            raise AssertionError(f"the next upload was kept: {kept}")


def test_an_authenticated_call_reads_only_its_callers_disqualification(served: tuple[str, str, Desk],
                                                                         tmp_path: Path) -> None:
    """Every call looks its caller up in the book. It read every disqualification there was, each call (and a
    revoked token's by a digest no index held): a host with many would make every competitor's call read them
    all. Now each look at the table is an indexed search for the one caller (by name, or by the revoked token's
    digest), and each caller is told what they were told before."""
    import sqlite3

    from arena.competition.client import SubmissionClient

    address, eve, desk = served
    book = desk.book
    mal = book.add_competitor("mal")
    for k in range(20):  # others disqualified: rows no caller's look may read
        book.add_competitor(f"c{k}")
        book.disqualify(f"c{k}", f"reason {k}", "host")
    book.disqualify("mal", "a second account", "host")
    again = book.add_competitor("mal")  # added again with a new token: still disqualified
    looks: list[str] = []
    book._db.set_trace_callback(lambda sql: looks.append(sql) if "disqualifications" in sql else None)
    told: dict[str, int | tuple[grpc.StatusCode, str]] = {}
    for who, token in (("eve", eve), ("mal", mal), ("mal again", again), ("nobody", "x" * 43)):
        client = SubmissionClient(address, token)
        try:
            told[who] = len(client.submissions())
        except grpc.RpcError as e:
            told[who] = (e.code(), str(e.details()))
        finally:
            client.close()
    book._db.set_trace_callback(None)
    assert told["eve"] == 0
    for who in ("mal", "mal again"):
        code, said = told[who]  # type: ignore[misc]
        assert code == grpc.StatusCode.PERMISSION_DENIED and "a second account" in said
        assert said.startswith("competitor mal was disqualified by the host at "), said
    assert told["nobody"] == (grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked competitor token")
    assert len(looks) >= 4, looks  # each caller's request looked at the table
    with contextlib.closing(sqlite3.connect(tmp_path / "competition.sqlite")) as con:
        for sql in looks:
            plan = " ".join(str(row[-1]) for row in con.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "SEARCH disqualifications USING INDEX" in plan and "SCAN" not in plan, (sql, plan)
