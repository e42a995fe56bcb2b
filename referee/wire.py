"""The one proto <-> domain conversion module of protocol ``allfours.v1``.

Shared by the referee server and the Python SDK, so it holds no server code: only pure functions
between the engine's values (``referee.rules``) and the generated messages (``allfours.v1``).

Wire conventions (docs/protocol.md): cards are strings in card notation (``"TH"``); a suit is its
letter; seats, sides and "none" are ``-1``; times are milliseconds.

Every ``*_from_pb`` function raises :class:`WireError` (a ``ValueError``) naming the bad field and
value when a message from the network is malformed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from allfours.v1 import referee_pb2 as pb
from referee.events import EVENT_KINDS, Event
from referee.rules import (
    BEG,
    CANONICAL_DECK,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Beg,
    Call,
    Card,
    GiveOne,
    Observation,
    Pass,
    Phase,
    Play,
    PointEvent,
    Reason,
    RuleSet,
    RunPack,
    Stand,
    Suit,
    Trick,
)
from referee.rules.errors import quote

#: The value a Hello must carry in ``protocol_version``.
PROTOCOL_VERSION = "allfours.v1"


class WireError(ValueError):
    """A malformed protocol message: the message names the field and the offending value."""


# --------------------------------------------------------------------------- small values


def _none(x: int | None) -> int:
    return -1 if x is None else x


def optional(value: int) -> int | None:
    """A seat, side or winner from the wire, where ``-1`` means none: ``None`` for a negative value."""
    return None if value < 0 else value


def enum_name(enum: Any, value: int, prefix: str) -> str:
    """The short name of a protobuf enum value: ``enum_name(pb.Termination, v, "TERMINATION_")`` gives
    ``"no_show"`` for ``TERMINATION_NO_SHOW``. :raises ValueError: for a value the enum does not have."""
    return str(enum.Name(value)).removeprefix(prefix).lower()


#: The most characters of a bot's free text (``Hello.bot_name``, ``bot_version``) the referee keeps.
BOT_TEXT_LIMIT = 64


def printable(text: str) -> str:
    """``text`` without its control and format characters (Unicode categories C*: newlines, terminal
    escapes, bidirectional overrides, which would reorder or colour whatever is shown after them).
    Letters of any script are kept."""
    if text.isprintable():
        return text
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("C"))


def plain_text(text: str, limit: int = BOT_TEXT_LIMIT) -> str:
    """A bot's free text made safe to echo, record and log: :func:`printable`, then cut to ``limit``
    characters with ``...`` when longer. Letters of any script are kept (names)."""
    if text.isprintable() and len(text) <= limit:
        return text
    clean = printable(text[:limit * 4])
    return clean if len(clean) <= limit else clean[:limit - 3] + "..."


def card_to_pb(card: Card) -> str:
    """A card in card notation (``"TH"``)."""
    return str(card)


def card_from_pb(text: str, field: str = "card") -> Card:
    """Parse a card string from the wire.

    :raises WireError: naming ``field`` and the text if it is not a card.
    """
    try:
        return Card.parse(text)
    except (ValueError, AttributeError):
        raise WireError(f"{field}: not a card: {quote(text)} (expected rank+suit such as 'TH')") from None


def cards_to_pb(cards: Iterable[Card]) -> list[str]:
    """Cards in card notation (``["TH", "2C"]``)."""
    return [_TEXT[c] for c in cards]


def cards_from_pb(texts: Iterable[str], field: str = "cards") -> tuple[Card, ...]:
    """Parse a list of card strings. :raises WireError: on the first bad one."""
    return tuple(card_from_pb(t, field) for t in texts)


_KIND_OF: dict[type, pb.ActionKind] = {
    Stand: pb.ACTION_KIND_STAND,
    Beg: pb.ACTION_KIND_BEG,
    GiveOne: pb.ACTION_KIND_GIVE_ONE,
    RunPack: pb.ACTION_KIND_RUN_PACK,
    Play: pb.ACTION_KIND_PLAY,
    Call: pb.ACTION_KIND_CALL,
    Pass: pb.ACTION_KIND_PASS,
}
_SIMPLE_OF: dict[int, Action] = {
    pb.ACTION_KIND_STAND: STAND,
    pb.ACTION_KIND_BEG: BEG,
    pb.ACTION_KIND_GIVE_ONE: GIVE_ONE,
    pb.ACTION_KIND_RUN_PACK: RUN_PACK,
    pb.ACTION_KIND_PASS: PASS,
}


def action_to_pb(action: Action) -> pb.Action:
    """An engine action as an ``allfours.v1.Action`` (kind + card for play and call).

    :raises WireError: if ``action`` is not an engine action.
    """
    kind = _KIND_OF.get(type(action))
    if kind is None:
        raise WireError(f"not an action: {action!r}")
    card = str(action.card) if isinstance(action, Play | Call) else ""
    return pb.Action(kind=kind, card=card)


def action_from_pb(msg: pb.Action) -> Action:
    """An ``allfours.v1.Action`` as an engine action.

    :raises WireError: for ACTION_KIND_UNSPECIFIED or an unknown kind, a play or call whose card is
        missing or not a card, or a card on an action that takes none.
    """
    kind = msg.kind
    action = _ACTION_OF.get((kind, msg.card))  # every well-formed action; the checks below name the fault
    if action is not None:
        return action
    if kind in _SIMPLE_OF:
        if msg.card:
            raise WireError(f"action {pb.ActionKind.Name(kind)} takes no card, got card {quote(msg.card)}")
        return _SIMPLE_OF[kind]
    if kind in (pb.ACTION_KIND_PLAY, pb.ACTION_KIND_CALL):
        if not msg.card:
            raise WireError(f"action {pb.ActionKind.Name(kind)} needs a card")
        card = card_from_pb(msg.card, "action.card")
        return Play(card) if kind == pb.ACTION_KIND_PLAY else Call(card)
    raise WireError(f"action.kind: not an action kind: {kind} (ACTION_KIND_UNSPECIFIED or unknown)")


#: Every well-formed action by (kind, card text): a Decision's action is one dict lookup.
_ACTION_OF: dict[tuple[int, str], Action] = {
    **{(kind, ""): action for kind, action in _SIMPLE_OF.items()},
    **{(pb.ACTION_KIND_PLAY, str(c)): Play(c) for c in CANONICAL_DECK},
    **{(pb.ACTION_KIND_CALL, str(c)): Call(c) for c in CANONICAL_DECK},
}


def actions_to_pb(actions: Iterable[Action]) -> list[pb.Action]:
    """A list of engine actions as messages (same order)."""
    return [action_to_pb(a) for a in actions]


_PHASE_TO: dict[Phase, int] = {
    Phase.DEAL: pb.PHASE_DEAL,
    Phase.BEG: pb.PHASE_BEG,
    Phase.DEALER: pb.PHASE_DEALER,
    Phase.PLAY: pb.PHASE_PLAY,
    Phase.CALL: pb.PHASE_CALL,
    Phase.OVER: pb.PHASE_OVER,
}
_PHASE_FROM = {v: k for k, v in _PHASE_TO.items()}


def phase_to_pb(phase: Phase) -> int:
    """The ``allfours.v1.Phase`` value of an engine phase."""
    return _PHASE_TO[phase]


def phase_from_pb(value: int) -> Phase:
    """The engine phase of an ``allfours.v1.Phase`` value. :raises WireError: for UNSPECIFIED/unknown."""
    try:
        return _PHASE_FROM[value]
    except KeyError:
        raise WireError(f"phase: not a phase: {value}") from None


_REASON_TO: dict[Reason, pb.Reason] = {r: pb.Reason.Value("REASON_" + r.name) for r in Reason}
_REASON_FROM: dict[int, Reason] = {int(v): k for k, v in _REASON_TO.items()}


def reason_to_pb(reason: Reason) -> pb.Reason:
    """The ``allfours.v1.Reason`` value mirroring an engine :class:`Reason` (same name)."""
    return _REASON_TO[reason]


def reason_from_pb(value: int) -> Reason | None:
    """The engine reason of a wire reason, or ``None`` for the protocol-level codes and UNSPECIFIED."""
    return _REASON_FROM.get(value)


# --------------------------------------------------------------------------- rules and time


def _enum_prefix(field: FieldDescriptor) -> str:
    """The common prefix of an enum field's value names: ``DEAL_IN_`` for ``DealIn`` (from its
    ``..._UNSPECIFIED`` value, number 0)."""
    return str(field.enum_type.values_by_number[0].name).removesuffix("UNSPECIFIED")


def rules_to_pb(rules: RuleSet) -> pb.RuleSet:
    """A rule set with every field set: each option goes to the ``allfours.v1.RuleSet`` field of the
    same name; a text option to the enum value of that name (``deal_in="ones"``: ``DEAL_IN_ONES``)."""
    msg = pb.RuleSet()
    for name, value in rules.to_dict().items():
        field = pb.RuleSet.DESCRIPTOR.fields_by_name[name]
        if field.enum_type is not None:
            value = field.enum_type.values_by_name[_enum_prefix(field) + str(value).upper()].number
        setattr(msg, name, value)
    return msg


def rules_from_pb(msg: pb.RuleSet) -> RuleSet:
    """A rule set, each field to the :class:`RuleSet` option of the same name; unset fields (an enum
    at 0, ``..._UNSPECIFIED``) take the rulebook defaults (docs/rules.md).

    :raises WireError: for an unknown enum value or an option out of range.
    """
    opts: dict[str, object] = {}
    for field in msg.DESCRIPTOR.fields:
        if field.enum_type is not None:
            number = getattr(msg, field.name)
            if number == 0:
                continue
            value = field.enum_type.values_by_number.get(number)
            if value is None:
                raise WireError(f"rules.{field.name}: unknown value {number}")
            opts[field.name] = value.name.removeprefix(_enum_prefix(field)).lower()
        elif msg.HasField(field.name):
            opts[field.name] = getattr(msg, field.name)
    try:
        return RuleSet.from_dict(opts)
    except ValueError as e:
        raise WireError(f"rules: {e}") from None


@dataclass(frozen=True, slots=True)
class TimeControl:
    """A match's time control (all durations in ms; docs/protocol.md, Time).

    - ``decision_ms``: hard limit of one decision; past it the default action (first legal) is
      played and a strike counted.
    - ``bank_ms``: total thinking time of a seat for the whole match; every decision's time is
      deducted; an empty bank forfeits the match (``timeout``).
    - ``max_strikes``: timeouts that forfeit the match (``timeout``).
    - ``grace_ms``: time a disconnected seat has to reconnect (else ``disconnect``).
    - ``join_ms``: time after creation every seat has to join (else ``no_show``).
    - ``max_protocol_errors``: malformed messages that forfeit (``protocol_error``).
    - ``max_illegal``: rejected illegal actions that forfeit (``illegal``).

    :raises ValueError: from the constructor when a value is not positive.
    """

    decision_ms: int = 2000
    bank_ms: int = 300_000
    max_strikes: int = 3
    grace_ms: int = 5000
    join_ms: int = 30_000
    max_protocol_errors: int = 3
    max_illegal: int = 20

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"time_control.{name} must be a positive whole number, not {value!r}")

    def to_dict(self) -> dict[str, int]:
        """All fields as a JSON-ready mapping."""
        return asdict(self)


_TC_FIELDS = ("decision_ms", "bank_ms", "max_strikes", "grace_ms", "join_ms", "max_protocol_errors",
              "max_illegal")


def time_control_to_pb(tc: TimeControl) -> pb.TimeControl:
    """A time control with every field set."""
    return pb.TimeControl(**tc.to_dict())


def time_control_from_pb(msg: pb.TimeControl) -> TimeControl:
    """A time control; unset (or 0) fields take the defaults of :class:`TimeControl`.

    :raises WireError: never for a well-typed message (all set values are positive); kept for symmetry.
    """
    opts = {name: getattr(msg, name) for name in _TC_FIELDS if msg.HasField(name) and getattr(msg, name)}
    try:
        return TimeControl(**opts)
    except ValueError as e:
        raise WireError(str(e)) from None


# --------------------------------------------------------------------------- observation


def point_to_pb(p: PointEvent) -> pb.PointEvent:
    """A scored point event."""
    return pb.PointEvent(deal=p.deal, side=p.side, kind=p.kind, value=p.value)


def point_from_pb(msg: pb.PointEvent) -> PointEvent:
    """A scored point event from the wire."""
    return PointEvent(deal=msg.deal, side=msg.side, kind=msg.kind, value=msg.value)


def trick_to_pb(t: Trick) -> pb.Trick:
    """A trick (winner -1 while in progress)."""
    return pb.Trick(leader=t.leader, cards=cards_to_pb(t.cards), winner=_none(t.winner))


def trick_from_pb(msg: pb.Trick) -> Trick:
    """A trick from the wire. :raises WireError: on a bad card."""
    return Trick(leader=msg.leader, cards=cards_from_pb(msg.cards, "trick.cards"), winner=optional(msg.winner))


#: Card notation of each of the 52 cards (cards are interned, so this is an identity lookup).
_TEXT: dict[Card, str] = {c: str(c) for c in CANONICAL_DECK}
_SUIT_TEXT: dict[Suit, str] = {s: s.value for s in Suit}
_EVENT_KIND: dict[str, pb.EventKind] = {k: pb.EventKind.Value("EVENT_KIND_" + k.upper()) for k in EVENT_KINDS}


# --- Observations from serialized fragments.
#
# Protobuf defines the concatenation of two serialized messages as their merge: a scalar field
# takes the last value, a repeated field gets the elements of both, in order ("Last One Wins" in
# the protobuf encoding guide). So an observation is built as the concatenation of one-field
# Observations serialized by protobuf itself, one fragment per scalar value and one per element of
# each repeated field, parsed in a single C call (``MergeFromString``) instead of ~20 attribute
# sets and message copies from Python: about half the time, and the same message (tests/test_wire.py
# compares it with the field-by-field build). Fragments are cached by value; every domain is small
# (seats, phases, cards, actions, scores) except tricks and points, which are in bounded LRU caches.


class _Fragments(dict[Any, bytes]):
    """Serialized fragments by value, each made on first use by ``make(value)``."""

    def __init__(self, make: Callable[[Any], bytes]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: Any) -> bytes:
        blob = self[key] = self._make(key)
        return blob


def _fragment(**field: Any) -> bytes:
    """An Observation holding only ``field``, serialized."""
    blob: bytes = pb.Observation(**field).SerializeToString()
    return blob


_F_SEAT = _Fragments(lambda v: _fragment(seat=v))
_F_RULES = _Fragments(lambda r: _fragment(rules=rules_to_pb(r)))
_F_PHASE = _Fragments(lambda p: _fragment(phase=_PHASE_TO[p]))
_F_TO_ACT = _Fragments(lambda v: _fragment(to_act=_none(v)))
_F_DEALER = _Fragments(lambda v: _fragment(dealer=v))
_F_DEAL_NUMBER = _Fragments(lambda v: _fragment(deal_number=v))
_F_SCORES = _Fragments(lambda v: _fragment(scores=v))
_F_WINNER = _Fragments(lambda v: _fragment(winner=_none(v)))
_F_TRUMP = _Fragments(lambda s: b"" if s is None else _fragment(trump=_SUIT_TEXT[s]))
_F_BEGGED = _Fragments(lambda v: _fragment(begged=v))
_F_HAND_SIZES = _Fragments(lambda v: _fragment(hand_sizes=v))
_F_CALLED = _Fragments(lambda c: b"" if c is None else _fragment(called=_TEXT[c]))
_F_CALL_FOR = _Fragments(lambda v: _fragment(call_for=_none(v)))
_F_TRICK_LEADER = _Fragments(lambda v: _fragment(trick_leader=v))
_F_KICK = _Fragments(lambda c: _fragment(kicks=[_TEXT[c]]))
_F_HAND = _Fragments(lambda c: _fragment(hand=[_TEXT[c]]))
_F_EXPOSED = _Fragments(lambda e: _fragment(exposed=[pb.ExposedCard(seat=e[0], card=_TEXT[e[1]])]))
_F_TRICK_CARD = _Fragments(lambda c: _fragment(trick=[_TEXT[c]]))
_F_LEGAL = _Fragments(lambda a: _fragment(legal_actions=[action_to_pb(a)]))
_f_trick = lru_cache(maxsize=4096)(lambda t: _fragment(tricks=[trick_to_pb(t)]))
_f_point = lru_cache(maxsize=4096)(lambda p: _fragment(points=[point_to_pb(p)]))
#: DecisionRequest.legal_actions fragments, by action.
_F_REQUEST_LEGAL = _Fragments(lambda a: pb.DecisionRequest(legal_actions=[action_to_pb(a)]).SerializeToString())


def observation_to_pb(obs: Observation, into: pb.Observation | None = None) -> pb.Observation:
    """A seat's observation as a message (every field of :class:`referee.rules.Observation`).

    :param into: an empty message to fill in place (e.g. ``request.observation``: no copy), or
        ``None`` for a new one. Returns the filled message.
    """
    ob = pb.Observation() if into is None else into
    parts = [_F_SEAT[obs.seat], _F_RULES[obs.rules], _F_PHASE[obs.phase], _F_TO_ACT[obs.to_act],
             _F_DEALER[obs.dealer], _F_DEAL_NUMBER[obs.deal_number], _F_SCORES[obs.scores],
             _F_WINNER[obs.winner], _F_TRUMP[obs.trump], _F_BEGGED[obs.begged], _F_HAND_SIZES[obs.hand_sizes],
             _F_CALLED[obs.called], _F_CALL_FOR[obs.call_for], _F_TRICK_LEADER[obs.trick_leader]]
    parts += map(_F_KICK.__getitem__, obs.kicks)
    parts += map(_F_HAND.__getitem__, obs.hand)
    parts += map(_F_EXPOSED.__getitem__, obs.exposed)
    parts += map(_F_TRICK_CARD.__getitem__, obs.trick)
    parts += map(_f_trick, obs.tricks)
    parts += map(_f_point, obs.points)
    parts += map(_F_LEGAL.__getitem__, obs.legal)
    ob.MergeFromString(b"".join(parts))
    return ob


def decision_request_to_pb(seq: int, game: int, obs: Observation, into: pb.DecisionRequest) -> pb.DecisionRequest:
    """Fill the empty DecisionRequest ``into`` for the seat of ``obs``: ``seq``, ``game`` (1-based),
    the observation and its legal actions. The caller sets the times and the events. Returns ``into``."""
    into.seq = seq
    into.game = game
    observation_to_pb(obs, into=into.observation)
    into.MergeFromString(b"".join(map(_F_REQUEST_LEGAL.__getitem__, obs.legal)))
    return into


def observation_from_pb(msg: pb.Observation) -> Observation:
    """An observation message as :class:`referee.rules.Observation` (for bots and the SDK).

    :raises WireError: on a bad card, suit, phase, rule set or action.
    """
    if len(msg.scores) != 2:
        raise WireError(f"observation.scores: expected 2 entries (one per side), got {list(msg.scores)}")
    trump: Suit | None = None
    if msg.trump:
        try:
            trump = Suit.parse(msg.trump)
        except ValueError:
            raise WireError(f"observation.trump: not a suit: {quote(msg.trump)}") from None
    return Observation(
        seat=msg.seat,
        rules=rules_from_pb(msg.rules),
        phase=phase_from_pb(msg.phase),
        to_act=optional(msg.to_act),
        dealer=msg.dealer,
        deal_number=msg.deal_number,
        scores=(msg.scores[0], msg.scores[1]),
        winner=optional(msg.winner),
        trump=trump,
        kicks=cards_from_pb(msg.kicks, "observation.kicks"),
        begged=msg.begged,
        hand=cards_from_pb(msg.hand, "observation.hand"),
        hand_sizes=tuple(msg.hand_sizes),
        exposed=tuple((e.seat, card_from_pb(e.card, "observation.exposed")) for e in msg.exposed),
        called=card_from_pb(msg.called, "observation.called") if msg.called else None,
        call_for=optional(msg.call_for),
        trick_leader=msg.trick_leader,
        trick=cards_from_pb(msg.trick, "observation.trick"),
        tricks=tuple(trick_from_pb(t) for t in msg.tricks),
        points=tuple(point_from_pb(p) for p in msg.points),
        legal=tuple(action_from_pb(a) for a in msg.legal_actions),
    )


def _event_template(kind: str) -> pb.Event:
    """The fields every event of ``kind`` starts with: its kind and ``-1`` for each seat/side not set."""
    return pb.Event(kind=_EVENT_KIND[kind], seat=-1, side=-1, winner=-1, dealer=-1, target_seat=-1)


_EVENT_TEMPLATES: dict[str, pb.Event] = {k: _event_template(k) for k in EVENT_KINDS}


def event_to_pb(ev: Event) -> pb.Event:
    """A public :class:`referee.events.Event` as ``allfours.v1.Event`` (``-1`` for every seat/side not set)."""
    m = pb.Event()
    m.CopyFrom(_EVENT_TEMPLATES[ev.kind])  # one C copy for the kind and the -1s
    m.game = ev.game
    m.deal = ev.deal
    # The other fields only when set (else the template's value): fewer message operations per event.
    if ev.seat is not None:
        m.seat = ev.seat
    if ev.side is not None:
        m.side = ev.side
    if ev.winner is not None:
        m.winner = ev.winner
    if ev.dealer is not None:
        m.dealer = ev.dealer
    if ev.target_seat is not None:
        m.target_seat = ev.target_seat
    if ev.card is not None:
        m.card = _TEXT[ev.card]
    if ev.value:
        m.value = ev.value
    if ev.points_kind:
        m.points_kind = ev.points_kind
    if ev.scores:
        m.scores.extend(ev.scores)
    if ev.cards:
        m.cards.extend(cards_to_pb(ev.cards))
    if ev.ran_dry:
        m.ran_dry = True
    if ev.forfeited:
        m.forfeited = True
    return m


def event_from_pb(msg: pb.Event) -> Event:
    """An ``allfours.v1.Event`` as a :class:`referee.events.Event` (cards parsed, ``-1`` as ``None``).

    :raises WireError: on an unknown kind or a bad card.
    """
    try:
        kind = enum_name(pb.EventKind, msg.kind, "EVENT_KIND_")
    except ValueError:
        raise WireError(f"event.kind: unknown event kind {msg.kind}") from None
    if kind not in EVENT_KINDS:
        raise WireError(f"event.kind: not an event kind: {kind}")
    return Event(kind=kind, game=msg.game, deal=msg.deal, seat=optional(msg.seat),
                 card=card_from_pb(msg.card, "event.card") if msg.card else None, side=optional(msg.side),
                 value=msg.value, points_kind=msg.points_kind, scores=tuple(msg.scores), winner=optional(msg.winner),
                 dealer=optional(msg.dealer), cards=cards_from_pb(msg.cards, "event.cards"), ran_dry=msg.ran_dry,
                 forfeited=msg.forfeited, target_seat=optional(msg.target_seat))
