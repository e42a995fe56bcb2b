"""Round trips between the engine's values and protocol v1 messages (referee.wire)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from referee import wire
from referee.dealing import deck_for
from referee.rules import (
    BEG,
    CANONICAL_DECK,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Call,
    Card,
    Observation,
    Phase,
    Play,
    Reason,
    RuleSet,
    apply,
    deal,
    legal_actions,
    new_game,
    observe,
)

SEED = bytes(range(32))


@pytest.mark.parametrize("card", CANONICAL_DECK)
def test_card_round_trip(card: Card) -> None:
    assert wire.card_from_pb(wire.card_to_pb(card)) == card


@pytest.mark.parametrize("text", ["", "1H", "TX", "10", "AHH"])
def test_bad_card_text_is_a_wire_error_naming_it(text: str) -> None:
    with pytest.raises(wire.WireError, match="not a card"):
        wire.card_from_pb(text)


@pytest.mark.parametrize(
    "action", [STAND, BEG, GIVE_ONE, RUN_PACK, PASS, Play(Card.parse("TH")), Call(Card.parse("2C"))]
)
def test_action_round_trip(action: object) -> None:
    msg = wire.action_to_pb(action)  # type: ignore[arg-type]
    assert wire.action_from_pb(pb.Action.FromString(msg.SerializeToString())) == action


def test_every_action_of_every_card_round_trips() -> None:
    """All 109 actions (5 without a card, play and call of each of the 52 cards), and the card text
    as Card.parse also reads it (lower case) gives the same action."""
    actions = [STAND, BEG, GIVE_ONE, RUN_PACK, PASS] + [f(c) for c in CANONICAL_DECK for f in (Play, Call)]
    for action in actions:
        msg = wire.action_to_pb(action)
        assert wire.action_from_pb(pb.Action.FromString(msg.SerializeToString())) == action
        if msg.card:
            assert wire.action_from_pb(pb.Action(kind=msg.kind, card=msg.card.lower())) == action
    assert len(set(actions)) == 109


@pytest.mark.parametrize(
    ("msg", "match"),
    [
        (pb.Action(), "ACTION_KIND_UNSPECIFIED"),
        (pb.Action(kind=pb.ACTION_KIND_PLAY), "needs a card"),
        (pb.Action(kind=pb.ACTION_KIND_PLAY, card="ZZ"), "not a card"),
        (pb.Action(kind=pb.ACTION_KIND_STAND, card="TH"), "takes no card"),
        (pb.Action(kind=99), "not an action kind"),
        (pb.Action(kind=99, card="TH"), "not an action kind"),
        (pb.Action(kind=pb.ACTION_KIND_CALL), "needs a card"),
        (pb.Action(kind=pb.ACTION_KIND_PASS, card="2C"), "takes no card"),
    ],
)
def test_malformed_actions_are_rejected(msg: pb.Action, match: str) -> None:
    with pytest.raises(wire.WireError, match=match):
        wire.action_from_pb(msg)


def test_every_engine_reason_has_a_wire_code_and_back() -> None:
    for r in Reason:
        assert wire.reason_from_pb(wire.reason_to_pb(r)) is r
    assert wire.reason_from_pb(pb.REASON_PROTOCOL_ERROR) is None


@pytest.mark.parametrize(
    "rules",
    [RuleSet(), RuleSet(players=2, deal_in="ones", target=7, hang_jack=False, undertrump_ban=True,
                        void_may_discard=True, kicked_six_points=1, hang_jack_points=2)],
)
def test_rules_round_trip(rules: RuleSet) -> None:
    msg = wire.rules_to_pb(rules)
    assert all(getattr(msg, f.name) if f.enum_type else msg.HasField(f.name) for f in msg.DESCRIPTOR.fields)
    assert wire.rules_from_pb(msg) == rules


def test_rule_options_and_proto_fields_are_the_same_names() -> None:
    """The wire converts RuleSet by field name: each option has its proto field, with presence (an
    unset field means "the default", not 0 or false), or an enum whose 0 is ``..._UNSPECIFIED``."""
    proto = {f.name: f for f in pb.RuleSet.DESCRIPTOR.fields}
    assert set(proto) == {f.name for f in dataclasses.fields(RuleSet)}
    for f in proto.values():
        assert f.has_presence or f.enum_type.values_by_number[0].name.endswith("_UNSPECIFIED"), f.name


@pytest.mark.parametrize(("option", "value", "default", "bad", "error"), [
    ("kicked_six_points", 1, 2, 3, "kicked_six_points must be 1 or 2, not 3"),
    ("hang_jack_points", 2, 3, 1, "hang_jack_points must be a whole number of at least 2, not 1"),
])
def test_point_options_cross_the_wire(option: str, value: int, default: int, bad: int, error: str) -> None:
    assert getattr(wire.rules_to_pb(RuleSet(**{option: value})), option) == value
    assert wire.rules_from_pb(pb.RuleSet(**{option: value})) == RuleSet(**{option: value})
    assert getattr(wire.rules_from_pb(pb.RuleSet()), option) == default
    with pytest.raises(wire.WireError, match=error):
        wire.rules_from_pb(pb.RuleSet(**{option: bad}))


def test_an_unknown_deal_in_is_a_wire_error() -> None:
    with pytest.raises(wire.WireError, match=r"rules\.deal_in: unknown value 9"):
        wire.rules_from_pb(pb.RuleSet(deal_in=9))  # type: ignore[arg-type]


def test_unset_rules_take_rulebook_defaults() -> None:
    assert wire.rules_from_pb(pb.RuleSet()) == RuleSet()
    assert wire.rules_from_pb(pb.RuleSet(players=2)) == RuleSet(players=2)


def test_bad_rules_are_a_wire_error() -> None:
    with pytest.raises(wire.WireError, match="players must be 2 or 4"):
        wire.rules_from_pb(pb.RuleSet(players=3))


def test_time_control_defaults_and_round_trip() -> None:
    assert wire.time_control_from_pb(pb.TimeControl()) == wire.TimeControl()
    tc = wire.TimeControl(decision_ms=200, bank_ms=9000, max_strikes=2, grace_ms=500, join_ms=800,
                          max_protocol_errors=4, max_illegal=5)
    assert wire.time_control_from_pb(wire.time_control_to_pb(tc)) == tc


def _random_game_observations(players: int, seed: int, expose: float) -> Iterator[tuple[int, Observation]]:
    """``(game, observation)`` for every seat at every decision of 3 random games; before each
    decision, with probability ``expose``, the seat after the one to act plays a card out of turn
    (an exposure, docs/rules.md, the call)."""
    rng = random.Random(seed)
    for game in range(1, 4):
        state = new_game(RuleSet(players=players), dealer=game % players)
        while state.phase is not Phase.OVER:
            if state.phase is Phase.DEAL:
                state = deal(state, deck_for(SEED, game, state.deal_number + 1))
                continue
            for seat in range(players):
                yield game, observe(state, seat)
            other = (state.to_act + 1) % players  # type: ignore[operator]
            if rng.random() < expose and state.hands[other]:
                state = apply(state, Play(state.hands[other][0]), other)
            state = apply(state, rng.choice(legal_actions(state)))


@pytest.mark.parametrize("players", [2, 4])
def test_observation_round_trip_through_random_games(players: int) -> None:
    """Every observation of every seat, at every step of random games, survives the wire."""
    checked = 0
    for _, obs in _random_game_observations(players, seed=players, expose=0.02):
        msg = pb.Observation.FromString(wire.observation_to_pb(obs).SerializeToString())
        assert wire.observation_from_pb(msg) == obs
        checked += 1
    assert checked > 100


def _minus_one(v: int | None) -> int:
    return -1 if v is None else v


def _field_by_field(obs: Observation) -> pb.Observation:
    """The plain build of an Observation message, one field at a time: the reference that
    wire.observation_to_pb (built from serialized fragments) must match byte for byte."""
    o = obs
    return pb.Observation(
        seat=o.seat, rules=wire.rules_to_pb(o.rules), phase=wire.phase_to_pb(o.phase), to_act=_minus_one(o.to_act),
        dealer=o.dealer, deal_number=o.deal_number, scores=o.scores, winner=_minus_one(o.winner),
        trump=o.trump.value if o.trump else "", kicks=[str(c) for c in o.kicks], begged=o.begged,
        hand=[str(c) for c in o.hand], hand_sizes=o.hand_sizes,
        exposed=[pb.ExposedCard(seat=s, card=str(c)) for s, c in o.exposed],
        called=str(o.called) if o.called else "", call_for=_minus_one(o.call_for), trick_leader=o.trick_leader,
        trick=[str(c) for c in o.trick], tricks=[wire.trick_to_pb(t) for t in o.tricks],
        points=[wire.point_to_pb(p) for p in o.points], legal_actions=[wire.action_to_pb(a) for a in o.legal])


@pytest.mark.parametrize("players", [2, 4])
def test_observation_and_request_match_the_field_by_field_build(players: int) -> None:
    """observation_to_pb and decision_request_to_pb give, byte for byte, the message built field by
    field, for every seat at every step of random games with exposures, begs and calls (4 players)."""
    checked = 0
    kinds: set[Phase] = set()
    for game, obs in _random_game_observations(players, seed=100 + players, expose=0.05):
        want = _field_by_field(obs).SerializeToString(deterministic=True)
        assert wire.observation_to_pb(obs).SerializeToString(deterministic=True) == want
        req = wire.decision_request_to_pb(7, game, obs, into=pb.DecisionRequest())
        assert (req.seq, req.game) == (7, game)
        assert req.observation.SerializeToString(deterministic=True) == want
        assert [wire.action_from_pb(a) for a in req.legal_actions] == list(obs.legal)
        checked += 1
        kinds.add(obs.phase)
    assert checked > 300
    assert {Phase.BEG, Phase.DEALER, Phase.PLAY} <= kinds


def test_every_event_of_random_games_survives_the_wire() -> None:
    """referee.events -> allfours.v1.Event -> referee.events is the identity, for every event kind
    that random play produces (step events from referee.events.step_events)."""
    import random as _random

    from referee.dealing import deck_for
    from referee.events import EVENT_KINDS, Event, step_events
    from referee.rules import Phase, RuleSet, apply, deal, legal_actions, new_game

    seen: set[str] = set()
    for players in (2, 4):
        rng = _random.Random(players)
        state = new_game(RuleSet(players=players), 0)
        while state.phase is not Phase.OVER:
            if state.phase is Phase.DEAL:
                new, action, seat = deal(state, deck_for(bytes(32), 1, state.deal_number + 1)), None, None
            else:
                legal = legal_actions(state)
                action, seat = legal[rng.randrange(len(legal))], state.to_act
                new = apply(state, action, seat)
            for ev in step_events(1, state, new, action, seat):
                assert wire.event_from_pb(wire.event_to_pb(ev)) == ev
                seen.add(ev.kind)
            state = new
    assert {"deal_started", "kick", "card_played", "trick_won", "points_scored", "deal_ended"} <= seen
    assert seen <= set(EVENT_KINDS)
    extra = Event("game_ended", game=2, deal=5, scores=(14, 9), winner=0, forfeited=True)
    assert wire.event_from_pb(wire.event_to_pb(extra)) == extra


#: The docs that name every rule option: the rulebook (its default), the config file's
#: ``[tournament.rules]`` and the replay format's ``rules`` object.
RULE_DOCS = ("docs/rules.md", "docs/tournament-config.md", "docs/formats.md")


def test_every_rule_option_is_documented() -> None:
    """A new RuleSet option touches ruleset.py, its rule in engine.py, its proto field (the test above)
    and these docs (docs/architecture.md, "A new rule option"): each names it as ``name`` or ``name =``."""
    root = Path(__file__).resolve().parents[1]
    missing = [
        f"{doc}: {f.name}"
        for doc in RULE_DOCS
        for f in dataclasses.fields(RuleSet)
        if f"`{f.name}`" not in (text := (root / doc).read_text()) and f"\n{f.name} =" not in text
    ]
    assert not missing, "rule options the docs do not name:\n" + "\n".join(missing)
