"""A competitor's pages over HTTP (arena/web/competitor.py), on the output of a real tournament: the
session cookie, my running game seen from my seat only, another's seat refused, the board's best
version per competitor (?versions=all: every one). The whole walk in chromium is in
tests/test_competition.py.

Sessions live in the competition's book (only their SHA-256): one outlives a restart of ``arena web``
(a real process), ends a week after its last use or a month after its sign-in (time given by a clock
the test moves: nothing sleeps), at sign-out, at the competitor's 17th sign-in (the oldest) and when
the competitor is revoked."""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from web_helpers import (
    arena_web,
    held_yet_others_answer,
    live_from_record,
    record_lines,
    run_tournament,
    set_blind,
    stalling,
)

from arena.competition.book import BOOK_NAME, CompetitionBook
from arena.competition.games import hidden_versions
from arena.report import live
from arena.web import start_in_thread
from arena.web.app import create_app
from arena.web.competitor import COOKIE, FORM_BYTES, FORM_WAIT_S, IDLE_S, LIFETIME_S, SESSIONS_EACH, TOUCH_S, Sessions
from arena.web.livereads import BUSY, LiveReads

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tournament(tmp_path_factory.mktemp("cweb"))


def _book(out: Path) -> dict[str, str]:
    """Competitors ivy (entrant ivy-bot@1, accepted) and jay; their tokens."""
    with CompetitionBook(out) as book:
        tokens = {n: book.add_competitor(n) for n in ("ivy", "jay")}
        sub = book.add_submission("ivy", "ivy-bot", "1", "python", "m:C")
        book.set_status(sub.id, "accepted", image="x")
    return tokens


def test_my_running_game_from_my_seat_and_not_another(tmp_path: Path, out: Path) -> None:
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    game = json.loads((copy / "games.jsonl").read_text().splitlines()[0])
    lines = record_lines(copy / game["record"])
    names = ["ivy-bot@1", "house", "ivy-bot@1", "house"]  # ivy's side: seats 0 and 2
    lines[0] = {**lines[0], "seat_names": names}
    log = live_from_record(copy, lines, "running-1", "pair-9", upto=12)
    try:
        c = TestClient(create_app(copy, bootstrap=20))
        assert c.get("/me/live/running-1/0").status_code == 401  # no session
        signed = c.post("/me/login", content=f"token={tokens['ivy']}", follow_redirects=False,
                        headers={"content-type": "application/x-www-form-urlencoded"})
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and tokens["ivy"].lower() not in cookie
        me = c.get("/me")
        assert 'href="/me/live/running-1/0"' in me.text and 'href="/me/live/running-1/2"' in me.text
        assert 'href="/me/live/running-1/1"' not in me.text
        mine = c.get("/me/live/running-1/0")
        assert mine.status_code == 200 and "viewer" in mine.text
        refused = c.get("/me/live/running-1/1")
        assert refused.status_code == 403 and "is not yours" in refused.text
        assert c.get("/me/live/nothing/0").status_code == 404
        jay = TestClient(create_app(copy, bootstrap=20))
        jay.post("/me/login", content=f"token={tokens['jay']}",
                 headers={"content-type": "application/x-www-form-urlencoded"})
        assert jay.get("/me/live/running-1/0").status_code == 403
        bad = TestClient(create_app(copy, bootstrap=20)).post(
            "/me/login", content="token=nope", headers={"content-type": "application/x-www-form-urlencoded"})
        assert bad.status_code == 401 and "af_session" not in bad.headers.get("set-cookie", "")
    finally:
        log.close()


@pytest.mark.parametrize("blind", [True, False])
def test_my_running_game_names_no_opponent_in_a_blind_league(tmp_path: Path, out: Path, blind: bool) -> None:
    """A remote entry's author can read /me while its game runs: my running games and my seat's live
    view named every seat, so in a blind league I could learn whom my entry plays (and throw the game to a
    friend). Blind, they name my own entry only (the others are "seat K") until the game is stored; not
    blind, every seat as before."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    set_blind(copy, blind)
    game = json.loads((copy / "games.jsonl").read_text().splitlines()[0])
    lines = record_lines(copy / game["record"])
    lines[0] = {**lines[0], "seat_names": ["ivy-bot@1", "rival-bot@7", "ivy-bot@1", "rival-bot@7"]}
    log = live_from_record(copy, lines, "cup-p0-1-g0", "cup-p0-1-d0", upto=12)
    try:
        c = TestClient(create_app(copy, bootstrap=20))
        c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM)
        shown = live.shown_id({}, "cup-p0-1-g0", blind)  # a blind game's id names no pairing
        me, mine = c.get("/me").text, c.get(f"/me/live/{shown}/0").text
        assert f'href="/me/live/{shown}/0"' in me and f'href="/me/live/{shown}/2"' in me
        assert ("cup-p0-1-g0" in me) is not blind and ("cup-p0-1-d0" in me + mine) is False
        assert "ivy-bot@1" in mine
        assert ("rival-bot" in mine) is not blind and "rival-bot" not in me
        assert c.get("/me/live/cup-p0-1-g0/0").status_code == (404 if blind else 200)
        data = json.loads(mine.split('id="replay-data">')[1].split("</script>")[0])
        expect = ["ivy-bot@1", "seat 1", "ivy-bot@1", "seat 3"] if blind else lines[0]["seat_names"]
        assert data["seat_names"] == expect
    finally:
        log.close()


def test_my_remote_bots_seats_are_not_linked_to_logs_kept_on_my_machine(tmp_path: Path, out: Path) -> None:
    """A remote bot (RegisterRemote) plays from its competitor's machine, and its log is written there:
    /me linked its seats' logs all the same, and each link answered 403 "has no log". Its seats now say
    where the log is instead; my container bot's seats stay linked."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    with CompetitionBook(copy) as book:
        sub = book.add_submission("ivy", "ivy-remote", "1", "remote", "")
        book.set_status(sub.id, "accepted")
    rows = [json.loads(x) for x in (copy / "games.jsonl").read_text().splitlines()]
    rows[0]["a"], rows[1]["a"] = "ivy-remote@1", "ivy-bot@1"  # ivy's side 0 (seats 0 and 2) in each game
    (copy / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    c = TestClient(create_app(copy, bootstrap=20))
    c.post("/me/login", content=f"token={tokens['ivy']}", headers={"content-type": "application/x-www-form-urlencoded"})
    me = c.get("/me").text
    remote, local = rows[0]["game_id"], rows[1]["game_id"]
    for seat in (0, 2):
        assert f'href="/me/logs/{remote}/{seat}"' not in me
        assert f"seat {seat} runs on your machine: no log here" in me
        assert f'href="/me/logs/{local}/{seat}"' in me
    assert me.count("runs on your machine") == 2


def test_my_page_marks_my_final_entry(tmp_path: Path, out: Path) -> None:
    """/me said nothing of which entry plays the final: the latest accepted by default, the chosen one once
    `arena submit --select` chose it (as `arena competition final` picks it)."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    with CompetitionBook(copy) as book:
        newer = book.add_submission("ivy", "ivy-bot", "2", "python", "m:C")
        book.set_status(newer.id, "accepted", image="y")
    c = TestClient(create_app(copy, bootstrap=20))
    c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM)
    me = c.get("/me").text
    assert me.count("(final entry)") == 1 and "ivy-bot@2 <b class=\"final-entry\">(final entry)</b>" in me, me
    with CompetitionBook(copy) as book:
        assert book.select("ivy", newer.id - 1)
    me = c.get("/me").text
    assert me.count("(final entry)") == 1 and "ivy-bot@1 <b class=\"final-entry\">(final entry)</b>" in me, me


def test_hidden_versions_keep_each_competitors_best() -> None:
    ranked = ["a@2", "house", "b@1", "a@1", "a@3"]
    owners = {"a@1": "ann", "a@2": "ann", "a@3": "ann", "b@1": "bo"}
    assert hidden_versions(ranked, owners) == {"a@1", "a@3"}
    assert hidden_versions(ranked, {}) == set()


def test_a_rejections_log_tail_reads_left_to_right_within_the_page(tmp_path: Path, out: Path) -> None:
    """The failing checks and the bot's output under a rejected submission: left-aligned and wrapped, so
    the page does not grow sideways (the table's cells are right-aligned for numbers)."""
    from web_helpers import chromium

    from arena.web import start_in_thread

    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    tail = "\n".join(f"check-{k}: expected a whole match played legally; the bot: " + "ended early " * 12
                     for k in range(12))
    with CompetitionBook(copy) as book:
        sub = book.add_submission("ivy", "broken", "1", "python", "m:C")
        book.set_status(sub.id, "rejected", "validation", "failing checks: check-0, …", tail)
    server = start_in_thread(copy, "127.0.0.1", 0, bootstrap=20)
    try:
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.goto(f"http://127.0.0.1:{server.port}/me")
            page.fill("#token", tokens["ivy"])
            page.click("#login button")
            shown = page.locator("#submissions pre").first
            assert shown.inner_text().startswith("check-0: expected")
            assert shown.evaluate("e => getComputedStyle(e).textAlign") == "left"
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        server.stop()


FORM = {"content-type": "application/x-www-form-urlencoded"}
#: What /me shows ivy signed in, and anyone signed out.
IVY_PAGE, SIGN_IN_FORM = '<b id="who">ivy</b>', '<form method="post" action="/me/login" id="login">'
#: A moment (UNIX seconds) the clock of a test starts at.
T0 = 1_900_000_000.0


@dataclass
class Clock:
    """The time a test's :class:`Sessions` read (UNIX seconds), moved by the test."""

    now: float = T0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Row:
    """One row of the book's sessions table, read straight from the file."""

    digest: str
    competitor: str
    created_at: float
    used_at: float


def _competition(tmp_path: Path, out: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the tournament's output with the book of :func:`_book`; the folder and the tokens."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    return copy, _book(copy)


def _client(output: Path, clock: Clock | None = None) -> TestClient:
    """A client of a new web app of ``output`` (a fresh process's state), its sessions on ``clock``."""
    app = create_app(output, bootstrap=20)
    if clock is not None:
        app.state.sessions = Sessions(clock=clock)
    return TestClient(app)


def _sign_in(client: TestClient, token: str) -> str:
    """Sign in with ``token``; the session cookie's value (the client forgets it: pass it yourself)."""
    signed = client.post("/me/login", content=f"token={token}", headers=FORM, follow_redirects=False)
    assert signed.status_code == 303, signed.text
    sid = signed.cookies[COOKIE]
    client.cookies.clear()
    return sid


def _cookie(sid: str) -> dict[str, str]:
    """The request header presenting the session cookie ``sid``."""
    return {"cookie": f"{COOKIE}={sid}"}


def _me(client: TestClient, sid: str) -> str:
    """/me with the session cookie ``sid``."""
    page = client.get("/me", headers=_cookie(sid))
    assert page.status_code == 200
    return page.text


def _rows(output: Path) -> list[Row]:
    """The book's sessions, oldest sign-in first (read by a connection of the test's own)."""
    db = sqlite3.connect(output / BOOK_NAME)
    try:
        rows = db.execute("SELECT digest, competitor, created_at, used_at FROM sessions ORDER BY created_at, rowid")
        return [Row(str(d), str(c), float(a), float(u)) for d, c, a, u in rows.fetchall()]
    finally:
        db.close()


def test_a_session_outlives_a_restart_of_arena_web(tmp_path: Path, out: Path) -> None:
    """Sessions were kept in the web process: stopping `arena web` (or `arena serve`) signed everyone
    out. Two real processes one after the other on the same folder: the first one's cookie opens /me
    on the second."""
    copy, tokens = _competition(tmp_path, out)
    with arena_web(copy) as base:
        signed = httpx.post(f"{base}/me/login", content=f"token={tokens['ivy']}", headers=FORM)
        assert signed.status_code == 303, signed.text
        sid = signed.cookies[COOKIE]
        assert IVY_PAGE in httpx.get(f"{base}/me", headers=_cookie(sid)).text
    with arena_web(copy) as base:
        again = httpx.get(f"{base}/me", headers=_cookie(sid))
        assert again.status_code == 200 and IVY_PAGE in again.text
        assert SIGN_IN_FORM in httpx.get(f"{base}/me", headers=_cookie(sid + "x")).text


def _post_head(base: str, headers: str, body: bytes) -> bytes:
    """Send ``POST /me/login`` with ``headers`` and the first ``body`` bytes of a longer body (never sent);
    the status line the server answers with before the rest (b"" if it closes without one)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.settimeout(30)  # a safety net: the server should answer without waiting for the rest
        s.sendall(f"POST /me/login HTTP/1.1\r\nHost: {host}:{port}\r\n{headers}\r\n".encode() + body)
        return s.makefile("rb").readline()


def test_a_sign_in_form_over_its_limit_is_refused_unread(tmp_path: Path, out: Path) -> None:
    """/me/login read the whole body into memory before keeping its first FORM_BYTES: anyone, with no
    token, could post gigabytes (400 MB took arena serve to 950 MB) and run the league's host out of
    memory. Over the limit by Content-Length, or by what a chunked body has sent so far, it is a 413 at
    once, the rest never read; a form within it still signs in (a real `arena web` process)."""
    copy, tokens = _competition(tmp_path, out)
    with arena_web(copy) as base:
        declared = _post_head(base, f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {1 << 30}\r\n",
                              b"token=")
        assert declared.startswith(b"HTTP/1.1 413"), declared
        chunk = b"token=" + b"a" * FORM_BYTES
        chunked = _post_head(base, "Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n",
                             b"%x\r\n%s\r\n" % (len(chunk), chunk))
        assert chunked.startswith(b"HTTP/1.1 413"), chunked
        signed = httpx.post(f"{base}/me/login", content=f"token={tokens['ivy']}", headers=FORM, follow_redirects=False)
        assert signed.status_code == 303, signed.text


def test_a_sign_in_form_that_does_not_come_is_refused(tmp_path: Path, out: Path) -> None:
    """/me/login waited for its body as long as it took: anyone, with no token, could hold a connection and
    its request for ever by sending a declared 100-byte form a byte now and then (the server's timer for a
    request's head stops once the head has come). Now the form must come whole within FORM_WAIT_S: a
    one-line 408, and the connection closed (a real `arena web` process)."""
    copy, _ = _competition(tmp_path, out)
    with arena_web(copy) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as s:
            s.settimeout(120)  # a safety net: the server should answer within FORM_WAIT_S
            s.sendall(f"POST /me/login HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-www-form-"
                      "urlencoded\r\nContent-Length: 100\r\n\r\ntoken=".encode())
            got = b""
            while chunk := s.recv(4096):
                got += chunk
        assert got.startswith(b"HTTP/1.1 408"), got
        assert got.endswith(f"\r\n\r\nthe sign-in form did not come within {FORM_WAIT_S:g} s\n".encode()), got


def test_the_book_keeps_only_a_sessions_sha256(tmp_path: Path, out: Path) -> None:
    """A copy of the book (a backup, a stolen file) must not sign anyone in: its bytes, with the WAL's,
    hold the SHA-256 of the session id and never the id."""
    copy, tokens = _competition(tmp_path, out)
    sid = _sign_in(_client(copy), tokens["ivy"])
    digest = hashlib.sha256(sid.encode()).hexdigest()
    assert [(r.digest, r.competitor) for r in _rows(copy)] == [(digest, "ivy")]
    files = b"".join(p.read_bytes() for p in copy.glob(BOOK_NAME + "*"))
    assert digest.encode() in files  # the grep sees what the book wrote, the WAL too
    assert sid.encode() not in files


def test_a_session_ends_a_week_after_its_last_use(tmp_path: Path, out: Path) -> None:
    """Sessions never ended: a cookie copied once worked for ever. Each use moves the week on; a week
    without one ends it (the row goes)."""
    assert IDLE_S == 7 * 86_400
    copy, tokens = _competition(tmp_path, out)
    clock = Clock()
    c = _client(copy, clock)
    sid = _sign_in(c, tokens["ivy"])
    clock.now += IDLE_S - 1
    assert IVY_PAGE in _me(c, sid)
    clock.now += IDLE_S - 1  # nearly two weeks after the sign-in, but a week since the last use
    assert IVY_PAGE in _me(c, sid)
    clock.now += IDLE_S
    assert SIGN_IN_FORM in _me(c, sid)
    assert c.get("/me/logs/any/0", headers=_cookie(sid)).status_code == 401
    assert _rows(copy) == []


def test_a_session_ends_a_month_after_its_sign_in_however_used(tmp_path: Path, out: Path) -> None:
    """Used every day, a session still ends 30 days after its sign-in; the cookie is kept that long."""
    assert LIFETIME_S == 30 * 86_400
    copy, tokens = _competition(tmp_path, out)
    clock = Clock()
    c = _client(copy, clock)
    signed = c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM, follow_redirects=False)
    assert f"max-age={LIFETIME_S}" in signed.headers["set-cookie"].lower()
    sid = signed.cookies[COOKIE]
    c.cookies.clear()
    while clock.now + 86_400 < T0 + LIFETIME_S:
        clock.now += 86_400
        assert IVY_PAGE in _me(c, sid), clock.now - T0
    clock.now = T0 + LIFETIME_S - 1
    assert IVY_PAGE in _me(c, sid)
    clock.now = T0 + LIFETIME_S
    assert SIGN_IN_FORM in _me(c, sid)
    assert _rows(copy) == []


def test_a_sessions_last_use_is_written_at_most_once_a_minute(tmp_path: Path, out: Path) -> None:
    """A page view within a minute of the last written use writes nothing (no write per request)."""
    assert TOUCH_S == 60
    copy, tokens = _competition(tmp_path, out)
    clock = Clock()
    c = _client(copy, clock)
    sid = _sign_in(c, tokens["ivy"])
    assert [(r.created_at, r.used_at) for r in _rows(copy)] == [(T0, T0)]
    clock.now = T0 + TOUCH_S - 1
    assert IVY_PAGE in _me(c, sid)
    assert [r.used_at for r in _rows(copy)] == [T0]
    clock.now = T0 + TOUCH_S
    assert IVY_PAGE in _me(c, sid)
    assert [r.used_at for r in _rows(copy)] == [T0 + TOUCH_S]


def test_a_sign_in_deletes_every_ended_session(tmp_path: Path, out: Path) -> None:
    """An ended session nobody presents again leaves no row for ever: the next sign-in (anyone's)
    deletes the rows of every session ended by then."""
    copy, tokens = _competition(tmp_path, out)
    clock = Clock()
    c = _client(copy, clock)
    _sign_in(c, tokens["ivy"])
    clock.now += 60
    _sign_in(c, tokens["jay"])
    clock.now = T0 + IDLE_S
    jay = _sign_in(c, tokens["jay"])
    assert [(r.competitor, r.created_at) for r in _rows(copy)] == [("jay", T0 + 60), ("jay", T0 + IDLE_S)]
    assert "jay" in _me(c, jay)


def test_the_seventeenth_sign_in_ends_the_first(tmp_path: Path, out: Path) -> None:
    """A competitor keeps their newest 16 sessions, in the book: a new app (a restart) knows them."""
    assert SESSIONS_EACH == 16
    copy, tokens = _competition(tmp_path, out)
    clock = Clock()
    c = _client(copy, clock)
    sids = []
    for _ in range(SESSIONS_EACH + 1):
        clock.now += 1
        sids.append(_sign_in(c, tokens["ivy"]))
    assert [r.created_at for r in _rows(copy)] == [T0 + k for k in range(2, SESSIONS_EACH + 2)]
    restarted = _client(copy, clock)
    assert SIGN_IN_FORM in _me(restarted, sids[0])
    assert all(IVY_PAGE in _me(restarted, sid) for sid in sids[1:])


def test_a_signed_out_cookie_gets_the_sign_in_form(tmp_path: Path, out: Path) -> None:
    """Sign-out deletes the session's row: the old cookie, presented again, is nobody's."""
    copy, tokens = _competition(tmp_path, out)
    c = _client(copy)
    sid = _sign_in(c, tokens["ivy"])
    kept = _sign_in(c, tokens["ivy"])  # another browser of ivy's stays signed in
    assert len(_rows(copy)) == 2
    out_ = c.post("/me/logout", headers=_cookie(sid), follow_redirects=False)
    assert out_.status_code == 303 and f'{COOKIE}=""' in out_.headers["set-cookie"]
    assert [r.digest for r in _rows(copy)] == [hashlib.sha256(kept.encode()).hexdigest()]
    assert SIGN_IN_FORM in _me(c, sid)
    assert SIGN_IN_FORM in _me(_client(copy), sid)
    assert IVY_PAGE in _me(c, kept)


def test_a_revoked_competitors_sessions_end(tmp_path: Path, out: Path) -> None:
    """Revoking a competitor deletes their sessions' rows at once (jay's stay), and their cookie is
    refused: /me shows the sign-in form, a log is 401."""
    copy, tokens = _competition(tmp_path, out)
    c = _client(copy)
    ivy, jay = _sign_in(c, tokens["ivy"]), _sign_in(c, tokens["jay"])
    assert IVY_PAGE in _me(c, ivy)
    with CompetitionBook(copy) as book:
        assert book.revoke_competitor("ivy")
    assert [r.competitor for r in _rows(copy)] == ["jay"]
    assert SIGN_IN_FORM in _me(c, ivy)
    assert c.get("/me/logs/any/0", headers=_cookie(ivy)).status_code == 401
    assert '<b id="who">jay</b>' in _me(c, jay)


#: The book's tables before sessions were kept in it (a competition started with an older arena).
OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE competitors (name TEXT PRIMARY KEY, digest TEXT, created_at REAL NOT NULL, revoked_at REAL);
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    competitor TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL,
    kind TEXT NOT NULL, entry TEXT NOT NULL, status TEXT NOT NULL,
    step TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', log_tail TEXT NOT NULL DEFAULT '',
    image TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL,
    retired INTEGER NOT NULL DEFAULT 0,
    UNIQUE (name, version));
"""


def test_a_book_made_before_sessions_gets_their_table_when_opened(tmp_path: Path) -> None:
    """A competition under way when the arena is upgraded: its book has no sessions table; the web
    makes it and signs the competitor in."""
    from arena.lobby.tokens import token_digest

    folder = tmp_path / "out"
    folder.mkdir()
    db = sqlite3.connect(folder / BOOK_NAME)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO competitors VALUES ('ivy', ?, 0, NULL)", (token_digest("ivy-token"),))
    db.commit()
    db.close()
    c = _client(folder)
    sid = _sign_in(c, "ivy-token")
    assert [r.competitor for r in _rows(folder)] == ["ivy"]
    assert IVY_PAGE in _me(c, sid)


def test_my_pages_links_work_for_any_league_name(tmp_path: Path, out: Path) -> None:
    """A league named ``spring cup #1 "copa de España" 杯``: my log links were refused (403 "no seat 0 of
    a game …": a game id had to be letters, digits, ``_`` and ``-``), and /me's links were not
    URL-encoded, so a browser took ``#1 …`` for a fragment; a log's file name (its game id) is sent as
    RFC 6266's ``filename*`` (a header holds no ``杯``: it was a 500; nor a bare ``"``). A real ``arena
    web``; each link followed as a browser resolves it. A game of mine forfeited unplayed has no log and
    no record: its seats and its replay say so instead of linking a 403 and a 404."""
    import html
    import re
    from urllib.parse import quote, urljoin

    copy, tokens = _competition(tmp_path, out)
    prefix = 'spring cup #1 "copa de España" 杯-'
    rows = [json.loads(x) for x in (copy / "games.jsonl").read_text().splitlines()]
    for r in rows:
        (copy / "logs" / r["game_id"]).rename(copy / "logs" / (prefix + r["game_id"]))
        r["game_id"] = prefix + r["game_id"]
    rows[0]["a"] = "ivy-bot@1"  # ivy's side 0: seats 0 and 2
    unplayed = {**rows[0], "game_id": prefix + "unplayed", "record": None}
    (copy / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*rows, unplayed]))
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("UPDATE games SET game_id = ? || game_id", (prefix,))
    lines = record_lines(copy / rows[0]["record"])
    lines[0] = {**lines[0], "seat_names": ["ivy-bot@1", "house", "ivy-bot@1", "house"]}
    log = live_from_record(copy, lines, prefix + "running", "pair-9", upto=12)
    try:
        with arena_web(copy) as base, httpx.Client(base_url=base, timeout=30) as c:
            assert c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM).status_code == 303
            me = c.get("/me").text
            links = re.findall(r'<a class="(log|replay|live)" href="([^"]*)"', me)
            assert sorted({kind for kind, _ in links}) == ["live", "log", "replay"], me
            for kind, href in links:
                r = c.get(urljoin(f"{base}/me", html.unescape(href)))
                assert r.status_code == 200, (kind, href, r.status_code, r.text[:200])
                if kind == "log":
                    seat = href.rsplit("/", 1)[1]
                    assert r.content == (copy / "logs" / rows[0]["game_id"] / f"seat{seat}.log").read_bytes()
                    assert r.headers["content-disposition"].endswith(
                        "filename*=UTF-8''" + quote(f"{rows[0]['game_id']}-seat{seat}.log", safe=""))
            assert len([k for k, _ in links if k == "log"]) == 2  # seats 0 and 2 of the played game
            assert me.count("has no log") == 2 and "(not played: no replay)" in me  # the unplayed game
    finally:
        log.close()


def test_my_live_seat_page_links_only_my_seats(tmp_path: Path, out: Path) -> None:
    """/me/live/GAME/0 showed the replay viewer's "view:" line: "all hands" and every seat, as ``?seat=``
    links that the page ignores (each showed seat 0 again, under another name). It links my seats' own
    live pages instead, each showing that seat."""
    import html
    import re
    from urllib.parse import urljoin

    copy, tokens = _competition(tmp_path, out)
    game = json.loads((copy / "games.jsonl").read_text().splitlines()[0])
    lines = record_lines(copy / game["record"])
    lines[0] = {**lines[0], "seat_names": ["ivy-bot@1", "house", "ivy-bot@1", "house"]}
    log = live_from_record(copy, lines, "running-1", "pair-9", upto=12)
    try:
        with arena_web(copy) as base, httpx.Client(base_url=base, timeout=30) as c:
            assert c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM).status_code == 303
            page = c.get("/me/live/running-1/0").text
            views = re.search(r'<p class="views">(.*?)</p>', page, re.S)
            assert views is not None, page
            hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', views.group(1))]
            assert hrefs == ["/me/live/running-1/0", "/me/live/running-1/2"], hrefs
            for seat, href in zip((0, 2), hrefs, strict=True):
                shown = c.get(urljoin(f"{base}/me/live/running-1/0", href)).text
                data = json.loads(shown.split('id="replay-data">')[1].split("</script>")[0])
                assert data["view"] == seat
    finally:
        log.close()


def test_the_session_cookie_is_secure_behind_a_trusted_tls_proxy(tmp_path: Path, out: Path) -> None:
    """docs/competition.md, step 4: behind a TLS proxy named with --web-proxy (--proxy), the proxy's
    ``X-Forwarded-Proto: https`` marks the session cookie Secure; from an untrusted peer the header is
    ignored (and the cookie is not Secure over plain HTTP). A real server on loopback."""
    from arena.web import start_in_thread

    copy, tokens = _competition(tmp_path, out)
    https = {**FORM, "x-forwarded-proto": "https"}
    for proxies, secure in (((), False), (("127.0.0.1",), True)):
        server = start_in_thread(copy, "127.0.0.1", 0, proxies, bootstrap=0)
        try:
            r = httpx.post(f"http://127.0.0.1:{server.port}/me/login", content=f"token={tokens['ivy']}",
                           headers=https, timeout=30)
            assert r.status_code == 303, r.text
            assert ("; secure" in r.headers["set-cookie"].lower()) is secure, (proxies, r.headers["set-cookie"])
        finally:
            server.stop()


def test_my_pages_are_never_stored_by_a_cache(tmp_path: Path, out: Path) -> None:
    """/me (my submissions, their log tails), my seat logs and my live seat views carried no Cache-Control:
    a shared cache or the browser's history could keep a signed-in page after its sign-out. Every answer
    under /me says ``no-store``. A real ``arena web``."""
    copy, tokens = _competition(tmp_path, out)
    rows = [json.loads(x) for x in (copy / "games.jsonl").read_text().splitlines()]
    rows[0]["a"] = "ivy-bot@1"
    (copy / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = record_lines(copy / rows[0]["record"])
    lines[0] = {**lines[0], "seat_names": ["ivy-bot@1", "house", "ivy-bot@1", "house"]}
    log = live_from_record(copy, lines, "running-1", "pair-9", upto=12)
    try:
        with arena_web(copy) as base, httpx.Client(base_url=base, timeout=30) as c:
            signed = c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM)
            answers = [signed, c.get("/me"), c.get(f"/me/logs/{rows[0]['game_id']}/0"), c.get("/me/live/running-1/0"),
                       c.get("/me/live/running-1/1"), c.post("/me/logout")]
            assert [r.status_code for r in answers] == [303, 200, 200, 200, 403, 303]
            for r in answers:
                assert r.headers.get("cache-control") == "no-store", (r.url, r.headers)
    finally:
        log.close()


def test_my_pages_count_against_reads_per_minute(tmp_path: Path, out: Path) -> None:
    """/me, a seat log and a running seat's page are reads: past the book's ``reads_per_minute`` (which
    arena serve writes there) they are a 429 saying when to try again, for that competitor alone; signing
    in is no read. The allowance's clock stands still here, so no read comes back during the test."""
    from arena.competition.reads import READS_KEY, ReadAllowance

    copy, tokens = _competition(tmp_path, out)
    with CompetitionBook(copy) as book:
        book.set_meta(READS_KEY, "8")  # 2 at once
    client = _client(copy)
    client.app.state.reads = ReadAllowance(clock=lambda: 0.0)  # type: ignore[attr-defined]
    ivy, jay = _sign_in(client, tokens["ivy"]), _sign_in(client, tokens["jay"])
    assert IVY_PAGE in _me(client, ivy)
    assert client.get("/me/logs/nothing/0", headers=_cookie(ivy)).status_code == 403  # a read all the same
    for url in ("/me", "/me/logs/nothing/0", "/me/live/nothing/0"):
        refused = client.get(url, headers=_cookie(ivy))
        assert refused.status_code == 429, (url, refused.text)
        assert refused.text == "too many reads: at most 8 a minute (reads_per_minute), 2 at once; try again in 8 s\n"
        assert refused.headers["retry-after"] == "8" and refused.headers["cache-control"] == "no-store"
    assert "jay" in _me(client, jay)
    assert SIGN_IN_FORM in client.get("/me").text  # signed out: the form, no read of anyone's


def _ivy_running(tmp_path: Path, out: Path) -> tuple[Path, dict[str, str], dict[str, Any], live.LiveLog]:
    """A copy of ``out`` (no live files) with competitors ivy and jay (:func:`_book`: their tokens), its first
    stored game's games.jsonl row, and a running game "running-1" of ivy's (seats 0 and 2: the first 12 lines
    of that game's record) as a live file, open (the caller closes it, which removes the file)."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    tokens = _book(copy)
    game = json.loads((copy / "games.jsonl").read_text().splitlines()[0])
    lines = record_lines(copy / game["record"])
    lines[0] = {**lines[0], "seat_names": ["ivy-bot@1", "house", "ivy-bot@1", "house"]}
    return copy, tokens, game, live_from_record(copy, lines, "running-1", "pair-9", upto=12)


def test_my_pages_read_a_stalled_live_file_off_the_event_loop(tmp_path: Path, out: Path) -> None:
    """/me and /me/live/{id}/{seat} read the live files (and the book) on the event loop: while a live file
    stalled its reader (a slow disk), every request of the server waited. Now on the server's threads: both
    are held (they wait for the file), the games list still answers, and once the file reads both answer."""
    copy, tokens, _, log = _ivy_running(tmp_path, out)
    text = log.path.read_text()
    log.close()  # it removes its file, held open for writing (a write lease needs no other open of it)
    path = copy / live.LIVE_DIR / "running-1.jsonl"
    path.write_text(text)
    server = start_in_thread(copy, "127.0.0.1", 0, bootstrap=0)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=20) as client:
            assert client.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM).status_code == 303
            with stalling(path):
                games = held_yet_others_answer(client, ["/me", "/me/live/running-1/0"])
                assert games.status_code == 200 and games.json()["total"] > 0
            assert 'href="/me/live/running-1/0"' in client.get("/me").text
            assert client.get("/me/live/running-1/0").status_code == 200
    finally:
        server.stop()


def test_every_page_past_the_live_reads_bound(tmp_path: Path, out: Path) -> None:
    """With every live-read slot taken (a bound of 0, waiting 0 s), each page that reads the live files says so
    in one documented line (BUSY): /live, /live/{id} and /me/live/... answer 503, the API 503 with
    {"error": BUSY}; the leaderboard and /me answer 200 with their running games marked not read; the games
    list and a replay, which read no live file, answer as ever. The public pages' bound full, a signed-in
    competitor's own pages still read their games (a bound of their own: sharing one, anonymous spectators
    holding every slot turned a competitor's own game away). (The bound reached by held reads, over a real
    socket, is tests/test_arena_web_load.py.)"""
    copy, tokens, game, log = _ivy_running(tmp_path, out)
    try:
        app = create_app(copy, bootstrap=0)
        app.state.web.live_reads = LiveReads(limit=0, wait_s=0)
        c = TestClient(app)
        assert c.post("/me/login", content=f"token={tokens['ivy']}", headers=FORM).status_code == 200  # -> /me
        # the public bound full (anonymous spectators): a competitor's own pages have a bound of their own
        assert c.get("/me/live/running-1/0").status_code == 200
        assert 'href="/me/live/running-1/0"' in c.get("/me").text
        app.state.web.competitor_reads = LiveReads(limit=0, wait_s=0)
        for url in ("/live", "/live/running-1"):
            page = c.get(url)
            assert page.status_code == 503 and BUSY in page.text
        for url in ("/api/live", "/api/live/running-1"):
            answer = c.get(url)
            assert answer.status_code == 503 and answer.json() == {"error": BUSY}
        mine = c.get("/me/live/running-1/0")
        assert mine.status_code == 503 and mine.text == BUSY + "\n"
        me = c.get("/me")
        assert me.status_code == 200 and IVY_PAGE in me.text and "not read now (too many reads" in me.text
        assert "/me/live/running-1" not in me.text
        board = c.get("/")
        assert board.status_code == 200 and "running games</a> not read now (busy)" in board.text
        assert c.get("/_board").status_code == 200
        assert c.get("/api/games").status_code == 200 and c.get(f"/games/{game['game_id']}").status_code == 200
        app.state.web.live_reads = app.state.web.competitor_reads = LiveReads()
        assert 'href="/me/live/running-1/0"' in c.get("/me").text and c.get("/live/running-1").status_code == 200
    finally:
        log.close()


def test_a_page_while_another_process_holds_the_book_answers_503_busy_in_one_line(tmp_path: Path, out: Path) -> None:
    """`arena web` read the competition's book (the host's disqualifications, for every board) with sqlite's 30 s
    wait, and the results database with 10 s: a book another process held (a stuck host command) kept each page
    30 s and then answered 500. A real `arena web` over a real socket, the book (then the results database)
    locked by a real second process: the pages that read it (the board, the API, a competitor's /me and its
    sign-in) answer 503 with ``Retry-After`` and one line saying which is busy and to try again, naming no file;
    once it is free they answer again."""
    from arena.web.data import BUSY_RETRY_S
    from tests.test_competition_final_bar import _book_held

    copy, tokens = _competition(tmp_path, out)
    with arena_web(copy) as base:
        assert httpx.get(f"{base}/api/ratings", timeout=60).status_code == 200
        sid = httpx.post(f"{base}/me/login", content=f"token={tokens['ivy']}", headers=FORM).cookies[COOKIE]
        with _book_held(copy / BOOK_NAME):
            api = httpx.get(f"{base}/api/ratings", timeout=60)
            page = httpx.get(f"{base}/", timeout=60)
            mine = httpx.get(f"{base}/me", headers=_cookie(sid), timeout=60)
            sign_in = httpx.post(f"{base}/me/login", content=f"token={tokens['jay']}", headers=FORM, timeout=60)
        with _book_held(copy / "arena.sqlite"):  # the results database (WAL) locked whole, as a final's may be
            results = httpx.get(f"{base}/api/games", timeout=60)
        again = httpx.get(f"{base}/api/ratings", timeout=60)
    assert results.status_code == 503 and results.headers["retry-after"] == str(BUSY_RETRY_S), results.text
    assert results.json()["error"].startswith("the results database is busy (another process holds it: "), results.text
    assert api.status_code == 503 and api.headers["retry-after"] == str(BUSY_RETRY_S), api.text
    said = api.json()["error"]
    assert said.startswith("the competition's book is busy (another process holds it: database is locked)"), said
    assert said.endswith(f"try again in {BUSY_RETRY_S} s") and "\n" not in said, said
    assert page.status_code == 503 and page.headers["retry-after"] == str(BUSY_RETRY_S)
    assert "the competition&#39;s book is busy" in page.text or "the competition's book is busy" in page.text
    assert again.status_code == 200 and "ratings" in again.json(), again.text
    for answer in (mine, sign_in):  # a competitor's own pages: text, the same line
        assert answer.status_code == 503 and answer.headers["retry-after"] == str(BUSY_RETRY_S), answer.text
        assert answer.text == f"{said}\n" and str(copy) not in answer.text, answer.text
