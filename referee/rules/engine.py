"""The pure All Fours engine: game state, legal actions, applying an action, observation.

Everything here follows docs/rules.md section by section; each function names the section it implements.
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

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

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
from referee.rules.cards import CANONICAL_DECK, GAME_POINTS, Card, Rank, Suit, format_cards
from referee.rules.errors import Reason, RuleError
from referee.rules.ruleset import RuleSet
from referee.rules.seats import next_seat, opponents_in_order, seat_at, seats_from, side_of
from referee.rules.values import maker, replacer

#: Points a kicked card scores for the dealer's side (docs/rules.md, The deal 2); a Six scores
#: ``RuleSet.kicked_six_points`` (2 by default).
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
# ``EnumType.__getattr__``: 0.67 µs an access on CPython 3.11 (timeit, this machine), a global 0.02 µs;
# ``apply`` reads a phase several times per action.
_PH_DEAL, _PH_BEG, _PH_DEALER, _PH_PLAY, _PH_CALL, _PH_OVER = (
    Phase.DEAL, Phase.BEG, Phase.DEALER, Phase.PLAY, Phase.CALL, Phase.OVER)
_JACK, _SIX = Rank.JACK, Rank.SIX


@dataclass(frozen=True, slots=True)
class PointEvent:
    """Points scored: ``value`` points to ``side`` in deal number ``deal`` (1-based), for ``kind``.

    ``kind`` is one of ``kick one high low jack hang_jack game`` (docs/rules.md, The deal and Scoring).
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
    for a deal whose pack ran dry (docs/rules.md, The deal 4). ``hands[s]`` are all cards dealt to seat
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
    """What one seat may see (docs/rules.md: hidden hands). Safe to send to that seat.

    - ``seat``: whose view; ``rules``; ``phase``; ``to_act`` (seat or ``None``); ``dealer``;
      ``deal_number`` (1-based); ``scores`` per side (points); ``winner`` (side or ``None``).
    - ``trump``: suit or ``None``; ``kicks``: kicked cards of this deal in order; ``begged``.
    - ``hand``: this seat's cards now; ``hand_sizes``: cards held per seat.
    - ``exposed``: ``(seat, card)`` pairs face up on the table (docs/rules.md, the call);
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


# One way to make each value (referee.rules.values: the frozen ``__init__`` costs about 1.5 µs for
# State's fields, ``dataclasses.replace`` 13 µs; these, about 0.4-0.6 µs). mypy sees the class and
# ``dataclasses.replace`` themselves, so it checks every field name and type at every call.
if TYPE_CHECKING:
    from dataclasses import replace as _evolve
    from dataclasses import replace as _evolve_deal
    _new_state = State
    _new_deal_record = DealRecord
    _new_trick = Trick
    _new_observation = Observation
else:
    _evolve = replacer(State)
    _evolve_deal = replacer(DealRecord)
    _new_state = maker(State)
    _new_deal_record = maker(DealRecord)
    _new_trick = maker(Trick)
    _new_observation = maker(Observation)


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
    return _new_state(rules=rules, phase=_PH_DEAL if winner is None else _PH_OVER, dealer=dealer, scores=s,
                      winner=winner)


def cut_for_dealer(deck: Sequence[Card], players: int) -> int:
    """The first dealer by the cut (docs/rules.md, Table: highest card deals, ace high, ties cut again).

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
    """Deal a new deck (docs/rules.md, The deal 1-2): 6 cards each from the dealer's right, then the kick.

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
    first = next_seat(dealer, n)
    record = _new_deal_record(dealer=dealer, trump=kick.suit, kicks=(kick,), hands=hands)
    dealt = _evolve(state, phase=_PH_BEG, to_act=first, deck=deck_t, pos=pos + 1, hands=hands, trump=kick.suit,
                    trick_leader=first, trick=(), exposed=((),) * n, called=None, call_for=None, call_passed=(),
                    game_points=(0, 0), jack_winner=None, deals=(*state.deals, record))
    return _score_kick(dealt, kick)


def _deal_round(hands: tuple[tuple[Card, ...], ...], deck: tuple[Card, ...], pos: int, dealer: int,
                n: int, each: int, deal_in: str) -> tuple[tuple[tuple[Card, ...], ...], int]:
    """Give ``each`` more cards to every seat from the dealer's right, in ones or packets of three
    (docs/rules.md, The deal 1 and 4), from ``deck[pos:]``.

    :returns: the new hands (the cards added after each seat's old ones) and the deck position after.
    """
    packet = 3 if deal_in == "threes" else 1
    new = list(hands)
    for _ in range(each // packet):
        for seat in seats_from(next_seat(dealer, n), n):
            new[seat] += deck[pos:pos + packet]
            pos += packet
    return tuple(new), pos


def _score(s: State, point: PointEvent) -> State:
    """Score ``point`` (``point.value`` to ``point.side``); the game ends at once when the side reaches
    the target (docs/rules.md, The deal 5)."""
    s0, s1 = s.scores
    scores = (s0 + point.value, s1) if point.side == 0 else (s0, s1 + point.value)
    points = (*s.points, point)
    if scores[point.side] >= s.rules.target:
        return _evolve(s, scores=scores, points=points, phase=_PH_OVER, winner=point.side, to_act=None,
                       call_for=None, called=None)
    return _evolve(s, scores=scores, points=points)


def _score_kick(s: State, kick: Card) -> State:
    """A kicked Ace, Six or Jack scores 1, 2 (``kicked_six_points``) or 3 for the dealer's side
    (docs/rules.md, The deal 2)."""
    value = s.rules.kicked_six_points if kick.rank is _SIX else KICK_POINTS.get(kick.rank)
    if value:
        s = _score(s, PointEvent(len(s.deals), side_of(s.dealer), "kick", value))
    return s


def _with_record(s: State, record: DealRecord) -> tuple[DealRecord, ...]:
    """``s.deals`` with ``record`` in place of the current (last) deal's."""
    return (*s.deals[:-1], record)


# --------------------------------------------------------------------------- legality


def legal_cards(hand: Sequence[Card], trick: Sequence[Card], trump: Suit | None, rules: RuleSet) -> tuple[Card, ...]:
    """The cards of ``hand`` that may be played to ``trick`` (docs/rules.md, Play), in hand order.

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


def _why_illegal(s: State, seat: int, card: Card) -> Reason:
    """The reason code for a card in hand that may not be played now (docs/rules.md, Play)."""
    led = s.trick[0].suit
    if led is s.trump:
        return Reason.MUST_PLAY_TRUMP
    hand = s.hands[seat]
    if (card.suit is s.trump and s.rules.undertrump_ban and not any(c.suit is led for c in hand)):
        return Reason.UNDERTRUMP
    return Reason.MUST_FOLLOW_SUIT_OR_TRUMP


def trick_winner(leader: int, cards: Sequence[Card], trump: Suit | None, players: int) -> int:
    """The seat that wins a complete trick (docs/rules.md, Play): highest trump, else highest of the led suit.

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
    return seat_at(leader, best, players)


def _callable(s: State, seat: int) -> tuple[Card, ...]:
    """Exposed cards of ``seat`` that would be legal now (docs/rules.md, the call)."""
    exposed = s.exposed[seat]
    if not exposed:
        return ()
    legal = legal_cards(s.hands[seat], s.trick, s.trump, s.rules)
    return tuple(c for c in exposed if c in legal)


#: The action of playing or calling each card, made once: ``legal_actions`` returns these shared
#: frozen values (equal to new ones) instead of building a Play per legal card on every request.
_PLAYS: dict[Card, Play] = {c: Play(c) for c in CANONICAL_DECK}
_CALLS: dict[Card, Call] = {c: Call(c) for c in CANONICAL_DECK}
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
        return (*[_CALLS[c] for c in _callable(s, s.call_for)], PASS)
    return ()


# --------------------------------------------------------------------------- applying actions


def apply(state: State, action: Action, seat: int | None = None) -> State:
    """Apply ``action`` by ``seat`` (default: the seat to act) and return the new state.

    A card play by a seat whose turn it is not exposes that card instead (docs/rules.md, the call).
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
            return _begin_play(s)
        if isinstance(action, Beg):
            return _evolve(s, deals=_with_record(s, _evolve_deal(s.deals[-1], begged=True)), phase=_PH_DEALER,
                           to_act=s.dealer)
    elif ph is _PH_DEALER:
        if isinstance(action, GiveOne):
            given = _score(s, PointEvent(len(s.deals), side_of(next_seat(s.dealer, n)), "one", 1))
            return given if given.phase is _PH_OVER else _begin_play(given)
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
    """A card play out of turn: the card stays face up in front of its holder (docs/rules.md, the call)."""
    if card not in s.hands[seat]:
        raise RuleError(Reason.CARD_NOT_IN_HAND,
                        f"seat {seat} played {card} out of turn but does not hold it "
                        f"(seat {seat} holds {format_cards(s.hands[seat])})")
    if card in s.exposed[seat]:
        return s
    exposed = tuple((*e, card) if i == seat else e for i, e in enumerate(s.exposed))
    return _evolve(s, exposed=exposed)


def _begin_play(s: State) -> State:
    """Play begins: the player to the dealer's right leads (docs/rules.md, Play)."""
    leader = next_seat(s.dealer, s.players)
    return _ask_for_call(_evolve(s, phase=_PH_PLAY, to_act=leader, trick=(), trick_leader=leader))


def _ask_for_call(s: State) -> State:
    """``s.to_act`` is to play (phase PLAY): if one of its exposed cards would be legal now, the
    opponents are asked first, in play order, whether to call it (docs/rules.md, Penalty: the call).

    In phase PLAY ``call_for`` is ``None`` and ``call_passed`` empty (:func:`_call` and :func:`_pass`
    clear them), so the callers set only ``to_act`` and clear ``called``.
    """
    seat = s.to_act
    assert seat is not None
    if s.exposed[seat] and _callable(s, seat):
        return _evolve(s, phase=_PH_CALL, call_for=seat, to_act=opponents_in_order(seat, s.players)[0])
    return s


def _call(s: State, seat: int, card: Card) -> State:
    """An opponent calls the exposed ``card``: its holder must play it now (docs/rules.md, the call)."""
    assert s.call_for is not None
    if card not in _callable(s, s.call_for):
        raise RuleError(Reason.BAD_ACTION,
                        f"seat {seat} called {card}, which is not an exposed card of seat {s.call_for} "
                        f"that could be played now (callable: {format_cards(_callable(s, s.call_for))})")
    return _evolve(s, phase=_PH_PLAY, to_act=s.call_for, called=card, call_for=None, call_passed=())


def _pass(s: State, seat: int) -> State:
    """An opponent does not call: the next opponent is asked, or the holder plays freely."""
    assert s.call_for is not None
    passed = (*s.call_passed, seat)
    remaining = [o for o in opponents_in_order(s.call_for, s.players) if o not in passed]
    if remaining:
        return _evolve(s, to_act=remaining[0], call_passed=passed)
    return _evolve(s, phase=_PH_PLAY, to_act=s.call_for, called=None, call_for=None, call_passed=())


def _run_pack(s: State) -> State:
    """Run the pack (docs/rules.md, The deal 4): 3 more each and a new kick until a new suit turns up."""
    n = s.players
    begged = s.trump
    while True:
        if len(s.deck) - s.pos < RUN_SIZE * n + 1:
            # The pack ran dry: the same dealer deals again from step 1; points stay scored.
            dry = _evolve_deal(s.deals[-1], trump=None, ran_dry=True)
            return _evolve(s, deals=_with_record(s, dry), phase=_PH_DEAL, to_act=None, trump=None)
        hands, pos = _deal_round(s.hands, s.deck, s.pos, s.dealer, n, RUN_SIZE, s.rules.deal_in)
        kick = s.deck[pos]
        record = s.deals[-1]
        dealt, _ = _deal_round(record.hands, s.deck, s.pos, s.dealer, n, RUN_SIZE, s.rules.deal_in)
        record = _evolve_deal(record, hands=dealt, kicks=(*record.kicks, kick), trump=kick.suit)
        s = _score_kick(_evolve(s, hands=hands, pos=pos + 1, trump=kick.suit, deals=_with_record(s, record)), kick)
        if s.phase is _PH_OVER:
            return s
        if kick.suit is not begged:
            return _begin_play(s)


def _play(s: State, seat: int, card: Card) -> State:
    """Play a card to the trick (docs/rules.md, Play); complete the trick and count the deal at its end."""
    hand = s.hands[seat]
    if card not in hand:
        raise RuleError(Reason.CARD_NOT_IN_HAND,
                        f"seat {seat} cannot play {card}: not in hand (seat {seat} holds {format_cards(hand)})")
    if s.called is not None and card is not s.called:
        raise RuleError(Reason.MUST_PLAY_CALLED_CARD,
                        f"seat {seat} cannot play {card}: the opponents called the exposed {s.called}")
    _check_follows(s, seat, card)
    hands = _without(s.hands, seat, card)
    exposed = _without(s.exposed, seat, card) if card in s.exposed[seat] else s.exposed
    trick = (*s.trick, card)
    n = s.rules.players
    if len(trick) < n:
        return _ask_for_call(_evolve(s, hands=hands, exposed=exposed, trick=trick, to_act=next_seat(seat, n),
                                     called=None))
    # The trick is complete: its winner takes it, its game points and the trump jack in it, and leads.
    winner = trick_winner(s.trick_leader, trick, s.trump, n)
    taken = sum([GAME_POINTS[c.rank] for c in trick])
    g0, g1 = s.game_points
    game_points = (g0 + taken, g1) if side_of(winner) == 0 else (g0, g1 + taken)
    jack_taken = s.trump is not None and Card.of(_JACK, s.trump) in trick
    record = s.deals[-1]
    record = _evolve_deal(record, tricks=(*record.tricks, _new_trick(leader=s.trick_leader, cards=trick,
                                                                      winner=winner)))
    after = _evolve(s, hands=hands, exposed=exposed, trick=(), trick_leader=winner, to_act=winner, called=None,
                    game_points=game_points, jack_winner=winner if jack_taken else s.jack_winner,
                    deals=_with_record(s, record))
    if any(hands):
        return _ask_for_call(after)
    return _count(after)


def _check_follows(s: State, seat: int, card: Card) -> None:
    """:raises RuleError: if ``card`` (in the hand of ``seat``, the seat to act) may not be played to
    the trick now (docs/rules.md, Play); the reason names the rule it breaks."""
    trick, trump = s.trick, s.trump
    # Leading, following suit, and (without undertrump_ban) trumping are always legal; else, in full:
    if not trick or card.suit is trick[0].suit or (card.suit is trump and not s.rules.undertrump_ban):
        return
    hand = s.hands[seat]
    legal = legal_cards(hand, trick, trump, s.rules)
    if card not in legal:
        raise RuleError(_why_illegal(s, seat, card),
                        f"seat {seat} cannot play {card}: {trick[0]} was led, trumps {trump}, "
                        f"trick {format_cards(trick)}; seat {seat} holds {format_cards(hand)}; "
                        f"legal: {format_cards(legal)}")


def _without(cards: tuple[tuple[Card, ...], ...], seat: int, card: Card) -> tuple[tuple[Card, ...], ...]:
    """``cards`` (hands, or exposed cards, per seat) with ``card`` taken from seat ``seat``'s."""
    new = list(cards)
    new[seat] = tuple([c for c in cards[seat] if c is not card])
    return tuple(new)


def _count(s: State) -> State:
    """Score the deal after its last trick (docs/rules.md, Scoring): High, Low, Jack (or Hang Jack), Game,
    in that order, stopping the moment a side reaches the target; else the deal passes to the right
    (docs/rules.md, Match)."""
    for point in _deal_awards(s):
        s = _score(s, point)
        if s.phase is _PH_OVER:
            return s
    return _evolve(s, phase=_PH_DEAL, dealer=next_seat(s.dealer, s.players), trick=(), to_act=None, called=None)


def _deal_awards(s: State) -> list[PointEvent]:
    """The points of the deal just played, in the order they are counted (docs/rules.md, Scoring 1-4).

    High and Low go to the sides of the seats dealt the highest and lowest trump, Jack to the side
    that took the trump jack in a trick (``hang_jack_points``, 3 by default, Hang Jack, when that side
    is not its holder's and ``hang_jack`` is on); Game to the side with more card points in its tricks (none on a tie).
    """
    number = len(s.deals)
    trumps = [(c.rank, seat) for seat, hand in enumerate(s.deals[-1].hands) for c in hand if c.suit is s.trump]
    awards: list[PointEvent] = []
    if trumps:  # a card is in one hand only: the ranks do not tie
        awards.append(PointEvent(number, side_of(max(trumps)[1]), "high", 1))
        awards.append(PointEvent(number, side_of(min(trumps)[1]), "low", 1))
        jack_holder = next((seat for rank, seat in trumps if rank is _JACK), None)
        if jack_holder is not None and s.jack_winner is not None:
            taker = side_of(s.jack_winner)
            if s.rules.hang_jack and taker != side_of(jack_holder):
                awards.append(PointEvent(number, taker, "hang_jack", s.rules.hang_jack_points))
            else:
                awards.append(PointEvent(number, taker, "jack", 1))
    g0, g1 = s.game_points
    if g0 != g1:
        awards.append(PointEvent(number, 0 if g0 > g1 else 1, "game", 1))
    return awards


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
    record = s.deals[-1] if s.deals else None
    if s.phase is _PH_DEAL or record is None or record.ran_dry:  # no deal on the table
        return _new_observation(
            seat=seat, rules=s.rules, phase=s.phase, to_act=s.to_act, dealer=s.dealer, deal_number=len(s.deals),
            scores=s.scores, winner=s.winner, trump=None, kicks=(), begged=False, hand=(), hand_sizes=(0,) * n,
            exposed=(), called=s.called, call_for=s.call_for, trick_leader=s.trick_leader, trick=(), tricks=(),
            points=_deal_points(s), legal=legal_actions(s) if s.to_act == seat else ())
    hands = s.hands or ((),) * n
    return _new_observation(
        seat=seat, rules=s.rules, phase=s.phase, to_act=s.to_act, dealer=s.dealer, deal_number=len(s.deals),
        scores=s.scores, winner=s.winner, trump=s.trump, kicks=record.kicks, begged=record.begged,
        hand=hands[seat], hand_sizes=tuple(map(len, hands)),
        exposed=tuple([(i, c) for i, held in enumerate(s.exposed) for c in held]),
        called=s.called, call_for=s.call_for, trick_leader=s.trick_leader, trick=s.trick, tricks=record.tricks,
        points=_deal_points(s), legal=legal_actions(s) if s.to_act == seat else ())
