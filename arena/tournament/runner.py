"""Playing a tournament: open (or resume) it, play the pending games, store each result once.

The loop is independent of how a game is played: a :class:`GameRunner` turns one
:class:`~arena.tournament.schedule.ScheduledGame` into a :class:`~arena.tournament.store.GameResult`. The real one,
:class:`arena.play.game.GrpcGameRunner`, drives the referee's Admin service and launches the bot
processes; :class:`SimulatedRunner` (no referee, no bots) is for tests, resume drills and dry runs.

Results are written by the main thread as games finish, so a kill at any moment loses at most the
games in flight (they are replayed from their scheduled seeds on the next run) and never doubles one.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, runtime_checkable

from arena.config import BotSpec, TournamentConfig, identity_changes
from arena.ratings.elo import expected_score
from arena.tournament.result import GameResult, Unplayed, forfeit_reason, forfeit_result
from arena.tournament.schedule import ScheduledGame, blind_order, make_schedule
from arena.tournament.store import Store, StoreMismatch, recovery_advice
from referee.dealing import commitment, fresh_seed
from referee.outcome import Termination
from referee.rules.seats import side_of

if TYPE_CHECKING:
    from arena.formats.duplicate import PrecisionFacts

DB_NAME = "arena.sqlite"
COMMITMENT_FILE = "commitment.json"
#: The meta key of the tournament's public facts (JSON, :func:`public_facts`, ``entrants``: every entrant's
#: label, as ratings.json lists them, and ``active``: those the config schedules now), read by ``arena web``.
FACTS_KEY = "public_facts"
#: The store's meta key ``arena serve`` sets on a league's store: its master seed is never revealed by ``serve``.
LEAGUE_KEY = "served_as_league"
#: The store's meta key ``arena competition close`` sets (the time, seconds) when it reveals a league's master
#: seed (with ``finished_at``): the league is over for good, and no game is dealt from its seed again
#: (:func:`open_tournament` refuses the folder: :class:`LeagueClosed`).
CLOSED_KEY = "league_closed"
#: The meta key of a ladder tournament's board (JSON, :meth:`arena.formats.ladder_run.LadderRun.board`):
#: standings, why the last pairs were chosen, why it stopped; published with the ratings and on the web.
LADDER_KEY = "ladder_board"
#: The meta key of the bots ``arena serve`` leaves out (JSON, a list of :class:`LeftOut`, by bot; written by
#: :meth:`arena.tournament.league.League.open` and after each game that leaves one out): published with the
#: ratings (``tournament.left_out``), on the web's board and the terminal's (:func:`left_out_facts` reads it).
LEFT_OUT_KEY = "left_out"
#: The meta key of the remote bots whose games wait for their first worker (JSON, a sorted list of labels:
#: :meth:`Starter.waiting`, written by :func:`run_games` whenever it changes): the web's board marks them and
#: a competitor's page says so (:func:`waiting_facts` reads it).
WAITING_KEY = "waiting_for_workers"


class LeftOut(TypedDict):
    """A bot ``arena serve`` leaves out (its games not played until a reload checks it again) and ``why``:
    one public line, at most :data:`arena.tournament.league.WHY_CHARS` characters
    (:func:`arena.tournament.league.public_why`)."""

    bot: str
    why: str


class TournamentFacts(TypedDict, total=False):
    """A tournament's public facts, JSON (ratings.json's ``tournament``, the pages): :func:`public_facts`
    (``name``, ``players``, ``games_per_pairing``, ``bots`` {name: version}: the store's facts and the
    publication's, {label: version} of every entrant, ``rules``,
    ``config_fingerprint``, ``commitment``, ``scheduled``, ``blind_seats``, ``format`` for a ladder), what the
    store and the publication add (``entrants``, ``active``, ``unsandboxed``, ``remote``, ``master_seed`` once revealed,
    ``played``, a ladder's board, the SPRT's state, ``failures`` per bot, ``precision``). Every key is optional to a
    reader: a page may show a folder whose tournament has not stored its facts yet."""

    name: str
    players: int
    games_per_pairing: int
    bots: dict[str, str]
    rules: dict[str, object]
    config_fingerprint: str
    commitment: str | None  # None on a page of a folder whose seed is not committed yet
    scheduled: int | None
    blind_seats: bool  # the bots are told no names, and the pages name no entrant of a running game
    format: str
    entrants: list[str]
    unsandboxed: list[str]
    active: list[str]  # the entrants the config schedules now
    remote: list[str]  # the remote ones among them: their pairs' second games are dealt on their own
    master_seed: str | None
    league: bool  # served by ``arena serve``: the master seed stays secret (absent: ``arena run``)
    league_closed: bool  # a league closed by ``arena competition close``: its master seed revealed, no more games
    played: int
    ladder: dict[str, object]
    sprt: dict[str, object]
    failures: dict[str, dict[str, int]]
    precision: PrecisionFacts
    left_out: list[LeftOut]  # arena serve: the bots left out, each with its one-line reason (none: absent)
    waiting: list[str]  # the remote bots whose games wait for their first worker (WAITING_KEY; none: absent)
    # a competition's disqualified entrants, ``why`` "disqualified: REASON": not rated (arena/report/disqualified.py)
    disqualified: list[LeftOut]


def waiting_facts(raw: str | None) -> list[str]:
    """The remote bots (labels) whose games wait for their first worker, as the store's :data:`WAITING_KEY`
    holds them (``raw``; none when absent or not a list of strings): the one reader of the list."""
    try:
        rows = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [r for r in rows if isinstance(r, str)] if isinstance(rows, list) else []


def left_out_facts(raw: str | None) -> list[LeftOut]:
    """The bots left out, as the store's :data:`LEFT_OUT_KEY` holds them (``raw``; none when absent or not a
    list of ``{"bot", "why"}``): the one reader of the list for the publication and the web."""
    try:
        rows = json.loads(raw) if raw else []
    except ValueError:
        return []
    if not isinstance(rows, list):
        return []
    return [{"bot": r["bot"], "why": r["why"]} for r in rows
            if isinstance(r, dict) and isinstance(r.get("bot"), str) and isinstance(r.get("why"), str)]


def public_facts(config: TournamentConfig, commit: str, scheduled: int) -> TournamentFacts:
    """JSON-ready public facts of a tournament (never the master seed): name, players,
    games_per_pairing, bots {name: version}, rules, config_fingerprint, commitment, scheduled (a
    ladder's: its total budget, or None), ``blind_seats`` (:mod:`arena.report.live`, Blind) and ``format``
    ("ladder" for a ladder)."""
    if config.ladder is not None:
        return {**public_facts(replace(config, ladder=None), commit, 0), "format": "ladder",
                "scheduled": config.ladder.budget.total, "config_fingerprint": config.fingerprint()}
    return {
        "name": config.name,
        "players": config.players,
        "games_per_pairing": config.games_per_pairing,
        "bots": {b.name: b.version for b in config.bots},
        "rules": config.rules.to_dict(),
        "config_fingerprint": config.fingerprint(),
        "commitment": commit,
        "scheduled": scheduled,
        "blind_seats": config.blind_seats,
    }


class GameRunner(Protocol):
    """Plays one scheduled game to its end and returns the result.

    Implementations must be safe to call from several threads at once and must turn bot failures
    into results (a side that fails loses, with a reason); they raise only when the game could not
    be played at all (e.g. the referee is unreachable).
    """

    def play(self, game: ScheduledGame) -> GameResult:
        """Play ``game``; see the class docstring."""
        ...


@dataclass(frozen=True, slots=True)
class Tournament:
    """An opened tournament: its config, store, master seed (32 bytes), commitment, the schedule of the
    config's bots, ``entrants`` (label -> bot, the config's bots) and ``labels`` (every entrant ever
    entered in this output folder, in order of arrival: those no longer in the config keep their results)."""

    config: TournamentConfig
    store: Store
    master_seed: bytes
    commitment: str
    schedule: list[ScheduledGame]
    entrants: Mapping[str, BotSpec]
    labels: list[str]
    #: The schedule in the order it is played (:func:`pending_games`): the schedule's own, or a blind
    #: tournament's (``blind_seats``) blind order, made once when it is opened (tens of milliseconds for a
    #: schedule of 20,000 games, and a league asks for its pending games every half second while idle).
    play_order: list[ScheduledGame]
    #: Every entrant's version, by label (``labels``'s order): those no longer in the config too.
    versions: Mapping[str, str]


def open_tournament(config: TournamentConfig, output: Path | None = None, *, closing: bool = False) -> Tournament:
    """Open or resume the tournament in ``output`` (default ``config.output``).

    The master seed is the config's, else the one stored by an earlier run, else a fresh one from
    ``secrets``. Before any game is played its commitment is written to ``<output>/commitment.json``.
    A new output folder is created with permissions 0700 (the database in it holds the master seed).

    A league grows (docs/arena.md, "A league that grows"): bots may be added, removed or given a new
    version (a new entrant) and ``games_per_pairing`` may change; the schedule then holds the games of
    the config's entrants, and only those without a stored result are pending.

    :raises arena.tournament.store.StoreMismatch: if ``output`` holds a different tournament (rules, time control,
        players, name or a fixed master seed differ); the message names each field that changed (e.g.
        ``tournament.rules.target: 7 -> 8``). Also (:class:`StoreLost`) if ``output`` holds a published
        tournament (:func:`published_files`) but its store is missing or holds none (emptied, or its WAL lost
        after a kill), or one whose commitment is not the published ``commitment.json``'s: a new master
        seed would be drawn and every game played again under it.
    :raises LeagueClosed: ``output`` holds a league whose master seed ``arena competition close`` revealed
        (:func:`closed_league`), unless ``closing`` (that command's own publication, which plays nothing).
    """
    out = Path(output or config.output)
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not (out / DB_NAME).exists():
        _check_nothing_published(out, "is missing")  # before the store is made again: nothing is written
    store = Store(out / DB_NAME)
    closed = None if closing else _closed_line(store, out)
    if closed is not None:  # its seed is published: no game is dealt from it again
        store.close()
        raise LeagueClosed(closed)
    seed = _claim_seed(store, config, out)
    commit = commitment(seed)
    try:
        _write_commitment(out, config, commit)
        every = store.entrants([(b.name, b.version) for b in config.bots])
    except BaseException:
        store.close()
        raise
    spec = {(b.name, b.version): b for b in config.bots}
    active = [e for e in every if (e.name, e.version) in spec]
    schedule = [] if config.ladder is not None else make_schedule(  # a ladder chooses its games as it goes
        config.name,
        [e.label for e in active],
        config.games_per_pairing,
        config.players,
        seed,
        numbers=[e.number for e in active],
        independent={e.label for e in active if spec[(e.name, e.version)].mode == "remote"},
    )
    labels = [e.label for e in every]
    versions = {e.label: e.version for e in every}
    facts = {**public_facts(config, commit, scheduled_count(schedule, store)), "bots": versions, "entrants": labels,
             "active": [e.label for e in active]}
    store.set_meta(FACTS_KEY, json.dumps(facts, sort_keys=True))
    store.set_meta(WAITING_KEY, "[]")  # a former run's list: this run's loop writes its own (no game: none)
    entrants = {e.label: spec[(e.name, e.version)] for e in active}
    order = blind_order(schedule, seed) if config.blind_seats else schedule
    return Tournament(config, store, seed, commit, schedule, entrants, labels, order, versions)


def scheduled_count(schedule: Sequence[ScheduledGame], store: Store) -> int:
    """The games the tournament's progress counts (``tournament.scheduled``): ``schedule``'s, and the stored
    games outside it (a league that grew: those of entrants, or pairs, no longer scheduled, which ``played``
    counts too). Only ``schedule``'s, the board said "20 of 12 games played" once a version retired."""
    ids = {g.game_id for g in schedule}
    return len(schedule) + sum(1 for game_id in store.stored_ids() if game_id not in ids)


def pending_games(t: Tournament) -> list[ScheduledGame]:
    """The games of ``t``'s schedule not stored yet, in the order they are to be played: the schedule's
    (pairing, pair, game: public), or a blind tournament's (``blind_seats``) blind order
    (:func:`arena.tournament.schedule.blind_order`, which the public cannot foresee) with the twins of its
    half-played pairs first (:func:`unpaired_twins`: its publication holds their first games back,
    :mod:`arena.report.held`)."""
    if not t.config.blind_seats:
        return t.store.pending(t.play_order)
    stored = t.store.stored_ids()
    twins = unpaired_twins(t.schedule, stored)
    skip = stored | {g.game_id for g in twins}
    return twins + [g for g in t.play_order if g.game_id not in skip]


def unpaired_twins(schedule: Sequence[ScheduledGame], stored: Collection[str]) -> list[ScheduledGame]:
    """The games of ``schedule`` not ``stored`` (game ids) whose duplicate pair has a game stored: the
    twins of the half-played pairs, in ``schedule``'s order."""
    begun = {g.pair_id for g in schedule if g.game_id in stored}
    return [g for g in schedule if g.pair_id in begun and g.game_id not in stored]


def _claim_seed(store: Store, config: TournamentConfig, out: Path) -> bytes:
    """The tournament's master seed (32 bytes): the config's, else the one ``store`` holds, else a
    fresh one, claimed in ``store`` with the league's identity. Closes ``store`` on any error.

    :raises StoreMismatch: if ``store`` holds another tournament (naming each field that changed).
    """
    try:
        if store.get_meta("fingerprint") is None:
            _check_nothing_published(out, "holds no tournament (emptied, or its -wal file lost)")
        candidate = config.master_seed or fresh_seed()
        return bytes.fromhex(
            store.claim(config.league_fingerprint(), candidate.hex(), commitment(candidate), config.league_identity())
        )
    except StoreMismatch as e:
        store.close()
        if e.stored_identity is None:
            raise
        changed = identity_changes(e.stored_identity, config.league_identity())
        raise StoreMismatch(
            f"{out} holds another tournament: the config changed {'; '.join(changed)}; "
            "use another output folder or restore those fields",
            e.stored_identity,
        ) from None
    except BaseException:
        store.close()
        raise


def _write_commitment(out: Path, config: TournamentConfig, commit: str) -> None:
    """``<out>/commitment.json``: the master seed's SHA-256, written before any game is played (at once:
    a kill never leaves half a file); written again with the config's fingerprint on every run.

    :raises StoreLost: if the file commits to another master seed (the store is another tournament's).
    """
    path = out / COMMITMENT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or half written by a kill (before it was written at once)
        data = None
    published = data.get("master_seed_sha256") if isinstance(data, dict) else None
    if isinstance(published, str) and published != commit:
        raise StoreLost(f"{path} commits to the master seed with SHA-256 {published}, but the store {DB_NAME} "
                        f"holds another (SHA-256 {commit}): {recovery_advice(DB_NAME)}")
    text = json.dumps(
        {
            "tournament": config.name,
            "master_seed_sha256": commit,
            "config_fingerprint": config.fingerprint(),
            "note": "SHA-256 of the 32-byte master seed; the seed is revealed in ratings.json " + (
                "when the league is closed (`arena competition close`): a served league has no last game"
                if config.competition is not None else "after the last game"),
        },
        indent=2,
    )
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


class LeagueClosed(StoreMismatch):
    """The output folder holds a league whose master seed is revealed (:data:`CLOSED_KEY`): a game dealt from
    it now would be known to anyone beforehand; the message is one line."""


def _closed_line(store: Store, out: Path) -> str | None:
    """The one line refusing to deal games in ``out`` whose ``store`` is a closed league; None when it is not."""
    when = store.get_meta(CLOSED_KEY)
    if when is None:
        return None
    day = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(when)))
    return (f"the league in {out} is closed (`arena competition close`, {day}): its master seed is published, "
            "so anyone could compute the deals of any game played from it; it plays no more games (its board, "
            "games and records stand as published: `python -m arena.audit` checks them; a new league needs "
            "another output folder)")


def closed_league(out: Path) -> str | None:
    """The one line refusing ``arena serve`` (and ``arena run``) in ``out`` when it holds a closed league
    (:class:`LeagueClosed`), before anything is started; None when it does not (or holds no store yet)."""
    if not (out / DB_NAME).is_file():
        return None
    with Store(out / DB_NAME) as store:
        return _closed_line(store, out)


class StoreLost(StoreMismatch):
    """The output folder holds a published tournament that its store does not (the store is missing,
    emptied, lost its WAL, or is another tournament's); the message names what is published."""


#: The files of a published tournament, as :func:`published_files` names them (``records/``: a record in it).
PUBLISHED = (COMMITMENT_FILE, "games.jsonl", "ratings.json", "records/")


def published_files(out: Path) -> list[str]:
    """The names of :data:`PUBLISHED` that ``out`` holds (``records/`` when a record file is in it)."""
    found = []
    for name in PUBLISHED:
        path = out / name
        if name.endswith("/") and path.is_dir():
            with os.scandir(path) as entries:
                if any(e.is_file() for e in entries):
                    found.append(name)
        elif path.is_file():
            found.append(name)
    return found


def _check_nothing_published(out: Path, state: str) -> None:
    """:raises StoreLost: if ``out`` holds a published tournament while its store ``state`` (e.g. "is missing")."""
    found = published_files(out)
    if found:
        raise StoreLost(f"{out} holds a published tournament ({', '.join(found)}) but its store {DB_NAME} {state}: "
                        f"{recovery_advice(DB_NAME)}")


@dataclass(frozen=True, slots=True)
class Absent:
    """What a starter makes of a game that waits for the first worker of remote bots none of whose workers
    has connected yet (``bots``: their labels; their competitor enrolled them and has not started them).
    It is passed over, not forfeited: a served league waits for them as long as it takes, a run that ends
    no longer than ``no_show_s`` once only such games are left (:func:`run_games`, :meth:`Starter.give_up`)."""

    bots: tuple[str, ...]


#: What a starter makes of one game now: a job that plays it, a result decided without playing, None (wait
#: for idle workers), or :class:`Absent` (wait for a remote bot's first worker).
Start = Callable[[], GameResult] | GameResult | Absent | None


@runtime_checkable
class Starter(Protocol):
    """A game runner that decides when each game can start (the lobby's: when workers are idle).

    ``start(game)`` returns a :data:`Start`; ``wake`` is set whenever a game that had to wait might
    start now (a worker became idle, connected or left, a bot broke).
    """

    wake: threading.Event

    def start(self, game: ScheduledGame) -> Start:
        """See the class docstring."""
        ...

    def give_up(self, bots: Collection[str]) -> str:
        """A run that ends has only games :class:`Absent` for ``bots`` left: from now on wait for their workers
        as for any bot short of workers (``no_show_s``, then their games are forfeited as ``no_show``); returns
        the one line that says how long they wait (no warning yet: the run loop warns once one forfeits)."""
        ...

    def waiting(self) -> frozenset[str]:
        """The remote bots (labels) whose games are :class:`Absent` now: none of their workers has connected
        yet, and no run that ends has given up on them."""
        ...


class _InOrder:
    """A plain :class:`GameRunner` as a :class:`Starter`: every game can start at once."""

    def __init__(self, runner: GameRunner):
        self.runner = runner
        self.wake = threading.Event()

    def start(self, game: ScheduledGame) -> Start:
        return functools.partial(self.runner.play, game)

    def give_up(self, bots: Collection[str]) -> str:  # never asked: no game of its waits
        return ""

    def waiting(self) -> frozenset[str]:
        return frozenset()


#: Seconds the run loop sleeps at most between looks when games wait for workers (no-show clocks).
IDLE_POLL_S = 0.5


def run_games(
    games: Sequence[ScheduledGame],
    runner: GameRunner | Starter,
    store: Store,
    concurrency: int = 1,
    on_result: Callable[[GameResult, bool], None] | None = None,
    stop: threading.Event | None = None,
    *,
    twins_together: bool = False,
    continuous: bool = False,
    on_note: Callable[[str], None] | None = None,
    barred: Callable[[], Mapping[str, str]] | None = None,
) -> int:
    """Play ``games`` with up to ``concurrency`` at once, storing each result as it arrives.

    A plain :class:`GameRunner` plays them in order. A :class:`Starter` (games with lobby seats) is
    asked, in the order of ``games``, which games can start now; a game whose bots have no idle workers is
    passed over (it does not block the others) and tried again when :attr:`Starter.wake` is set; so is
    a game whose duplicate twin is in flight (:func:`_twin_in_flight`) unless ``twins_together``.

    A game :class:`Absent` (a remote bot none of whose workers has connected yet) is passed over too. Once
    only such games are left (none running, none other to start), ``continuous`` (a served league) returns:
    they stay pending, and are asked again on the next call; otherwise (a run that ends) the starter is
    told to give up on their bots (:meth:`Starter.give_up`: they wait ``no_show_s`` more, then forfeit) and
    its line goes to ``on_note``, as does one line the first time a bot's games are passed over so (not when
    it is given up on at the same look: its line says it all), and one warning when a game of a bot given up
    on is forfeited (no worker came in time). The bots whose games are passed over so
    (:meth:`Starter.waiting`) are written to ``store``'s :data:`WAITING_KEY` whenever they change.

    :param on_result: called in this thread after each store attempt with ``(result, written)``.
    :param stop: when set, no new game starts; games in flight finish and are stored.
    :param barred: asked at each look for games to start: the entrants (labels) barred now -> the host's reason
        (a competition's disqualified ones, :func:`arena.report.disqualified.read_barred`); a game of theirs not
        started yet is forfeited by their side(s) at once (:func:`barred_forfeit`), none of their processes
        started; an entrant no longer barred (the disqualification undone) plays its games left.
    :returns: the number of results newly written.
    :raises Exception: the first exception a runner raised (after the games in flight finish and are
        stored); games not yet started stay pending for the next run.
    :raises BaseException: one raised in this thread (``KeyboardInterrupt``, or by ``on_result``), once
        the games in flight finished and were stored.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    starter = runner if isinstance(runner, Starter) else _InOrder(runner)
    loop = _RunLoop(starter, _Stored(store, on_result), list(games), concurrency, stop, continuous, on_note,
                    twins_together, barred or _nobody)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="arena-game") as pool:
        try:
            while loop.turn(pool):
                pass
        except BaseException:  # e.g. Ctrl-C: no new game; those in flight are waited for anyway (the pool's exit)
            loop.todo.clear()
            if stop is not None:
                stop.set()
            for fut in as_completed(loop.running):
                loop.stored.collect([fut])  # so they are stored, not thrown away
            raise
    if loop.stored.error is not None:
        raise loop.stored.error
    return loop.stored.written


def _nobody() -> Mapping[str, str]:
    """No entrant barred (:func:`run_games` without ``barred``)."""
    return {}


@dataclass
class _RunLoop:
    """:func:`run_games`'s state: the games to start (``todo``), those in flight, the results stored, and the
    remote bots whose games were said to wait for their first worker (``said``) or given up on (``given_up``)."""

    starter: Starter
    stored: _Stored
    todo: list[ScheduledGame]
    concurrency: int
    stop: threading.Event | None
    continuous: bool
    on_note: Callable[[str], None] | None
    twins_together: bool = False
    barred: Callable[[], Mapping[str, str]] = _nobody
    running: dict[Future[GameResult], ScheduledGame] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)
    given_up: set[str] = field(default_factory=set)
    warned: set[str] = field(default_factory=set)  # given up on, and a game of theirs forfeited since
    listed: frozenset[str] | None = None  # the bots last written to the store's WAITING_KEY

    def halted(self) -> bool:
        return self.stored.error is not None or (self.stop is not None and self.stop.is_set())

    def note(self, line: str) -> None:
        if self.on_note is not None and line:
            self.on_note(line)

    def turn(self, pool: ThreadPoolExecutor) -> bool:
        """Start what can start now, then wait for a game to end or for :attr:`Starter.wake` (at most
        :data:`IDLE_POLL_S` while games wait) and store what ended; False once the loop is over."""
        if not (self.todo or self.running):
            return False
        wake = self.starter.wake
        wake.clear()
        look = None if self.halted() else _start_games(self.todo, self.starter, pool, self.running, self.concurrency,
                                                       wake, self.twins_together, self.barred() if self.todo else {})
        for result in look.decided if look is not None else ():
            self.stored.add(result)
        self._warn_forfeits(look.decided if look is not None else [])
        stalled = look is not None and look.only_absent and not self.running
        giving_up = look is not None and stalled and not self.continuous and bool(look.absent - self.given_up)
        if look is not None and look.absent - self.said and not giving_up:
            self.note(_absent_line(sorted(look.absent - self.said), self.continuous))
            self.said |= look.absent
        if not self.running and (not self.todo or self.halted() or (stalled and self.continuous)):
            self._list_waiting()
            return False
        if look is not None and giving_up:
            self.given_up |= look.absent
            self.said |= look.absent
            self.note(self.starter.give_up(sorted(look.absent)))
            self._list_waiting()
            return True  # asked again at once: their games wait on the no-show clock now
        self._list_waiting()
        done = {f for f in self.running if f.done()}
        if not done:
            wake.wait(IDLE_POLL_S if self.todo else None)
            return True
        for fut in done:  # one at a time: if on_result raises, the others are still in `running`
            del self.running[fut]
            self.stored.collect([fut])
        return True


    def _list_waiting(self) -> None:
        """Write :meth:`Starter.waiting`, less the bots with no game left in this loop (their games do not wait),
        to the store's :data:`WAITING_KEY` if it changed since last written (always at a loop's first turn)."""
        left = {label for g in (*self.todo, *self.running.values()) for label in g.seats}
        waiting = self.starter.waiting() & left
        if waiting != self.listed:
            self.stored.store.set_meta(WAITING_KEY, json.dumps(sorted(waiting)))
            self.listed = waiting

    def _warn_forfeits(self, decided: Sequence[GameResult]) -> None:
        """Warn once per bot given up on (:meth:`Starter.give_up`) when a game of it is forfeited as a no-show
        among the ``decided`` results: its wait ran out."""
        lost = sorted({side for r in decided for side in _no_shows(r)} & (self.given_up - self.warned))
        if lost:
            self.warned.update(lost)
            self.note(f"no worker of remote bot(s) {', '.join(map(repr, lost))} connected in time: their games are "
                      "forfeited (no_show)")


def _no_shows(result: GameResult) -> set[str]:
    """The sides (labels) of ``result`` that forfeited as no-shows (a seat of theirs ended ``no_show``)."""
    return {result.sides[side_of(seat)] for seat, end in enumerate(result.terminations)
            if end == Termination.NO_SHOW}


def _absent_line(bots: Sequence[str], continuous: bool) -> str:
    """The line said the first time the games of remote ``bots`` are passed over for their first worker (by a
    served league, ``continuous``: as long as it takes; by a run that ends: until only theirs are left)."""
    names = ", ".join(repr(b) for b in bots)
    until = "" if continuous else " until only theirs are left (then they wait no_show_s more)"
    return (f"the games of remote bot(s) {names} wait for their first worker (none has connected yet) and are "
            f"passed over meanwhile, not forfeited{until}; the other games go on")


@dataclass
class _Stored:
    """The run loop's results: each stored once as it arrives (``on_result(result, written)`` after
    each attempt), how many were newly written, and the first exception a game raised."""

    store: Store
    on_result: Callable[[GameResult, bool], None] | None
    written: int = 0
    error: BaseException | None = None

    def add(self, result: GameResult) -> None:
        """Store ``result`` (a second result of the same game is not written) and report it, with the
        ``stored_at`` the store wrote (a ladder counts it on that UTC day, as a restart does)."""
        at = time.time()
        ok = self.store.record(result, at)
        result = replace(result, stored_at=at) if ok else result
        self.written += int(ok)
        if self.on_result is not None:
            self.on_result(result, ok)

    def collect(self, done: Iterable[Future[GameResult]]) -> None:
        """Store the results of finished games; keep the first exception one of them raised."""
        for fut in done:
            exc = fut.exception()
            if exc is not None:
                self.error = self.error or exc
                continue
            self.add(fut.result())


@dataclass
class _Look:
    """One look of :func:`_start_games`: the results decided without a game, the bots of the games
    :class:`Absent` in it, and whether every game left waits for such a bot (``only_absent``)."""

    decided: list[GameResult]
    absent: set[str]
    only_absent: bool


def _start_games(
    todo: list[ScheduledGame],
    starter: Starter,
    pool: ThreadPoolExecutor,
    running: dict[Future[GameResult], ScheduledGame],
    concurrency: int,
    wake: threading.Event,
    twins_together: bool = False,
    barred: Mapping[str, str] | None = None,
) -> _Look:
    """Start what can start now (removing it from ``todo``); see :class:`_Look`. A game whose twin is in
    ``running`` waits unless ``twins_together`` (:func:`run_games`); one of an entrant of ``barred`` is
    decided at once (:func:`barred_forfeit`), whatever is running."""
    decided: list[GameResult] = []
    waiting: dict[tuple[str, ...], Absent | None] = {}  # seatings that could not start in this look
    k = 0
    while k < len(todo) and (barred or len(running) < concurrency):
        game = todo[k]
        lost = barred_forfeit(game, barred or {})
        if lost is not None:
            todo.pop(k)
            decided.append(lost)
            continue
        if len(running) >= concurrency:
            k += 1
            continue
        if game.seats in waiting or (not twins_together and _twin_in_flight(game, running.values())):
            k += 1
            continue
        got = starter.start(game)
        if got is None or isinstance(got, Absent):
            waiting[game.seats] = got
            k += 1
            continue
        todo.pop(k)
        if isinstance(got, GameResult):
            decided.append(got)
            continue
        fut = pool.submit(got)
        fut.add_done_callback(lambda _f: wake.set())
        running[fut] = game
    absent = {b for got in waiting.values() if got is not None for b in got.bots}
    only = bool(todo) and not running and all(waiting.get(g.seats) is not None for g in todo)
    return _Look(decided, absent, only)


#: The start of why a game was forfeited by the run's bar (:func:`barred_forfeit`), after the side's label.
BARRED_WHY = "disqualified by the host: "


def barred_forfeit(game: ScheduledGame, barred: Mapping[str, str]) -> GameResult | None:
    """``game`` forfeited, unplayed, by the side(s) of the entrants of ``barred`` (label -> the host's reason) it
    seats (``not_started``, ``disqualified by the host: REASON``; no winner when both are), or None: it seats
    none."""
    out = {side: Unplayed(Termination.NOT_STARTED, f"{BARRED_WHY}{barred[side]}")
           for side in game.sides if side in barred}
    return forfeit_result(game, out) if out else None


def is_barred_forfeit(result: GameResult) -> bool:
    """Whether ``result`` is a game :func:`barred_forfeit` decided: forfeited, unplayed, by the run's bar on a
    disqualified entrant (its reason line says so, :data:`BARRED_WHY`)."""
    return any(r.startswith(forfeit_reason(i, result.sides[i], BARRED_WHY)) for r in result.reasons for i in (0, 1))


def _twin_in_flight(game: ScheduledGame, in_flight: Iterable[ScheduledGame]) -> bool:
    """True if a game dealt from ``game``'s match seed (its duplicate twin) is in flight.

    Twins deal the same cards, each side given the other's. Each bot plays in both, and two of its
    processes at once on one machine could pass the other side's cards between them by the load they
    make (docs/arena.md, "Schedule and fairness"); one after the other, the first game's processes are
    gone before the second's first deal. A pair dealt from two seeds (``independent``: a pairing with a
    remote entrant) shares no cards and has no twin in this sense."""
    return any(other.seed == game.seed for other in in_flight)


class SimulatedRunner:
    """A stand-in game runner: no referee, no bots; the outcome is a pure function of the game.

    Side 0 wins with probability ``1 / (1 + 10 ** ((r1 - r0) / 400))`` where ``r`` comes from
    ``strengths`` (Elo points by bot name, default 0), decided by ``HMAC-SHA256(seed, game_id)`` — so
    a replay gives the same results. Each game sleeps ``delay_s`` seconds (to let a kill land mid-
    tournament in tests). The winner scores 14, the loser 0..13.
    """

    def __init__(self, strengths: Mapping[str, float] | None = None, delay_s: float = 0.0, target: int = 14):
        self.strengths = dict(strengths or {})
        self.delay_s = delay_s
        self.target = target

    def play(self, game: ScheduledGame) -> GameResult:
        """Simulate ``game`` (see the class docstring)."""
        start = time.perf_counter()
        if self.delay_s:
            time.sleep(self.delay_s)
        digest = hmac.new(game.seed, game.game_id.encode(), hashlib.sha256).digest()
        u = int.from_bytes(digest[:8], "big") / 2**64
        r0, r1 = (self.strengths.get(name, 0.0) for name in game.sides)
        winner = 0 if u < expected_score(r0 - r1) else 1
        loser_score = digest[8] % self.target
        scores = (self.target, loser_score) if winner == 0 else (loser_score, self.target)
        return GameResult(
            game_id=game.game_id,
            match_id=f"sim-{digest[9:17].hex()}",
            pair_id=game.pair_id,
            sides=game.sides,
            scores=scores,
            winner=winner,
            reasons=(f"side {winner} reached {self.target} (simulated)",),
            record_path=None,
            seed_hex=game.seed.hex(),
            first_dealer=game.first_dealer,
            duration_s=time.perf_counter() - start,
        )
