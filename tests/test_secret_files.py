"""Tokens from files (:mod:`referee.credentials`; docs/deploy.md, "Secrets"): every program that reads a token
from ``$NAME`` also reads it from the file ``$NAME_FILE`` names, as Docker's secrets mount them, and a bad
file or a token given twice is one line and exit status 2. The referee, ``referee create-match``, ``arena
token --from-env`` and the workers (``sdk.run``, the Node.js and C++ bots) are real processes; the arena
hands no ``*_FILE`` variable of an admin token to a bot.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from referee.credentials import MAX_FILE_BYTES, SecretError, env_secret
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "file-token-" + "x" * 24


def _file(tmp_path: Path, text: str | bytes, name: str = "secret") -> str:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


def test_env_secret_reads_the_variable_or_its_file(tmp_path: Path) -> None:
    cases = [
        ({}, None),
        ({"T": ""}, None),
        ({"T": "abc"}, "abc"),
        ({"T_FILE": _file(tmp_path, f"{TOKEN}\n", "a")}, TOKEN),  # the line end of `echo token > file` goes
        ({"T_FILE": _file(tmp_path, f"  {TOKEN}\r\n", "b")}, TOKEN),
        ({"T": "", "T_FILE": _file(tmp_path, TOKEN, "c")}, TOKEN),  # an empty variable counts as unset
    ]
    for env, want in cases:
        assert env_secret("T", env) == want, env


def test_a_bad_secret_file_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    cases = [
        ({"T": "abc", "T_FILE": _file(tmp_path, TOKEN, "a")}, "$T and $T_FILE are both set"),
        ({"T_FILE": str(tmp_path / "missing")}, f"$T_FILE {tmp_path / 'missing'}: No such file or directory"),
        ({"T_FILE": str(tmp_path)}, f"$T_FILE {tmp_path}: Is a directory"),
        ({"T_FILE": _file(tmp_path, "\n \n", "b")}, "the file is empty"),
        ({"T_FILE": _file(tmp_path, "x" * (MAX_FILE_BYTES + 1), "c")}, f"more than {MAX_FILE_BYTES} bytes"),
        ({"T_FILE": _file(tmp_path, b"\xff\xfe", "d")}, "not UTF-8 text"),
    ]
    for env, words in cases:
        with pytest.raises(SecretError) as info:
            env_secret("T", env)
        assert words in str(info.value) and "\n" not in str(info.value), (env, str(info.value))
        assert TOKEN not in str(info.value)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "TOKEN" not in k}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _referee(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli", "serve", "--port", "0", "--grace", "1"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise AssertionError(f"no port: {line!r} {proc.communicate()[1][-1000:]}")
    return proc, f"127.0.0.1:{line.split()[1]}"


def _create(address: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "referee.cli", "create-match", "--referee", address, "a", "b",
                           "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_the_referee_and_create_match_take_the_admin_token_from_a_file(tmp_path: Path) -> None:
    """``referee serve`` with ``ALLFOURS_ADMIN_TOKEN_FILE`` accepts that token and no other: ``referee
    create-match`` with the same file makes a match, with a file of another token is refused."""
    token_file = _file(tmp_path, TOKEN + "\n", "admin_token")
    other = _file(tmp_path, "another-token-" + "y" * 20, "other")
    proc, address = _referee(tmp_path, _clean_env(ALLFOURS_ADMIN_TOKEN_FILE=token_file))
    try:
        made = _create(address, _clean_env(ALLFOURS_ADMIN_TOKEN_FILE=token_file))
        refused = _create(address, _clean_env(ALLFOURS_ADMIN_TOKEN_FILE=other))
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert made.returncode == 0, made.stderr
    assert '"match_id"' in made.stdout
    assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr, refused.stderr
    assert "using a random one" not in err and TOKEN not in err


def test_the_referee_refuses_a_bad_token_file_in_one_line(tmp_path: Path) -> None:
    env = _clean_env(ALLFOURS_ADMIN_TOKEN=TOKEN, ALLFOURS_ADMIN_TOKEN_FILE=_file(tmp_path, TOKEN))
    both = subprocess.run([sys.executable, "-m", "referee.cli", "serve", "--port", "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    missing = _create("127.0.0.1:9", _clean_env(ALLFOURS_ADMIN_TOKEN_FILE=str(tmp_path / "nope")))
    assert (both.returncode, both.stdout) == (2, ""), both.stderr
    assert both.stderr.strip() == ("referee: $ALLFOURS_ADMIN_TOKEN and $ALLFOURS_ADMIN_TOKEN_FILE are both set: "
                                   "give the secret once")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert "No such file or directory" in missing.stderr


def test_arena_token_from_env_reads_the_variables_file(tmp_path: Path) -> None:
    """``arena token CONFIG NAME --from-env MY_TOKEN`` with ``MY_TOKEN_FILE`` (compose.yaml's way): the
    store keeps the SHA-256 of the file's token; a missing file is one line, exit 2."""
    import hashlib

    cfg = tmp_path / "t.toml"
    cfg.write_text('[tournament]\nname = "t"\nplayers = 2\noutput = "out"\n[[bots]]\nname = "far"\nremote = true\n'
                   '[[bots]]\nname = "near"\ncommand = ["x"]\n')

    def token(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arena.cli", "token", str(cfg), "far", "--from-env", "MY_TOKEN"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    good = token(_clean_env(MY_TOKEN_FILE=_file(tmp_path, TOKEN + "\n")))
    bad = token(_clean_env(MY_TOKEN_FILE=str(tmp_path / "nope")))
    assert good.returncode == 0 and TOKEN not in good.stderr + good.stdout, good.stderr
    with sqlite3.connect(tmp_path / "out" / "arena.sqlite") as db:
        assert db.execute("select digest from bot_tokens").fetchall() == [(hashlib.sha256(TOKEN.encode()).hexdigest(),)]
    assert bad.returncode == 2 and "MY_TOKEN_FILE" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workers() -> list[tuple[str, list[str]]]:
    """Each sample worker's command in worker mode (its lobby from ``--arena`` or ``$ALLFOURS_LOBBY``)."""
    found = [("sdk.run", [sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot"])]
    if shutil.which("node") and (ROOT / "sample_bots" / "js" / "node_modules").is_dir():
        found.append(("node", ["node", "sample_bots/js/bot.js"]))
    cpp = ROOT / "sample_bots" / "cpp" / "build" / "allfours-cpp-bot"
    if cpp.is_file():
        found.append(("cpp", [str(cpp)]))
    return found


def test_every_sample_worker_refuses_a_token_given_twice_or_a_missing_file(tmp_path: Path) -> None:
    """``ALLFOURS_BOT_TOKEN`` and ``ALLFOURS_BOT_TOKEN_FILE`` both set, or a file that is not there: the
    worker says so in one line and exits 2 before dialling the lobby (none listens at its address)."""
    workers = _workers()
    if os.environ.get("CI"):  # CI builds both (scripts/setup.sh, npm ci, sample_bots/cpp/build.sh)
        assert [w for w, _ in workers] == ["sdk.run", "node", "cpp"], workers
    require(len(workers) == 3, "node_modules or the C++ bot's build is missing (npm ci; sample_bots/cpp/build.sh)")
    lobby = f"127.0.0.1:{_free_port()}"
    token_file = _file(tmp_path, TOKEN)
    cases = [
        ({"ALLFOURS_BOT_TOKEN": TOKEN, "ALLFOURS_BOT_TOKEN_FILE": token_file}, "are both set"),
        ({"ALLFOURS_BOT_TOKEN_FILE": str(tmp_path / "nope")}, str(tmp_path / "nope")),
    ]
    for name, command in workers:
        for extra, words in cases:
            env = _clean_env(ALLFOURS_LOBBY=lobby, ALLFOURS_BOT_NAME="w", **extra)
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            said = [x for x in done.stderr.splitlines() if "ALLFOURS_BOT_TOKEN" in x]
            assert done.returncode == 2 and len(said) == 1 and words in said[0], (name, extra, done.stderr)
            assert TOKEN not in done.stderr, name


@pytest.mark.parametrize("worker", ["sdk.run", "node", "cpp"])
def test_a_token_given_twice_is_the_whole_of_stderr(tmp_path: Path, worker: str) -> None:
    """docs/deploy.md, "Secrets": both variables set, or a missing file, is one line. `sdk.run` followed
    it with its whole usage (nine lines), `bot.js` and the C++ bot with their usage line (bot.js's named
    only the per-game form): neither is a usage error, so the line is all now."""
    command = dict(_workers()).get(worker)
    require(command is not None, "node_modules or the C++ bot's build is missing (npm ci; sample_bots/cpp/build.sh)")
    assert command is not None
    token_file = _file(tmp_path, TOKEN)
    for extra in ({"ALLFOURS_BOT_TOKEN": TOKEN, "ALLFOURS_BOT_TOKEN_FILE": token_file},
                  {"ALLFOURS_BOT_TOKEN_FILE": str(tmp_path / "nope")}):
        env = _clean_env(ALLFOURS_LOBBY=f"127.0.0.1:{_free_port()}", ALLFOURS_BOT_NAME="w", **extra)
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (worker, extra, done.stderr)
        assert "ALLFOURS_BOT_TOKEN" in done.stderr and TOKEN not in done.stderr, done.stderr


def test_a_bot_gets_no_admin_token_file_variable(tmp_path: Path) -> None:
    """A trusted bot (sandbox "none") runs as the arena's user and could read the admin token's file: the
    arena hands it neither ``$ALLFOURS_ADMIN_TOKEN_FILE`` nor the ``_FILE`` of ``tournament.admin_token_env``."""
    from arena.config import load_config
    from arena.play.environment import admin_secret_names, bot_environment

    cfg = tmp_path / "t.toml"
    cfg.write_text('[tournament]\nname = "t"\nplayers = 2\nadmin_token_env = "MY_ADMIN"\n'
                   '[[bots]]\nname = "a"\ncommand = ["x"]\nsandbox = "none"\n'
                   '[[bots]]\nname = "b"\ncommand = ["x"]\nsandbox = "none"\n')
    config = load_config(cfg)
    names = admin_secret_names(config.admin_token_env)
    base = {"PATH": "/bin", "ALLFOURS_ADMIN_TOKEN_FILE": "/run/secrets/a", "MY_ADMIN_FILE": "/run/secrets/m",
            "MY_ADMIN": "m-token"}
    env = bot_environment(config.bots[0], "ticket", "ref:1", names, (), base)
    assert env["PATH"] == "/bin"
    assert not {"ALLFOURS_ADMIN_TOKEN_FILE", "MY_ADMIN_FILE", "MY_ADMIN"} & set(env), env
