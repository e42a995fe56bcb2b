"""The tournament config (arena/config.py): what parses, and errors that name file, key and value."""

from __future__ import annotations

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
        ("hang_jack = false", "hang_jak = false", "tournament.rules", "unknown rule option"),
        ("decision_ms = 250", "decision_ms = -1", "tournament.time_control.decision_ms", "-1"),
        ("bank_ms = 2000", "bank = 2000", "tournament.time_control.bank", "2000"),
        ('master_seed = "' + "ab" * 32, 'master_seed = "' + "ab" * 31, "tournament.master_seed", "abab"),
        ("concurrency = 3", "concurrency = 0", "tournament.concurrency", "0"),
        ('command = ["node", "bot.js"]', 'command = "node bot.js"', "bots[1].command", "'node bot.js'"),
        ('name = "node"', 'name = "random"', "bots[1].name", "'random'"),
        ('cwd = "bots/js"', 'image = "ghcr.io/x/bot:1"', "bots[1].image", "not supported yet"),
        ("[tournament.rules]", "colour = 1\n[tournament.rules]", "tournament.colour", "unknown key"),
        ("[tournament.rules]", 'referees = "h:1"\n[tournament.rules]', "tournament.referees", "host:port"),
        ("[tournament.rules]", 'referees = ["h"]\n[tournament.rules]', "tournament.referees[0]", "port"),
        ("[tournament.rules]", 'referees = ["h:0"]\n[tournament.rules]', "tournament.referees[0]", "'h:0'"),
        ("[tournament.rules]", 'referees = ["h:1", "h:1"]\n[tournament.rules]', "tournament.referees[1]", "twice"),
        ("[tournament.rules]", 'admin_token_env = "A-B"\n[tournament.rules]', "tournament.admin_token_env", "A-B"),
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
    assert c.name == name and len(c.bots) == 3
    assert c.referees == (("127.0.0.1:50051", "127.0.0.1:50052") if name == "referees" else ())
