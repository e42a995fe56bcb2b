"""Verify a match record: ``python -m referee.verify RECORD.jsonl``.

Replays the record (docs/record.md) through the engine and checks:

- the revealed seed hashes to the header's ``seed_commitment``;
- each game's first dealer: the header's ``first_dealer`` or the cut (``cut_deck(seed, 1)``) for
  game 1, then one seat to the right of the previous game's last dealer (RULES.md, Match);
- every deal's deck equals ``deck_for(seed, game, deal)`` and comes when the engine waits for one;
- every action applies (``apply``), and every rejected action is rejected with the recorded reason;
- every game's scores, winner, points and number of deals, and the games won in the result.

Exit status 0 with ``OK ...`` on stdout, 1 with ``FAIL line N: ...`` on stderr (2 for usage errors).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from referee.dealing import SHUFFLE_VERSION, cut_deck, deck_for, parse_seed, verify_commitment
from referee.record import RecordError, read_record
from referee.rules import (
    Phase,
    RuleError,
    RuleSet,
    State,
    apply,
    cut_for_dealer,
    deal,
    new_game,
    next_seat,
    parse_action,
)
from referee.rules.cards import parse_deck


class VerifyError(ValueError):
    """A record that does not replay: the message names the line and the mismatch."""


def verify_lines(lines: Iterable[str]) -> str:
    """Verify a record given as lines; return the ``OK ...`` summary.

    :raises VerifyError: naming the first line that does not check out.
    :raises RecordError: for lines that are not JSON objects with a ``type``.
    """
    items = list(read_record(lines))
    if not items:
        raise VerifyError("the record is empty")

    def fail(n: int, msg: str) -> VerifyError:
        return VerifyError(f"line {n}: {msg}")

    n0, header = items[0]
    if header.get("type") != "header":
        raise fail(n0, f"the first line must be the header, got type {header.get('type')!r}")
    seed_items = [(n, o) for n, o in items if o["type"] == "seed"]
    if not seed_items:
        raise VerifyError("the record has no seed line (the match has not ended?)")
    ns, seed_obj = seed_items[-1]
    try:
        seed = parse_seed(str(seed_obj.get("seed", "")))
    except ValueError as e:
        raise fail(ns, str(e)) from None
    if not verify_commitment(seed, str(header.get("seed_commitment", ""))):
        raise fail(ns, f"the seed does not hash to the header's commitment {header.get('seed_commitment')}")
    if header.get("shuffle", SHUFFLE_VERSION) != SHUFFLE_VERSION:
        raise fail(n0, f"unknown shuffle {header.get('shuffle')!r} (this verifier knows {SHUFFLE_VERSION})")
    try:
        rules = RuleSet.from_dict(header.get("rules"))
    except (ValueError, TypeError) as e:
        raise fail(n0, f"bad rules: {e}") from None
    players = rules.players

    state: State | None = None
    game = 0
    next_dealer: int | None = None
    games_won = [0, 0]
    n_deals = n_actions = n_rejected = 0
    for n, o in items[1:]:
        t = o["type"]
        if t == "game":
            game += 1
            if o.get("game") != game:
                raise fail(n, f"expected game {game}, got {o.get('game')}")
            if game == 1:
                fd = header.get("first_dealer")
                expected = fd if fd is not None else cut_for_dealer(cut_deck(seed, 1), players)
            else:
                expected = next_dealer
            if o.get("dealer") != expected:
                raise fail(n, f"game {game}: the first dealer should be seat {expected}, record says "
                              f"{o.get('dealer')}")
            state = new_game(rules, o["dealer"])
        elif t == "deal":
            if state is None or state.phase is not Phase.DEAL:
                raise fail(n, f"a deck was dealt but the game is not waiting for one "
                              f"(phase {state.phase.value if state else 'no game'})")
            expected_deal = state.deal_number + 1
            if o.get("game") != game or o.get("deal") != expected_deal:
                raise fail(n, f"expected game {game} deal {expected_deal}, got game {o.get('game')} deal "
                              f"{o.get('deal')}")
            try:
                deck = parse_deck(o.get("deck", []))
            except ValueError as e:
                raise fail(n, f"bad deck: {e}") from None
            want = deck_for(seed, game, expected_deal)
            if deck != want:
                first = next(i for i in range(52) if deck[i] != want[i])
                raise fail(n, f"game {game} deal {expected_deal}: the deck differs from deck_for(seed) "
                              f"at position {first}: {deck[first]} recorded, {want[first]} derived")
            if o.get("dealer") != state.dealer:
                raise fail(n, f"the dealer should be seat {state.dealer}, record says {o.get('dealer')}")
            state = deal(state, deck)
            n_deals += 1
        elif t == "action":
            if state is None:
                raise fail(n, "an action before any game")
            try:
                action = parse_action(str(o.get("action")))
                state = apply(state, action, int(o["seat"]))
            except (RuleError, ValueError, KeyError) as e:
                raise fail(n, f"the action {o.get('action')!r} of seat {o.get('seat')} does not apply: {e}") from None
            n_actions += 1
        elif t == "rejected":
            n_rejected += 1
            if o.get("reason") == "protocol_error" or state is None:
                continue
            try:
                apply(state, parse_action(str(o.get("action"))), int(o["seat"]))
            except RuleError as e:
                if e.reason.value != o.get("reason"):
                    raise fail(n, f"rejected {o.get('action')!r} with reason {o.get('reason')}, but the engine "
                                  f"says {e.reason.value}") from None
                continue
            except ValueError as e:
                raise fail(n, f"bad rejected action: {e}") from None
            raise fail(n, f"the action {o.get('action')!r} of seat {o.get('seat')} was rejected but is legal")
        elif t == "game_end":
            if state is None:
                raise fail(n, "a game end before any game")
            _check_game_end(n, o, state, game, fail)
            if o.get("winner") in (0, 1):
                games_won[o["winner"]] += 1
            next_dealer = next_seat(state.dealer, players)
        elif t == "result" and o.get("games_won") != games_won:
            raise fail(n, f"games_won {o.get('games_won')} but the games say {games_won}")
    return (f"OK match {header.get('match_id')}: {game} game(s), {n_deals} deal(s), {n_actions} action(s), "
            f"{n_rejected} rejected; games won {games_won[0]}-{games_won[1]}; seed matches commitment")


def _check_game_end(n: int, o: dict[str, Any], state: State, game: int, fail: Any) -> None:
    scores = list(state.scores)
    if o.get("game") != game:
        raise fail(n, f"game_end for game {o.get('game')} during game {game}")
    if o.get("scores") != scores:
        raise fail(n, f"game {game}: recorded scores {o.get('scores')}, replayed {scores}")
    points = [{"deal": p.deal, "side": p.side, "kind": p.kind, "value": p.value} for p in state.points]
    if o.get("points") != points:
        raise fail(n, f"game {game}: recorded points differ from the replay ({points})")
    if o.get("deals") != state.deal_number:
        raise fail(n, f"game {game}: recorded {o.get('deals')} deals, replayed {state.deal_number}")
    if o.get("forfeited"):
        if state.phase is Phase.OVER:
            raise fail(n, f"game {game} is recorded as forfeited but it was played to the end")
        return
    if state.phase is not Phase.OVER or o.get("winner") != state.winner:
        raise fail(n, f"game {game}: recorded winner {o.get('winner')}, replay: phase {state.phase.value}, "
                      f"winner {state.winner}")


def main(argv: list[str] | None = None) -> int:
    """``python -m referee.verify RECORD``: 0 and ``OK ...`` or 1 and the first mismatch."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m referee.verify RECORD.jsonl", file=sys.stderr)
        return 2
    try:
        with open(args[0], encoding="utf-8") as f:
            print(verify_lines(f))
    except OSError as e:
        print(f"FAIL cannot read {args[0]}: {e}", file=sys.stderr)
        return 1
    except (VerifyError, RecordError) as e:
        print(f"FAIL {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
