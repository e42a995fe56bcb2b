"""Actions a seat can take, as small frozen values with a text notation.

Notation (used by the replay command, logs and tests): ``stand``, ``beg``, ``give``, ``run``,
a card such as ``TH`` (play it), ``call 5C``, ``pass``. docs/rules.md, "The deal" and "Penalty: the call".
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.rules.cards import Card
from referee.rules.errors import quote


@dataclass(frozen=True, slots=True)
class Stand:
    """The player to the dealer's right accepts the trump suit (docs/rules.md, The deal 3)."""

    def __str__(self) -> str:
        return "stand"


@dataclass(frozen=True, slots=True)
class Beg:
    """The player to the dealer's right begs (docs/rules.md, The deal 3)."""

    def __str__(self) -> str:
        return "beg"


@dataclass(frozen=True, slots=True)
class GiveOne:
    """The dealer keeps trumps and gives the begging side 1 point (docs/rules.md, The deal 4)."""

    def __str__(self) -> str:
        return "give"


@dataclass(frozen=True, slots=True)
class RunPack:
    """The dealer runs the pack: 3 more cards each and a new kick (docs/rules.md, The deal 4)."""

    def __str__(self) -> str:
        return "run"


@dataclass(frozen=True, slots=True)
class Play:
    """Play ``card`` to the trick; sent out of turn, it exposes the card (docs/rules.md, the call)."""

    card: Card

    def __str__(self) -> str:
        return str(self.card)


@dataclass(frozen=True, slots=True)
class Call:
    """An opponent calls the exposed ``card``: it must be played to this trick (docs/rules.md, the call)."""

    card: Card

    def __str__(self) -> str:
        return f"call {self.card}"


@dataclass(frozen=True, slots=True)
class Pass:
    """An opponent declines to call an exposed card (docs/rules.md, the call)."""

    def __str__(self) -> str:
        return "pass"


Action = Stand | Beg | GiveOne | RunPack | Play | Call | Pass

STAND = Stand()
BEG = Beg()
GIVE_ONE = GiveOne()
RUN_PACK = RunPack()
PASS = Pass()

_SIMPLE: dict[str, Action] = {"stand": STAND, "beg": BEG, "give": GIVE_ONE, "run": RUN_PACK, "pass": PASS}


def parse_action(text: str) -> Action:
    """Parse action notation: ``stand``, ``beg``, ``give``, ``run``, ``pass``, ``call 5C`` or a card.

    :raises ValueError: naming the input when it is none of these.
    """
    if not isinstance(text, str):
        raise ValueError(f"not an action: {quote(text)}")
    t = text.strip().lower()
    if t in _SIMPLE:
        return _SIMPLE[t]
    if t.startswith("call "):
        return Call(Card.parse(t[5:]))
    try:
        return Play(Card.parse(t))
    except ValueError:
        raise ValueError(
            f"not an action: {quote(text)} (expected stand, beg, give, run, pass, 'call <card>' or a card)"
        ) from None


def action_from_do(do: str, card: str | None = None) -> Action:
    """Build an action from the replay format's ``do`` word and optional ``card``.

    ``do`` is one of ``stand beg give run play call pass``; ``play`` and ``call`` need ``card``.

    :raises ValueError: on an unknown ``do`` or a missing or bad card.
    """
    if do in _SIMPLE:
        return _SIMPLE[do]
    if do in ("play", "call"):
        if card is None:
            raise ValueError(f"action {quote(do)} needs a card")
        c = Card.parse(card)
        return Play(c) if do == "play" else Call(c)
    raise ValueError(f"unknown action {quote(do)} (expected stand, beg, give, run, play, call or pass)")
