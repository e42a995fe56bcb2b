"""The tournament config: one TOML file (docs/tournament-config.md has every key).

Parsing is strict: unknown keys (with a "did you mean" when one is close), unknown command
placeholders, wrong types and out-of-range values (including values the protocol cannot carry) raise
:class:`ConfigError` with the file, the key (dotted, e.g. ``bots[2].command[0]``) and the offending
value; every problem of a file is reported at once (:class:`ConfigErrors`). Rule options are validated by
building :class:`referee.rules.RuleSet` (the rules live in one place).
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import json
import math
import re
import string
import tomllib
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, TypeVar

from arena.competition.reads import DEFAULT_READS_PER_MINUTE
from arena.hosting.procs import PROCESS_LIMITS
from arena.hosting.sandbox import Limits
from referee import wire
from referee.credentials import FILE_SUFFIX, PEM_CERTIFICATE, PEM_PRIVATE_KEY
from referee.dealing import parse_seed
from referee.rules import RuleSet
from referee.wire import TimeControl

if TYPE_CHECKING:
    from arena.formats.ladder import Settings as LadderSettings
    from arena.formats.sprt import SprtSettings

#: Environment variable holding a seat's ticket, set for every bot process.
ENV_TICKET = "ALLFOURS_TICKET"
#: Environment variable holding the referee's ``host:port``, set for every bot process.
ENV_REFEREE = "ALLFOURS_REFEREE"
#: Default of ``tournament.admin_token_env``: where the external referees' admin token is read from
#: (the same variable ``referee serve`` reads its token from).
ENV_ADMIN_TOKEN = "ALLFOURS_ADMIN_TOKEN"

#: Placeholders replaced in a bot's ``command`` (see :func:`expand_placeholders`).
PLACEHOLDERS = ("python", "config_dir", "ticket", "referee", "seat")
#: Placeholders that only a per-game bot's command may use (a worker gets its seats from the lobby).
PER_GAME_PLACEHOLDERS = ("ticket", "referee", "seat")
#: How a bot plays (``[[bots]] mode``): one process per seat per game, a pool of long-lived local
#: worker processes that dial the lobby, or workers elsewhere that dial it (``remote = true``).
BOT_MODES = ("per_game", "worker", "remote")
#: Default ``tournament.lobby``: loopback, any free port (printed at start).
DEFAULT_LOBBY = "127.0.0.1:0"
#: Default ``tournament.no_show_s``: seconds a bot's games wait for its first worker before they are forfeited.
DEFAULT_NO_SHOW_S = 120
#: Largest value of a time-control option: the protocol carries them as uint32.
MAX_TIME_CONTROL = 2**32 - 1
#: Default of ``tournament.bot_log_bytes``: the most bytes of output kept per bot process (1 MiB).
BOT_LOG_BYTES = 1 << 20
#: Default of ``tournament.bot_logs_kept_games``: the per-game bot logs (``OUTPUT/logs/<game id>/``) of
#: the newest this many stored games are kept, older ones removed (arena/tournament/game_logs.py).
BOT_LOGS_KEPT_GAMES = 2000
#: Largest ``games_per_pairing`` (the schedule is built in memory; pair numbers are 4 bytes in seeds).
MAX_GAMES_PER_PAIRING = 1_000_000


T = TypeVar("T")


class ConfigError(ValueError):
    """A bad tournament config. ``str(e)`` is ``"<file>: <key>: <problem> (got <value>)"``, or
    ``"<file>: <problem>"`` when the file cannot be read or is not TOML (key ``"-"``). ``errors`` is
    ``(e,)``; a :class:`ConfigErrors` holds several."""

    def __init__(self, path: str, key: str, problem: str, value: object = None, *, show_value: bool = True):
        self.path, self.key, self.problem, self.value = path, key, problem, value
        suffix = f" (got {value!r})" if show_value else ""
        where = f"{key}: " if key != "-" else ""  # "-": the whole file (unreadable, not TOML)
        super().__init__(f"{path}: {where}{problem}{suffix}")

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        """Each problem, one :class:`ConfigError` (one line) each."""
        return (self,)


class ConfigErrors(ConfigError):
    """Several problems in one config file, all found in one pass: ``errors`` holds each in the
    order of the file's sections; ``str(e)`` is their one-line messages joined by newlines."""

    def __init__(self, errors: list[ConfigError]):
        first = errors[0]
        ValueError.__init__(self, "\n".join(str(e) for e in errors))
        self.path, self.key, self.problem, self.value = first.path, first.key, first.problem, first.value
        self._errors = tuple(errors)

    @property
    def errors(self) -> tuple[ConfigError, ...]:
        """Each problem, one :class:`ConfigError` (one line) each."""
        return self._errors


@dataclass(frozen=True, slots=True)
class BotSpec:
    """One bot: ``name`` (unique, used in ratings), ``version``, and how it plays.

    ``mode`` is one of :data:`BOT_MODES`: ``"per_game"`` (the default: one process per seat, started
    for each game), ``"worker"`` (a pool of ``workers`` long-lived processes that dial the lobby; 0:
    as many as ``concurrency`` needs) or ``"remote"`` (no command: workers anywhere dial the lobby with
    the bot's token, see ``arena token``). ``command`` is an argv list (no shell) whose placeholders
    were checked (:func:`expand_placeholders`),
    empty for a container bot, which gives ``image`` (a docker image, ``arena bots build``) and its
    container ``limits`` instead (``cpus``, ``memory`` in MiB, ``pids``; docs/deploy.md; per game only);
    a local process bot's ``limits`` are its cgroup's ``cpus``, ``memory`` (MiB) and ``pids``, the same keys
    (``memory``, ``pids`` and ``cpus`` defaulting to :data:`arena.hosting.procs.PROCESS_LIMITS`);
    ``cwd`` is resolved against the config file's folder; ``env`` is added to the arena's environment
    minus its admin tokens (the arena also sets ``ALLFOURS_TICKET`` and ``ALLFOURS_REFEREE``; see
    :func:`arena.play.environment.bot_environment`).
    """

    name: str
    version: str
    command: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    image: str | None = None
    limits: Limits = field(default_factory=Limits)
    mode: str = "per_game"
    workers: int = 0
    sandbox: str = "bwrap"

    @property
    def in_container(self) -> bool:
        """True for a container bot (``image``; started in the sandbox, :mod:`arena.hosting.sandbox`)."""
        return self.image is not None

    @property
    def jailed(self) -> bool:
        """True for a local process bot (per game or worker) that runs in bubblewrap's namespaces
        (:mod:`arena.hosting.jail`); False for a container or remote bot, or one with ``sandbox = "none"``."""
        return not self.in_container and self.mode != "remote" and self.sandbox != "none"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address, brackets allowed, or a name) is this machine's loopback: ``127.x.y.z``,
    ``::1`` or ``localhost``; only this machine reaches it."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """A parsed, validated tournament.

    ``players`` is 2 or 4; ``games_per_pairing`` is even (duplicate pairs); ``master_seed`` is 32
    bytes or ``None`` (then the arena draws one and keeps it in the output's store); ``output`` is an
    absolute folder; ``time_control`` holds only the options the config sets (the referee's defaults,
    :class:`referee.wire.TimeControl`, apply to the others); ``source`` is the config file's path.
    ``referees`` lists external referees (``host:port``; empty: the arena starts an embedded one) and
    ``admin_token_env`` names the environment variable holding their admin token; ``referee_tls_ca`` the
    certificate file they serve TLS with (or its CA): the arena and its workers then speak TLS to them.
    ``lobby`` is where the lobby listens (``host:port``, port 0: any free one), ``lobby_tls`` the
    (certificate, key) file paths to serve it with TLS, ``no_show_s`` how long a bot's games wait for
    its first worker, and ``remote_in_4p`` False refuses remote bots in the 4-player format (their two seats may be one
    program: the arena cannot see inside another machine). ``blind_seats`` True tells the bots no names (their
    matches are created blind: "seat 0", "seat 1", ...), so a bot cannot throw games to a friend it recognises;
    ``tournament.blind_seats`` sets it, and a config with ``[competition]`` has it on unless set false.
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
    bot_log_bytes: int = BOT_LOG_BYTES
    sprt: SprtSettings | None = None  # format = "sprt" (arena/formats/sprt_run.py); None: a round robin
    lobby: str = DEFAULT_LOBBY
    lobby_tls: tuple[str, str] | None = None
    referee_tls_ca: str | None = None
    no_show_s: int = DEFAULT_NO_SHOW_S
    remote_in_4p: bool = True
    ladder: LadderSettings | None = None  # format = "ladder" (arena/formats/ladder_run.py)
    competition: CompetitionSettings | None = None  # [competition]: strangers submit bots (arena/competition/)
    bot_logs_kept_games: int = BOT_LOGS_KEPT_GAMES  # 0: every game's logs kept
    blind_seats: bool = False  # the bots are told no names (CreateMatch.blind); a competition's default
    twins_together: bool = False  # a duplicate pair's two games may run at once (trusted bots only: run_games)

    @property
    def uses_lobby(self) -> bool:
        """True if some bot plays through the lobby (worker or remote mode), or competitors submit bots
        (the Submission service is served on the lobby's port)."""
        return self.competition is not None or any(b.mode != "per_game" for b in self.bots)

    @property
    def remote_host(self) -> str | None:
        """The lobby's host (no brackets) when workers on other machines may dial it: some ``mode = "remote"``
        bot or a competition (its remote entries register while it runs), and a host that is not
        loopback (``127.0.0.1``, ``::1``, ``localhost``); else None."""
        if self.competition is None and not any(b.mode == "remote" for b in self.bots):
            return None
        host = self.lobby.rpartition(":")[0].strip("[]")
        return None if is_loopback(host) else host

    def fingerprint(self) -> str:
        """SHA-256 (hex) of everything that decides which games are played and how.

        Excludes ``concurrency``, ``output``, ``source``, ``referees``, ``admin_token_env``, ``bot_log_bytes``,
        ``bot_logs_kept_games``, ``blind_seats``, ``twins_together`` and the bots' ``command``/``cwd``/``env``
        (where games are refereed and how a bot is started may change between runs of one tournament; what a
        bot *is* — name and version — may not). Includes the master seed only when the config gives one.
        See :meth:`identity`.
        """
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()

    def league_fingerprint(self) -> str:
        """SHA-256 (hex) of what may never change in one output folder: the :meth:`league_identity`.

        A league grows: bots may come (a new name, or a new version: a new entrant) and go, and
        ``games_per_pairing`` may change; what the games *are* (rules, time control, players, name, a
        fixed master seed) may not.
        """
        return hashlib.sha256(json.dumps(self.league_identity(), sort_keys=True).encode()).hexdigest()

    def league_identity(self) -> LeagueIdentity:
        """:meth:`identity` without the bots and ``games_per_pairing`` (see :meth:`league_fingerprint`)."""
        out: LeagueIdentity = {
            "name": self.name,
            "players": self.players,
            "master_seed": self.master_seed.hex() if self.master_seed else None,
            "rules": self.rules.to_dict(),
            "time_control": dict(sorted(self.time_control.items())),
        }
        if self.sprt:
            out["sprt"] = self.sprt.to_dict()
        return out

    def identity(self) -> ConfigIdentity:
        """The JSON-ready fields the :meth:`fingerprint` is taken of (compare two with :func:`identity_changes`)."""
        league = self.league_identity()
        out: ConfigIdentity = {
            "name": league["name"],
            "players": league["players"],
            "master_seed": league["master_seed"],
            "rules": league["rules"],
            "time_control": league["time_control"],
            "games_per_pairing": self.games_per_pairing,
            "bots": [[b.name, b.version] for b in self.bots],
        }
        if "sprt" in league:
            out["sprt"] = league["sprt"]
        if self.ladder:
            out["ladder"] = self.ladder.to_dict()
        return out


class LeagueIdentity(TypedDict):
    """What may never change in one output folder (JSON, kept in the store's meta table to name what a
    later config changed): the tournament's ``name`` and ``players``, its ``master_seed`` (hex, None
    unless the config fixes one), ``rules`` (:meth:`RuleSet.to_dict`), ``time_control`` (option ->
    milliseconds or count, sorted) and ``sprt`` (:meth:`SprtSettings.to_dict`, only for that format)."""

    name: str
    players: int
    master_seed: str | None
    rules: dict[str, object]
    time_control: dict[str, int]
    sprt: NotRequired[dict[str, object]]


class ConfigIdentity(LeagueIdentity):
    """A :class:`LeagueIdentity` plus what one run of a tournament fixes too: ``games_per_pairing`` and
    the ``bots`` as ``[name, version]`` pairs in config order, and a ladder's budgets and rules (``ladder``,
    only for that format: a league may raise its budgets, so they are no part of the league's identity)."""

    games_per_pairing: int
    bots: list[list[str]]
    ladder: NotRequired[dict[str, float | int | None]]


def _flat_identity(identity: Mapping[str, object]) -> dict[str, object]:
    """An :meth:`TournamentConfig.identity` as config keys -> values (bots by name: ``bots.<name>.version``)."""
    out: dict[str, object] = {}
    for k, v in identity.items():
        if k == "bots" and isinstance(v, list):
            out["bots"] = ", ".join(str(b[0]) for b in v)
            out.update({f"bots.{b[0]}.version": b[1] for b in v})
        elif isinstance(v, Mapping):
            out.update({f"tournament.{k}.{kk}": vv for kk, vv in v.items()})
        else:
            out[f"tournament.{k}"] = v
    return out


def identity_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """What differs between two :meth:`TournamentConfig.identity` values, one entry per config key,
    e.g. ``["tournament.rules.target: 7 -> 8", "bots.node.version: '2' -> '3'"]`` (``unset`` when absent)."""
    a, b = _flat_identity(old), _flat_identity(new)
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key, _UNSET) != b.get(key, _UNSET):
            before = "unset" if key not in a else repr(a[key])
            after = "unset" if key not in b else repr(b[key])
            out.append(f"{key}: {before} -> {after}")
    return out


_UNSET = object()


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
    "bot_log_bytes",
    "bot_logs_kept_games",
    "format",
    "sprt",
    "ladder",
    "lobby",
    "lobby_tls_cert",
    "lobby_tls_key",
    "referee_tls_ca",
    "no_show_s",
    "remote_in_4p",
    "blind_seats",
    "twins_together",
}
#: ``tournament.format``: every pairing plays ``games_per_pairing`` games, or a candidate plays a baseline
#: until the SPRT decides (at most ``games_per_pairing`` games), or the ladder chooses the next duplicate
#: pairs from the ratings so far (``[tournament.ladder]``; ``games_per_pairing`` is not used).
FORMATS = ("round_robin", "sprt", "ladder")
#: ``[tournament.ladder]``: the budgets (games) and the rules the config may set.
_LADDER_INTS = ("per_entrant_per_day", "per_entrant", "total", "new_pairs")
#: The ladder's real-valued rules: the lowest value each takes and whether that value itself is allowed.
_LADDER_NUMBERS: dict[str, tuple[float, bool]] = {"width": (0.0, False), "fair_share": (1.0, True)}
_SPRT_KEYS = {"candidate", "baseline", "elo0", "elo1", "alpha", "beta", "model"}
_TC_KEYS = {f.name for f in fields(TimeControl)}
_BOT_KEYS = {"name", "version", "command", "cwd", "env", "image", "cpus", "memory", "pids", "mode", "workers", "remote",
             "sandbox"}
#: The values of a bot's ``sandbox`` key: bubblewrap's namespaces (the default), or none (a trusted bot).
SANDBOX_KINDS = ("bwrap", "none")
_IMAGE = re.compile(r"[a-z0-9][a-z0-9_./:@-]{0,254}")
_MEMORY = re.compile(r"(\d+)\s*([kmg]?)b?", re.IGNORECASE)


def _int(path: str, key: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, key, "must be a whole number", value)
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"between {lo} and {hi}"
        raise ConfigError(path, key, f"must be {rng}", value)
    return value


def _str(path: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(path, key, "must be a non-empty string", value)
    return value


#: Invisible characters a shown name may hold: the zero-width joiner and non-joiner (some scripts and
#: emoji need them).
_JOINERS = frozenset("\u200c\u200d")


def _shown(path: str, key: str, value: str) -> str:
    """``value``, a name shown inside sentences (the leaderboards, the replays, the terminal).

    :raises ConfigError: for a control or invisible formatting character (Unicode Cc, Cf but the
        joiners): a right-to-left override draws the rest of the sentence backwards, a zero-width space
        makes a lookalike of another name, a newline breaks the terminal's table.
    """
    bad = next((ch for ch in value if unicodedata.category(ch) in ("Cc", "Cf") and ch not in _JOINERS), None)
    if bad is not None:
        raise ConfigError(path, key, f"may not hold a control or invisible formatting character (U+{ord(bad):04X}): "
                          "it would reorder or hide the text around the name where it is shown", value)
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


class _Problems:
    """Collects every :class:`ConfigError` of one file, so :func:`parse_config` reports them all at once."""

    def __init__(self, path: str):
        self.path = path
        self.errors: list[ConfigError] = []

    def add(self, key: str, problem: str, value: object = None, *, show_value: bool = True) -> None:
        """Note one problem at ``key``."""
        self.errors.append(ConfigError(self.path, key, problem, value, show_value=show_value))

    def check(self, fn: Callable[[], T], default: T) -> T:
        """``fn()``, or ``default`` after noting the :class:`ConfigError` it raised."""
        try:
            return fn()
        except ConfigError as e:
            self.errors.append(e)
            return default

    def raise_any(self) -> None:
        """:raises ConfigError: the one problem noted, or :class:`ConfigErrors` holding every one."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(self.errors)


def _unknown(p: _Problems, where: str, data: Mapping[str, object], known: Collection[str]) -> None:
    """Note every key of ``data`` not in ``known``, with a "did you mean" when one is close."""
    for extra in sorted(set(data) - set(known)):
        key = f"{where}.{extra}" if where else extra
        close = difflib.get_close_matches(extra, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys here: {sorted(known)}"
        p.add(key, f"unknown key ({hint})", data[extra])


def parse_config(data: Mapping[str, object], path: str = "<config>", base: Path | None = None) -> TournamentConfig:
    """Validate a decoded TOML document into a :class:`TournamentConfig`.

    Every problem in the document is reported at once (a key whose value is bad is left out of the
    checks that depend on it).

    :param base: folder that relative ``output`` and ``cwd`` paths are resolved against (default: cwd).
    :raises ConfigError: naming the file, key and value of the problem; :class:`ConfigErrors` (a
        subclass) when there are several, one line each.
    """
    base = (base or Path.cwd()).resolve()
    p = _Problems(path)
    _unknown(p, "", data, ("tournament", "bots", "competition"))
    t = data.get("tournament")
    part: _TournamentPart | None = None
    if isinstance(t, dict):
        part = _parse_tournament(p, t, base)
    else:
        p.add("tournament", "missing [tournament] table", t, show_value=t is not None)
    token_env = part.admin_token_env if part else ENV_ADMIN_TOKEN
    bots = _parse_bots(p, data.get("bots"), base, token_env)
    sprt = _parse_sprt(p, t, [b.name for b in bots]) if isinstance(t, dict) else None
    ladder = _parse_ladder(p, t) if isinstance(t, dict) else None
    if part is not None:
        _check_lobby_bots(p, bots, part)
    competition = _parse_competition(p, data["competition"]) if "competition" in data else None
    p.raise_any()
    assert part is not None
    return TournamentConfig(
        part.name,
        part.players,
        part.games_per_pairing,
        part.master_seed,
        part.concurrency,
        part.output,
        part.rules,
        part.time_control,
        bots,
        path,
        part.referees,
        part.admin_token_env,
        part.bot_log_bytes,
        sprt,
        part.lobby,
        part.lobby_tls,
        part.referee_tls_ca,
        part.no_show_s,
        part.remote_in_4p,
        ladder,
        competition,
        part.bot_logs_kept_games,
        competition is not None if part.blind_seats is None else part.blind_seats,
        part.twins_together,
    )


def _check_lobby_bots(p: _Problems, bots: tuple[BotSpec, ...], part: _TournamentPart) -> None:
    """What a bot's mode asks of the tournament: partners are two workers; remote bots may be refused at 4."""
    for k, b in enumerate(bots):
        if b.mode == "remote" and part.players == 4 and not part.remote_in_4p:
            p.add(f"bots[{k}].remote", "this tournament refuses remote bots in the 4-player format "
                  "(tournament.remote_in_4p = false): the arena cannot see whether two seats are one program", True)
        if b.mode == "worker" and part.players == 4 and b.workers == 1:
            p.add(f"bots[{k}].workers", "must be at least 2 at a 4-player table (partners are two workers)", 1)



def _parse_sprt(p: _Problems, t: Mapping[str, object], bots: Sequence[str]) -> SprtSettings | None:
    """``tournament.format`` and ``[tournament.sprt]``: the SPRT settings when the format is ``"sprt"``."""
    fmt = t.get("format", "round_robin")
    raw = t.get("sprt")
    if fmt not in FORMATS:
        p.add("tournament.format", f"must be one of {list(FORMATS)}", fmt)
        return None
    if fmt != "sprt":
        if raw is not None:
            p.add("tournament.sprt", 'is only for format = "sprt"', raw, show_value=False)
        return None
    if not isinstance(raw, dict):
        p.add("tournament.sprt", 'format = "sprt" needs a [tournament.sprt] table (candidate, baseline, ...)', raw)
        return None
    _unknown(p, "tournament.sprt", raw, _SPRT_KEYS)
    for key in ("candidate", "baseline"):
        if raw.get(key) not in bots:
            p.add(f"tournament.sprt.{key}", f"must name one of the bots {list(bots)}", raw.get(key))
    if len(bots) != 2:
        p.add("bots", 'format = "sprt" plays exactly two bots (the candidate and the baseline)', len(bots))
    numbers = {}
    for key, default in (("elo0", 0.0), ("elo1", 5.0), ("alpha", 0.05), ("beta", 0.05)):
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            p.add(f"tournament.sprt.{key}", "must be a number", value)
        numbers[key] = float(value) if not isinstance(value, bool) and isinstance(value, int | float) else default
    from arena.formats.sprt import SprtSettings  # here: numpy and scipy would slow every bot that imports this module

    try:
        return SprtSettings(
            candidate=str(raw.get("candidate")),
            baseline=str(raw.get("baseline")),
            model=raw.get("model", "logistic"),
            **numbers,
        )
    except ValueError as e:
        p.add("tournament.sprt", str(e), raw, show_value=False)
        return None


def _parse_ladder(p: _Problems, t: Mapping[str, Any]) -> LadderSettings | None:
    """``[tournament.ladder]`` when ``tournament.format`` is ``"ladder"``: budgets in games
    (``per_entrant_per_day``, ``per_entrant``, ``total``; each optional) and the rules ``width`` (Elo),
    ``new_pairs`` and ``fair_share`` (arena/formats/ladder.py)."""
    raw = t.get("ladder")
    if t.get("format") != "ladder":
        if raw is not None:
            p.add("tournament.ladder", 'is only for format = "ladder"', raw, show_value=False)
        return None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        p.add("tournament.ladder", "must be a table (per_entrant_per_day, per_entrant, total, width, ...)", raw)
        return None
    _unknown(p, "tournament.ladder", raw, (*_LADDER_INTS, *_LADDER_NUMBERS))
    values: dict[str, Any] = {}
    for key in _LADDER_INTS:
        if key in raw:
            values[key] = p.check(partial(_int, p.path, f"tournament.ladder.{key}", raw[key], 0), None)
        if key != "new_pairs" and values.get(key) == 1:  # a budget of one game allows no pair: nothing, ever
            p.add(f"tournament.ladder.{key}", "must be 0 or at least 2 games (a duplicate pair is two)", 1)
    for key, (lo, inclusive) in _LADDER_NUMBERS.items():
        value = raw.get(key)
        if key not in raw:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            p.add(f"tournament.ladder.{key}", "must be a number", value)
        elif not math.isfinite(value) or value < lo or (value == lo and not inclusive):
            p.add(f"tournament.ladder.{key}", f"must be a finite number {'>=' if inclusive else '>'} {lo:g}", value)
        else:
            values[key] = float(value)
    from arena.formats.ladder import Budget, Rules, Settings  # here: numpy and scipy, as for the SPRT

    budget_keys, rules = ("per_entrant_per_day", "per_entrant", "total"), {}
    for key in ("new_pairs", "width", "fair_share"):
        if values.get(key) is not None:
            rules[key] = values[key]
    try:
        return Settings(Budget(**{k: values.get(k) for k in budget_keys}), Rules(**rules))
    except ValueError as e:
        p.add("tournament.ladder", str(e), raw, show_value=False)
        return None


@dataclass(frozen=True, slots=True)
class _TournamentPart:
    """The ``[tournament]`` table, parsed (placeholders where a value was bad: the run never starts)."""

    name: str
    players: int
    games_per_pairing: int
    master_seed: bytes | None
    concurrency: int
    output: Path
    rules: RuleSet
    time_control: Mapping[str, int]
    referees: tuple[str, ...]
    admin_token_env: str
    bot_log_bytes: int
    lobby: str
    lobby_tls: tuple[str, str] | None
    referee_tls_ca: str | None
    no_show_s: int
    remote_in_4p: bool
    bot_logs_kept_games: int
    blind_seats: bool | None  # None: not set (a competition's default: True; else False)
    twins_together: bool


def _parse_name(path: str, value: object) -> str:
    name = _str(path, "tournament.name", value)
    if any(ch in name for ch in "/\\\x00"):
        raise ConfigError(path, "tournament.name", "may not contain slashes", name)
    return _shown(path, "tournament.name", name)


def _parse_players(path: str, value: object) -> int:
    if value not in (2, 4) or isinstance(value, bool):
        raise ConfigError(path, "tournament.players", "must be 2 or 4", value)
    return int(value)


def _parse_gpp(path: str, value: object) -> int:
    gpp = _int(path, "tournament.games_per_pairing", value, 2, MAX_GAMES_PER_PAIRING)
    if gpp % 2:
        raise ConfigError(
            path,
            "tournament.games_per_pairing",
            "must be even: games are played in duplicate pairs (same deal, sides swapped)",
            gpp,
        )
    return gpp


def _parse_seed(path: str, raw: object) -> bytes | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ConfigError(path, "tournament.master_seed", "must be a string of 64 hex digits", raw)
    try:
        return parse_seed(raw)
    except ValueError:
        raise ConfigError(path, "tournament.master_seed", "must be 64 hex digits (32 bytes)", raw) from None


def _parse_referees(p: _Problems, refs_raw: object) -> tuple[str, ...]:
    if not isinstance(refs_raw, list) or not all(isinstance(r, str) for r in refs_raw):
        p.add("tournament.referees", 'must be a list of "host:port" strings', refs_raw)
        return ()
    referees: list[str] = []
    for k, r in enumerate(refs_raw):
        try:
            addr = parse_address(r)
        except ValueError as e:
            p.add(f"tournament.referees[{k}]", str(e), r)
            continue
        if addr in referees:
            p.add(f"tournament.referees[{k}]", "listed twice", r)
        referees.append(addr)
    return tuple(referees)


def _parse_token_env(path: str, value: object) -> str:
    token_env = _str(path, "tournament.admin_token_env", value)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token_env):
        raise ConfigError(path, "tournament.admin_token_env", "must be an environment variable name", token_env)
    return token_env


def _parse_rules(p: _Problems, rules_raw: object, players: int) -> RuleSet:
    """The rule options (checked by :class:`RuleSet`, and key by key for what the protocol can carry)."""
    default = RuleSet.from_dict({"players": players})
    if not isinstance(rules_raw, dict):
        p.add("tournament.rules", "must be a table of rule options", rules_raw)
        return default
    n = len(p.errors)
    _unknown(p, "tournament.rules", rules_raw, [f.name for f in fields(RuleSet)])
    if "players" in rules_raw and rules_raw["players"] != players:
        p.add("tournament.rules.players", f"disagrees with tournament.players = {players}", rules_raw["players"])
    if len(p.errors) > n:
        return default
    try:
        rules = RuleSet.from_dict({**rules_raw, "players": players})
    except (TypeError, ValueError) as e:
        p.add("tournament.rules", str(e), rules_raw)
        return default
    for k, v in rules_raw.items():  # what the protocol cannot carry (e.g. a target beyond int32), key by key
        try:
            wire.rules_to_pb(RuleSet.from_dict({k: v, "players": players}))
        except (TypeError, ValueError, OverflowError) as e:
            p.add(f"tournament.rules.{k}", f"the protocol cannot carry it: {e}", v)
    return rules


def _parse_time_control(p: _Problems, tc_raw: object) -> dict[str, int]:
    """The time-control options the config sets (each checked by the referee's own validation)."""
    if not isinstance(tc_raw, dict):
        p.add("tournament.time_control", "must be a table", tc_raw)
        return {}
    _unknown(p, "tournament.time_control", tc_raw, _TC_KEYS)
    tc: dict[str, int] = {}
    for k, v in sorted(tc_raw.items()):
        if k not in _TC_KEYS:
            continue
        key = f"tournament.time_control.{k}"
        value = p.check(partial(_int, p.path, key, v, 1, MAX_TIME_CONTROL), None)
        if value is None:
            continue
        try:  # the referee's own validation, and what the protocol can carry
            wire.time_control_to_pb(TimeControl(**{k: value}))
        except (TypeError, ValueError, OverflowError) as e:
            p.add(key, str(e), value)
            continue
        tc[k] = value
    return tc


def _parse_tournament(p: _Problems, t: Mapping[str, object], base: Path) -> _TournamentPart:
    """The ``[tournament]`` table; problems are noted in ``p``."""
    path = p.path
    _unknown(p, "tournament", t, _TOURNAMENT_KEYS)
    name = p.check(lambda: _parse_name(path, t.get("name")), "?")
    players = p.check(lambda: _parse_players(path, t.get("players", 4)), 4)
    out_raw = p.check(lambda: _str(path, "tournament.output", t.get("output", f"arena-out/{name}")), ".")
    return _TournamentPart(
        name=name,
        players=players,
        games_per_pairing=p.check(lambda: _parse_gpp(path, t.get("games_per_pairing", 2)), 2),
        master_seed=p.check(lambda: _parse_seed(path, t.get("master_seed")), None),
        concurrency=p.check(lambda: _int(path, "tournament.concurrency", t.get("concurrency", 1), 1, 256), 1),
        output=(base / out_raw).resolve(),
        rules=_parse_rules(p, t.get("rules", {}), players),
        time_control=_parse_time_control(p, t.get("time_control", {})),
        referees=_parse_referees(p, t.get("referees", [])),
        admin_token_env=p.check(
            lambda: _parse_token_env(path, t.get("admin_token_env", ENV_ADMIN_TOKEN)), ENV_ADMIN_TOKEN
        ),
        bot_log_bytes=p.check(
            lambda: _int(path, "tournament.bot_log_bytes", t.get("bot_log_bytes", BOT_LOG_BYTES), 1024), 0
        ),
        lobby=p.check(lambda: _parse_lobby(path, t.get("lobby", DEFAULT_LOBBY)), DEFAULT_LOBBY),
        lobby_tls=_parse_lobby_tls(p, t, base),
        referee_tls_ca=_parse_referee_tls_ca(p, t, base),
        no_show_s=p.check(
            lambda: _int(path, "tournament.no_show_s", t.get("no_show_s", DEFAULT_NO_SHOW_S), 1, 30 * 24 * 3600), 1
        ),
        remote_in_4p=p.check(lambda: _bool(path, "tournament.remote_in_4p", t.get("remote_in_4p", True)), True),
        bot_logs_kept_games=p.check(lambda: _int(path, "tournament.bot_logs_kept_games",
                                                 t.get("bot_logs_kept_games", BOT_LOGS_KEPT_GAMES), 0), 0),
        blind_seats=p.check(lambda: _bool(path, "tournament.blind_seats", t["blind_seats"]), None)
        if "blind_seats" in t else None,
        twins_together=p.check(lambda: _bool(path, "tournament.twins_together", t.get("twins_together", False)), False),
    )


@dataclass(frozen=True, slots=True)
class CompetitionSettings:
    """The ``[competition]`` table: strangers submit their own bots (docs/competition.md).

    Limits: ``submissions_per_day`` per competitor (UTC days), ``in_play`` entrants per competitor
    scheduled at once (older versions retire from scheduling, their games kept), ``versions_kept``
    accepted versions per competitor whose images docker keeps (past it the oldest retired one, not the
    competitor's selected final entry, has its image removed: no longer selectable), ``upload_bytes`` of
    one archive, ``unpacked_bytes`` and ``files`` of its contents, ``build_s`` seconds of one image
    build, ``image_bytes`` of the built image. ``base_python`` / ``base_node`` replace the official
    base images of builds (``arena bots build --base``; offline hosts: docker/base-image.sh).
    ``cpus`` / ``memory_mb`` are the submitted bots' container limits. Images are tagged
    ``IMAGE_PREFIX/KEY/NAME:VERSION`` (KEY: the output folder's run key,
    :func:`arena.competition.pipeline.submission_tag`). ``checks``: the conformance checks of the validation episode
    (empty: every per-game check; ``python -m sdk.conformance --list``). ``image_upload_bytes``: the
    upload limit of a prebuilt image (``docker save``) instead of ``upload_bytes``. ``image_files``: most
    files, folders and links the image's own layers (above the build's base) may hold, and a build step
    may make: empty files take no bytes but each takes one of the host disk's inodes. ``build_reaches``:
    the IPv4 networks (``10.1.2.3/32``) of the private network that a build may reach all the same, a
    package registry's mirror or a proxy of the host's (its build network drops every other private,
    link-local or carrier-grade NAT address: :data:`arena.hosting.sandbox.PRIVATE_NETS`).
    ``refused_per_day``: a competitor's uploads refused (not a bot, an entry that is no file, a name and version
    taken, over the upload limit) or whose call ended before the arena answered (cancelled while sent or taken
    in: each is counted from its header on until kept, :meth:`arena.competition.desk.Desk.begin_upload`) a UTC
    day, past which they are not taken in until the next day: each costs the server disk writes and maybe
    an unpacking, and a refused one counts in no other limit. ``reads_per_minute``: a competitor's reads (their
    submissions, games, seat logs and ``/me`` pages) a minute, a quarter of it at once, on each door
    (:mod:`arena.competition.reads`).
    """

    submissions_per_day: int = 5
    in_play: int = 1
    versions_kept: int = 5
    upload_bytes: int = 8 * 1024 * 1024
    unpacked_bytes: int = 64 * 1024 * 1024
    files: int = 2000
    build_s: int = 600
    image_bytes: int = 2 * 1024 * 1024 * 1024
    base_python: str | None = None
    base_node: str | None = None
    cpus: float = 1.0
    memory_mb: int = 512
    image_prefix: str = "allfours-submissions"
    checks: tuple[str, ...] = ()
    image_upload_bytes: int = 512 * 1024 * 1024
    image_files: int = 200_000
    build_reaches: tuple[str, ...] = ()
    refused_per_day: int = 50
    reads_per_minute: int = DEFAULT_READS_PER_MINUTE


#: ``[competition]``'s whole-number limits: (key, least, most).
_COMPETITION_INTS = (
    ("submissions_per_day", 1, 10_000),
    ("in_play", 1, 100),
    ("versions_kept", 1, 1000),
    ("upload_bytes", 1024, 1024**3),
    ("unpacked_bytes", 1024, 16 * 1024**3),
    ("files", 1, 1_000_000),
    ("build_s", 10, 24 * 3600),
    ("image_bytes", 1024**2, 64 * 1024**3),
    ("memory_mb", 32, 65536),
    ("image_upload_bytes", 1024, 64 * 1024**3),
    ("image_files", 1000, 10_000_000),
    ("refused_per_day", 1, 100_000),
    ("reads_per_minute", 1, 1_000_000),
)


def _parse_competition(p: _Problems, raw: object) -> CompetitionSettings | None:
    """The ``[competition]`` table (its keys: :class:`CompetitionSettings`); problems are noted in ``p``."""
    if not isinstance(raw, dict):
        p.add("competition", "must be a table", raw)
        return None
    _unknown(p, "competition", raw,
             {k for k, _, _ in _COMPETITION_INTS}
             | {"base_python", "base_node", "cpus", "image_prefix", "checks", "build_reaches"})
    out: dict[str, Any] = {}
    for key, lo, hi in _COMPETITION_INTS:
        if key in raw:
            out[key] = p.check(partial(_int, p.path, f"competition.{key}", raw[key], lo, hi), lo)
    checks = raw.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, str) and c.isprintable() for c in checks):
        p.add("competition.checks", "must be a list of conformance check names (python -m sdk.conformance --list)",
              checks)
        checks = []
    out["checks"] = tuple(checks)
    out["build_reaches"] = _build_reaches(p, raw.get("build_reaches", []))
    for key in ("base_python", "base_node", "image_prefix"):
        if key in raw:
            value = raw[key]
            if not isinstance(value, str) or not _IMAGE.fullmatch(value):
                p.add(f"competition.{key}", "must be a docker image name such as debian-python:1", value)
            out[key] = str(value)
    cpus = raw.get("cpus", 1.0)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0.05 <= cpus <= 64:
        p.add("competition.cpus", "must be a number of cores between 0.05 and 64", cpus)
        cpus = 1.0
    return CompetitionSettings(**out, cpus=float(cpus))


def _build_reaches(p: _Problems, raw: object) -> tuple[str, ...]:
    """``competition.build_reaches``: IPv4 networks, each as ``ipaddress`` writes it (``10.1.2.3/32``; a
    bare address is its ``/32``); a problem noted in ``p`` (and none kept) when one is not."""
    import ipaddress

    nets: list[str] = []
    for item in raw if isinstance(raw, list) else [None]:
        try:
            if not isinstance(item, str):
                raise ValueError
            nets.append(str(ipaddress.IPv4Network(item)))
        except ValueError:
            p.add("competition.build_reaches",
                  "must be a list of IPv4 networks a build may reach, such as \"10.1.2.3/32\" (host bits zero)",
                  raw if item is None else item)
            return ()
    return tuple(nets)


def _bool(path: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, key, "must be true or false", value)
    return value


def _parse_lobby(path: str, value: object) -> str:
    lobby = _str(path, "tournament.lobby", value)
    host, sep, port = lobby.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535 or any(c.isspace() for c in lobby):
        raise ConfigError(path, "tournament.lobby", 'must be "host:port" (port 0: any free one)', lobby)
    return lobby


def _parse_lobby_tls(p: _Problems, t: Mapping[str, object], base: Path) -> tuple[str, str] | None:
    """``lobby_tls_cert`` and ``lobby_tls_key`` (both or neither), resolved against the config's folder."""
    cert, key = t.get("lobby_tls_cert"), t.get("lobby_tls_key")
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        missing = "tournament.lobby_tls_cert" if cert is None else "tournament.lobby_tls_key"
        p.add(missing, "lobby_tls_cert and lobby_tls_key go together", show_value=False)
        return None
    pair = (
        p.check(lambda: str((base / _str(p.path, "tournament.lobby_tls_cert", cert)).resolve()), ""),
        p.check(lambda: str((base / _str(p.path, "tournament.lobby_tls_key", key)).resolve()), ""),
    )
    return pair if all(pair) else None


def _parse_referee_tls_ca(p: _Problems, t: Mapping[str, object], base: Path) -> str | None:
    """``referee_tls_ca``: the external referees' certificate (or CA) file, resolved against the config's
    folder (the embedded referee speaks plaintext on this machine whatever it says)."""
    ca = t.get("referee_tls_ca")
    if ca is None:
        return None
    return p.check(lambda: str((base / _str(p.path, "tournament.referee_tls_ca", ca)).resolve()), None)


def _parse_command(p: _Problems, where: str, cmd: object, mode: str) -> tuple[str, ...]:
    if mode == "remote":
        if cmd is not None:
            p.add(f"{where}.command", "a remote bot has no command (its workers dial the lobby)", cmd)
        return ()
    if not isinstance(cmd, list) or not cmd or not all(isinstance(x, str) and x for x in cmd):
        p.add(f"{where}.command", "must be a non-empty list of strings (argv, no shell)", cmd)
        return ()
    for i, arg in enumerate(cmd):
        try:
            names = [n for _, n in _placeholder_fields(arg) if n in PER_GAME_PLACEHOLDERS]
        except ValueError as e:
            p.add(f"{where}.command[{i}]", str(e), arg)
            continue
        if names and mode == "worker":
            p.add(f"{where}.command[{i}]", f"{{{names[0]}}} is per game, but a worker gets its seats from the "
                  'lobby: drop it, or set mode = "per_game"', arg)
    return tuple(cmd)


def _parse_mode(p: _Problems, where: str, b: Mapping[str, object]) -> tuple[str, int]:
    """A bot's ``mode`` (``remote = true`` is ``mode = "remote"``) and ``workers`` (0: automatic)."""
    remote = p.check(lambda: _bool(p.path, f"{where}.remote", b.get("remote", False)), False)
    mode = b.get("mode", "remote" if remote else "per_game")
    if mode not in BOT_MODES:
        p.add(f"{where}.mode", f"must be one of {list(BOT_MODES)}", mode)
        mode = "per_game"
    elif remote and mode != "remote":
        p.add(f"{where}.mode", "disagrees with remote = true", mode)
    workers = 0
    if "workers" in b:
        workers = p.check(lambda: _int(p.path, f"{where}.workers", b["workers"], 1, 64), 0)
        if mode != "worker":
            p.add(f"{where}.workers", 'is for mode = "worker" (a pool of local workers)', b["workers"])
    return str(mode), workers


def _parse_bot(p: _Problems, where: str, b: Mapping[str, object], base: Path, token_env: str) -> BotSpec:
    """One ``[[bots]]`` entry; problems are noted in ``p``."""
    path = p.path
    _unknown(p, where, b, _BOT_KEYS)
    bname = p.check(lambda: _shown(path, f"{where}.name", _str(path, f"{where}.name", b.get("name"))), "")
    version = b.get("version", "0")
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        p.add(f"{where}.version", "must be a string", version)
    else:
        p.check(lambda: _shown(path, f"{where}.version", str(version)), "")
    mode, workers = _parse_mode(p, where, b)
    if "image" in b:
        if mode == "remote":
            p.add(f"{where}.image", "a remote bot runs elsewhere: drop image or remote", b["image"])
        image, limits = p.check(lambda: _container(path, where, b), ("", Limits()))
        if "sandbox" in b:
            p.add(f"{where}.sandbox", "a container bot is always sandboxed (docs/deploy.md): drop it", b["sandbox"])
        env = b.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            p.add(f"{where}.env", "must be a table of string values", env)
            env = {}
        return BotSpec(bname, str(version), (), None, dict(env), image, limits, mode=mode, workers=workers)
    limits = PROCESS_LIMITS
    for key in ("cpus", "memory", "pids"):
        if key in b and mode == "remote":
            p.add(f"{where}.{key}", "a remote bot runs elsewhere: drop it (its host sets its limits)", b[key])
    if mode != "remote":
        limits = p.check(lambda: _memory_and_pids(path, where, b, _cpus(path, where, b, limits)), limits)
    cmd = _parse_command(p, where, b.get("command"), mode)
    cwd = b.get("cwd")
    if cwd is not None:
        cwd = p.check(lambda: str((base / _str(path, f"{where}.cwd", cwd)).resolve()), None)
    env = b.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        p.add(f"{where}.env", "must be a table of string values", env)
        env = {}
    for secret in dict.fromkeys(n + suffix for n in (ENV_ADMIN_TOKEN, token_env) for suffix in ("", FILE_SUFFIX)):
        if secret in env:
            p.add(
                f"{where}.env.{secret}",
                "a bot may not be given the referees' admin token (it could read every match's cards)",
                show_value=False,
            )
    sandbox = b.get("sandbox", "bwrap")
    if sandbox not in SANDBOX_KINDS:
        p.add(f"{where}.sandbox", f"must be one of {list(SANDBOX_KINDS)} (\"none\": a trusted bot, unsandboxed)",
              sandbox)
    elif mode == "remote" and "sandbox" in b:
        p.add(f"{where}.sandbox", "a remote bot runs elsewhere: drop sandbox or remote", sandbox)
    return BotSpec(bname, str(version), cmd, cwd, dict(env), limits=limits, mode=mode, workers=workers,
                   sandbox=str(sandbox))


def _parse_bots(p: _Problems, bots_raw: object, base: Path, token_env: str) -> tuple[BotSpec, ...]:
    """The ``[[bots]]`` entries (at least two, unique names); problems are noted in ``p``."""
    if not isinstance(bots_raw, list) or len(bots_raw) < 2:
        shown = None if bots_raw is None else len(bots_raw) if isinstance(bots_raw, list) else bots_raw
        p.add("bots", "need at least two [[bots]] entries", shown)
        if not isinstance(bots_raw, list):
            return ()
    bots: list[tuple[str, BotSpec]] = []
    for k, b in enumerate(bots_raw):
        where = f"bots[{k}]"
        if not isinstance(b, dict):
            p.add(where, "must be a table", b)
            continue
        bots.append((where, _parse_bot(p, where, b, base, token_env)))
    return _entrants(p, bots)


def _entrants(p: _Problems, bots: list[tuple[str, BotSpec]]) -> tuple[BotSpec, ...]:
    """The bots as entrants: a name given once is the entrant's name; a name given with several
    versions (the SPRT's candidate and baseline, a league's old and new) makes one entrant per version,
    named ``name@version`` (e.g. ``heuristic@2``) in results, ratings, tokens and logs. The same
    name and version twice is noted in ``p`` (``duplicate bot name``)."""
    versions: dict[str, list[str]] = {}
    for where, bot in bots:
        if bot.name and bot.version in versions.setdefault(bot.name, []):
            p.add(f"{where}.name", f"duplicate bot name (and version {bot.version!r}: give each a version "
                                   "of its own to enter both, as name@version)", bot.name)
        versions.setdefault(bot.name, []).append(bot.version)
    out: list[BotSpec] = []
    for _, bot in bots:
        if len(set(versions.get(bot.name, []))) > 1:
            bot = replace(bot, name=f"{bot.name}@{bot.version}")
        out.append(bot)
    return tuple(out)


def _container(path: str, where: str, b: Mapping[str, object]) -> tuple[str, Limits]:
    """A container bot's image and limits (``cpus`` 0.05-64, ``memory`` MiB as a number or ``"512m"``/``"1g"``
    32 MiB-64 GiB, ``pids`` 8-4096); ``command`` and ``cwd`` are refused beside ``image``."""
    for key in ("command", "cwd"):
        if key in b:
            raise ConfigError(path, f"{where}.{key}", "a container bot runs its image's entry point: drop it", b[key])
    image = b["image"]
    if not isinstance(image, str) or not _IMAGE.fullmatch(image):
        raise ConfigError(path, f"{where}.image", "must be a docker image name such as allfours-bots/mybot:1", image)
    return image, _memory_and_pids(path, where, b, _cpus(path, where, b, Limits()))


def _cpus(path: str, where: str, b: Mapping[str, object], limits: Limits) -> Limits:
    """``limits`` with a bot's ``cpus`` (a CPU quota in cores, 0.05-64) when it gives one: a container's,
    or a process bot's cgroup's."""
    cpus = b.get("cpus", limits.cpus)
    if isinstance(cpus, bool) or not isinstance(cpus, int | float) or not 0.05 <= cpus <= 64:
        raise ConfigError(path, f"{where}.cpus", "must be a number of cores between 0.05 and 64", cpus)
    return replace(limits, cpus=float(cpus))


def _memory_and_pids(path: str, where: str, b: Mapping[str, object], limits: Limits) -> Limits:
    """``limits`` with a bot's ``memory`` (MiB as a number or ``"512m"``/``"1g"``, 32 MiB-64 GiB) and
    ``pids`` (8-4096) when it gives them: a container's limits, or a process bot's cgroup's."""
    memory = b.get("memory", limits.memory_mb)
    m = _MEMORY.fullmatch(memory.strip()) if isinstance(memory, str) else None
    if m:
        memory = int(m.group(1)) * {"": 1, "k": 1 / 1024, "m": 1, "g": 1024}[m.group(2).lower()]
    if isinstance(memory, bool) or not isinstance(memory, int | float) or not 32 <= memory <= 65536:
        raise ConfigError(path, f"{where}.memory", "must be MiB between 32 and 65536 (a number, or \"512m\", \"1g\")",
                          b.get("memory"))
    pids = _int(path, f"{where}.pids", b.get("pids", limits.pids), 8, 4096)
    return replace(limits, memory_mb=int(memory), pids=pids)


def read_config_file(config: TournamentConfig, key: str, path: str) -> bytes:
    """The bytes of the PEM file at ``path`` that the config's ``tournament.<key>`` names: a private key
    when ``key`` ends in ``_key`` (``lobby_tls_key``), else a certificate (``lobby_tls_cert``, ``referee_tls_ca``).

    :raises ConfigError: naming ``key`` when the file cannot be read or holds no PEM certificate (or key)
        line: gRPC's own error for it is several lines ending in "Failed to bind to address".
    """
    marker, what = (PEM_PRIVATE_KEY, "private key") if key.endswith("_key") else (PEM_CERTIFICATE, "certificate")
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(config.source, f"tournament.{key}", f"cannot read it: {e.strerror}", path) from None
    if marker not in data:
        raise ConfigError(config.source, f"tournament.{key}",
                          f"is not a PEM {what} (no line with {marker.decode()!r})", path)
    return data


def check_bot_cwds(config: TournamentConfig, output: Path, arena_cwd: Path | None = None) -> None:
    """Refuse to start any bot inside the output folder (it holds the SQLite file with the master seed).

    A bot without ``cwd`` starts in the arena's working directory (``arena_cwd``, default the current one).

    :raises ConfigError: naming the first bot whose working directory is ``output`` or below it.
    """
    out = Path(output).resolve()
    here = (arena_cwd or Path.cwd()).resolve()
    for k, b in enumerate(config.bots):
        if b.in_container or b.mode == "remote":
            continue  # a container sees none of the host's folders; a remote bot runs elsewhere
        cwd = Path(b.cwd).resolve() if b.cwd else here
        if b.jailed and (cwd == out or cwd in out.parents):
            raise ConfigError(config.source, f"bots[{k}].cwd",
                              f"holds the output folder {out} (the master seed, the records): a sandboxed bot sees "
                              "its whole working directory; give it a folder of its own", b.cwd or str(here))
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
