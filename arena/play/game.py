"""The real game runner: one referee match per scheduled game, one bot process per seat.

The referees form a :class:`RefereePool`: one embedded referee (started in this process), or the
external referees given with ``--referee`` / ``tournament.referees``, each checked with one
authenticated admin call at start-up (:func:`connect_referees`). Each game goes to the live referee
with the fewest games in flight. For each game :meth:`GrpcGameRunner.play`:

1. ``AdminService.CreateMatch`` with the tournament's rules and time control, the seat names from
   the schedule, one game, the scheduled seed and first dealer → match id, seed commitment, tickets;
2. starts one process per seat (:class:`arena.hosting.procs.BotProcess`: everything it starts is tracked and
   ends with it; its output is capped at ``tournament.bot_log_bytes``) from the bot's ``command`` with
   ``ALLFOURS_TICKET`` (that seat's ticket) and ``ALLFOURS_REFEREE`` (``host:port``; for a sandboxed
   bot, :mod:`arena.hosting.jail`, the referee's unix socket inside its sandbox) in its environment
   (the arena's own environment without any admin token: :func:`arena.play.environment.bot_environment`);
   placeholders in the command are replaced: ``{python}`` (the arena's interpreter),
   ``{config_dir}``, ``{ticket}``, ``{referee}``, ``{seat}``. Each process's output goes to
   ``<output>/logs/<game id>/seat<k>.log``;
3. ``AdminService.WatchMatch`` until the result (``result_only``, unless ``live``: then every public
   event goes to the game's live file for spectators, :mod:`arena.report.live`); then ``GetRecord`` →
   ``<output>/records/<game id>.jsonl``;
4. stops the bot processes and everything they started (2 s to exit on their own, then SIGTERM,
   then SIGKILL 2 s later: :meth:`arena.hosting.procs.BotProcess.stop`).

Bot failures are results: a bot that cannot start, crashes, hangs or breaks the protocol forfeits
through the referee (no-show, disconnect, timeout, protocol error) and loses the game; the reasons
(the referee's termination per seat, plus the arena's note on a process that could not start, exited
before joining or before the match ended — with the last lines of its output — or exited with a
non-zero status) are stored with the result. Before or after the end is the referee's word: a seat it sent
MatchEnd on an open stream (``SeatResult.connected_at_end``) played to the end, so its bot's exit, even
one the arena sees before it looks, came after (a note for a failure status, never a crash).

Referee failures are not results: a referee that cannot be reached, goes away mid-game, aborts the
match (shutting down) or cannot hand over the record raises :class:`RefereeFailure` inside
:meth:`GrpcGameRunner.play`; that attempt is discarded, the referee is retired for the rest of the
run unless it still answers its health check, and the game is played again from its seed (the same
deal) on another referee. When no referee is left, :class:`RefereeError` stops the run; the game
stays pending and is played on the next run.
"""

from __future__ import annotations

import dataclasses
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from allfours.v1 import lobby_pb2 as lpb
from allfours.v1 import referee_pb2 as pb
from arena import metrics
from arena.config import ENV_REFEREE, ENV_TICKET, BotSpec, TournamentConfig
from arena.hosting.jail import REFEREE_SOCKET, Jail
from arena.hosting.procs import CPU_PERIOD_US, EXIT_WAIT_S, BotProcess, stop_all
from arena.hosting.sandbox import BotContainer, NoImage, Sandbox, SandboxError
from arena.lobby.seats import LobbyBot, SeatWait
from arena.play.environment import admin_secret_names, bot_environment, expand_command, log_tail
from arena.play.fingerprint import container_fingerprint, engine_facts
from arena.play.referees import RefereeConnection, RefereeError, RefereeFailure, RefereePool, rpc_status
from arena.report.live import LIVE_KINDS_PB, LiveLog
from arena.tournament.result import Failures, GameResult, Unplayed, forfeit_result
from arena.tournament.runner import Absent, Start
from arena.tournament.schedule import ScheduledGame
from referee import wire
from referee.outcome import CONSEQUENCES, MatchStatus, Termination

if TYPE_CHECKING:
    from arena.hosting.workers.kind import WorkerKind
    from arena.lobby.service import Lobby, WorkerRef

#: Upper bound of the wait for one match's result (the time control may allow more; 30 days).
MAX_WATCH_S = 30 * 24 * 3600.0


#: One seat's bot: a local process, a container (both with ``pid``, ``poll``, ``wait``, ``stop``), or None
#: when it could not start.
Seat = BotProcess | BotContainer | None


@dataclass(frozen=True)
class SeatCause:
    """What the arena saw kill a seat's bot (its container or process at its memory or pids limit, its
    process exiting with a failure status): ``termination`` (``oom``, ``pids``, ``crash``) and ``text`` (one
    line, e.g. ``"process exited with status 1 before the match ended (last output: …)"``). It comes
    before what the referee saw of it (a timeout or a disconnect, whichever the time control made
    first: :data:`referee.outcome.CONSEQUENCES`)."""

    termination: Termination
    text: str


@dataclass
class _Phases:
    """Where one game's wall time went (``time.perf_counter`` seconds): CreateMatch; seats handed out
    to the result; GetRecord and the record file."""

    start: float
    created: float = 0.0
    result: float = 0.0
    record: float = 0.0

    def phases_ms(self) -> dict[str, float]:
        """``{"create", "play", "record"}`` in ms, rounded to 0.01."""
        return {
            "create": round((self.created - self.start) * 1000, 2),
            "play": round((self.result - self.created) * 1000, 2),
            "record": round((self.record - self.result) * 1000, 2),
        }


#: The exit statuses of a process the arena stopped itself (:meth:`arena.hosting.procs.BotProcess.stop`).
STOP_SIGNALS = (-signal.SIGTERM, -signal.SIGKILL)


@dataclass(frozen=True)
class _SeatEnds:
    """How each seat's bot ended, per seat: its process or container (None: a lobby worker, or none
    started), its exit status once the result came (``early``: it ended on its own) and when stopped
    (``codes``), its lobby worker, the seats the referee forfeited (seat -> ``Termination`` value), and
    whether the referee sent the seat MatchEnd on an open stream (``connected``, per seat: whatever its bot
    did afterwards came after the match ended; empty or False: no, or a referee that does not say)."""

    procs: list[Seat]
    early: list[int | None]
    codes: list[int | None]
    workers: list[WorkerRef | None]
    forfeited: dict[int, Termination]
    connected: Sequence[bool] = ()

    def at_end(self, seat: int) -> bool:
        """Whether ``seat`` was connected when the match ended (it was sent MatchEnd on an open stream) and
        that says its bot's process was alive then: not when its own process had exited leaving others it
        started running (:attr:`BotProcess.outlived`: one of them may have held the stream after it died)."""
        proc = self.procs[seat] if seat < len(self.procs) else None
        outlived = isinstance(proc, BotProcess) and proc.outlived
        return seat < len(self.connected) and self.connected[seat] and not outlived

    def after_end(self, seat: int) -> int | None:
        """The failure status of ``seat``'s bot that exited after its MatchEnd (on its own, or when stopped but
        for the arena's own signals); None: it ended well, still runs, or was not connected at the end."""
        early, code = self.early[seat], self.codes[seat]
        status = early if early is not None else (None if code in STOP_SIGNALS else code)
        return status if self.at_end(seat) and status not in (None, 0) else None


def _connected(result: pb.MatchResult, players: int) -> list[bool]:
    """Per seat, whether the referee sent it MatchEnd on an open stream (``SeatResult.connected_at_end``)."""
    connected = [False] * players
    for s in result.seats:
        if 0 <= s.seat < players:
            connected[s.seat] = s.connected_at_end
    return connected


def _forfeited(result: pb.MatchResult) -> dict[int, Termination]:
    """seat -> its termination, for the seats whose own failure ended the match."""
    terms = {int(s.seat): Termination.from_pb(s.termination) for s in result.seats}
    return {seat: t for seat, t in terms.items() if t.forfeits}


def _killed_for_memory(cause: SeatCause | None) -> bool:
    """Whether ``cause`` is a container or process killed at its memory limit (a crash in the failure counts)."""
    return cause is not None and cause.termination == Termination.OOM


def _failures(seat: pb.SeatResult, crashed: bool) -> Failures:
    """One seat's failure counts from the referee's report, plus whether its bot crashed."""
    return Failures(
        exceptions=seat.bot_counts.exceptions,
        fallbacks=seat.bot_counts.fallbacks,
        rejections=seat.illegal + seat.protocol_errors,
        timeouts=seat.strikes,
        crashes=int(crashed),
    )


def _serve_each_bots_socket(jail: Jail, pool: RefereePool) -> None:
    """Make the embedded referee (if the pool has one) serve each sandboxed bot on a unix socket of that
    bot's own (``Jail.on_bot_folder``; once per referee), so no bot can take another's RPC slots
    (arena/hosting/jail.py). External referees are not reached from the sandbox."""
    embedded = next((c.embedded for c in pool.conns if c.embedded is not None), None)
    if embedded is not None:
        jail.on_bot_folder(lambda folder: embedded.listen_unix(f"unix:{folder / REFEREE_SOCKET}"), key=embedded,
                           unlisten=lambda folder: embedded.stop_unix(f"unix:{folder / REFEREE_SOCKET}"))


def _pin_key(bot: BotSpec) -> tuple[str, str, str]:
    """The key of a container bot's pinned image (:attr:`GrpcGameRunner.pinned`): its name, version and tag."""
    return (bot.name, bot.version, str(bot.image))


class GrpcGameRunner:
    """Plays scheduled games on one or more referees (see the module docstring). Thread-safe.

    :param config: the tournament (rules, time control, bots).
    :param referees: a :class:`RefereePool` (games go to the least-loaded live referee) or one
        :class:`RefereeConnection`.
    :param output: the output folder (records/ and logs/ are written below it).
    :param on_event: called (from the game's worker thread) with a one-line message when a game hits
        an infrastructure failure and when a referee is retired.
    :param max_attempts: referees one game is tried on before the run stops (default: one more than
        the number of referees, at least 2).
    :param sandbox: where container bots (``image``) run, one container per seat (:mod:`arena.hosting.sandbox`);
        needed only when the tournament has container bots.
    :param live: write each running game's public events to ``<output>/live/`` for ``arena web``'s
        spectators (``arena run --live``; on in ``arena serve``). Off, the arena asks the referee for
        the result alone, which is cheaper (docs/arena.md, Benchmark).
    :param jail: the process sandbox (:mod:`arena.hosting.jail`) of the bots with ``sandbox = "bwrap"``
        (the default); the embedded referee must listen on each bot's socket (``Jail.on_bot_folder`` with
        ``listen_unix``, as ``arena run`` does).
    :raises ValueError: sandboxed bots without a ``jail`` (they are never run unsandboxed by mistake).
    """

    def __init__(
        self,
        config: TournamentConfig,
        referees: RefereePool | RefereeConnection,
        output: Path,
        on_event: Callable[[str], None] | None = None,
        max_attempts: int | None = None,
        sandbox: Sandbox | None = None,
        lobby: Lobby | None = None,
        kinds: Mapping[str, WorkerKind] | None = None,
        live: bool = False,
        jail: Jail | None = None,
    ):
        self.config = config
        #: the process sandbox of the bots with ``sandbox = "bwrap"`` (arena/hosting/jail.py)
        self.jail = jail
        if jail is None and any(b.jailed for b in config.bots):
            raise ValueError('sandboxed process bots need a Jail (arena.hosting.jail), or sandbox = "none"')
        #: write running games' public events for `arena web`'s spectators (see :meth:`_watch`)
        self.live = live
        self.sandbox = sandbox
        self.lobby = lobby
        self.kinds = dict(kinds or {})
        #: set when a game that waits for workers might start now (see arena.tournament.runner.Starter)
        self.wake = lobby.wake if lobby is not None else threading.Event()
        #: per lobby bot, since when it has had too few workers (its games then wait, up to a no-show)
        self.seat_wait = SeatWait()
        #: remote bots (labels) whose first worker a run that ends no longer waits for (:meth:`give_up`)
        self.given_up: set[str] = set()
        self.pool = referees if isinstance(referees, RefereePool) else RefereePool([referees])
        if jail is not None:
            _serve_each_bots_socket(jail, self.pool)
        self.output = Path(output)
        self.on_event = on_event
        self.max_attempts = max_attempts or max(2, len(self.pool.conns) + 1)
        self.bots = {b.name: b for b in config.bots}
        self.rules_pb = wire.rules_to_pb(config.rules)
        self.tc = config.full_time_control
        self.tc_pb = wire.time_control_to_pb(self.tc)
        self.config_dir = str(Path(config.source).resolve().parent)
        tc = self.tc
        players = config.players
        # No match can honestly last longer than this (every seat joining late, spending its whole
        # bank, every strike and a reconnection); a referee that has not ended one by then has failed.
        self.watch_timeout_s = min(
            MAX_WATCH_S,
            60.0 + 2.0 * (tc.join_ms + players * (tc.bank_ms + tc.grace_ms + tc.max_strikes * tc.decision_ms)) / 1000.0,
        )
        # never handed to a bot: the admin token variables (and their files'), and the tokens in use (a
        # copy under any name)
        self.secret_names = admin_secret_names(config.admin_token_env)
        self.secret_values = tuple({c.token for c in self.pool.conns if c.token})
        #: bots that failed :meth:`check_bots` (name -> why): their games are forfeited without playing
        self.broken: dict[str, str] = {}
        #: per-game container bots' images as checked ((name, version, tag) -> docker's image ID, ``sha256:…``):
        #: a tag is resolved once, by :meth:`check_fingerprints` or the check (:meth:`_pinned_image`), and the
        #: check's and every game's containers start by that ID, so a tag moved to another image afterwards
        #: plays nothing unchecked (it takes effect through a reload or a restart, whose new runner resolves
        #: and checks it again)
        self.pinned: dict[tuple[str, str, str], str] = {}

    def use_entrants(self, entrants: Mapping[str, BotSpec]) -> None:
        """Play seats by entrant label (``name`` or ``name@version``, see :class:`arena.tournament.store.Entrant`)
        rather than by bot name (call before playing, with :attr:`arena.tournament.runner.Tournament.entrants`)."""
        self.bots = dict(entrants)

    def attach_lobby(self, lobby: Lobby, kinds: Mapping[str, WorkerKind]) -> None:
        """Play the lobby bots' seats through ``lobby``, whose workers ``kinds`` run (call before playing)."""
        self.lobby = lobby
        self.kinds = dict(kinds)
        self.wake = lobby.wake
        metrics.watch_lobby(lobby.counts)

    def _event(self, message: str) -> None:
        if self.on_event is not None:
            self.on_event(message)

    def start(self, game: ScheduledGame) -> Start:
        """What the run loop does with ``game`` now (:func:`arena.tournament.runner.run_games`).

        Returns a job that plays it (its lobby seats already hold reserved workers); or a result at
        once, without a match, when a bot of the game is broken or has had too few workers connected for
        ``no_show_s`` (that side forfeits, with the reason); or :class:`Absent` when a remote bot of it has
        had no worker connected yet (its games wait for the first, without a no-show clock, until
        :meth:`give_up`); or None when it must wait for workers.
        """
        seats = self.seat_workers(game)
        if seats is None or isinstance(seats, GameResult | Absent):
            return seats
        return lambda: self.play(game, seats or None)

    def give_up(self, bots: Collection[str]) -> str:
        """A run that ends has only the games of remote ``bots`` (labels) none of whose workers came left: from
        now on their games wait ``no_show_s`` for them, as for any bot short of workers, then are forfeited
        (``no_show``); returns the one line that says so."""
        self.given_up.update(bots)
        names = ", ".join(repr(b) for b in sorted(bots))
        return (f"the games left wait for the workers of remote bot(s) {names} (none has connected yet): at most "
                f"no_show_s ({self.config.no_show_s} s)")

    def waiting(self) -> frozenset[str]:
        """The remote bots (labels) whose games wait for their first worker (:class:`Absent`): none of their
        workers has connected since the lobby started, and :meth:`give_up` was not told of them."""
        return frozenset(label for label in self.bots if self._absent(label))

    def _absent(self, label: str) -> bool:
        """Whether the games of ``label`` are :class:`Absent` (see :meth:`waiting`)."""
        bot = self.bots[label]
        return (bot.mode == "remote" and label not in self.given_up and self.lobby is not None
                and not self.lobby.came(bot.name))

    def seat_workers(self, game: ScheduledGame) -> list[WorkerRef | None] | GameResult | Absent | None:
        """Reserve one idle worker per lobby seat of ``game`` (None at per-game seats; ``[]`` when the
        game has no lobby seat); or a forfeit result, or :class:`Absent` (see :meth:`start`); or None: wait."""
        lobby_bots = [b for b in dict.fromkeys(game.seats) if self.bots[b].mode != "per_game"]  # labels
        if not lobby_bots:
            return []
        assert self.lobby is not None, "a game with lobby seats needs the lobby"
        counts = self.lobby.counts()
        seen: dict[str, LobbyBot] = {}
        for bot in lobby_bots:
            name = self.bots[bot].name  # workers register by the config's name
            kind = self.kinds.get(name)
            seen[bot] = LobbyBot(
                connected=counts.get(name, (0, 0))[0],
                seats=game.seats.count(bot),
                no_show_s=self.config.no_show_s,
                local_pool=self.bots[bot].mode == "worker",
                broken=kind.broken if kind is not None else None,
                absent=self._absent(bot),
            )
        failed = self.seat_wait.check(time.monotonic(), seen)
        if failed:
            return forfeit_result(game, failed)
        absent = tuple(bot for bot, b in seen.items() if b.absent)
        if absent:
            return Absent(absent)
        return self.lobby.reserve([None if self.bots[b].mode == "per_game" else self.bots[b].name for b in game.seats])

    def play(self, game: ScheduledGame, workers: Sequence[WorkerRef | None] | None = None) -> GameResult:
        """Play ``game`` to its end and return its result; ``workers`` (from :meth:`start`) hold its lobby seats.

        A :class:`RefereeFailure` (the referee went away, aborted the match, lost the record) is not a
        result: the referee is health-checked (and retired when it does not answer SERVING) and the
        game is played again from its seed on another live referee, up to ``max_attempts`` times,
        with the same lobby workers (a worker that left is replaced). The workers stay the game's
        until it returns or raises, then they are released (:meth:`Lobby.release`).

        :raises RefereeError: when no referee is left, the attempts are used up (the game stays
            pending for the next run), or a referee refuses the match (exit status 2).
        """
        claimed = list(workers or ())
        try:
            if any(name in self.broken for name in game.sides):
                why = "the bot failed its check before the first game: "
                return forfeit_result(game, {name: Unplayed(Termination.NOT_STARTED, why + self.broken[name])
                                             for name in game.sides if name in self.broken})
            return self._attempts(game, claimed)
        finally:
            if claimed and self.lobby is not None:
                self.lobby.release(claimed)  # idle now, or at their Ready; never before the game is done

    def _attempts(self, game: ScheduledGame, workers: list[WorkerRef | None]) -> GameResult:
        """:meth:`play`'s attempts; ``workers`` (the game's lobby seats, or empty) is updated in place
        when a replay takes other workers (:meth:`_reserve_again`), so the caller releases those."""
        tried: list[str] = []
        failures: list[str] = []
        for attempt in range(self.max_attempts):
            if attempt and workers:
                workers[:] = self._reserve_again(game, workers)
            conn = self.pool.acquire(avoid=tried)
            if conn is None:
                break
            try:
                return self._play_on(conn, game, attempt, workers)
            except RefereeFailure as e:
                tried.append(conn.address)
                failures.append(str(e))
                retired = not conn.healthy() and self.pool.retire(conn, str(e))
                left = len(self.pool.alive)
                self._event(f"{game.game_id}: not stored ({e}); it will be played again from its seed")
                if retired:
                    self._event(f"referee {conn.address} retired for the rest of this run ({left} left)")
            finally:
                self.pool.release(conn)
        why = failures[-1] if failures else "no referee was left to play it"
        if not self.pool.alive:
            gone = "; ".join(f"{a} ({w})" for a, w in self.pool.retired.items())
            raise RefereeError(f"no referee left: {gone or why}")
        raise RefereeError(f"{game.game_id} failed on {len(failures)} attempts, last: {why}")

    def check_bots(self, names: Sequence[str]) -> dict[str, str]:
        """Check each named bot once, all at once: it must start and join a practice match.

        A practice match (the bot in every seat, a fresh seed) is created on a referee and one process
        of the bot is started per seat; it passes when the game starts (every seat joined) within
        ``join_ms`` (+ 5 s). The processes are then stopped (the practice match ends on its own with
        disconnects; it is never stored). Logs: ``logs/check/bot<k>/seat<j>.log`` (``k``: the bot's
        index in the config).

        At most ``concurrency`` bots are checked at once, as many as games are played at once: a league of a
        hundred container bots started again would otherwise start every seat of every bot together, and
        bots that were fine would miss ``join_ms`` on a machine sized for ``concurrency`` games.

        Only per-game bots are checked here: a worker pool shows it is broken through the lobby (three
        deaths in a row), and a remote bot's workers may connect later (``no_show_s``).

        :returns: bot name -> one-line problem, for the bots that failed (empty: all passed).
        :raises RefereeError: if no referee is left to check on.
        """
        names = [n for n in names if self.bots[n].mode == "per_game"]
        if not names:
            return {}
        for name in names:  # before any of its containers starts: the check's image is the games'
            if self.bots[name].image is not None:
                self._pinned_image(self.bots[name])
        with ThreadPoolExecutor(max_workers=max(1, self.config.concurrency), thread_name_prefix="check") as pool:
            found = dict(zip(names, pool.map(lambda n: self._check_bot(self.bots[n]), names), strict=True))
        problems = {name: why for name, why in found.items() if why}
        self.broken.update(problems)
        return problems

    def check_fingerprints(self, names: Sequence[str]) -> dict[str, str]:
        """The fingerprint of each named per-game container bot's check as it would be made now
        (:func:`arena.play.fingerprint.container_fingerprint`: its image's content ID, its spec, the match's
        players and time control, the host's docker engine and libraries, the arena's code). A bot without one is left
        out (checked every time): a process bot, a bot whose image docker does not have (its check says so),
        every bot when docker does not answer. Each tag is resolved here (:attr:`pinned`): the ID fingerprinted is
        the one its check and its games start, whatever the tag names later."""
        bots = {n: self.bots[n] for n in names if self.bots[n].mode == "per_game" and self.bots[n].image}
        if self.sandbox is None or not bots:
            return {}
        import docker.errors

        client = self.sandbox.client
        try:  # OSError: requests' ConnectionError and ReadTimeout (dockerd gone or hung) are not DockerExceptions
            engine = client.version()
        except (docker.errors.DockerException, OSError):
            return {}
        context = {"players": self.config.players, "time_control": dataclasses.asdict(self.tc),
                   "docker": engine_facts(engine)}
        out: dict[str, str] = {}
        for name, bot in bots.items():
            try:
                image_id = str(client.api.inspect_image(bot.image)["Id"])
            except docker.errors.DockerException:  # no such image: its check says so
                continue
            except OSError:  # docker stopped answering: no more waits of DOCKER_TIMEOUT_S, one a bot
                break
            self.pinned[_pin_key(bot)] = image_id
            out[name] = container_fingerprint(bot, image_id, context)
        return out

    def _pinned_image(self, bot: BotSpec) -> str:
        """The image ``bot``'s containers start by: docker's ID of the image its tag named when it was first
        resolved (:attr:`pinned`; resolved now if not yet), or the tag itself when docker has no such image or
        does not answer (the container's start then says so in one line)."""
        assert bot.image is not None
        key = _pin_key(bot)
        if key not in self.pinned and self.sandbox is not None:
            image_id = self.sandbox.image_id(bot.image)
            if image_id is None:
                return bot.image
            return self.pinned.setdefault(key, image_id)  # two seats resolving at once: the first one's
        return self.pinned.get(key, bot.image)

    def _check_bot(self, bot: BotSpec) -> str | None:
        """One bot's check (see :meth:`check_bots`): None when it joined, else why not."""
        conn = self.pool.acquire()
        if conn is None:
            raise RefereeError("no referee left to check the bots on")
        try:
            created = conn.admin.CreateMatch(
                pb.CreateMatchRequest(
                    rules=self.rules_pb,
                    seat_names=[bot.name] * self.config.players,
                    games=1,
                    time_control=self.tc_pb,
                ),
                metadata=conn.metadata,
                timeout=30,
            )
        except grpc.RpcError as e:
            raise RefereeError(f"referee {conn.address} refused the practice match: {rpc_status(e)}") from None
        finally:
            self.pool.release(conn)
        log_dir = self.output / "logs" / "check" / f"bot{[b.name for b in self.config.bots].index(bot.name)}"
        log_dir.mkdir(parents=True, exist_ok=True)
        notes: list[str] = []
        procs = [self._launch(conn, bot, k, t, log_dir, notes) for k, t in enumerate(created.tickets)]
        try:
            if notes:
                return re.sub(r"^seat \d+ \(.*?\) ", "", notes[0])
            started = self._watch_start(conn, created.match_id, procs)
            early = next(((k, p.poll()) for k, p in enumerate(procs) if p is not None and p.poll() is not None), None)
        finally:
            self._stop_seats(procs, exit_wait_s=0)
        if started:
            return None
        if early is not None:
            tail = log_tail(log_dir / f"seat{early[0]}.log")
            last = f" (last output: {tail})" if tail else ""
            return f"its process exited with status {early[1]} before joining{last}"
        return f"it did not join within join_ms ({self.tc.join_ms} ms)"

    def _watch_start(self, conn: RefereeConnection, match_id: str, procs: Sequence[Seat]) -> bool:
        """Watch a practice match until its game starts (True: every seat joined) or it ends, ``join_ms``
        (+ 5 s) pass, or one of ``procs`` exits (False)."""
        call = conn.admin.WatchMatch(
            pb.WatchMatchRequest(match_id=match_id), metadata=conn.metadata, timeout=self.tc.join_ms / 1000.0 + 5.0
        )
        done = threading.Event()

        def cancel_when_one_exits() -> None:
            while not done.is_set() and all(p is None or p.poll() is None for p in procs):
                done.wait(0.05)
            call.cancel()

        threading.Thread(target=cancel_when_one_exits, daemon=True).start()
        try:
            for msg in call:
                if msg.WhichOneof("msg") == "result":
                    return False
                if msg.event.kind == pb.EVENT_KIND_GAME_STARTED:
                    return True
        except grpc.RpcError:
            return False
        finally:
            done.set()
        return False

    def _watch(self, conn: RefereeConnection, game: ScheduledGame, mid: str) -> pb.MatchResult | None:
        """Follow match ``mid`` to its result (None: the stream ended without one).

        Without :attr:`live` the referee sends the result alone (``WatchMatch`` ``result_only``); with
        it, every public event too, written to the game's live file for ``arena web``'s spectators
        (:class:`arena.report.live.LiveLog`, flushed per deal; removed at the end).

        :raises grpc.RpcError: the referee went away or lost the match.
        """
        request = pb.WatchMatchRequest(match_id=mid, result_only=not self.live)
        stream = conn.admin.WatchMatch(request, metadata=conn.metadata, timeout=self.watch_timeout_s)
        if not self.live:
            return next((msg.result for msg in stream if msg.WhichOneof("msg") == "result"), None)
        with LiveLog(self.output, game.game_id, game.pair_id, game.seats, self.config.rules.to_dict(),
                     game.seed, blind=self.config.blind_seats) as spectators:
            for msg in stream:
                if msg.WhichOneof("msg") == "result":
                    result: pb.MatchResult = msg.result
                    return result
                if msg.event.kind in LIVE_KINDS_PB:
                    spectators.event(wire.event_from_pb(msg.event))
        return None

    def _reserve_again(self, game: ScheduledGame, held: Sequence[WorkerRef | None]) -> list[WorkerRef | None]:
        """The workers of ``game``'s lost match (still the game's: :meth:`Lobby.reclaim`), for its replay
        after a referee failure: wait up to ``no_show_s`` for them to be done with the lost match (a
        worker that left is replaced by another of its bot).

        :raises RefereeError: if they do not come (the game stays pending for the next run).
        """
        assert self.lobby is not None
        deadline = time.monotonic() + self.config.no_show_s
        while time.monotonic() < deadline:
            got = self.lobby.reclaim(held)
            if got is not None:
                return got
            time.sleep(0.1)
        raise RefereeError(f"{game.game_id}: no workers to play it again after a referee failure")

    def _play_on(
        self,
        conn: RefereeConnection,
        game: ScheduledGame,
        attempt: int,
        workers: Sequence[WorkerRef | None] = (),
    ) -> GameResult:
        """Play ``game`` once on ``conn``; raises :class:`RefereeFailure` for infrastructure failures.

        ``workers[k]``, when given and not None, is the lobby worker reserved for seat k (it gets an
        Assignment); the other seats get a process each (per-game mode).
        """
        clock = _Phases(start=time.perf_counter())
        created = self._create_match(conn, game)
        clock.created = time.perf_counter()
        log_dir = self._log_dir(game, attempt, workers)
        procs: list[Seat] = []
        notes: list[str] = []
        mid = created.match_id
        try:
            self._seat_bots(conn, game, created, workers, log_dir, procs, notes)
            result, early = self._await_result(conn, game, mid, procs)
            clock.result = time.perf_counter()
            record = self._save_record(conn, game, mid)
            clock.record = time.perf_counter()
        finally:
            codes = self._stop_seats(procs)
            for name, proc in zip(game.seats, procs, strict=False):
                if proc is not None:
                    metrics.WORKERS.labels(name).dec()
        ends = _SeatEnds(procs, early, codes, list(workers), _forfeited(result), _connected(result, len(procs)))
        crashed = self._crashed(ends)
        causes = {**self._process_causes(game, ends, log_dir, notes), **self._worker_causes(game, ends, notes)}
        res = self._result(game, mid, result, record, notes, causes)
        return dataclasses.replace(
            res,
            duration_s=time.perf_counter() - clock.start,
            referee=conn.address,
            failures=tuple(_failures(s, crashed[s.seat] or _killed_for_memory(causes.get(s.seat)))
                           for s in result.seats),
            phases_ms=clock.phases_ms(),
            workers=tuple(None if w is None else w.worker_id for w in workers) if workers else None,
            attempt=attempt + 1,
        )

    def _create_match(self, conn: RefereeConnection, game: ScheduledGame) -> pb.CreateMatchResponse:
        """``AdminService.CreateMatch`` for ``game`` (one game, its seed and first dealer).

        :raises RefereeError: if the referee refuses it (the admin token or the rules: the run stops).
        :raises RefereeFailure: if the call fails otherwise (the game is tried on another referee).
        """
        try:
            created: pb.CreateMatchResponse = conn.admin.CreateMatch(
                pb.CreateMatchRequest(
                    rules=self.rules_pb,
                    seat_names=list(game.seats),
                    games=1,
                    seed=game.seed,
                    first_dealer=game.first_dealer,
                    time_control=self.tc_pb,
                    blind=self.config.blind_seats,
                ),
                metadata=conn.metadata,
                timeout=30,
            )
            return created
        except grpc.RpcError as e:
            if e.code() in (
                grpc.StatusCode.UNAUTHENTICATED,
                grpc.StatusCode.PERMISSION_DENIED,
                grpc.StatusCode.INVALID_ARGUMENT,
            ):
                raise RefereeError(f"referee {conn.address} refused the match: {rpc_status(e)}", 2) from None
            raise RefereeFailure(conn.address, f"CreateMatch failed: {rpc_status(e)}") from None

    def _log_dir(self, game: ScheduledGame, attempt: int, workers: Sequence[WorkerRef | None]) -> Path:
        """``<output>/logs/<game id>[/retry<attempt>]``, made when some seat gets a process of its own."""
        log_dir = self.output / "logs" / game.game_id
        if attempt:
            log_dir = log_dir / f"retry{attempt}"
        if not workers or None in workers:  # some seat gets a process (and a log) of its own
            log_dir.mkdir(parents=True, exist_ok=True)
        return log_dir

    def _seat_bots(
        self,
        conn: RefereeConnection,
        game: ScheduledGame,
        created: pb.CreateMatchResponse,
        workers: Sequence[WorkerRef | None],
        log_dir: Path,
        procs: list[Seat],
        notes: list[str],
    ) -> None:
        """Give every seat its bot: a lobby worker gets an Assignment, any other seat a process or a
        container (appended to ``procs`` as it starts, so the caller stops whatever did start)."""
        for seat, (name, ticket) in enumerate(zip(game.seats, created.tickets, strict=True)):
            worker = workers[seat] if workers else None
            if worker is None:
                procs.append(self._launch(conn, self.bots[name], seat, ticket, log_dir, notes))
                if procs[-1] is not None:
                    metrics.WORKERS.labels(name).inc()
            else:
                procs.append(None)
                bot = self.bots[name]
                referee = self._referee_for(conn, bot, worker=True)
                if bot.mode == "remote" and conn.remote is not None:
                    tls = conn.remote_tls
                else:
                    tls = conn.tls and not (bot.jailed and self.jail is not None)
                self._assign(referee, tls, worker, created.match_id, seat, ticket, notes)

    def _await_result(
        self, conn: RefereeConnection, game: ScheduledGame, mid: str, procs: Sequence[Seat]
    ) -> tuple[pb.MatchResult, list[int | None]]:
        """The match's result, and each seat's exit status if its process had already ended on its own
        (read before any is stopped; None: still running, or no process).

        :raises RefereeFailure: if the watch is lost, ends without a result, or the referee aborted.
        """
        try:
            result = self._watch(conn, game, mid)
        except grpc.RpcError as e:
            raise RefereeFailure(conn.address, f"match {mid} lost: {rpc_status(e)}") from None
        early = [None if p is None else p.poll() for p in procs]
        if result is None:
            raise RefereeFailure(conn.address, f"match {mid}: the watch stream ended without a result")
        if result.status == pb.MATCH_STATUS_ABORTED:
            detail = next((s.detail for s in result.seats if s.detail), "")
            raise RefereeFailure(conn.address, f"match {mid} aborted by the referee: {detail or 'no reason'}")
        return result, early

    def _crashed(self, ends: _SeatEnds) -> list[bool]:
        """Per seat: a per-game seat whose process did not start or failed, or a worker that left mid-game; a
        seat connected at the match's end (:meth:`_SeatEnds.at_end`) did neither, whatever its bot did after."""
        workers = [ends.workers[seat] if seat < len(ends.workers) else None for seat in range(len(ends.procs))]
        return [
            (p is None and workers[seat] is None)
            or (not ends.at_end(seat) and (
                self._left(workers[seat]) is not None
                or ends.early[seat] not in (None, 0)
                or ends.codes[seat] not in (None, 0, *STOP_SIGNALS)))
            for seat, p in enumerate(ends.procs)
        ]

    def _left(self, worker: WorkerRef | None) -> str | None:
        """Why ``worker`` left the lobby, or None (still there, or no worker)."""
        return None if worker is None or self.lobby is None else self.lobby.gone(worker)

    def _process_causes(
        self, game: ScheduledGame, ends: _SeatEnds, log_dir: Path, notes: list[str]
    ) -> dict[int, SeatCause]:
        """Per seat whose process or container failed, what killed it: at its memory limit (``oom``),
        at its pids limit (``pids``), an exit with a failure status before the match ended (``crash``,
        with its last words); a note for the rest (an exit status 0 before the match ended, a failure
        status when stopped or after the match ended: a seat connected at its end, sent MatchEnd, did not
        exit before it), and for a process forfeited by timeout that its CPU quota held back."""
        causes: dict[int, SeatCause] = {}
        for seat, code in enumerate(ends.codes):
            proc = ends.procs[seat]
            kind = "container" if isinstance(proc, BotContainer) else "process"
            limits = self.bots[game.seats[seat]].limits
            early = ends.early[seat]
            when = "before joining" if ends.forfeited.get(seat) == Termination.NO_SHOW else "before the match ended"
            tail = log_tail(log_dir / f"seat{seat}.log") if early is not None and seat in ends.forfeited else ""
            last = f" (last output: {tail})" if tail else ""
            if proc is not None and proc.oom_killed:
                causes[seat] = SeatCause(Termination.OOM, f"{kind} was killed at its memory limit "
                                                          f"({limits.memory_mb} MiB)")
            elif proc is not None and proc.pids_limited:
                causes[seat] = SeatCause(Termination.PIDS, f"{kind} reached its pids limit ({limits.pids}); "
                                                           f"exit status {code}")
            elif ends.at_end(seat):
                if (status := ends.after_end(seat)) is not None:
                    notes.append(f"seat {seat} ({game.seats[seat]}) {kind} exited with status {status} "
                                 "after the match ended")
            elif early not in (None, 0, *STOP_SIGNALS) and seat in ends.forfeited:
                causes[seat] = SeatCause(Termination.CRASH, f"{kind} exited with status {early} {when}{last}")
            elif early is not None and seat in ends.forfeited:  # ended on its own: say so, with its last words
                notes.append(f"seat {seat} ({game.seats[seat]}) {kind} exited with status {early} {when}{last}")
            elif code not in (None, 0, *STOP_SIGNALS):
                notes.append(f"seat {seat} ({game.seats[seat]}) {kind} exited with status {code}")
            throttled = proc.cpu_throttled if isinstance(proc, BotProcess) else 0
            if throttled and ends.forfeited.get(seat) == Termination.TIMEOUT:
                notes.append(f"seat {seat} ({game.seats[seat]}) {kind} was held at its CPU limit "
                             f"({limits.cpus:g} cores) in {throttled} periods of {CPU_PERIOD_US // 1000} ms")
        return causes

    def _worker_causes(self, game: ScheduledGame, ends: _SeatEnds, notes: list[str]) -> dict[int, SeatCause]:
        """Add a note per lobby worker that left during the game (or, its seat connected at the match's end,
        that left the lobby); returns the seats whose worker (process or container) was killed at its memory
        limit (``oom``).

        A worker killed for memory closes its Play stream (the referee forfeits it: ``disconnect``) and
        its Connect stream (the lobby notes it left); on a busy machine the match can end before the
        lobby has read its close, so a seat forfeited for a disconnect is asked about too."""
        causes: dict[int, SeatCause] = {}
        for seat, worker in enumerate(ends.workers):
            left = self._left(worker)
            if worker is None or (left is None and ends.forfeited.get(seat) != Termination.DISCONNECT):
                continue
            if left is not None:
                when = "left the lobby, its seat connected at the match's end" if ends.at_end(seat) else \
                    "left during the game"
                notes.append(f"seat {seat} ({game.seats[seat]}) worker {worker.worker_id} {when}: {left}")
            killed = getattr(self.kinds.get(game.seats[seat]), "killed_for_memory", None)
            if killed is not None and killed(worker.digest):
                bot = self.bots[game.seats[seat]]
                kind = "container" if bot.in_container else "process"
                what = f"worker {kind} was killed at its memory limit ({bot.limits.memory_mb} MiB)"
                causes[seat] = SeatCause(Termination.OOM, what)
        return causes

    def _referee_for(self, conn: RefereeConnection, bot: BotSpec, worker: bool = False) -> str:
        """The referee's address as ``bot``'s process dials it: its unix socket inside the sandbox
        (arena/hosting/jail.py) for a sandboxed bot, else ``host:port`` (for a lobby ``worker``, the
        address remote workers are told, ``--referee-advertise``'s, when there is one; for a per-game
        bot, an embedded referee's plaintext unix socket when it serves TLS to remote workers; for a
        ``mode = "remote"`` worker, the embedded referee's listener for them when it has one:
        :attr:`RefereeConnection.remote`, as its own address is the container sandbox's gateway)."""
        if bot.jailed and self.jail is not None:
            return self.jail.referee_inside()
        if worker and bot.mode == "remote" and conn.remote is not None:
            return conn.remote
        return (conn.advertise or conn.address) if worker else (conn.local or conn.address)

    def _assign(
        self, referee: str, tls: bool, worker: WorkerRef, match_id: str, seat: int, ticket: str, notes: list[str]
    ) -> None:
        """Send ``worker`` the Assignment of ``seat`` on the referee at ``referee``, over TLS when ``tls``
        (an external TLS referee; a sandboxed bot dials the embedded one's unix socket) (a worker that has
        just left gets nothing: the referee then forfeits the seat by no-show, and a note says why)."""
        assert self.lobby is not None
        assignment = lpb.Assignment(
            match_id=match_id,
            seat=seat,
            ticket=ticket,
            referee=referee,
            referee_tls=tls,
            rules=self.rules_pb,
            time_control=self.tc_pb,
        )
        if not self.lobby.assign(worker, assignment):
            notes.append(f"seat {seat} worker {worker.worker_id} left before its assignment: {self.lobby.gone(worker)}")

    def _stop_seats(self, procs: Sequence[Seat], exit_wait_s: float = EXIT_WAIT_S) -> list[int | None]:
        """:func:`stop_all` on a game's seats, then each sandboxed process's sockets given up."""
        codes = stop_all(procs, exit_wait_s)
        for p in procs:
            if isinstance(p, BotProcess) and p.jail is not None and self.jail is not None:
                self.jail.release(p.jail)
        return codes

    def _launch(
        self, conn: RefereeConnection, bot: BotSpec, seat: int, ticket: str, log_dir: Path, notes: list[str]
    ) -> Seat:
        if bot.in_container:
            return self._launch_container(conn, bot, seat, ticket, log_dir, notes)
        referee = self._referee_for(conn, bot)
        argv = expand_command(
            bot,
            {
                "python": sys.executable,
                "config_dir": self.config_dir,
                "ticket": ticket,
                "referee": referee,
                "seat": str(seat),
            },
        )
        env = bot_environment(bot, ticket, referee, self.secret_names, self.secret_values)
        # sockets of its own, not its bot's: two processes of one bot at once (partners, a pair's two games)
        # could pass each other bits through the counts a server keeps (Jail.for_process)
        jail = self.jail.for_process(bot.name, bot.limits.tmpfs_mb) if bot.jailed and self.jail else None
        try:
            return BotProcess.start(
                argv,
                cwd=bot.cwd,
                env=env,
                log_path=log_dir / f"seat{seat}.log",
                log_limit=self.config.bot_log_bytes,
                jail=jail,
                limits=bot.limits,
            )
        except OSError as e:
            if self.jail is not None and jail is not None:
                self.jail.release(jail)
            if bot.cwd is not None and not Path(bot.cwd).is_dir():
                notes.append(f"seat {seat} ({bot.name}) could not start: no working directory {bot.cwd!r}")
            else:
                notes.append(f"seat {seat} ({bot.name}) could not start {argv[0]!r}: {e.strerror or e}")
            return None

    def _launch_container(
        self, conn: RefereeConnection, bot: BotSpec, seat: int, ticket: str, log_dir: Path, notes: list[str]
    ) -> BotContainer | None:
        """Start seat ``seat``'s container: its environment is the bot's ``env`` plus the ticket and the
        referee's address, nothing of the arena's; its output is copied to ``seat<k>.log`` at the end."""
        if self.sandbox is None or bot.image is None:
            notes.append(f"seat {seat} ({bot.name}) could not start: container bots need the sandbox (docker)")
            return None
        env = {**bot.env, ENV_TICKET: ticket, ENV_REFEREE: conn.address}
        role = f"{log_dir.relative_to(self.output / 'logs').as_posix()}-s{seat}"
        image = self._pinned_image(bot)
        try:
            started = self.sandbox.start(image, bot.name, role, env, bot.limits, log_dir / f"seat{seat}.log",
                                         log_limit=self.config.bot_log_bytes)
            if image == bot.image:  # started by the tag (docker did not answer its look-up): pin what it ran
                self.pinned.setdefault(_pin_key(bot), str(started.container.attrs["Image"]))
            return started
        except NoImage as e:  # the checked image was removed (a rebuild of the tag, a replaced submission)
            gone = e if image == bot.image else NoImage.pinned(bot.name, image, bot.image, checked=True)
            notes.append(f"seat {seat} ({bot.name}) could not start: {gone}")
        except SandboxError as e:
            notes.append(f"seat {seat} ({bot.name}) could not start: {e}")
        return None

    def _save_record(self, conn: RefereeConnection, game: ScheduledGame, match_id: str) -> str:
        """Fetch the finished match's record into ``records/<game id>.jsonl``; returns that relative path.

        A referee hands the record over only once the match is over (before, ``FAILED_PRECONDITION``:
        the record shows hidden cards); right after the result that may take a moment, so a refusal
        or an incomplete record is retried for up to 5 s.

        :raises RefereeFailure: if the referee cannot hand over a complete record (a result that cannot
            be audited is not stored).
        """
        deadline = time.monotonic() + 5.0
        while True:
            try:
                rec = conn.admin.GetRecord(pb.GetRecordRequest(match_id=match_id), metadata=conn.metadata, timeout=30)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.FAILED_PRECONDITION or time.monotonic() > deadline:
                    why = f"match {match_id}: no record: {rpc_status(e)}"
                    raise RefereeFailure(conn.address, why) from None
                time.sleep(0.05)
                continue
            if rec.complete:
                break
            if time.monotonic() > deadline:
                why = f"match {match_id}: the record is incomplete after the result"
                raise RefereeFailure(conn.address, why)
            time.sleep(0.05)
        rel = Path("records") / f"{game.game_id}.jsonl"
        path = self.output / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in rec.lines), encoding="utf-8")
        tmp.replace(path)
        return rel.as_posix()

    def _result(
        self,
        game: ScheduledGame,
        match_id: str,
        result: pb.MatchResult,
        record: str,
        notes: Sequence[str],
        causes: Mapping[int, SeatCause],
    ) -> GameResult:
        """The stored result of a match: each failing seat's reason leads with the arena's cause when
        it saw one (``causes``: ``oom``, ``pids``, ``crash``), then what the referee saw."""
        scores = (0, 0)
        reasons: list[str] = []
        if result.games:
            g = result.games[-1]
            scores = (int(g.scores[0]), int(g.scores[1])) if len(g.scores) == 2 else scores
            if g.winner >= 0 and not g.forfeited:
                reasons.append(f"side {g.winner} ({game.sides[g.winner]}) reached {scores[g.winner]}")
        terminations = [self._seat_reason(s, causes.get(int(s.seat)), reasons) for s in result.seats]
        if result.forfeited_side >= 0:
            reasons.append(f"side {result.forfeited_side} ({game.sides[result.forfeited_side]}) forfeited")
        reasons.extend(notes)
        bank = self.tc.bank_ms
        think_ms = sum(max(0, bank - int(s.bank_left_ms)) for s in result.seats)
        winner = int(result.winner) if result.winner in (0, 1) else None
        return GameResult(
            game_id=game.game_id,
            match_id=match_id,
            pair_id=game.pair_id,
            sides=game.sides,
            scores=scores,
            winner=winner,
            reasons=tuple(reasons),
            record_path=record,
            seed_hex=game.seed.hex(),
            first_dealer=game.first_dealer,
            status=MatchStatus.from_pb(result.status),
            terminations=tuple(terminations),
            think_ms=think_ms,
        )

    @staticmethod
    def _seat_reason(seat: pb.SeatResult, cause: SeatCause | None, reasons: list[str]) -> Termination:
        """One seat's termination, and its reason appended to ``reasons`` when it failed: the arena's
        ``cause`` first when the referee saw only its consequence (or any forfeit, for a memory or pids
        limit), e.g. ``seat 1 (x) crash: process exited with status 1 before the match ended (the
        referee saw disconnect: …)``."""
        term = Termination.from_pb(seat.termination)
        who = f"seat {seat.seat} ({seat.name})"
        if term.forfeits or term == Termination.UNSPECIFIED:
            unknown = term == Termination.UNSPECIFIED and seat.termination  # a newer referee's value: its number
            saw = (str(int(seat.termination)) if unknown else term.value) + (f": {seat.detail}" if seat.detail else "")
            if cause is not None and term.forfeits and (term in CONSEQUENCES or cause.termination != Termination.CRASH):
                reasons.append(f"{who} {cause.termination}: {cause.text} (the referee saw {saw})")
                return cause.termination
            reasons.append(f"{who} {saw}")
        if cause is not None:  # not what ended its part (e.g. killed for memory after a normal end): a note
            reasons.append(f"{who} {cause.text}")
        return term
