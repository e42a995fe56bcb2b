"""The scripted matches of the conformance suite: who deals, which decks, what the house seats do,
and which protocol situation the scripted referee stages (a rejection, a re-sent request, unknown
messages, a dropped stream).

A :class:`Scenario` is pure data. Every deck is explicit: either stacked here for the situation the
check needs (a kicked jack that ends the game, three kicks of one suit that make the pack run dry, a
trump in the hand of the house seat that exposes one), or, for deals that need nothing special, the
documented shuffle ``referee.dealing.shuffle`` of a fixed key. So the same bot gets the same decks
in every run, in every language.

The bot under test holds one seat; the scripted referee plays the others (the *house*): it begs
whenever it may (so the bot faces the dealer's choice when it deals), gives one or runs the pack as
the scenario says, plays the first legal card and passes when asked to call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from referee.dealing import shuffle
from referee.rules import Card, Phase, RuleSet, Suit, deal, new_game

#: Ranks whose kick scores nothing (docs/rules.md, The deal 2: ace 1, six 2, jack 3).
_QUIET_RANKS = "2345"


@dataclass(frozen=True, slots=True)
class House:
    """How the scripted referee plays the seats the bot does not hold (docs/rules.md, The deal and Play).

    - ``run_pack``: a house dealer runs the pack after a beg (else it gives one).
    - ``expose_trump``: right after deal 1 of game 1 the first house opponent of the bot plays a
      trump out of turn (docs/rules.md, Penalty: the call), so the bot is asked to call or pass when that
      seat is next to play (a trump is always a legal play under the default rules).
    A house seat always begs, plays the first legal card and passes when asked to call.
    """

    run_pack: bool = False
    expose_trump: bool = False


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scripted match.

    - ``name``: the scenario's name (checks refer to it); ``players``, ``bot_seat``, ``first_dealer``.
    - ``rules``: the rule options (``players`` included); ``games``: games in the match.
    - ``decks``: explicit decks by ``(game, deal)`` (1-based); any other deal uses
      ``shuffle(sha256(name/game/deal))``.
    - ``decision_ms``: the per-decision limit sent in Welcome and enforced (ms).
    - ``reject_at``, ``resend_at``, ``unknown_at``, ``drop_at``: the bot's k-th request (1-based;
      0 = never) at which the referee rejects the first (legal) answer, re-sends the request after
      it was answered, sends unknown messages and an unknown event kind first, or drops the stream
      right after sending it.
    """

    name: str
    players: int
    bot_seat: int
    first_dealer: int
    rules: RuleSet
    games: int = 1
    decks: Mapping[tuple[int, int], tuple[Card, ...]] = field(default_factory=dict)
    house: House = House()
    decision_ms: int = 3000
    reject_at: int = 0
    resend_at: int = 0
    unknown_at: int = 0
    drop_at: int = 0

    def deck(self, game: int, deal_no: int) -> tuple[Card, ...]:
        """The deck of deal ``deal_no`` of game ``game`` (top first)."""
        stacked = self.decks.get((game, deal_no))
        return stacked if stacked is not None else plain_deck(f"{self.name}/{game}/{deal_no}")


def plain_deck(label: str) -> tuple[Card, ...]:
    """The documented shuffle (``referee.dealing.shuffle``) keyed by SHA-256 of ``label``."""
    return shuffle(hashlib.sha256(f"allfours-conformance/{label}".encode()).digest())


def with_cards(deck: tuple[Card, ...], placed: Mapping[int, Card]) -> tuple[Card, ...]:
    """``deck`` with each card of ``placed`` moved to its position (by swapping), others kept in order."""
    cards = list(deck)
    for pos, card in placed.items():
        j = cards.index(card)
        cards[pos], cards[j] = cards[j], cards[pos]
    assert all(cards[p] == c for p, c in placed.items()), "two placements collide"
    return tuple(cards)


def kick_positions(players: int, runs: int) -> list[int]:
    """Deck positions of the first kick and of the kick of each run of the pack (docs/rules.md, The deal):
    6 cards each then the kick; each run 3 more each then a new kick."""
    first = 6 * players
    return [first + k * (3 * players + 1) for k in range(runs + 1)]


def _card(text: str) -> Card:
    return Card.parse(text)


def dry_deck(label: str, players: int) -> tuple[Card, ...]:
    """A deck whose kick and every possible run's kick are hearts that score nothing, so that a dealer
    who runs the pack runs it dry (docs/rules.md, The deal 4)."""
    runs = (52 - 6 * players - 1) // (3 * players + 1)
    kicks = [_card(r + "H") for r in _QUIET_RANKS[: runs + 1]]
    return with_cards(plain_deck(label), dict(zip(kick_positions(players, runs), kicks, strict=True)))


def kick_deck(label: str, players: int, rank: str) -> tuple[Card, ...]:
    """A deck whose first kick is ``rank`` of spades (e.g. ``"J"``: 3 points to the dealer's side)."""
    return with_cards(plain_deck(label), {kick_positions(players, 0)[0]: _card(rank + "S")})


def quiet_deck(label: str, players: int) -> tuple[Card, ...]:
    """A deck whose first kick scores nothing."""
    return with_cards(plain_deck(label), {kick_positions(players, 0)[0]: _card("2C")})


def trump_for(label: str, rules: RuleSet, dealer: int, seat: int) -> tuple[Card, ...]:
    """A quiet deck in which ``seat`` holds at least one trump (the kick's suit) after the deal."""
    for attempt in range(200):
        deck = quiet_deck(f"{label}/{attempt}", rules.players)
        state = deal(new_game(rules, dealer), deck)
        trump: Suit | None = state.trump
        if state.phase is Phase.BEG and any(c.suit is trump for c in state.hands[seat]):
            return deck
    raise AssertionError(f"no deck found for {label}")  # pragma: no cover - 200 shuffles always find one


#: A rule option's value (a :class:`RuleSet` field's): a whole number, true/false or text.
RuleValue: TypeAlias = int | bool | str
#: Rule options by :class:`RuleSet` field name, e.g. ``{"deal_in": "ones"}`` (every other at its default).
RuleOptions: TypeAlias = Mapping[str, RuleValue]


def _rules(base: RuleOptions, **override: RuleValue) -> RuleSet:
    return RuleSet.from_dict({**base, **override})


#: The rule options each ``rules-…`` check sets (every other option at its default).
RULE_OPTIONS: dict[str, RuleOptions] = {
    "rules-deal-in-ones": {"deal_in": "ones"},
    "rules-target-21": {"target": 21},
    "rules-hang-jack-off": {"hang_jack": False},
    "rules-undertrump-ban": {"undertrump_ban": True},
    "rules-void-may-discard": {"void_may_discard": True},
}


def build_scenarios(players: int = 4, rules: RuleOptions | None = None) -> dict[str, Scenario]:
    """Every scenario by name. ``players`` (2 or 4) and ``rules`` (rule options by name, e.g.
    ``{"deal_in": "ones"}``) set the general scenarios; the ``players-2``/``players-4``, kick and
    ``rules-…`` scenarios set what they test.

    Seats: the general scenarios put the bot at seat 0 or 1; ``players-4`` at seat 3 (so a bot that
    indexes a two-entry list by seat fails there) and ``players-2`` at seat 1.
    """
    base: dict[str, RuleValue] = {**(rules or {}), "players": players}
    n = players
    general = _rules(base)
    basic = Scenario("basic", n, 0, n - 1, general, decision_ms=2000)
    phases_dealer = n - 1  # the bot (seat 0) is to the dealer's right: it stands or begs first
    out = [
        basic,
        Scenario("phases", n, 0, phases_dealer, general, house=House(expose_trump=True),
                 decks={(1, 1): trump_for("phases", general, phases_dealer, 1)}),
        replace(basic, name="retry", decision_ms=3000, reject_at=1),
        replace(basic, name="resend", decision_ms=3000, resend_at=2, bot_seat=1, first_dealer=0),
        replace(basic, name="unknown-messages", decision_ms=3000, unknown_at=2),
        replace(basic, name="resume", decision_ms=3000, drop_at=2, bot_seat=1),
        replace(basic, name="multi-game", decision_ms=3000, games=2, bot_seat=1),
    ]
    kick_rules = _rules(base, target=3)
    out.append(Scenario("kick-ends-game", n, 0, 1, kick_rules, games=2,
                        decks={(1, 1): kick_deck("kick/1", n, "J"), (2, 1): quiet_deck("kick/2", n)}))
    if n == 4:
        # Dealer 1 and the beggar 2 are house seats: the dealer runs the pack until it runs dry.
        out.append(Scenario("pack-runs-dry", 4, 0, 1, general, house=House(run_pack=True),
                            decks={(1, 1): dry_deck("dry", 4)}))
    out.append(Scenario("players-2", 2, 1, 0, _rules(base, players=2)))
    out.append(Scenario("players-4", 4, 3, 2, _rules(base, players=4)))
    for name, opts in RULE_OPTIONS.items():
        out.append(Scenario(name, n, 1, 0, _rules(base, **opts)))
    return {s.name: s for s in out}
