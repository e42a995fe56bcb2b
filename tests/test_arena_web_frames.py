"""The viewer's frames (arena/web/frames.py) as a property: over random games, a seat's view never
holds a card that seat could not know at that step, and the all-hands view replays to the engine's
scores. Games are played by a seeded random choice among the legal actions; decks from the seed."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from web_helpers import cards_in, seat_knowledge

from arena.web.frames import ALL, replay_frames
from referee.dealing import deck_for
from referee.rules import Phase, RuleSet, apply, deal, legal_actions, new_game


def random_record(seed: int, players: int, target: int) -> list[dict[str, Any]]:
    """Record lines (docs/record.md) of one random game: header, game, deals, actions, game_end."""
    rng = random.Random(seed)
    rules = RuleSet(players=players, target=target)
    key = seed.to_bytes(32, "big")
    dealer = rng.randrange(players)
    lines: list[dict[str, Any]] = [
        {"type": "header", "rules": rules.to_dict(), "seat_names": [f"bot{s}" for s in range(players)], "games": 1},
        {"type": "game", "game": 1, "dealer": dealer},
    ]
    state = new_game(rules, dealer)
    for _ in range(2000):  # far more steps than a game to 14 takes
        if state.phase is Phase.OVER:
            break
        if state.phase is Phase.DEAL:
            deck = deck_for(key, 1, state.deal_number + 1)
            lines.append({"type": "deal", "game": 1, "deal": state.deal_number + 1, "dealer": state.dealer,
                          "deck": [str(c) for c in deck]})
            state = deal(state, deck)
            continue
        seat = state.to_act
        action = rng.choice(legal_actions(state))
        lines.append({"type": "action", "game": 1, "deal": state.deal_number, "seat": seat, "action": str(action),
                      "by": "bot", "out_of_turn": False})
        state = apply(state, action, seat)
    assert state.phase is Phase.OVER
    lines.append({"type": "game_end", "game": 1, "scores": list(state.scores), "winner": state.winner})
    return lines


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**64), players=st.sampled_from([2, 4]), target=st.sampled_from([7, 14]))
def test_a_seat_view_holds_only_what_the_seat_could_know(seed: int, players: int, target: int) -> None:
    lines = random_record(seed, players, target)
    for seat in range(players):
        frames = replay_frames(lines, seat)["frames"]
        known = list(seat_knowledge(lines, seat))
        assert len(frames) == len(known)
        for frame, (_, may_know, hidden) in zip(frames, known, strict=True):
            shown = cards_in(frame)
            assert shown <= may_know and not shown & hidden, (seat, frame["i"], shown - may_know)
            assert frame["hands"][seat] is not None and all(
                h is None for s, h in enumerate(frame["hands"]) if s != seat)
    every = replay_frames(lines, ALL)["frames"]
    assert every[-1]["final_scores"] == lines[-1]["scores"]
