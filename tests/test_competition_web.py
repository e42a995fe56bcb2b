"""A competitor's pages over HTTP (arena/web/competitor.py), on the output of a real tournament: the
session cookie, my running game seen from my seat only, another's seat refused, the board's best
version per competitor (?versions=all: every one). The whole walk in chromium is in
tests/test_competition.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from web_helpers import live_from_record, record_lines, run_tournament

from arena.competition.book import CompetitionBook
from arena.competition.games import hidden_versions
from arena.web.app import create_app

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
