"""arena web without a browser (the ASGI app through httpx's test client, and `arena web` itself):
the JSON API, filters and paging, what stays secret (other seats' cards, unrevealed seeds, files
outside the output folder), escaping, spectators' delay, the static viewer copies.
Browser tests: tests/test_arena_web_browser.py."""

from __future__ import annotations

import html
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from web_helpers import (
    ROOT,
    cards_in,
    free_port,
    live_from_record,
    record_lines,
    run_tournament,
    seat_knowledge,
    set_blind,
)

from arena.report import live
from arena.web.app import create_app
from arena.web.frames import expand_frames, replay_frames
from arena.web.render import script_json
from tests.configs import bots_toml

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_tournament(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def client(out: Path) -> TestClient:
    return TestClient(create_app(out, bootstrap=100))


def games_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def test_api_ratings_is_ratings_json(client: TestClient, out: Path) -> None:
    api = client.get("/api/ratings").json()
    published = json.loads((out / "ratings.json").read_text())
    for key in ("ratings", "ranking", "matrix", "los"):
        assert api[key] == published[key], key
    assert api["tournament"]["master_seed"] == published["tournament"]["master_seed"] == "11" * 32
    assert api["tournament"]["played"] == api["tournament"]["scheduled"] == 2


def test_games_list_paging_and_filters(client: TestClient, out: Path) -> None:
    games = games_of(out)
    page = client.get("/api/games", params={"per_page": 1}).json()
    assert page["total"] == 2 and page["pages"] == 2 and len(page["games"]) == 1
    second = client.get("/api/games", params={"per_page": 1, "page": 2}).json()
    assert {page["games"][0]["game_id"], second["games"][0]["game_id"]} == {g["game_id"] for g in games}
    winner = next(g for g in games if g["winner"] is not None)
    won_by = (winner["a"], winner["b"])[winner["winner"]]
    wins = client.get("/api/games", params={"bot": won_by, "result": "win"}).json()["games"]
    assert winner["game_id"] in {g["game_id"] for g in wins}
    assert all((g["a"], g["b"])[g["winner"]] == won_by for g in wins)
    normal = client.get("/api/games", params={"termination": "normal"}).json()["total"]
    assert normal == sum("normal" in g["terminations"] for g in games)
    assert client.get("/api/games", params={"termination": "timeout"}).json()["total"] == 0
    bad = client.get("/api/games", params={"result": "win"})
    assert bad.status_code == 400 and bad.json() == {"error": "result=win needs bot=NAME"}
    assert client.get("/api/games", params={"page": "x"}).status_code == 400
    # the HTML list filters the same way
    html = client.get("/", params={"bot": won_by, "result": "win"}).text
    assert winner["game_id"] in html


def test_game_and_record_api(client: TestClient, out: Path) -> None:
    g = games_of(out)[0]
    one = client.get(f"/api/games/{g['game_id']}").json()
    assert one["scores"] == g["scores"] and one["terminations"] == g["terminations"]
    assert one["record"] == f"/api/games/{g['game_id']}/record" and one["replay_open"] is True
    rec = client.get(one["record"]).json()
    lines = record_lines(out / g["record"])
    end = next(o for o in lines if o["type"] == "game_end")
    assert rec["frames"][-1]["kind"] == "result"
    assert next(f for f in rec["frames"] if f["kind"] == "game_end")["final_scores"] == end["scores"] == g["scores"]
    assert client.get("/api/games/nope").status_code == 404
    assert client.get(f"/api/games/{g['game_id']}/record", params={"seat": "9"}).status_code == 404
    assert client.get(f"/api/games/{g['game_id']}/record", params={"seat": "-1"}).status_code == 400


def test_the_public_rows_name_no_referee_address(client: TestClient, out: Path) -> None:
    """games.jsonl says which referee played each game (``host:port``, for the host), but the web's
    rows did too: with external referees (`--referee`, compose, a Swarm) every visitor learned the
    internal addresses of the arena's referees, which take the admin token. The public rows leave
    ``referee`` out; games.jsonl keeps it."""
    assert all("referee" in g for g in games_of(out))
    listed = client.get("/api/games").json()["games"]
    assert listed and all("referee" not in g for g in listed)
    one = client.get(f"/api/games/{listed[0]['game_id']}").json()
    assert "referee" not in one and one["game_id"] == listed[0]["game_id"]
    referees = {g["referee"] for g in games_of(out)}
    assert not any(r in client.get("/").text for r in referees)


def test_a_history_of_every_game_says_every_game(client: TestClient) -> None:
    """The rating history's step in words: a history after each game said "after every 1 games"."""
    page = client.get("/").text
    assert "Ratings after every game, with 95% intervals" in page and "every 1 games" not in page


def test_seat_view_holds_only_what_that_seat_knew(client: TestClient, out: Path) -> None:
    """Frame by frame, the seat view's cards are that seat's hand or public; no other seat's hidden
    card is anywhere in its JSON or its page (the partner's included: 4 players)."""
    for g in games_of(out):
        lines = record_lines(out / g["record"])
        for seat in range(4):
            api = client.get(f"/api/games/{g['game_id']}/record", params={"seat": seat}).json()
            known = list(seat_knowledge(lines, seat))
            assert len(api["frames"]) == len(known)
            for frame, (_, may_know, hidden) in zip(api["frames"], known, strict=True):
                assert cards_in(frame) <= may_know, (seat, frame["i"])
                assert not cards_in(frame) & hidden
            assert any(hidden for _, _, hidden in known), "the test needs hidden cards"
            page = client.get(f"/games/{g['game_id']}", params={"seat": seat}).text
            before, rest = page.split('<script type="application/json" id="replay-data">')
            embedded, after = rest.split("</script>", 1)
            data = json.loads(embedded)  # the page holds exactly the seat's frames, compact...
            assert data.pop("frames_compact") is True
            assert {**data, "frames": expand_frames(data["frames"])} == api
            assert not cards_in(before + after)  # ...and no card outside them
        # the all-hands view does show every hand
        every = client.get(f"/api/games/{g['game_id']}/record").json()
        assert any(all(h for h in f["hands"]) for f in every["frames"])


def test_bot_controlled_text_is_escaped(client: TestClient, out: Path) -> None:
    g = games_of(out)[0]
    for url in ("/", "/_board", "/_games", f"/games/{g['game_id']}", f"/games/{g['game_id']}?seat=1", "/live"):
        text = client.get(url).text
        assert "<script>alert" not in text and "<b>v1" not in text, url
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/").text
    assert script_json({"n": "</script><b>"}) == '{"n":"\\u003c/script\\u003e\\u003cb\\u003e"}'


def test_security_headers_and_no_other_seats_termination_detail(client: TestClient, out: Path, tmp_path: Path) -> None:
    r = client.get("/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
    assert client.get("/api/games").headers["referrer-policy"] == "no-referrer"
    # the record's result keeps the engine's full message (it may name a held card): seat views
    # show only their own seat's detail
    g = games_of(out)[0]
    lines = record_lines(out / g["record"])
    result = next(o for o in lines if o["type"] == "result")
    for s in result["seats"]:
        s["detail"] = f"seat {s['seat']} secret detail"
    rec = tmp_path / "r.jsonl"
    rec.write_text("".join(json.dumps(o) + "\n" for o in lines))
    c = TestClient(create_app(out, record=rec, bootstrap=0))
    every = c.get("/", params={"seat": "all"}).text
    assert all(f"seat {k} secret detail" in every for k in range(4))
    one = c.get("/", params={"seat": 2}).text
    assert "seat 2 secret detail" in one and not any(f"seat {k} secret detail" in one for k in (0, 1, 3))


def test_no_file_outside_the_output_folder(tmp_path: Path, out: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (tmp_path / "secret.jsonl").write_text('{"type": "header"}\n')
    g = games_of(out)[0]
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("UPDATE games SET record_path = '../secret.jsonl' WHERE game_id = ?", (g["game_id"],))
    c = TestClient(create_app(copy, bootstrap=0))
    assert c.get(f"/api/games/{g['game_id']}/record").status_code == 404
    for url in ("/static/../arena.sqlite", "/static/%2e%2e/arena.sqlite", "/games/..%2Farena.sqlite",
                "/static/..%2F..%2Fsecret.jsonl", "/records/x.jsonl", "/arena.sqlite"):
        r = c.get(url)
        assert r.status_code == 404, url
        assert "master_seed" not in r.text


def test_unrevealed_seeds_and_open_replays(tmp_path: Path, out: Path) -> None:
    """With one game of the pair missing: no master seed, no deal seed anywhere, and the finished
    game's replay stays closed (its twin would deal the same cards)."""
    copy = tmp_path / "running"
    shutil.copytree(out, copy)
    games = games_of(out)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games WHERE game_id = ?", (games[1]["game_id"],))
        db.execute("DELETE FROM meta WHERE key = 'finished_at'")  # a run still going has not revealed it
    c = TestClient(create_app(copy, bootstrap=0))
    g = games[0]
    secrets = ["11" * 32, g["seed"]]
    for url in ("/", "/_board", "/_games", "/api/ratings", "/api/games", f"/api/games/{g['game_id']}", "/live",
                f"/games/{g['game_id']}", f"/api/games/{g['game_id']}/record", "/api/live"):
        r = c.get(url)
        assert not any(s in r.text for s in secrets), url
    assert c.get("/api/ratings").json()["tournament"]["master_seed"] is None
    closed = c.get(f"/api/games/{g['game_id']}/record")
    assert closed.status_code == 403 and "duplicate pair" in closed.json()["error"]
    assert c.get(f"/games/{g['game_id']}").status_code == 403
    assert c.get(f"/api/games/{g['game_id']}").json()["record"] is None


def test_what_the_pages_say_of_a_pair_holds_for_a_remote_entrants_too(tmp_path: Path, out: Path) -> None:
    """A closed replay, the games list and the spectators' notes said the two games of a pair "share
    every deal": not so in a pairing with a remote entrant, whose pair is two independently dealt games
    (arena/tournament/schedule.py, ``pair-second``). What they say now holds for both kinds of pair."""
    copy = tmp_path / "running"
    shutil.copytree(out, copy)
    games = games_of(out)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games WHERE game_id = ?", (games[1]["game_id"],))
        db.execute("DELETE FROM meta WHERE key = 'finished_at'")
    c = TestClient(create_app(copy, bootstrap=0))
    closed = c.get(f"/api/games/{games[0]['game_id']}/record").json()["error"]
    shown = [closed, c.get("/_games").text, c.get("/live").text,
             (ROOT / "arena" / "web" / "templates" / "viewer.html").read_text(),
             (ROOT / "arena" / "web" / "static" / "viewer.js").read_text()]
    for text in shown[:3]:
        assert "duplicate pair deals both games the same cards" in text and "dealt independently" in text, text
    assert "never ahead of the other game of its pair: a {{ pair_note }}" in shown[3]  # a spectator's note
    for text in shown:
        assert "share every deal" not in text and "(same deals)" not in text and "duplicate twin" not in text


def test_a_league_never_reveals_the_master_seed(tmp_path: Path, out: Path) -> None:
    """Every scheduled game stored but no finished_at (as `arena serve` leaves it: a league may grow,
    and its next games' deals derive from the master seed): the seed stays hidden."""
    copy = tmp_path / "league"
    shutil.copytree(out, copy)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM meta WHERE key = 'finished_at'")
    c = TestClient(create_app(copy, bootstrap=0))
    facts = c.get("/api/ratings").json()["tournament"]
    assert facts["played"] == facts["scheduled"] and facts["master_seed"] is None
    assert "11" * 32 not in c.get("/").text and "11" * 32 not in c.get("/api/games").text


def test_the_board_marks_a_remote_bot_whose_games_wait_for_its_workers(tmp_path: Path, out: Path) -> None:
    """A rated remote bot none of whose workers has connected since the arena started again (the store's
    list, written by the run loop): its row says it waits for its workers, the others' do not, and the API
    says so too; a list that is not one (a hand-edited store) marks nothing."""
    copy = tmp_path / "waiting"
    shutil.copytree(out, copy)
    bot = games_of(out)[0]["a"]
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('waiting_for_workers', ?)", (json.dumps([bot]),))
    c = TestClient(create_app(copy, bootstrap=0))
    board = c.get("/_board").text
    marked = re.findall(r'<td class="l bot">([^<]*?) <span class="waiting">waiting for its workers</span>', board)
    assert marked == [html.escape(bot)], board
    assert c.get("/api/ratings").json()["tournament"]["waiting"] == [bot]
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('waiting_for_workers', '{\"a\": 1}')")
    assert 'class="waiting"' not in c.get("/_board").text


def test_live_file_replays_like_the_record(tmp_path: Path, out: Path) -> None:
    """The public events the arena writes while a game runs, with decks re-derived from the seed,
    give the record's frames (the writer and the reader agree)."""
    g = games_of(out)[0]
    lines = record_lines(out / g["record"])
    log = live_from_record(tmp_path, lines, g["game_id"], g["pair"])
    try:
        own = live._read(log.path)
        from_live = replay_frames(live.record_lines(own))["frames"]
        upto_end = [o for o in lines if o["type"] not in ("result", "seed", "rejected")]
        from_record = replay_frames(upto_end)["frames"]
        assert [f["text"] for f in from_live] == [f["text"] for f in from_record]
        assert from_live[-1]["final_scores"] == g["scores"]
    finally:
        log.close()
    assert not log.path.exists()


def test_spectators_are_a_deal_behind_and_never_ahead_of_the_twin(tmp_path: Path, out: Path) -> None:
    games = games_of(out)
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games")  # both games of the pair are running
    a, b = (record_lines(out / g["record"]) for g in games)
    a_deals, b_deals = deal_lines_of(a), deal_lines_of(b)
    assert len(a_deals) >= 2 and len(b_deals) >= 2  # a target of 14 takes two deals at least
    c = TestClient(create_app(copy, bootstrap=0))
    ga = games[0]["game_id"]
    # game a is in its second deal; its twin b has not started yet: nothing is shown
    log_a = live_from_record(copy, a, ga, games[0]["pair"], upto=a_deals[1] + 3)
    try:
        listed = c.get("/api/live").json()
        assert [r["game_id"] for r in listed["running"]] == [ga] and listed["delay_deals"] == 1
        alone = c.get(f"/api/live/{ga}").json()
        assert [f["kind"] for f in alone["frames"]] == ["game"] and alone["hidden_from"] == "game 1 deal 1"
        # the twin is in its first deal: still nothing (it holds deal 1's cards now)
        log_b = live_from_record(copy, b, games[1]["game_id"], games[1]["pair"], upto=b_deals[0] + 3)
        assert [f["kind"] for f in c.get(f"/api/live/{ga}").json()["frames"]] == ["game"]
        log_b.close()
        # the twin is in its second deal too: deal 1 is shown, all hands; deal 2 is not
        log_b = live_from_record(copy, b, games[1]["game_id"], games[1]["pair"], upto=b_deals[1] + 2)
        try:
            seen = c.get(f"/api/live/{ga}").json()
            assert {f["deal"] for f in seen["frames"]} == {0, 1} and seen["hidden_from"] == "game 1 deal 2"
            assert any(all(h for h in f["hands"]) for f in seen["frames"])
            assert len(seen["frames"]) == a_deals[1] - 1  # every step of deal 1 (the header makes no frame)
            page = c.get(f"/live/{ga}").text
            assert "1 deal(s) behind" in page
            # a longer delay shows less
            c2 = TestClient(create_app(copy, bootstrap=0, spectator_delay=2))
            assert [f["kind"] for f in c2.get(f"/api/live/{ga}").json()["frames"]] == ["game"]
        finally:
            log_b.close()
    finally:
        log_a.close()
    assert c.get(f"/api/live/{ga}").status_code == 404  # over: its live file is gone
    assert c.get("/api/live/..%2Farena").status_code == 404


def deal_lines_of(lines: list[dict[str, Any]]) -> list[int]:
    return [n for n, o in enumerate(lines) if o["type"] == "deal"]


def test_static_replays_are_linked_from_the_leaderboard(out: Path) -> None:
    page = (out / "leaderboard.html").read_text()
    for g in games_of(out):
        html = (out / "replays" / f"{g['game_id']}.html").read_text()
        assert f'href="replays/{g["game_id"]}.html"' in page
        assert "<script>alert" not in html and 'src="viewer.js"' in html and 'href="app.css"' in html
    assert (out / "replays" / "viewer.js").is_file() and (out / "replays" / "app.css").is_file()


def test_record_file_mode_and_cli_errors(out: Path) -> None:
    g = games_of(out)[0]
    c = TestClient(create_app(out, record=out / g["record"], bootstrap=0))
    r = c.get("/", params={"seat": 2})
    assert r.status_code == 200 and '"view":2' in r.text
    for args, message in (
        (["web"], "error: give an output folder, or --record FILE"),
        (["web", "--record", ""], "error: give an output folder, or --record FILE"),  # was an AttributeError
        (["web", str(out), "--delay", "0"], "error: --delay must be at least 1 deal, not 0"),
        (["web", str(out), "--port", "70000"], "error: --port must be between 1 and 65535, not 70000"),
        (["web", "--record", "/no/such.jsonl"], "error: --record '/no/such.jsonl': no such file"),
        (["web", "/no/such/folder"], "error: '/no/such/folder': no such folder"),
        (["web", str(out), "--proxy", "proxy.example"],
         "error: --proxy 'proxy.example' is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)"),
        (["serve", str(ROOT / "examples" / "small.toml"), "--web", "0", "--web-proxy", "10.0.0.0/33"],
         "error: --web-proxy '10.0.0.0/33' is not an IP address or network (e.g. 10.0.0.5 or 10.0.0.0/24)"),
    ):
        done = subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and done.stderr.strip() == message, (args, done.stderr)


def test_record_mode_says_it_serves_the_record(out: Path) -> None:
    """`arena web --record FILE` said `serving OUTPUT/records on http://…`, as if the folder were served;
    it serves the one record's viewer, and says so."""
    record = (out / games_of(out)[0]["record"]).resolve()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "web", "--record", str(record), "--port", str(port)],
                            cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().strip()
        assert line == f"serving the record {record} on http://127.0.0.1:{port}/ (Ctrl-C stops)", line
    finally:
        proc.terminate()
        proc.wait(15)


def test_bad_query_parameters_are_one_line_400s_over_http(out: Path) -> None:
    """A seat that is a digit but not an ASCII one (``²``: str.isdigit says yes, int says no) and a page
    past what SQLite's OFFSET holds were answered 500 with a traceback in the server's log; each is a 400
    with one line, on a real server."""
    from urllib.parse import quote

    import httpx

    from arena.web import start_in_thread
    from arena.web.data import MAX_PAGE

    gid = quote(games_of(out)[0]["game_id"], safe="")
    huge = "9" * 30
    paging = f"page must be between 1 and {MAX_PAGE} and per_page between 1 and 200"
    server = start_in_thread(out, "127.0.0.1", 0, bootstrap=0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        for path, message in ((f"/api/games/{gid}/record?seat=%C2%B2", "seat must be a seat number, not '²'"),
                              (f"/api/games?page={huge}", paging), (f"/api/games?page={MAX_PAGE + 1}", paging)):
            r = httpx.get(base + path, timeout=30)
            assert (r.status_code, r.json()) == (400, {"error": message}), path
        for path in (f"/games/{gid}?seat=%C2%B2", f"/?page={huge}", f"/_games?page={huge}"):
            r = httpx.get(base + path, timeout=30)
            assert r.status_code == 400 and 'id="error"' in r.text, (path, r.status_code, r.text[:200])
        assert httpx.get(f"{base}/api/games?page={MAX_PAGE}", timeout=30).json()["games"] == []  # past the end
    finally:
        server.stop()


def test_the_chart_leaves_out_the_versions_the_board_hides(out: Path) -> None:
    """In a competition the board shows each competitor's best-rated version (the table, the matrix), but
    its chart drew every version, the hidden ones too: a dot more than the table has rows; so did the
    rating history, the bot failures and the forfeits."""
    from arena.web.render import board_context, forfeits_by_bot

    ratings = json.loads((out / "ratings.json").read_text())
    assert ratings["history"]
    forfeits = forfeits_by_bot(games_of(out))  # type: ignore[arg-type]  # games.jsonl rows
    shown = board_context(ratings, ratings["tournament"], forfeits, hidden={"random"})
    assert shown["names"] == ["<script>alert(1)</script>"]
    assert str(shown["chart"]).count("<circle") == 1 and "random" not in str(shown["chart"])
    assert "random" not in str(shown["history_chart"]) and "alert(1)" in str(shown["history_chart"])
    assert [row[0] for row in shown["failures"]] == ["<script>alert(1)</script>"]
    assert "random" not in shown["forfeits"]
    assert shown["los"] == {}  # the LOS against the next bot, here a hidden one: not the next row shown
    every = board_context(ratings, ratings["tournament"], forfeits)
    assert str(every["chart"]).count("<circle") == 2
    assert set(every["los"]) == {"<script>alert(1)</script>"}


SIMULATED = """
[tournament]
name = "sim"
players = 2
games_per_pairing = 10
output = "out"
""" + bots_toml("a", "b", "c")


def test_a_finished_runs_web_board_is_its_published_ratings(tmp_path: Path) -> None:
    """``arena web`` on the folder of a finished ``arena run --bootstrap 200`` bootstrapped the games
    again with its own 1000 resamples: other intervals than ratings.json, leaderboard.html and the
    terminal; and its board had no "Bot failures", "Precision" or "Rating history" (published facts it did
    not have). Once ratings.json covers exactly the stored games it is what the web shows. A real
    ``arena run`` (simulated games) and a real server."""
    import httpx

    from arena.web import start_in_thread

    (tmp_path / "sim.toml").write_text(SIMULATED)
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(tmp_path / "sim.toml"), "--simulate", "0",
                           "--no-progress", "--bootstrap", "200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    published = json.loads((out / "ratings.json").read_text())
    assert published["bootstrap"] == 200 and any(r["ci_method"] == "bootstrap" for r in published["ratings"].values())
    server = start_in_thread(out, "127.0.0.1", 0)  # arena web's own default: 1000 resamples
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert httpx.get(f"{base}/api/ratings", timeout=60).json() == published
        static = (out / "leaderboard.html").read_text()
        board = httpx.get(f"{base}/_board", timeout=60).text
        for section in ("<h2>Bot failures", "<h2>Precision and the duplicate format", "<h2>Rating history"):
            assert section in static and section in board, section
        for name, r in published["ratings"].items():
            assert f"[{r['ci'][0]:.1f}, {r['ci'][1]:.1f}]" in board, name
    finally:
        server.stop()


def test_a_running_boards_failures_are_counted_from_the_stored_games(tmp_path: Path, out: Path) -> None:
    """Before a final ratings.json (a run still playing), the board computed its ratings but had no
    "Bot failures" table: the failures were published facts only. They are counted from the stored games."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "ratings.json").unlink()
    c = TestClient(create_app(copy, bootstrap=0))
    facts = c.get("/api/ratings").json()["tournament"]
    assert set(facts["failures"]) == {"<script>alert(1)</script>", "random"}
    assert all(f["forfeits"] == 0 for f in facts["failures"].values())
    assert '<table id="failures">' in c.get("/_board").text


def test_the_boards_games_per_second_is_the_speed_of_play(tmp_path: Path, out: Path) -> None:
    """The board's games/s was (games - 1) / (last stored - first stored): the two games of a duplicate pair
    played side by side finish within a moment, so a league's first pair showed "4.10 games/s" for games of
    16 s each. It is the games stored lately over the time since the earliest of them started (its stored
    time less its duration)."""
    with sqlite3.connect(out / "arena.sqlite") as db:
        rows = db.execute("SELECT stored_at, duration_s FROM games").fetchall()
    expected = len(rows) / (max(s for s, _ in rows) - min(s - d for s, d in rows))
    board = TestClient(create_app(out, bootstrap=0)).get("/_board").text
    assert f"{expected:.2f} games/s" in board, board[:600]


def test_the_board_reads_the_stored_games_once_per_new_game(tmp_path: Path, out: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every /_board (each open page reloads it when a game is stored) and every spectator's refresh read
    and parsed every stored game again: at 19,000 games a board took 0.6-2.6 s of the server. Until a game is
    stored, the pages read none; then only the games not read before (the web's PublishCache): here the new
    one and one stored again (another stored time), not the other."""
    from arena.tournament.result import GameResult

    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    parsed: list[str] = []
    real = GameResult.from_stored

    def counted(*args: Any, **kwargs: Any) -> GameResult:
        result = real(*args, **kwargs)
        parsed.append(result.game_id)
        return result

    monkeypatch.setattr(GameResult, "from_stored", counted)
    c = TestClient(create_app(copy, bootstrap=0))
    assert c.get("/_board").status_code == 200
    parsed.clear()
    for _ in range(3):
        assert c.get("/_board").status_code == 200
        assert c.get("/api/live/nothing-running").status_code == 404
    assert parsed == []
    with sqlite3.connect(copy / "arena.sqlite") as db:  # a game stored: read again, once
        db.execute("UPDATE games SET stored_at = stored_at + 1 WHERE game_id = ?", (games_of(out)[0]["game_id"],))
        db.execute("INSERT INTO games SELECT 'x' || game_id, 'x' || match_id, 'x' || pair_id, side0, side1, score0,"
                   " score1, winner, reasons, record_path, seed, first_dealer, duration_s, extra, stored_at + 2"
                   " FROM games LIMIT 1")
    assert c.get("/_board").status_code == 200 and c.get("/_board").status_code == 200
    assert len(parsed) == 2 and games_of(out)[0]["game_id"] in parsed and any(g.startswith("x") for g in parsed)


def test_a_game_not_running_links_its_replay_url_encoded(out: Path) -> None:
    """/live/{id} of a game not running points at /games/{id} with the id URL-encoded, so the link
    it prints is the one that works (it once printed the id as given: spaces, question marks, quotes)."""
    c = TestClient(create_app(out))
    r = c.get("/api/live/a%20b%3Fc%22d")
    assert r.status_code == 404
    assert r.json()["error"] == "no running game 'a b?c\"d' (a finished game's replay is at /games/a%20b%3Fc%22d)"
    page = c.get("/live/a%20b%3Fc%22d")
    assert page.status_code == 404 and "/games/a%20b%3Fc%22d)" in page.text


def _named(text: str, labels: list[str]) -> list[str]:
    """The ``labels`` that ``text`` names (as written, or HTML- or JSON-escaped)."""
    forms = {lb: {lb, html.escape(lb), html.escape(lb, quote=False), json.dumps(lb)[1:-1]} for lb in labels}
    return [lb for lb, fs in forms.items() if any(f in text for f in fs)]


@pytest.mark.parametrize("blind", [True, False])
def test_a_blind_leagues_running_game_names_no_entrant_until_it_is_stored(tmp_path: Path, out: Path,
                                                                          blind: bool) -> None:
    """A remote entry runs on its author's machine, which can read the public pages while its game runs:
    the running games list, the spectator page and its JSON named the seats, so blind seats leaked whom
    a running game seats. In a blind tournament they say "seat 0", "seat 1", ... until the game is
    stored; then the games list and the replay name them. A tournament not blind names them at once."""
    games = games_of(out)
    labels = [games[0]["a"], games[0]["b"]]
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    set_blind(copy, blind)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games")  # both games of the pair are running
    a, b = (record_lines(out / g["record"]) for g in games)
    ga = games[0]["game_id"]
    c = TestClient(create_app(copy, bootstrap=0))
    log_a = live_from_record(copy, a, ga, games[0]["pair"], upto=deal_lines_of(a)[1] + 3)
    log_b = live_from_record(copy, b, games[1]["game_id"], games[1]["pair"], upto=deal_lines_of(b)[1] + 2)
    try:
        running = c.get("/api/live").json()["running"]
        sa = live.shown_id({}, ga, blind)  # its id on the pages: a blind game's names no pairing either
        assert sa in [g["game_id"] for g in running] and (sa == ga) is not blind
        seen = c.get(f"/api/live/{sa}").json()
        assert len(seen["frames"]) > 1  # deal 1 is shown (its texts name the seats)
        pages = {"/live": c.get("/live").text, "/api/live": json.dumps(running),
                 f"/live/{sa}": c.get(f"/live/{sa}").text, f"/api/live/{sa}": json.dumps(seen)}
        if blind:
            assert {u: _named(t, labels) for u, t in pages.items()} == {u: [] for u in pages}
            assert [g["seat_names"] for g in running] == [["seat 0", "seat 1", "seat 2", "seat 3"]] * 2
            assert seen["seat_names"] == ["seat 0", "seat 1", "seat 2", "seat 3"] and seen["game_id"] == sa
            # the game ids (<name>-p<i>-<j>-g<k>: the pairing's entrant numbers) are not shown nor found
            hidden = [x for g in games for x in (g["game_id"], g["pair"])]
            assert {u: [x for x in hidden if x in t] for u, t in pages.items()} == {u: [] for u in pages}
            assert c.get(f"/api/live/{ga}").status_code == 404 and c.get(f"/live/{ga}").status_code == 404
        else:
            for url, text in pages.items():
                assert _named(text, labels) == labels, url
    finally:
        log_a.close()
        log_b.close()
    done = tmp_path / "stored"  # the same games, stored: their names are shown
    shutil.copytree(out, done, ignore=shutil.ignore_patterns("live"))
    set_blind(done, blind)
    stored = TestClient(create_app(done, bootstrap=0))
    assert _named(stored.get(f"/api/games/{ga}").text, labels) == labels
    assert _named(stored.get(f"/games/{ga}").text, labels) == labels
    assert stored.get(f"/api/games/{ga}/record").json()["seat_names"] == a[0]["seat_names"]
    assert _named(stored.get("/_games").text, labels) == labels


def test_a_blind_leagues_running_games_are_listed_in_the_order_of_their_shown_ids(tmp_path: Path, out: Path) -> None:
    """The running games were listed in the order of their own ids (``<name>-p<i>-<j>-g<k>``), so in a blind
    tournament a game's place in the list (and a competitor's own game's place, which /me tells them) said
    where its pairing comes in the schedule, under the opaque ids. They are listed by the ids shown now."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("live"))
    set_blind(copy, True)
    with sqlite3.connect(copy / "arena.sqlite") as db:
        db.execute("DELETE FROM games")
    seed = bytes(32)
    rules = record_lines(out / games_of(out)[0]["record"])[0]["rules"]
    ids = [f"web-p{i}-{j}-g{k}" for j in range(1, 5) for i in range(j) for k in range(2)]  # schedule order
    logs = [live.LiveLog(copy, gid, gid[:-2] + "d0", ["a", "b", "a", "b"], rules, seed) for gid in ids]
    try:
        c = TestClient(create_app(copy, bootstrap=0))
        listed = [g["game_id"] for g in c.get("/api/live").json()["running"]]
        shown = sorted(live.shown_id({}, gid, True) for gid in ids)
        assert listed == shown  # (in the schedule's order, a random key gives this order once in 20! runs)
        page = c.get("/live").text
        assert sorted(shown, key=page.index) == shown
    finally:
        for log in logs:
            log.close()
