"""Public events of a game, derived from engine steps: one place for the referee and local play.

Pure (no grpc, no I/O): :func:`step_events` turns one engine step (``before`` -> ``after`` by an
action, or a deal) into the public :class:`Event` list, in the order the referee sends them
(docs/protocol.md, Events). The referee converts each to ``allfours.v1.Event`` with
``referee.wire.event_to_pb``; the SDK's local mode hands them to bots as they are, so a bot sees the
same events in both modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.rules import (
    BEG,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Beg,
    Call,
    Card,
    GiveOne,
    Pass,
    Phase,
    Play,
    PointEvent,
    RunPack,
    Stand,
    State,
)
from referee.rules.values import maker

#: Event kinds (``allfours.v1.EventKind`` names, lower case, without the prefix).
EVENT_KINDS = (
    "game_started", "deal_started", "kick", "stood", "begged", "gave_one", "ran_pack", "card_played",
    "card_exposed", "called", "passed", "trick_won", "points_scored", "deal_ended", "game_ended",
    "timeout", "seat_disconnected", "seat_connected",
)


#: The event kind that reports each action without a card, and back.
_ACTION_EVENT: dict[type, str] = {Stand: "stood", Beg: "begged", GiveOne: "gave_one", RunPack: "ran_pack",
                                  Pass: "passed"}
_ACTION_OF_KIND: dict[str, Action] = {"stood": STAND, "begged": BEG, "gave_one": GIVE_ONE, "ran_pack": RUN_PACK,
                                      "passed": PASS}


@dataclass(frozen=True, slots=True)
class Event:
    """A public table event, given to a bot's ``on_event`` hook (``sdk.Bot``): the protocol's ``allfours.v1.Event`` with
    engine types (cards as :class:`Card`, "none" as ``None``). Local mode sends the same events.

    - ``kind``: one of :data:`EVENT_KINDS`, e.g. ``"card_played"`` (``seat`` played ``card``),
      ``"trick_won"`` (``seat`` won ``cards``), ``"points_scored"`` (``side`` scored ``value`` for
      ``points_kind``; ``scores`` are the new totals), ``"kick"`` (``card`` turned up),
      ``"deal_ended"`` (``ran_dry``), ``"game_ended"`` (``winner`` side, ``forfeited``),
      ``"called"`` (``seat`` called ``card`` of ``target_seat``), ``"timeout"`` (``value`` strikes).
    - ``game`` and ``deal``: 1-based numbers (``deal`` is 0 before the game's first deal).
    - ``dealer``: for ``game_started``, ``deal_started`` and ``kick``.

    Everything an event says is also in the next decision's observation; bots that keep no
    memory of their own can ignore events.
    """

    kind: str
    game: int
    deal: int = 0
    seat: int | None = None
    card: Card | None = None
    side: int | None = None
    value: int = 0
    points_kind: str = ""
    scores: tuple[int, ...] = ()
    winner: int | None = None
    dealer: int | None = None
    cards: tuple[Card, ...] = ()
    ran_dry: bool = False
    forfeited: bool = False
    target_seat: int | None = None

    @property
    def action(self) -> Action | None:
        """The action this event reports (a stand, beg, give, run, card play, call or pass), if any."""
        if self.kind in ("card_played", "card_exposed") and self.card is not None:
            return Play(self.card)
        if self.kind == "called" and self.card is not None:
            return Call(self.card)
        return _ACTION_OF_KIND.get(self.kind)


#: ``Phase.DEAL`` is a lookup through ``EnumType.__getattr__`` (see referee.rules.engine); a global is cheap.
_PH_DEAL, _PH_OVER = Phase.DEAL, Phase.OVER
#: ``Event(...)``, built without the frozen ``__init__`` (referee.rules.values; mypy sees ``Event``).
if TYPE_CHECKING:
    _new_event = Event
else:
    _new_event = maker(Event)


def _points_event(game: int, deal: int, p: PointEvent, scores: tuple[int, int]) -> Event:
    """``points_scored`` for ``p``, with the running ``scores``."""
    return _new_event(kind="points_scored", game=game, deal=deal, side=p.side, value=p.value, points_kind=p.kind,
                      scores=scores)


def step_events(game: int, before: State, after: State, action: Action | None, seat: int | None) -> list[Event]:
    """The public events of one step ``before`` -> ``after`` (``action`` by ``seat``, or a deal when
    ``action`` is ``None``), in the order the referee sends them (docs/protocol.md): the action; a new
    deal; each new kick followed by its points; each completed trick; the other points, with running
    totals; the end of the deal.
    """
    deals = after.deals
    n = len(deals)
    out: list[Event] = []
    if action is not None:
        if isinstance(action, Play):
            if seat == before.to_act:
                kind = "card_played"
            elif after is before:
                return []  # already exposed: nothing happened
            else:
                kind = "card_exposed"
            out.append(_new_event(kind=kind, game=game, deal=n, seat=seat, card=action.card))
        elif isinstance(action, Call):
            out.append(_new_event(kind="called", game=game, deal=n, seat=seat, card=action.card,
                                  target_seat=before.call_for))
        else:
            out.append(_new_event(kind=_ACTION_EVENT[type(action)], game=game, deal=n, seat=seat))
    before_deals = before.deals
    new_deal = n != len(before_deals)
    if new_deal:
        out.append(_new_event(kind="deal_started", game=game, deal=n, dealer=after.dealer))
    rec = deals[-1] if deals else None
    old = None if new_deal or not before_deals else before_deals[-1]
    points = after.points
    k = len(before.points)  # the next new point event
    s0, s1 = before.scores
    if rec is not None and rec is not old:  # else no new kick or trick
        for card in rec.kicks[len(old.kicks) if old else 0:]:
            out.append(_new_event(kind="kick", game=game, deal=n, card=card, dealer=rec.dealer))
            if k < len(points) and points[k].kind == "kick":
                p = points[k]
                k += 1
                if p.side == 0:
                    s0 += p.value
                else:
                    s1 += p.value
                out.append(_points_event(game, n, p, (s0, s1)))
        for t in rec.tricks[len(old.tricks) if old else 0:]:
            out.append(_new_event(kind="trick_won", game=game, deal=n, seat=t.winner, cards=t.cards))
    for p in points[k:]:
        if p.side == 0:
            s0 += p.value
        else:
            s1 += p.value
        out.append(_points_event(game, n, p, (s0, s1)))
    phase = after.phase
    ended = (phase is _PH_DEAL and not new_deal) or (phase is _PH_OVER and before.phase is not _PH_OVER)
    if ended and rec is not None:
        out.append(_new_event(kind="deal_ended", game=game, deal=n, scores=after.scores, ran_dry=rec.ran_dry))
    return out
