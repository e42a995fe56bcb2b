"""A running match: seats, sessions, deadlines, time banks, strikes, exposures, events and the record.

A thin layer over the pure engine (``referee.rules``): for each game ``new_game``; whenever the
phase is DEAL, ``deal`` the next deck from the seed (``referee.dealing.deck_for``); otherwise send
a DecisionRequest (``observe`` + ``legal_actions``) to the seat to act and wait for its Decision.

Concurrency: everything runs on one asyncio event loop, so match state is only ever changed by
one piece of code at a time. Until every seat has joined, stream handlers post items to the match's
inbox and the match task (:meth:`Match.run`) takes them. From then on each item — a Decision, a
disconnect that outlived its grace, an abort — is handled at once in the turn of the loop that
received it (:meth:`Match._post` → :meth:`Match._guard`), and the next DecisionRequest is queued
before that turn ends; deadlines are loop timers. No hop through a task per decision: that keeps the
referee's round trip close to a bare gRPC ping-pong (benchmarks/referee.py). Handlers never write to
streams: outgoing messages go to each connection's queue, drained by its writer. Rulings
(docs/protocol.md):

- Sequence numbers: each DecisionRequest gets a new ``seq`` (1, 2, … across the match). A Decision
  echoing the pending ``seq`` answers it; a ``seq`` sent to that seat before (already answered or
  stale) is ignored (duplicates are harmless); a ``seq`` never sent to that seat (a future one, or
  one sent to another seat) is a protocol error.
- ``seq`` 0 is unsolicited: from the seat to act it answers the pending request (recorded with the
  pending ``seq``); from another seat a card play exposes the card (``apply(state, Play(card), seat)``,
  docs/rules.md, the call). Exposing a card that is already exposed changes nothing and is ignored.
- An illegal action gets ActionRejected with the engine's reason; the seat may retry before the
  deadline. ``max_illegal`` rejections forfeit (``illegal``).
- Timeout: the first legal action is played for the seat and a strike counted; ``max_strikes``
  strikes or an empty time bank forfeit (``timeout``). The clock's rules are the pure
  :class:`referee.clock.ClockPolicy`; this module only reads the clock (:func:`now`) and acts.
- ``max_protocol_errors`` malformed messages forfeit (``protocol_error``); a seat not joined
  within ``join_ms`` forfeits (``no_show``); a disconnected seat not back within ``grace_ms``
  forfeits (``disconnect``). A forfeiting side loses the match; every connected seat gets MatchEnd.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from allfours.v1 import referee_pb2 as pb
from referee import metrics, wire
from referee.clock import ClockPolicy, Instant, Ruling, SeatClock, Verdict
from referee.dealing import commitment, deck_for, first_dealer_by_cut
from referee.events import Event, step_events
from referee.outcome import MatchStatus, Termination
from referee.record import RECORD_VERSION, RecordWriter
from referee.rules import (
    ENGINE_VERSION,
    Action,
    Card,
    Observation,
    Phase,
    RuleError,
    RuleSet,
    State,
    apply,
    deal,
    legal_actions,
    new_game,
    next_seat,
    observe,
    partner_of,
    side_of,
)

log = structlog.get_logger("referee.match")

#: Sentinel put on a connection's queue to close the stream after the queued messages.
CLOSE = None


class SeatUnavailable(Exception):
    """A Hello that cannot take its seat now (the stream gets PERMISSION_DENIED with this text)."""


class Forfeit(Exception):
    """Raised inside the match task when ``seat`` forfeits the match for ``termination``.

    ``detail`` goes to every seat and watcher (``SeatResult.detail``), so it names no card a seat may
    not see and no text of a bot; ``full`` (default: ``detail``) goes to the record's result line,
    read after the match (e.g. the rejected card and the hand the engine's message names).
    """

    def __init__(self, seat: int, termination: pb.Termination, detail: str, full: str | None = None) -> None:
        super().__init__(detail)
        self.seat = seat
        self.termination = termination
        self.detail = detail
        self.full = detail if full is None else full


class Aborted(Exception):
    """Raised inside the match task when the referee stops the match (no winner)."""


#: The most messages queued for one stream (its writer blocked: a peer that does not read). The
#: referee queues about one message per decision, so a seat that reads never comes near it.
MAX_QUEUED = 256
#: A Ping gets a Pong only while fewer messages than this wait for the stream: a peer that does not
#: read gets no more.
PONG_QUEUE_LIMIT = 8
#: Most times one seat may take its seat again in a match (a reconnect, or a new stream over its old one):
#: each costs a Welcome, a re-sent request and two public events kept for the whole match and sent to
#: every seat and watcher, so a bot reconnecting without end (300 times a second from one client)
#: grew the referee's memory and every feed by tens of MB a match. The next Hello forfeits the seat
#: (``disconnect``); an honest bot on a bad network reconnects a few times a match.
MAX_RESUMES = 100
#: Pings answered per second on one stream (a token bucket of :data:`PING_BURST`); others are dropped.
PING_RATE = 10.0
PING_BURST = 20


class Outbox(asyncio.Queue[pb.PlayResponse | None]):
    """A stream's outgoing queue, bounded at ``limit`` messages (``CLOSE`` is always taken).

    A message that finds it full is dropped, :attr:`overflowed` is set and ``on_overflow`` is called
    once (the server then ends the stream: its peer does not read). Everything else as
    ``asyncio.Queue``; no ``await`` on the match's side.
    """

    def __init__(self, limit: int = MAX_QUEUED) -> None:
        super().__init__()
        self.limit = limit
        self.overflowed = False
        self.on_overflow: Callable[[], None] | None = None

    def put_nowait(self, item: pb.PlayResponse | None) -> None:
        """Queue ``item``, or drop it when the queue is full (see the class)."""
        if item is not CLOSE and self.qsize() >= self.limit:
            if not self.overflowed:
                self.overflowed = True
                if self.on_overflow is not None:
                    self.on_overflow()
            return
        super().put_nowait(item)


@dataclass(eq=False)
class Connection:
    """One live stream of a seat: the handler writes what is put on ``out`` (``CLOSE`` ends it)."""

    out: Outbox = field(default_factory=Outbox)
    peer: str = ""
    #: Set when a newer stream with the same ticket took the seat: the handler then ends this
    #: stream with ABORTED (docs/protocol.md, Reconnecting).
    superseded: bool = False
    #: Pings that may be answered now (a token bucket: :data:`PING_RATE` a second, at most
    #: :data:`PING_BURST`) and when it was last filled (``time.monotonic``).
    ping_tokens: float = PING_BURST
    ping_filled: float = 0.0
    #: Pings left unanswered (over the rate, or the peer does not read).
    pings_dropped: int = 0

    def answer_ping(self, now: float) -> bool:
        """May a Ping received at ``now`` (``time.monotonic``) get a Pong? Counts one against the rate."""
        self.ping_tokens = min(PING_BURST, self.ping_tokens + (now - self.ping_filled) * PING_RATE)
        self.ping_filled = now
        if self.ping_tokens < 1 or self.out.qsize() >= PONG_QUEUE_LIMIT:
            self.pings_dropped += 1
            return False
        self.ping_tokens -= 1
        return True


@dataclass(eq=False)
class SeatRuntime:
    """The referee's bookkeeping of one seat; ``clock``: its time bank and strikes."""

    seat: int
    name: str
    ticket: str
    clock: SeatClock
    conn: Connection | None = None
    joined: bool = False
    bot_name: str = ""
    bot_version: str = ""
    illegal: int = 0
    protocol_errors: int = 0
    #: The failure counts the seat's SDK last reported (Decision.counts; self-reported, never ruled on).
    bot_counts: pb.BotCounts = field(default_factory=pb.BotCounts)
    last_issued_seq: int = 0
    #: Every seq sent to this seat (a seq not in it is a protocol error; one in it, not pending, is stale).
    issued: set[int] = field(default_factory=set)
    termination: pb.Termination = pb.TERMINATION_UNSPECIFIED
    #: Why the seat's match ended, as every seat and watcher see it (no hidden card, no bot text).
    detail: str = ""
    #: The same for the record (read after the match): may name the cards of the engine's message.
    full_detail: str = ""
    grace: asyncio.TimerHandle | None = None
    #: Times the seat was taken again this match (:data:`MAX_RESUMES`).
    resumes: int = 0
    #: Public events not yet delivered to this seat (sent inside its next DecisionRequest, or as an
    #: EventBatch at the end of a game, on a reconnect and before MatchEnd).
    outbox: list[pb.Event] = field(default_factory=list)


@dataclass
class Pending:
    """The decision the match waits for: request ``seq`` to ``seat``, sent at ``sent_at``, due at ``deadline``.

    ``message`` is the PlayResponse carrying the DecisionRequest, built once; the first send fills in
    the times and events in place (``sent`` becomes True), a re-send after a reconnect sends a copy
    with the time left then and the seat's undelivered events.
    """

    seq: int
    seat: int
    legal: tuple[Action, ...]
    sent_at: Instant
    deadline: Instant
    message: pb.PlayResponse
    sent: bool = False

    @property
    def request(self) -> pb.DecisionRequest:
        """The DecisionRequest (seq, game, observation, legal actions)."""
        return self.message.decision_request


# ---------------------------------------------------------------------- what the match is told (its inbox)


@dataclass(frozen=True, slots=True)
class Decided:
    """A Decision from ``seat``'s stream, received at ``received``."""

    seat: int
    decision: pb.Decision
    received: Instant


@dataclass(frozen=True, slots=True)
class Joined:
    """``seat`` took its seat (a Hello with its ticket)."""

    seat: int


@dataclass(frozen=True, slots=True)
class GaveUp:
    """``seat`` forfeits for ``termination`` (a grace period that ran out); ``detail`` for every seat."""

    seat: int
    termination: pb.Termination
    detail: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """``seat`` broke the protocol (``seq`` as sent, 0 if none); ``detail``: one line."""

    seat: int
    seq: int
    detail: str


@dataclass(frozen=True, slots=True)
class Stop:
    """The referee stops the match without a winner (server shutdown), for ``detail``."""

    detail: str


#: Everything a stream handler or a timer hands to the match (:meth:`Match._post`).
InboxItem = Decided | Joined | GaveUp | Malformed | Stop


# ---------------------------------------------------------------------- work done ahead, and results


@dataclass(frozen=True, slots=True)
class Step:
    """An action applied: the ``state`` after it and its public ``events`` as messages."""

    state: State
    events: list[pb.Event]


@dataclass(frozen=True, slots=True)
class Dealt:
    """A deck dealt: the ``state`` after it, its public ``events`` and the deck's notation for the record."""

    state: State
    events: list[pb.Event]
    deck: list[str]


@dataclass(frozen=True, slots=True)
class Request:
    """A DecisionRequest built for a state: the seat's ``observation`` and the ``message`` holding it."""

    observation: Observation
    message: pb.PlayResponse


# Work done ahead (:meth:`Match._work_ahead`): each is used at most once, and only for the very state
# object it was worked out from (``before``), so an exposure or a forfeit in between leaves it unused.


@dataclass(frozen=True, slots=True)
class AheadStep:
    """``seat`` playing ``action`` in ``before`` gives ``step``."""

    before: State
    seat: int
    action: Action
    step: Step


@dataclass(frozen=True, slots=True)
class AheadGame:
    """Game ``game`` starts with ``dealer``: its new ``state``."""

    game: int
    dealer: int
    state: State


@dataclass(frozen=True, slots=True)
class AheadDeal:
    """The next deck dealt to ``before`` (phase DEAL)."""

    before: State
    dealt: Dealt


@dataclass(frozen=True, slots=True)
class AheadRequest:
    """The DecisionRequest of ``before``'s seat to act (its seq set when issued)."""

    before: State
    request: Request


@dataclass(frozen=True, slots=True)
class GameEnd:
    """A game's end: its number, final ``state``, whether it was ``forfeited``, the winning side or ``None``."""

    game: int
    state: State
    forfeited: bool
    winner: int | None


#: The record is formatted and written after these lines (once a deal, after its first request is
#: on its way), not after every decision (referee.record.RecordWriter's ``flush_after``).
RECORD_FLUSH_AFTER = frozenset({"deal", "game_end", "result"})


def now() -> Instant:
    """The time now on the monotonic clock: the one place the match reads the clock."""
    return Instant(time.monotonic())


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _after_writes(fn: Callable[..., None], *args: Any) -> None:
    """Run ``fn(*args)`` on the running event loop after the callbacks already scheduled *and* those
    they schedule — in particular after the stream writers woken in this turn have handed their
    messages to gRPC — or at once when no loop runs. For bookkeeping that must not delay the next
    DecisionRequest (record lines, the next decks): the decision's critical path."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        fn(*args)
    else:
        loop.call_soon(loop.call_soon, fn, *args)


def _check_match_args(rules: RuleSet, seat_names: list[str], games: int, first_dealer: int | None) -> None:
    """:raises ValueError: when the seat names do not match ``rules.players``, ``games < 1`` or the
    first dealer's seat does not exist."""
    if len(seat_names) != rules.players:
        raise ValueError(f"{len(seat_names)} seat names given for a {rules.players}-player game")
    if games < 1:
        raise ValueError(f"a match has at least 1 game, not {games}")
    if first_dealer is not None and not 0 <= first_dealer < rules.players:
        raise ValueError(f"first_dealer {first_dealer} does not exist at a table of {rules.players}")


class Match:
    """One match between the seats of ``seat_names`` (docs/protocol.md).

    :param match_id: the id; :param rules: the rule options; :param seat_names: one per seat;
    :param games: number of games (>= 1); :param seed: 32 bytes; :param first_dealer: seat or
    ``None`` for the cut; :param time_control: limits in ms; :param tickets: one secret per seat;
    :param record_path: where to write the JSON-lines record as it grows (a deal at a time:
        :data:`RECORD_FLUSH_AFTER`), or ``None``.
    :param on_end: called with the match once it has ended.
    :param work_ahead: when the seat to act has a single legal action, work out its consequences
        while the seat answers (:meth:`_work_ahead`); ``False`` only to compare (tests).
    :param blind: tell the seats no names (:meth:`names_told`): Welcome and MatchEnd name the seats
        "seat 0", "seat 1", ...; the record and watchers keep ``seat_names``.
    :raises ValueError: when the seat names do not match ``rules.players``, ``games < 1`` or a bad
        first dealer.
    """

    def __init__(self, match_id: str, rules: RuleSet, seat_names: list[str], games: int, seed: bytes,
                 first_dealer: int | None, time_control: wire.TimeControl, tickets: list[str],
                 record_path: Path | None = None, on_end: Callable[[Match], None] | None = None,
                 work_ahead: bool = True, blind: bool = False) -> None:
        _check_match_args(rules, seat_names, games, first_dealer)
        self.id = match_id
        self.rules = rules
        self.seat_names = list(seat_names)
        self.blind = blind
        self.games = games
        self.seed = seed
        self.commitment = commitment(seed)
        self.first_dealer = first_dealer
        self.tc = time_control
        self.clock = ClockPolicy(time_control.decision_ms, time_control.bank_ms, time_control.max_strikes)
        self.seats = [SeatRuntime(i, n, t, self.clock.start())
                      for i, (n, t) in enumerate(zip(seat_names, tickets, strict=True))]
        self.status = pb.MATCH_STATUS_WAITING
        self.result: pb.MatchResult | None = None
        self.events: list[pb.Event] = []
        self.watchers: set[asyncio.Queue[pb.WatchMatchResponse | None]] = set()
        # Record lines are formatted and written a deal at a time, once that deal's first
        # DecisionRequest is on its way, in order (RecordWriter, _after_writes, RECORD_FLUSH_AFTER).
        self.record = RecordWriter(record_path, defer=_after_writes, on_file_error=self._record_file_failed,
                                   flush_after=RECORD_FLUSH_AFTER)
        self.inbox: asyncio.Queue[InboxItem] = asyncio.Queue()
        self.pending: Pending | None = None
        self.created = now()
        self.done = asyncio.Event()
        self._init_play_state(work_ahead)
        self._on_end = on_end
        self._task: asyncio.Task[None] | None = None
        #: True once every seat joined: from then on items are handled at once, in the caller's turn
        #: of the event loop (no hop through the match task: that is the per-decision hot path).
        self._running = False
        #: The deadline timer and when it is due. One timer serves many decisions: it is moved only
        #: when a deadline comes before it, and re-arms itself when it fires before the pending
        #: deadline (:meth:`_arm_timer`, :meth:`referee.clock.ClockPolicy.keeps_timer`).
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due: Instant | None = None
        #: Seconds from each answered request's sending to its answer (the metrics, when the match ends).
        self.latencies: list[float] = []
        self.log = log.bind(match_id=match_id)
        #: Log every action (debug level)? Checked once: the arguments cost time on the hot path.
        self._log_actions = self.log.is_enabled_for(logging.DEBUG)
        self.record.write(
            "header", record_version=RECORD_VERSION, protocol=wire.PROTOCOL_VERSION,
            engine_version=ENGINE_VERSION, shuffle="allfours/v1", match_id=match_id,
            rules=rules.to_dict(), seat_names=self.seat_names, games=games,
            seed_commitment=self.commitment, time_control=time_control.to_dict(),
            first_dealer=first_dealer)

    def _init_play_state(self, work_ahead: bool) -> None:
        """What playing needs (dropped at the end by :meth:`_drop_play_state`): the engine state, the
        game and deal numbers, the decks shuffled ahead and the work done ahead."""
        self._seq = 0
        self._game = 0
        self._deal_no = 0
        self._state: State = new_game(self.rules, 0)
        #: Each game's end. Their GameResult messages are built once, for the MatchResult, not on a
        #: decision's critical path.
        self._games_ended: list[GameEnd] = []
        #: Decks shuffled ahead, with their card notation for the record, by (game, deal): the current
        #: game's next deal and the next game's first.
        self._decks: dict[tuple[int, int], tuple[tuple[Card, ...], list[str]]] = {}
        #: Work done ahead for a forced action (:meth:`_work_ahead`), each used at most once and only
        #: for the very state it was worked out from.
        self._work_ahead_on = work_ahead
        self._ahead_step: AheadStep | None = None
        self._ahead_game: AheadGame | None = None
        self._ahead_deal: AheadDeal | None = None
        self._ahead_request: AheadRequest | None = None
        #: How many steps, games, deals and requests were taken from work done ahead (a statistic).
        self.worked_ahead = 0

    def _record_file_failed(self, error: OSError) -> None:
        """The record file could not be written (full or failing disk): the match goes on, the
        record in memory stays complete (GetRecord), the file stops where it failed."""
        self.log.error("record_file_failed", error=repr(error),
                       detail="the record file is incomplete; GetRecord still has the whole record")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the match task (joins are accepted before and after)."""
        self._task = asyncio.get_running_loop().create_task(self.run(), name=f"match-{self.id}")
        metrics.MATCHES_RUNNING.inc()

    def names_told(self) -> list[str]:
        """The seat names the seats are told: ``seat_names``, or "seat 0", "seat 1", ... when blind."""
        return [f"seat {i}" for i in range(len(self.seat_names))] if self.blind else list(self.seat_names)

    @property
    def finished(self) -> bool:
        """True once the result is known."""
        return self.result is not None

    def abort(self, detail: str) -> None:
        """Ask the match task to stop without a winner (server shutdown)."""
        self._post(Stop(detail))

    async def wait(self) -> pb.MatchResult:
        """Wait for the end of the match and return its result."""
        await self.done.wait()
        assert self.result is not None
        return self.result

    # ------------------------------------------------------------------ stream handler API

    def attach(self, seat: int, conn: Connection, hello: pb.Hello) -> None:
        """A Hello with this seat's ticket: take the seat (join or resume) and send Welcome.

        The newest stream holding the ticket takes the seat: if the seat still has a stream (which
        may be dead without the referee knowing yet: a half-open connection looks alive until
        keepalive gives up), that stream is closed with ABORTED and this one resumes the seat.

        :raises SeatUnavailable: if the match is over or the seat forfeited, or this Hello would take the seat
            again more than :data:`MAX_RESUMES` times (the seat then forfeits: ``disconnect``).
        """
        s = self.seats[seat]
        if self.finished:
            raise SeatUnavailable(f"match {self.id} is over")
        if s.termination != pb.TERMINATION_UNSPECIFIED:
            raise SeatUnavailable(f"seat {seat} of match {self.id} has forfeited")
        if s.joined:
            s.resumes += 1
            if s.resumes > MAX_RESUMES:
                why = f"seat {seat} took its seat again more than {MAX_RESUMES} times in this match"
                if s.resumes == MAX_RESUMES + 1:  # once: the Hellos that come before the forfeit post nothing
                    self._post(GaveUp(seat, pb.TERMINATION_DISCONNECT, why))
                raise SeatUnavailable(why)
        reconnected = s.joined and s.conn is None
        if s.conn is not None:
            old, s.conn = s.conn, None
            old.superseded = True
            old.out.put_nowait(CLOSE)
            self.log.info("seat_taken_over", seat=seat, old_peer=old.peer, peer=conn.peer)
        resumed = s.joined
        s.conn, s.joined = conn, True
        s.bot_name, s.bot_version = wire.plain_text(hello.bot_name), wire.plain_text(hello.bot_version)
        if s.grace is not None:
            s.grace.cancel()
            s.grace = None
        partner = partner_of(seat, self.rules.players)
        conn.out.put_nowait(pb.PlayResponse(welcome=pb.Welcome(
            match_id=self.id, seat=seat, side=side_of(seat), partner_seat=-1 if partner is None else partner,
            players=self.rules.players, rules=wire.rules_to_pb(self.rules),
            time_control=wire.time_control_to_pb(self.tc), seat_names=self.names_told(), games=self.games,
            resumed=resumed, seed_commitment=self.commitment)))
        self.log.info("seat_joined", seat=seat, resumed=resumed, bot=s.bot_name, peer=conn.peer)
        if reconnected:
            self._event("seat_connected", seat=seat)
        p = self.pending
        if p is not None and p.seat == seat:
            self._send_request(p)
        else:
            self._flush_events(seat)
        self._post(Joined(seat))

    def detach(self, seat: int, conn: Connection) -> None:
        """The stream ``conn`` of ``seat`` ended. While the match runs, the grace period starts."""
        s = self.seats[seat]
        if s.conn is not conn:
            return
        s.conn = None
        if self.finished:
            return
        self.log.info("seat_disconnected", seat=seat, grace_ms=self.tc.grace_ms)
        self._event("seat_disconnected", seat=seat)

        def expire() -> None:
            s.grace = None
            if s.conn is None and not self.finished:
                self._post(GaveUp(seat, pb.TERMINATION_DISCONNECT,
                                  f"seat {seat} disconnected and did not come back within {self.tc.grace_ms} ms"))

        s.grace = asyncio.get_running_loop().call_later(self.tc.grace_ms / 1000, expire)

    def submit(self, seat: int, msg: pb.PlayRequest, received: Instant) -> None:
        """A message from ``seat``'s stream after its Hello, received at ``received`` (:func:`now`)."""
        which = msg.WhichOneof("msg")
        if which == "decision":
            if msg.decision.HasField("counts"):
                self.seats[seat].bot_counts.CopyFrom(msg.decision.counts)
            if self._running:  # the hot path: straight to the handler (what _post would do)
                self._guard(self._on_decision, seat, msg.decision, received)
            else:
                self._post(Decided(seat, msg.decision, received))
        elif which == "ping":
            conn = self.seats[seat].conn
            if conn is not None and conn.answer_ping(received):
                conn.out.put_nowait(pb.PlayResponse(pong=pb.Pong(nonce=msg.ping.nonce)))
        else:
            what = "a second Hello" if which == "hello" else "an empty message"
            self._post(Malformed(seat, 0, f"seat {seat} sent {what} on its stream"))

    def malformed(self, seat: int, detail: str) -> None:
        """``seat``'s stream sent bytes that are not a message (``detail``: one line): a protocol error."""
        self._post(Malformed(seat, 0, detail))

    def watch(self) -> asyncio.Queue[pb.WatchMatchResponse | None]:
        """A queue of every public event so far and to come, then the result, then ``None``."""
        q: asyncio.Queue[pb.WatchMatchResponse | None] = asyncio.Queue()
        for ev in self.events:
            q.put_nowait(pb.WatchMatchResponse(event=ev))
        if self.result is not None:
            q.put_nowait(pb.WatchMatchResponse(result=self.result))
            q.put_nowait(None)
        else:
            self.watchers.add(q)
        return q

    # ------------------------------------------------------------------ sending

    def _send(self, seat: int, msg: pb.PlayResponse) -> None:
        conn = self.seats[seat].conn
        if conn is not None:
            conn.out.put_nowait(msg)

    def _event(self, kind: str, **kw: Any) -> None:
        """Publish a public event of ``kind`` (see referee.events) in the current game and deal."""
        kw.setdefault("deal", self._deal_no)
        self._publish(Event(kind, game=self._game, **kw))

    def _publish(self, *events: Event) -> None:
        """Record public events, queue them for every seat (delivered batched) and send them to watchers."""
        self._publish_pb([wire.event_to_pb(e) for e in events])

    def _publish_pb(self, evs: list[pb.Event]) -> None:
        """:meth:`_publish` for events already converted to messages."""
        self.events += evs
        for s in self.seats:
            s.outbox += evs
        if self.watchers:
            for ev in evs:
                w = pb.WatchMatchResponse(event=ev)
                for q in self.watchers:
                    q.put_nowait(w)

    def _send_request(self, p: Pending) -> None:
        """Send (or re-send, after a reconnect) the pending request with the time left now and the
        seat's undelivered events. The first send uses ``p.message`` itself (no copy); later ones a copy."""
        s = self.seats[p.seat]
        if s.conn is None:
            return
        if p.sent:
            msg = pb.PlayResponse()
            msg.CopyFrom(p.message)
            req = msg.decision_request
            del req.events[:]
        else:
            msg, p.sent = p.message, True
            req = msg.decision_request
        req.time_left_ms = self.clock.time_left_ms(p.deadline, now())
        req.time_bank_ms = s.clock.bank_left_ms
        if s.outbox:
            req.events.extend(s.outbox)
            s.outbox.clear()
        s.conn.out.put_nowait(msg)

    def _flush_events(self, *seats: int) -> None:
        """Send the undelivered public events of ``seats`` (default: all) as one EventBatch each."""
        for i in seats or range(len(self.seats)):
            s = self.seats[i]
            if s.conn is not None and s.outbox:
                s.conn.out.put_nowait(pb.PlayResponse(events=pb.EventBatch(events=s.outbox)))
                s.outbox = []

    # ------------------------------------------------------------------ the match task

    async def run(self) -> None:
        """Play the whole match; always ends with a result, MatchEnd to every seat and the seed line.

        The task waits for every seat to join; from then on the match is driven by what arrives
        (:meth:`_post`) and by its deadline timer, each handled synchronously where it happens
        (:meth:`_guard`), and the task only waits for the end.
        """
        try:
            await self._wait_for_seats()
        except Forfeit as f:
            self._finish(f, None)
            return
        except Aborted as a:
            self._finish(None, str(a))
            return
        self.status = pb.MATCH_STATUS_RUNNING
        self._running = True
        self._guard(self._start_game, 1, None)
        while not self.inbox.empty() and not self.finished:  # arrived between the last join and now
            self._guard(self._dispatch, self.inbox.get_nowait())
        await self.done.wait()

    def _post(self, item: InboxItem) -> None:
        """Hand an item (decision, control) to the match: queued until all seats joined, then handled now."""
        if self.finished:
            return
        if self._running:
            self._guard(self._dispatch, item)
        else:
            self.inbox.put_nowait(item)

    def _guard(self, fn: Callable[..., None], *args: Any) -> None:
        """Run one step of the match; a forfeit, an abort or a referee bug ends the match cleanly."""
        if self.finished:
            return
        try:
            fn(*args)
        except Forfeit as f:
            self._finish(f, None)
        except Aborted as a:
            self._finish(None, str(a))
        except Exception as e:  # a bug: never leave bots hanging
            self.log.exception("match_crashed")
            # The exception's text may hold any state (hands): the seats get its type only.
            self._finish(None, f"referee error ({type(e).__name__}; see the referee's log)",
                         f"referee error: {e!r}")

    def _dispatch(self, item: InboxItem) -> None:
        """Handle one inbox item once the match runs (a :class:`Joined` then changes nothing)."""
        if isinstance(item, Decided):
            self._on_decision(item.seat, item.decision, item.received)
        elif not isinstance(item, Joined):
            self._handle_control(item)

    async def _wait_for_seats(self) -> None:
        deadline = self.created + self.tc.join_ms / 1000
        while not all(s.joined for s in self.seats):
            try:
                item = await asyncio.wait_for(self.inbox.get(), deadline - now())
            except TimeoutError:
                missing = [s.seat for s in self.seats if not s.joined]
                raise Forfeit(missing[0], pb.TERMINATION_NO_SHOW,
                              f"seat(s) {missing} did not join within {self.tc.join_ms} ms") from None
            if isinstance(item, Decided):
                # Nothing has been asked yet: any Decision is early; a seq != 0 was never sent.
                if item.decision.seq != 0:
                    self._protocol_error(item.seat, item.decision.seq,
                                         f"seat {item.seat} sent seq {item.decision.seq} before any request")
            elif not isinstance(item, Joined):
                self._handle_control(item)

    def _handle_control(self, item: GaveUp | Malformed | Stop) -> None:
        """A forfeit, a protocol error or a stop. :raises Forfeit: :raises Aborted:"""
        if isinstance(item, GaveUp):
            raise Forfeit(item.seat, item.termination, item.detail)
        if isinstance(item, Stop):
            raise Aborted(item.detail)
        self._protocol_error(item.seat, item.seq, item.detail)

    def _protocol_error(self, seat: int, seq: int, detail: str, action: pb.Action | None = None,
                        public: str | None = None) -> None:
        """Count a protocol error of ``seat``: record it, send it ActionRejected with ``detail`` (its
        own text, quoted short) and the offending ``action`` (its card cut to plain text).
        ``public`` (default ``detail``) is the version without the bot's text, for the forfeit every
        seat sees. :raises Forfeit: at ``max_protocol_errors``."""
        s = self.seats[seat]
        s.protocol_errors += 1
        self.log.warning("protocol_error", seat=seat, seq=seq, detail=detail, count=s.protocol_errors)
        self.record.write("rejected", game=self._game, deal=self._deal_no, seat=seat, seq=seq,
                          action=None, reason="protocol_error", message=detail, ms=0)
        echo = None if action is None else pb.Action(kind=action.kind, card=wire.plain_text(action.card, 8))
        self._send(seat, pb.PlayResponse(action_rejected=pb.ActionRejected(
            seq=seq, reason=pb.REASON_PROTOCOL_ERROR, message=detail, action=echo)))
        if s.protocol_errors >= self.tc.max_protocol_errors:
            raise Forfeit(seat, pb.TERMINATION_PROTOCOL_ERROR,
                          f"{s.protocol_errors} malformed messages (last: {detail if public is None else public})",
                          f"{s.protocol_errors} malformed messages (last: {detail})")

    def _start_game(self, game: int, dealer: int | None) -> None:
        """Start game ``game`` (1-based) with ``dealer``, or for game 1 with ``None``: the given first
        dealer or the cut (docs/rules.md, Table), then advance to the first decision."""
        how = "continued"
        if dealer is None:
            how, dealer = "given", self.first_dealer
            if dealer is None:
                dealer, how = first_dealer_by_cut(self.seed, self.rules.players), "cut"
        self._game, self._deal_no = game, 0
        self.record.write("game", game=game, dealer=dealer, how=how)
        self._event("game_started", dealer=dealer)
        ahead = self._ahead_game
        if ahead is not None and ahead.game == game and ahead.dealer == dealer:
            self._ahead_game, self.worked_ahead = None, self.worked_ahead + 1
            self._state = ahead.state
        else:
            self._state = new_game(self.rules, dealer)
        self._advance()

    def _advance(self) -> None:
        """Move the game on until a seat must decide: deal the next decks (docs/rules.md, The deal), end a
        game and start the next (the deal passes to the right, docs/rules.md, Match), or end the match."""
        state = self._state
        while True:
            if state.phase is Phase.OVER:
                self._end_game(state, forfeited=False)
                if self._game >= self.games:
                    self._finish(None, None)
                    return
                self._start_game(self._game + 1, next_seat(state.dealer, self.rules.players))
                # The ended game's last events: the seat to act got them inside its request, the
                # others get them as one EventBatch each (docs/protocol.md, Events) once that request
                # is on its way. Order holds: a request to such a seat would carry them first.
                _after_writes(self._flush_events)
                return
            if state.phase is Phase.DEAL:
                n = state.deal_number + 1
                ahead = self._ahead_deal
                if ahead is not None and ahead.before is state:
                    self._ahead_deal, self.worked_ahead = None, self.worked_ahead + 1
                    dealt = ahead.dealt
                else:
                    dealt = self._deal_step(self._game, state)
                self.record.write("deal", game=self._game, deal=n, dealer=state.dealer, deck=dealt.deck)
                self._deal_no = n
                if dealt.events:
                    self._publish_pb(dealt.events)
                state = self._state = dealt.state
                # Shuffle the decks that may come next while the bots think, off the critical path.
                _after_writes(self._prefetch_decks, self._game, n)
                continue
            p = self._issue(state, self._game)
            self._arm_timer(p)
            return

    def _deck(self, game: int, deal_no: int) -> tuple[tuple[Card, ...], list[str]]:
        """The deck of deal ``deal_no`` of game ``game`` (referee.dealing.deck_for) and its card
        notation: shuffled ahead by :meth:`_prefetch_decks`, or now (and kept with the others)."""
        deck = self._decks.get((game, deal_no))
        if deck is None:
            cards = deck_for(self.seed, game, deal_no)
            deck = self._decks[(game, deal_no)] = (cards, wire.cards_to_pb(cards))
        return deck

    def _deal_step(self, game: int, state: State) -> Dealt:
        """Deal the next deck of ``game`` to ``state`` (phase DEAL; docs/rules.md, The deal)."""
        deck, text = self._deck(game, state.deal_number + 1)
        new = deal(state, deck)
        return Dealt(new, self._events_pb(game, state, new, None, None), text)

    def _prefetch_decks(self, game: int, deal_no: int) -> None:
        """Deal ``deal_no`` of ``game`` is dealt: shuffle the two decks that can come next (this
        game's next deal, the next game's first) unless already done; drop older ones."""
        if self.finished:
            return
        wanted = [(game, deal_no + 1)] + ([(game + 1, 1)] if game < self.games else [])
        self._decks = {k: self._deck(*k) for k in wanted}

    def _arm_timer(self, p: Pending) -> None:
        """Make sure the deadline timer fires no later than ``p.deadline``.

        A timer due at or before the deadline is kept (when it fires early, :meth:`_on_deadline`
        re-arms it), so a match of quick decisions sets about one timer per decision limit, not one
        per decision (a timer costs a heap push and a cancel on the hot path).
        """
        if self._timer is not None:
            if self.clock.keeps_timer(self._timer_due, p.deadline):
                return
            self._timer.cancel()
        self._timer_due = p.deadline
        delay = max(0.0, p.deadline - now())
        self._timer = asyncio.get_running_loop().call_later(delay, self._guard, self._on_deadline)

    def _on_deadline(self) -> None:
        """The deadline timer fired: if the pending decision's deadline has passed, play the default
        (a strike); if a later decision is pending, wait for its deadline instead."""
        self._timer = self._timer_due = None
        p = self.pending
        if p is None:
            return
        at = now()
        if not self.clock.is_past(p.deadline, at):
            self._arm_timer(p)
            return
        self._state = self._timeout(self._state, p, at)
        self._advance()

    def _drop_play_state(self) -> None:
        """The match is over: let go of what only playing needed (engine states with every deal's
        history, decks shuffled ahead, work done ahead, the seqs sent), so that a finished match kept
        for GetRecord and WatchMatch holds its result, record lines and events only
        (benchmarks/soak.py)."""
        self._state = new_game(self.rules, 0)
        self._games_ended = []
        self._decks = {}
        self._ahead_step = self._ahead_game = self._ahead_deal = self._ahead_request = None
        self.latencies = []  # handed to the metrics already
        for s in self.seats:
            s.issued = set()

    def _end_game(self, state: State, forfeited: bool, winner: int | None = None) -> None:
        w = state.winner if winner is None else winner
        self._games_ended.append(GameEnd(self._game, state, forfeited, w))
        self.record.write("game_end", game=self._game, scores=list(state.scores), winner=w,
                          points=[{"deal": p.deal, "side": p.side, "kind": p.kind, "value": p.value}
                                  for p in state.points], forfeited=forfeited, deals=state.deal_number)
        self._event("game_ended", scores=list(state.scores), winner=w, forfeited=forfeited)

    def _issue(self, state: State, game: int, deadline: Instant | None = None) -> Pending:
        seat = state.to_act
        assert seat is not None
        s = self.seats[seat]
        self._seq += 1
        s.last_issued_seq = self._seq
        s.issued.add(self._seq)
        asked = now()
        if deadline is None:
            deadline = self.clock.deadline(s.clock, asked)
        ahead = self._ahead_request
        if ahead is not None and ahead.before is state:
            self._ahead_request, self.worked_ahead = None, self.worked_ahead + 1
            request = ahead.request
        else:
            request = self._request(game, state)
        request.message.decision_request.seq = self._seq
        legal = request.observation.legal
        p = Pending(seq=self._seq, seat=seat, legal=legal, sent_at=asked, deadline=deadline, message=request.message)
        self.pending = p
        self._send_request(p)
        if len(legal) == 1 and self._work_ahead_on:
            _after_writes(self._guard, self._work_ahead)
        return p

    def _request(self, game: int, state: State) -> Request:
        """The observation of the seat to act in ``state`` and a PlayResponse holding its
        DecisionRequest (observation and legal actions; seq 0, times and events set when issued)."""
        seat = state.to_act
        assert seat is not None  # a decision state has a seat to act
        obs = observe(state, seat)
        msg = pb.PlayResponse()
        wire.decision_request_to_pb(0, game, obs, into=msg.decision_request)  # in place: no copy
        return Request(obs, msg)

    def _work_ahead(self) -> None:
        """The seat to act has a single legal action (a forced card, often the last trick's): while it
        answers, work out what that action leads to — the step and its events, the next game if the
        step ends one, the next deal and its events, and the next DecisionRequest — so that handling
        the answer is mostly lookups. A deal's end is the slowest decision to handle; this takes it
        off the answer's critical path (benchmarks/referee.py).

        Pure work only (the engine and message building): nothing is recorded, sent or changed but
        the ``_ahead_*`` slots, and each is used only for the very state object it was worked out
        from, so an exposure or a forfeit in between simply leaves it unused. The outcome, messages
        and record are the same with or without it (tests/test_server_rulings.py).
        """
        p = self.pending
        state, game = self._state, self._game
        if self.finished or p is None or len(p.legal) != 1 or state.to_act != p.seat:
            return
        action = p.legal[0]
        step = self._step(game, state, action, p.seat)
        self._ahead_step = AheadStep(state, p.seat, action, step)
        new = step.state
        if new.phase is Phase.OVER:
            if game >= self.games:
                return
            dealer = next_seat(new.dealer, self.rules.players)
            game, new = game + 1, new_game(self.rules, dealer)
            self._ahead_game = AheadGame(game, dealer, new)
        if new.phase is Phase.DEAL:
            dealt = self._deal_step(game, new)
            self._ahead_deal = AheadDeal(new, dealt)
            new = dealt.state
        if new.phase is not Phase.DEAL and new.phase is not Phase.OVER and new.to_act is not None:
            self._ahead_request = AheadRequest(new, self._request(game, new))

    def _on_decision(self, seat: int, d: pb.Decision, received: Instant) -> None:
        """A Decision from ``seat``, received at ``received``: answer the pending request,
        expose a card played out of turn, or reject it (docs/protocol.md, sequence numbers).

        A ``seq`` other than 0 and the pending one is ignored if it was sent to this seat before, else a
        protocol error. An answer (the pending ``seq``, or 0 from the seat to act) is recorded with the
        pending ``seq``. An exposure that changes nothing (the card is already exposed) is ignored.

        :raises Forfeit: when the answer comes after the seat's time bank ran out, or a rejection or
            protocol error reaches its limit.
        """
        p = self.pending
        if not self._seq_is_current(seat, d, p):
            return
        if p is None:
            return  # seq 0 while nothing is pending: only before the match runs
        try:
            action = wire.action_from_pb(d.action)
        except wire.WireError as e:
            self._protocol_error(seat, d.seq, f"seat {seat}: {e}", d.action,
                                 public=f"seat {seat} sent a malformed action")
            return
        answer = self.clock.answer(self.seats[p.seat].clock, p.sent_at, received) if seat == p.seat else None
        if answer is not None and answer.ruling is Ruling.BANK_EMPTY:
            # Too late: the bank ran out before the answer came (its deadline passed); it is not played.
            self.seats[seat].clock = answer.clock
            raise self._bank_empty(seat)
        state = self._state
        try:
            step = self._take_step(state, action, seat)
        except RuleError as e:
            self._reject(seat, d.seq, 0 if answer is None else p.seq, action, e,
                         0.0 if answer is None else answer.elapsed)
            return
        if step.state is state:
            # An exposure of a card already exposed: nothing happened, nothing to record or tell.
            self.log.debug("exposure_repeated", seat=seat, action=str(action))
            return
        self._played(p, seat, action, step, answer)

    def _bank_empty(self, seat: int) -> Forfeit:
        """The forfeit of ``seat`` for its empty time bank."""
        return Forfeit(seat, pb.TERMINATION_TIMEOUT, f"seat {seat} used up its time bank ({self.tc.bank_ms} ms)")

    def _seq_is_current(self, seat: int, d: pb.Decision, p: Pending | None) -> bool:
        """Is ``d`` an answer to the pending request or an unsolicited action (``seq`` 0)? A stale
        ``seq`` (sent to this seat before) is ignored; one never sent to it is a protocol error.
        :raises Forfeit: at ``max_protocol_errors``."""
        if d.seq == 0 or (p is not None and seat == p.seat and d.seq == p.seq):
            return True
        s = self.seats[seat]
        if d.seq in s.issued:
            self.log.debug("stale_decision_ignored", seat=seat, seq=d.seq, pending=p.seq if p else None)
        else:
            latest = f"its latest request is {s.last_issued_seq}" if s.last_issued_seq else "it has had none"
            self._protocol_error(seat, d.seq, f"seat {seat} sent seq {d.seq}, which was never sent to it "
                                              f"({latest})", d.action)
        return False

    def _take_step(self, state: State, action: Action, seat: int) -> Step:
        """``seat`` plays ``action`` in ``state``: the step worked out ahead for exactly this, or now.
        :raises RuleError: for an illegal action."""
        ahead = self._ahead_step
        if ahead is not None and ahead.before is state and ahead.seat == seat and ahead.action == action:
            self._ahead_step, self.worked_ahead = None, self.worked_ahead + 1
            return ahead.step
        return self._step(self._game, state, action, seat)

    def _played(self, p: Pending, seat: int, action: Action, step: Step, answer: Verdict | None) -> None:
        """``seat``'s ``action`` (an ``answer`` to ``p`` ruled in time, or an exposure: ``None``) took
        ``step``: charge the time, record it, publish its events, then advance (an answer) or re-issue
        the request (an exposure that changed the legal actions; same deadline and timer)."""
        answering = answer is not None
        seq = p.seq if answering else 0
        ms = 0
        if answer is not None:
            self.seats[seat].clock = answer.clock
            self.latencies.append(answer.elapsed)
            ms = _ms(answer.elapsed)
        text = str(action)
        self.record.write("action", game=self._game, deal=self._state.deal_number, seat=seat, seq=seq,
                          action=text, ms=ms, by="bot", out_of_turn=not answering)
        if self._log_actions:
            self.log.debug("action", seat=seat, seq=seq, action=text, ms=ms)
        if step.events:
            self._publish_pb(step.events)
        self._state = new = step.state
        if answering:
            self.pending = None  # the deadline timer stays: see _arm_timer
            self._advance()
        elif legal_actions(new) != p.legal:
            self._issue(new, self._game, deadline=p.deadline)

    def _reject(self, seat: int, seq: int, record_seq: int, action: Action, e: RuleError, elapsed: float) -> None:
        """Reject ``action``: tell the seat (``seq`` as it sent it), record it with ``record_seq`` (the
        pending request's for an answer, 0 out of turn). :raises Forfeit: at ``max_illegal``."""
        s = self.seats[seat]
        s.illegal += 1
        self.log.info("action_rejected", seat=seat, seq=seq, action=str(action), reason=e.reason.value)
        self.record.write("rejected", game=self._game, deal=self._deal_no, seat=seat, seq=record_seq,
                          action=str(action), reason=e.reason.value, message=e.message, ms=_ms(elapsed))
        self._send(seat, pb.PlayResponse(action_rejected=pb.ActionRejected(
            seq=seq, reason=wire.reason_to_pb(e.reason), message=e.message, action=wire.action_to_pb(action))))
        if s.illegal >= self.tc.max_illegal:
            # The engine's message names cards (the hand it was checked against): for the record only.
            raise Forfeit(seat, pb.TERMINATION_ILLEGAL, f"{s.illegal} illegal actions (last: {e.reason.value})",
                          f"{s.illegal} illegal actions (last: {e})")

    def _timeout(self, state: State, p: Pending, at: Instant) -> State:
        """``p`` timed out at ``at``: a strike, then the first legal action played for the seat.
        :raises Forfeit: on an empty bank or the last strike (:meth:`referee.clock.ClockPolicy.time_out`)."""
        s = self.seats[p.seat]
        verdict = self.clock.time_out(s.clock, p.sent_at, at)
        s.clock = verdict.clock
        strikes = verdict.clock.strikes
        self.pending = None
        self.log.info("timeout", seat=p.seat, seq=p.seq, strikes=strikes, bank_left_ms=s.clock.bank_left_ms)
        self._event("timeout", seat=p.seat, value=strikes)
        if verdict.ruling is Ruling.BANK_EMPTY:
            raise self._bank_empty(p.seat)
        if verdict.ruling is Ruling.STRUCK_OUT:
            raise Forfeit(p.seat, pb.TERMINATION_TIMEOUT, f"seat {p.seat} timed out {strikes} times")
        action = p.legal[0]
        new = apply(state, action, p.seat)
        self.record.write("action", game=self._game, deal=state.deal_number, seat=p.seat, seq=p.seq,
                          action=str(action), ms=_ms(verdict.elapsed), by="timeout", out_of_turn=False)
        self._emit_diff(state, new, action, p.seat)
        return new

    # ------------------------------------------------------------------ events from state changes

    def _step(self, game: int, state: State, action: Action, seat: int) -> Step:
        """``apply(state, action, seat)`` and the step's public events as messages.
        :raises RuleError: for an illegal action (referee.rules.apply)."""
        new = apply(state, action, seat)
        return Step(new, self._events_pb(game, state, new, action, seat))

    def _events_pb(self, game: int, before: State, after: State, action: Action | None,
                   seat: int | None) -> list[pb.Event]:
        """The public events of the step ``before`` -> ``after`` in ``game`` (referee.events.step_events),
        as messages."""
        return [wire.event_to_pb(e) for e in step_events(game, before, after, action, seat)]

    def _emit_diff(self, before: State, after: State, action: Action | None, seat: int | None) -> None:
        """Publish the public events of the step ``before`` -> ``after`` (referee.events.step_events)."""
        evs = self._events_pb(self._game, before, after, action, seat)
        if evs:
            self._publish_pb(evs)

    # ------------------------------------------------------------------ the end

    def _finish(self, forfeit: Forfeit | None, aborted: str | None, aborted_full: str | None = None) -> None:
        """End the match: the result, the record's last lines, MatchEnd to every seat, the watchers'
        result. ``aborted`` is the reason every seat sees, ``aborted_full`` (default the same) the record's."""
        if self.finished:
            return
        self.pending = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if forfeit is not None:
            forfeited_side = self._settle_forfeit(forfeit)
        elif aborted is not None:
            forfeited_side = -1
            self._settle_abort(aborted, aborted if aborted_full is None else aborted_full)
        else:
            forfeited_side = -1
            self.status = pb.MATCH_STATUS_COMPLETED
            for o in self.seats:
                o.termination = pb.TERMINATION_NORMAL
        games_won = [0, 0]
        for ended in self._games_ended:
            if ended.winner is not None:
                games_won[ended.winner] += 1
        if self.status == pb.MATCH_STATUS_FORFEITED:
            winner = -1 if forfeited_side == -2 else 1 - forfeited_side
        elif self.status == pb.MATCH_STATUS_ABORTED or games_won[0] == games_won[1]:
            winner = -1
        else:
            winner = 0 if games_won[0] > games_won[1] else 1
        self.result = self._match_result(games_won, winner, forfeited_side)
        self._record_result(self.result)
        self._announce(self.result)
        self.log.info("match_end", status=pb.MatchStatus.Name(self.status), winner=winner, games_won=games_won)
        self._drop_play_state()
        self.done.set()
        if self._on_end is not None:
            with contextlib.suppress(Exception):
                self._on_end(self)

    def _settle_forfeit(self, forfeit: Forfeit) -> int:
        """``forfeit.seat`` forfeits: set every seat's termination (the absent ones too, for a no-show),
        the status, and end the current game as forfeited. :returns: the forfeiting side, or -2 when
        seats of both sides never joined (nobody wins)."""
        loser = forfeited_side = side_of(forfeit.seat)
        s = self.seats[forfeit.seat]
        s.termination, s.detail, s.full_detail = forfeit.termination, forfeit.detail, forfeit.full
        if forfeit.termination == pb.TERMINATION_NO_SHOW:
            for o in self.seats:
                if not o.joined:
                    o.termination, o.detail, o.full_detail = pb.TERMINATION_NO_SHOW, forfeit.detail, forfeit.full
            if len({side_of(o.seat) for o in self.seats if not o.joined}) > 1:
                forfeited_side = -2  # both sides missing: nobody wins
        for o in self.seats:
            if o.termination == pb.TERMINATION_UNSPECIFIED:
                o.termination, o.detail = pb.TERMINATION_OTHER_SEAT_FORFEITED, forfeit.detail
                o.full_detail = forfeit.full
        self.status = pb.MATCH_STATUS_FORFEITED
        if self._game_unfinished():
            self._end_game(self._state, forfeited=True, winner=None if forfeited_side == -2 else 1 - loser)
        self.log.info("forfeit", seat=forfeit.seat, termination=pb.Termination.Name(forfeit.termination),
                      detail=forfeit.detail)
        return forfeited_side

    def _settle_abort(self, detail: str, full: str) -> None:
        """The match stops without a winner: every seat's termination ``aborted`` (``detail`` for the
        seats, ``full`` for the record); the current game ends with no winner."""
        self.status = pb.MATCH_STATUS_ABORTED
        for o in self.seats:
            o.termination, o.detail, o.full_detail = pb.TERMINATION_ABORTED, detail, full
        if self._game_unfinished():
            self._games_ended.append(GameEnd(self._game, self._state, False, None))

    def _game_unfinished(self) -> bool:
        """Has the current game started and not ended?"""
        return bool(self._game) and (not self._games_ended or self._games_ended[-1].game != self._game)

    def _match_result(self, games_won: list[int], winner: int, forfeited_side: int) -> pb.MatchResult:
        """The MatchResult: status, games won, winner (-1: none), every seat's and every game's result;
        ``connected_at_end``: the seat has the stream :meth:`_announce` sends MatchEnd on (built before it)."""
        result = pb.MatchResult(
            match_id=self.id, status=self.status, games_won=games_won,
            winner=winner, forfeited_side=-1 if forfeited_side < 0 else forfeited_side,
            seats=[pb.SeatResult(seat=o.seat, name=o.name, termination=o.termination, detail=o.detail,
                                 strikes=o.clock.strikes, illegal=o.illegal, protocol_errors=o.protocol_errors,
                                 bank_left_ms=o.clock.bank_left_ms, bot_counts=o.bot_counts,
                                 connected_at_end=o.conn is not None)
                   for o in self.seats])
        for ended in self._games_ended:
            state = ended.state
            result.games.add(game=ended.game, scores=state.scores, winner=-1 if ended.winner is None else ended.winner,
                             points=[wire.point_to_pb(p) for p in state.points], forfeited=ended.forfeited,
                             deals=state.deal_number)
        return result

    def _record_result(self, result: pb.MatchResult) -> None:
        """The record's ``result`` and ``seed`` lines (then it is closed), and the match's metrics: from
        ``result`` (:meth:`_match_result`, what the seats and watchers are sent), so each seat's
        ``connected_at_end`` is the very value its SeatResult carries; the seat's own fields beside it."""
        status = MatchStatus.from_pb(self.status).value
        self.record.write(
            "result", status=status,
            winner=None if result.winner < 0 else result.winner,
            forfeited_side=None if result.forfeited_side < 0 else result.forfeited_side,
            games_won=list(result.games_won),
            seats=[{"seat": o.seat, "name": o.name, "bot_name": o.bot_name, "bot_version": o.bot_version,
                    "termination": Termination.from_pb(o.termination).value,
                    "detail": o.full_detail, "strikes": o.clock.strikes, "illegal": o.illegal,
                    "protocol_errors": o.protocol_errors, "bank_left_ms": o.clock.bank_left_ms,
                    "bot_counts": {"exceptions": o.bot_counts.exceptions, "fallbacks": o.bot_counts.fallbacks},
                    "connected_at_end": told.connected_at_end}
                   for o, told in zip(self.seats, result.seats, strict=True)])
        self.record.write("seed", seed=self.seed.hex())
        metrics.match_finished(
            status,
            [t.value for t in (Termination.from_pb(o.termination) for o in self.seats) if t.forfeits],
            self.latencies,
        )
        self.record.close()

    def _announce(self, result: pb.MatchResult) -> None:
        """The undelivered events, then MatchEnd and the end of the stream to every connected seat; the
        result to every watcher (the seats' copy with :meth:`names_told`)."""
        told = result
        if self.blind:  # a copy only when its names differ from the watchers'
            told = pb.MatchResult()
            told.CopyFrom(result)
            for seat, name in zip(told.seats, self.names_told(), strict=True):
                seat.name = name
        end = pb.PlayResponse(match_end=pb.MatchEnd(result=told))
        self._flush_events()
        for o in self.seats:
            if o.grace is not None:
                o.grace.cancel()
            if o.conn is not None:
                o.conn.out.put_nowait(end)
                o.conn.out.put_nowait(CLOSE)
        for q in self.watchers:
            q.put_nowait(pb.WatchMatchResponse(result=result))
            q.put_nowait(None)
        self.watchers.clear()
