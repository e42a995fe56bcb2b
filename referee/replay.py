"""``python -m referee.replay FILE``: replay a scripted game through the engine and print the result.

Input (one JSON object; ``-`` reads stdin), documented in docs/formats.md::

    {"rules": {RuleSet fields, omitted = defaults}, "dealer": 0, "scores": [0, 0],
     "decks": [[52 cards, top first], ...],
     "actions": [{"seat": 1, "do": "beg"}, {"seat": 1, "do": "play", "card": "TH"}, ...]}

Each deal (the first, a redeal after the pack runs dry, the next deal) takes the next deck. The
actions are applied in order; replay stops at the first rejected one and reports it in ``error``
(exit 0) with the state so far. An action entry that cannot be read as an action (an unknown
``do`` word, a bad card, a card on an action that takes none, a seat that is not a whole number,
not an object) is a rejected action too, with reason ``bad_action``. A malformed file (not UTF-8,
not JSON, a bad shape, deck or option) exits 2 with a one-line message on stderr. ``expect`` and
``note`` are ignored, so the worked scenarios in tests/scenarios run as they are; any other
unknown top-level key is ignored with a one-line warning on stderr (still exit 0: files from
elsewhere may carry extra metadata).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict, TypeGuard

from referee.rules import (
    Action,
    Card,
    Phase,
    Reason,
    RuleError,
    RuleSet,
    State,
    action_from_do,
    apply,
    deal,
    legal_actions,
    new_game,
    parse_deck,
)
from referee.rules.errors import quote


class ReplayInputError(ValueError):
    """The replay input is malformed (not an action the rules reject): names the key and value."""


#: The top-level keys of the replay format (``expect`` and ``note`` are for test files, ignored).
KNOWN_KEYS = ("rules", "dealer", "scores", "decks", "actions", "expect", "note")
#: The ``do`` words that take no ``card``.
_NO_CARD = ("stand", "beg", "give", "run", "pass")


# ---------------------------------------------------------------- the output's shape (docs/formats.md)


class TrickOut(TypedDict):
    """A trick: its leader's seat, its cards in play order, its winner (``None`` while it runs)."""

    leader: int
    cards: list[str]
    winner: NotRequired[int | None]


class ExposedOut(TypedDict):
    """A card exposed (the call) in front of ``seat``."""

    seat: int
    card: str


class DealOut(TypedDict):
    """One deal: the dealer, trump, kicks, each seat's hand as dealt, tricks, exposed cards and, in
    the last deal, the trick in progress."""

    dealer: int
    trump: str | None
    kicks: list[str]
    hands: dict[str, list[str]]
    tricks: list[TrickOut]
    exposed: list[ExposedOut]
    trick: NotRequired[TrickOut]


class PointOut(TypedDict):
    """A score: its deal (1-based), side, kind (``kick``, ``high``…) and value."""

    deal: int
    side: int
    kind: str
    value: int


class NextOut(TypedDict):
    """Who acts next, in which phase, with which legal actions (notation)."""

    seat: int | None
    phase: str
    legal: list[str]


class ErrorOut(TypedDict):
    """The first action not applied: its index, the engine's reason code and message."""

    index: int
    reason: str
    message: str


class ReplayOutput(TypedDict):
    """The replay's output object (docs/formats.md)."""

    scores: list[int]
    winner: int | None
    points: list[PointOut]
    deals: list[DealOut]
    next: NextOut | None
    error: ErrorOut | None


def input_warnings(data: object) -> list[str]:
    """Warnings about an input object that still replays: unknown top-level keys (one line)."""
    if not isinstance(data, Mapping):
        return []
    unknown = [k for k in data if k not in KNOWN_KEYS]
    if not unknown:
        return []
    return [f"unknown key(s) {', '.join(repr(k) for k in unknown)} ignored (the format has "
            f"{', '.join(KNOWN_KEYS)})"]


def _whole(x: object) -> TypeGuard[int]:
    """Is ``x`` a whole number (an int, not a bool)?"""
    return isinstance(x, int) and not isinstance(x, bool)


def _deal_to_json(state: State, index: int) -> DealOut:
    record = state.deals[index]
    out: DealOut = {
        "dealer": record.dealer,
        "trump": str(record.trump) if record.trump is not None else None,
        "kicks": [str(c) for c in record.kicks],
        "hands": {str(s): [str(c) for c in h] for s, h in enumerate(record.hands)},
        "tricks": [{"leader": t.leader, "cards": [str(c) for c in t.cards], "winner": t.winner}
                   for t in record.tricks],
        "exposed": [],
    }
    if index == len(state.deals) - 1 and state.exposed and not record.ran_dry:
        out["exposed"] = [{"seat": s, "card": str(c)} for s, cards in enumerate(state.exposed) for c in cards]
    if index == len(state.deals) - 1 and state.trick and state.phase is not Phase.DEAL:
        out["trick"] = {"leader": state.trick_leader, "cards": [str(c) for c in state.trick]}
    return out


def result_json(state: State, error: ErrorOut | None) -> ReplayOutput:
    """The replay output for ``state`` (see the module docstring and docs/formats.md)."""
    nxt: NextOut | None = None
    if state.phase is Phase.DEAL:
        # Waiting for a deck the input did not provide: the dealer is to deal.
        nxt = {"seat": state.dealer, "phase": "deal", "legal": []}
    elif state.phase is not Phase.OVER:
        nxt = {"seat": state.to_act, "phase": state.phase.value,
               "legal": [str(a) for a in legal_actions(state)]}
    return {
        "scores": list(state.scores),
        "winner": state.winner,
        "points": [{"deal": p.deal, "side": p.side, "kind": p.kind, "value": p.value} for p in state.points],
        "deals": [_deal_to_json(state, i) for i in range(len(state.deals))],
        "next": nxt,
        "error": error,
    }


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ReplayInputError(message)


def replay(data: Mapping[str, object]) -> ReplayOutput:
    """Replay one input object and return the output object.

    :raises ReplayInputError: for malformed input (bad JSON shapes, ``rules`` not an object, unknown
        options, bad decks, ``actions`` not a list, starting scores with both sides at the target).
        Rule violations and action entries that cannot be read (reason ``bad_action``) are reported
        in the output's ``error``, with the state before that action. Unknown top-level keys are not
        errors (see :func:`input_warnings`).
    """
    _require(isinstance(data, Mapping), "the input must be a JSON object")
    rules = _rules_of(data)
    dealer = data.get("dealer", 0)
    if not _whole(dealer):
        raise ReplayInputError(f"dealer must be a seat number, not {dealer!r}")
    scores = data.get("scores", [0, 0])
    if not (isinstance(scores, list) and len(scores) == 2 and _whole(scores[0]) and _whole(scores[1])):
        raise ReplayInputError(f"scores must be a list of two whole numbers, not {scores!r}")
    decks = _decks_of(data)
    parsed, bad = _actions_of(data)
    try:
        state = new_game(rules, dealer, (scores[0], scores[1]))
    except ValueError as e:
        raise ReplayInputError(str(e)) from None
    pending = iter(decks)

    def deal_if_needed(st: State) -> State:
        """Deal the next decks given while the game waits for one (none left: it stays in DEAL)."""
        while st.phase is Phase.DEAL and (deck := next(pending, None)) is not None:
            st = deal(st, deck)
        return st

    state = deal_if_needed(state)
    for i, (seat, action) in enumerate(parsed):
        try:
            state = deal_if_needed(apply(state, action, seat))
        except RuleError as e:
            return result_json(state, {"index": i, "reason": e.reason.value, "message": e.message})
    return result_json(state, bad)


def _rules_of(data: Mapping[str, object]) -> RuleSet:
    """The input's ``rules`` object as a RuleSet. :raises ReplayInputError: not an object, a count that
    is not a whole number, an unknown option or a bad value."""
    rules_in = data.get("rules", {})
    if not isinstance(rules_in, Mapping):
        raise ReplayInputError(f"rules must be an object of rule options, not {rules_in!r}")
    for name in ("players", "target"):
        _require(name not in rules_in or _whole(rules_in[name]),
                 f"rules: {name} must be a whole number, not {rules_in.get(name)!r}")
    try:
        return RuleSet.from_dict(rules_in)
    except (TypeError, ValueError) as e:
        raise ReplayInputError(f"rules: {e}") from None


def _decks_of(data: Mapping[str, object]) -> list[tuple[Card, ...]]:
    """The input's ``decks``, each 52 cards in notation. :raises ReplayInputError: naming the deck."""
    decks_in = data.get("decks", [])
    if not isinstance(decks_in, list):
        raise ReplayInputError("decks must be a list of decks")
    decks: list[tuple[Card, ...]] = []
    for i, d in enumerate(decks_in):
        _require(isinstance(d, list), f"decks[{i}] must be a list of 52 cards")
        try:
            decks.append(parse_deck(d))
        except ValueError as e:
            raise ReplayInputError(f"decks[{i}]: {e}") from None
    return decks


def _actions_of(data: Mapping[str, object]) -> tuple[list[tuple[int, Action]], ErrorOut | None]:
    """The input's ``actions`` as ``(seat, action)`` up to the first that cannot be read, and the output
    ``error`` for that one (reason ``bad_action``), or ``None``. :raises ReplayInputError: not a list."""
    actions = data.get("actions", [])
    if not isinstance(actions, list):
        raise ReplayInputError("actions must be a list")
    parsed: list[tuple[int, Action]] = []
    for i, a in enumerate(actions):
        try:
            parsed.append(_parse_action(a))
        except ValueError as e:
            return parsed, {"index": i, "reason": Reason.BAD_ACTION.value, "message": f"actions[{i}]: {e}"}
    return parsed, None


def _parse_action(a: object) -> tuple[int, Action]:
    """One entry of ``actions`` as ``(seat, action)``.

    :raises ValueError: naming the problem (not an object, a seat that is not a whole number, an
        unknown ``do`` word, a missing or bad card, a card on an action that takes none); the replay
        reports it as a rejected action with reason ``bad_action``.
    """
    if not isinstance(a, Mapping):
        raise ValueError(f'not an object like {{"seat": 1, "do": "beg"}}: {quote(a)}')
    seat, do, card = a.get("seat"), a.get("do"), a.get("card")
    if not _whole(seat):
        raise ValueError(f"seat must be a seat number, not {quote(seat)}")
    assert isinstance(seat, int)
    if not isinstance(do, str):
        raise ValueError(f"do must be a string, not {quote(do)}")
    if card is not None and not isinstance(card, str):
        raise ValueError(f"card must be a card string, not {quote(card)}")
    if card is not None and do in _NO_CARD:
        raise ValueError(f"action {quote(do)} takes no card, got card {quote(card)}")
    return seat, action_from_do(do, card)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m referee.replay FILE|-``. Returns the exit code (0, or 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = "usage: python -m referee.replay FILE  (- for stdin)"
    if args in (["-h"], ["--help"]):
        print(usage)
        return 0
    if len(args) != 1:
        print(usage, file=sys.stderr)
        return 2
    name = "stdin" if args[0] == "-" else args[0]
    try:
        if args[0] == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(args[0], "rb") as f:
                raw = f.read()
    except OSError as e:
        print(f"replay: cannot read {name}: {e.strerror or e}", file=sys.stderr)
        return 2
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print(f"replay: {name} is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})", file=sys.stderr)
        return 2
    try:
        data = json.loads(text)
        out = replay(data)
    except json.JSONDecodeError as e:
        print(f"replay: {name} is not valid JSON: {e}", file=sys.stderr)
        return 2
    except ReplayInputError as e:
        print(f"replay: malformed input in {name}: {e}", file=sys.stderr)
        return 2
    for w in input_warnings(data):
        print(f"replay: warning: {name}: {w}", file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
