"""``python -m referee.replay FILE``: replay a scripted game through the engine and print the result.

Input (one JSON object; ``-`` reads stdin), documented in docs/formats.md::

    {"rules": {RuleSet fields, omitted = defaults}, "dealer": 0, "scores": [0, 0],
     "decks": [[52 cards, top first], ...],
     "actions": [{"seat": 1, "do": "beg"}, {"seat": 1, "do": "play", "card": "TH"}, ...]}

Each deal (the first, a redeal after the pack runs dry, the next deal) takes the next deck. The
actions are applied in order; replay stops at the first rejected one and reports it in ``error``
(exit 0). A malformed file exits 2 with a one-line message on stderr. Other keys (``expect``,
``note``) are ignored, so the worked scenarios in shared/scenarios run as they are.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from referee.rules import (
    Call,
    Phase,
    Play,
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


class ReplayInputError(ValueError):
    """The replay input is malformed (not an action the rules reject): names the key and value."""


def _deal_to_json(state: State, index: int) -> dict[str, Any]:
    record = state.deals[index]
    out: dict[str, Any] = {
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


def _action_text(action: object) -> str:
    if isinstance(action, Play):
        return str(action.card)
    if isinstance(action, Call):
        return f"call {action.card}"
    return str(action)


def result_json(state: State, error: dict[str, Any] | None) -> dict[str, Any]:
    """The replay output for ``state`` (see the module docstring and docs/formats.md)."""
    nxt: dict[str, Any] | None = None
    if state.phase is Phase.DEAL:
        # Waiting for a deck the input did not provide: the dealer is to deal.
        nxt = {"seat": state.dealer, "phase": "deal", "legal": []}
    elif state.phase is not Phase.OVER:
        nxt = {"seat": state.to_act, "phase": state.phase.value,
               "legal": [_action_text(a) for a in legal_actions(state)]}
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


def replay(data: Mapping[str, Any]) -> dict[str, Any]:
    """Replay one input object and return the output object.

    :raises ReplayInputError: for malformed input (bad JSON shapes, unknown options, bad decks,
        unknown ``do`` words, bad cards). Rule violations are reported in the output's ``error``.
    """
    _require(isinstance(data, Mapping), "the input must be a JSON object")
    try:
        rules = RuleSet.from_dict(data.get("rules") or {})
    except (TypeError, ValueError) as e:
        raise ReplayInputError(f"rules: {e}") from None
    dealer = data.get("dealer", 0)
    _require(isinstance(dealer, int) and not isinstance(dealer, bool), f"dealer must be a seat number, not {dealer!r}")
    scores = data.get("scores", [0, 0])
    _require(isinstance(scores, list) and len(scores) == 2, f"scores must be a list of two numbers, not {scores!r}")
    decks_in = data.get("decks", [])
    _require(isinstance(decks_in, list), "decks must be a list of decks")
    decks: list[tuple[Any, ...]] = []
    for i, d in enumerate(decks_in):
        _require(isinstance(d, list), f"decks[{i}] must be a list of 52 cards")
        try:
            decks.append(parse_deck(d))
        except ValueError as e:
            raise ReplayInputError(f"decks[{i}]: {e}") from None
    actions = data.get("actions", [])
    _require(isinstance(actions, list), "actions must be a list")
    parsed = []
    for i, a in enumerate(actions):
        _require(isinstance(a, Mapping), f"actions[{i}] must be an object like {{\"seat\": 1, \"do\": \"beg\"}}")
        seat, do, card = a.get("seat"), a.get("do"), a.get("card")
        _require(isinstance(seat, int) and not isinstance(seat, bool),
                 f"actions[{i}].seat must be a seat number, not {seat!r}")
        _require(isinstance(do, str), f"actions[{i}].do must be a string, not {do!r}")
        _require(card is None or isinstance(card, str), f"actions[{i}].card must be a card string, not {card!r}")
        try:
            parsed.append((seat, action_from_do(do, card)))
        except ValueError as e:
            raise ReplayInputError(f"actions[{i}]: {e}") from None
    try:
        state = new_game(rules, dealer, (scores[0], scores[1]))
    except ValueError as e:
        raise ReplayInputError(str(e)) from None

    next_deck = 0

    def deal_if_needed(st: State) -> State:
        nonlocal next_deck
        while st.phase is Phase.DEAL and next_deck < len(decks):
            st = deal(st, decks[next_deck])
            next_deck += 1
        return st

    state = deal_if_needed(state)
    error = None
    for i, (seat, action) in enumerate(parsed):
        try:
            state = deal_if_needed(apply(state, action, seat))
        except RuleError as e:
            error = {"index": i, "reason": e.reason.value, "message": e.message}
            break
    return result_json(state, error)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m referee.replay FILE|-``. Returns the exit code (0, or 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m referee.replay FILE  (- for stdin)", file=sys.stderr)
        return 2
    try:
        if args[0] == "-":
            text = sys.stdin.read()
        else:
            with open(args[0], encoding="utf-8") as f:
                text = f.read()
    except OSError as e:
        print(f"replay: cannot read {args[0]}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        data = json.loads(text)
        out = replay(data)
    except json.JSONDecodeError as e:
        print(f"replay: {args[0]} is not valid JSON: {e}", file=sys.stderr)
        return 2
    except ReplayInputError as e:
        print(f"replay: malformed input in {args[0]}: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
