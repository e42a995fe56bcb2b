"""The scripted referee: plays one :class:`~sdk.conformance.scenarios.Scenario` with one bot over a
real gRPC stream on loopback and writes down everything the bot did (:class:`RunLog`).

It speaks ``allfours.v1`` exactly as docs/protocol.md describes, with the engine (``referee.rules``)
for the rules and ``referee.events``/``referee.wire`` for the messages; it knows nothing of the real
referee's match runner. Where the real referee would end a match (a wrong protocol version, a
ticket it does not know, too many protocol errors or strikes) the scripted one writes the fault down
and carries on, so that one fault fails one check and the other checks still say something.

What it does beyond the real referee, when the scenario asks: rejects the first (legal) answer to
one request; re-sends a request that was answered; sends a message of a kind it does not know, an
event of an unknown kind and unknown fields; ends the stream with ``UNAVAILABLE`` right after a
request, then takes the seat back from a new stream with the same ticket (``Welcome.resumed``) and
re-sends the pending request with the time it has left.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee import wire
from referee.events import Event, step_events
from referee.rules import (
    Action,
    Pass,
    Phase,
    Play,
    RuleError,
    RunPack,
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
from referee.streams import Undecodable
from sdk.conformance.logs import DecisionSeen, HelloSeen, RequestSent, RunLog
from sdk.conformance.scenarios import Scenario

#: Seconds a new stream has to send its Hello.
HELLO_S = 10.0
#: A field number no ``allfours.v1`` message uses: the "unknown messages" are sent with it.
UNKNOWN_FIELD = 99
#: An ``EventKind`` value the protocol does not define (yet).
UNKNOWN_EVENT_KIND = 99
#: The time bank announced in Welcome (ms); the scripted referee never forfeits a seat.
BANK_MS = 300_000
#: Seconds a seat whose stream ended has to come back (the protocol's default ``grace_ms``).
GRACE_S = wire.TimeControl().grace_ms / 1000
#: Sentinels on a stream's queue: close with OK, or drop with UNAVAILABLE.
CLOSE, DROP = "close", "drop"


class BotGone(Exception):
    """The bot's stream ended and no new one came within the grace period (or its process ended)."""


@dataclass(eq=False)
class _Stream:
    number: int
    out: asyncio.Queue[pb.PlayResponse | str] = field(default_factory=asyncio.Queue)  # str: CLOSE or DROP
    closed: bool = False


def _unknown_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field ``number`` holding ``payload``, as protobuf encodes it."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


class _Message(Protocol):
    """What :func:`with_unknown_field` uses of a protobuf message."""

    def SerializeToString(self) -> bytes: ...

    def ParseFromString(self, data: bytes) -> object: ...


M = TypeVar("M", bound=_Message)


def with_unknown_field(msg: M) -> M:
    """A copy of ``msg`` carrying an extra field it does not define (a newer referee's field)."""
    out = type(msg)()
    out.ParseFromString(msg.SerializeToString() + _unknown_field(UNKNOWN_FIELD, b"from a newer protocol"))
    return out


def _action_text(a: pb.Action) -> str:
    try:
        return str(wire.action_from_pb(a))
    except wire.WireError:
        return f"malformed ({pb.ActionKind.Name(a.kind) if a.kind in pb.ActionKind.values() else a.kind} "\
               f"{a.card!r})"


class ScriptedReferee(pb_grpc.RefereeServiceServicer):
    """Serves ``RefereeService.Play`` for one scenario; :meth:`play` runs the match.

    :param scenario: the match to play; :param ticket: the ticket the bot was given;
    :param clock: seconds since the bot's launch (for the log).
    """

    def __init__(self, scenario: Scenario, ticket: str, clock: Callable[[], float]) -> None:
        self.sc = scenario
        self.ticket = ticket
        self.clock = clock
        self.log = RunLog(scenario=scenario.name, ticket=ticket)
        self.inbox: asyncio.Queue[tuple[str, Any, float]] = asyncio.Queue()
        self.stream: _Stream | None = None
        self.streams = 0
        self.seq = 0
        self.k = 0
        self.sent_seqs: dict[int, RequestSent] = {}
        self.events: list[pb.Event] = []
        self.commitment = hashlib.sha256(f"conformance/{scenario.name}".encode()).hexdigest()
        self.games_done: list[pb.GameResult] = []
        self.gone_until = 0.0
        self.dropped: set[int] = set()
        #: Called at each Hello (the launcher samples the bot's memory then), or None.
        self.on_hello: Callable[[], None] | None = None

    # ------------------------------------------------------------------------------ streams

    async def Play(self, request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        """One bot stream: read the Hello, then hand reads to the match and write what it queues."""
        self.streams += 1
        st = _Stream(self.streams)
        try:
            first = await asyncio.wait_for(context.read(), HELLO_S)
        except TimeoutError:
            self.log.notes.append(f"stream {st.number}: no message within {HELLO_S:.0f} s")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no Hello")
            return
        if first is grpc.aio.EOF:
            return
        is_hello = not isinstance(first, Undecodable) and first.WhichOneof("msg") == "hello"
        if isinstance(first, Undecodable):
            self.log.notes.append(f"stream {st.number}: {first.detail()}")
        hello = first.hello if is_hello else pb.Hello()
        self.log.hellos.append(HelloSeen(st.number, self.clock(), hello.ticket, hello.protocol_version,
                                         hello.bot_name, is_hello))
        if self.on_hello is not None:
            self.on_hello()
        reader = asyncio.ensure_future(self._read(context, st))
        self.inbox.put_nowait(("stream", st, self.clock()))
        try:
            while True:
                msg = await st.out.get()
                if msg == CLOSE:
                    return
                if msg == DROP:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "conformance: stream dropped on purpose")
                await context.write(msg)
        finally:
            st.closed = True
            reader.cancel()

    async def _read(self, context: grpc.aio.ServicerContext, st: _Stream) -> None:
        try:
            while True:
                msg = await context.read()
                if msg is grpc.aio.EOF:
                    break
                self.inbox.put_nowait(("msg", (st, msg), self.clock()))
        except (grpc.RpcError, grpc.aio.AbortError, asyncio.CancelledError):  # AbortError: we dropped it
            pass
        self.inbox.put_nowait(("ended", st, self.clock()))

    def _send(self, msg: pb.PlayResponse | str) -> None:
        if self.stream is not None and not self.stream.closed:
            self.stream.out.put_nowait(msg)

    @property
    def match_id(self) -> str:
        """The match id in Welcome, MatchEnd and (lobby mode) the Assignment."""
        return f"conformance-{self.sc.name}"

    def time_control(self) -> pb.TimeControl:
        """The time control announced (every field set)."""
        return wire.time_control_to_pb(wire.TimeControl(decision_ms=self.sc.decision_ms, bank_ms=BANK_MS))

    def _welcome(self, resumed: bool) -> pb.PlayResponse:
        sc, seat = self.sc, self.sc.bot_seat
        partner = partner_of(seat, sc.players)
        names = [("bot" if s == seat else f"house-{s}") for s in range(sc.players)]
        return pb.PlayResponse(welcome=pb.Welcome(
            match_id=self.match_id, seat=seat, side=side_of(seat),
            partner_seat=-1 if partner is None else partner, players=sc.players, rules=wire.rules_to_pb(sc.rules),
            time_control=self.time_control(), seat_names=names, games=sc.games, resumed=resumed,
            seed_commitment=self.commitment))

    async def _take_stream(self, timeout: float, why: str) -> None:
        """Wait up to ``timeout`` s for a new stream (handling other inbox items as stale) and seat it.

        :raises BotGone: if none comes.
        """
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise BotGone(why)
            try:
                kind, item, at = await asyncio.wait_for(self.inbox.get(), left)
            except TimeoutError:
                raise BotGone(why) from None
            if kind == "stream":
                resumed = self.stream is not None
                self.stream = item
                self._send(self._welcome(resumed))
                return
            if kind == "msg":
                self._handle_stale(item[0], item[1], at)

    # ------------------------------------------------------------------------------ the match

    async def play(self, join_s: float, since: str = "the launch") -> RunLog:
        """Play the scenario (the bot's Hello due within ``join_s`` s of now, i.e. of ``since``); returns the
        log (``failure`` says why a run ended early)."""
        try:
            await self._take_stream(join_s, f"no stream with a Hello within {join_s:.0f} s of {since}")
            await self._play_games()
            self._flush_events()
            self._send(pb.PlayResponse(match_end=pb.MatchEnd(result=self._result())))
            self._send(CLOSE)
            self.log.match_end_sent, self.log.match_end_at = True, self.clock()
        except BotGone as e:
            self.log.failure = str(e)
            self._send(CLOSE)
        return self.log

    async def _play_games(self) -> None:
        sc = self.sc
        dealer = sc.first_dealer
        for game in range(1, sc.games + 1):
            state = new_game(sc.rules, dealer)
            self._emit([Event("game_started", game=game, deal=0, dealer=dealer)])
            deal_no = 0
            while state.phase is not Phase.OVER:
                if state.phase is Phase.DEAL:
                    deal_no += 1
                    before, state = state, deal(state, sc.deck(game, deal_no))
                    self._emit(step_events(game, before, state, None, None))
                    if sc.house.expose_trump and game == 1 and deal_no == 1:
                        state = self._expose_trump(game, state)
                    continue
                seat = state.to_act
                assert seat is not None
                self.seq += 1
                if seat == sc.bot_seat:
                    action = await self._ask(game, state)
                else:
                    action = self._house(state)
                before, state = state, apply(state, action, seat)
                self._emit(step_events(game, before, state, action, seat))
            winner = state.winner if state.winner is not None else -1
            self._emit([Event("game_ended", game=game, deal=state.deal_number, scores=state.scores, winner=winner)])
            self.games_done.append(pb.GameResult(game=game, scores=state.scores, winner=winner, deals=state.deal_number,
                                                 points=[wire.point_to_pb(p) for p in state.points]))
            self._flush_events()
            dealer = next_seat(state.dealer, sc.players)

    def _expose_trump(self, game: int, state: State) -> State:
        """The first house opponent of the bot plays a trump out of turn (docs/rules.md, Penalty: the call)."""
        seat = next_seat(self.sc.bot_seat, self.sc.players)
        card = next(c for c in state.hands[seat] if c.suit is state.trump)
        before, state = state, apply(state, Play(card), seat)
        self._emit(step_events(game, before, state, Play(card), seat))
        return state

    def _house(self, state: State) -> Action:
        """A house seat's choice: beg, give one (or run the pack), pass, or the first legal card."""
        legal = legal_actions(state)
        if state.phase is Phase.DEALER and self.sc.house.run_pack:
            return RunPack()
        if state.phase is Phase.CALL:
            return Pass()
        return legal[0]

    def _emit(self, events: list[Event]) -> None:
        self.events.extend(wire.event_to_pb(e) for e in events)

    def _flush_events(self) -> None:
        if self.events:
            self._send(pb.PlayResponse(events=pb.EventBatch(events=self.events)))
            self.events = []

    def _result(self) -> pb.MatchResult:
        won = [sum(1 for g in self.games_done if g.winner == side) for side in (0, 1)]
        winner = -1 if won[0] == won[1] else (0 if won[0] > won[1] else 1)
        seats = [pb.SeatResult(seat=s, name=("bot" if s == self.sc.bot_seat else f"house-{s}"),
                               termination=pb.TERMINATION_NORMAL, bank_left_ms=BANK_MS, connected_at_end=True)
                 for s in range(self.sc.players)]  # as the referee's: every seat is sent MatchEnd on its stream
        return pb.MatchResult(match_id=self.match_id, status=pb.MATCH_STATUS_COMPLETED,
                              games=self.games_done, seats=seats, games_won=won, winner=winner, forfeited_side=-1)

    # ------------------------------------------------------------------------------ asking the bot

    def _request(self, game: int, state: State, time_left_ms: int) -> pb.PlayResponse:
        req = pb.DecisionRequest()
        wire.decision_request_to_pb(self.seq, game, observe(state, self.sc.bot_seat), req)
        req.time_left_ms = time_left_ms
        req.time_bank_ms = BANK_MS
        return pb.PlayResponse(decision_request=req)

    def _stage_unknown(self, msg: pb.PlayResponse) -> pb.PlayResponse:
        """Send a message of an unknown kind; return ``msg`` with an unknown event and unknown fields."""
        self._send(with_unknown_field(pb.PlayResponse()))
        # an EventKind no build knows, on purpose: the stubs type kind as the enum, which cannot name it
        odd = pb.Event(kind=UNKNOWN_EVENT_KIND, game=msg.decision_request.game, seat=-1, side=-1, winner=-1,  # type: ignore[arg-type]
                       dealer=-1, target_seat=-1)
        self._send(pb.PlayResponse(events=pb.EventBatch(events=[with_unknown_field(odd)])))
        msg.decision_request.observation.CopyFrom(with_unknown_field(msg.decision_request.observation))
        return with_unknown_field(msg)

    async def _ask(self, game: int, state: State) -> Action:
        """Send the bot its request and wait for a legal answer; the first legal action on timeout."""
        sc = self.sc
        self.k += 1
        k, seq = self.k, self.seq
        msg = self._request(game, state, sc.decision_ms)
        msg.decision_request.events.extend(self.events)
        self.events = []
        if k == sc.unknown_at:
            msg = self._stage_unknown(msg)
        legal = list(legal_actions(state))
        sent = RequestSent(k, seq, game, state.phase.value, legal, self.clock(), sc.decision_ms,
                           self.stream.number if self.stream else 0)
        self.log.requests.append(sent)
        self.sent_seqs[seq] = sent
        self._send(msg)
        deadline = time.monotonic() + sc.decision_ms / 1000
        if k == sc.drop_at:
            self.log.streams_dropped.append(seq)
            if self.stream is not None:
                self.dropped.add(self.stream.number)
            self._send(DROP)
        rejected_once = False
        while True:
            wait = self._wait_s(deadline, seq)
            if wait is None:
                sent.timed_out = True
                return legal[0]
            try:
                kind, item, at = await asyncio.wait_for(self.inbox.get(), wait)
            except TimeoutError:
                continue
            if kind == "stream":
                self._resume(item, game, state, sent, deadline)
                continue
            if kind == "ended":
                self._stream_ended(item, seq)
                continue
            st, m = item
            if st.number in self.dropped:  # sent on the stream the referee dropped: lost with it
                if not isinstance(m, Undecodable) and m.WhichOneof("msg") == "decision":
                    self.log.decisions.append(DecisionSeen(m.decision.seq, _action_text(m.decision.action), at,
                                                           st.number, "lost-with-stream", m.decision.seq))
                continue
            action = self._on_message(st, m, at, sent, state, reject=(k == sc.reject_at and not rejected_once))
            if action == "rejected-on-purpose":
                rejected_once = True
                continue
            if isinstance(action, Action):
                sent.answered_at = at
                if k == sc.resend_at:
                    self._resend(msg, sent)
                return action

    def _wait_s(self, deadline: float, seq: int) -> float | None:
        """Seconds to wait for the pending request ``seq`` (answer ``deadline`` on the monotonic clock),
        or None once the decision time is out. While the bot's stream is away the decision clock runs
        on and the grace period bounds the wait.

        :raises BotGone: if the grace period ended with no new stream.
        """
        now = time.monotonic()
        if self.stream is not None:
            return None if now >= deadline else deadline - now
        if now >= self.gone_until:
            raise BotGone(f"the bot's stream ended while seq {seq} was pending and no new stream came "
                          f"within {GRACE_S:.0f} s")
        return self.gone_until - now

    def _stream_ended(self, st: _Stream, seq: int) -> None:
        """The bot's stream ``st`` ended while ``seq`` was pending: the grace period starts (an older
        stream ending changes nothing)."""
        if st is self.stream:
            self.log.disconnects.append(f"stream {st.number} ended while seq {seq} was pending")
            self.stream, self.gone_until = None, time.monotonic() + GRACE_S

    def _resume(self, st: _Stream, game: int, state: State, sent: RequestSent, deadline: float) -> None:
        """A new stream took the seat: Welcome (resumed) and, while ``sent`` is pending, the same
        request again with the time it has left (docs/protocol.md, Reconnecting)."""
        old, self.stream = self.stream, st
        if old is not None and not old.closed:
            old.out.put_nowait(CLOSE)
        self._send(self._welcome(True))
        if time.monotonic() >= deadline:
            return
        again = self._request(game, state, max(1, int((deadline - time.monotonic()) * 1000)))
        again.decision_request.events.extend(self.events)
        self.events = []
        self.log.requests.append(RequestSent(sent.k, sent.seq, game, sent.phase, sent.legal, self.clock(),
                                             again.decision_request.time_left_ms, st.number, resent=True))
        self._send(again)

    def _resend(self, msg: pb.PlayResponse, sent: RequestSent) -> None:
        again = pb.PlayResponse()
        again.CopyFrom(msg)
        del again.decision_request.events[:]
        self.log.requests.append(RequestSent(sent.k, sent.seq, sent.game, sent.phase, sent.legal, self.clock(),
                                             sent.time_left_ms, sent.stream, resent=True, answered_at=sent.answered_at))
        self._send(again)

    def _reject(self, seq: int, reason: pb.Reason, text: str, action: pb.Action) -> None:
        self.log.rejections.append((seq, text))
        self._send(pb.PlayResponse(action_rejected=pb.ActionRejected(seq=seq, reason=reason, message=text,
                                                                     action=action)))

    def _on_message(self, st: _Stream, m: pb.PlayRequest | Undecodable, at: float, sent: RequestSent, state: State,
                    reject: bool) -> Action | str | None:
        """One message from the bot while ``sent`` is pending: the action to play, ``"rejected-on-purpose"``
        after the staged rejection, or ``None`` (nothing to play yet)."""
        if isinstance(m, Undecodable):  # as the real referee: a protocol error, the stream stays open
            self._malformed_answer(sent, m.detail("the message"))
            self._reject(0, pb.REASON_PROTOCOL_ERROR, m.detail("the message"), pb.Action())
            return None
        which = m.WhichOneof("msg")
        if which == "ping":
            self._send(pb.PlayResponse(pong=pb.Pong(nonce=m.ping.nonce)))
            return None
        if which != "decision":
            self._reject(0, pb.REASON_PROTOCOL_ERROR, f"conformance: unexpected {which or 'empty message'}",
                         pb.Action())
            return None
        d = m.decision
        self.log.bot_exceptions = max(self.log.bot_exceptions, d.counts.exceptions)
        self.log.bot_fallbacks = max(self.log.bot_fallbacks, d.counts.fallbacks)
        if d.seq not in (0, sent.seq):
            self._handle_stale(st, m, at)
            return None
        seen = DecisionSeen(d.seq, _action_text(d.action), at, st.number, "answer", sent.seq)
        self.log.decisions.append(seen)
        try:
            action = wire.action_from_pb(d.action)
        except wire.WireError as e:
            seen.verdict = "malformed"
            self._malformed_answer(sent, f"malformed action: {e}")
            self._reject(sent.seq, pb.REASON_PROTOCOL_ERROR, f"malformed action: {e}", d.action)
            return None
        first = sent.first_answer is None
        if first:
            sent.first_answer, sent.first_answer_at = action, at
            sent.first_answer_legal = action in sent.legal
        if action not in sent.legal:
            seen.verdict = "illegal"
            try:
                apply(state, action, self.sc.bot_seat)
                reason, text = pb.REASON_BAD_ACTION, f"{action} is not one of the legal actions"
            except RuleError as e:
                reason, text = wire.reason_to_pb(e.reason), str(e)
            self._reject(sent.seq, reason, text, d.action)
            return None
        if reject:
            seen.verdict = "rejected-on-purpose"
            self._reject(sent.seq, pb.REASON_BAD_ACTION,
                         f"conformance: {action} is refused on purpose; retry seq {sent.seq} before the deadline",
                         d.action)
            return "rejected-on-purpose"
        return action

    @staticmethod
    def _malformed_answer(sent: RequestSent, what: str) -> None:
        """A malformed message while ``sent`` is pending: its first answer if none came before (the real
        referee counts it towards max_protocol_errors, so it fails the checks an illegal answer fails)."""
        if sent.first_answer is None and not sent.first_answer_malformed:
            sent.first_answer_malformed = what

    def _handle_stale(self, st: _Stream, m: pb.PlayRequest | Undecodable, at: float) -> None:
        """A message naming no pending request: a duplicate, a late answer, an unknown seq, or bytes
        that are not a PlayRequest."""
        if isinstance(m, Undecodable):
            self._reject(0, pb.REASON_PROTOCOL_ERROR, m.detail("the message"), pb.Action())
            return
        which = m.WhichOneof("msg")
        if which == "ping":
            self._send(pb.PlayResponse(pong=pb.Pong(nonce=m.ping.nonce)))
            return
        if which != "decision":
            return
        d = m.decision
        req = self.sent_seqs.get(d.seq)
        verdict = "unknown-seq" if req is None else ("late" if req.timed_out and req.answered_at is None
                                                    else "duplicate")
        self.log.decisions.append(DecisionSeen(d.seq, _action_text(d.action), at, st.number, verdict, d.seq))
        if req is not None and req.timed_out and req.first_answer is None:
            with contextlib.suppress(wire.WireError):
                req.first_answer = wire.action_from_pb(d.action)
                req.first_answer_at = at
                req.first_answer_legal = req.first_answer in req.legal
        if verdict == "unknown-seq":
            self._reject(d.seq, pb.REASON_PROTOCOL_ERROR, f"seq {d.seq} was never sent to this seat", d.action)

    def drain(self) -> None:
        """Write down the messages that arrived after the match (e.g. an answer to a re-sent request)."""
        while not self.inbox.empty():
            kind, item, at = self.inbox.get_nowait()
            if kind == "msg":
                self._handle_stale(item[0], item[1], at)
