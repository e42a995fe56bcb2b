"""The search's fast representation of a deal in play: the one module with speed tricks.

Everything the search does thousands of times a decision lives here, on plain integers instead of the
engine's frozen values (``referee.rules``), which are built for clarity and validation:

- a **card** is an ``int`` ``suit * 13 + rank - 2`` (suits in ``Suit`` order C D H S, so ``0`` is 2C and
  ``51`` AS); within a suit a higher number is a higher rank;
- a **hand** is a bit mask of its cards (bit ``card`` set);
- a :class:`Position` is the rest of one deal with every hand known (a determinization): hands, the
  trick in progress, the trump, the card points each side has taken and who took the trump jack;
- :class:`DealValue` turns a finished deal (who won Game, who took the jack) into the value of the
  match for one side (docs/rules.md, Scoring: High, Low, Jack or Hang Jack, Game, counted in order and
  stopping at the target), through :func:`win_probability`;
- :func:`solve` is an alpha-beta search of the rest of the deal (double dummy: every hand open) with a
  transposition table at trick boundaries, equal cards merged and a node budget;
- :func:`playout` finishes a deal with a simple open-handed policy, the cheap evaluation used where
  the deal is too large to solve (before play: beg, give one, run the pack).

``tests/test_search_bot.py`` checks with hypothesis that :func:`legal_mask`, :func:`trick_winner_index`
and the points counted at the end agree with the engine on random positions;
``benchmarks/search_solver.py`` measures positions solved per second against the engine's own speed.
No trick here leaks into ``referee/``: the engine stays the referee's single source of truth, and
the bot checks every action it returns against ``ctx.legal``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from referee.rules import Card, Phase, RuleSet, State, Suit

#: The four suits in card-number order (C D H S), as ``CANONICAL_DECK`` orders them.
SUITS: tuple[Suit, ...] = tuple(Suit)
SUIT_INDEX: dict[Suit, int] = {s: i for i, s in enumerate(SUITS)}
#: Bit mask of each suit's 13 cards.
SUIT_MASK: tuple[int, ...] = tuple(0x1FFF << (13 * s) for s in range(4))
#: Card points for Game of each card number (docs/rules.md, Scoring 4): A 4, K 3, Q 2, J 1, T 10.
POINTS: tuple[int, ...] = tuple((0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3, 4)[c % 13] for c in range(52))
JACK_OFFSET = 9  # the jack's number within its suit (rank 11 - 2)
ALL_CARDS = (1 << 52) - 1


def card_id(card: Card) -> int:
    """The card's number: ``suit * 13 + rank - 2``."""
    return SUIT_INDEX[card.suit] * 13 + int(card.rank) - 2


def mask_of(cards: object) -> int:
    """The bit mask of an iterable of engine cards."""
    m = 0
    for c in cards:  # type: ignore[attr-defined]
        m |= 1 << card_id(c)
    return m


def cards_in(mask: int) -> list[int]:
    """The card numbers set in ``mask``, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def legal_mask(hand: int, trick: list[int], trump: int, undertrump_ban: bool, void_may_discard: bool) -> int:
    """The cards of ``hand`` that may be played to ``trick`` (docs/rules.md, Play), as a mask.

    The same rules as ``referee.rules.legal_cards`` (the property test holds them equal): any card to
    lead; trump led: a trump if able; another suit led: follow or trump, void in it holding a trump:
    trump (unless ``void_may_discard``); with ``undertrump_ban``, overtrump if able, else no trump.
    """
    if not trick:
        return hand
    led = trick[0] // 13
    tr = hand & SUIT_MASK[trump]
    if led == trump:
        return tr or hand
    follow = hand & SUIT_MASK[led]
    if follow:
        return follow | tr
    if not tr:
        return hand
    if undertrump_ban and tr != hand:
        top = -1
        for c in trick:
            if c // 13 == trump and c > top:
                top = c
        if top >= 0:
            over = tr & ~((1 << (top + 1)) - 1)
            if void_may_discard or not over:
                return (hand & ~tr) | over
            return over
    return hand if void_may_discard else tr


def trick_winner_index(trick: list[int], trump: int) -> int:
    """The index in ``trick`` (play order) of the winning card: highest trump, else highest of the led suit."""
    best = trick[0]
    at = 0
    for i in range(1, len(trick)):
        c = trick[i]
        if c // 13 == best // 13:
            if c > best:
                best, at = c, i
        elif c // 13 == trump:
            best, at = c, i
    return at


# --------------------------------------------------------------------------- valuing an outcome


@lru_cache(maxsize=4096)
def win_probability(mine: int, theirs: int) -> float:
    """The chance that a side needing ``mine`` points wins a race against one needing ``theirs``.

    A model, not a measurement: every point of the game goes to either side with chance 1/2, so
    this is the chance of ``mine`` heads before ``theirs`` tails (a negative binomial race). It
    weighs points by how close each side is to the target: at 13-13 a point decides the game, at
    0-0 it moves the chance by a few hundredths. 1.0 when ``mine <= 0``, 0.0 when ``theirs <= 0``.
    """
    if mine <= 0:
        return 1.0
    if theirs <= 0:
        return 0.0
    return sum(math.comb(mine - 1 + k, k) * 0.5 ** (mine + k) for k in range(theirs))


@dataclass(frozen=True, slots=True)
class DealValue:
    """What the rest of a deal is worth to side ``side``, by how it ends.

    - ``scores``: points per side now (the match score of this game); ``target``;
    - ``high_side``, ``low_side``: the sides dealt the highest and lowest trump (``-1``: no trump in
      play); ``jack_side``: the side dealt the trump jack (``-1``: not in play); ``hanged_jack``: what
      the jack scores taken by the side not dealt it (:func:`hanged_jack_points`);
    - ``table[game][jack]``: the value (win probability of ``side`` after the count) when ``game``
      is the side that scores Game (``2``: a tie) and ``jack`` the side that took the jack (``2``:
      the jack was not in play). The count follows docs/rules.md, Scoring 1-4 in order and stops at
      the target.
    """

    side: int
    scores: tuple[int, int]
    target: int
    high_side: int
    low_side: int
    jack_side: int
    hanged_jack: int
    table: tuple[tuple[float, ...], ...] = field(default=((),))

    @staticmethod
    def build(side: int, scores: tuple[int, int], target: int, high_side: int, low_side: int,
              jack_side: int, hanged_jack: int) -> DealValue:
        """The value with its ``table`` filled in."""
        table = tuple(tuple(_count_value(side, scores, target, [
            (high_side, 1), (low_side, 1),
            (jack, hanged_jack if jack != jack_side else 1) if jack < 2 else (-1, 0),
            (game, 1) if game < 2 else (-1, 0)]) for jack in range(3)) for game in range(3))
        return DealValue(side, scores, target, high_side, low_side, jack_side, hanged_jack, table)


def hanged_jack_points(rules: RuleSet) -> int:
    """What the trump jack scores when the side not dealt it takes it: ``rules.hang_jack_points`` (3 by
    default) with Hang Jack on, else 1 like any jack (docs/rules.md, Scoring)."""
    return rules.hang_jack_points if rules.hang_jack else 1


def _count_value(side: int, scores: tuple[int, int], target: int, awards: list[tuple[int, int]]) -> float:
    """Score ``awards`` (side, points) in order, stopping at the target; the win probability of ``side``."""
    s = [scores[0], scores[1]]
    for who, value in awards:
        if who < 0:
            continue
        s[who] += value
        if s[who] >= target:
            return 1.0 if who == side else 0.0
    return win_probability(target - s[side], target - s[1 - side])


# --------------------------------------------------------------------------- a deal in play


@dataclass(slots=True)
class Undo:
    """What a completed trick changed: the old ``leader``, the ``side`` that took ``points``, the old
    ``jack_taker`` and the completed ``trick`` (its list, restored as the trick in progress)."""

    leader: int
    side: int
    points: int
    jack_taker: int
    trick: list[int]


@dataclass(slots=True)
class Position:
    """The rest of one deal with every hand open, in play (mutable: the search plays and unplays).

    - ``players`` (2 or 4); ``trump`` (suit number); ``hands``: one card mask per seat;
    - ``leader``: the seat that led the trick in progress; ``trick``: its cards in play order;
    - ``taken``: card points for Game taken so far per side; ``jack_taker``: the side that took the
      trump jack in a trick (``-1``: not yet); ``total``: card points of every card dealt this deal
      (so a side past half has Game);
    - ``undertrump_ban``, ``void_may_discard``: the rule options that change legality.
    """

    players: int
    trump: int
    hands: list[int]
    leader: int
    trick: list[int]
    taken: list[int]
    jack_taker: int
    total: int
    undertrump_ban: bool = False
    void_may_discard: bool = False

    @property
    def to_act(self) -> int:
        """The seat to play next."""
        return (self.leader + len(self.trick)) % self.players

    def legal(self) -> int:
        """The mask of cards the seat to act may play."""
        return legal_mask(self.hands[self.to_act], self.trick, self.trump, self.undertrump_ban,
                          self.void_may_discard)

    def copy(self) -> Position:
        """An independent copy."""
        return Position(self.players, self.trump, list(self.hands), self.leader, list(self.trick),
                        list(self.taken), self.jack_taker, self.total, self.undertrump_ban, self.void_may_discard)

    def play(self, card: int) -> Undo | None:
        """Play ``card`` for the seat to act; returns what :meth:`unplay` needs when it ends a trick.

        The card must be legal (not checked: the search only plays cards from :meth:`legal`).
        """
        seat = (self.leader + len(self.trick)) % self.players
        self.hands[seat] ^= 1 << card
        trick = self.trick
        trick.append(card)
        if len(trick) < self.players:
            return None
        winner = (self.leader + trick_winner_index(trick, self.trump)) % self.players
        side = winner & 1
        pts = 0
        jack = self.trump * 13 + JACK_OFFSET
        undo = Undo(self.leader, side, 0, self.jack_taker, trick)
        for c in trick:
            pts += POINTS[c]
            if c == jack:
                self.jack_taker = side
        undo.points = pts
        self.taken[side] += pts
        self.leader = winner
        self.trick = []
        return undo

    def unplay(self, card: int, undo: Undo | None) -> None:
        """Take back the last :meth:`play` of ``card``; ``undo`` is what that play returned."""
        if undo is not None:
            self.leader = undo.leader
            self.taken[undo.side] -= undo.points
            self.jack_taker = undo.jack_taker
            self.trick = undo.trick
        self.trick.pop()
        seat = (self.leader + len(self.trick)) % self.players
        self.hands[seat] |= 1 << card

    def game_side(self) -> int:
        """The side with more card points taken (``2`` on a tie): who scores Game when play is over."""
        a, b = self.taken
        return 0 if a > b else 1 if b > a else 2


def dealt_facts(dealt: list[int], trump: int) -> tuple[int, int, int, int]:
    """``(high_side, low_side, jack_side, total)`` of a deal from the cards dealt to each seat.

    High and Low go to the sides dealt the highest and lowest trump, the jack is its holder's side
    (``-1`` when no such card was dealt), ``total`` is the card points of every dealt card.
    """
    tmask = SUIT_MASK[trump]
    high = low = -1
    hi_card, lo_card = -1, 99
    jack_side = -1
    total = 0
    jack = trump * 13 + JACK_OFFSET
    for seat, m in enumerate(dealt):
        for c in cards_in(m):
            total += POINTS[c]
        t = m & tmask
        if t:
            top = t.bit_length() - 1
            bottom = (t & -t).bit_length() - 1
            if top > hi_card:
                hi_card, high = top, seat & 1
            if bottom < lo_card:
                lo_card, low = bottom, seat & 1
            if t >> jack & 1:
                jack_side = seat & 1
    return high, low, jack_side, total


# --------------------------------------------------------------------------- the search


class Budget:
    """A count of search nodes left; the search stops early (:class:`OutOfNodes`) when it runs out."""

    __slots__ = ("left", "used")

    def __init__(self, nodes: int) -> None:
        self.left = nodes
        self.used = 0


class OutOfNodes(Exception):
    """The node budget ran out in the middle of a search."""


def distinct_moves(pos: Position, legal: int) -> list[int]:
    """The legal cards with equal cards merged, in a good order for alpha-beta.

    Two cards of one suit in the same hand with no card points and no live card (in a hand or the
    trick) between them win and lose the same tricks, so only the lowest is searched. Order: when
    following, the cheapest card that takes the trick first, then the rest low to high; when
    leading, high to low.
    """
    live = 0
    for h in pos.hands:
        live |= h
    for c in pos.trick:
        live |= 1 << c
    moves = []
    prev = -1
    for c in cards_in(legal):
        if (prev >= 0 and prev // 13 == c // 13 and not POINTS[c] and not POINTS[prev]
                and not live & (((1 << c) - 1) & ~((1 << (prev + 1)) - 1))):
            prev = c  # equal to the card kept below it
            continue
        moves.append(c)
        prev = c
    if not pos.trick:
        moves.reverse()
        return moves
    trick = pos.trick
    best = trick[trick_winner_index(trick, pos.trump)]
    trump = pos.trump
    winners = [c for c in moves if (c // 13 == best // 13 and c > best) or (c // 13 == trump != best // 13)]
    if not winners:
        return moves
    return winners + [c for c in moves if c not in winners]


def solve(pos: Position, value: DealValue, budget: Budget, alpha: float = -1.0, beta: float = 2.0,
          table: dict[tuple[int, ...], tuple[float, float]] | None = None) -> float:
    """The value to ``value.side`` of ``pos`` with best play by every seat, every hand open.

    Alpha-beta (``value.side`` maximises, the other side minimises) over the rest of the deal, with a
    transposition table at trick boundaries (``table``, shared between calls on the same deal).
    Stops early with the value fixed as soon as Game and the jack are both decided.

    :raises OutOfNodes: when ``budget`` runs out (the caller treats the sample as unsolved).
    """
    if table is None:
        table = {}
    return _search(pos, value, budget, alpha, beta, table)


def _outcome_bounds(pos: Position, value: DealValue) -> tuple[float, float]:
    """The least and greatest value the deal can still end with, from what is decided already."""
    half = pos.total / 2
    a, b = pos.taken
    if a + b == pos.total:  # every card point taken: Game is settled, a tie included
        games: tuple[int, ...] = (pos.game_side(),)
    else:
        games = (0,) if a > half else (1,) if b > half else (0, 1, 2)
    if value.jack_side < 0:
        jacks: tuple[int, ...] = (2,)
    elif pos.jack_taker >= 0:
        jacks = (pos.jack_taker,)
    else:
        jacks = (0, 1)
    vals = [value.table[g][j] for g in games for j in jacks]
    return min(vals), max(vals)


def _search(pos: Position, value: DealValue, budget: Budget, alpha: float, beta: float,
            table: dict[tuple[int, ...], tuple[float, float]]) -> float:
    budget.used += 1
    budget.left -= 1
    if budget.left < 0:
        raise OutOfNodes
    lo, hi = _outcome_bounds(pos, value)
    if lo == hi or hi <= alpha or lo >= beta:
        return lo if lo >= beta or lo == hi else hi
    key: tuple[int, ...] | None = None
    if not pos.trick:
        key = (*pos.hands, pos.leader, pos.taken[0], pos.jack_taker)
        known = table.get(key)
        if known is not None:
            klo, khi = known
            if klo >= beta:
                return klo
            if khi <= alpha:
                return khi
            if klo == khi:
                return klo
            alpha, beta = max(alpha, klo), min(beta, khi)
            lo, hi = max(lo, klo), min(hi, khi)
    legal = pos.legal()
    if not legal:  # every card played
        return end_value(pos, value)
    a0, b0 = alpha, beta
    maximise = (pos.to_act & 1) == value.side
    best = -1.0 if maximise else 2.0
    for card in distinct_moves(pos, legal):
        undo = pos.play(card)
        v = _search(pos, value, budget, alpha, beta, table)
        pos.unplay(card, undo)
        if maximise:
            if v > best:
                best = v
                if v > alpha:
                    alpha = v
        elif v < best:
            best = v
            if v < beta:
                beta = v
        if alpha >= beta:
            break
    if key is not None:
        old_lo, old_hi = table.get(key, (-1.0, 2.0))
        if best <= a0:
            table[key] = (old_lo, min(old_hi, best))
        elif best >= b0:
            table[key] = (max(old_lo, best), old_hi)
        else:
            table[key] = (best, best)
    return best


def end_value(pos: Position, value: DealValue) -> float:
    """The value of a finished deal (every hand empty)."""
    j = 2 if value.jack_side < 0 else pos.jack_taker
    return value.table[pos.game_side()][j if j >= 0 else 2]


# --------------------------------------------------------------------------- a cheap playout


def playout_card(pos: Position, legal: int) -> int:
    """A simple open-handed choice: take a trick worth taking with the cheapest winner, smear points
    on a partner's trick, else throw the cheapest card; lead the top trump or the lowest plain card."""
    moves = cards_in(legal)
    if len(moves) == 1:
        return moves[0]
    trump = pos.trump
    jack = trump * 13 + JACK_OFFSET
    if not pos.trick:
        trumps = [c for c in moves if c // 13 == trump]
        if trumps and trumps[-1] != jack:
            top_out = 0
            for h in pos.hands:
                top_out |= h & SUIT_MASK[trump]
            if top_out.bit_length() - 1 == trumps[-1]:
                return trumps[-1]
        plain = [c for c in moves if c // 13 != trump and not POINTS[c]]
        return min(plain or moves, key=lambda c: (c == jack, c // 13 == trump, POINTS[c], c % 13))
    trick = pos.trick
    at = trick_winner_index(trick, trump)
    best = trick[at]
    last = len(trick) == pos.players - 1
    partner_winning = (at - len(trick)) % 2 == 0
    if partner_winning and last:
        return max(moves, key=lambda c: (POINTS[c] if c // 13 != trump or c == jack else -1, -(c % 13)))
    worth = sum(POINTS[c] for c in trick)
    if not partner_winning:
        winners = [c for c in moves if (c // 13 == best // 13 and c > best) or (c // 13 == trump != best // 13)]
        if winners and (worth or last or jack in trick):
            return min(winners, key=lambda c: (c // 13 == trump, c == jack, c % 13))
    return min(moves, key=lambda c: (c == jack, c // 13 == trump, POINTS[c], c % 13))


def playout(pos: Position, value: DealValue, budget: Budget) -> float:
    """Finish the deal from ``pos`` (changed in place) with :func:`playout_card` for every seat; its value.

    Each card played costs one node of ``budget`` (never stops early: a playout is short).
    """
    n = 0
    while any(pos.hands):
        pos.play(playout_card(pos, pos.legal()))
        n += 1
    budget.used += n
    budget.left -= n
    return end_value(pos, value)


def rules_flags(rules: RuleSet) -> tuple[bool, bool]:
    """``(undertrump_ban, void_may_discard)`` of ``rules``."""
    return rules.undertrump_ban, rules.void_may_discard


def position_of_state(state: State) -> tuple[Position, list[int]]:
    """The engine's ``state`` (phase PLAY, every hand known) as a :class:`Position`, and the cards
    dealt to each seat this deal (for :func:`dealt_facts`). For tests and benchmarks: a bot sees an
    ``Observation``, not a ``State``.

    :raises ValueError: outside phase PLAY.
    """
    if state.phase is not Phase.PLAY or state.trump is None:
        raise ValueError(f"a position needs a deal in play (phase play), not phase {state.phase.value}")
    record = state.deals[-1]
    trump = SUIT_INDEX[state.trump]
    n = state.players
    taken = [0, 0]
    jack_taker = -1
    jack = trump * 13 + JACK_OFFSET
    for t in record.tricks:
        cards = [card_id(c) for c in t.cards]
        side = (t.leader + trick_winner_index(cards, trump)) % n & 1
        taken[side] += sum(POINTS[c] for c in cards)
        if jack in cards:
            jack_taker = side
    dealt = [mask_of(h) for h in record.hands]
    total = sum(POINTS[c] for m in dealt for c in cards_in(m))
    ub, vmd = rules_flags(state.rules)
    pos = Position(n, trump, [mask_of(h) for h in state.hands], state.trick_leader,
                   [card_id(c) for c in state.trick], taken, jack_taker, total, ub, vmd)
    return pos, dealt
