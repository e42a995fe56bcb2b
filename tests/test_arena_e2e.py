"""End to end: `arena run` over real gRPC (embedded referee, one bot process per seat)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.schedule import verify_reveal

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def arena(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", *args, "--no-progress"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def test_small_tournament_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "small"
    done = arena("examples/small.toml", "--output", str(out), "--bootstrap", "200")
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(out)
    assert len(games) == 3 * 4 and len({g["game_id"] for g in games}) == 12
    for g in games:
        assert g["winner"] in (0, 1) and max(g["scores"]) >= 7, g  # target 7, played to the end
        assert g["reasons"] and (out / g["record"]).is_file()
        assert g["match_id"] in (out / g["record"]).read_text()
    ratings = json.loads((out / "ratings.json").read_text())
    assert set(ratings["ratings"]) == {"random", "heuristic", "instant"}
    assert all(r["games"] == 8 for r in ratings["ratings"].values())
    committed = json.loads((out / "commitment.json").read_text())["master_seed_sha256"]
    assert verify_reveal(bytes.fromhex(ratings["tournament"]["master_seed"]), committed)
    page = (out / "leaderboard.html").read_text()
    assert games[0]["record"] in page and "<svg" in page
    again = arena("examples/small.toml", "--output", str(out), "--bootstrap", "200")
    assert again.returncode == 0 and "12 already played" in again.stdout
    assert rows(out) == games  # a rerun of a finished tournament plays nothing


FAILING = """
[tournament]
name = "failing"
players = 4
games_per_pairing = 2
concurrency = 3
output = "out"
[tournament.time_control]
join_ms = 3000
grace_ms = 300
[[bots]]
name = "good"
command = ["{python}", "-m", "arena.instant_bot"]
[[bots]]
name = "crasher"
command = ["{python}", "-m", "arena.instant_bot", "--mode", "crash", "--after", "1"]
[[bots]]
name = "missing"
command = ["/nonexistent/bot-binary"]
"""


def test_bot_failures_are_results(tmp_path: Path) -> None:
    cfg = tmp_path / "failing.toml"
    cfg.write_text(FAILING)
    done = arena(str(cfg), "--bootstrap", "0", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    games = rows(tmp_path / "out")
    assert len(games) == 6
    for g in games:
        sides = (g["a"], g["b"])
        reasons = " | ".join(g["reasons"])
        loser = sides[1 - g["winner"]]
        if "missing" in sides:
            assert loser == "missing"
            assert "could not start '/nonexistent/bot-binary'" in reasons and "no_show" in reasons
        else:
            assert loser == "crasher"
            assert "disconnect" in reasons and "exited with status 1" in reasons
    ratings = json.loads((tmp_path / "out" / "ratings.json").read_text())
    assert ratings["ranking"] == ["good", "crasher", "missing"]
