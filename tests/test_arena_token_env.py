"""``arena token CONFIG NAME --from-env VAR``: a token chosen outside the arena (compose.yaml shares it
with the bot's worker service) is accepted once, by its SHA-256 only; a short one is refused."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

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


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "visible to every local user" in line]


def test_a_token_on_the_command_line_is_warned_about_in_one_line(tmp_path: Path) -> None:
    """issue 24, item 9: a token in argv shows in ``ps`` to every local user: sdk.run, the Node.js bot
    and ``arena run`` warn in one stderr line naming the environment variable; none from the variable."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    lobby = "127.0.0.1:9"  # discard port on loopback: nothing listens, the worker gives up at once
    sdk_run = [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--arena", lobby,
               "--reconnect", "0"]
    given = subprocess.run([*sdk_run, "--token", "tok-argv-1234567890"], capture_output=True, text=True,
                           timeout=60, env=env, cwd=ROOT)
    assert _warnings(given.stderr) == ["sdk.run: warning: --token is visible to every local user (ps); "
                                       "set ALLFOURS_BOT_TOKEN instead"]
    from_env = subprocess.run(sdk_run, capture_output=True, text=True, timeout=60, cwd=ROOT,
                              env={**env, "ALLFOURS_BOT_TOKEN": "tok-env-1234567890"})
    assert from_env.stderr and _warnings(from_env.stderr) == []
    # The warning comes first, before the config is read (this one does not exist).
    arena_run = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(tmp_path / "none.toml"),
                                "--admin-token", "adm-argv-1234567890"], capture_output=True, text=True,
                               timeout=60, env=env, cwd=ROOT)
    assert arena_run.returncode == 2
    assert _warnings(arena_run.stderr) == ["arena: warning: --admin-token is visible to every local user (ps); "
                                           "set the admin token's environment variable instead"]
    require(shutil.which("node") is not None and (ROOT / "sample_bots/js/node_modules").is_dir(),
            "node or sample_bots/js/node_modules missing (npm ci --prefix sample_bots/js)")
    node = subprocess.Popen(["node", "sample_bots/js/bot.js", "--arena", lobby, "--token", "tok-argv-1234567890"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    try:
        assert node.stderr is not None
        first = node.stderr.readline().strip()  # printed at start; then it dials the lobby for 300 s
    finally:
        node.kill()
        node.wait(10)
    assert first == "bot.js: warning: --token is visible to every local user (ps); set ALLFOURS_BOT_TOKEN instead"


def token_hint(folder: Path, config: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``arena token CONFIG far`` for ``config`` written in ``folder``: the finished process (exit 0 checked)
    and its hint on stderr with the lines joined."""
    cfg = folder / "t.toml"
    cfg.write_text(config)
    proc = subprocess.run([sys.executable, "-m", "arena.cli", "token", str(cfg), "far"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc, " ".join(proc.stderr.split())


def test_the_new_tokens_hint_puts_the_token_in_the_environment(tmp_path: Path) -> None:
    """``arena token CONFIG NAME`` told the remote bot's owner to run ``sdk.run … --token TOKEN``: the
    form docs/protocol.md ("Ready-made workers") advises against (it shows in ``ps``) and that sdk.run
    itself warns about. The hint now gives ``ALLFOURS_BOT_TOKEN=TOKEN``, as the competitor token's does."""
    proc, hint = token_hint(tmp_path, CONFIG)
    assert "ALLFOURS_BOT_TOKEN=TOKEN python -m sdk.run MODULE:Class --arena HOST:PORT --name far" in hint, hint
    assert "--token" not in hint, hint
    assert proc.stdout.strip() and proc.stdout.strip() not in proc.stderr


def test_the_new_tokens_hint_names_the_lobby_and_its_tls(tmp_path: Path) -> None:
    """For a lobby on this machine's address with TLS the hint gives that address and ``--tls-ca`` with
    the certificate's file name (the owner of a remote bot was told ``--arena HOST:PORT`` only, and their
    worker, dialling plaintext, met a TLS port: 'Socket closed')."""
    _, hint = token_hint(tmp_path, CONFIG.replace(
        'output = "out"\n', 'output = "out"\nlobby = "10.0.0.5:50100"\n'
        'lobby_tls_cert = "certs/lobby.crt"\nlobby_tls_key = "certs/lobby.key"\n'))
    assert "python -m sdk.run MODULE:Class --arena 10.0.0.5:50100 --name far --tls-ca lobby.crt" in hint, hint
    assert "lobby.key" not in hint, hint
