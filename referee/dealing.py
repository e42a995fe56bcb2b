"""Seeds to deck orders: the one documented, language-neutral shuffle, and commit-reveal.

Pure: no clock, no global randomness (live seeds come from :func:`fresh_seed`, which uses
``secrets``). The algorithm, so that anyone can re-derive every deck (docs/formats.md has the golden
vector):

1. A **match seed** is 32 bytes. Its **commitment** is ``SHA-256(seed)`` in lowercase hex,
   published before play; the seed is revealed after.
2. The **key of a deck** is ``HMAC-SHA256(seed, label)`` where ``label`` is ASCII
   ``"allfours/v1/deal"`` followed by the game number and the deal number (both 1-based) as 4-byte
   big-endian unsigned integers; the cut for the first dealer of a game uses label
   ``"allfours/v1/cut"`` + game number (4 bytes).
3. The key's **byte stream** is ``HMAC-SHA256(key, counter)`` for counter = 0, 1, 2, … as 8-byte
   big-endian, concatenated; it is read 4 bytes at a time as big-endian unsigned 32-bit integers.
4. **Fisher–Yates** on the canonical deck (clubs, diamonds, hearts, spades, each 2 up to A): for
   ``i`` from 51 down to 1, draw integers until one is below ``2**32 - (2**32 % (i + 1))``
   (rejection sampling: no modulo bias), let ``j`` be it modulo ``i + 1``, and swap positions
   ``i`` and ``j``. The result is the deck, top (index 0) first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator

from referee.rules.cards import CANONICAL_DECK, Card
from referee.rules.engine import cut_for_dealer

SEED_BYTES = 32
SHUFFLE_VERSION = "allfours/v1"


def fresh_seed() -> bytes:
    """A new 32-byte match seed from the operating system's CSPRNG (``secrets``)."""
    return secrets.token_bytes(SEED_BYTES)


def check_seed(seed: bytes) -> bytes:
    """Return ``seed`` if it is 32 bytes.

    :raises ValueError: naming the length otherwise.
    """
    if not isinstance(seed, bytes | bytearray) or len(seed) != SEED_BYTES:
        n = len(seed) if isinstance(seed, bytes | bytearray) else type(seed).__name__
        raise ValueError(f"a seed must be {SEED_BYTES} bytes, got {n}")
    return bytes(seed)


def parse_seed(text: str) -> bytes:
    """A seed from its 64-digit hex form. :raises ValueError: if it is not 64 hex digits."""
    try:
        return check_seed(bytes.fromhex(text.strip()))
    except ValueError as e:
        raise ValueError(f"a seed is 64 hex digits (32 bytes): {text!r}: {e}") from None


def commitment(seed: bytes) -> str:
    """The public commitment to ``seed``: SHA-256, lowercase hex (64 characters)."""
    return hashlib.sha256(check_seed(seed)).hexdigest()


def verify_commitment(seed: bytes, committed: str) -> bool:
    """True if ``seed`` hashes to the published ``committed`` hex digest."""
    return hmac.compare_digest(commitment(seed), committed.strip().lower())


def deal_key(seed: bytes, game: int, deal: int) -> bytes:
    """The key of the deck for deal number ``deal`` of game number ``game`` (both 1-based)."""
    if game < 1 or deal < 1:
        raise ValueError(f"game and deal numbers start at 1, got game {game}, deal {deal}")
    label = b"allfours/v1/deal" + game.to_bytes(4, "big") + deal.to_bytes(4, "big")
    return hmac.new(check_seed(seed), label, hashlib.sha256).digest()


def cut_key(seed: bytes, game: int) -> bytes:
    """The key of the deck used for the cut for the first dealer of game number ``game``."""
    if game < 1:
        raise ValueError(f"game numbers start at 1, got {game}")
    return hmac.new(check_seed(seed), b"allfours/v1/cut" + game.to_bytes(4, "big"), hashlib.sha256).digest()


def _words(key: bytes) -> Iterator[int]:
    counter = 0
    while True:
        block = hmac.new(key, counter.to_bytes(8, "big"), hashlib.sha256).digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(block[k:k + 4], "big")
        counter += 1


def shuffle(key: bytes) -> tuple[Card, ...]:
    """The deck order (top first) for ``key``: Fisher–Yates driven by the HMAC-SHA256 stream."""
    deck = list(CANONICAL_DECK)
    words = _words(key)
    for i in range(len(deck) - 1, 0, -1):
        bound = i + 1
        limit = 2**32 - (2**32 % bound)
        x = next(words)
        while x >= limit:
            x = next(words)
        j = x % bound
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def deck_for(seed: bytes, game: int, deal: int) -> tuple[Card, ...]:
    """The deck order of deal ``deal`` in game ``game`` (1-based) of the match with ``seed``."""
    return shuffle(deal_key(seed, game, deal))


def cut_deck(seed: bytes, game: int) -> tuple[Card, ...]:
    """The deck used for the cut for the first dealer of game ``game`` (docs/rules.md, Table)."""
    return shuffle(cut_key(seed, game))


def first_dealer_by_cut(seed: bytes, players: int) -> int:
    """The match's first dealer when none is given: the cut (docs/rules.md, Table) on game 1's cut deck.

    Later games continue to the right of the previous game's last dealer (docs/rules.md, Match).
    """
    return cut_for_dealer(cut_deck(seed, 1), players)
