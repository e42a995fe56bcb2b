"""The tournament config: one TOML file (docs/tournament-config.md has every key).

Parsing is strict: unknown keys, unknown command placeholders, wrong types and out-of-range values
(including values the protocol cannot carry) raise :class:`ConfigError` with the file, the key
(dotted, e.g. ``bots[2].command[0]``) and the offending value. Rule options are validated by
building :class:`referee.rules.RuleSet` (the rules live in one place).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import string
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from referee import wire
from referee.dealing import parse_seed
from referee.rules import RuleSet
from referee.wire import TimeControl

#: Environment variable holding a seat's ticket, set for every bot process.
ENV_TICKET = "ALLFOURS_TICKET"
#: Environment variable holding the referee's ``host:port``, set for every bot process.
ENV_REFEREE = "ALLFOURS_REFEREE"
#: Default of ``tournament.admin_token_env``: where the external referees' admin token is read from
#: (the same variable ``referee serve`` reads its token from).
ENV_ADMIN_TOKEN = "ALLFOURS_ADMIN_TOKEN"

#: Placeholders replaced in a bot's ``command`` (see :func:`expand_placeholders`).
PLACEHOLDERS = ("python", "config_dir", "ticket", "referee", "seat")
#: Largest value of a time-control option: the protocol carries them as uint32.
MAX_TIME_CONTROL = 2**32 - 1
#: Largest ``games_per_pairing`` (the schedule is built in memory; pair numbers are 4 bytes in seeds).
MAX_GAMES_PER_PAIRING = 1_000_000


class ConfigError(ValueError):
    """A bad tournament config. ``str(e)`` is ``"<file>: <key>: <problem> (got <value>)"``, or
    ``"<file>: <problem>"`` when the file cannot be read or is not TOML (key ``"-"``)."""

    def __init__(self, path: str, key: str, problem: str, value: Any = None, *, show_value: bool = True):
        self.path, self.key, self.problem, self.value = path, key, problem, value
        suffix = f" (got {value!r})" if show_value else ""
        where = f"{key}: " if key != "-" else ""  # "-": the whole file (unreadable, not TOML)
        super().__init__(f"{path}: {where}{problem}{suffix}")


@dataclass(frozen=True, slots=True)
class BotSpec:
    """One bot: ``name`` (unique, used in ratings), ``version``, and how to start one seat's process.

    ``command`` is an argv list (no shell) whose placeholders were checked (:func:`expand_placeholders`);
    ``cwd`` is resolved against the config file's folder; ``env`` is added to the arena's environment
    minus its admin tokens (the arena also sets ``ALLFOURS_TICKET`` and ``ALLFOURS_REFEREE``; see
    :func:`arena.match_runner.bot_environment`).
    """

    name: str
    version: str
    command: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """A parsed, validated tournament.

    ``players`` is 2 or 4; ``games_per_pairing`` is even (duplicate pairs); ``master_seed`` is 32
    bytes or ``None`` (then the arena draws one and keeps it in the output's store); ``output`` is an
    absolute folder; ``time_control`` holds only the options the config sets (the referee's defaults,
    :class:`referee.wire.TimeControl`, apply to the others); ``source`` is the config file's path.
    ``referees`` lists external referees (``host:port``; empty: the arena starts an embedded one) and
    ``admin_token_env`` names the environment variable holding their admin token.
    """

    @property
    def full_time_control(self) -> TimeControl:
        """The complete time control: the config's options over the referee's defaults."""
        return TimeControl(**self.time_control)

    name: str
    players: int
    games_per_pairing: int
    master_seed: bytes | None
    concurrency: int
    output: Path
    rules: RuleSet
    time_control: Mapping[str, int]
    bots: tuple[BotSpec, ...]
    source: str = "<config>"
    referees: tuple[str, ...] = ()
    admin_token_env: str = ENV_ADMIN_TOKEN

    def fingerprint(self) -> str:
        """SHA-256 (hex) of everything that decides which games are played and how.

        Excludes ``concurrency``, ``output``, ``source``, ``referees``, ``admin_token_env`` and the bots'
        ``command``/``cwd``/``env`` (where games are refereed and how a bot is started may change
        between runs of one tournament; what a bot *is* — name and version — may not). Includes the
        master seed only when the config gives one.
        """
        data = {
            "name": self.name,
            "players": self.players,
            "games_per_pairing": self.games_per_pairing,
            "master_seed": self.master_seed.hex() if self.master_seed else None,
            "rules": self.rules.to_dict(),
            "time_control": dict(sorted(self.time_control.items())),
            "bots": [[b.name, b.version] for b in self.bots],
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


_TOURNAMENT_KEYS = {
    "name",
    "players",
    "games_per_pairing",
    "master_seed",
    "concurrency",
    "output",
    "rules",
    "time_control",
    "referees",
    "admin_token_env",
}
_TC_KEYS = {f.name for f in fields(TimeControl)}
_BOT_KEYS = {"name", "version", "command", "cwd", "env", "image"}


def _int(path: str, key: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, key, "must be a whole number", value)
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise ConfigError(path, key, f"must be {rng}", value)
    return value


def _str(path: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, key, "must be a non-empty string", value)
    return value


def parse_address(value: str) -> str:
    """Check a referee address ``host:port`` (port 1..65535; an IPv6 host in brackets) and return it.

    :raises ValueError: with the problem.
    """
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in value):
        raise ValueError("must be host:port with a port between 1 and 65535")
    return value.strip()


def _placeholder_fields(arg: str) -> list[tuple[str, str | None]]:
    """``arg`` split into ``(literal text, placeholder name or None)`` pieces.

    ``{{`` and ``}}`` are literal braces; every other ``{...}`` must be one of :data:`PLACEHOLDERS`.

    :raises ValueError: naming the first unknown placeholder or stray brace.
    """
    known = ", ".join("{" + k + "}" for k in PLACEHOLDERS)
    hint = f"known placeholders: {known}; write {{{{ and }}}} for literal braces"
    try:
        parsed = list(string.Formatter().parse(arg))
    except ValueError as e:  # "Single '}' encountered", "expected '}' before end of string"
        raise ValueError(f"unbalanced brace ({e}); {hint}") from None
    out: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if name is not None:
            text = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            if name not in PLACEHOLDERS or spec or conversion:
                close = difflib.get_close_matches(name, PLACEHOLDERS, n=1)
                guess = f" (did you mean {{{close[0]}}}?)" if close and name not in PLACEHOLDERS else ""
                raise ValueError(f"unknown placeholder {text}{guess}; {hint}")
        out.append((literal, name))
    return out


def expand_placeholders(arg: str, values: Mapping[str, str]) -> str:
    """``arg`` with each placeholder (``{python}``, ``{config_dir}``, ``{ticket}``, ``{referee}``,
    ``{seat}``) replaced by ``values[name]`` and ``{{``/``}}`` by literal braces.

    :raises ValueError: for an unknown placeholder or a stray brace (the config parser reports these).
    """
    return "".join(literal + ("" if name is None else values[name]) for literal, name in _placeholder_fields(arg))


def _unknown(path: str, where: str, data: Mapping[str, Any], known: set[str]) -> None:
    extra = sorted(set(data) - known)
    if extra:
        key = f"{where}.{extra[0]}" if where else extra[0]
        raise ConfigError(path, key, f"unknown key; known keys here: {sorted(known)}", data[extra[0]])


def parse_config(data: Mapping[str, Any], path: str = "<config>", base: Path | None = None) -> TournamentConfig:
    """Validate a decoded TOML document into a :class:`TournamentConfig`.

    :param base: folder that relative ``output`` and ``cwd`` paths are resolved against (default: cwd).
    :raises ConfigError: naming the file, key and value of the first problem found.
    """
    base = (base or Path.cwd()).resolve()
    _unknown(path, "", data, {"tournament", "bots"})
    t = data.get("tournament")
    if not isinstance(t, dict):
        raise ConfigError(path, "tournament", "missing [tournament] table", t, show_value=t is not None)
    _unknown(path, "tournament", t, _TOURNAMENT_KEYS)
    name = _str(path, "tournament.name", t.get("name"))
    if any(ch in name for ch in "/\\\x00"):
        raise ConfigError(path, "tournament.name", "may not contain slashes", name)
    players = t.get("players", 4)
    if players not in (2, 4) or isinstance(players, bool):
        raise ConfigError(path, "tournament.players", "must be 2 or 4", players)
    gpp = _int(path, "tournament.games_per_pairing", t.get("games_per_pairing", 2), 2, MAX_GAMES_PER_PAIRING)
    if gpp % 2:
        raise ConfigError(
            path,
            "tournament.games_per_pairing",
            "must be even: games are played in duplicate pairs (same deal, sides swapped)",
            gpp,
        )
    seed: bytes | None = None
    if t.get("master_seed") is not None:
        raw = t["master_seed"]
        if not isinstance(raw, str):
            raise ConfigError(path, "tournament.master_seed", "must be a string of 64 hex digits", raw)
        try:
            seed = parse_seed(raw)
        except ValueError:
            raise ConfigError(path, "tournament.master_seed", "must be 64 hex digits (32 bytes)", raw) from None
    concurrency = _int(path, "tournament.concurrency", t.get("concurrency", 1), 1, 256)
    out_raw = _str(path, "tournament.output", t.get("output", f"arena-out/{name}"))
    output = (base / out_raw).resolve()

    refs_raw = t.get("referees", [])
    if not isinstance(refs_raw, list) or not all(isinstance(r, str) for r in refs_raw):
        raise ConfigError(path, "tournament.referees", 'must be a list of "host:port" strings', refs_raw)
    referees: list[str] = []
    for k, r in enumerate(refs_raw):
        try:
            addr = parse_address(r)
        except ValueError as e:
            raise ConfigError(path, f"tournament.referees[{k}]", str(e), r) from None
        if addr in referees:
            raise ConfigError(path, f"tournament.referees[{k}]", "listed twice", r)
        referees.append(addr)
    token_env = _str(path, "tournament.admin_token_env", t.get("admin_token_env", ENV_ADMIN_TOKEN))
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token_env):
        raise ConfigError(path, "tournament.admin_token_env", "must be an environment variable name", token_env)

    rules_raw = t.get("rules", {})
    if not isinstance(rules_raw, dict):
        raise ConfigError(path, "tournament.rules", "must be a table of rule options", rules_raw)
    if "players" in rules_raw and rules_raw["players"] != players:
        raise ConfigError(
            path,
            "tournament.rules.players",
            f"disagrees with tournament.players = {players}",
            rules_raw["players"],
        )
    try:
        rules = RuleSet.from_dict({**rules_raw, "players": players})
    except (TypeError, ValueError) as e:
        raise ConfigError(path, "tournament.rules", str(e), rules_raw) from None
    for k, v in rules_raw.items():  # what the protocol cannot carry (e.g. a target beyond int32), key by key
        try:
            wire.rules_to_pb(RuleSet.from_dict({k: v, "players": players}))
        except (TypeError, ValueError, OverflowError) as e:
            raise ConfigError(path, f"tournament.rules.{k}", f"the protocol cannot carry it: {e}", v) from None

    tc_raw = t.get("time_control", {})
    if not isinstance(tc_raw, dict):
        raise ConfigError(path, "tournament.time_control", "must be a table", tc_raw)
    _unknown(path, "tournament.time_control", tc_raw, _TC_KEYS)
    tc = {k: _int(path, f"tournament.time_control.{k}", v, 1, MAX_TIME_CONTROL) for k, v in sorted(tc_raw.items())}
    for k, v in tc.items():  # the referee's own validation, and what the protocol can carry, key by key
        try:
            wire.time_control_to_pb(TimeControl(**{k: v}))
        except (TypeError, ValueError, OverflowError) as e:
            raise ConfigError(path, f"tournament.time_control.{k}", str(e), v) from None

    bots_raw = data.get("bots")
    if not isinstance(bots_raw, list) or len(bots_raw) < 2:
        raise ConfigError(
            path,
            "bots",
            "need at least two [[bots]] entries",
            None if bots_raw is None else len(bots_raw) if isinstance(bots_raw, list) else bots_raw,
        )
    bots: list[BotSpec] = []
    seen: set[str] = set()
    for k, b in enumerate(bots_raw):
        where = f"bots[{k}]"
        if not isinstance(b, dict):
            raise ConfigError(path, where, "must be a table", b)
        _unknown(path, where, b, _BOT_KEYS)
        bname = _str(path, f"{where}.name", b.get("name"))
        if bname in seen:
            raise ConfigError(path, f"{where}.name", "duplicate bot name", bname)
        seen.add(bname)
        if "image" in b:
            raise ConfigError(
                path,
                f"{where}.image",
                "container images are not supported yet; give a `command` instead",
                b["image"],
            )
        version = b.get("version", "0")
        if not isinstance(version, str | int | float) or isinstance(version, bool):
            raise ConfigError(path, f"{where}.version", "must be a string", version)
        cmd = b.get("command")
        if not isinstance(cmd, list) or not cmd or not all(isinstance(x, str) and x for x in cmd):
            raise ConfigError(path, f"{where}.command", "must be a non-empty list of strings (argv, no shell)", cmd)
        for i, arg in enumerate(cmd):
            try:
                _placeholder_fields(arg)
            except ValueError as e:
                raise ConfigError(path, f"{where}.command[{i}]", str(e), arg) from None
        cwd = b.get("cwd")
        if cwd is not None:
            cwd = str((base / _str(path, f"{where}.cwd", cwd)).resolve())
        env = b.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ConfigError(path, f"{where}.env", "must be a table of string values", env)
        for secret in (ENV_ADMIN_TOKEN, token_env):
            if secret in env:
                raise ConfigError(
                    path,
                    f"{where}.env.{secret}",
                    "a bot may not be given the referees' admin token (it could read every match's cards)",
                    show_value=False,
                )
        bots.append(BotSpec(bname, str(version), tuple(cmd), cwd, dict(env)))

    return TournamentConfig(
        name, players, gpp, seed, concurrency, output, rules, tc, tuple(bots), path, tuple(referees), token_env
    )


def check_bot_cwds(config: TournamentConfig, output: Path, arena_cwd: Path | None = None) -> None:
    """Refuse to start any bot inside the output folder (it holds the SQLite file with the master seed).

    A bot without ``cwd`` starts in the arena's working directory (``arena_cwd``, default the current one).

    :raises ConfigError: naming the first bot whose working directory is ``output`` or below it.
    """
    out = Path(output).resolve()
    here = (arena_cwd or Path.cwd()).resolve()
    for k, b in enumerate(config.bots):
        cwd = Path(b.cwd).resolve() if b.cwd else here
        if cwd == out or out in cwd.parents:
            problem = f"is inside the output folder {out}, which holds the master seed: start bots elsewhere"
            if b.cwd:
                raise ConfigError(config.source, f"bots[{k}].cwd", problem, b.cwd)
            raise ConfigError(
                config.source,
                f"bots[{k}].cwd",
                f"not set, so the bot would start in the arena's working directory {here}, which {problem[3:]}",
                show_value=False,
            )


def load_config(path: str | Path) -> TournamentConfig:
    """Read and validate a TOML tournament config; relative paths resolve against its folder.

    :raises ConfigError: on a missing file, invalid TOML (with its line) or any bad key.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(str(p), "-", f"cannot read the file: {e.strerror}", show_value=False) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(
            str(p),
            "-",
            f"cannot read the file: not UTF-8 text (byte 0x{raw[e.start]:02x} at line {line}, column {column}); "
            "TOML files are UTF-8",
            show_value=False,
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(str(p), "-", f"not valid TOML: {e}", show_value=False) from None
    return parse_config(data, str(p), p.parent)
