"""arena web in a real browser: Debian's chromium driven by playwright (executable_path, never
`playwright install`; scripts/setup.d/20-chromium.sh installs it). Under CI these tests may not skip.

Covers issue 11 item 7: the leaderboard loads; it updates without a reload when a game finishes;
the replay viewer steps through a whole game to the count and shows the record's scores; the
per-seat view never draws a hidden card; a bot named ``<script>…`` is shown as text; plus the static
viewer copies from the file system and a spectator page. ``ARENA_WEB_SCREENSHOTS=DIR`` saves the
leaderboard and viewer screenshots there (docs/ holds the committed ones).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_helpers import EVIL, ROOT, chromium, live_from_record, record_lines, run_tournament, seat_knowledge

from arena.web import WebServer, start_in_thread
from tests.configs import bots_toml

pytestmark = pytest.mark.slow

SHOTS = os.environ.get("ARENA_WEB_SCREENSHOTS")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tournament(tmp_path_factory.mktemp("webb"))


@pytest.fixture(scope="module")
def server(out: Path) -> Iterator[WebServer]:
    s = start_in_thread(out, "127.0.0.1", 0, bootstrap=100)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    p = ctx.new_page()
    dialogs: list[str] = []
    p.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    p.on("pageerror", lambda e: dialogs.append(f"page error: {e}"))
    try:
        yield p
        assert dialogs == [], dialogs  # no alert() ran, no script failed
    finally:
        ctx.close()


def wait_for_text(page: Any, selector: str, ok: Any, timeout_s: float = 10) -> str:
    """Poll ``selector``'s text until ``ok(text)`` (bounded). The pages' Content-Security-Policy forbids
    eval, so playwright's string ``wait_for_function`` cannot run there."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = page.locator(selector).text_content() or ""
        if ok(text):
            return text
        assert time.monotonic() < deadline, f"{selector} still shows {text!r}"
        page.wait_for_timeout(100)


def games_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def url(server: WebServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def test_leaderboard_loads_and_shows_a_script_name_as_text(page: Any, server: WebServer) -> None:
    page.goto(url(server, "/"))
    assert page.locator("#ratings tr").count() == 3  # the header and two bots
    assert EVIL in page.locator("td.bot").all_text_contents()
    assert page.locator("svg circle").count() == 2  # the chart, one dot a bot
    assert page.locator("#games-table a.replay").count() == 2
    wait_for_text(page, "#live-state", lambda t: t == "run ended")  # no arena holds this folder
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "web-leaderboard.png"), full_page=True)


SIMULATED = """
[tournament]
name = "sim"
players = 2
games_per_pairing = 4
concurrency = 1
output = "out"
""" + bots_toml("{evil}", "b")  # .format(evil=...) names the first


def test_leaderboard_updates_when_a_game_finishes(page: Any, tmp_path: Path) -> None:
    """A (simulated) tournament runs in another process; the open page shows each new game without
    reloading (Server-Sent Events)."""
    cfg = tmp_path / "sim.toml"
    cfg.write_text(SIMULATED.format(evil=EVIL))
    run = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--simulate", "1.5", "--no-progress",
                            "--bootstrap", "0"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "out" / "arena.sqlite").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, bootstrap=0)
        page.goto(url(server, "/"))
        wait_for_text(page, "#live-state", lambda t: t == "live")
        page.evaluate("window.sameDocument = true")
        before = int(page.locator("#played").text_content())
        assert before < 4
        wait_for_text(page, "#played", lambda t: int(t) > before, 20)
        assert page.evaluate("window.sameDocument") is True  # updated in place, not reloaded
        assert page.locator("#games-table tr").count() - 1 == int(page.locator("#played").text_content())
    finally:
        if server is not None:
            server.stop()
        run.kill()
        run.wait(timeout=30)


def frame_count(page: Any) -> int:
    return int(page.evaluate("window.arenaViewer.frames().length"))


def test_viewer_steps_through_a_whole_game_to_the_count(page: Any, server: WebServer, out: Path) -> None:
    g = games_of(out)[0]
    lines = record_lines(out / g["record"])
    end = next(o for o in lines if o["type"] == "game_end")
    page.goto(url(server, f"/games/{g['game_id']}"))
    n = frame_count(page)
    page.keyboard.press("Home")
    assert page.locator("#seat-0 .card").count() == 0  # before the first deal
    shown_scores = []
    for _ in range(n - 1):
        page.keyboard.press("ArrowRight")
        shown_scores.append(page.locator("#score").get_attribute("data-scores"))
    assert page.evaluate("window.arenaViewer.at()") == n - 1
    assert shown_scores[-1] == f"{end['scores'][0]}-{end['scores'][1]}" == "-".join(map(str, g["scores"]))
    assert page.locator("#step-text").text_content().startswith("match completed")
    texts = [page.locator("#events").inner_text()]
    # the result's seats, each with the record's connected_at_end: every seat played to the end
    assert texts[0].count("connected at the end") == 4 and "gone before the end" not in texts[0], texts[0]
    # back to the start, then by deal and by trick
    page.keyboard.press("Home")
    page.keyboard.press("Shift+ArrowRight")
    assert page.locator("#step-text").text_content().startswith("deal 1:")
    assert page.locator("#seat-0 .card").count() == 6 and page.locator("#seat-3 .card .suit").count() == 6
    page.keyboard.press("ArrowDown")
    assert "wins the trick" in page.locator("#events").inner_text()
    assert page.locator("#trick .card").count() == 4
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "web-viewer.png"), full_page=True)
    page.click("#next-deal")
    assert page.locator("#step-text").text_content().startswith("deal 2:")
    page.click("#prev-deal")
    assert page.locator("#step-text").text_content().startswith("deal 1:")
    assert texts


def test_seat_view_never_draws_a_hidden_card(page: Any, server: WebServer, out: Path) -> None:
    g = games_of(out)[1]
    lines = record_lines(out / g["record"])
    seat = 1
    known = list(seat_knowledge(lines, seat))
    page.goto(url(server, f"/games/{g['game_id']}?seat={seat}"))
    assert frame_count(page) == len(known)
    page.keyboard.press("Home")  # it opens at the first step with cards
    for k, (_, _, hidden) in enumerate(known):
        if k:
            page.keyboard.press("ArrowRight")
        drawn = set(page.eval_on_selector_all("[data-card]", "els => els.map(e => e.dataset.card)"))
        text = page.locator("body").inner_text()
        assert not drawn & hidden, (k, drawn & hidden)
        assert not any(c in text.split() for c in hidden), k
        if k and known[k][0] == "deal":
            # the other seats' hands are card backs, as many as they hold
            assert page.locator("#seat-3 .card.back").count() == page.locator("#seat-1 .card").count() == 6


def test_static_viewer_copy_works_from_the_file_system(page: Any, out: Path) -> None:
    g = games_of(out)[0]
    page.goto((out / "leaderboard.html").as_uri())
    page.click(f"a.replay[href='replays/{g['game_id']}.html']")
    page.wait_for_load_state()
    page.wait_for_selector("#step-text:not(:empty)")
    assert page.url.startswith("file://")
    page.keyboard.press("End")
    assert page.locator("#score").get_attribute("data-scores") == "-".join(map(str, g["scores"]))
    assert page.locator("#step-text").text_content().startswith("match completed")


def test_spectator_page_shows_the_delayed_game(page: Any, server: WebServer, out: Path, tmp_path: Path) -> None:
    """A spectator page opens at the newest step it may show (it opened at the first deal, as a finished
    game's replay does, and a spectator had to press End to follow the game)."""
    import shutil
    import sqlite3

    games = games_of(out)
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games")
    a, b = (record_lines(out / g["record"]) for g in games)
    deals_a = [n for n, o in enumerate(a) if o["type"] == "deal"]
    deals_b = [n for n, o in enumerate(b) if o["type"] == "deal"]
    logs = [live_from_record(copy, a, games[0]["game_id"], games[0]["pair"], upto=deals_a[1] + 2),
            live_from_record(copy, b, games[1]["game_id"], games[1]["pair"], upto=deals_b[1] + 2)]
    s = start_in_thread(copy, "127.0.0.1", 0, bootstrap=0)
    try:
        page.goto(url(s, "/live"))
        page.click(f"text={games[0]['game_id']}")
        page.wait_for_load_state()
        page.wait_for_selector("#step-text:not(:empty)")  # viewer.js has run
        assert "hidden from game 1 deal 2" in page.locator("#delay-note").text_content()
        assert page.evaluate("window.arenaViewer.at() === window.arenaViewer.frames().length - 1")
        assert page.evaluate("window.arenaViewer.frames().every(f => f.deal <= 1)")
        page.keyboard.press("Home")
        page.keyboard.press("Shift+ArrowRight")
        assert all(page.locator(f"#seat-{k} .card:not(.back)").count() == 6 for k in range(4))  # all hands
    finally:
        for log in logs:
            log.close()
        s.stop()


def test_the_live_badge_turns_off_once_the_run_has_ended(page: Any, out: Path, server: WebServer) -> None:
    """issue 24, item 9: "live" while an arena holds the output folder, "run ended" once it lets go."""
    from arena.tournament.lock import lock_output

    with lock_output(out):  # what `arena run` holds while it plays
        page.goto(f"http://127.0.0.1:{server.port}/")
        wait_for_text(page, "#live-state", lambda t: t == "live")
        assert "on" in (page.locator("#live-dot").get_attribute("class") or "")
    wait_for_text(page, "#live-state", lambda t: t == "run ended", timeout_s=30)
    assert "on" not in (page.locator("#live-dot").get_attribute("class") or "")


def test_arena_web_on_a_busy_port_and_before_the_folder_exists(tmp_path: Path) -> None:
    """issue 24, item 9: a busy port is one line and exit 2, as ``arena serve --web`` (it printed
    "serving …", then uvicorn's error, and exited 3); started before ``arena run`` made the folder, it
    says in one line that it waits, then serves it."""
    import socket
    import urllib.request

    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        done = subprocess.run([sys.executable, "-m", "arena.cli", "web", str(tmp_path), "--port", str(port)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        busy.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: --port {port} on 127.0.0.1: Address already in use", done.stderr
    folder = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", str(folder), "--port", str(port)], cwd=ROOT,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == f"waiting for {folder} (arena run makes it; Ctrl-C stops)"
        folder.mkdir()
        assert proc.stderr.readline().startswith(f"serving {folder} on http://127.0.0.1:{port}/")
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/games", timeout=5) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "arena web did not serve the folder once it appeared"
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(15)


def test_replays_open_at_the_first_cards_link_steps_and_say_what_happened(page: Any, server: WebServer,
                                                                         out: Path) -> None:
    """issue 24, item 9: the viewer opens at the first step with cards (not an empty table), its address
    names the step (#step=12, and such an address opens there), and "This step" says what happened."""
    g = games_of(out)[0]
    page.goto(url(server, f"/games/{g['game_id']}"))
    first = page.evaluate("window.arenaViewer.frames().findIndex(f => (f.hands || []).some(h => h && h.length))")
    assert first > 0 and page.evaluate("window.arenaViewer.at()") == first
    assert page.locator("#seat-0 .card").count() == 6 and page.url.endswith(f"#step={first + 1}")
    assert page.locator("#events li.what").text_content() == page.locator("#step-text").text_content() != ""
    page.goto(url(server, f"/games/{g['game_id']}#step=12"))
    page.reload()  # a new page load at that address (goto with only a new hash does not reload)
    assert page.evaluate("window.arenaViewer.at()") == 11
    assert (page.locator("#position").text_content() or "").startswith("step 12 of")
    page.keyboard.press("ArrowRight")
    assert page.url.endswith("#step=13")
    assert page.locator("#events li.what").text_content() == page.locator("#step-text").text_content() != ""


def test_pages_expand_their_compact_frames_to_the_apis(page: Any, server: WebServer, out: Path) -> None:
    """A page carries its frames compact (each as its changes from the one before) and ``viewer.js``
    expands them: on the served pages (all hands, a seat) and a static copy, what the viewer steps
    through is exactly the frames the JSON API sends; and the page is less than two thirds of what
    the whole frames made it."""
    from urllib.request import urlopen

    from arena.web.frames import ALL, replay_frames
    from arena.web.render import script_json

    g = games_of(out)[1]
    lines = record_lines(out / g["record"])
    for path, view in ((f"/games/{g['game_id']}", ALL), (f"/games/{g['game_id']}?seat=2", 2)):
        with urlopen(url(server, f"/api/games/{g['game_id']}/record" + ("" if view == ALL else "?seat=2"))) as r:
            api = json.load(r)["frames"]
        page.goto(url(server, path))
        page.wait_for_selector("#step-text:not(:empty)")
        assert json.loads(page.evaluate("JSON.stringify(window.arenaViewer.frames())")) == api
    static = out / "replays" / f"{g['game_id']}.html"
    page.goto(static.as_uri())
    page.wait_for_selector("#step-text:not(:empty)")
    whole = replay_frames(lines, ALL)
    assert json.loads(page.evaluate("JSON.stringify(window.arenaViewer.frames())")) == whole["frames"]
    assert static.stat().st_size * 3 < len(script_json(whole)) * 2


def test_static_replays_have_the_seat_views(page: Any, out: Path) -> None:
    """issue 24, item 9: each static replay links a page per seat, which draws only that seat's cards."""
    g = games_of(out)[1]
    lines = record_lines(out / g["record"])
    page.goto((out / "replays" / f"{g['game_id']}.html").as_uri())
    page.wait_for_selector("#step-text:not(:empty)")
    page.click("#view-seat-1")
    page.wait_for_load_state()
    page.wait_for_selector("#step-text:not(:empty)")
    assert page.url.startswith("file://") and f"{g['game_id']}.seat1.html" in page.url
    assert page.evaluate("window.arenaViewer.frames().length") == len(list(seat_knowledge(lines, 1)))
    assert page.locator("#seat-1 .card:not(.back)").count() == 6
    assert page.locator("#seat-3 .card.back").count() == 6 and page.locator("#seat-3 .card:not(.back)").count() == 0


def test_pages_and_filters_keep_the_page_size(page: Any, server: WebServer) -> None:
    """The games list's "older" link and its filter form dropped ``per_page``: from ``/?per_page=1`` the
    next page was page 2 of 50 games a page, an empty table saying "page 2 of 1"."""
    page.goto(url(server, "/?per_page=1"))
    assert page.locator("#games-table tr").count() == 2  # the header and one game
    first = page.locator("#games-table td").first.text_content()
    page.click("a[rel=next]")
    page.wait_for_load_state()
    assert page.locator(".pager span").text_content() == "page 2 of 2"
    assert page.locator("#games-table tr").count() == 2
    assert page.locator("#games-table td").first.text_content() != first
    page.select_option("select[name=termination]", "normal")
    page.click("#filters button[type=submit]")
    page.wait_for_load_state()
    assert "per_page=1" in page.url and page.locator("#games-table tr").count() == 2
    assert page.locator(".pager span").text_content() == "page 1 of 2"


def test_static_seat_view_links_work_for_any_tournament_name(page: Any, out: Path, tmp_path: Path) -> None:
    """A static replay's "view:" links named the seat pages unencoded: with a ``#`` in the tournament's name
    (a game id holds it) the browser took the rest for a fragment and stayed on the page, with ``%2F`` it
    looked for another file. They are URL-encoded, as the leaderboard's links are."""
    import shutil

    from arena.web.export import write_static_replays

    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    rows = [{**g, "game_id": f"cup #1?a=%2F&b-{g['game_id']}"} for g in games_of(out)]
    write_static_replays(copy, rows)
    g = rows[1]
    page.goto((copy / "replays" / f"{g['game_id']}.html").as_uri())
    page.wait_for_selector("#step-text:not(:empty)")
    assert page.evaluate("window.arenaViewer.frames().every(f => !f.hands || f.hands.every(h => h))")  # all hands
    page.click("#view-seat-1")
    page.wait_for_load_state()
    page.wait_for_selector("#step-text:not(:empty)")
    assert page.url.split("#step=")[0] == (copy / "replays" / f"{g['game_id']}.seat1.html").as_uri()
    assert page.locator("#seat-3 .card.back").count() == 6 and page.locator("#seat-1 .card:not(.back)").count() == 6
    page.click("#view-all")
    page.wait_for_load_state()
    assert page.url.split("#step=")[0] == (copy / "replays" / f"{g['game_id']}.html").as_uri()


def test_no_page_logs_an_error_in_the_console(page: Any, server: WebServer, out: Path) -> None:
    """Every page asked for /favicon.ico, which is not there: a 404 in the console of each page view
    (and in the server's work). The pages name an empty icon; no page logs an error."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    gid = games_of(out)[0]["game_id"]
    files = ((out / "leaderboard.html").as_uri(), (out / "replays" / f"{gid}.html").as_uri())
    for where in (url(server, "/"), url(server, f"/games/{gid}"), url(server, f"/games/{gid}?seat=1"),
                  url(server, "/live"), *files):
        page.goto(where)
        page.wait_for_load_state("load")
        if "/games/" in where or "/replays/" in where:
            page.wait_for_selector("#step-text:not(:empty)")  # viewer.js has run
    page.goto(url(server, "/"))
    wait_for_text(page, "#live-state", lambda t: t == "run ended")  # the live-update stream answered
    assert errors == []


def test_the_rating_charts_labels_fit_whatever_the_names_length(page: Any, out: Path, tmp_path: Path) -> None:
    """A competition's entrant is ``name@version``, up to 63 + 128 characters; the chart's label column
    was 160 px whatever the names, so a long one was cut off at the page's left edge, its start (the
    name) unreadable. The column widens for the longest label; a label past 40 characters keeps its start
    and its end (the version) around "…", and the full name is its tooltip."""
    from arena.web.render import leaderboard_html

    long = "a-very-long-league-entrant-name-of-a-competitors-bot@2026.12.05-build-7"
    ratings = json.loads((out / "ratings.json").read_text().replace('"random', f'"{long}'))
    (tmp_path / "leaderboard.html").write_text(leaderboard_html(ratings, ratings["tournament"], []))
    page.goto((tmp_path / "leaderboard.html").as_uri())
    labels = page.locator("svg").first.evaluate(  # the ratings chart: a label (text-anchor end) a bot
        "svg => [...svg.querySelectorAll('text[text-anchor=end]')].map(e => ({x: e.getBBox().x, "
        "text: e.firstChild.nodeValue, title: e.querySelector('title') && e.querySelector('title').textContent}))")
    assert len(labels) == 2, labels
    assert all(label["x"] >= 0 for label in labels), labels
    mine = next(label for label in labels if label["title"] == long)
    assert mine["text"].startswith("a-very-long") and mine["text"].endswith("build-7") and "…" in mine["text"]


def test_the_leaderboard_without_scripts_says_whether_the_run_is_live(browser: Any, server: WebServer) -> None:
    """Without JavaScript the badge said "connecting…" for ever (only the live-update stream set it); the
    page is rendered with what the server knows: "run ended" here (no arena holds the folder)."""
    ctx = browser.new_context(java_script_enabled=False)
    try:
        page = ctx.new_page()
        page.goto(url(server, "/"))
        assert page.locator("#live-state").text_content() == "run ended"
        assert page.locator("#ratings tr").count() == 3  # the board itself needs no script
    finally:
        ctx.close()


def test_a_big_pairwise_matrix_scrolls_inside_the_page(page: Any, tmp_path: Path) -> None:
    """With 20 bots the pairwise matrix was wider than the page, which grew sideways (every section
    scrolled with it); the matrix scrolls inside its own box."""
    from arena.ratings.fit import games_from_mapping, rate
    from arena.tournament.runner import SimulatedRunner
    from arena.tournament.schedule import make_schedule
    from arena.web.render import leaderboard_html

    names = [f"entrant-{k:02d}@1" for k in range(20)]
    rows = [SimulatedRunner().play(g).rating_row() for g in make_schedule("wide", names, 2, 2, bytes(32))]
    ratings = rate(games_from_mapping(rows), bootstrap=0)
    facts = {"name": "wide", "bots": dict.fromkeys(names, "1"), "commitment": "c0ffee", "master_seed": None,
             "scheduled": len(rows), "played": len(rows), "players": 2}
    (tmp_path / "leaderboard.html").write_text(leaderboard_html(ratings, facts, rows))
    page.set_viewport_size({"width": 1000, "height": 800})
    page.goto((tmp_path / "leaderboard.html").as_uri())
    assert page.locator("#matrix tr").count() == 21
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
