"""Publishing (arena/publish.py): the output files, self-contained HTML, and the terminal table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rich.console import Console

from arena.publish import leaderboard_html, progress_bar, ratings_table, write_outputs
from arena.ratings import games_from_mapping, rate
from arena.runner import SimulatedRunner
from arena.schedule import make_schedule
from arena.store import GameResult


def results() -> list[GameResult]:
    games = make_schedule("pub", ["strong", "weak", "<b>odd</b>"], 4, 4, bytes(32))
    runner = SimulatedRunner(strengths={"strong": 300})
    out = [runner.play(g) for g in games]
    # one bot failure, with a record path
    first = out[0]
    out[0] = GameResult(
        first.game_id,
        first.match_id,
        first.pair_id,
        first.sides,
        (0, 0),
        1,
        ("seat 0 (strong) crashed: exit status 1",),
        "records/m1.json",
        first.seed_hex,
        first.first_dealer,
    )
    return out


def test_outputs(tmp_path: Path) -> None:
    res = results()
    ratings = rate(games_from_mapping(r.rating_row() for r in res), bootstrap=50)
    facts = {
        "name": "pub",
        "bots": {"strong": "1", "weak": "2", "<b>odd</b>": "3"},
        "commitment": "c0ffee",
        "master_seed": None,
        "scheduled": 12,
        "played": 12,
        "players": 4,
    }
    paths = write_outputs(tmp_path, res, ratings, facts)

    rows = [json.loads(x) for x in paths["games"].read_text().splitlines()]
    assert len(rows) == 12 and rows[0]["reasons"] == ["seat 0 (strong) crashed: exit status 1"]
    assert (
        rows[0]["score"] == 0.0
        and rows[0]["pair"] == "pub-p0-1-d0"
        and rows[0]["record"] == "records/m1.json"
    )
    assert rate(games_from_mapping(rows), bootstrap=50) == ratings  # games.jsonl is the ratings input

    saved = json.loads(paths["ratings_json"].read_text())
    assert saved["ratings"] == ratings["ratings"] and saved["tournament"]["commitment"] == "c0ffee"

    table = list(csv.DictReader(paths["ratings_csv"].open()))
    assert [r["bot"] for r in table] == ratings["ranking"]
    assert table[0]["rank"] == "1" and float(table[0]["elo"]) == ratings["ratings"][table[0]["bot"]]["elo"]

    page = paths["leaderboard"].read_text()
    assert "<svg" in page and "<style>" in page
    for external in ("<script", "<link", "src=", "@import", "url("):
        assert external not in page
    assert "&lt;b&gt;odd&lt;/b&gt;" in page and "<b>odd</b>" not in page
    assert 'href="records/m1.json"' in page and "crashed: exit status 1" in page
    for r in res:
        assert r.game_id in page
    assert page.count("<circle") == 3  # one point with error bars per bot


def test_leaderboard_reveals_seed_only_when_given() -> None:
    ratings = rate([], names=["a"], bootstrap=0)
    assert "(revealed when every game is played)" in leaderboard_html(ratings, {"master_seed": None}, [])
    assert "ab" * 32 in leaderboard_html(ratings, {"master_seed": "ab" * 32}, [])


def test_terminal_table_and_progress() -> None:
    ratings = rate(games_from_mapping(r.rating_row() for r in results()), bootstrap=0)
    console = Console(record=True, width=120)
    console.print(ratings_table(ratings, {"name": "pub", "bots": {"strong": "1"}}))
    text = console.export_text()
    assert "strong" in text and "95% interval" in text and "LOS next" in text
    console = Console(record=True, width=120, force_terminal=False)
    with progress_bar(10, 4, console) as advance:
        for _ in range(6):
            advance()
    assert "10/10" in console.export_text()
