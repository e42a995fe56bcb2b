"""``arena token CONFIG NAME --from-env VAR``: a token chosen outside the arena (compose.yaml shares it
with the bot's worker service) is accepted once, by its SHA-256 only; a short one is refused."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = """[tournament]
name = "tokens"
players = 2
output = "out"
[[bots]]
name = "far"
remote = true
[[bots]]
name = "near"
command = ["x"]
"""


def token(cfg: Path, *args: str, value: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MY_TOKEN": value}
    return subprocess.run([sys.executable, "-m", "arena.cli", "token", str(cfg), *args, "--from-env", "MY_TOKEN"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)


def test_token_from_env(tmp_path: Path) -> None:
    cfg = tmp_path / "t.toml"
    cfg.write_text(CONFIG)
    good = "k" * 10 + "Q" * 22
    short = token(cfg, "far", value="too-short")
    assert short.returncode == 2 and "22 to 256 characters" in short.stderr and "too-short" not in short.stderr
    first, again = token(cfg, "far", value=good), token(cfg, "far", value=good)
    assert (first.returncode, again.returncode) == (0, 0), first.stderr + again.stderr
    assert first.stdout == again.stdout == "" and good not in first.stderr + again.stderr
    assert "already far's" in again.stderr
    with sqlite3.connect(tmp_path / "out" / "arena.sqlite") as db:
        rows = db.execute("select bot, digest from bot_tokens").fetchall()
    assert rows == [("far", hashlib.sha256(good.encode()).hexdigest())]
    assert token(cfg, "near", value=good).returncode == 2  # not a remote bot
