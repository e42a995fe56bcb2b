"""The pure All Fours engine: game state, legal actions, applying an action, observation.

Everything here follows RULES.md section by section; each function names the section it implements.
The module has no I/O, clock, logging or randomness: the deck order of every deal is an *input*
(:func:`deal`), so any game replays exactly from its decks and actions.

Life of a game::

    state = new_game(RuleSet(), dealer=0)          # phase DEAL: waiting for a deck order
    state = deal(state, deck)                      # 6 cards each, the kick; phase BEG (or OVER)
    while state.phase is not Phase.OVER:
        if state.phase is Phase.DEAL:               # next deal, or a redeal after the pack ran dry
            state = deal(state, next_deck)
        else:
            state = apply(state, choose(legal_actions(state)))

``apply`` validates first and raises :class:`RuleError` without changing anything; states are
frozen values, so an old state stays valid after ``apply``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from operator import itemgetter
from typing import Any

from referee.rules.actions import (
    BEG,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Beg,
    Call,
    GiveOne,
    Pass,
    Play,
    RunPack,
    Stand,
)
from referee.rules.cards import _GAME_POINTS, CANONICAL_DECK, Card, Rank, Suit, format_cards
from referee.rules.errors import Reason, RuleError
from referee.rules.ruleset import RuleSet
from referee.rules.seats import opponents_in_order, side_of

#: Points a kicked card scores for the dealer's side (RULES.md, The deal 2).
KICK_POINTS: dict[Rank, int] = {Rank.ACE: 1, Rank.SIX: 2, Rank.JACK: 3}
#: Cards dealt to each player at the start of a deal, and on each run of the pack.
HAND_SIZE = 6
RUN_SIZE = 3


class Phase(Enum):
    """What the game waits for. The value is the replay/wire name."""

    DEAL = "deal"  #: a deck order (chance): :func:`deal`
    BEG = "beg"  #: the player to the dealer's right stands or begs
    DEALER = "dealer"  #: the dealer gives one or runs the pack
    PLAY = "play"  #: the seat to act plays a card
    CALL = "call"  #: an opponent calls an exposed card or passes
    OVER = "over"  #: a side reached the target


# Enum members as module globals for the code below: ``Phase.PLAY`` finds the member through
# ``EnumType.__getattr__``, about 1,000 machine instructions in CPython 3.11; a global, a few dozen.
_PH_DEAL, _PH_BEG, _PH_DEALER, _PH_PLAY, _PH_CALL, _PH_OVER = (
    Phase.DEAL, Phase.BEG, Phase.DEALER, Phase.PLAY, Phase.CALL, Phase.OVER)
_JACK, _TWO = Rank.JACK, Rank.TWO


@dataclass(frozen=True, slots=True)
class PointEvent:
    """Points scored: ``value`` points to ``side`` in deal number ``deal`` (1-based), for ``kind``.

    ``kind`` is one of ``kick one high low jack hang_jack game`` (RULES.md, The deal and Scoring).
    """

    deal: int
    side: int
    kind: str
    value: int


@dataclass(frozen=True, slots=True)
class Trick:
    """A trick: ``leader`` seat, ``cards`` in play order, and the ``winner`` seat once complete."""

    leader: int
    cards: tuple[Card, ...]
    winner: int | None = None


@dataclass(frozen=True, slots=True)
class DealRecord:
    """What happened in one deal (one deck): dealer, trump, kicks, hands as dealt, tricks.

    ``trump`` is the suit of the last kick once the trump is settled or while it stands; ``None``
    for a deal whose pack ran dry (RULES.md, The deal 4). ``hands[s]`` are all cards dealt to seat
    ``s`` in the order dealt (including cards from running the pack). Hidden from observations.
    """

    dealer: int
    trump: Suit | None
    kicks: tuple[Card, ...]
    hands: tuple[tuple[Card, ...], ...]
    tricks: tuple[Trick, ...] = ()
    begged: bool = False
    ran_dry: bool = False


@dataclass(frozen=True, slots=True)
class State:
    """The complete, frozen state of one game. Use the module functions, not the fields' internals.

    Public fields a driver may read: ``rules``, ``phase``, ``to_act`` (seat to decide, ``None`` in
    DEAL and OVER), ``dealer``, ``scores`` (points per side), ``winner`` (side or ``None``),
    ``points`` (every :class:`PointEvent` in order), ``deals`` (one :class:`DealRecord` per deck,
    the current one last). ``deck`` and ``hands`` hold hidden cards: never send them to a seat;
    use :func:`observe`.
    """

    rules: RuleSet
    phase: Phase
    dealer: int
    scores: tuple[int, int]
    winner: int | None = None
    to_act: int | None = None
    deck: tuple[Card, ...] = ()
    pos: int = 0
    hands: tuple[tuple[Card, ...], ...] = ()
    trump: Suit | None = None
    trick_leader: int = 0
    trick: tuple[Card, ...] = ()
    exposed: tuple[tuple[Card, ...], ...] = ()
    called: Card | None = None
    call_for: int | None = None
    call_passed: tuple[int, ...] = ()
    call_settled: bool = False
    game_points: tuple[int, int] = (0, 0)
    jack_winner: int | None = None
    points: tuple[PointEvent, ...] = ()
    deals: tuple[DealRecord, ...] = ()

    @property
    def players(self) -> int:
        """Number of players (2 or 4)."""
        return self.rules.players

    @property
    def deal_number(self) -> int:
        """1-based number of the current deal (0 before the first deck is dealt)."""
        return len(self.deals)

    @property
    def current_deal(self) -> DealRecord | None:
        """The record of the current (last) deal, or ``None`` before the first."""
        return self.deals[-1] if self.deals else None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one seat may see (RULES.md: hidden hands). Safe to send to that seat.

    - ``seat``: whose view; ``rules``; ``phase``; ``to_act`` (seat or ``None``); ``dealer``;
      ``deal_number`` (1-based); ``scores`` per side (points); ``winner`` (side or ``None``).
    - ``trump``: suit or ``None``; ``kicks``: kicked cards of this deal in order; ``begged``.
    - ``hand``: this seat's cards now; ``hand_sizes``: cards held per seat.
    - ``exposed``: ``(seat, card)`` pairs face up on the table (RULES.md, the call);
      ``called``: the card the seat to act must play, if an opponent called one;
      ``call_for``: in the CALL phase, the seat whose exposed card may be called.
    - ``trick_leader`` and ``trick``: the trick in progress; ``tricks``: this deal's completed tricks.
    - ``points``: the points scored in the current deal so far, in order (between deals: those of
      the deal just counted); earlier deals are summed up in ``scores``.
    - ``legal``: this seat's legal actions if it is to act, else empty.
    """

    seat: int
    rules: RuleSet
    phase: Phase
    to_act: int | None
    dealer: int
    deal_number: int
    scores: tuple[int, int]
    winner: int | None
    trump: Suit | None
    kicks: tuple[Card, ...]
    begged: bool
    hand: tuple[Card, ...]
    hand_sizes: tuple[int, ...]
    exposed: tuple[tuple[int, Card], ...]
    called: Card | None
    call_for: int | None
    trick_leader: int
    trick: tuple[Card, ...]
    tricks: tuple[Trick, ...]
    points: tuple[PointEvent, ...]
    legal: tuple[Action, ...]


_STATE_FIELDS = tuple(State.__dataclass_fields__)
_DEAL_FIELDS = tuple(DealRecord.__dataclass_fields__)


def _draft_class(cls: type) -> type:
    """A writable class with exactly the slots of the frozen slotted dataclass ``cls``.

    The hot path builds a new value in a draft with plain attribute stores (a frozen dataclass's
    ``__init__`` calls ``object.__setattr__`` once per field, several times dearer), then assigns
    ``draft.__class__ = cls``: CPython allows it because the memory layouts are the same (it raises
    ``TypeError`` otherwise, so a layout change cannot pass silently). The result is an ordinary
    instance of ``cls``: equal, hashed and printed as if built by ``cls(...)``.
    """
    return type(f"_{cls.__name__}Draft", (), {"__slots__": cls.__dict__["__slots__"], "__module__": __name__})


_new = object.__new__
_StateDraft = _draft_class(State)
_DealDraft = _draft_class(DealRecord)
_ObservationDraft = _draft_class(Observation)
_TrickDraft = _draft_class(Trick)
_PointDraft = _draft_class(PointEvent)

# _evolve, _evolve_deal, new_game, deal and observe name every field: a field added to a class must be added there too.
if _STATE_FIELDS != ("rules", "phase", "dealer", "scores", "winner", "to_act", "deck", "pos", "hands", "trump",
                     "trick_leader", "trick", "exposed", "called", "call_for", "call_passed", "call_settled",
                     "game_points", "jack_winner", "points", "deals"):  # pragma: no cover
    raise ImportError("State's fields changed: update _evolve")
if _DEAL_FIELDS != ("dealer", "trump", "kicks", "hands", "tricks", "begged", "ran_dry"):  # pragma: no cover
    raise ImportError("DealRecord's fields changed: update _evolve_deal")
if tuple(Trick.__dataclass_fields__) != ("leader", "cards", "winner"):  # pragma: no cover
    raise ImportError("Trick's fields changed: update _play")
if tuple(PointEvent.__dataclass_fields__) != ("deal", "side", "kind", "value"):  # pragma: no cover
    raise ImportError("PointEvent's fields changed: update _point")
if tuple(Observation.__dataclass_fields__) != (
        "seat", "rules", "phase", "to_act", "dealer", "deal_number", "scores", "winner", "trump", "kicks",
        "begged", "hand", "hand_sizes", "exposed", "called", "call_for", "trick_leader", "trick", "tricks",
        "points", "legal"):  # pragma: no cover
    raise ImportError("Observation's fields changed: update observe")


#: A State being built (an instance of ``_StateDraft``): attributes are assigned, then :func:`_done`.
_Draft = Any


def _evolve(s: State, **changes: Any) -> State:
    """``dataclasses.replace`` for State, built in a draft (see :func:`_draft_class`)."""
    new = _draft(s)
    for name, value in changes.items():
        setattr(new, name, value)
    return _done(new)


def _done(new: _Draft) -> State:
    """The draft, now a State."""
    new.__class__ = State
    out: State = new
    return out


def _draft(s: State) -> _Draft:
    """A draft holding all fields of ``s``: assign the changes, then :func:`_done` (the hot path)."""
    new: _Draft = _new(_StateDraft)
    new.rules = s.rules
    new.phase = s.phase
    new.dealer = s.dealer
    new.scores = s.scores
    new.winner = s.winner
    new.to_act = s.to_act
    new.deck = s.deck
    new.pos = s.pos
    new.hands = s.hands
    new.trump = s.trump
    new.trick_leader = s.trick_leader
    new.trick = s.trick
    new.exposed = s.exposed
    new.called = s.called
    new.call_for = s.call_for
    new.call_passed = s.call_passed
    new.call_settled = s.call_settled
    new.game_points = s.game_points
    new.jack_winner = s.jack_winner
    new.points = s.points
    new.deals = s.deals
    return new


def _evolve_deal(d: DealRecord, **changes: Any) -> DealRecord:
    """``dataclasses.replace`` for DealRecord, likewise."""
    new = _deal_draft(d)
    for name, value in changes.items():
        setattr(new, name, value)
    new.__class__ = DealRecord
    out: DealRecord = new
    return out


def _deal_draft(d: DealRecord) -> Any:
    """A draft holding all fields of ``d``: assign the changes, then set ``__class__ = DealRecord``."""
    new: Any = _new(_DealDraft)
    new.dealer = d.dealer
    new.trump = d.trump
    new.kicks = d.kicks
    new.hands = d.hands
    new.tricks = d.tricks
    new.begged = d.begged
    new.ran_dry = d.ran_dry
    return new


# --------------------------------------------------------------------------- starting a game


def new_game(rules: RuleSet, dealer: int, scores: tuple[int, int] = (0, 0)) -> State:
    """A game waiting for its first deck (phase DEAL).

    :param rules: the rule options; :param dealer: the first dealer's seat (see :func:`cut_for_dealer`);
    :param scores: starting points per side (for replays that start mid-game); one side at or above
        the target gives a game already won (phase OVER).
    :raises ValueError: for a seat that does not exist, negative scores, or both sides at or above the
        target (a game cannot have two winners).
    """
    if not 0 <= dealer < rules.players:
        raise ValueError(f"dealer seat {dealer} does not exist at a table of {rules.players}")
    if len(scores) != 2 or any(not isinstance(x, int) or x < 0 for x in scores):
        raise ValueError(f"scores must be two non-negative whole numbers, not {scores!r}")
    s = (scores[0], scores[1])
    if s[0] >= rules.target and s[1] >= rules.target:
        raise ValueError(f"scores {list(s)}: both sides are at or above the target {rules.target} "
                         f"(a game has one winner)")
    target = rules.target
    winner = 0 if s[0] >= target else 1 if s[1] >= target else None
    # State(rules=rules, phase=..., dealer=dealer, scores=s, winner=winner), built in a draft:
    new: _Draft = _new(_StateDraft)
    new.rules = rules
    new.phase = _PH_DEAL if winner is None else _PH_OVER
    new.dealer = dealer
    new.scores = s
    new.winner = winner
    new.to_act = None
    new.deck = ()
    new.pos = 0
    new.hands = ()
    new.trump = None
    new.trick_leader = 0
    new.trick = ()
    new.exposed = ()
    new.called = None
    new.call_for = None
    new.call_passed = ()
    new.call_settled = False
    new.game_points = (0, 0)
    new.jack_winner = None
    new.points = ()
    new.deals = ()
    return _done(new)


def cut_for_dealer(deck: Sequence[Card], players: int) -> int:
    """The first dealer by the cut (RULES.md, Table: highest card deals, ace high, ties cut again).

    Seats ``0..players-1`` take cards from the top of ``deck`` in seat order; the tied highest seats
    take the next cards, again in seat order, until one is highest.

    :returns: the dealer's seat.
    :raises ValueError: if the deck runs out before the tie is broken.
    """
    contenders = list(range(players))
    i = 0
    while True:
        if i + len(contenders) > len(deck):
            raise ValueError("the cut ran out of cards before the tie was broken")
        drawn = {s: deck[i + k] for k, s in enumerate(contenders)}
        i += len(contenders)
        best = max(c.rank for c in drawn.values())
        contenders = [s for s in contenders if drawn[s].rank == best]
        if len(contenders) == 1:
            return contenders[0]


def deal(state: State, deck: Sequence[Card]) -> State:
    """Deal a new deck (RULES.md, The deal 1-2): 6 cards each from the dealer's right, then the kick.

    :param deck: 52 distinct cards, top first (see ``referee.dealing`` for the shuffle).
    :returns: the state in phase BEG, or OVER if the kick won the game.
    :raises RuleError: ``wrong_phase`` unless the state is waiting for a deck (phase DEAL).
    :raises ValueError: if ``deck`` is not 52 distinct cards.
    """
    if state.phase is not _PH_DEAL:
        raise RuleError(Reason.WRONG_PHASE, f"cannot deal a deck in phase {state.phase.value}")
    deck_t = tuple(deck)
    if len(deck_t) != 52 or len(set(deck_t)) != 52:
        raise ValueError(f"a deck must be 52 distinct cards, got {len(deck_t)} ({len(set(deck_t))} distinct)")
    rules = state.rules
    n = rules.players
    dealer = state.dealer
    hands, pos = _deal_round(((),) * n, deck_t, 0, dealer, n, HAND_SIZE, rules.deal_in)
    kick = deck_t[pos]
    trump = kick.suit
    record: Any = _new(_DealDraft)  # DealRecord(dealer=dealer, trump=trump, kicks=(kick,), hands=hands)
    record.dealer = dealer
    record.trump = trump
    record.kicks = (kick,)
    record.hands = hands
    record.tricks = ()
    record.begged = False
    record.ran_dry = False
    record.__class__ = DealRecord
    first = (dealer + 1) % n  # next_seat
    new = _draft(state)
    new.phase = _PH_BEG
    new.to_act = first
    new.deck = deck_t
    new.pos = pos + 1
    new.hands = hands
    new.trump = trump
    new.trick_leader = first
    new.trick = ()
    new.exposed = ((),) * n
    new.called = None
    new.call_for = None
    new.call_passed = ()
    new.call_settled = False
    new.game_points = (0, 0)
    new.jack_winner = None
    new.deals = deals = (*state.deals, record)
    value = KICK_POINTS.get(kick.rank)
    if value:
        _score(new, dealer % 2, "kick", value, len(deals))  # side_of(dealer)
    return _done(new)


def _deal_round(hands: tuple[tuple[Card, ...], ...], deck: tuple[Card, ...], pos: int, dealer: int,
                n: int, each: int, deal_in: str) -> tuple[tuple[tuple[Card, ...], ...], int]:
    """Give ``each`` cards to every seat from the dealer's right, in ones or packets of three."""
    key = (deal_in, n, each, dealer, pos)
    plan = _ROUND_PLANS.get(key)
    if plan is None:
        plan = _ROUND_PLANS[key] = _round_plan(deal_in, n, each, dealer, pos)
    end, takes = plan
    new = list(hands)
    for seat, take in takes:
        new[seat] = hands[seat] + take(deck)
    return tuple(new), end


#: A plan per (deal_in, players, each, dealer, pos) for :func:`_deal_round`: the deck position after the
#: round, and per seat a function picking its cards out of the deck in C (a few hundred plans at most).
_ROUND_PLANS: dict[tuple[str, int, int, int, int], tuple[int, tuple[tuple[int, Callable[[Any], Any]], ...]]] = {}


def _round_plan(deal_in: str, n: int, each: int, dealer: int,
                pos: int) -> tuple[int, tuple[tuple[int, Callable[[Any], Any]], ...]]:
    """Seat ``dealer + 1 + j`` gets the j-th card (or packet of three) of each round of the table."""
    packet = 3 if deal_in == "threes" else 1
    picks: list[list[int]] = [[] for _ in range(n)]
    for _ in range(each // packet):
        for j in range(n):
            picks[j].extend(range(pos, pos + packet))
            pos += packet
    takes = []
    for j, idx in enumerate(picks):
        takes.append(((dealer + 1 + j) % n, _picker(idx)))
    return pos, tuple(takes)


def _picker(idx: list[int]) -> Callable[[Any], Any]:
    """A function of a deck giving the tuple of its cards at positions ``idx``."""
    if len(idx) > 1:
        return itemgetter(*idx)  # of two or more positions: the tuple of those items
    return lambda deck: tuple(deck[i] for i in idx)


#: PointEvents already made, shared: a frozen value equal to (and hashed and printed like) a new one,
#: as the cards and actions are. A few thousand at most: kept for deal numbers up to 256 only.
_POINT_MEMO: dict[tuple[int, int, str, int], PointEvent] = {}


def _point(deal: int, side: int, kind: str, value: int) -> PointEvent:
    """``PointEvent(deal, side, kind, value)``: a shared one, or built in a draft (see :func:`_draft_class`)."""
    key = (deal, side, kind, value)
    out = _POINT_MEMO.get(key)
    if out is None:
        ev: Any = _new(_PointDraft)
        ev.deal = deal
        ev.side = side
        ev.kind = kind
        ev.value = value
        ev.__class__ = PointEvent
        out = ev
        if deal <= 256:
            _POINT_MEMO[key] = ev
    return out


def _score(new: _Draft, side: int, kind: str, value: int, deal: int) -> bool:
    """Score ``value`` to ``side`` in the draft ``new`` (deal number ``deal``); the game ends at once
    when the side reaches the target: returns whether it did."""
    s0, s1 = new.scores
    if side == 0:
        s0 += value
        total = s0
    else:
        s1 += value
        total = s1
    new.scores = (s0, s1)
    new.points = (*new.points, _point(deal, side, kind, value))
    if total >= new.rules.target:
        _game_over(new, side)
        return True
    return False


def _game_over(new: _Draft, side: int) -> None:
    """``side`` reached the target: the game is over (RULES.md, The deal 5)."""
    new.phase = _PH_OVER
    new.winner = side
    new.to_act = None
    new.call_for = None
    new.called = None


def _add_points(s: State, side: int, kind: str, value: int) -> State:
    """Score ``value`` to ``side``; the game ends at once when the side reaches the target."""
    new = _draft(s)
    _score(new, side, kind, value, len(s.deals))
    return _done(new)


def _score_kick(s: State, kick: Card) -> State:
    """A kicked Ace, Six or Jack scores 1, 2 or 3 for the dealer's side (RULES.md, The deal 2)."""
    value = KICK_POINTS.get(kick.rank)
    if value:
        s = _add_points(s, side_of(s.dealer), "kick", value)
    return s


def _deals_with(s: State, **changes: Any) -> tuple[DealRecord, ...]:
    """``s.deals`` with ``changes`` made to the current (last) deal's record."""
    return (*s.deals[:-1], _evolve_deal(s.deals[-1], **changes))


# --------------------------------------------------------------------------- legality


def legal_cards(hand: Sequence[Card], trick: Sequence[Card], trump: Suit | None, rules: RuleSet) -> tuple[Card, ...]:
    """The cards of ``hand`` that may be played to ``trick`` (RULES.md, Play), in hand order.

    Leading: any card. Trump led: a trump if able. Another suit led: follow suit or trump; a player
    void in the led suit who holds a trump must trump (unless ``void_may_discard``); only a player
    with neither may play any card. With ``undertrump_ban`` a player who cannot follow may not play
    a trump lower than the highest trump in the trick unless holding only trumps, and must
    overtrump if able (else any non-trump).
    """
    if not trick:
        return tuple(hand)
    led = trick[0].suit
    # One pass (a loop, not a comprehension: no function call): the cards of the led suit or trumps.
    able: list[Card] = []
    follows = False
    for c in hand:
        suit = c.suit
        if suit is led:
            able.append(c)
            follows = True
        elif suit is trump:
            able.append(c)
    if not able:
        return tuple(hand)
    if follows or led is trump:
        return tuple(able)  # follows suit (or trumps)
    # Void in the led suit, holding a trump: ``able`` holds just the trumps.
    trumps = able
    if rules.undertrump_ban and len(trumps) < len(hand):
        in_trick = [c.rank for c in trick if c.suit is trump]
        if in_trick:
            top = max(in_trick)
            over = {c for c in trumps if c.rank > top}
            if rules.void_may_discard or not over:
                return tuple(c for c in hand if c.suit is not trump or c in over)
            return tuple(c for c in hand if c in over)
    if rules.void_may_discard:
        return tuple(hand)
    return tuple(trumps)


def _why_illegal(s: State, seat: int, card: Card, legal: Sequence[Card]) -> Reason:
    """The reason code for a card in hand that is not in ``legal``."""
    led = s.trick[0].suit
    if led is s.trump:
        return Reason.MUST_PLAY_TRUMP
    hand = s.hands[seat]
    if (card.suit is s.trump and s.rules.undertrump_ban and not any(c.suit is led for c in hand)):
        return Reason.UNDERTRUMP
    return Reason.MUST_FOLLOW_SUIT_OR_TRUMP


def trick_winner(leader: int, cards: Sequence[Card], trump: Suit | None, players: int) -> int:
    """The seat that wins a complete trick (RULES.md, Play): highest trump, else highest of the led suit.

    :param leader: seat that led; ``cards`` in play order from the leader.
    """
    best = 0
    for i in range(1, len(cards)):
        c, b = cards[i], cards[best]
        if c.suit is b.suit:
            if c.rank > b.rank:
                best = i
        elif c.suit is trump:
            best = i
    return (leader + best) % players


def _callable(s: State, seat: int) -> tuple[Card, ...]:
    """Exposed cards of ``seat`` that would be legal now (RULES.md, the call)."""
    exposed = s.exposed[seat]
    if not exposed:
        return ()
    legal = legal_cards(s.hands[seat], s.trick, s.trump, s.rules)
    return tuple(c for c in exposed if c in legal)


class _Shared(dict[Card, Any]):
    """One shared frozen action per card of the deck (equal to a new one); a new one for any other card."""

    __slots__ = ("_make",)

    def __init__(self, make: type[Play] | type[Call]) -> None:
        super().__init__((c, make(c)) for c in CANONICAL_DECK)
        self._make = make

    def __missing__(self, card: Card) -> Any:
        return self._make(card)


_PLAYS = _Shared(Play)
_CALLS = _Shared(Call)
_play_of = _PLAYS.__getitem__


def legal_actions(state: State) -> tuple[Action, ...]:
    """The legal actions of the seat to act (``state.to_act``); empty in phases DEAL and OVER.

    BEG: stand, beg. DEALER: give one, run the pack. PLAY: the legal cards (only the called card
    if one was called). CALL: ``call X`` for each callable exposed card, and pass.
    """
    s = state
    ph = s.phase
    if ph is _PH_PLAY:
        assert s.to_act is not None
        if s.called is not None:
            return (_PLAYS[s.called],)
        return tuple(map(_play_of, legal_cards(s.hands[s.to_act], s.trick, s.trump, s.rules)))
    if ph is _PH_BEG:
        return (BEG, STAND)
    if ph is _PH_DEALER:
        return (GIVE_ONE, RUN_PACK)
    if ph is _PH_CALL:
        assert s.call_for is not None
        calls = _CALLS
        return (*[calls[c] for c in _callable(s, s.call_for)], PASS)
    return ()


# --------------------------------------------------------------------------- applying actions


def apply(state: State, action: Action, seat: int | None = None) -> State:
    """Apply ``action`` by ``seat`` (default: the seat to act) and return the new state.

    A card play by a seat whose turn it is not exposes that card instead (RULES.md, the call).
    Validates first: on error nothing changes.

    :raises RuleError: with reason ``game_over``, ``wrong_phase``, ``not_your_turn``,
        ``card_not_in_hand``, ``must_follow_suit_or_trump``, ``must_play_trump``, ``undertrump``,
        ``must_play_called_card`` or ``bad_action``.
    """
    s = state
    ph = s.phase
    to_act = s.to_act
    if ph is _PH_OVER:
        raise RuleError(Reason.GAME_OVER, f"the game is over (side {s.winner} won {s.scores[0]}-{s.scores[1]}); "
                                          f"{action} was not applied")
    if seat is None:
        if to_act is None:
            raise RuleError(Reason.WRONG_PHASE, f"no seat is to act in phase {ph.value}: {action} "
                                                f"needs a seat")
        seat = to_act
    n = s.rules.players
    if not (type(seat) is int and 0 <= seat < n) and (  # a plain int in range: the usual case, cheap
            not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat < n):
        raise RuleError(Reason.BAD_ACTION, f"seat {seat!r} does not exist at a table of {n}")
    if ph is _PH_DEAL:
        raise RuleError(Reason.WRONG_PHASE, f"seat {seat} sent {action} but the deal has not been dealt yet")

    if seat != to_act:
        if isinstance(action, Play):
            return _expose(s, seat, action.card)
        raise RuleError(Reason.NOT_YOUR_TURN, f"seat {seat} sent {action} but seat {to_act} is to act "
                                              f"(phase {ph.value})")
    if ph is _PH_PLAY:
        if isinstance(action, Play):
            return _play(s, seat, action.card)
    elif ph is _PH_BEG:
        if isinstance(action, Stand):
            return _begin_play(_draft(s))
        if isinstance(action, Beg):
            return _evolve(s, deals=_deals_with(s, begged=True), phase=_PH_DEALER, to_act=s.dealer)
    elif ph is _PH_DEALER:
        if isinstance(action, GiveOne):
            new = _draft(s)
            if _score(new, (s.dealer + 1) % n % 2, "one", 1, len(s.deals)):  # side_of(next_seat(dealer))
                return _done(new)
            return _begin_play(new)
        if isinstance(action, RunPack):
            return _run_pack(s)
    elif ph is _PH_CALL:
        if isinstance(action, Call):
            return _call(s, seat, action.card)
        if isinstance(action, Pass):
            return _pass(s, seat)
    if not isinstance(action, Stand | Beg | GiveOne | RunPack | Play | Call | Pass):
        raise RuleError(Reason.BAD_ACTION, f"not an action: {action!r}")
    legal = " ".join(str(a) for a in legal_actions(s))
    raise RuleError(Reason.WRONG_PHASE, f"seat {seat} sent {action} in phase {s.phase.value}; legal: {legal}")


def _expose(s: State, seat: int, card: Card) -> State:
    """A card play out of turn: the card stays face up in front of its holder (RULES.md, the call)."""
    if card not in s.hands[seat]:
        raise RuleError(Reason.CARD_NOT_IN_HAND,
                        f"seat {seat} played {card} out of turn but does not hold it "
                        f"(seat {seat} holds {format_cards(s.hands[seat])})")
    if card in s.exposed[seat]:
        return s
    exposed = tuple((*e, card) if i == seat else e for i, e in enumerate(s.exposed))
    return _evolve(s, exposed=exposed)


def _begin_play(new: _Draft) -> State:
    """Play begins in the draft ``new``: the player to the dealer's right leads (RULES.md, Play)."""
    leader = (new.dealer + 1) % new.rules.players  # next_seat
    new.trick = ()
    new.trick_leader = leader
    return _begin_turn(new, leader)


def _begin_turn(new: _Draft, seat: int) -> State:
    """``seat`` is next to play: finish the draft ``new`` (other changes already made, one rebuild of
    the state). If one of its exposed cards would be legal, the opponents are asked first, in play
    order (RULES.md, Penalty: the call)."""
    new.to_act = seat
    new.called = None
    new.call_for = None
    new.call_passed = ()
    new.call_settled = False
    new.phase = _PH_PLAY
    s = _done(new)
    if s.exposed[seat] and _callable(s, seat):
        return _evolve(s, phase=_PH_CALL, call_for=seat, to_act=opponents_in_order(seat, s.players)[0])
    return s


def _call(s: State, seat: int, card: Card) -> State:
    assert s.call_for is not None
    if card not in _callable(s, s.call_for):
        raise RuleError(Reason.BAD_ACTION,
                        f"seat {seat} called {card}, which is not an exposed card of seat {s.call_for} "
                        f"that could be played now (callable: {format_cards(_callable(s, s.call_for))})")
    return _evolve(s, phase=_PH_PLAY, to_act=s.call_for, called=card, call_for=None, call_passed=(),
                   call_settled=True)


def _pass(s: State, seat: int) -> State:
    assert s.call_for is not None
    passed = (*s.call_passed, seat)
    remaining = [o for o in opponents_in_order(s.call_for, s.players) if o not in passed]
    if remaining:
        return _evolve(s, to_act=remaining[0], call_passed=passed)
    return _evolve(s, phase=_PH_PLAY, to_act=s.call_for, called=None, call_for=None, call_passed=(),
                   call_settled=True)


def _run_pack(s: State) -> State:
    """Run the pack (RULES.md, The deal 4): 3 more each and a new kick until a new suit turns up."""
    n = s.players
    begged = s.trump
    while True:
        if len(s.deck) - s.pos < RUN_SIZE * n + 1:
            # The pack ran dry: the same dealer deals again from step 1; points stay scored.
            return _evolve(s, deals=_deals_with(s, trump=None, ran_dry=True), phase=_PH_DEAL, to_act=None,
                           trump=None)
        hands, pos = _deal_round(s.hands, s.deck, s.pos, s.dealer, n, RUN_SIZE, s.rules.deal_in)
        kick = s.deck[pos]
        dealt, _ = _deal_round(s.deals[-1].hands, s.deck, s.pos, s.dealer, n, RUN_SIZE, s.rules.deal_in)
        s = _evolve(s, hands=hands, pos=pos + 1, trump=kick.suit,
                    deals=_deals_with(s, hands=dealt, kicks=(*s.deals[-1].kicks, kick), trump=kick.suit))
        s = _score_kick(s, kick)
        if s.phase is _PH_OVER:
            return s
        if kick.suit is not begged:
            return _begin_play(_draft(s))


def _play(s: State, seat: int, card: Card) -> State:
    """Play a card to the trick (RULES.md, Play); complete the trick and count the deal at its end."""
    hands_now = s.hands
    hand = hands_now[seat]
    if card not in hand:
        raise RuleError(Reason.CARD_NOT_IN_HAND,
                        f"seat {seat} cannot play {card}: not in hand (seat {seat} holds {format_cards(hand)})")
    if s.called is not None and card is not s.called:
        raise RuleError(Reason.MUST_PLAY_CALLED_CARD,
                        f"seat {seat} cannot play {card}: the opponents called the exposed {s.called}")
    trick_now = s.trick
    trump = s.trump
    if trick_now and not (card.suit is trick_now[0].suit or (card.suit is trump and not s.rules.undertrump_ban)):
        # Leading, following suit, and (without undertrump_ban) trumping are always legal; else, in full:
        legal = legal_cards(hand, trick_now, trump, s.rules)
        if card not in legal:
            reason = _why_illegal(s, seat, card, legal)
            raise RuleError(reason, f"seat {seat} cannot play {card}: {trick_now[0]} was led, trumps {trump}, "
                                    f"trick {format_cards(trick_now)}; seat {seat} holds {format_cards(hand)}; "
                                    f"legal: {format_cards(legal)}")
    n = s.rules.players
    new_hands = list(hands_now)
    new_hands[seat] = tuple([c for c in hand if c is not card])
    hands = tuple(new_hands)
    exposed = s.exposed
    if card in exposed[seat]:
        new_exposed = list(exposed)
        new_exposed[seat] = tuple([c for c in exposed[seat] if c is not card])
        exposed = tuple(new_exposed)
    trick = (*trick_now, card)
    if len(trick) < n:
        new = _draft(s)
        new.hands = hands
        new.exposed = exposed
        new.trick = trick
        return _begin_turn(new, (seat + 1) % n)
    # The trick is complete: one rebuild for the trick, its points and the next turn.
    winner = trick_winner(s.trick_leader, trick, trump, n)
    pts = 0
    jack_winner = s.jack_winner
    for c in trick:
        rank = c.rank
        pts += _GAME_POINTS.get(rank, 0)
        if rank is _JACK and c.suit is trump:
            jack_winner = winner
    g0, g1 = s.game_points
    gp = (g0 + pts, g1) if side_of(winner) == 0 else (g0, g1 + pts)
    done: Any = _new(_TrickDraft)  # Trick(leader=s.trick_leader, cards=trick, winner=winner)
    done.leader = s.trick_leader
    done.cards = trick
    done.winner = winner
    done.__class__ = Trick
    deals = s.deals
    record = _deal_draft(deals[-1])
    record.tricks = (*record.tricks, done)
    record.__class__ = DealRecord
    new = _draft(s)
    new.hands = hands
    new.exposed = exposed
    new.trick = ()
    new.trick_leader = winner
    new.game_points = gp
    new.jack_winner = jack_winner
    new.deals = (*deals[:-1], record)
    if any(hands):
        return _begin_turn(new, winner)
    new.called = None
    return _count(new)


def _count(new: _Draft) -> State:
    """Score the deal (RULES.md, Scoring) and finish the draft ``new``, the state after the last trick.

    High, Low, Jack (or Hang Jack), Game, in that order, stopping the moment a side reaches the
    target; else the deal passes to the right (RULES.md, Match). The points of a deal depend only on
    its cards and tricks, not on the scores, so they are listed first and counted in one pass.
    """
    # The trumps dealt (a card is in one hand only, so ranks do not tie): the highest, lowest, jack.
    high_rank = low_rank = _TWO
    high_seat = low_seat = jack_seat = -1  # -1: none (yet)
    trump = new.trump
    for seat, h in enumerate(new.deals[-1].hands):
        for c in h:
            if c.suit is trump:
                rank = c.rank
                if high_seat < 0:
                    high_rank = low_rank = rank
                    high_seat = low_seat = seat
                elif rank > high_rank:
                    high_rank, high_seat = rank, seat
                elif rank < low_rank:
                    low_rank, low_seat = rank, seat
                if rank is _JACK:
                    jack_seat = seat
    awards: list[tuple[int, str, int]] = []
    if high_seat >= 0:
        awards.append((high_seat % 2, "high", 1))  # side_of
        awards.append((low_seat % 2, "low", 1))
        jack_winner = new.jack_winner
        if jack_seat >= 0 and jack_winner is not None:
            taker = jack_winner % 2
            if new.rules.hang_jack and taker != jack_seat % 2:
                awards.append((taker, "hang_jack", 3))
            else:
                awards.append((taker, "jack", 1))
    g0, g1 = new.game_points
    if g0 != g1:
        awards.append((0 if g0 > g1 else 1, "game", 1))
    new.to_act = None
    number = len(new.deals)
    target = new.rules.target
    s0, s1 = new.scores
    events = list(new.points)
    memo = _POINT_MEMO
    for side, kind, value in awards:
        events.append(memo.get((number, side, kind, value)) or _point(number, side, kind, value))
        if side == 0:
            s0 += value
            total = s0
        else:
            s1 += value
            total = s1
        if total >= target:
            _game_over(new, side)
            break
    else:
        new.phase = _PH_DEAL
        new.dealer = (new.dealer + 1) % new.rules.players  # next_seat
        new.trick = ()
    if awards:
        new.scores = (s0, s1)
        new.points = tuple(events)
    return _done(new)


# --------------------------------------------------------------------------- observation


def _deal_points(s: State) -> tuple[PointEvent, ...]:
    """The point events of the current (last) deal: the tail of ``s.points``."""
    points = s.points
    number = len(s.deals)
    k = len(points)
    while k and points[k - 1].deal == number:
        k -= 1
    return points[k:]


def observe(state: State, seat: int) -> Observation:
    """What ``seat`` may see: its own hand, public cards, exposed cards, scores and tricks.

    Never includes another seat's unplayed cards (its partner's included) or the undealt deck.

    :raises ValueError: for a seat that does not exist.
    """
    s = state
    n = s.rules.players
    if not 0 <= seat < n:
        raise ValueError(f"seat {seat} does not exist at a table of {n}")
    deals = s.deals
    record = deals[-1] if deals else None
    o: Any = _new(_ObservationDraft)
    o.seat = seat
    o.rules = s.rules
    o.phase = phase = s.phase
    o.to_act = to_act = s.to_act
    o.dealer = s.dealer
    o.deal_number = len(deals)
    o.scores = s.scores
    o.winner = s.winner
    if phase is not _PH_DEAL and record is not None and not record.ran_dry:
        hands = s.hands or ((),) * n
        o.trump = s.trump
        o.kicks = record.kicks
        o.begged = record.begged
        o.hand = hands[seat]
        o.hand_sizes = tuple(map(len, hands))
        exposed = s.exposed
        o.exposed = tuple([(i, c) for i, e in enumerate(exposed) for c in e]) if any(exposed) else ()
        o.trick = s.trick
        o.tricks = record.tricks
    else:
        o.trump = None
        o.kicks = ()
        o.begged = False
        o.hand = ()
        o.hand_sizes = (0,) * n
        o.exposed = ()
        o.trick = ()
        o.tricks = ()
    o.called = s.called
    o.call_for = s.call_for
    o.trick_leader = s.trick_leader
    o.points = _deal_points(s)
    o.legal = legal_actions(s) if to_act == seat else ()
    o.__class__ = Observation
    out: Observation = o
    return out
