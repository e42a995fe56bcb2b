"""The ladder as a tournament format (``format = "ladder"``, arena/formats/ladder_run.py): the config,
ids and deal seeds of the chosen pairs, half-played pairs first, a restart that chooses the same next
games, the per-day budget counted from the stored games, ``arena run`` with a total budget (simulated and
with the real example config), and a real ``arena serve`` ladder that grows by a new entrant and plays it
first, stops and resumes the same way, and shows why on its web page.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from arena.config import ConfigError, load_config, parse_config
from arena.formats.ladder import Budget, Reason, Stop
from arena.formats.ladder_run import LadderRun
from arena.ratings.fit import games_from_mapping, rate
from arena.report.publish import publish_tournament
from arena.tournament.runner import LADDER_KEY, SimulatedRunner, open_tournament, run_games
from arena.tournament.schedule import pair_seed, pairing_number
from arena.tournament.store import games_rows

ROOT = Path(__file__).resolve().parent.parent

HEAD = """
[tournament]
name = "lad"
players = 2
format = "ladder"
concurrency = {concurrency}
output = "out"
master_seed = "{seed}"

[tournament.ladder]
{ladder}

[tournament.time_control]
join_ms = 20000
grace_ms = 1000
"""
SEED = "ab" * 32
#: The test bot's folder: all a sandboxed bot sees of the repository (the arena's own test bot imports arena).
BOT_DIR = ROOT / "arena"


def bot(name: str, mode: str = "first") -> str:
    return (f'\n[[bots]]\nname = "{name}"\nversion = "1"\nmode = "worker"\n'
            f'command = ["{{python}}", "-m", "arena.testing.instant_bot", "--mode", "{mode}"]\ncwd = "{BOT_DIR}"\n')


def write(cfg: Path, ladder: str, names: list[str], concurrency: int = 2) -> Path:
    cfg.write_text(HEAD.format(concurrency=concurrency, seed=SEED, ladder=ladder) + "".join(bot(n) for n in names))
    return cfg


def arena(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "arena.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


# ---------------------------------------------------------------------- config


def test_the_ladder_table_is_parsed_into_budget_and_rules(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path / "l.toml", "per_entrant_per_day = 40\ntotal = 100\nwidth = 30\nnew_pairs = 2",
                            ["a", "b"]))
    assert cfg.ladder is not None
    assert cfg.ladder.budget == Budget(per_entrant_per_day=40, per_entrant=None, total=100)
    assert (cfg.ladder.rules.width, cfg.ladder.rules.new_pairs, cfg.ladder.rules.fair_share) == (30.0, 2, 2.0)
    raised = load_config(write(tmp_path / "m.toml", "total = 500", ["a", "b"]))
    assert cfg.league_fingerprint() == raised.league_fingerprint()  # a league may raise its budgets


@pytest.mark.parametrize(
    ("ladder", "fmt", "error"),
    [
        ("total = -2", "ladder", "tournament.ladder.total: must be >= 0"),
        ("total = 1", "ladder", "tournament.ladder.total: must be 0 or at least 2 games (a duplicate pair is two)"),
        ("per_entrant = 1", "ladder", "tournament.ladder.per_entrant: must be 0 or at least 2 games"),
        ("per_entrant_per_day = 1", "ladder", "tournament.ladder.per_entrant_per_day: must be 0 or at least 2"),
        ("totl = 2", "ladder", "did you mean 'total'"),
        ("width = 'wide'", "ladder", "tournament.ladder.width: must be a number"),
        ("fair_share = 0.5", "ladder", "tournament.ladder.fair_share: must be a finite number >= 1"),
        ("fair_share = nan", "ladder", "tournament.ladder.fair_share: must be a finite number >= 1"),
        ("fair_share = inf", "ladder", "tournament.ladder.fair_share: must be a finite number >= 1"),
        ("width = 0", "ladder", "tournament.ladder.width: must be a finite number > 0"),
        ("width = nan", "ladder", "tournament.ladder.width: must be a finite number > 0"),
        ("width = inf", "ladder", "tournament.ladder.width: must be a finite number > 0"),
        ("total = 2", "round_robin", 'tournament.ladder: is only for format = "ladder"'),
    ],
)
def test_a_bad_ladder_table_is_one_line_naming_the_key(ladder: str, fmt: str, error: str) -> None:
    data = {"tournament": {"name": "x", "format": fmt, "ladder": dict([_kv(ladder)])},
            "bots": [{"name": "a", "command": ["x"]}, {"name": "b", "command": ["x"]}]}
    with pytest.raises(ConfigError) as e:
        parse_config(data)
    assert error in str(e.value) and "\n" not in str(e.value)


def _kv(line: str) -> tuple[str, object]:
    import tomllib

    return next(iter(tomllib.loads(line).items()))


def test_arena_run_of_a_ladder_needs_a_total_budget(tmp_path: Path) -> None:
    done = arena("run", str(write(tmp_path / "l.toml", "per_entrant = 10", ["a", "b"])), "--simulate", "0")
    assert done.returncode == 2
    assert "tournament.ladder.total: `arena run` of a ladder needs a total budget" in done.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------- the run, simulated


def _open(tmp_path: Path, ladder: str, names: list[str]):  # type: ignore[no-untyped-def]
    return open_tournament(load_config(write(tmp_path / "l.toml", ladder, names)), tmp_path / "out")


STRENGTHS = {"a": 300.0, "b": 100.0, "c": 0.0, "d": -200.0, "e": -250.0}


def test_chosen_pairs_take_the_round_robins_ids_and_seeds(tmp_path: Path) -> None:
    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    run, seed = LadderRun(t), bytes.fromhex(SEED)
    for _ in range(12):
        games = run.next_games(2, time.time())
        run_games(games, SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and run.add(r))
    by_pair: dict[tuple[int, int], list[int]] = {}
    for g in t.store.results():
        i, j, k = (int(x) for x in g.pair_id.rsplit("-p", 1)[1].replace("-d", "-").split("-"))
        assert i < j and g.game_id in (f"lad-p{i}-{j}-g{2 * k}", f"lad-p{i}-{j}-g{2 * k + 1}")
        assert g.seed_hex == pair_seed(seed, pairing_number(i, j), k).hex()
        assert {g.sides[0], g.sides[1]} == {t.labels[i], t.labels[j]}
        by_pair.setdefault((i, j), []).append(k)
    for ks in by_pair.values():  # pair numbers of a pairing run 0, 1, 2, ... (each pair's two games)
        assert sorted(ks) == sorted([k for k in range(len(ks) // 2) for _ in (0, 1)])
    t.store.close()


def test_a_restart_finishes_half_played_pairs_then_chooses_the_same_games(tmp_path: Path) -> None:
    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    run = LadderRun(t)
    for _ in range(8):
        games = run.next_games(2, time.time())
        run_games(games, SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and run.add(r))
    games = run.next_games(2, time.time())
    assert len(games) == 4
    run_games(games[:1], SimulatedRunner(STRENGTHS), t.store)  # a stop after one game of the first pair
    t.store.close()

    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    again = LadderRun(t)
    finish = again.next_games(2, time.time())
    assert [g.game_id for g in finish] == [games[1].game_id]  # the half-played pair first
    run_games(finish, SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and again.add(r))
    t.store.close()
    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    fresh = LadderRun(t)  # the same stored results, read in another order: the same next games
    now = time.time()
    assert [g.game_id for g in fresh.next_games(3, now)] == [g.game_id for g in again.next_games(3, now)]
    t.store.close()


def test_the_rating_history_of_a_ladder_follows_the_order_games_were_stored(tmp_path: Path) -> None:
    """A ladder has no schedule: its history used to count its games in game-id order (``p0-1`` before
    ``p0-2`` whenever each was played), so "the ratings after the first N games" mixed early and late games."""
    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    run = LadderRun(t)
    for _ in range(10):
        games = run.next_games(2, time.time())
        run_games(games, SimulatedRunner(STRENGTHS), t.store, 1, on_result=lambda r, ok: ok and run.add(r))
    t.store.set_meta(LADDER_KEY, json.dumps(run.board(time.time())))
    publish_tournament(t, tmp_path / "out", 0, None)
    history = json.loads((tmp_path / "out" / "ratings.json").read_text())["history"]
    stored = sorted(t.store.results(), key=lambda r: r.stored_at or 0.0)
    assert [r.game_id for r in stored] != sorted(r.game_id for r in stored)  # the two orders differ here
    for point in history:
        first = games_from_mapping(games_rows(stored[: point["games"]]))
        expected = rate(first, bootstrap=0, names=t.labels)["ratings"]
        assert point["ratings"] == {b: {"elo": r["elo"], "ci": r["ci"]} for b, r in expected.items()}, point["games"]
    t.store.close()


def test_the_day_budget_counts_the_games_stored_today(tmp_path: Path) -> None:
    cfg = write(tmp_path / "l.toml", "per_entrant_per_day = 4\ntotal = 100", ["a", "b", "c", "d"])
    done = arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "20")
    assert done.returncode == 0, done.stderr
    assert f"stopped: {Stop.DAY_BUDGETS.value}" in done.stdout
    published = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert all(r["games"] <= 4 for r in published["ratings"].values())
    assert published["tournament"]["ladder"]["stop"] == Stop.DAY_BUDGETS.value
    assert published["tournament"]["master_seed"] is None  # play resumes tomorrow: not the end
    again = arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "20")
    assert again.returncode == 0 and "(lad-" not in again.stdout  # same day: nothing more is played
    assert json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["played"] == published[
        "tournament"]["played"]


def test_a_game_reported_as_stored_carries_the_time_the_store_wrote(tmp_path: Path) -> None:
    """The live ladder counts a game on the UTC day of its ``stored_at``, a restart on the day the store
    wrote; the result reported after storing used to carry none, so the live ladder took its own clock a
    moment later: across midnight the two days differ and a restart chooses otherwise."""
    t = _open(tmp_path, "total = 200", list(STRENGTHS))
    run, seen = LadderRun(t), []
    games = run.next_games(2, time.time())
    run_games(games, SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and seen.append(r))
    stored = {r.game_id: r.stored_at for r in t.store.results()}
    assert len(seen) == len(games) == len(stored)
    assert all(r.stored_at is not None and r.stored_at == stored[r.game_id] for r in seen)
    t.store.close()


def test_fair_shares_hold_a_close_pair_to_twice_the_median_of_the_day(tmp_path: Path) -> None:
    # two level bots at the top and a field far below: the ladder would spend every game on the close pair
    strengths = {"a": 0.0, "b": 0.0, "c": -900.0, "d": -1000.0, "e": -1100.0, "f": -1200.0}
    t = _open(tmp_path, "total = 400", list(strengths))
    run = LadderRun(t)
    while games := run.next_games(2, time.time()):
        run_games(games, SimulatedRunner(strengths), t.store, on_result=lambda r, ok: ok and run.add(r))
    pairs = {s["name"]: s["pairs"] for s in run.board(time.time())["standings"]}
    t.store.close()
    median = sorted(pairs.values())[len(pairs) // 2 - 1 : len(pairs) // 2 + 1]
    share = max(3, math.ceil(2 * sum(median) / 2))  # past its 3 new pairs, twice the median
    assert max(pairs.values()) <= share, pairs
    assert run.last is not None and run.last.stop == Stop.FAIR_SHARES  # and it says why it waits


def test_arena_run_plays_the_total_budget_and_publishes_the_board(tmp_path: Path) -> None:
    cfg = write(tmp_path / "l.toml", "total = 30", ["a", "b", "c", "d", "e"])
    done = arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "20")
    assert done.returncode == 0, done.stderr
    published = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert published["tournament"]["played"] == 30
    board = published["tournament"]["ladder"]
    assert board["stop"] == Stop.TOTAL_BUDGET.value and board["games"] == 30
    assert [s["name"] for s in board["standings"]] and sum(s["pairs"] for s in board["standings"]) == 30
    assert published["tournament"]["master_seed"] == SEED  # the budget is spent: the tournament is over
    assert Reason.NEW_ENTRANT.value in done.stdout
    assert "ladder" in (tmp_path / "out" / "leaderboard.html").read_text()


def test_a_ladder_grown_after_its_seed_was_revealed_says_so(tmp_path: Path) -> None:
    """A spent total budget ends the ladder and reveals the master seed; raising it plays on (allowed, as
    a round robin that grows), and anyone can compute the new games' deals: the run says so, as a round
    robin's does. The ladder's run used to play on without a word."""
    cfg = write(tmp_path / "l.toml", "total = 8", ["a", "b", "c"])
    first = arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "0")
    assert first.returncode == 0 and "master seed was revealed" not in first.stderr
    write(tmp_path / "l.toml", "total = 12", ["a", "b", "c"])
    grown = arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "0")
    assert grown.returncode == 0, grown.stderr
    assert "note: the master seed was revealed when this tournament was complete" in grown.stderr
    assert json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["played"] == 12


# ---------------------------------------------------------------------- real bots

#: Four per-game bots: ``a`` a module that does not exist (it fails its check), ``b``-``d`` the instant bot.
A_BROKEN_OF_FOUR = "".join(
    f'\n[[bots]]\nname = "{n}"\nsandbox = "none"\ncwd = "{BOT_DIR}"\n'
    f'command = ["{{python}}", "-m", "arena.testing.{"no_such_bot" if n == "a" else "instant_bot"}"]\n'
    for n in ("a", "b", "c", "d")
)


def test_arena_run_of_a_ladder_checks_every_bot_before_its_first_game(tmp_path: Path) -> None:
    """A broken per-game bot stops a ladder's run before the first game (exit 2), as it stops a round
    robin's, whichever pair the ladder chooses first: only the bots of the first pair used to be
    checked, so a broken bot outside it forfeited every game and the run ended 0."""
    cfg = tmp_path / "l.toml"
    cfg.write_text(HEAD.format(concurrency=2, seed=SEED, ladder="total = 4") + A_BROKEN_OF_FOUR)
    first = LadderRun(t := open_tournament(load_config(cfg), tmp_path / "probe")).next_games(1, time.time())
    t.store.close()
    assert "a" not in first[0].sides  # the case: the broken bot is not in the first pair
    done = arena("run", str(cfg), "--no-progress", "--bootstrap", "0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "bot 'a' failed its check before the first game" in done.stderr
    assert not (tmp_path / "out" / "ratings.json").exists()


def test_a_broken_bot_gets_no_games_of_a_ladder_under_skip_broken(tmp_path: Path) -> None:
    """``--skip-broken`` promises that a bot failing its check does not stop the run and costs no
    ``join_ms`` per game. A ladder chooses its games as it goes, and it went on choosing the broken bot
    first, as a new entrant across the field: 3 pairs forfeited unplayed, half of a 12-game budget,
    taken from the other entrants' budgets, and a rating for a bot that never played. Now the ladder
    leaves it out of this run (one warning line says so): every game is between the bots that work."""
    cfg = tmp_path / "l.toml"
    cfg.write_text(HEAD.format(concurrency=2, seed=SEED, ladder="total = 12") + A_BROKEN_OF_FOUR)
    done = arena("run", str(cfg), "--no-progress", "--bootstrap", "0", "--skip-broken")
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [x for x in done.stdout.splitlines() if x.startswith("warning: bot 'a' failed its check")]
    assert len(warned) == 1 and warned[0].endswith("it gets no games in this run (--skip-broken)"), done.stdout
    games = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert len(games) == 12 and all("a" not in (g["a"], g["b"]) for g in games), [g["game_id"] for g in games]
    assert all(g["record"] for g in games)  # all played
    published = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert "a" not in published["ratings"] and published["tournament"]["ladder"]["stop"] == Stop.TOTAL_BUDGET.value


@pytest.mark.slow
def test_the_example_ladder_from_the_docs_runs(tmp_path: Path) -> None:
    done = arena("run", "examples/ladder.toml", "--output", str(tmp_path / "out"), "--no-progress",
                 "--bootstrap", "20", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    published = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert published["tournament"]["played"] == 40
    assert published["tournament"]["ladder"]["stop"] == Stop.TOTAL_BUDGET.value
    assert set(published["ratings"]) == {"heuristic", "random", "first", "coin"}


def _wait_played(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 240) -> dict:
    """The latest published ratings.json once at least ``n`` games are stored. Counted in the store,
    not in ratings.json: a serving league publishes when a publication is due, so the file may lag the
    store by several games, and a test that stops the league at ``n`` must stop near ``n``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            published = json.loads((out / "ratings.json").read_text())
        except (OSError, json.JSONDecodeError):
            published = None
        if published and published["tournament"]["played"] >= 1 and len(_in_stored_order(out)) >= n:
            return published
        time.sleep(0.3)
    raise AssertionError(f"fewer than {n} games stored after {timeout} s")


def _serve(cfg: Path, port: int | None = None) -> subprocess.Popen[str]:
    web = ["--web", str(port)] if port is not None else []
    return subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "20", *web],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err, err[-4000:]
    return out


def _in_stored_order(out: Path) -> list[tuple[str, str, str]]:
    import sqlite3

    db = sqlite3.connect(f"{(out / 'arena.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return db.execute("SELECT game_id, side0, side1 FROM games ORDER BY stored_at").fetchall()
    finally:
        db.close()


def _games(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_served_ladder_grows_plays_the_new_entrant_first_and_resumes_the_same_way(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    out, cfg = tmp_path / "out", tmp_path / "l.toml"
    write(cfg, "total = 12", ["one", "two", "three"])
    proc = _serve(cfg, port)
    try:
        first = _wait_played(out, 12, proc)
        deadline = time.monotonic() + 60
        while first["tournament"]["ladder"]["stop"] != Stop.TOTAL_BUDGET.value and time.monotonic() < deadline:
            time.sleep(0.3)
            first = json.loads((out / "ratings.json").read_text())
        assert first["tournament"]["ladder"]["stop"] == Stop.TOTAL_BUDGET.value
        before = {g["game_id"] for g in _games(out)}
        assert len(before) == 12

        write(cfg, "total = 40", ["one", "two", "three", "four"])
        proc.send_signal(signal.SIGHUP)
        grown = _wait_played(out, 14, proc)
        new = [g for g in _in_stored_order(out) if g[0] not in before]
        assert all("four" in g[1:] for g in new[:2]), new  # the new entrant's first pair comes first
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/ratings", timeout=30) as r:
            api = json.loads(r.read())
        assert api["tournament"]["ladder"]["standings"] and api["tournament"]["format"] == "ladder"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
            page = r.read().decode()
        assert 'id="ladder-why"' in page and 'id="ladder"' in page
        assert any(reason in page for reason in (Reason.NEW_ENTRANT.value, Reason.CLOSEST_UNDECIDED.value,
                                                 Reason.WIDEST_INTERVAL.value, Stop.TOTAL_BUDGET.value))
        assert grown["tournament"]["ladder"]["reasons"] or grown["tournament"]["ladder"]["stop"]
        _wait_played(out, 20, proc)
    finally:
        if proc.poll() is None:
            served = _stop(proc)
    assert "four v " in served and "(new entrant across the field)" in served

    stored = {g["game_id"] for g in _games(out)}
    t = open_tournament(load_config(cfg), out)
    try:
        expected = [g.game_id for g in LadderRun(t).next_games(1, time.time())]
    finally:
        t.store.close()
    assert expected and not set(expected) & stored
    proc = _serve(cfg)
    try:
        _wait_played(out, len(stored) + len(expected), proc)
    finally:
        _stop(proc)
    after = [g["game_id"] for g in _games(out) if g["game_id"] not in stored]
    assert set(expected) <= set(after), (expected, after)


@pytest.mark.slow
def test_the_leaderboard_in_chromium_says_why_the_ladder_chose_and_stopped(tmp_path: Path) -> None:
    from web_helpers import chromium

    from arena.web import start_in_thread

    cfg = write(tmp_path / "l.toml", "total = 16", ["a", "b", "c", "d"])
    assert arena("run", str(cfg), "--simulate", "0", "--no-progress", "--bootstrap", "20").returncode == 0
    board = json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["ladder"]
    server = start_in_thread(tmp_path / "out", "127.0.0.1", 0, bootstrap=20)
    try:
        with chromium() as browser:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.port}/")
            why = page.locator("#ladder-why").text_content() or ""
            assert Stop.TOTAL_BUDGET.value in why and "16 games played of a total budget of 16" in why, why
            names = page.locator("#ladder td.bot").all_text_contents()
            assert names == [s["name"] for s in board["standings"]]
            pairs = page.locator("#ladder td.pairs").all_text_contents()
            assert sum(int(x) for x in pairs) == 16  # 8 pairs, each counted for both its entrants
    finally:
        server.stop()


def test_the_leaderboard_lists_the_unrated_bots_with_why() -> None:
    from arena.ratings.fit import Game
    from arena.ratings.publication import final_ratings
    from arena.web.render import leaderboard_html

    games = [Game("a", "b", 1.0, "d0"), Game("b", "a", 0.0, "d0"), Game("a", "b", 0.0, "d1"), Game("b", "a", 1.0, "d1")]
    ratings = final_ratings(games, ["a", "b", "newcomer"], bootstrap=10)
    assert [u["bot"] for u in ratings["unrated"]] == ["newcomer"]
    page = leaderboard_html(ratings, {"name": "lad", "players": 2, "bots": {}}, [])
    unrated = page[page.index('id="unrated"'):].split("</p>")[0]
    assert "newcomer" in unrated and ratings["unrated"][0]["why"] in unrated


@pytest.mark.parametrize("blind", [False, True])
def test_a_blind_ladders_board_names_no_pair_it_chose(tmp_path: Path, blind: bool) -> None:
    """The board (ratings.json's ``tournament.ladder``, the leaderboard) listed the pairs the ladder chose
    last, names and gap, while they played: with blind seats a remote entry's author, reading the board
    while their bot plays, learnt whom it seats. A blind ladder's plan now gives each pair's reason
    alone (the gap would name the pair through the standings), and the page says the pairs are not named."""
    from arena.web.render import leaderboard_html

    cfg = write(tmp_path / "l.toml", "total = 200", list(STRENGTHS))
    blind_line = f'format = "ladder"\nblind_seats = {str(blind).lower()}'
    cfg.write_text(cfg.read_text().replace('format = "ladder"', blind_line))
    t = open_tournament(load_config(str(cfg)), tmp_path / "out")
    run = LadderRun(t)
    games = run.next_games(2, time.time())
    board = run.board(time.time())
    t.store.close()
    chosen = {name for g in games for name in g.sides}
    assert len(board["plan"]) == 2 and len(chosen) >= 2
    page = leaderboard_html({"ratings": {}, "matrix": {}}, {"name": "lad", "players": 2, "bots": {},
                                                            "ladder": board}, [])
    plan = page[page.index("The ladder"):page.index("The ladder's own fit")]
    if blind:
        assert all(set(c) == {"reason"} for c in board["plan"]), board["plan"]
        assert 'id="ladder-plan-blind"' in plan and "The 2 pair(s) chosen are not named" in plan
        assert not [n for n in chosen if f">{n} v " in plan or f" v {n}<" in plan], plan
    else:
        assert {frozenset((c["a"], c["b"])) for c in board["plan"]} == {frozenset(g.sides) for g in games}
        assert 'id="ladder-plan"' in plan and all(n in plan for n in chosen), plan


@pytest.mark.parametrize("blind", [False, True])
def test_a_blind_ladders_board_moves_only_when_a_pair_is_complete(tmp_path: Path, blind: bool) -> None:
    """The first game of a pair stored, its twin still to play: the ladder's standings (ratings, pairs,
    games today) moved for the pair's two entrants, telling a remote entry's author reading the board whom
    the twin seats. A blind ladder counts the first game with its twin (and so does a restart from the store)."""
    cfg = write(tmp_path / "l.toml", "total = 200", list(STRENGTHS))
    cfg.write_text(cfg.read_text().replace('format = "ladder"', f'format = "ladder"\nblind_seats = {blind!s}'.lower()))
    t = open_tournament(load_config(str(cfg)), tmp_path / "out")
    run = LadderRun(t)
    now = time.time()
    first, twin = run.next_games(1, now)
    before = run.board(now)["standings"]
    run_games([first], SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and run.add(r))
    half = run.board(now)["standings"]
    assert (half == before) is blind, (before, half)
    assert LadderRun(t).board(now)["standings"] == half  # a restart counts the same
    publish_tournament(t, tmp_path / "out", 0, None, reveal=False)
    shown = (tmp_path / "out" / "games.jsonl").read_text().splitlines()
    assert len(shown) == (0 if blind else 1), shown  # the publication holds the game back too
    run_games([twin], SimulatedRunner(STRENGTHS), t.store, on_result=lambda r, ok: ok and run.add(r))
    done = run.board(now)["standings"]
    assert {s["name"]: s["pairs"] for s in done if s["name"] in first.sides} == {n: 1 for n in first.sides}
    assert LadderRun(t).board(now)["standings"] == done
    t.store.close()
