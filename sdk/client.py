"""Run a bot against a referee over gRPC (protocol ``allfours.v1``, proto/allfours/v1/referee.proto).

One seat, one bidirectional ``RefereeService.Play`` stream: send Hello with the ticket; on Welcome
call ``on_welcome``; on each DecisionRequest build a :class:`~sdk.bot.Context`, call ``act`` and
send the Decision echoing ``seq``; pass Events to the hooks; on MatchEnd call ``on_match_end`` and
return. Messages convert to and from the engine's values with the shared module ``referee.wire``.

Robustness:

- A bot whose ``act`` raises or returns something illegal does not lose its seat: the error is
  logged and the first legal action (the referee's default) is sent instead. A hook that raises is
  logged and counted, and the match goes on. A ``sys.exit`` in ``act`` or a hook is the bot leaving,
  as Python means it: one error line names it and the process exits with its status (the referee
  forfeits the seat; a competition's validation rejects such a bot).
- A request seen again on the same stream after it was answered is ignored; unknown message and
  event kinds (from a newer referee) are skipped.
- ActionRejected: the reason is logged and the bot is asked once more (``ctx.rejected`` says why);
  if it repeats itself, the first legal action is sent.
- Each exception and each fallback move is counted (:attr:`BotClient.counts`) and reported to the
  referee with every Decision (``Decision.counts``), so the match result and record show that a bot
  "played" only by fallback: nothing is hidden from whoever hosts the match.
- A transport error (or a stream that ends without MatchEnd) reconnects with the same ticket until
  the match's grace period (``grace_ms`` from Welcome) runs out; before the first Welcome, connecting
  is retried for ``connect_timeout_s`` (the referee may still be starting).

It uses gRPC's synchronous streaming API: the request side is a generator fed by a queue, and the
main thread reads responses, so no pending read is ever cancelled (cancelling one kills the stream).
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Iterable, Iterator

import grpc

from allfours.v1 import referee_pb2 as pb
from allfours.v1 import referee_pb2_grpc as pb_grpc
from referee import wire
from referee.outcome import MatchStatus, Termination
from referee.rules import Action, side_of
from referee.tls import tls_hint
from sdk.bot import (
    BotLike,
    Context,
    GameEnd,
    HookDispatcher,
    IllegalChoice,
    MatchEnd,
    MatchInfo,
    bot_name,
    call_hook,
    decision_rng,
    resolve_choice,
)

log = logging.getLogger("sdk.client")

#: Status codes after which reconnecting cannot help.
FATAL_CODES = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT,
               grpc.StatusCode.UNIMPLEMENTED,
               # A newer stream with this ticket took the seat (another process with the same
               # ticket): reconnecting would only take it back and forth.
               grpc.StatusCode.ABORTED)
#: Keepalive settings compatible with the referee's (it allows a ping every 5 s or more).
CHANNEL_OPTIONS = [("grpc.keepalive_time_ms", 20_000), ("grpc.keepalive_timeout_ms", 10_000)]


class ClientError(RuntimeError):
    """The bot could not play its match: bad ticket, refused seat, or the referee unreachable."""




def match_end_from_pb(result: pb.MatchResult, seat: int) -> MatchEnd:
    """An ``allfours.v1.MatchResult`` as the SDK's :class:`~sdk.bot.MatchEnd`, seen from ``seat``."""
    games = tuple(GameEnd(game=g.game, scores=(g.scores[0], g.scores[1]) if len(g.scores) == 2 else (0, 0),
                          winner=wire.optional(g.winner), forfeited=g.forfeited) for g in result.games)
    mine = next((s for s in result.seats if s.seat == seat), None)
    wins = (result.games_won[0], result.games_won[1]) if len(result.games_won) == 2 else (0, 0)
    return MatchEnd(
        games=games, wins=wins, winner=wire.optional(result.winner),
        status=MatchStatus.from_pb(result.status).value,
        termination=(Termination.from_pb(mine.termination) if mine else Termination.UNSPECIFIED).value,
        detail=mine.detail if mine else "",
    )


class BotClient:
    """Plays one seat of one match for ``bot`` (an object with ``act(ctx)``).

    :param bot: the bot; :param referee: ``host:port`` of the referee; :param ticket: the join ticket;
    :param name: / :param version: sent in Hello (default: the bot's ``name``/``version`` or class name);
    :param connect_timeout_s: how long to keep retrying before the first Welcome (seconds);
    :param tls_ca: PEM root certificate(s) to trust when the referee serves TLS (``None`` = plaintext).
    """

    def __init__(self, bot: BotLike, referee: str, ticket: str, name: str | None = None,
                 version: str | None = None, connect_timeout_s: float = 15.0,
                 tls_ca: bytes | None = None) -> None:
        self.bot = bot
        self.referee = referee
        self.tls_ca = tls_ca
        self.ticket = ticket
        self.name = name or bot_name(bot)
        self.version = version or str(getattr(bot, "version", "") or "0")
        self.connect_timeout_s = connect_timeout_s
        self.info: MatchInfo | None = None
        self.grace_ms = 5000
        #: Timeouts that forfeit the seat (the match's ``max_strikes``, from Welcome).
        self.max_strikes = 3
        self.reconnects = 0
        #: The bot's failures so far: exceptions its act() raised, and fallback moves sent in place of
        #: its answer; sent with every Decision, so the referee's result and record hold them.
        self.counts = pb.BotCounts()
        self._hooks: HookDispatcher | None = None
        self._out: queue.Queue[pb.PlayRequest | None] = queue.Queue()
        self._request: pb.DecisionRequest | None = None
        self._asked_again: set[int] = set()
        #: The seqs answered on the current stream (a request seen again there is not answered twice).
        self._answered: set[int] = set()
        self._connected_once = False

    # ------------------------------------------------------------------------------ the loop

    def run(self) -> MatchEnd:
        """Play until MatchEnd and return it (reconnecting on transport errors).

        :raises ClientError: for a refused ticket or seat, or when the referee cannot be reached
            within the connect timeout (before Welcome) or the grace period (after).
        """
        if self.tls_ca is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=self.tls_ca)
            channel = grpc.secure_channel(self.referee, creds, options=CHANNEL_OPTIONS)
        else:
            channel = grpc.insecure_channel(self.referee, options=CHANNEL_OPTIONS)
        stub = pb_grpc.RefereeServiceStub(channel)
        window_end = time.monotonic() + self.connect_timeout_s
        backoff = 0.05
        try:
            while True:
                try:
                    result = self._session(stub)
                    if result is not None:
                        return result
                    why = "the stream ended without MatchEnd"
                except grpc.RpcError as e:
                    code = e.code()
                    why = f"{code.name}: {e.details()}"
                    if code in FATAL_CODES or (code == grpc.StatusCode.PERMISSION_DENIED and self.info is None):
                        raise ClientError(f"the referee at {self.referee} refused the seat: {why}") from None
                now = time.monotonic()
                lost_live = self.info is not None and self._connected_once
                if lost_live:
                    # Lost a live stream: the referee holds the seat for grace_ms from now.
                    window_end = now + self.grace_ms / 1000 * 0.9
                    self._connected_once = False
                if now >= window_end:
                    raise ClientError(f"cannot reach the referee at {self.referee}: {why}{self._tls_hint(why)}")
                if lost_live:  # one line for the loss; the dials after it are quiet (the error ends them)
                    log.warning("connection lost (%s); reconnecting with the same ticket for up to %.1f s", why,
                                window_end - now)
                else:
                    log.debug("dialling the referee at %s again (%s)", self.referee, why)
                self.reconnects += 1
                time.sleep(min(backoff, max(0.0, window_end - now)))
                backoff = min(backoff * 2, 1.0)
        finally:
            channel.close()

    def _tls_hint(self, why: str) -> str:
        """What to change about TLS (:func:`referee.tls.tls_hint`) when this seat never joined, else ``""``."""
        if self.info is not None:
            return ""
        return tls_hint(why, self.referee, "--tls-ca" if self.tls_ca is not None else None)

    def _requests(self, out: queue.Queue[pb.PlayRequest | None]) -> Iterator[pb.PlayRequest]:
        yield pb.PlayRequest(hello=pb.Hello(ticket=self.ticket, protocol_version=wire.PROTOCOL_VERSION,
                                            bot_name=self.name, bot_version=self.version))
        while True:
            msg = out.get()
            if msg is None:
                return
            yield msg

    def _session(self, stub: pb_grpc.RefereeServiceStub) -> MatchEnd | None:
        """One stream: returns the MatchEnd, or ``None`` if the stream ended early."""
        out: queue.Queue[pb.PlayRequest | None] = queue.Queue()
        self._out = out
        self._answered = set()
        call = stub.Play(self._requests(out))
        try:
            for resp in call:
                which = resp.WhichOneof("msg")
                if which == "welcome":
                    self._on_welcome(resp.welcome)
                elif which == "decision_request":
                    self._on_request(resp.decision_request)
                elif which == "action_rejected":
                    self._on_rejected(resp.action_rejected)
                elif which == "events":
                    self._on_events(resp.events.events)
                elif which == "match_end":
                    assert self.info is not None
                    end = match_end_from_pb(resp.match_end.result, self.info.seat)
                    log.info("match over: %s, games won %s, winner side %s, this seat: %s %s", end.status,
                             end.wins, end.winner, end.termination, end.detail)
                    self._call_hook(self.bot, "on_match_end", end)
                    return end
            return None
        finally:
            out.put(None)
            call.cancel()

    # ------------------------------------------------------------------------------ messages

    def _on_welcome(self, w: pb.Welcome) -> None:
        tc = wire.time_control_from_pb(w.time_control)
        self.grace_ms = tc.grace_ms
        self.max_strikes = tc.max_strikes
        self._connected_once = True
        if self.info is not None:
            log.info("rejoined match %s as seat %d (resumed=%s)", w.match_id, w.seat, w.resumed)
            return
        self.info = MatchInfo(match_id=w.match_id, seat=w.seat, rules=wire.rules_from_pb(w.rules), games=w.games,
                              commitment=w.seed_commitment, seat_names=tuple(w.seat_names),
                              decision_ms=tc.decision_ms, bank_ms=tc.bank_ms)
        self._hooks = HookDispatcher(self.bot, self.info.rules.players, self._call_hook)
        log.info("joined match %s as seat %d (side %d) of %d", w.match_id, w.seat, w.side, w.players)
        self._call_hook(self.bot, "on_welcome", self.info)

    def _context(self, req: pb.DecisionRequest, rejected: str = "") -> Context:
        assert self.info is not None
        obs = wire.observation_from_pb(req.observation)
        legal = tuple(wire.action_from_pb(a) for a in req.legal_actions)
        seat = self.info.seat
        return Context(observation=obs, legal=legal, time_left_ms=req.time_left_ms, bank_ms=req.time_bank_ms,
                       seat=seat, side=side_of(seat), rules=obs.rules,
                       rng=decision_rng(self.info.commitment, seat, req.seq),
                       match_id=self.info.match_id, game=req.game, decision=req.seq, rejected=rejected)

    def _ask(self, ctx: Context) -> Action:
        """The bot's legal choice, or the first legal action if it fails or chooses badly (counted in
        :attr:`counts`: an exception, and a fallback move)."""
        try:
            return resolve_choice(self.bot.act(ctx), ctx.legal)
        except IllegalChoice as e:
            log.warning("seq %d: %s; sending the first legal action %s instead", ctx.decision, e, ctx.legal[0])
        except SystemExit as e:  # the bot leaves, as Python means it: said, then let out
            log.error("seq %d: the bot's act() called sys.exit(%s): it leaves the match", ctx.decision, e.code)
            raise
        except Exception:
            self.counts.exceptions += 1
            log.exception("seq %d: the bot's act() raised; sending the first legal action %s", ctx.decision,
                          ctx.legal[0])
        self.counts.fallbacks += 1
        return ctx.legal[0]

    def _call_hook(self, bot: object, hook: str, arg: object) -> None:
        """Call the bot's ``hook`` (:func:`~sdk.bot.call_hook`); if it raises, log its traceback, count an
        exception (:attr:`counts`) and go on: the seat is not lost to the bot's hook. A ``sys.exit`` in it
        is said in one line and let out (the bot leaves)."""
        try:
            call_hook(bot, hook, arg)
        except SystemExit as e:
            log.error("the bot's %s() called sys.exit(%s): it leaves the match", hook, e.code)
            raise
        except Exception:
            self.counts.exceptions += 1
            log.exception("the bot's %s() raised; the match goes on", hook)

    def _send(self, seq: int, action: Action) -> None:
        """Send a Decision, with the bot's failure counts so far (the referee records them)."""
        self._answered.add(seq)
        self._out.put(pb.PlayRequest(decision=pb.Decision(seq=seq, action=wire.action_to_pb(action),
                                                          counts=self.counts)))

    def _on_events(self, events: Iterable[pb.Event]) -> None:
        """Public events (batched by the referee), oldest first, to the bot's hooks."""
        if self._hooks is not None:
            for ev in events:
                try:
                    event = wire.event_from_pb(ev)
                except wire.WireError as e:  # e.g. a kind added by a newer referee: forward compatibility
                    log.debug("skipping an event this SDK does not know: %s", e)
                    continue
                if event.kind == "timeout" and self.info is not None and event.seat == self.info.seat:
                    log.warning("the referee timed out this seat (strike %d of %d): the bot answered past its "
                                "deadline (ctx.time_left_ms), so the first legal action was played for it",
                                event.value, self.max_strikes)
                self._hooks.event(event)

    def _on_request(self, req: pb.DecisionRequest) -> None:
        self._on_events(req.events)
        if req.seq in self._answered:
            # The same request again on the same stream: the answer already went out (docs/protocol.md,
            # Sequence numbers). After a reconnect the set is new, so a re-sent pending request is answered.
            log.debug("seq %d: a request already answered on this stream; ignored", req.seq)
            return
        self._request = req
        ctx = self._context(req)
        if not ctx.legal:
            log.warning("seq %d: a request with no legal actions; nothing to answer", req.seq)
            return
        self._send(req.seq, self._ask(ctx))

    def _on_rejected(self, r: pb.ActionRejected) -> None:
        reason = wire.enum_name(pb.Reason, r.reason, "REASON_")
        log.warning("seq %d: the referee rejected %s: %s: %s", r.seq, _action_text(r.action), reason, r.message)
        req = self._request
        if req is None or r.seq not in (req.seq, 0) or req.seq in self._asked_again:
            return
        self._asked_again.add(req.seq)
        ctx = self._context(req, rejected=f"{reason}: {r.message}")
        action = self._ask(ctx)
        if r.HasField("action") and wire.action_to_pb(action) == r.action:
            others = [a for a in ctx.legal if wire.action_to_pb(a) != r.action]
            if not others:
                return
            action = others[0]
            self.counts.fallbacks += 1
        self._send(req.seq, action)


def _action_text(a: pb.Action) -> str:
    try:
        return str(wire.action_from_pb(a))
    except wire.WireError:
        return repr(a)


def run_bot(bot: BotLike, referee: str, ticket: str, name: str | None = None, version: str | None = None,
            connect_timeout_s: float = 15.0, tls_ca: bytes | None = None) -> MatchEnd:
    """Play one match for ``bot`` at ``referee`` (``host:port``) with ``ticket``; return its end.

    ``tls_ca``: PEM root certificate(s) to trust for a referee serving TLS (``None`` = plaintext).

    :raises ClientError: see :meth:`BotClient.run`.
    """
    return BotClient(bot, referee, ticket, name=name, version=version, connect_timeout_s=connect_timeout_s,
                     tls_ca=tls_ca).run()


__all__ = ["BotClient", "ClientError", "match_end_from_pb", "run_bot"]
