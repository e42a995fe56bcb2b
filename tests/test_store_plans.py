"""The queries a web page runs on a league's store look up what they need by an index (arena/tournament/store.py):
none reads the whole games table, which grows with every game of a league that runs for weeks.

Each query :class:`arena.web.data.WebData` runs for the board, the games list (all, a bot's, a bot's wins, a
page far down), one game and the running games is recorded as SQLite ran it and asked for its plan
(``EXPLAIN QUERY PLAN``): no step may be ``SCAN games`` (every row read; a scan of a covering index, as
``COUNT(*)`` does, reads the index only). The filter by termination (``json_each`` of each game's details) is
left out: it reads every game by design.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arena.config import parse_config
from arena.report import live
from arena.tournament.runner import DB_NAME, SimulatedRunner, open_tournament, run_games
from arena.web.data import GamesQuery, WebData


def league(tmp: Path) -> Path:
    """A stored league of 6 bots (15 pairings, 60 games); its output folder."""
    data = {
        "tournament": {"name": "plans", "players": 2, "games_per_pairing": 4, "output": str(tmp / "out"),
                       "master_seed": "00" * 32},
        "bots": [{"name": f"b{k}", "command": ["true"], "cwd": str(tmp)} for k in range(6)],
    }
    t = open_tournament(parse_config(data, str(tmp / "league.toml"), tmp))
    run_games(t.schedule, SimulatedRunner(), t.store)
    t.store.close()
    return tmp / "out"


def test_the_web_pages_queries_read_no_whole_games_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = league(tmp_path)
    ran: list[str] = []
    connect = WebData._connect

    def traced(self: WebData) -> sqlite3.Connection | None:
        db = connect(self)
        if db is not None:
            db.set_trace_callback(ran.append)
        return db

    monkeypatch.setattr(WebData, "_connect", traced)
    data = WebData(out, bootstrap=0)
    data.version()
    data.rate()
    data.facts()
    first = data.games(GamesQuery())["games"][0]["game_id"]
    data.games(GamesQuery(page=3, per_page=10))
    data.games(GamesQuery(bot="b2"))
    data.games(GamesQuery(bot="b2", result="win"))
    data.game(first)
    (out / live.LIVE_DIR).mkdir()
    (out / live.LIVE_DIR / f"{first}.jsonl").write_text("{}\n")  # a live file a killed run left
    assert data.stored_ids(live.live_files(out)) == {first}
    selects = sorted({q for q in ran if q.lstrip().upper().startswith("SELECT")})
    assert len(selects) >= 8, selects
    db = sqlite3.connect(out / DB_NAME)
    scans = {q: [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + q) if row[3] == "SCAN games"] for q in selects}
    assert {q: steps for q, steps in scans.items() if steps} == {}
