"""Cards, suits and ranks in the notation used everywhere: rank letter then suit letter (``TH``).

Source: docs/rules.md, "Table and cards". Ranks high to low ``A K Q J T 9 8 7 6 5 4 3 2``; suits
``C D H S``. Card points for Game (docs/rules.md, "Scoring each deal" 4): A 4, K 3, Q 2, J 1, T 10.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum, IntEnum

from referee.rules.errors import quote


class Suit(Enum):
    """A suit; the value is its one-letter notation."""

    CLUBS = "C"
    DIAMONDS = "D"
    HEARTS = "H"
    SPADES = "S"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> Suit:
        """Parse a suit letter (``"H"``); raises ``ValueError`` naming the input if it is not one."""
        try:
            return _SUIT_BY_LETTER[text.strip().upper()]
        except (KeyError, AttributeError):
            raise ValueError(f"not a suit: {quote(text)} (expected one of C D H S)") from None


_SUIT_BY_LETTER = {s.value: s for s in Suit}


class Rank(IntEnum):
    """A rank; the integer value orders ranks (2 lowest, ace 14 highest)."""

    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13
    ACE = 14

    @property
    def letter(self) -> str:
        """The one-letter notation: ``A K Q J T 9 … 2``."""
        return _RANK_LETTERS[self]

    @property
    def game_points(self) -> int:
        """Card points counted for Game (docs/rules.md, Scoring 4): A 4, K 3, Q 2, J 1, T 10, else 0."""
        return GAME_POINTS[self]

    def __str__(self) -> str:
        return self.letter

    @classmethod
    def parse(cls, text: str) -> Rank:
        """Parse a rank letter (``"T"``; ``"10"`` is accepted too); raises ``ValueError`` if not one."""
        t = text.strip().upper()
        if t == "10":
            t = "T"
        try:
            return _RANK_BY_LETTER[t]
        except KeyError:
            raise ValueError(f"not a rank: {quote(text)} (expected one of A K Q J T 9 8 7 6 5 4 3 2)") from None


_RANK_LETTERS = {
    Rank.TWO: "2", Rank.THREE: "3", Rank.FOUR: "4", Rank.FIVE: "5", Rank.SIX: "6", Rank.SEVEN: "7",
    Rank.EIGHT: "8", Rank.NINE: "9", Rank.TEN: "T", Rank.JACK: "J", Rank.QUEEN: "Q", Rank.KING: "K",
    Rank.ACE: "A",
}
_RANK_BY_LETTER = {v: k for k, v in _RANK_LETTERS.items()}
#: Card points of each rank counted for Game (docs/rules.md, Scoring 4); ``Rank.game_points`` reads it.
GAME_POINTS: dict[Rank, int] = {r: {Rank.ACE: 4, Rank.KING: 3, Rank.QUEEN: 2, Rank.JACK: 1, Rank.TEN: 10}.get(r, 0)
                                for r in Rank}


@dataclass(frozen=True, slots=True, eq=False)
class Card:
    """One playing card. ``str(card)`` is its notation (``"TH"``); ``Card.parse("TH")`` reads it.

    There are exactly 52 instances (``Card.parse`` and ``Card.of`` return the shared one; copying
    and unpickling return it too), so equality is identity and cards compare and hash cheaply.
    """

    rank: Rank
    suit: Suit

    def __copy__(self) -> Card:
        return self

    def __deepcopy__(self, memo: object) -> Card:
        return self

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Card.parse, (str(self),))

    def __str__(self) -> str:
        return _RANK_LETTERS[self.rank] + self.suit.value

    def __repr__(self) -> str:
        return f"Card({self})"

    @staticmethod
    def of(rank: Rank, suit: Suit) -> Card:
        """The shared instance for ``rank`` of ``suit``."""
        return _CARD_BY_TEXT[_RANK_LETTERS[rank] + suit.value]

    @staticmethod
    def parse(text: str) -> Card:
        """Parse card notation (``"TH"``, ``"as"``, ``"10h"``).

        :raises ValueError: naming the input when it is not a card.
        """
        if not isinstance(text, str):
            raise ValueError(f"not a card: {quote(text)} (expected rank letter + suit letter, e.g. 'TH')")
        t = text.strip().upper()
        if t.startswith("10"):
            t = "T" + t[2:]
        card = _CARD_BY_TEXT.get(t)
        if card is None:
            raise ValueError(f"not a card: {quote(text)} (expected rank letter + suit letter, e.g. 'TH')")
        return card


_CARD_BY_TEXT: dict[str, Card] = {}
for _s in Suit:
    for _r in Rank:
        _c = Card(_r, _s)
        _CARD_BY_TEXT[_RANK_LETTERS[_r] + _s.value] = _c

#: The 52 cards in canonical order: clubs, diamonds, hearts, spades; each 2 up to A.
#: This is the starting order of the documented shuffle (``referee.dealing``).
CANONICAL_DECK: tuple[Card, ...] = tuple(Card.of(r, s) for s in Suit for r in Rank)


def parse_cards(texts: Iterable[str] | str) -> tuple[Card, ...]:
    """Parse several cards: an iterable of notations or one space-separated string.

    :raises ValueError: on the first bad card, naming it.
    """
    items = texts.split() if isinstance(texts, str) else list(texts)
    return tuple(Card.parse(t) for t in items)


def format_cards(cards: Iterable[Card]) -> str:
    """Cards as space-separated notation, e.g. ``"AS 2D 3H"``."""
    return " ".join(str(c) for c in cards)


def parse_deck(texts: Iterable[str]) -> tuple[Card, ...]:
    """Parse a full deck order (top first) and check it holds each of the 52 cards exactly once.

    :raises ValueError: naming the bad, missing or repeated cards.
    """
    deck = parse_cards(texts)
    if len(deck) != 52 or len(set(deck)) != 52:
        dup = sorted(str(c) for c, n in Counter(deck).items() if n > 1)
        missing = sorted(str(c) for c in CANONICAL_DECK if c not in set(deck))
        raise ValueError(
            f"a deck must hold each of the 52 cards once: got {len(deck)} cards; "
            f"repeated: {' '.join(dup) or 'none'}; missing: {' '.join(missing) or 'none'}"
        )
    return deck
