"""``arena serve CONFIG``: the league as a service (docs/arena.md, "A league that grows").

The lobby stays open; the pending games of the config's entrants are played as workers are idle (those
of a remote bot none of whose workers has connected yet wait for its first as long as it takes, not
forfeited: :class:`arena.tournament.runner.Absent`; a ladder's wait ``no_show_s``, as ``arena run``'s);
after each game the result is stored, every callback in :attr:`League.after_game` is called and the
ratings and leaderboard are republished when a publication is due (:data:`PUBLISH_SPACING`: a
publication rates and writes every stored game, so its cost grows with the league; it may take at most
a tenth of the loop's time); when every game is played (or the service stops) the games not yet
published are published, and the service waits (publishing again when the remote bots whose games wait for
their first worker change without a game: ratings.json's ``tournament.waiting``). Signals:

- ``SIGHUP``: the games in flight finish, then the config is read again — new bots (or versions,
  or a raised ``games_per_pairing``) add games; a changed rule or time control is refused with the
  field named and the old config kept; remote bots' tokens are read again (revoked ones are dropped, and those
  of bots no longer in the config: a competition's retired or withdrawn entries);
  each bot not yet checked (new, changed, or left out) is checked before it plays, as ``arena run``
  checks every bot, and one that fails is left out of scheduling (:meth:`League._check`), as is one that
  passed and then failed :data:`BROKEN_IN_A_ROW` games in a row for its own fault (:meth:`League._count_breakdowns`);
- ``SIGTERM`` / ``SIGINT``: the games in flight finish, the workers, lobby and referees stop, exit 0.

A ladder (``format = "ladder"``, :mod:`arena.formats.ladder_run`) has no schedule: the loop asks it for
the next pairs (one for every two games of concurrency), plays them, and asks again; when it stops (settled, a
budget spent) it says why once and waits, asking again after SIGHUP (a new entrant) and at UTC midnight.

The bots left out are listed, each with its one public line (:func:`public_why`), in the store's meta
(:data:`arena.tournament.runner.LEFT_OUT_KEY`): ratings.json's ``tournament.left_out``, the web's board and
the terminal's show them (docs/arena.md, "Bot failures").

A restart (even after SIGKILL) resumes: stored games stay, games in flight are played again from their
seeds, remote workers dial the lobby again by themselves, and a container bot whose passed check the store keeps
under an unchanged fingerprint is not checked again (:meth:`League._check`). The master seed is never revealed by
``serve`` (a league has no last game); ``arena run`` reveals it once every scheduled game is played, and
``arena competition close`` once a competition's league is over for good (then ``serve`` refuses the folder:
:class:`arena.tournament.runner.LeagueClosed`).

Plug-ins (the web UI, live ratings) use :class:`League`: ``league.after_game.append(fn)`` with
``fn(result, tournament)``, called in the serve loop's thread after each stored game;
``league.request_republish()`` from any thread (the background bootstrap when it finishes) has the
serve loop publish again once no game is being played.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from arena import metrics
from arena.config import BotSpec, ConfigError, TournamentConfig, check_bot_cwds, load_config
from arena.lobby.tokens import TokenBook
from arena.play.fingerprint import PASSED_CHECKS_KEY, PassedChecks
from arena.tournament.game_logs import GameLogs
from arena.tournament.result import GameResult
from arena.tournament.runner import (
    LADDER_KEY,
    LEAGUE_KEY,
    LEFT_OUT_KEY,
    WAITING_KEY,
    Tournament,
    open_tournament,
    pending_games,
    run_games,
    unpaired_twins,
    waiting_facts,
)
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import StoreMismatch
from referee.outcome import Termination
from referee.rules.seats import side_of
from referee.wire import printable

if TYPE_CHECKING:  # imported where used: only a ladder needs it
    from arena.formats.ladder_run import LadderRun

#: Seconds between two looks at the stop, reload and republish requests while no game is played.
IDLE_S = 0.5
#: While games are played, a publication after a game is due once the time since the last one ended is
#: at least this many times what the last one took: publishing (every stored game rated and written, seconds
#: for a league of thousands of games) then takes at most a tenth of the serve loop's time, whatever the
#: league's size. 0: after every game.
PUBLISH_SPACING = 9.0

#: A bot that passed its check and then fails this many games in a row for its own fault (:data:`BROKEN_ENDS`)
#: is left out until a reload checks it again: a bot broken for good forfeits a few games, not all of its own.
BROKEN_IN_A_ROW = 3
#: How a seat ends when its bot is broken, not when it lost or erred: it could not start (``not_started``),
#: its workers died again and again (``broken``), it never joined (``no_show``), its process died (``crash``).
#: A timeout, an illegal action, a disconnect or a memory limit is the bot's play, and loses that game only.
BROKEN_ENDS = frozenset({Termination.NOT_STARTED, Termination.BROKEN, Termination.NO_SHOW, Termination.CRASH})
#: A seat's end that says nothing of its bot: it did not have to play (the other side forfeited, the match stopped).
SILENT_ENDS = frozenset({Termination.OTHER_SEAT_FORFEITED, Termination.ABORTED, Termination.UNSPECIFIED})
#: The longest line published for a bot left out (:func:`public_why`): a longer one is cut, ending with "…".
WHY_CHARS = 300
#: A run of letters and digits as long as a token (a bot may print one it was given): never published.
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,}")

#: Called after each stored game with the result and the open tournament.
AfterGame = Callable[[GameResult, Tournament], None]


def public_why(why: str, output: Path) -> str:
    """``why``, a bot's failure line, as the board publishes it: without the bot's own output it may quote
    (`` (last output: …)``, :func:`arena.play.environment.log_tail`: its author's log, private to them as every
    bot log is, and it may print its cards), one line of printable characters, each path under ``output``
    (the arena's folder: logs, submissions) as ``<output>``, each token-shaped run (:data:`_TOKEN_SHAPE`) as
    ``<redacted>``, at most :data:`WHY_CHARS` characters."""
    line = printable(" ".join(why.split(" (last output: ")[0].split()))
    for folder in sorted({str(output.absolute()), str(output.resolve())}, key=len, reverse=True):
        line = re.sub(re.escape(folder) + r"[^\s'\"(),;]*", "<output>", line)
    line = _TOKEN_SHAPE.sub("<redacted>", line)
    return line if len(line) <= WHY_CHARS else line[: WHY_CHARS - 1] + "…"


def failure_line(result: GameResult, label: str) -> str:
    """The reason ``result`` gives for ``label``'s failure (its seat's or side's), without the bot's last output:
    a game's deal is secret until its duplicate twin is played, and a bot may print its cards."""
    line = next((r for r in result.reasons if f"({label})" in r), f"it failed game {result.game_id}")
    return line.split(" (last output: ")[0]


@dataclass
class League:
    """The serve loop's state: the open tournament, the game runner, the lobby (if any) and the hooks.

    :meth:`request_stop` ends the service and :meth:`request_reload` has the config read again (the
    signal handlers call them; so may an embedding program): either lets the games in flight finish
    first. ``after_game`` callbacks run after each stored game; ``reopened`` ones with the config that a
    reload took (not after a refused one).
    """

    config_path: str
    output: Path
    console: Console
    publish: Callable[[Tournament], Any]
    make_runner: Callable[[TournamentConfig], Any]
    after_game: list[AfterGame] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    reload: threading.Event = field(default_factory=threading.Event)
    halt: threading.Event = field(default_factory=threading.Event)  # ends the current round of games
    republish: threading.Event = field(default_factory=threading.Event)  # publish again when no game is played
    tournament: Tournament | None = None
    runner: Any = None
    setup: Any = None
    ladder: LadderRun | None = None  # for format = "ladder" (arena/formats/ladder_run.py)
    asked: tuple[int, str] | None = None  # a stopped ladder: (UTC day, stop) it was last asked on
    grow: Callable[[TournamentConfig], TournamentConfig] | None = None  # adds entrants (a competition's)
    #: The lobby's bot tokens, made before the lobby opens: a competition tells it a new remote entry's token
    #: (:meth:`arena.lobby.tokens.TokenBook.tell`) from the moment its service answers, the lobby's opening too.
    tokens: TokenBook = field(default_factory=TokenBook)
    lobby_services: list[Callable[[Any], None]] = field(default_factory=list)  # more services on the lobby
    reopened: list[Callable[[TournamentConfig], None]] = field(default_factory=list)  # a SIGHUP's config, taken
    publish_spacing: float = PUBLISH_SPACING  # see PUBLISH_SPACING
    #: The entrants none of whose games may start (a competition's disqualified ones), asked before each round
    #: and before a reload's twins (a ladder leaves them out of its choices and its board, and voids their games
    #: in its fit, for good: :meth:`arena.formats.ladder_run.LadderRun.bar`): they stay out until a reload drops
    #: them from the config.
    barred: Callable[[], Collection[str]] = lambda: ()
    left_out: dict[str, str] = field(default_factory=dict, init=False)  # label -> why it is left out (public_why)
    _in_a_row: dict[str, int] = field(default_factory=dict, init=False)  # label -> games failed in a row (BROKEN_ENDS)
    _passed: dict[str, BotSpec] = field(default_factory=dict, init=False)  # label -> the bot that passed its check
    game_logs: GameLogs | None = field(default=None, init=False)  # per-game logs kept (bot_logs_kept_games)
    unpublished: bool = field(default=False, init=False)  # a game was stored since the last publication
    #: The remote bots whose games waited for their first worker at the last publication (WAITING_KEY; none when
    #: a tournament opens): when the list moves without a game, the league at rest publishes again.
    _waiting_published: list[str] = field(default_factory=list, init=False)
    _last_publication: tuple[float, float] = field(default=(0.0, 0.0), init=False)  # (monotonic s it ended, s it took)
    _said: set[str] = field(default_factory=set, init=False)  # the run loop's notes said (_note_once)

    def request_stop(self) -> None:
        """Stop after the games in flight (thread- and signal-safe)."""
        self.stop.set()
        self.halt.set()

    def request_republish(self) -> None:
        """Publish again once no game is being played (thread-safe; e.g. a background bootstrap finished:
        while games are played each stored game publishes anyway). The serve loop's thread publishes."""
        self.republish.set()

    def request_reload(self) -> None:
        """Read the config again after the games in flight and the twins of the pairs they began
        (:meth:`_finish_pairs`; thread- and signal-safe)."""
        self.reload.set()
        self.halt.set()

    def _note(self, message: str, label: str = "league") -> None:
        self.console.print(f"[cyan]{label}:[/cyan] {escape(message)}", soft_wrap=True, highlight=False)

    def open(self, config: TournamentConfig) -> None:
        """Open (or re-open, after SIGHUP) the tournament of ``config`` and its lobby and workers.

        :raises StoreMismatch: naming the fields that changed (rules, time control, ...).
        """
        from arena.lobby.setup import open_lobby

        told = self.tokens.mark()  # before the book is read: an entry told before and not in ``config`` left
        if self.grow is not None:
            config = self.grow(config)
        t = open_tournament(config, self.output)
        t.store.set_meta(LEAGUE_KEY, "1")  # its pages say the seed stays secret (arena.web.data.WebData.facts)
        old, self.tournament = self.tournament, t
        if old is not None:
            old.store.close()
        self.runner = self.make_runner(config)
        if hasattr(self.runner, "use_entrants"):
            self.runner.use_entrants(t.entrants)
        if config.uses_lobby and hasattr(self.runner, "attach_lobby"):
            if self.setup is None:
                self.setup = open_lobby(config, t.store, self.output / "logs", self.runner.secret_names,
                                        self.runner.secret_values, lambda m: self._note(m, "workers"),
                                        getattr(self.runner, "sandbox", None),
                                        loop=self.runner.pool.embedded_loop(), jail=self.runner.jail,
                                        services=self.lobby_services, tokens=self.tokens)
                remote = self.setup.lobby.remote_address  # the gateway's port is not tournament.lobby's
                self._note(f"lobby: {self.setup.lobby.address}" + (f", competitors and remote workers at {remote}"
                                                                    if remote else ""))
            else:
                self.setup.update(config, t.store, told)
            self.runner.attach_lobby(self.setup.lobby, self.setup.kinds)
        if config.ladder is not None:
            from arena.formats.ladder_run import LadderRun

            self.ladder, self.asked = LadderRun(t), None
            self.ladder.bar(self.barred())  # disqualified: their games void in its fit (kept in the store)
            self._check(t, self.ladder.active)
            self.ladder.leave_out(self.left_out)
            self._list_left_out(t)
            self._note(f"{config.name}: a ladder of {len(t.entrants)} bots, {t.store.count()} games stored; "
                       f"{len(t.labels)} entrants in all")
            return
        self.ladder = None
        pending = pending_games(t)
        self._check(t, dict.fromkeys(n for g in pending for n in g.sides))
        self._list_left_out(t)
        pending = self._playable(pending)
        self._note(f"{config.name}: {len(t.entrants)} bots, {len(t.schedule)} games scheduled, "
                   f"{len(pending)} to play; {len(t.labels)} entrants in all")

    def _check(self, t: Tournament, labels: Iterable[str]) -> None:
        """Check the entrants ``labels`` that have not passed yet (this bot, under this label) as ``arena run``
        checks every bot before its first game (:meth:`arena.play.game.GrpcGameRunner.check_bots`: it must
        start and join a practice match), at the start and after each reload; a bot that fails is left out
        (:meth:`_leave_out`: its games are not played, so not forfeited one by one). A left-out bot is checked
        again at every reload (it was mended); one that passed is not (a bot that breaks later loses its
        games, as in ``arena run``, until :meth:`_count_breakdowns` leaves it out).

        A container bot's passed check is kept in the store under its fingerprint (:meth:`_unchanged`,
        :mod:`arena.play.fingerprint`): a restart does not check it again while the fingerprint is the same
        (its image's content, its spec, the arena's code), and a reload checks it again when it changed (the
        tag now names another image). The image ID the fingerprint was made on is the one the check and every
        game of this run start (the runner's pins): a tag moved meanwhile plays only after a reload or restart.
        A process bot is checked at every start (no sound cheap fingerprint).

        :raises RefereeError: if no referee is left to check on.
        """
        for gone in [label for label in self.left_out if label not in t.entrants]:  # dropped by the reload
            del self.left_out[gone]
            metrics.BOTS_LEFT_OUT.remove(gone)
            self.unpublished = True
        self._forget_gone_checks(t)
        check = getattr(self.runner, "check_bots", None)
        if check is None:  # the simulated runner starts no bots
            return
        before = self._fingerprints(labels := list(dict.fromkeys(labels)))
        todo = [label for label in labels if not self._unchanged(t, label, before.get(label))]
        if not todo:
            return
        # the runner starts the check's and the games' containers by the image ID ``before`` resolved (its
        # pins), so a tag moved during the check neither changes what passed nor what plays: no second look
        problems: dict[str, str] = check(todo)
        for label in todo:
            why = problems.get(label)
            self._in_a_row.pop(label, None)
            if why is None:
                self._passed[label] = t.entrants[label]
                if before.get(label) is not None:
                    self._keep_check(t, label, before[label])
                if self.left_out.pop(label, None) is not None:
                    metrics.BOTS_LEFT_OUT.remove(label)
                    self.unpublished = True
                    self._note(f"bot {label!r} passed its check: its games are played")
                continue
            self._leave_out(label, f"failed its check: {why}")

    def _fingerprints(self, labels: Sequence[str]) -> dict[str, str]:
        """The runner's fingerprints of the checks of ``labels`` (:meth:`arena.play.game.GrpcGameRunner.
        check_fingerprints`; none for a runner without them): label -> hex, for the bots that have one."""
        prints = getattr(self.runner, "check_fingerprints", None)
        return dict(prints(labels)) if prints is not None and labels else {}

    def _unchanged(self, t: Tournament, label: str, fingerprint: str | None) -> bool:
        """Whether ``label`` need not be checked now: with a ``fingerprint``, a check of it passed (this run or
        an earlier one: the store's :data:`PASSED_CHECKS_KEY`) and is kept under it (said once: not checked
        again); without one, the same spec passed in this run."""
        if fingerprint is None:
            return self._passed.get(label) == t.entrants[label]
        passed = PassedChecks.parse(t.store.get_meta(PASSED_CHECKS_KEY))
        if passed.by_label.get(label) != fingerprint:
            return False
        if self._passed.get(label) != t.entrants[label]:
            self._passed[label] = t.entrants[label]
            self._note(f"bot {label!r} passed its check before, on the same image and spec "
                       f"(fingerprint {fingerprint[:12]}): not checked again")
        return True

    def _forget_gone_checks(self, t: Tournament) -> None:
        """Drop the kept checks of the labels no longer entered (a reload dropped them, a competitor's version
        was retired by a newer one): :data:`PASSED_CHECKS_KEY` holds only entrants, so it stays as small as the
        field (one that comes back is checked again)."""
        passed = PassedChecks.parse(t.store.get_meta(PASSED_CHECKS_KEY))
        gone = [label for label in passed.by_label if label not in t.entrants]
        for label in gone:
            del passed.by_label[label]
        if gone:
            t.store.set_meta(PASSED_CHECKS_KEY, passed.dumps())

    def _keep_check(self, t: Tournament, label: str, fingerprint: str | None) -> None:
        """Keep ``label``'s passed check under ``fingerprint`` in the store, or forget it (None: it failed,
        or was left out, so the next start checks it again)."""
        passed = PassedChecks.parse(t.store.get_meta(PASSED_CHECKS_KEY))
        if fingerprint is None:
            if passed.by_label.pop(label, None) is None:
                return
        else:
            passed.by_label[label] = fingerprint
        t.store.set_meta(PASSED_CHECKS_KEY, passed.dumps())

    def _leave_out(self, label: str, why: str) -> None:
        """Leave ``label`` out (:attr:`left_out`: none of its games is played until a reload's check passes):
        ``why`` (one line) is said once on the host's terminal as it is (the bot's last output included)
        and published as :func:`public_why` makes it, and ``allfours_arena_bots_left_out{bot}`` is 1."""
        self.left_out[label] = public_why(why, self.output)
        self._passed.pop(label, None)  # checked again at the next reload
        if self.tournament is not None:  # and at the next start
            self._keep_check(self.tournament, label, None)
        self.unpublished = True
        metrics.BOTS_LEFT_OUT.labels(label).set(1)
        said = "" if why.startswith("left out") else "it is left out: "
        told = printable(" ".join(why.split()))  # the host's own terminal: the bot's last output too
        self.console.print(f"[yellow]warning:[/yellow] bot {escape(repr(label))} {escape(told)}; "
                           f"{said}none of its games is played until it passes its check (a reload, SIGHUP, "
                           "checks it again)", soft_wrap=True, highlight=False)

    def _list_left_out(self, t: Tournament) -> None:
        """Write :attr:`left_out` into the store's meta (:data:`LEFT_OUT_KEY`), by bot: the one list the
        publication and the web read (:func:`arena.tournament.runner.left_out_facts`)."""
        t.store.set_meta(LEFT_OUT_KEY, json.dumps([{"bot": b, "why": w} for b, w in sorted(self.left_out.items())]))

    def _count_breakdowns(self, t: Tournament, result: GameResult) -> None:
        """After each stored game: count the games in a row each of its bots failed for its own fault (a seat
        of it ended in :data:`BROKEN_ENDS`); a game it played (any other end of its own) starts the count
        again, one it had no part in (:data:`SILENT_ENDS`: its opponent forfeited first) leaves it. At
        :data:`BROKEN_IN_A_ROW` the bot is left out with the last failure's line (:meth:`_leave_out`) and the
        round ends after the games in flight, so none of its games starts (:meth:`_round`). A remote bot is
        not: its workers may connect at any time, and no reload would be needed to play it again."""
        for side, label in enumerate(result.sides):
            ends = {end for seat, end in enumerate(result.terminations) if side_of(seat) == side}
            if not ends & BROKEN_ENDS:
                if ends - SILENT_ENDS:
                    self._in_a_row.pop(label, None)
                continue
            n = self._in_a_row[label] = self._in_a_row.get(label, 0) + 1
            if n >= BROKEN_IN_A_ROW and label not in self.left_out and _local(t, label):
                self._in_a_row.pop(label)
                self._leave_out(label, f"left out after {n} games in a row it failed to start or crashed: "
                                       f"{failure_line(result, label)}")
                if self.ladder is not None:
                    self.ladder.leave_out([label])
                self._list_left_out(t)
                self.halt.set()

    def _playable(self, games: Sequence[ScheduledGame]) -> list[ScheduledGame]:
        """``games`` but those of a bot left out (:meth:`_check`) or barred (:attr:`barred`): they stay pending,
        unplayed."""
        out = set(self.left_out) | set(self.barred())
        return [g for g in games if not any(side in out for side in g.sides)]

    def _reopen(self) -> None:
        """SIGHUP: read the config again; keep the old one (and say why) if the new one is refused."""
        assert self.tournament is not None
        try:
            config = load_config(self.config_path)
            check_bot_cwds(config, self.output)
            self.open(config)
        except (ConfigError, StoreMismatch) as e:
            self._note(f"the new config is refused, the old one stays: {e}", "reload")
            return
        for fn in list(self.reopened):
            fn(config)

    def _stored(self, result: GameResult, written: bool) -> None:
        t = self.tournament
        assert t is not None
        if not written:
            return
        metrics.game_stored(result)  # arena serve --metrics-port
        metrics.GAMES_PENDING.dec()  # counted at the round's start: one fewer now
        self._count_breakdowns(t, result)
        if self.ladder is not None:
            self.ladder.add(result)
            self.ladder.bar(self.barred())  # a disqualification since the round began: its board refitted now
            t.store.set_meta(LADDER_KEY, json.dumps(self.ladder.board(time.time())))
        self.game_logs = GameLogs.following(self.game_logs, t.config.bot_logs_kept_games)
        self.game_logs.after_store(t.store)
        self.unpublished = True
        ended, took = self._last_publication
        if time.monotonic() - ended >= self.publish_spacing * took:
            self._publish(t)
        for fn in list(self.after_game):
            fn(result, t)

    def _publish(self, t: Tournament) -> None:
        """Publish ``t`` now (every stored game) and note when and how long it took (:data:`PUBLISH_SPACING`)."""
        start = time.monotonic()
        self.unpublished = False
        self._waiting_published = waiting_facts(t.store.get_meta(WAITING_KEY))
        self.publish(t)
        end = time.monotonic()
        self._last_publication = (end, end - start)

    def serve(self) -> None:
        """Play, republish, reload and wait until :attr:`stop` is set (see the module docstring)."""
        try:
            while not self.stop.is_set():
                self._round()
        finally:  # stopped (or failed): what was stored since the last publication is published
            if self.unpublished and self.tournament is not None:
                self._publish(self.tournament)

    def _round(self) -> None:
        """One turn of :meth:`serve`: play the pending games, or publish what is due and wait; then reload if asked."""
        t = self.tournament
        assert t is not None
        if self.halt.is_set() and not (self.stop.is_set() or self.reload.is_set()):  # a bot was left out
            self.halt.clear()  # (_count_breakdowns): the games of the others go on
            if self.stop.is_set() or self.reload.is_set():  # asked for between the two looks: it stands
                self.halt.set()
        pending = (self._ladder_games(t, self.ladder) if self.ladder is not None
                   else self._playable(pending_games(t)))
        metrics.GAMES_PENDING.set(len(pending))
        played = bool(pending) and not self.halt.is_set() and self._play(t, pending, self.halt) > 0
        if not played:  # nothing to play, or only games that wait for a remote bot's first worker
            # at rest: the games stored since the last publication, or the bots whose games wait for their first
            # worker changed (one came, or the games left wait for one): published with the ratings
            moved = waiting_facts(t.store.get_meta(WAITING_KEY)) != self._waiting_published
            if (self.unpublished or moved) and not self.halt.is_set():
                self._publish(t)
            self.halt.wait(IDLE_S)
            if self.republish.is_set() and not self.halt.is_set():
                self.republish.clear()
                self._publish(t)
        if self.reload.is_set() and not self.stop.is_set():
            self.reload.clear()
            self.halt.clear()
            self._finish_pairs(t)
            self._reopen()

    def _finish_pairs(self, t: Tournament) -> None:
        """Before a reload takes the new config: play the second game of every duplicate pair whose first
        is stored. The new config may drop an entrant (a competitor's version retired by a newer one, a bot
        the host removed), and a pair of its left half played stayed so for ever: one game counted without
        the twin that cancels its deal luck. A ladder plays half-played pairs first by itself."""
        if self.ladder is not None:
            return
        twins = self._playable(unpaired_twins(t.schedule, t.store.stored_ids()))
        if twins:
            self._note(f"first the {len(twins)} game(s) that complete their duplicate pairs", "reload")
            self._play(t, twins, self.stop)

    def _play(self, t: Tournament, games: Sequence[ScheduledGame], stop: threading.Event) -> int:
        """Play ``games`` (:func:`run_games`); returns how many were stored. A round-robin league waits for a
        remote bot's first worker as long as it takes (``continuous``: its games are passed over, not
        forfeited; the first time, one line says so); a ladder, which would choose the same pairs again,
        waits ``no_show_s`` as ``arena run`` does."""
        return run_games(games, self.runner, t.store, t.config.concurrency, self._stored, stop,
                         twins_together=t.config.twins_together, continuous=self.ladder is None,
                         on_note=self._note_once)

    def _note_once(self, line: str) -> None:
        """Say ``line`` as a ``workers:`` note unless it was said already (each round asks again)."""
        if line not in self._said:
            self._said.add(line)
            self._note(line, "workers")

    def _ladder_games(self, t: Tournament, ladder: LadderRun) -> list[ScheduledGame]:
        """A ladder's next games (half-played pairs first, then :func:`pairs_a_round` pairs); when
        it stopped, say why once and ask again only on a new UTC day (DAY_BUDGETS) or after SIGHUP."""
        from arena.formats.ladder import DAY_S
        from arena.formats.ladder_run import pairs_a_round

        now = time.time()
        if self.asked is not None and self.asked[0] == int(now // DAY_S):
            return []
        ladder.bar(self.barred())  # disqualified: no pair of theirs, no standing, their games void in the fit
        games = ladder.next_games(pairs_a_round(t.config), now)
        t.store.set_meta(LADDER_KEY, json.dumps(ladder.board(now)))
        self._note(ladder.plan_line())
        if not games:
            self.asked = (int(now // DAY_S), ladder.plan_line())
            self._publish(t)
        return games

    def close(self) -> None:
        """Stop the workers and the lobby, close the store."""
        if self.setup is not None:
            self.setup.stop()
            self.setup = None
        if self.tournament is not None:
            self.tournament.store.close()


def _local(t: Tournament, label: str) -> bool:
    """Whether ``label`` is an entrant the arena starts (a per-game bot or a worker pool), not a remote one."""
    bot = t.entrants.get(label)
    return bot is not None and bot.mode != "remote"


def install_signals(league: League) -> None:
    """SIGHUP → reload; SIGTERM and SIGINT → stop (main thread only)."""
    signal.signal(signal.SIGHUP, lambda *_: league.request_reload())
    signal.signal(signal.SIGTERM, lambda *_: league.request_stop())
    signal.signal(signal.SIGINT, lambda *_: league.request_stop())
