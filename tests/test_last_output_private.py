"""A bot's own output stays off the public pages: a game's stored reason quotes the last lines of a seat that
died ("… before the match ended (last output: …)", for the host: games.jsonl, the terminal), and that output
is its author's private log, which may hold the bot's cards (docs/arena.md, "Bot failures"). The games list,
its JSON API, each game's page and leaderboard.html published the reasons whole, and so did the static
replay pages of every game (the all-hands page and one a seat)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from arena.web.app import create_app

ROOT = Path(__file__).resolve().parent.parent
MARK = "PRIVATE-HAND"

LEAKY = f'''
import os, sys
from sdk import Bot, Context

class Leaky(Bot):
    name = "leaky"
    version = "1"
    seen = 0

    def act(self, ctx: Context):
        Leaky.seen += 1
        if Leaky.seen == 3:  # mid-game: print the hand, then die
            print("{MARK}", " ".join(str(c) for c in ctx.hand), file=sys.stderr, flush=True)
            os._exit(1)
        return ctx.legal[0]
'''

CONFIG = """
[tournament]
name = "leak"
players = 2
games_per_pairing = 2
output = "out"
master_seed = "{seed}"

[tournament.time_control]
decision_ms = 2000
bank_ms = 30000
join_ms = 10000

[[bots]]
name = "leaky"
version = "1"
command = ["{{python}}", "-m", "sdk.run", "leaky:Leaky", "--log-level", "warning"]
cwd = "leaky"

[[bots]]
name = "random"
version = "1"
command = ["{{python}}", "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--log-level", "warning"]
cwd = "{root}/sample_bots"
"""


def test_a_bots_last_output_is_not_on_the_public_pages(tmp_path: Path) -> None:
    (tmp_path / "leaky").mkdir()
    (tmp_path / "leaky" / "leaky.py").write_text(LEAKY)
    cfg = tmp_path / "leak.toml"
    cfg.write_text(CONFIG.format(seed="22" * 32, root=ROOT))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    stored = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert any(MARK in r for g in stored for r in g["reasons"]), "the host keeps the output"
    client = TestClient(create_app(out, bootstrap=0))
    pages = [f"/{kind}/{g['game_id']}{seat}" for g in stored for kind in ("api/games", "games")
             for seat in ("", "?seat=0")]
    for url in ["/api/games", "/", "/_games", *pages]:
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert MARK not in answer.text, f"{url} publishes the bot's own output"
    published = [out / "leaderboard.html", *sorted((out / "replays").glob("*.html"))]
    assert len(published) == 1 + 3 * len(stored), published  # each game's page and one a seat
    leaks = [p.name for p in published if MARK in p.read_text()]
    assert not leaks, f"{leaks} publish the bot's own output"
