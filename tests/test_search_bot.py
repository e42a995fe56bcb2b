"""The search bot (sample_bots/search, docs/search-bot.md): its fast representation agrees with the
engine, its solver with a plain minimax over the engine, it only plays legal actions, it is
deterministic for a seed, it finds the known positions of tests/search_positions/, and it beats the
random bot. Budgets are tiny (a few ms of work) so the file stays quick; strength is measured by
benchmarks/strength.py, not here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import random
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.config import load_config
from arena.hosting.sandbox import run_key
from arena.ratings.elo import elo_of_score
from referee.replay import replay
from referee.rules import (
    BEG,
    CANONICAL_DECK,
    GIVE_ONE,
    RUN_PACK,
    STAND,
    Action,
    Card,
    Phase,
    Play,
    RuleSet,
    State,
    Suit,
    action_from_do,
    apply,
    deal,
    legal_actions,
    legal_cards,
    new_game,
    observe,
    parse_action,
    parse_deck,
)
from sample_bots.heuristic import HeuristicBot
from sample_bots.random_bot import RandomBot
from sample_bots.search import NODES_PER_MS, DemoSearchBot, SearchBot
from sample_bots.search import bot as searching
from sample_bots.search.bot import INDIFFERENT_SAMPLES
from sample_bots.search.fast import (
    SUIT_INDEX,
    Budget,
    DealValue,
    card_id,
    dealt_facts,
    hanged_jack_points,
    mask_of,
    position_of_state,
    solve,
)
from sample_bots.search.infer import knowledge
from sample_bots.search.reference import deal_awards, engine_minimax, random_play_state
from sdk.bot import Context, decision_rng
from sdk.conformance.checks import Mode, checks_of
from sdk.local import play_local
from sdk.spar import elo_interval, format_summary, spar
from tests.deckbuild import stack
from tests.docker_helpers import (
    ROOT,
    base_image,
    build_bot,
    docker_client,
    leftovers,
    play_against_random_in_container,
)
from tests.scenario_check import mismatches
from tests.test_conformance import LOBBY, PER_GAME, run_suite, statuses

pytestmark = pytest.mark.docker  # drives dockerd: scripts/test.sh runs it beside the other tests


def random_state(seed: int, players: int, undertrump_ban: bool, void_may_discard: bool, cards: int) -> State:
    """A PLAY state with at most ``cards`` cards in the hands, reached at random; target 1000 so
    every deal's count is complete."""
    rules = RuleSet(players=players, undertrump_ban=undertrump_ban, void_may_discard=void_may_discard, target=1000)
    return random_play_state(seed, rules, cards)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), players=st.sampled_from([2, 4]), undertrump_ban=st.booleans(),
       void_may_discard=st.booleans(), cards=st.integers(1, 40))
def test_fast_position_agrees_with_engine(seed: int, players: int, undertrump_ban: bool, void_may_discard: bool,
                                          cards: int) -> None:
    """Played in lockstep to the end of the deal with random cards, the fast position has the engine's
    seat to act, legal cards and trick winners at every step, and its count (High, Low, Jack or Hang
    Jack, Game) is the engine's."""
    state = random_state(seed, players, undertrump_ban, void_may_discard, cards)
    pos, dealt = position_of_state(state)
    rng = random.Random(seed)
    number = len(state.deals)
    while state.phase is Phase.PLAY and len(state.deals) == number:
        assert pos.to_act == state.to_act
        assert pos.legal() == mask_of(legal_cards(state.hands[state.to_act], state.trick, state.trump, state.rules))
        action = rng.choice(legal_actions(state))
        assert isinstance(action, Play)
        state = apply(state, action)
        pos.play(card_id(action.card))
        if not state.trick and state.phase is Phase.PLAY:
            assert pos.leader == state.trick_leader
    awards = deal_awards(state)
    high, low, jack_side, _ = dealt_facts(dealt, SUIT_INDEX[state.deals[-1].trump])
    assert (awards.get("high", -1), awards.get("low", -1)) == (high, low)
    jack = awards.get("jack", awards.get("hang_jack", -1))
    assert jack == (pos.jack_taker if jack_side >= 0 else -1)
    assert ("hang_jack" in awards) == (jack >= 0 and jack != jack_side)
    assert awards.get("game", 2) == pos.game_side()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), players=st.sampled_from([2, 4]), undertrump_ban=st.booleans(),
       void_may_discard=st.booleans())
def test_inferred_voids_and_known_cards_are_true(seed: int, players: int, undertrump_ban: bool,
                                                 void_may_discard: bool) -> None:
    """Played to the end of a deal with random cards, every seat's inference (``infer.knowledge``) is
    true at every step: a seat it calls void in a suit holds none of that suit, and the cards it places
    in a hand are there (docs/rules.md, Play: trumping is allowed even when able to follow, so a trump
    on a plain lead shows no void)."""
    state = random_state(seed, players, undertrump_ban, void_may_discard, 52)
    rng = random.Random(seed)
    number = len(state.deals)
    while state.phase is Phase.PLAY and len(state.deals) == number:
        for seat in range(players):
            know = knowledge(observe(state, seat))
            for other in range(players):
                held = mask_of(state.hands[other])
                assert know.hands[other] & ~held == 0
                for suit in Suit:
                    if know.voids[other] >> SUIT_INDEX[suit] & 1:
                        assert not any(c.suit is suit for c in state.hands[other]), \
                            f"seat {seat} thinks seat {other} is void in {suit}: {state.deals[-1].tricks}"
        state = apply(state, rng.choice(legal_actions(state)))


def test_a_trump_on_a_plain_lead_shows_no_void() -> None:
    """2 players, trumps H: seat 1 leads AS and seat 0 trumps with 2H though it holds 3S (docs/rules.md,
    Play: follow suit or trump). Seat 1 must not conclude that seat 0 has no spades."""
    deck = parse_deck(stack({1: "AS 2C 3C 4C 5C 6C", 0: "3S 2H 8D 9D TD JD"}, "9H", players=2))
    state = apply(deal(new_game(RuleSet(players=2), dealer=0), deck), STAND)
    for card in ("AS", "2H"):
        state = apply(state, Play(Card.parse(card)))
    assert Card.parse("3S") in state.hands[0]
    assert knowledge(observe(state, 1)).voids[0] == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), players=st.sampled_from([2, 4]), undertrump_ban=st.booleans(),
       void_may_discard=st.booleans(), side=st.sampled_from([0, 1]),
       scores=st.tuples(st.integers(0, 13), st.integers(0, 13)))
def test_solver_equals_engine_minimax(seed: int, players: int, undertrump_ban: bool, void_may_discard: bool,
                                      side: int, scores: tuple[int, int]) -> None:
    """On small random positions the alpha-beta solver (table, merged equal cards, early stops) gives
    exactly the value of a plain minimax over the engine."""
    state = random_state(seed, players, undertrump_ban, void_may_discard, 8 if players == 4 else 6)
    pos, dealt = position_of_state(state)
    high, low, jack_side, _ = dealt_facts(dealt, pos.trump)
    value = DealValue.build(side, scores, 14, high, low, jack_side, 3)
    assert solve(pos, value, Budget(10**6)) == pytest.approx(engine_minimax(state, value, len(state.deals)))


# --------------------------------------------------------------------------- the bot


def context(state: State, seed: int = 1) -> Context:
    """The context local mode would give the seat to act in ``state``."""
    seat = state.to_act
    assert seat is not None
    return Context(observation=observe(state, seat), legal=legal_actions(state), time_left_ms=10_000, bank_ms=0,
                   seat=seat, side=seat % 2, rules=state.rules, rng=decision_rng("test", seat, seed))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), players=st.sampled_from([2, 4]), undertrump_ban=st.booleans(),
       void_may_discard=st.booleans(), cards=st.integers(1, 48), bot_seed=st.integers(0, 100))
def test_bot_only_plays_legal_actions(seed: int, players: int, undertrump_ban: bool, void_may_discard: bool,
                                      cards: int, bot_seed: int) -> None:
    """In random positions of every phase the bot's action is one of the legal ones."""
    rng = random.Random(seed)
    rules = RuleSet(players=players, undertrump_ban=undertrump_ban, void_may_discard=void_may_discard)
    state = new_game(rules, dealer=rng.randrange(players), scores=(rng.randrange(14), rng.randrange(14)))
    deck = list(CANONICAL_DECK)
    rng.shuffle(deck)
    state = deal(state, deck)
    bot = SearchBot(ms=2, samples=4, seed=bot_seed)
    while state.phase not in (Phase.OVER, Phase.DEAL) and sum(map(len, state.hands)) > cards:
        assert bot.act(context(state, rng.randrange(10**6))) in legal_actions(state)
        state = apply(state, rng.choice(legal_actions(state)))


def test_bot_is_deterministic_for_a_seed() -> None:
    """The same match seed and bot seed give the same match; the budget counts nodes, not time."""
    def match(bot_seed: int) -> tuple[object, ...]:
        bots = [SearchBot(ms=3, samples=6, seed=bot_seed), RandomBot(), SearchBot(ms=3, samples=6, seed=bot_seed),
                RandomBot()]
        return play_local(bots, seed="determinism").match.games

    assert match(7) == match(7)


def shuffled_deal(scores: tuple[int, int], seed: int = 3) -> State:
    """A 4-player deal of a deck shuffled by ``seed`` (3 and 6: nothing scored by the kick), dealer seat 0,
    at ``scores``: seat 1, the next after the dealer, is to beg or stand."""
    deck = list(CANONICAL_DECK)
    random.Random(seed).shuffle(deck)
    return deal(new_game(RuleSet(players=4), dealer=0, scores=scores), deck)


def test_bot_stops_sampling_when_the_choice_does_not_matter() -> None:
    """At 13-13 High (counted first) ends the game whatever is played: every card has the same value
    on every sampled deal, so the demo level stops after ``INDIFFERENT_SAMPLES`` deals, not at
    ``samples`` (nor samples on for the prior); the other levels sample on (a later deal may split the
    actions), to ``samples``, and then, the heuristic bot's card (seed 6: not the first legal one) valued
    alike the best on every deal, to ``PRIOR_EXTRA`` times ``samples`` for the prior."""
    state = apply(shuffled_deal(scores=(13, 13), seed=6), STAND)
    assert state.phase is Phase.PLAY and len(legal_actions(state)) > 1
    assert HeuristicBot().act(context(state)) != legal_actions(state)[0]
    demo = DemoSearchBot(ms=1000, samples=40)
    demo.act(context(state))
    assert demo.last_samples == INDIFFERENT_SAMPLES
    bot = SearchBot(ms=1000, samples=40)
    bot.act(context(state))
    assert bot.last_samples == searching.PRIOR_EXTRA * 40


def test_bot_spends_at_most_an_eighth_of_the_time_left() -> None:
    """With 320 ms left on the referee's clock a 160 ms bot works 40 ms (at NODES_PER_MS), so that a
    decision answers in time even with an eighth of a core; with 10 s left, its whole 160 ms."""
    state = shuffled_deal(scores=(5, 5))
    bot = SearchBot(ms=160, samples=10_000)  # beg or stand: the node budget, not the samples, binds
    bot.act(dataclasses.replace(context(state), time_left_ms=320))
    assert 40 * NODES_PER_MS <= bot.last_nodes < 41 * NODES_PER_MS
    bot.act(context(state))
    assert 160 * NODES_PER_MS <= bot.last_nodes < 161 * NODES_PER_MS


def test_bot_beats_random() -> None:
    """A few quick duplicate pairs (the same decks, sides swapped) at 5 ms of work a decision: it scores
    better than random at both table sizes."""
    for players in (2, 4):
        result = spar(lambda: SearchBot(ms=5, samples=8), RandomBot, players, pairs=4, label="beats-random")
        assert sum(result.scores) / len(result.scores) > 0.5, (players, result.scores)


# --------------------------------------------------------------------------- known positions

POSITIONS = sorted((Path(__file__).parent / "search_positions").glob("*.json"))


def load_position(path: Path) -> tuple[State, Action, dict[str, Any]]:
    """A known position (the replay format of tests/scenarios plus ``choice``, the forced action):
    the state after its actions, the forced action and the file's data."""
    data = json.loads(path.read_text(encoding="utf-8"))
    state = deal(new_game(RuleSet.from_dict(data["rules"]), data["dealer"], tuple(data["scores"])),
                 parse_deck(data["decks"][0]))
    for a in data["actions"]:
        state = apply(state, action_from_do(a["do"], a.get("card")), a["seat"])
    return state, parse_action(data["choice"]), data


def hidden_hands(state: State, seat: int) -> Iterator[State]:
    """Every deal of a 2-player ``state`` that ``seat`` cannot tell from the real one: the opponent's
    hidden cards are any of the unseen cards (its exposed cards kept, the suits it showed void in by
    playing neither the led suit nor a trump excluded; default rules). The stock plays no part once play has begun."""
    assert state.players == 2 and state.trump is not None
    other = 1 - seat
    obs = observe(state, seat)
    played = [c for t in obs.tricks for c in t.cards] + list(obs.trick)
    exposed = [c for s, c in obs.exposed if s == other]
    seen = set(obs.hand) | set(obs.kicks) | set(played) | set(exposed)
    voids: set[Suit] = set()
    tricks = [(t.leader, t.cards) for t in obs.tricks] + ([(obs.trick_leader, obs.trick)] if obs.trick else [])
    for leader, cards in tricks:
        led = cards[0].suit
        for i, c in enumerate(cards[1:], 1):
            if (leader + i) % 2 == other and c.suit is not led and c.suit is not state.trump:
                voids.update((led, state.trump))  # a trump on a plain lead shows nothing (Play)
    pool = [c for c in CANONICAL_DECK if c not in seen and c.suit not in voids]
    record = state.deals[-1]
    gone = tuple(c for c in record.hands[other] if c not in state.hands[other])
    for combo in itertools.combinations(pool, len(state.hands[other]) - len(exposed)):
        hand = (*exposed, *combo)
        hands = tuple(hand if s == other else state.hands[s] for s in range(2))
        dealt = tuple((*gone, *hand) if s == other else record.hands[s] for s in range(2))
        yield dataclasses.replace(state, hands=hands,
                                  deals=(*state.deals[:-1], dataclasses.replace(record, hands=dealt)))


def outcome(state: State, side: int, number: int) -> float:
    """The result for ``side`` of the rest of deal ``number`` with best play by both sides, by plain
    minimax over the engine: 1 for a game won, 0 for one lost, else 0.5 plus a hundredth per point
    of lead."""
    if state.phase is Phase.OVER:
        return float(state.winner == side)
    if state.phase is Phase.DEAL or len(state.deals) != number:
        return 0.5 + (state.scores[side] - state.scores[1 - side]) / 100
    assert state.to_act is not None
    results = [outcome(apply(state, a), side, number) for a in legal_actions(state)]
    return max(results) if state.to_act % 2 == side else min(results)


def check_forced(state: State, choice: Action) -> None:
    """Exhaustive: in every deal the seat to act cannot tell from this one, ``choice`` does at least as
    well as every other legal action, and for each other action some deal where it does worse."""
    seat = state.to_act
    assert seat is not None
    others = [a for a in legal_actions(state) if a != choice]
    worse = dict.fromkeys(others, False)
    for placed in hidden_hands(state, seat):
        best = outcome(apply(placed, choice), seat % 2, len(state.deals))
        for a in others:
            v = outcome(apply(placed, a), seat % 2, len(state.deals))
            assert v <= best, f"{a} beats {choice} in the deal with hands {placed.hands}"
            worse[a] = worse[a] or v < best
    assert all(worse.values()), f"not forced: {choice} never beats {[a for a, w in worse.items() if not w]}"


def check_forced_before_play(state: State, choice: Action, data: dict[str, Any]) -> None:
    """Beg and run-the-pack positions: the other action loses the game in every deal the seat cannot
    tell from this one, and ``choice`` does not lose at once on the recorded deck.

    Begging: the dealer holds an exposed trump and the beggar none, so after a stand the dealer is
    dealt the highest trump in play, and High, counted first, wins the game; random play of the
    recorded deal confirms it. Running: giving one puts the beggars at the target before any card is played.
    """
    seat = state.to_act
    assert seat is not None
    side = seat % 2
    rng = random.Random(0)
    if choice == BEG:
        assert not any(c.suit is state.trump for c in state.hands[seat])
        assert any(c.suit is state.trump for s, c in observe(state, seat).exposed if s % 2 != side)
        for _ in range(20):
            s = apply(state, STAND)
            while s.phase in (Phase.PLAY, Phase.CALL):
                s = apply(s, rng.choice(legal_actions(s)))
            assert s.phase is Phase.OVER and s.winner != side
        given = apply(apply(state, BEG), GIVE_ONE)
        assert given.phase is Phase.OVER and given.winner == side
        assert apply(apply(state, BEG), RUN_PACK).winner in (None, side)
    else:
        assert choice == RUN_PACK
        given = apply(state, GIVE_ONE)
        assert given.phase is Phase.OVER and given.winner != side
        assert apply(state, RUN_PACK).winner in (None, side)


@pytest.mark.parametrize("path", POSITIONS, ids=[p.stem for p in POSITIONS])
def test_known_position(path: Path) -> None:
    """Each known position replays as its ``expect`` says, its choice is forced (shown by exhaustive
    solving over the engine), and the bot finds it for every seed tried."""
    state, choice, data = load_position(path)
    assert not mismatches(data["expect"], replay(data))
    if state.phase in (Phase.PLAY, Phase.CALL):
        check_forced(state, choice)
    else:
        check_forced_before_play(state, choice, data)
    for seed in range(5):
        assert SearchBot(ms=20, samples=24, seed=seed).act(context(state, seed)) == choice, f"seed {seed}"


# --------------------------------------------------------------------------- the prior and the beg margin


class _Prior:
    """A stand-in for the heuristic bot: always the card it was given."""

    def __init__(self, card: str) -> None:
        self.card = Play(Card.parse(card))

    def act(self, ctx: object) -> Action:
        return self.card


def prior_choice(rows: list[list[float]], theirs: str, more: list[list[float]] | None = None,
                 budget: int = 10**6) -> tuple[str, int]:
    """The card ``SearchBot._with_prior`` plays among ``AS 2S KH`` on sampled deals ``rows`` when the heuristic
    bot's card is ``theirs``, with ``more`` the values of the deals sampled on (each used once, then repeated:
    the last one); and how many deals it drew."""
    bot = SearchBot(samples=4)
    bot.prior = _Prior(theirs)  # type: ignore[assignment]
    moves = [Play(Card.parse(c)) for c in ("AS", "2S", "KH")]
    queue = list(more or [])
    drawn = 0

    def draw() -> list[float]:
        nonlocal drawn
        drawn += 1
        return queue.pop(0) if len(queue) > 1 else queue[0]

    setting = searching._Setting(None, None, Budget(budget))  # type: ignore[arg-type]
    index = bot._with_prior(setting, moves, [list(r) for r in rows], draw)
    return str(moves[index].card), drawn


@pytest.mark.parametrize(("rows", "theirs", "played"), [
    ([[0.5, 0.4, 0.2], [0.6, 0.6, 0.1]], "AS", "AS"),  # the heuristic bot's card is the best
    ([[0.5, 0.1, 0.52], [0.6, 0.1, 0.57]], "KH", "KH"),  # 0.005 below the best, above it on one deal
    ([[0.5, 0.48, 0.2], [0.6, 0.61, 0.1]], "2S", "2S"),  # below on one deal, above on another: a judgement call
    ([[0.5, 0.49, 0.2], [0.6, 0.6, 0.1]], "2S", "AS"),  # below on one deal and never above: dominated
    ([[0.5, 0.47, 0.2], [0.6, 0.61, 0.1]], "2S", "AS"),  # 0.011 below on the mean: beyond the margin
    ([[0.5, 0.5, 0.2], [0.6, 0.6, 0.1]], "KH", "AS"),  # far below
])
def test_the_prior_plays_the_heuristic_card_only_where_the_search_cannot_tell_it_from_the_best(
        rows: list[list[float]], theirs: str, played: str) -> None:
    """Cards ``AS 2S KH``, each row a sampled deal's values: the heuristic bot's card is played when its mean
    is within ``PRIOR_MARGIN`` (0.01) of the best and no deal valued it below the best card unless another
    valued it above; otherwise the best mean, the first on a tie."""
    assert searching.PRIOR_MARGIN == 0.01
    assert prior_choice(rows, theirs, more=[[0.0, 1.0, 0.0]])[0] == played


def test_the_prior_samples_on_until_a_deal_tells_the_heuristic_card_from_the_best() -> None:
    """Where every deal so far valued the heuristic bot's card exactly as the best card (the first of the two
    in the legal order), the bot samples on: the first deal that tells them apart decides (the best card
    better there: it; the heuristic card better: it), and with no such deal it stops at ``PRIOR_EXTRA``
    times its ``samples`` deals (4 here: 16 in all) and plays the heuristic bot's card, or at once when the
    budget is spent. Where the heuristic bot's card is itself the best, or no deal valued it alike, it does
    not."""
    alike = [[0.5, 0.5, 0.2], [0.6, 0.6, 0.1]]
    assert prior_choice(alike, "2S", more=[[0.5, 0.5, 0.3], [0.3, 0.2, 0.0]]) == ("AS", 2)
    assert prior_choice(alike, "2S", more=[[0.2, 0.3, 0.0]]) == ("2S", 1)
    assert searching.PRIOR_EXTRA == 4
    assert prior_choice(alike, "2S", more=[[0.5, 0.5, 0.0]]) == ("2S", 14)
    assert prior_choice(alike, "2S", more=[[0.2, 0.3, 0.0]], budget=0) == ("2S", 0)
    assert prior_choice([[0.5, 0.2, 0.5]], "KH", more=[[0.5, 0.2, 0.5]]) == ("KH", 15)  # any card alike the best
    assert prior_choice(alike, "AS", more=[[0.0, 1.0, 0.0]]) == ("AS", 0)  # the heuristic bot's card is the best
    assert prior_choice([[0.5, 0.48, 0.2]], "2S", more=[[0.0, 1.0, 0.0]]) == ("AS", 0)  # told apart: dominated


@pytest.mark.parametrize(("players", "means", "action"), [
    (4, [0.5, 0.56, 0.58], STAND), (4, [0.5, 0.561, 0.58], BEG), (4, [0.5, 0.7, 0.55], STAND),
    (2, [0.5, 0.51, 0.58], BEG), (2, [0.5, 0.5, 0.58], STAND),
])
def test_the_bot_begs_at_four_only_when_both_answers_beat_standing_by_the_margin(
        players: int, means: list[float], action: Action) -> None:
    """``[stand, give one, run the pack]`` means: at a table of four the seat to the dealer's right begs only
    when the dealer's worse answer beats standing by more than ``BEG_MARGIN`` (0.06); head to head when it
    beats it at all."""
    assert searching.BEG_MARGIN == 0.06

    class Means(SearchBot):
        def _before_play_means(self, s, rng):  # type: ignore[no-untyped-def]
            return means

    deck = list(CANONICAL_DECK)
    random.Random(3).shuffle(deck)
    state = deal(new_game(RuleSet(players=players), dealer=0), deck)
    assert state.phase is Phase.BEG
    assert Means().act(context(state)) == action


def test_head_to_head_the_bot_plays_its_best_mean_without_the_prior() -> None:
    """Head to head the prior does not apply: with every card valued alike the bot plays the first legal one
    (its tie rule) whatever the heuristic bot would play, and samples only to ``samples`` (no twins)."""
    deck = list(CANONICAL_DECK)
    random.Random(4).shuffle(deck)  # seed 4: the heuristic bot's lead is not the first legal card
    state = apply(deal(new_game(RuleSet(players=2), dealer=0, scores=(13, 13)), deck), STAND)
    assert state.phase is Phase.PLAY and len(legal_actions(state)) > 1
    assert HeuristicBot().act(context(state)) != legal_actions(state)[0]  # the prior would have changed it
    bot = SearchBot(ms=1000, samples=40)
    assert bot.act(context(state)) == legal_actions(state)[0] and bot.last_samples == 40


def test_solver_values_a_tied_game() -> None:
    """Regression: a deal whose card points end level (no Game) was searched past its last card and
    valued -1 or 2; here both sides end on 8 of 16 card points with best play."""
    state = random_play_state(33, RuleSet(players=2, target=1000), 8)
    pos, dealt = position_of_state(state)
    high, low, jack_side, _ = dealt_facts(dealt, pos.trump)
    value = DealValue.build(0, (7, 9), 14, high, low, jack_side, 3)
    assert solve(pos, value, Budget(10**6)) == engine_minimax(state, value, len(state.deals)) == value.table[2][2]


@pytest.mark.parametrize(("rules", "points"), [(RuleSet(), 3), (RuleSet(hang_jack_points=4), 4),
                                               (RuleSet(hang_jack=False, hang_jack_points=4), 1)])
def test_a_hanged_jack_is_worth_the_rules_points(rules: RuleSet, points: int) -> None:
    """Regression: the value counted a hanged jack as 3 whatever ``hang_jack_points`` said. Side 0 at
    10 of 14, dealt no jack, reaches the target by taking side 1's jack only when it is worth 4."""
    assert hanged_jack_points(rules) == points
    value = DealValue.build(0, (10, 0), 14, -1, -1, 1, points)
    assert (value.table[2][0] == 1.0) == (points == 4)  # no Game (a tie), side 0 hangs the jack
    assert value.table[2][1] < 1.0  # side 1 keeps its jack: 1 point to side 1


# --------------------------------------------------------------------------- everywhere a bot goes

def search_bot(level: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "sdk.run", f"sample_bots.search:{level}", "--log-level", "warning")


@pytest.mark.slow
@pytest.mark.parametrize("lobby", [False, True], ids=["per-game", "lobby"])
def test_search_bot_passes_the_conformance_suite(lobby: bool) -> None:
    """The whole suite, as one process per game and as a lobby worker, at the quick level (the same
    code as the default level with a smaller budget; at 200 ms a decision the two took nearly two
    minutes of a CI that ran over 45 minutes)."""
    out = run_suite(*search_bot("QuickSearchBot"), extra=("--lobby",) if lobby else ())
    assert statuses(out) == (LOBBY if lobby else PER_GAME), json.dumps(out, indent=1)


BASIC = [c.name for c in checks_of(Mode.PER_GAME) if c.scenario == "basic"]  # the checks of the one basic match


@pytest.mark.slow
def test_search_bot_at_its_default_level_answers_in_time_within_the_limits() -> None:
    """At 200 ms a decision (what a bot author spars against): the basic match's checks, every request
    answered within its deadline, startup and peak memory within the suite's limits."""
    out = run_suite(*search_bot("SearchBot"), extra=tuple(f"--only={c}" for c in BASIC))
    assert statuses(out) == dict.fromkeys(BASIC, "pass"), json.dumps(out, indent=1)


def test_the_demo_seats_the_search_bot_at_its_demo_level() -> None:
    """The README demo (examples/demo.toml) plays the search bot as a worker at its cheap level, on a
    fixed master seed (every run shows the same leaderboard, docs/search-bot.md)."""
    demo = load_config(ROOT / "examples/demo.toml")
    bots = {b.name: b for b in demo.bots}
    assert "sample_bots.search:DemoSearchBot" in bots["search"].command and bots["search"].mode == "worker"
    assert demo.master_seed == hashlib.sha256(b"All Fours demo").digest()


@pytest.mark.slow
def test_search_bot_plays_in_a_container(tmp_path: Path) -> None:
    """Built with `arena bots build sample_bots --entry search:SearchBot` (the package's relative
    imports make it a top-level package in the image), it plays container games to a normal end."""
    client = docker_client()
    tag = build_bot(ROOT / "sample_bots", "searchbot", "1", base_image("python"), entry="search:QuickSearchBot")
    played = play_against_random_in_container(tmp_path, "search", tag, 256)
    assert len(played) == 2 and all(g["terminations"] == ["normal", "normal"] for g in played), played
    assert leftovers(client, run_key(tmp_path / "out")) == []


# --------------------------------------------------------------------------- sparring (sdk.spar)


def test_elo_interval_from_pair_scores() -> None:
    """A mean score of 3/4 is +190.8 Elo; the interval is over pairs and widest when no spread is seen."""
    iv = elo_interval([1.0, 0.5, 1.0, 0.5])
    assert iv.elo == pytest.approx(400 * math.log10(3)) and iv.pairs == 4
    assert iv.ci_low < iv.elo < iv.ci_high
    even = elo_interval([0.5, 0.5])
    assert even.elo == 0 and even.ci_low == pytest.approx(-even.ci_high) and even.ci_high > 200
    perfect = elo_interval([1.0])
    assert perfect.elo == pytest.approx(elo_of_score(0.75))  # a perfect score's estimate is clamped: finite
    assert perfect.ci_high == math.inf  # ... its interval is not: nothing rules out a bot that always wins
    with pytest.raises(ValueError, match="no pairs played"):
        elo_interval([])


def test_elo_interval_is_students_by_hand() -> None:
    """Pair scores 1, 0.5, 0.75, 0.75, 1: mean 0.8, sd 0.209, t(4) = 2.776: the score interval 0.8 ± 0.2597."""
    iv = elo_interval([1.0, 0.5, 0.75, 0.75, 1.0])
    half = 2.7764451051977987 * statistics.stdev([1.0, 0.5, 0.75, 0.75, 1.0]) / math.sqrt(5)
    assert half == pytest.approx(0.2597, abs=1e-4)
    assert iv.ci_low == pytest.approx(elo_of_score(0.8 - half)) and iv.ci_high == math.inf  # 1.0597 > 1


@pytest.mark.parametrize(("pairs", "share"), [(5, 0.7), (5, 0.97), (10, 0.5), (10, 0.7), (20, 0.9)])
def test_elo_interval_covers_the_truth(pairs: int, share: float) -> None:
    """Simulated spars (a seeded 2,000 each) of a bot that wins a game with chance ``share``, deal luck
    moving the two games of a pair in opposite directions: the interval holds the true Elo at least 92%
    of the time. The normal interval with its ends clamped within 1/(4 pairs) of 0 and 1 covered 87%
    at (5, 0.7), 89% at (10, 0.5) and (10, 0.7), and never at (5, 0.97): its top end could not reach
    the truth, +604."""
    rng = random.Random(pairs * 1000 + round(share * 100))
    truth = elo_of_score(share)
    hits = 0
    for _ in range(2000):
        scores = []
        for _ in range(pairs):
            luck = rng.uniform(-1, 1) * min(share, 1 - share)
            scores.append(((rng.random() < share + luck) + (rng.random() < share - luck)) / 2)
        iv = elo_interval(scores)
        hits += iv.ci_low <= truth <= iv.ci_high
    assert hits / 2000 >= 0.92, hits / 2000


def test_local_duplicate_spars_two_bots() -> None:
    """`python -m sdk.local A B --games 4 --duplicate`: two duplicate pairs, the Elo line and the times."""
    r = subprocess.run([sys.executable, "-m", "sdk.local", "sample_bots.heuristic:HeuristicBot",
                        "sample_bots.random_bot:RandomBot", "--games", "4", "--duplicate", "--players", "2", "--json"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    low = -math.inf if out["ci_low"] is None else out["ci_low"]  # None: unbounded
    high = math.inf if out["ci_high"] is None else out["ci_high"]
    assert out["pairs"] == 2 and low <= out["elo"] <= high
    assert set(out["phase_ms"]) >= {"play"} and out["phase_ms"]["play"]["decisions"] > 0


def test_spar_tally_adds_up_to_the_games_scores() -> None:
    """Where the points went (``SparResult.tally``) adds up: each bot's points of every kind are its
    side's final scores over the games (played again here with ``play_local``), every beg got one
    answer from the other bot, and each one given is a point of kind "one" to the beggar's side."""
    pairs, label = 3, "tally"
    result = spar(HeuristicBot, RandomBot, 4, pairs=pairs, label=label)
    finals = [0, 0]
    for k in range(pairs):
        seed = hashlib.sha256(f"{label}/4/{k}".encode()).digest()
        for a_side in (0, 1):
            bots = [HeuristicBot() if s % 2 == a_side else RandomBot() for s in range(4)]
            scores = play_local(bots, seed=seed).match.games[0].scores
            finals[0] += scores[a_side]
            finals[1] += scores[1 - a_side]
    tally = result.tally
    assert [sum(v[i] for v in tally.points.values()) for i in (0, 1)] == finals
    begged, gave, ran = tally.choices["begged"], tally.choices["gave_one"], tally.choices["ran_pack"]
    assert begged[0] == gave[1] + ran[1] and begged[1] == gave[0] + ran[0]
    assert tally.points["one"] == [gave[1], gave[0]]
    assert tally.deals >= 2 * pairs and sum(begged) > 0
    summary = result.summary()
    assert summary["deals"] == tally.deals and set(summary["points_per_deal"]) >= {"kick", "high", "game", "all"}
    text = format_summary("a:Mine", "b:Other", 4, summary)
    assert f"points a deal over {tally.deals} deals, Mine/Other" in text and "Other: begged" in text


def test_spar_usage_errors_are_one_line() -> None:
    """Three bots, or a bot that cannot be loaded, are usage errors (status 2, one line)."""
    random_bot = "sample_bots.random_bot:RandomBot"
    for args in (["a:A", "b:B", "c:C", "--duplicate"], ["nosuch:Bot", random_bot, "--duplicate"]):
        r = subprocess.run([sys.executable, "-m", "sdk.local", *args], capture_output=True, text=True, timeout=60,
                           cwd=ROOT)
        assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("python -m sdk.local: error:")


def test_spar_runs_from_a_first_pair_add_up_to_one_run() -> None:
    """Pairs ``first``, ``first + 1``, ... are the same games as in a run from pair 0, so runs with
    disjoint ranges (one a core, ``benchmarks/strength.py --first-pair``) add up to one longer run."""
    def scores(pairs: int, first: int) -> list[float]:
        return spar(HeuristicBot, RandomBot, 2, pairs=pairs, label="shards", first=first).scores

    whole = scores(4, 0)
    assert scores(2, 0) + scores(2, 2) == whole
    with pytest.raises(ValueError, match="first at least 0"):
        spar(HeuristicBot, RandomBot, 2, pairs=1, first=-1)
