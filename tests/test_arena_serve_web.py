"""`arena serve` publishing live ratings and serving the web in the same process, with real processes
over real sockets (issue 14 item 2, issue 11 item 1; docs/arena.md, "Live and final ratings").

- After each game `arena serve` publishes at once: ratings.json is marked live (normal approximation,
  no history) while games are played; once the background bootstrap covers every stored game it
  publishes again with the bootstrap (marked final, with the history). `/api/ratings` of
  `arena serve --web` shares that publisher: the same marking and, once caught up, the same intervals.
- `arena serve --web PORT` serves `/` and the API; the open leaderboard updates without a reload as
  the games a SIGHUP added finish (real chromium); SIGTERM stops it with exit 0 and the port closed.
- In one process: a stopped web server leaves no thread and no listening port.

Nothing is timed: every wait polls with a bounded deadline.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from web_helpers import ROOT, chromium

from arena.ratings import publication
from arena.web import start_in_thread

BOOTSTRAP = 200

pytestmark = pytest.mark.slow

CONFIG = """
[tournament]
name = "served"
players = 2
games_per_pairing = {gpp}
concurrency = 1
output = "out"
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
[[bots]]
name = "one"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
cwd = "{root}"
[[bots]]
name = "two"
command = ["{{python}}", "-m", "arena.testing.instant_bot"]
cwd = "{root}"
"""


def write_config(folder: Path, gpp: int) -> Path:
    cfg = folder / "served.toml"
    cfg.write_text(CONFIG.format(gpp=gpp, root=ROOT))
    return cfg


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def serve(cfg: Path, port: int, log: Path) -> subprocess.Popen[str]:
    with open(log, "w") as file:  # the process keeps its own copy
        return subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", str(BOOTSTRAP), "--web", str(port)],
            cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, text=True,
        )


def poll(what: str, check: Callable[[], Any], proc: subprocess.Popen[str], log: Path, timeout: float = 120) -> Any:
    """``check()`` until it returns something true (bounded); fails at once if ``proc`` ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s\n{log.read_text()[-3000:]}")


def published(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((out / "ratings.json").read_text())  # replaced atomically by the arena
    except FileNotFoundError:
        return None


def api(port: int, path: str) -> Any:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).json()


def stop(proc: subprocess.Popen[str], log: Path, port: int) -> None:
    """SIGTERM: exit 0 (bounded), the stop message, no traceback, the web port closed."""
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "stopped: every stored game is kept" in text and "Traceback" not in text, text[-3000:]
    assert not listening(port)


def test_serve_publishes_live_after_each_game_then_the_bootstrap(tmp_path: Path) -> None:
    games = 6
    cfg, port, log, out = write_config(tmp_path, games), free_port(), tmp_path / "serve.log", tmp_path / "out"
    proc = serve(cfg, port, log)
    seen: list[dict[str, Any]] = []  # every distinct ratings.json seen while polling

    def caught_up() -> dict[str, Any] | None:
        now = published(out)
        if now is not None and (not seen or now != seen[-1]):
            seen.append(now)
        done = now is not None and now["tournament"]["played"] == games and now["publication"] == "final"
        return now if done else None

    try:
        final = poll("the bootstrap of every game published", caught_up, proc, log)
        live = [r for r in seen if r["publication"] == "live"]
        assert live, [(r["tournament"]["played"], r["publication"]) for r in seen]
        for r in live:  # published at once after a game: the normal approximation, no history yet
            assert r["intervals"] == "normal approximation" and r["bootstrap"] == 0 and "history" not in r
            assert "last_bootstrap" not in r or r["last_bootstrap"]["games"] < r["tournament"]["played"]
        assert any(r["tournament"]["played"] > 0 for r in live)  # after a game, not only at the start
        assert final["intervals"] == "bootstrap" and final["bootstrap"] == BOOTSTRAP
        assert final["history"][-1]["games"] == games
        assert all(r["ci_method"] in ("bootstrap", "normal") for r in final["ratings"].values())
        assert final["tournament"]["master_seed"] is None  # a league never reveals its seed

        board = poll("the web's ratings caught up", lambda: (lambda r: r if r["publication"] == "final" else None)(
            api(port, "/api/ratings")), proc, log)
        assert board["tournament"]["played"] == games and board["bootstrap"] == BOOTSTRAP
        assert board["ratings"] == final["ratings"]  # one publisher: the same bootstrap intervals
        assert api(port, "/api/games")["total"] == games
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and f"bootstrap over duplicate pairs ({BOOTSTRAP} resamples)" in page.text
    finally:
        if proc.poll() is None:
            stop(proc, log, port)
        proc.kill()
        proc.wait(10)


def test_a_served_league_says_its_seed_stays_secret(tmp_path: Path) -> None:
    """Seen hosting by docs/competition.md: at 24 of 24 games played, the leaderboard of `arena serve`
    said "master seed: (revealed when every game is played)", which a league never does (it has no
    last game). Its pages and its leaderboard.html say so; `arena run`'s wording stays its own."""
    cfg, port, log, out = write_config(tmp_path, 2), free_port(), tmp_path / "serve.log", tmp_path / "out"
    proc = serve(cfg, port, log)
    try:
        poll("every game published", lambda: (lambda r: r and r["tournament"]["played"] == 2)(published(out)),
             proc, log)
        pages = {path: httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).text for path in ("/", "/_board")}
        pages["leaderboard.html"] = (out / "leaderboard.html").read_text()
        for where, text in pages.items():
            seed = next(ln for ln in text.splitlines() if "master seed:" in ln)
            assert "revealed when every game is played" not in seed, (where, seed)
            assert "a league served by arena serve never reveals it" in seed, (where, seed)
        stop(proc, log, port)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_arena_web_marks_its_ratings_live_until_its_bootstrap(tmp_path: Path, monkeypatch: Any) -> None:
    """The web app on its own (`arena web`, no league) starts its own publisher: the same marking. (Here
    without the run's ratings.json: a final one of the stored games is what the web shows.)"""
    cfg = write_config(tmp_path, 2)
    run = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    assert published(tmp_path / "out")["publication"] == "final"  # arena run: the bootstrap (here, of 0 resamples)
    (tmp_path / "out" / "ratings.json").unlink()
    gate, real = threading.Event(), publication.final_ratings

    def held_back(*args: Any, **kwargs: Any) -> dict[str, Any]:  # the background bootstrap waits for the gate
        assert gate.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(publication, "final_ratings", held_back)
    web = start_in_thread(tmp_path / "out", "127.0.0.1", 0, bootstrap=BOOTSTRAP)
    try:
        first = api(web.port, "/api/ratings")
        assert first["publication"] == "live" and first["intervals"] == "normal approximation"
        board = httpx.get(f"http://127.0.0.1:{web.port}/_board", timeout=10).text
        assert "normal approximation (live: bootstrap intervals follow in the background)" in board
        gate.set()
        deadline = time.monotonic() + 60
        while (later := api(web.port, "/api/ratings"))["publication"] != "final":
            assert time.monotonic() < deadline, later
            time.sleep(0.05)
        assert later["bootstrap"] == BOOTSTRAP and later["intervals"] == "bootstrap"
        board = httpx.get(f"http://127.0.0.1:{web.port}/_board", timeout=10).text
        assert f"bootstrap over duplicate pairs ({BOOTSTRAP} resamples)" in board
    finally:
        gate.set()
        web.stop()


def test_a_stopped_web_server_leaves_no_thread_and_no_port(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    web = start_in_thread(tmp_path / "out", "127.0.0.1", 0, bootstrap=0)
    assert listening(web.port) and httpx.get(f"http://127.0.0.1:{web.port}/api/ratings").status_code == 200
    own = [t for t in threading.enumerate() if t.name == "bootstrap-refresher" and t.is_alive()]
    web.stop()
    assert not web.thread.is_alive() and not listening(web.port)
    assert all(not t.is_alive() for t in own)  # the app's own refresher stopped with it


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def test_the_served_leaderboard_updates_without_a_reload(browser: Any, tmp_path: Path) -> None:
    """`arena serve --web`: the page is open when SIGHUP adds games; it shows them as they finish."""
    cfg, port, log, out = write_config(tmp_path, 2), free_port(), tmp_path / "serve.log", tmp_path / "out"
    proc = serve(cfg, port, log)
    ctx = browser.new_context()
    try:
        poll("two games and their bootstrap", lambda: (lambda r: r and r["tournament"]["played"] == 2
                                                       and r["publication"] == "final")(published(out)), proc, log)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/")
        poll("the live stream", lambda: page.locator("#live-state").text_content() == "live", proc, log, 20)
        assert page.locator("#played").text_content() == "2"
        page.evaluate("window.sameDocument = true")
        cfg.write_text(CONFIG.format(gpp=6, root=ROOT))
        proc.send_signal(signal.SIGHUP)

        def shown() -> bool:
            page.wait_for_timeout(50)
            return int(page.locator("#played").text_content() or 0) > 2

        poll("a new game on the open page", shown, proc, log)
        poll("every game and its bootstrap on the open page", lambda: page.locator("#played").text_content() == "6"
             and "bootstrap over duplicate pairs" in (page.locator("#intervals").text_content() or ""), proc, log)
        assert page.evaluate("window.sameDocument") is True  # updated in place, not reloaded
        assert page.locator("#games-table tr").count() - 1 == 6
        assert errors == []
        stop(proc, log, port)
    finally:
        ctx.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_serve_on_a_busy_web_port_says_so_before_starting_anything(tmp_path: Path) -> None:
    """The web port is bound first: on a busy port ``arena serve --web`` exits 2 with one line, and no
    league was opened (no output folder, no store, no lobby); it opened them, then failed."""
    cfg = write_config(tmp_path, 2)
    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    try:
        done = subprocess.run([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--web", str(port)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        busy.close()
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == f"error: --web 127.0.0.1:{port}: Address already in use", done.stderr
    assert done.stdout == "" and not (tmp_path / "out").exists()
