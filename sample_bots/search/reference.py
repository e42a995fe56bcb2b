"""The engine-only references that ``sample_bots.search.fast`` is checked and measured against.

- :func:`random_play_state`: a position reached by random legal actions (tests and benchmarks);
- :func:`engine_minimax`: the value of a position by plain minimax over ``referee.rules``
  (``legal_actions``, ``apply`` and its count), no pruning, no table: what :func:`fast.solve` must
  equal (tests/test_search_bot.py) and the baseline of ``benchmarks/search_solver.py``.
"""

from __future__ import annotations

import random

from referee.rules import CANONICAL_DECK, Phase, RuleSet, State, apply, deal, legal_actions, new_game

from .fast import DealValue


def random_play_state(seed: int, rules: RuleSet, cards: int) -> State:
    """A state reached by random legal actions from a shuffled deal: the first moment in phase PLAY
    with at most ``cards`` cards left in the hands (every phase before it played at random too)."""
    rng = random.Random(seed)
    state = new_game(rules, dealer=rng.randrange(rules.players))
    while True:
        if state.phase is Phase.DEAL:
            deck = list(CANONICAL_DECK)
            rng.shuffle(deck)
            state = deal(state, deck)
            continue
        if state.phase is Phase.OVER:  # a kick won the game: start another
            state = new_game(rules, dealer=rng.randrange(rules.players))
            continue
        if state.phase is Phase.PLAY and sum(map(len, state.hands)) <= cards:
            return state
        state = apply(state, rng.choice(legal_actions(state)))


def deal_awards(state: State) -> dict[str, int]:
    """The engine's count of the last deal in ``state`` once played out: kind (high, low, jack,
    hang_jack, game) -> side."""
    number = len(state.deals)
    return {p.kind: p.side for p in state.points if p.deal == number and p.kind not in ("kick", "one")}


def engine_minimax(state: State, value: DealValue, number: int) -> float:
    """The value to ``value.side`` of the rest of deal ``number`` from ``state`` with best play by
    every seat, every hand open: plain minimax over the engine's legal actions, valued by
    ``value.table`` from the engine's count."""
    if state.phase is not Phase.PLAY or len(state.deals) != number:
        awards = deal_awards(state)
        jack = awards.get("jack", awards.get("hang_jack", 2))
        return value.table[awards.get("game", 2)][jack]
    assert state.to_act is not None
    results = [engine_minimax(apply(state, a), value, number) for a in legal_actions(state)]
    return max(results) if state.to_act % 2 == value.side else min(results)
