"""Stack a deck for a test: name each seat's hand and the kick, get the 52-card order (top first).

Written from docs/rules.md, The deal: cards go out from the dealer's right, in packets of three or one
at a time, 6 each, then the kick; each run of the pack gives 3 more each, then a new kick. Seats
not named get unused cards (in canonical order) so a test only names what matters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SUITS = "CDHS"
RANKS = "23456789TJQKA"
CANONICAL = [r + s for s in SUITS for r in RANKS]


def stack(hands: Mapping[int, str], kick: str, *, players: int = 4, dealer: int = 0, deal_in: str = "threes",
          runs: Sequence[tuple[Mapping[int, str], str]] = ()) -> list[str]:
    """The deck order that deals ``hands`` (seat -> "AS 2D ..." of 6 cards) and ``kick``.

    ``runs``: for each run of the pack, ``({seat: "3 cards"}, new kick)``.
    """
    named = [c for h in hands.values() for c in h.split()] + [kick]
    for rh, rk in runs:
        named += [c for h in rh.values() for c in h.split()] + [rk]
    assert len(named) == len(set(named)), f"a card is named twice: {named}"
    spare = iter(c for c in CANONICAL if c not in named)
    order = [(dealer + 1 + k) % players for k in range(players)]
    seq: list[str] = []

    def give(hs: Mapping[int, str], each: int) -> None:
        cards = {s: (hs[s].split() if s in hs else [next(spare) for _ in range(each)]) for s in order}
        for s in order:
            assert len(cards[s]) == each, f"seat {s} needs {each} cards, got {cards[s]}"
        packet = 3 if deal_in == "threes" else 1
        for r in range(each // packet):
            for s in order:
                seq.extend(cards[s][r * packet:(r + 1) * packet])

    give(hands, 6)
    seq.append(kick)
    for rh, rk in runs:
        give(rh, 3)
        seq.append(rk)
    seq += [c for c in spare if c not in seq]
    assert sorted(seq) == sorted(CANONICAL)
    return seq


def plays(*tricks: str, first: int, players: int = 4) -> list[dict[str, object]]:
    """Replay actions for whole tricks given as "leader:C1 C2 C3 C4" strings (seat order from the leader).

    ``first`` is unused except as documentation of who leads the first trick; each trick names its
    leader explicitly, e.g. ``"1:2H AH JH 3H"``.
    """
    out: list[dict[str, object]] = []
    for t in tricks:
        lead, cards = t.split(":")
        seat = int(lead)
        for c in cards.split():
            out.append({"seat": seat, "do": "play", "card": c})
            seat = (seat + 1) % players
    return out
