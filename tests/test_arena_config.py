"""The tournament config (arena/config.py): what parses, and errors that name file, key and value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.config import ConfigError, load_config

GOOD = """
[tournament]
name = "cup"
players = 2
games_per_pairing = 4
master_seed = "%s"
concurrency = 3
output = "results"

[tournament.rules]
target = 7
hang_jack = false

[tournament.time_control]
decision_ms = 250
bank_ms = 2000

[[bots]]
name = "random"
version = "1.0"
command = ["python", "-m", "sample_bots.random_bot"]

[[bots]]
name = "node"
version = "2"
command = ["node", "bot.js"]
cwd = "bots/js"
env = { LEVEL = "3" }
""" % ("ab" * 32)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.toml"
    p.write_text(text)
    return p


def test_good_config(tmp_path: Path) -> None:
    c = load_config(write(tmp_path, GOOD))
    assert (c.name, c.players, c.games_per_pairing, c.concurrency) == ("cup", 2, 4, 3)
    assert c.master_seed == bytes.fromhex("ab" * 32)
    assert c.output == tmp_path / "results"
    assert c.rules.players == 2 and c.rules.target == 7 and c.rules.hang_jack is False
    assert c.time_control == {"decision_ms": 250, "bank_ms": 2000}  # only what the config sets
    full = c.full_time_control
    assert (full.decision_ms, full.bank_ms, full.max_strikes, full.join_ms) == (250, 2000, 3, 30000)
    assert [b.name for b in c.bots] == ["random", "node"]
    assert c.bots[1].command == ("node", "bot.js") and c.bots[1].cwd == str(tmp_path / "bots/js")
    assert c.bots[1].sandbox == "bwrap" and c.bots[1].jailed  # sandboxed unless the config says "none"
    assert c.bots[1].env == {"LEVEL": "3"}


def test_referees_and_admin_token_env(tmp_path: Path) -> None:
    c = load_config(write(tmp_path, GOOD))
    assert c.referees == () and c.admin_token_env == "ALLFOURS_ADMIN_TOKEN"  # () = an embedded referee
    extra = 'referees = ["10.0.0.5:50051", "[::1]:7000"]\nadmin_token_env = "CUP_TOKEN"\n[tournament.rules]'
    c2 = load_config(write(tmp_path, GOOD.replace("[tournament.rules]", extra)))
    assert c2.referees == ("10.0.0.5:50051", "[::1]:7000") and c2.admin_token_env == "CUP_TOKEN"
    assert c2.fingerprint() == c.fingerprint()  # where games are refereed is not the tournament's identity


def test_fingerprint_ignores_how_bots_start_but_not_what_they_are(tmp_path: Path) -> None:
    base = load_config(write(tmp_path, GOOD)).fingerprint()
    assert load_config(write(tmp_path, GOOD.replace("concurrency = 3", "concurrency = 1"))).fingerprint() == base
    assert load_config(write(tmp_path, GOOD.replace('"bot.js"', '"bot2.js"'))).fingerprint() == base
    assert load_config(write(tmp_path, GOOD.replace('version = "2"', 'version = "3"'))).fingerprint() != base
    assert load_config(write(tmp_path, GOOD.replace("target = 7", "target = 8"))).fingerprint() != base


@pytest.mark.parametrize(
    ("old", "new", "key", "value"),
    [
        ("games_per_pairing = 4", "games_per_pairing = 3", "tournament.games_per_pairing", "3"),
        ("players = 2", "players = 3", "tournament.players", "3"),
        ("target = 7", "target = 0", "tournament.rules", "'target': 0"),
        ("hang_jack = false", "hang_jak = false", "tournament.rules.hang_jak", "did you mean 'hang_jack'?"),
        ("decision_ms = 250", "decision_ms = -1", "tournament.time_control.decision_ms", "-1"),
        ("bank_ms = 2000", "bank = 2000", "tournament.time_control.bank", "2000"),
        ('master_seed = "' + "ab" * 32, 'master_seed = "' + "ab" * 31, "tournament.master_seed", "abab"),
        ("concurrency = 3", "concurrency = 0", "tournament.concurrency", "0"),
        ('command = ["node", "bot.js"]', 'command = "node bot.js"', "bots[1].command", "'node bot.js'"),
        # one name twice with one version (with two versions they are two entrants: name@version)
        ('name = "node"\nversion = "2"', 'name = "random"\nversion = "1.0"', "bots[1].name", "'random'"),
        # a container bot runs its image: a command beside it would be ignored, so it is refused
        ('cwd = "bots/js"', 'image = "ghcr.io/x/bot:1"', "bots[1].command", "image's entry point"),
        # a process bot's cpus, memory and pids are its cgroup's: the container's keys and bounds; not a remote bot's
        ('cwd = "bots/js"', 'cpus = 0.01', "bots[1].cpus", "between 0.05 and 64"),
        ('cwd = "bots/js"', 'cpus = "2"', "bots[1].cpus", "between 0.05 and 64"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'remote = true\ncpus = 1', "bots[1].cpus", "runs elsewhere"),
        ('cwd = "bots/js"', 'memory = 16', "bots[1].memory", "32"),
        ('cwd = "bots/js"', 'pids = 4', "bots[1].pids", "4096"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'remote = true\npids = 64', "bots[1].pids", "runs elsewhere"),
        # the process sandbox: bubblewrap or none; a container is always sandboxed, a remote bot runs elsewhere
        ('cwd = "bots/js"', 'sandbox = "docker"', "bots[1].sandbox", "'docker'"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'image = "x:1"\nsandbox = "none"', "bots[1].sandbox",
         "always sandboxed"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'remote = true\nsandbox = "none"', "bots[1].sandbox",
         "runs elsewhere"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'image = "x:1"\nmemory = "12q"', "bots[1].memory", "12q"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'image = "x:1"\nmemory = 16', "bots[1].memory", "32"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'image = "x:1"\npids = 100000', "bots[1].pids", "4096"),
        ('command = ["node", "bot.js"]\ncwd = "bots/js"', 'image = "X Y"', "bots[1].image", "docker image"),
        ("[tournament.rules]", "colour = 1\n[tournament.rules]", "tournament.colour", "unknown key"),
        ("[tournament.rules]", 'referees = "h:1"\n[tournament.rules]', "tournament.referees", "host:port"),
        ("[tournament.rules]", 'referees = ["h"]\n[tournament.rules]', "tournament.referees[0]", "port"),
        ("[tournament.rules]", 'referees = ["h:0"]\n[tournament.rules]', "tournament.referees[0]", "'h:0'"),
        ("[tournament.rules]", 'referees = ["h:1", "h:1"]\n[tournament.rules]', "tournament.referees[1]", "twice"),
        ("[tournament.rules]", 'admin_token_env = "A-B"\n[tournament.rules]', "tournament.admin_token_env", "A-B"),
        # a typo in a placeholder is an error, not a literal argument (that bot would never start)
        ('command = ["node", "bot.js"]', 'command = ["{pyhton}", "bot.js"]', "bots[1].command[0]", "{python}?"),
        ('command = ["node", "bot.js"]', 'command = ["node", "--seat={set}"]', "bots[1].command[1]", "{set}"),
        ('command = ["node", "bot.js"]', 'command = ["node", "-e", "f({})"]', "bots[1].command[2]", "{{"),
        ('command = ["node", "bot.js"]', 'command = ["node", "{python!r}"]', "bots[1].command[1]", "{python!r}"),
        ('command = ["node", "bot.js"]', 'command = ["node", "a}b"]', "bots[1].command[1]", "a}b"),
        # values the protocol (uint32) or the referee cannot take are config errors naming the key
        ("decision_ms = 250", "decision_ms = 99999999999", "tournament.time_control.decision_ms", "99999999999"),
        ("bank_ms = 2000", "bank_ms = 4294967296", "tournament.time_control.bank_ms", "4294967296"),
        ("target = 7", "target = 99999999999", "tournament.rules.target", "99999999999"),
        ("games_per_pairing = 4", "games_per_pairing = 10000000000", "tournament.games_per_pairing", "10000000000"),
        # a name is shown in sentences (leaderboards, replays, the terminal): a right-to-left override drew the
        # rest of the sentence backwards ("seat 1: NAME (side 1)" as "(1 edis)"), a zero-width space made a
        # lookalike of another name, a newline broke the terminal's table
        ('name = "node"', 'name = "evil\u202e"', "bots[1].name", "U+202E"),
        ('name = "node"', 'name = "ra\u200bndom"', "bots[1].name", "U+200B"),
        ('version = "2"', 'version = "2\\n"', "bots[1].version", "U+000A"),  # TOML's escape
        ('name = "cup"', 'name = "cup\u2067"', "tournament.name", "U+2067"),
        # the admin token is never handed to a bot, not even on purpose
        ('env = { LEVEL = "3" }', 'env = { ALLFOURS_ADMIN_TOKEN = "x" }', "bots[1].env.ALLFOURS_ADMIN_TOKEN", "admin"),
        ('env = { LEVEL = "3" }', 'env = { ALLFOURS_ADMIN_TOKEN_FILE = "/f" }', "bots[1].env.ALLFOURS_ADMIN_TOKEN_FILE",
         "admin"),
    ],
)
def test_bad_configs_name_file_key_and_value(tmp_path: Path, old: str, new: str, key: str, value: str) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: {key}:"), msg
    assert value in msg


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read") as info:
        load_config(tmp_path / "nope.toml")
    assert str(info.value) == f"{tmp_path / 'nope.toml'}: cannot read the file: No such file or directory"
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[tournament\n"))
    with pytest.raises(ConfigError, match="need at least two"):
        load_config(write(tmp_path, '[tournament]\nname = "x"\n'))


@pytest.mark.parametrize("name", ["demo", "small", "referees"])
def test_examples_parse(name: str) -> None:
    c = load_config(Path(__file__).resolve().parent.parent / "examples" / f"{name}.toml")
    assert c.name == name and len(c.bots) == (5 if name == "demo" else 3)  # the demo also seats C++ and search
    assert c.referees == (("127.0.0.1:50051", "127.0.0.1:50052") if name == "referees" else ())


def test_placeholders_and_literal_braces(tmp_path: Path) -> None:
    from arena.config import expand_placeholders

    cfg = GOOD.replace('command = ["node", "bot.js"]', 'command = ["{python}", "-c", "print({{1: 2}})", "{seat}"]')
    c = load_config(write(tmp_path, cfg))
    values = {"python": "/py", "config_dir": "/c", "ticket": "T", "referee": "h:1", "seat": "3"}
    assert [expand_placeholders(a, values) for a in c.bots[1].command] == ["/py", "-c", "print({1: 2})", "3"]


def test_a_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    p = tmp_path / "latin1.toml"
    p.write_bytes(GOOD.replace('name = "cup"', 'name = "caf\u00e9"').encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert str(info.value).startswith(f"{p}: cannot read the file: not UTF-8 text (byte 0xe9 at line 3")


def test_time_control_accepts_the_protocol_maximum(tmp_path: Path) -> None:
    c = load_config(write(tmp_path, GOOD.replace("decision_ms = 250", "decision_ms = 4294967295")))
    assert c.full_time_control.decision_ms == 2**32 - 1


def test_bot_environment_has_no_admin_token() -> None:
    """The admin-token variables (default and configured names), copies of their values, and the
    token in use (e.g. from --admin-token) never reach a bot; its own env and ticket do."""
    from arena.config import BotSpec
    from arena.play.environment import bot_environment

    base = {"PATH": "/bin", "ALLFOURS_ADMIN_TOKEN": "t1", "CUP_TOKEN": "t2", "COPY": "t2", "CLI": "t3",
            "ALLFOURS_COMPETITOR_TOKEN": "t4", "ALLFOURS_BOT_TOKEN": "t5", "MINE": "t5", "ALLFOURS_LOBBY": "h:2"}
    bot = BotSpec("b", "1", ("x",), env={"LEVEL": "3"}, sandbox="none")  # a trusted bot: all but secrets
    env = bot_environment(bot, "TICKET", "h:1", ("ALLFOURS_ADMIN_TOKEN", "CUP_TOKEN"), ("t3",), base=base)
    assert env == {"PATH": "/bin", "LEVEL": "3", "ALLFOURS_TICKET": "TICKET", "ALLFOURS_REFEREE": "h:1",
                   "ALLFOURS_LOBBY": "h:2"}


HOST_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONPATH": "/src",
    "VIRTUAL_ENV": "/venv", "HOME": "/root", "USER": "root", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
    "AWS_SECRET_ACCESS_KEY": "k1", "GITHUB_TOKEN": "k2", "DATABASE_URL": "postgres://u:p@db/x",
    "ALLFOURS_LOBBY": "h:2", "ALLFOURS_TLS_CA": "/etc/ca.pem",
}


@pytest.mark.parametrize("worker", [False, True], ids=["per-game", "worker"])
def test_a_sandboxed_bot_gets_only_the_variables_it_needs(worker: bool) -> None:
    """A process-sandboxed bot (``sandbox = "bwrap"``, the default) got the whole environment of the
    arena but its tokens: a host's cloud key, GitHub token or database URL reached every bot. Now it gets
    only how to find programs and print text (:data:`arena.play.environment.JAIL_PASSES`, ``LC_*``),
    its ``env`` table and what the arena gives it."""
    from arena.config import BotSpec
    from arena.play.environment import bot_environment, worker_environment

    bot = BotSpec("b", "1", ("x",), env={"LEVEL": "3"})
    if worker:
        env = worker_environment(bot, "h:9", "own", base=HOST_ENVIRONMENT)
        given = {"ALLFOURS_LOBBY": "h:9", "ALLFOURS_BOT_TOKEN": "own", "ALLFOURS_BOT_NAME": "b"}
        assert env.pop("ALLFOURS_WORKER_PARENT") == str(os.getpid())
    else:
        env = bot_environment(bot, "TICKET", "h:1", base=HOST_ENVIRONMENT)
        given = {"ALLFOURS_TICKET": "TICKET", "ALLFOURS_REFEREE": "h:1"}
    kept = ("PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "VIRTUAL_ENV")
    assert env == {**{k: HOST_ENVIRONMENT[k] for k in kept}, "LEVEL": "3", **given}


def test_a_local_worker_gets_its_own_token_not_the_shells() -> None:
    """A host who submits (ALLFOURS_COMPETITOR_TOKEN) or runs a worker (ALLFOURS_BOT_TOKEN) in the shell of
    `arena serve` passed those tokens to every local bot; a worker gets only its own."""
    from arena.config import BotSpec
    from arena.play.environment import worker_environment

    base = {"PATH": "/bin", "ALLFOURS_COMPETITOR_TOKEN": "t4", "ALLFOURS_BOT_TOKEN": "t5"}
    env = worker_environment(BotSpec("b", "1", ("x",)), "h:2", "own", base=base)
    assert env["ALLFOURS_BOT_TOKEN"] == "own" and "ALLFOURS_COMPETITOR_TOKEN" not in env
    assert "t4" not in env.values() and "t5" not in env.values()


def test_every_error_in_the_file_at_once_with_did_you_mean(tmp_path: Path) -> None:
    """Four problems in four places: one ConfigErrors holding each as its own one-line error, in file
    order, with a "did you mean" for the misspelt keys."""
    bad = (
        GOOD.replace("players = 2", "players = 3")
        .replace("concurrency = 3", "concurency = 3")
        .replace("bank_ms = 2000", "bank_ms = -5\ndecison_ms = 9")
        .replace('command = ["node", "bot.js"]', 'command = "node bot.js"')
    )
    path = write(tmp_path, bad)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    lines = [str(e) for e in info.value.errors]
    assert str(info.value).splitlines() == lines
    assert [line.split(": ")[1] for line in lines] == [
        "tournament.concurency",
        "tournament.players",
        "tournament.time_control.decison_ms",
        "tournament.time_control.bank_ms",
        "bots[1].command",
    ]
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert "unknown key (did you mean 'concurrency'?) (got 3)" in lines[0]
    assert "did you mean 'decision_ms'?" in lines[2]
    assert "must be 2 or 4 (got 3)" in lines[1] and "(got -5)" in lines[3] and "argv" in lines[4]


def test_the_cli_prints_every_config_error_one_line_each(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("players = 2", "players = 3").replace("concurrency = 3", "concurency = 3"))
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "run", str(path), "--no-progress"],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"config error: {path}: tournament.concurency: unknown key (did you mean 'concurrency'?) (got 3)",
        f"config error: {path}: tournament.players: must be 2 or 4 (got 3)",
    ]
    assert not (tmp_path / "results").exists()


def test_process_bot_limits(tmp_path: Path) -> None:
    """A process bot's ``cpus``, ``memory`` and ``pids`` (its cgroup's, arena/hosting/procs.py) read as a
    container's, with the process defaults when absent."""
    from arena.hosting.procs import CPUS, MEMORY_MB, PIDS

    c = load_config(write(tmp_path, GOOD.replace('cwd = "bots/js"',
                                                 'cwd = "bots/js"\ncpus = 0.25\nmemory = "512m"\npids = 100')))
    one, other = c.bots[1].limits, c.bots[0].limits
    assert (one.cpus, one.memory_mb, one.pids) == (0.25, 512, 100) and not c.bots[1].in_container
    assert (other.cpus, other.memory_mb, other.pids) == (CPUS, MEMORY_MB, PIDS) == (1.0, 1024, 256)


def test_container_bot_image_and_limits(tmp_path: Path) -> None:
    text = GOOD.replace('command = ["node", "bot.js"]\ncwd = "bots/js"',
                        'image = "allfours-bots/node:1"\ncpus = 0.5\nmemory = "1g"\npids = 32')
    text = text.replace('LEVEL = "3"', 'A = "b"')
    b = load_config(write(tmp_path, text)).bots[1]
    assert b.in_container and b.image == "allfours-bots/node:1" and b.command == () and b.env == {"A": "b"}
    assert (b.limits.cpus, b.limits.memory_mb, b.limits.pids) == (0.5, 1024, 32)
    c = load_config(write(tmp_path, text.replace('memory = "1g"', "memory = 300")))
    assert c.bots[1].limits.memory_mb == 300 and not c.bots[0].in_container


# docs/tournament-config.md and examples/competition.toml against the loader: every key they show is
# accepted, and every key the loader accepts is shown (a key added to one and not the other is caught).
CONFIG_DOC = Path(__file__).resolve().parents[1] / "docs" / "tournament-config.md"
COMPETITION_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "competition.toml"
_TABLES = ("tournament", "tournament.rules", "tournament.time_control", "tournament.sprt", "tournament.ladder", "bots",
           "competition")


def _accepted(table: str) -> set[str]:
    """The keys the loader accepts in ``table``, as its error for a key unlike any of them lists them."""
    import ast
    import re

    from arena.config import parse_config

    fmt = table.removeprefix("tournament.") if table in ("tournament.sprt", "tournament.ladder") else "round_robin"
    doc: dict[str, object] = {"tournament": {"name": "x", "format": fmt},
                              "bots": [{"name": "a", "command": ["a"]}, {"name": "b", "command": ["b"]}]}
    where: dict[str, object] = doc
    for part in table.split("."):
        where = where.setdefault(part, {})  # type: ignore[assignment]
        where = where[0] if isinstance(where, list) else where
    where["zzqqxx"] = 1
    with pytest.raises(ConfigError) as e:
        parse_config(doc, "c.toml")
    found = re.search(r"zzqqxx: unknown key \(known keys here: (\[[^\]]*\])\)", str(e.value))
    assert found, str(e.value)
    return set(ast.literal_eval(found.group(1)))


def _shown() -> dict[str, tuple[set[str], set[str]]]:
    """Per table, (the keys docs/tournament-config.md's TOML and examples/competition.toml set, those
    and the ones only their comments name: ``# mode = "worker"``, ``# players may be repeated``)."""
    import re
    import tomllib

    shown: dict[str, tuple[set[str], set[str]]] = {t: (set(), set()) for t in _TABLES}
    blocks = [*re.findall(r"```toml\n(.*?)```", CONFIG_DOC.read_text(), re.S), COMPETITION_EXAMPLE.read_text()]
    for block in blocks:
        table = ""
        for line in block.splitlines():
            head = re.match(r"\s*\[\[?([\w.]+)\]\]?", line)
            table = head.group(1) if head else table
            named = re.match(r"\s*#\s*(\w+)", line)
            if named and table in shown:
                shown[table][1].add(named.group(1))
        data = tomllib.loads(block)
        for table in _TABLES:
            where: object = data
            for part in table.split("."):
                where = where.get(part, {}) if isinstance(where, dict) else {}
            for row in where if isinstance(where, list) else [where]:
                shown[table][0].update(row)
                shown[table][1].update(row)
    return shown


@pytest.mark.parametrize("table", _TABLES)
def test_the_config_doc_shows_every_key_the_loader_takes(table: str) -> None:
    set_keys, named = _shown()[table]
    accepted = _accepted(table)
    assert set_keys, table
    assert set_keys <= accepted, f"[{table}]: the docs show keys the loader refuses: {sorted(set_keys - accepted)}"
    assert accepted <= named, f"[{table}]: keys no doc shows: {sorted(accepted - named)}"
