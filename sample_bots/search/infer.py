"""What one seat knows about the hidden cards, and random deals consistent with it (determinizations).

From an ``Observation`` (docs/sdk.md) a seat knows: its own hand; every card played this deal (the
completed tricks and the trick in progress) and by whom; the kicked cards (out of play); the cards
the other seats exposed (face up, still in their hands: docs/rules.md, the call); how many cards
each seat holds; and the **voids** play has shown (docs/rules.md, Play):

- a seat that played neither the led suit nor a trump holds none of the led suit (a trump on a plain
  lead shows nothing: trumping is allowed even when able to follow);
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

from .fast import ALL_CARDS, SUIT_INDEX, SUIT_MASK, card_id, cards_in, mask_of


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
                     ALL_CARDS & ~seen, stock)


def _read_trick(leader: int, cards: list[int], trump: int, n: int, obs: Observation, played: list[int],
                voids: list[int]) -> None:
    """Record who played each card of one trick and the voids it shows (the module docstring's rules;
    docs/rules.md, Play: a plain suit led may be followed or trumped, so only a card of neither suit
    shows a void)."""
    led = cards[0] // 13
    rules = obs.rules
    trump_before = False
    for i, c in enumerate(cards):
        seat = (leader + i) % n
        played[seat] |= 1 << c
        suit = c // 13
        if i and suit != led and suit != trump:
            voids[seat] |= 1 << led
            if led == trump or not (rules.void_may_discard or (rules.undertrump_ban and trump_before)):
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

