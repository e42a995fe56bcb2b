"""HeuristicBot: a rule-based All Fours player that uses only its observation.

What it does (docs/rules.md terms):

- **Beg or stand**: begs when its trump holding is weak (few trumps, no honours), and always when
  the one the dealer may give would win the game for its side.
- **Give one or run** (as dealer): runs the pack when giving one would hand the opponents the game
  or when its own trumps are weak; gives one when it holds good trumps.
- **Leading**: pulls trumps from the top when it holds the master trump or is long in trumps
  (hunting the opponents' jack); cashes a plain card nothing unseen can beat; otherwise leads low
  from its longest plain suit, never a ten it could lose.
- **Following**: plays low and keeps its winners when its partner is winning the trick, and
  "smears" a ten or other counting card onto a trick its side has surely won; wins tricks that carry
  game points (tens!) or the jack with the cheapest card that cannot be beaten; otherwise discards
  low, keeping tens and the jack off the opponents' tricks.
- **The jack**: never risks its own jack of trumps where an unseen higher trump could capture it
  (hang jack), unless it must.
- **Call**: calls an opponent's exposed card when one may be called (forcing their hand).

Run it: ``python -m sdk.local sample_bots.heuristic:HeuristicBot sample_bots.random_bot:RandomBot``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from referee.rules import (
    BEG,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Call,
    Card,
    Observation,
    Phase,
    Play,
    Rank,
    Suit,
    trick_winner,
)
from sdk.bot import Bot, Context

#: Trump strength of one card for the beg/run decisions (honours count most; the jack is a point).
_TRUMP_WEIGHT = {Rank.ACE: 4.0, Rank.KING: 3.0, Rank.QUEEN: 2.5, Rank.JACK: 2.5, Rank.TEN: 1.5}
_PLAIN_TRUMP_WEIGHT = 1.0
#: Strength below which the player to the dealer's right begs.
BEG_BELOW = 5.0
#: Strength at or above which the dealer gives one rather than running the pack.
GIVE_AT = 5.0


def trump_strength(hand: Iterable[Card], trump: Suit | None) -> float:
    """A rough measure of a trump holding: honours weigh 1.5-4, other trumps 1 each."""
    return sum(_TRUMP_WEIGHT.get(c.rank, _PLAIN_TRUMP_WEIGHT) for c in hand if c.suit is trump)


class _Table:
    """Facts derived from one observation: seen cards, unseen higher cards, the trick's winner."""

    def __init__(self, obs: Observation) -> None:
        self.obs = obs
        self.trump = obs.trump
        self.n = obs.rules.players
        self.seat = obs.seat
        seen: set[Card] = set(obs.hand) | set(obs.kicks) | set(obs.trick)
        for t in obs.tricks:
            seen.update(t.cards)
        seen.update(c for _, c in obs.exposed)
        self.seen = seen
        self.unseen = {Card.of(r, s) for s in Suit for r in Rank} - seen

    def side(self, seat: int) -> int:
        return seat % 2

    def is_trump(self, c: Card) -> bool:
        return c.suit is self.trump

    @property
    def jack(self) -> Card | None:
        """The jack of trumps, or ``None`` without a trump."""
        return None if self.trump is None else Card.of(Rank.JACK, self.trump)

    def current_winner(self) -> int | None:
        """The seat winning the trick in progress so far (``None`` when nothing is played)."""
        t = self.obs.trick
        return trick_winner(self.obs.trick_leader, t, self.trump, self.n) if t else None

    def beats(self, card: Card, best: Card, led: Suit) -> bool:
        """Whether ``card`` played now beats the trick's current best card ``best`` (led suit ``led``)."""
        if card.suit is best.suit:
            return card.rank > best.rank
        return self.is_trump(card)  # a trump beats a plain card; an off-suit plain card never wins

    def best_card(self) -> Card:
        t = self.obs.trick
        return t[(self.current_winner() - self.obs.trick_leader) % self.n]  # type: ignore[operator]

    def players_after_me(self) -> int:
        """How many seats play to this trick after this one."""
        return self.n - len(self.obs.trick) - 1

    def could_be_beaten(self, card: Card, led: Suit) -> bool:
        """Whether some unseen card could beat ``card`` in a trick where ``led`` was led."""
        for u in self.unseen:
            if u.suit is card.suit and u.rank > card.rank:
                return True
            if self.is_trump(u) and not self.is_trump(card):
                return True
        return False

    def trick_points(self) -> int:
        return sum(c.rank.game_points for c in self.obs.trick)


def _discard_key(t: _Table, c: Card) -> tuple[int, int, int, int]:
    """Sort key for throwing a card away: keep the jack, trumps, tens and honours; lowest first."""
    return (int(c == t.jack), int(t.is_trump(c)), c.rank.game_points, int(c.rank))


class HeuristicBot(Bot):
    """A sensible rule-based player (see the module docstring). Uses only ``ctx.observation``."""

    name = "heuristic"
    version = "1"

    def act(self, ctx: Context) -> Action:
        """Choose stand/beg, give/run, a call, or a card as described in the module docstring."""
        obs = ctx.observation
        legal = ctx.legal
        target = obs.rules.target
        mine, theirs = obs.scores[ctx.side], obs.scores[1 - ctx.side]
        if obs.phase is Phase.BEG:
            if mine + 1 >= target:
                return BEG  # a one given wins the game; a run costs nothing we hold
            return BEG if trump_strength(obs.hand, obs.trump) < BEG_BELOW else STAND
        if obs.phase is Phase.DEALER:
            if theirs + 1 >= target:
                return RUN_PACK  # giving one would lose the game at once
            return GIVE_ONE if trump_strength(obs.hand, obs.trump) >= GIVE_AT else RUN_PACK
        if obs.phase is Phase.CALL:
            calls = [a for a in legal if isinstance(a, Call)]
            if calls:
                t = _Table(obs)
                # Force out the most valuable exposed card (a ten or the jack is what we want to take).
                return max(calls, key=lambda a: (a.card == t.jack, a.card.rank.game_points, a.card.rank))
            return PASS
        cards = [a.card for a in legal if isinstance(a, Play)]
        if len(cards) == 1:
            return Play(cards[0])
        t = _Table(obs)
        card = self._lead(t, cards) if not obs.trick else self._follow(t, cards)
        return Play(card)

    # ----------------------------------------------------------------------------------- leading

    def _lead(self, t: _Table, cards: Sequence[Card]) -> Card:
        trumps = sorted((c for c in cards if t.is_trump(c)), key=lambda c: c.rank, reverse=True)
        plain = [c for c in cards if not t.is_trump(c)]
        unseen_trumps = [u for u in t.unseen if t.is_trump(u)]
        # A master trump (no unseen trump above it) pulls the opponents' trumps and hunts their jack.
        if trumps and unseen_trumps:
            top = trumps[0]
            master = all(u.rank < top.rank for u in unseen_trumps)
            jack_out = t.jack in t.unseen
            if master and (top != t.jack or not jack_out):
                return top
            # Long in trumps: lead a low trump to draw theirs, keeping the honours (and our jack).
            if len(trumps) >= 3 and len(trumps) * t.n > len(unseen_trumps) + len(trumps):
                low = [c for c in trumps if c != t.jack and c.rank < Rank.TEN]
                if low:
                    return low[-1]
        # Cash a plain-suit card no unseen card can beat (needs no trumps left unseen, or an ace).
        masters = [c for c in plain if not t.could_be_beaten(c, c.suit)]
        if masters:
            return max(masters, key=lambda c: (c.rank.game_points, c.rank))
        if plain:
            # Low from the longest plain suit, never a ten or honour if something smaller will do.
            by_suit: dict[Suit, list[Card]] = {}
            for c in plain:
                by_suit.setdefault(c.suit, []).append(c)
            safe = [c for c in plain if c.rank.game_points == 0]
            pool = safe or plain
            longest = max(len(by_suit[c.suit]) for c in pool)
            return min((c for c in pool if len(by_suit[c.suit]) == longest), key=lambda c: (c.rank,))
        # Only trumps: lead the lowest that is not the jack, else the jack.
        non_jack = [c for c in trumps if c != t.jack]
        return non_jack[-1] if non_jack else trumps[-1]

    # --------------------------------------------------------------------------------- following

    def _follow(self, t: _Table, cards: Sequence[Card]) -> Card:
        obs = t.obs
        led = obs.trick[0].suit
        winner = t.current_winner()
        assert winner is not None
        best = t.best_card()
        last = t.players_after_me() == 0
        partner_winning = t.side(winner) == t.side(t.seat)
        winners = [c for c in cards if t.beats(c, best, led)]
        if partner_winning:
            secure = last or not t.could_be_beaten(best, led)
            if secure:
                # Our side takes this trick: give it our counting cards (jack first, then a ten).
                return max(cards, key=lambda c: (c == t.jack, c.rank.game_points, -int(t.is_trump(c)),
                                                 -int(c.rank)))
            return min(cards, key=lambda c: _discard_key(t, c))
        # An opponent is winning: take it if it is worth it and we can hold it.
        worth = t.trick_points() + max((c.rank.game_points for c in cards), default=0)
        jack_in_trick = t.jack is not None and t.jack in obs.trick
        if winners:
            safe = [c for c in winners if last or not t.could_be_beaten(c, led)]
            safe_no_jack = [c for c in safe if c != t.jack] or ([] if not last else safe)
            if safe_no_jack and (worth > 0 or jack_in_trick or last):
                # Cheapest safe winner: plain before trump, then lowest rank (keep the big trumps).
                return min(safe_no_jack, key=lambda c: (int(t.is_trump(c)), c.rank.game_points == 10, c.rank))
            if jack_in_trick or t.trick_points() >= 10:
                # A valuable trick: try the highest winner (not our jack) and hope it holds.
                tries = [c for c in winners if c != t.jack]
                if tries:
                    return max(tries, key=lambda c: (int(t.is_trump(c)), c.rank))
        return min(cards, key=lambda c: _discard_key(t, c))
