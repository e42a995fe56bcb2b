"""Invariants of the engine over random games (hypothesis), and the purity of referee/rules.

Properties (issue #2): the 52 cards are conserved; ``apply`` never mutates its input and changes
nothing when it raises; a legal action exists until the game is over and every legal action
applies; scores never fall; the global ``random`` has no effect; re-dealing the cards a seat cannot
see leaves ``observe(state, seat)`` unchanged.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import itertools
import random
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from referee.dealing import deck_for
from referee.rules import (
    CANONICAL_DECK,
    Card,
    Phase,
    Play,
    RuleError,
    RuleSet,
    State,
    apply,
    deal,
    legal_actions,
    new_game,
    observe,
)
from referee.rules.actions import BEG, GIVE_ONE, PASS, RUN_PACK, STAND, Call

RULESETS = st.builds(
    RuleSet,
    players=st.sampled_from([2, 4]),
    deal_in=st.sampled_from(["ones", "threes"]),
    target=st.sampled_from([3, 7, 14]),
    hang_jack=st.booleans(),
    undertrump_ban=st.booleans(),
    void_may_discard=st.booleans(),
    kicked_six_points=st.sampled_from([1, 2]),
    hang_jack_points=st.sampled_from([2, 3, 4]),
)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_game(rules: RuleSet, seed: int, hook=None) -> list[State]:
    """Play a whole game with uniform random legal actions; decks from the documented shuffle."""
    rng = random.Random(seed)
    seed_bytes = seed.to_bytes(32, "big")
    state = new_game(rules, dealer=seed % rules.players)
    states = [state]
    while state.phase is not Phase.OVER:
        if state.phase is Phase.DEAL:
            state = deal(state, deck_for(seed_bytes, 1, state.deal_number + 1))
        else:
            legal = legal_actions(state)
            state = apply(state, legal[rng.randrange(len(legal))])
        states.append(state)
        if hook is not None:
            hook()
        assert len(states) < 20_000, "a game should end"
    return states


def _all_cards(s: State) -> list[Card]:
    rec = s.deals[-1]
    played = [c for t in rec.tricks for c in t.cards] + list(s.trick)
    kicks = list(rec.kicks)
    return [c for h in s.hands for c in h] + played + kicks + list(s.deck[s.pos:])


@SETTINGS
@given(rules=RULESETS, seed=st.integers(0, 2**64))
def test_cards_conserved_scores_never_fall_legal_exists(rules: RuleSet, seed: int) -> None:
    states = random_game(rules, seed)
    for prev, s in itertools.pairwise(states):
        assert s.scores[0] >= prev.scores[0] and s.scores[1] >= prev.scores[1]
        if s.deals and not s.deals[-1].ran_dry and s.phase is not Phase.DEAL:
            cards = _all_cards(s)
            assert len(cards) == 52 and set(cards) == set(CANONICAL_DECK)
        if s.phase in (Phase.BEG, Phase.DEALER, Phase.PLAY, Phase.CALL):
            assert legal_actions(s), f"no legal action in phase {s.phase}"
    final = states[-1]
    assert final.phase is Phase.OVER and final.winner is not None
    assert final.scores[final.winner] >= rules.target
    assert sum(p.value for p in final.points if p.side == 0) == final.scores[0]


@SETTINGS
@given(rules=RULESETS, seed=st.integers(0, 2**64), pick=st.integers(0, 10**6))
def test_apply_never_mutates_and_every_legal_action_applies(rules: RuleSet, seed: int, pick: int) -> None:
    states = [s for s in random_game(rules, seed) if s.phase not in (Phase.DEAL, Phase.OVER)]
    assume(states)  # a game can end on its first kick with a low target
    s = states[pick % len(states)]
    snapshot = copy.deepcopy(s)
    for action in legal_actions(s):
        apply(s, action)
        assert s == snapshot
    # Illegal actions raise and change nothing.
    assert s.to_act is not None
    candidates = [STAND, BEG, GIVE_ONE, RUN_PACK, PASS, *(Play(c) for c in CANONICAL_DECK[:13]),
                  Call(CANONICAL_DECK[0])]
    legal = set(legal_actions(s))
    for action in candidates:
        if action in legal:
            continue
        with contextlib.suppress(RuleError):
            apply(s, action)
        assert s == snapshot


@SETTINGS
@given(rules=RULESETS, seed=st.integers(0, 2**64))
def test_global_random_has_no_effect(rules: RuleSet, seed: int) -> None:
    plain = random_game(rules, seed)[-1]
    noise = random.Random(seed + 1)

    def meddle() -> None:
        random.seed(noise.random())
        random.random()

    assert random_game(rules, seed, hook=meddle)[-1] == plain


def resample_hidden(s: State, seat: int, rng: random.Random) -> State:
    """Re-deal every card ``seat`` cannot see: other seats' unexposed cards in hand and the undealt
    pack, keeping each hand's size. Played, kicked and exposed cards and ``seat``'s hand stay."""
    exposed = {c for e in s.exposed for c in e}
    hidden_slots: list[tuple[int, int]] = []  # (holder, index); holder -1 = the undealt pack
    for other, hand in enumerate(s.hands):
        if other != seat:
            hidden_slots += [(other, i) for i, c in enumerate(hand) if c not in exposed]
    hidden_slots += [(-1, i) for i in range(s.pos, len(s.deck))]

    def at(slot: tuple[int, int]) -> Card:
        return s.deck[slot[1]] if slot[0] == -1 else s.hands[slot[0]][slot[1]]

    old = [at(x) for x in hidden_slots]
    new = old[:]
    rng.shuffle(new)
    mapping = dict(zip(old, new, strict=True))

    def remap(cards: tuple[Card, ...]) -> tuple[Card, ...]:
        return tuple(mapping.get(c, c) for c in cards)

    hands = tuple(h if i == seat else remap(h) for i, h in enumerate(s.hands))
    deck = s.deck[:s.pos] + remap(s.deck[s.pos:])
    rec = s.deals[-1]
    rec_hands = tuple(h if i == seat else remap(h) for i, h in enumerate(rec.hands))
    return replace(s, hands=hands, deck=deck, deals=(*s.deals[:-1], replace(rec, hands=rec_hands)))


@SETTINGS
@given(rules=RULESETS, seed=st.integers(0, 2**64), pick=st.integers(0, 10**6), seat=st.integers(0, 3))
def test_resampling_hidden_cards_leaves_observation_unchanged(rules: RuleSet, seed: int, pick: int,
                                                             seat: int) -> None:
    # CALL states are excluded: whether an exposed card may be called depends, by docs/rules.md, on
    # whether it is legal for its holder, so the question itself reveals a little of that hand.
    states = [s for s in random_game(rules, seed)
              if s.phase in (Phase.BEG, Phase.DEALER, Phase.PLAY) and not s.deals[-1].ran_dry]
    assume(states)
    s = states[pick % len(states)]
    seat %= rules.players
    rng = random.Random(pick)
    for _ in range(3):
        other = resample_hidden(s, seat, rng)
        assert other != s or len(s.deck) == s.pos
        assert observe(other, seat) == observe(s, seat)


def test_observation_hides_other_hands_and_the_pack() -> None:
    s = deal(new_game(RuleSet(), 0), deck_for(bytes(32), 1, 1))
    for seat in range(4):
        ob = observe(s, seat)
        assert ob.hand == s.hands[seat]
        visible = set(ob.hand) | set(ob.kicks)
        others = {c for i, h in enumerate(s.hands) if i != seat for c in h}
        assert not (others & visible)
        assert not any(isinstance(v, tuple) and set(v) & others for v in vars_of(ob))


def vars_of(ob: object) -> list[object]:
    return [getattr(ob, f) for f in ob.__dataclass_fields__]  # type: ignore[attr-defined]


ALLOWED_IMPORTS = {"__future__", "collections", "collections.abc", "dataclasses", "enum", "typing", "functools",
                   "operator"}


#: The one dynamic call allowed: referee/rules/values.py compiles the fast constructors from a frozen
#: dataclass's own field names, as ``dataclasses`` compiles ``__init__`` (tests/test_values.py checks
#: that the compiled source names nothing but the fields and its fixed helpers).
DYNAMIC_ALLOWED = {("values.py", "exec")}


def test_rules_package_is_pure() -> None:
    """referee/rules imports nothing with I/O, clocks, logging, networking or global randomness."""
    root = Path(__file__).resolve().parents[1] / "referee" / "rules"
    files = sorted(root.glob("*.py"))
    assert files
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name in ALLOWED_IMPORTS or name.startswith("referee.rules"), \
                    f"{path.name} imports {name}: referee/rules must stay pure"
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and (path.name, node.func.id) not in DYNAMIC_ALLOWED):
                assert node.func.id not in {"open", "print", "input", "exec", "eval", "__import__"}, \
                    f"{path.name} calls {node.func.id}()"
