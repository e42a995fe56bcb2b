"""What one seat knows about the hidden cards, and random deals consistent with it (determinizations).

From an ``Observation`` (docs/sdk.md) a seat knows: its own hand; every card played this deal (the
completed tricks and the trick in progress) and by whom; the kicked cards (out of play); the cards
the other seats exposed (face up, still in their hands: docs/rules.md, the call); how many cards
each seat holds; and the **voids** play has shown (docs/rules.md, Play):

- a seat that did not follow the led suit holds none of it;
- a seat that played neither the led suit nor a trump to a plain-suit lead holds no trump either
  (it would have had to trump), unless ``void_may_discard`` lets it discard, or ``undertrump_ban``
  with a trump already in the trick let it keep lower trumps;
- a seat that played a non-trump to a trump lead holds no trump.

:func:`sample_deal` deals the unseen cards to the other seats (and to the undealt stock) at random,
honouring hand sizes, exposed cards and voids. It is a randomized greedy deal, most constrained
card first, retried when it runs into a dead end; after ``tries`` dead ends it deals ignoring the
voids (so it always returns a deal).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from referee.rules import Observation

from .fast import ALL_CARDS, POINTS, SUIT_INDEX, SUIT_MASK, Position, card_id, cards_in, mask_of, playout_card


@dataclass(frozen=True, slots=True)
class Knowledge:
    """What ``seat`` knows of the deal (card masks as in ``sample_bots.search.fast``).

    - ``hands``: the cards known to be in each seat's hand now (all of ``seat``'s; exposed cards of
      the others); ``sizes``: how many cards each seat holds;
    - ``played``: the cards each seat has played this deal; ``voids``: the suits (bit ``s`` for suit
      number ``s``) each seat is known not to hold;
    - ``unseen``: the cards whose place ``seat`` does not know (another hand or the stock);
    - ``stock_size``: cards neither in a hand, played nor kicked (the undealt pack).
    """

    seat: int
    players: int
    trump: int
    hands: tuple[int, ...]
    sizes: tuple[int, ...]
    played: tuple[int, ...]
    voids: tuple[int, ...]
    unseen: int
    stock_size: int
    tricks: tuple[tuple[int, tuple[int, ...]], ...] = ()


def knowledge(obs: Observation) -> Knowledge:
    """What ``obs.seat`` knows; see the module docstring. Needs a trump (not phase DEAL)."""
    assert obs.trump is not None
    n = obs.rules.players
    trump = SUIT_INDEX[obs.trump]
    hands = [0] * n
    hands[obs.seat] = mask_of(obs.hand)
    for seat, card in obs.exposed:
        hands[seat] |= 1 << card_id(card)
    played = [0] * n
    voids = [0] * n
    tricks = [(t.leader, t.cards) for t in obs.tricks]
    if obs.trick:
        tricks.append((obs.trick_leader, obs.trick))
    for leader, cards in tricks:
        _read_trick(leader, [card_id(c) for c in cards], trump, n, obs, played, voids)
    seen = mask_of(obs.kicks)
    for m in (*hands, *played):
        seen |= m
    in_hands = sum(obs.hand_sizes)
    stock = 52 - in_hands - sum(bin(m).count("1") for m in played) - len(obs.kicks)
    return Knowledge(obs.seat, n, trump, tuple(hands), tuple(obs.hand_sizes), tuple(played), tuple(voids),
                     ALL_CARDS & ~seen, stock, tuple((leader, tuple(card_id(c) for c in cards))
                                                     for leader, cards in tricks))


def _read_trick(leader: int, cards: list[int], trump: int, n: int, obs: Observation, played: list[int],
                voids: list[int]) -> None:
    """Record who played each card of one trick and the voids it shows (the module docstring's rules)."""
    led = cards[0] // 13
    rules = obs.rules
    trump_before = False
    for i, c in enumerate(cards):
        seat = (leader + i) % n
        played[seat] |= 1 << c
        suit = c // 13
        if i and suit != led:
            voids[seat] |= 1 << led
            if suit != trump and (led == trump or not (
                    rules.void_may_discard or (rules.undertrump_ban and trump_before))):
                voids[seat] |= 1 << trump
        if suit == trump:
            trump_before = True


@dataclass(slots=True)
class Deal:
    """One determinization: every seat's hand now, and the undealt stock in a random order (top first)."""

    hands: list[int]
    stock: list[int]


def sample_deal(k: Knowledge, rng: random.Random, tries: int = 20) -> Deal:
    """A random placement of ``k.unseen`` consistent with ``k`` (see the module docstring)."""
    for attempt in range(tries + 1):
        deal = _try_deal(k, rng, use_voids=attempt < tries)
        if deal is not None:
            return deal
    raise AssertionError("a deal without voids cannot fail")  # pragma: no cover


def _try_deal(k: Knowledge, rng: random.Random, use_voids: bool) -> Deal | None:
    n = k.players
    hands = list(k.hands)
    room = [k.sizes[s] - bin(hands[s]).count("1") for s in range(n)]
    room.append(k.stock_size)  # index n: the stock
    allowed = []
    for s in range(n):
        bad = 0
        if use_voids:
            for suit in range(4):
                if k.voids[s] >> suit & 1:
                    bad |= SUIT_MASK[suit]
        allowed.append(~bad if room[s] > 0 else 0)
    cards = cards_in(k.unseen)
    rng.shuffle(cards)
    # Most constrained first: cards fewer seats may hold are placed before the others.
    cards.sort(key=lambda c: sum(1 for s in range(n) if allowed[s] >> c & 1))
    stock: list[int] = []
    for c in cards:
        options = [s for s in range(n) if room[s] > 0 and allowed[s] >> c & 1]
        weights = [room[s] for s in options]
        if room[n] > 0:
            options.append(n)
            weights.append(room[n])
        if not options:
            return None
        s = rng.choices(options, weights)[0]
        room[s] -= 1
        if s == n:
            stock.append(c)
        else:
            hands[s] |= 1 << c
    rng.shuffle(stock)
    return Deal(hands, stock)



def play_likelihood(k: Knowledge, deal: Deal, undertrump_ban: bool, void_may_discard: bool,
                    miss: float, partner_miss: float = 1.0, leads: bool = False) -> tuple[float, int]:
    """How well ``deal`` explains the cards the other seats followed with this deal (card-play
    inference), and how many plays were weighed.

    The deal is replayed from its first lead with each seat's dealt hand (its sampled hand now and
    the cards it played); at every card another seat played to a trick led by someone else, with a
    choice of more than one card, a simple play model (``fast.playout_card``: take a trick worth
    taking with the cheapest winner, smear points on the partner's trick, else throw the cheapest
    card) is asked what that seat would have played. The weight is ``miss`` (``partner_miss`` for the
    partner's plays) to the power of the plays the model does not explain (1.0: every play
    explained), so a deal in which a seat that threw a low card held a cheap winner for a trick with
    points counts less. Leads are weighed only with ``leads`` (by :func:`lead_card`, from what the
    leader could see).
    """
    n = k.players
    if not k.tricks:
        return 1.0, 0
    hands = [deal.hands[s] | k.played[s] for s in range(n)]
    pos = Position(n, k.trump, hands, k.tricks[0][0], [], [0, 0], -1, 0, undertrump_ban, void_may_discard)
    weight = 1.0
    weighed = 0
    gone = ALL_CARDS & ~k.unseen  # seen by the seat: its hand, the kicks, the exposed and played cards
    for m in (*k.hands, *k.played):
        gone &= ~m  # ... leaving the kicks: out of play for every seat
    for leader, cards in k.tricks:
        pos.leader = leader
        for c in cards:
            seat = pos.to_act
            factor = partner_miss if (seat - k.seat) % 2 == 0 else miss
            if seat != k.seat and factor < 1.0 and (pos.trick or leads):
                legal = pos.legal()
                if legal & (legal - 1):
                    weighed += 1
                    model = (playout_card(pos, legal) if pos.trick
                             else lead_card(pos.hands[seat], ALL_CARDS & ~pos.hands[seat] & ~gone, k.trump, n))
                    if model != c:
                        weight *= factor
            gone |= 1 << c
            pos.play(c)
    return weight, weighed


def lead_card(hand: int, unseen: int, trump: int, players: int) -> int:
    """A simple lead from what the leader sees (``unseen``: the cards it cannot place): its top trump
    when no unseen trump is higher (and it is not a jack an unseen trump could take), a low trump when
    long in trumps, a plain card no unseen card can beat, else the lowest card without points of its
    longest plain suit."""
    trumps = hand & SUIT_MASK[trump]
    out = unseen & SUIT_MASK[trump]
    jack = trump * 13 + 9
    if trumps and out:
        top = trumps.bit_length() - 1
        if out.bit_length() - 1 < top:
            return top
        count = bin(trumps).count("1")
        if count >= 3 and count * players > bin(out).count("1") + count:
            low = [c for c in cards_in(trumps) if c != jack and c % 13 < 8]
            if low:
                return low[0]
    plain = [c for c in cards_in(hand) if c // 13 != trump]
    masters = [c for c in plain if not out and not (unseen & SUIT_MASK[c // 13]) >> c]
    if masters:
        return max(masters, key=lambda c: (POINTS[c], c % 13))
    if plain:
        safe = [c for c in plain if not POINTS[c]] or plain
        length = {c: bin(hand & SUIT_MASK[c // 13]).count("1") for c in safe}
        longest = max(length.values())
        return min((c for c in safe if length[c] == longest), key=lambda c: c % 13)
    non_jack = [c for c in cards_in(trumps) if c != jack]
    return non_jack[0] if non_jack else cards_in(trumps)[0]
