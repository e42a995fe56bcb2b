"""The engine's fast constructors (referee/rules/values.py) build exactly what the plain ones build."""

from __future__ import annotations

import ast
import dataclasses
import random

import pytest

from referee.dealing import deck_for
from referee.events import Event, step_events
from referee.rules import (
    DealRecord,
    Observation,
    Phase,
    RuleSet,
    State,
    Trick,
    apply,
    deal,
    legal_actions,
    new_game,
    observe,
)
from referee.rules.values import maker, replacer


def _play_random_game(seed: int, players: int) -> list[tuple[State, State, object, int | None]]:
    """Every step ``(before, after, action, seat)`` of one random game (decks from ``seed``)."""
    rng = random.Random(seed)
    state = new_game(RuleSet(players=players), dealer=seed % players)
    steps = []
    deals = 0
    while state.phase is not Phase.OVER and len(steps) < 2000:
        if state.phase is Phase.DEAL:
            deals += 1
            before, state = state, deal(state, deck_for(bytes([seed]) * 32, 1, deals))
            steps.append((before, state, None, None))
        else:
            legal = legal_actions(state)
            action = legal[rng.randrange(len(legal))]
            before, state = state, apply(state, action)
            steps.append((before, state, action, before.to_act))
    assert state.phase is Phase.OVER
    return steps


def _field_values(value: object) -> dict[str, object]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}  # type: ignore[arg-type]


@pytest.mark.parametrize("seed,players", [(1, 4), (2, 2), (3, 4)])
def test_every_value_of_a_game_equals_the_plain_constructors(seed: int, players: int) -> None:
    """Each State, DealRecord, Trick, Observation and Event a game makes equals (and hashes like) the
    value the dataclass's own ``__init__`` builds from the same fields, and ``replace`` matches too."""
    seen = {State: 0, DealRecord: 0, Trick: 0, Observation: 0, Event: 0}
    for before, after, action, seat in _play_random_game(seed, players):
        values: list[object] = [after, *after.deals, *(t for d in after.deals for t in d.tricks)]
        values += [observe(after, s) for s in range(players)]
        values += step_events(1, before, after, action, seat)  # type: ignore[arg-type]
        for v in values:
            plain = type(v)(**_field_values(v))
            assert type(v) is type(plain) and v == plain and hash(v) == hash(plain) and repr(v) == repr(plain)
            seen[type(v)] += 1
        changes = {"to_act": None, "trick": ()}
        assert replacer(State)(after, **changes) == dataclasses.replace(after, **changes)  # type: ignore[arg-type]
    assert all(seen.values()), seen


def test_a_value_built_fast_is_still_frozen() -> None:
    state = maker(State)(rules=RuleSet(), phase=Phase.DEAL, dealer=0, scores=(0, 0))
    assert state == State(rules=RuleSet(), phase=Phase.DEAL, dealer=0, scores=(0, 0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.dealer = 1  # type: ignore[misc]


def test_missing_and_unknown_fields_fail_as_with_the_constructor() -> None:
    with pytest.raises(TypeError):
        maker(Trick)(cards=())  # leader missing
    with pytest.raises(TypeError):
        replacer(Trick)(Trick(leader=0, cards=()), leaderr=1)


def test_classes_whose_construction_does_more_are_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        x: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        x: int

    for cls in (Checked, Factory, NoSlots, RuleSet):
        with pytest.raises(TypeError):
            maker(cls)


@pytest.mark.parametrize("cls", [State, DealRecord, Trick, Observation, Event])
def test_the_compiled_source_names_only_fields_and_fixed_helpers(cls: type) -> None:
    """The one ``exec`` in referee/rules compiles code made of the class's field names and nothing else."""
    allowed = {f.name for f in dataclasses.fields(cls)} | {"_v", "_old", "_new", "_Draft", "_cls", "_KEEP", "_K"}
    allowed |= {f"_d_{f.name}" for f in dataclasses.fields(cls)}
    for fn in (maker(cls), replacer(cls)):
        source = fn.__doc__.split("\n\n", 1)[1]
        names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        names |= {a.arg for n in ast.walk(ast.parse(source)) if isinstance(n, ast.arguments)
                  for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}
        attrs = {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
        assert names <= allowed, names - allowed
        assert attrs <= {f.name for f in dataclasses.fields(cls)} | {"__class__"}
