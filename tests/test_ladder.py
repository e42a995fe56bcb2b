"""The ladder's choice rule on small explicit fields (arena/formats/ladder.py, issue 23).

Fields are written as duplicate pairs with their points: ``pairs("A", "B", 2, 2, 1)`` is three pairs
in which A scored 2, 2 and 1 of the 2 points (a pair is two games with the sides swapped).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arena.formats.ladder as ladder_module
from arena.formats.ladder import (
    DAY_S,
    Budget,
    Ladder,
    Plan,
    Played,
    Reason,
    Rules,
    Stop,
    next_pairs,
    van_der_corput,
)
from arena.ratings.fit import Game, rate

SEED = bytes(range(32))


def pairs(a: str, b: str, *points: float, at: float = 0.0, tag: str = "") -> list[Played]:
    """One duplicate pair per value of ``points`` (a's points of 2: 0, 0.5, ..., 2), a on side 0 first."""
    out = []
    for k, x in enumerate(points):
        first = 1.0 if x >= 1 else x
        pid = f"{tag}{a}-{b}-{k}"
        out += [Played(a, b, first, pid, at), Played(b, a, 1.0 - (x - first), pid, at)]
    return out


def names_of(choice) -> set[str]:
    return {choice.a, choice.b}


# A strong, B and C level (a coin flip after many pairs), D weak: every other gap is settled.
TIE = (
    pairs("A", "B", *[2] * 8) + pairs("A", "C", *[2] * 8) + pairs("B", "C", *[1] * 6)
    + pairs("B", "D", *[2] * 8) + pairs("C", "D", *[2] * 8)
)  # fmt: skip
FIELD = ["A", "B", "C", "D"]


def test_points_helper() -> None:
    assert [g.score for g in pairs("A", "B", 2, 1.5, 1, 0)] == [1, 0, 1, 0.5, 1, 1, 0, 1]


def test_a_tie_between_two_close_entrants_gets_the_next_game() -> None:
    plan = next_pairs(FIELD, TIE, master_seed=SEED)
    assert plan.stop is None and len(plan.choices) == 1
    (choice,) = plan.choices
    assert names_of(choice) == {"B", "C"} and choice.reason is Reason.CLOSEST_UNDECIDED
    assert choice.gap == 0.0 and choice.undecided == 1.0 and choice.gap_sd > 0


def test_a_field_of_equal_intervals_has_no_widest_interval() -> None:
    """Two level entrants (equal intervals) or three after a round robin: each is at the field's tenth
    widest, so every later pair used to be labelled "widest interval" on the board; it is the closest
    undecided pair."""
    two = next_pairs(["A", "B"], pairs("A", "B", 1, 1, 1, 1), master_seed=SEED)
    three = [g for a, b in itertools.combinations("XYZ", 2) for g in pairs(a, b, 1, 1, 1, 1, tag="t")]
    for plan in (two, next_pairs(list("XYZ"), three, master_seed=SEED)):
        assert [c.reason for c in plan.choices] == [Reason.CLOSEST_UNDECIDED], plan


def test_a_settled_far_pair_gets_no_game() -> None:
    far = pairs("A", "B", *[2] * 10)
    assert next_pairs(["A", "B"], far, master_seed=SEED).choices == []
    assert next_pairs(["A", "B"], far, master_seed=SEED).stop is Stop.SETTLED
    # in the tie field no pair with A or D is ever chosen, however many are asked for
    plan = next_pairs(FIELD, TIE, master_seed=SEED, count=5)
    assert plan.choices and all(names_of(c) == {"B", "C"} for c in plan.choices)


def test_a_crowded_group_gets_the_next_game_before_an_isolated_pair() -> None:
    """Four level entrants (three pairs each pairing) and, far below, two level entrants with three pairs
    and so wider intervals: a rank error is likelier where the ranking is crowded, so the next games go
    to the group of four (the rule before it chose the isolated pair, for its wider intervals)."""
    crowd = [f"X{k}" for k in range(4)]
    group = [g for a, b in itertools.combinations(crowd, 2) for g in pairs(a, b, 1, 1, 1, tag="c")]
    crowded = group + pairs("Y0", "Y1", 1, 1, 1) + pairs("X3", "Y0", *[2] * 8)
    ladder = Ladder(SEED)
    ladder.extend(crowded)
    field = [*crowd, "Y0", "Y1"]
    sd = {s.name: s.sd for s in ladder.standings(field)}
    assert min(sd["Y0"], sd["Y1"]) > max(sd[x] for x in crowd)
    plan = ladder.next_pairs(field, count=3)
    assert plan.stop is None and all(names_of(c) <= set(crowd) for c in plan.choices)
    assert all(c.reason is Reason.CLOSEST_UNDECIDED for c in plan.choices)


def test_a_settled_field_stops_and_says_so() -> None:
    chain = pairs("A", "B", *[2] * 6) + pairs("B", "C", *[2] * 6) + pairs("C", "D", *[2] * 6)
    ladder = Ladder(SEED)
    ladder.extend(chain)
    assert ladder.next_pairs(FIELD).stop is Stop.SETTLED
    assert [s.name for s in ladder.standings(FIELD)] == FIELD and all(s.settled for s in ladder.standings(FIELD))


def test_a_width_settles_a_pair_that_stays_level() -> None:
    level = pairs("A", "B", *[1] * 40)
    assert next_pairs(["A", "B"], level, master_seed=SEED).choices  # undecided by z: plays on
    plan = next_pairs(["A", "B"], level, master_seed=SEED, rules=Rules(width=120.0))
    assert plan.choices == [] and plan.stop is Stop.SETTLED


def test_a_new_entrant_plays_first_and_across_the_field() -> None:
    order = [f"E{k}" for k in range(9)]  # E0 strongest; each beats the next 1.5 to 0.5 a pair
    chain = [g for a, b in itertools.pairwise(order) for g in pairs(a, b, *[1.5] * 6)]
    field = [*order, "new"]
    plan = next_pairs(field, chain, master_seed=SEED, count=4)
    assert plan.stop is None and Rules().new_pairs == 3
    assert all(c.a == "new" and c.reason is Reason.NEW_ENTRANT for c in plan.choices[:3])
    assert plan.choices[3].reason is not Reason.NEW_ENTRANT  # its first three pairs are played
    opponents = [order.index(c.b) for c in plan.choices[:3]]
    assert 3 <= opponents[0] <= 5  # the middle of the field first (quantile 0.5)
    assert opponents[1] <= 2 and opponents[2] >= 6  # then the upper and the lower quartile (best first)
    assert rate([Game(g.a, g.b, g.score, g.pair) for g in chain], names=field, bootstrap=0)["unrated"] == [
        {"bot": "new", "why": "no games"}
    ]


def test_van_der_corput() -> None:
    assert [van_der_corput(k) for k in range(7)] == [0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]


def test_the_choice_is_deterministic_and_seeded() -> None:
    """Equal values (no games yet) are broken by the seeded hash: the same for any order of the field
    or of the results, different for another master seed."""
    field = [f"bot{k}" for k in range(12)]
    first = next_pairs(field, [], master_seed=SEED, count=6).choices
    assert next_pairs(list(reversed(field)), [], master_seed=SEED, count=6).choices == first
    others = {
        tuple(tuple(sorted(names_of(c))) for c in next_pairs(field, [], master_seed=bytes([s] * 32), count=6).choices)
        for s in range(5)
    }
    assert len(others) > 1
    shuffled = TIE[:]
    random.Random(3).shuffle(shuffled)
    assert next_pairs(FIELD, shuffled, master_seed=SEED, count=3) == next_pairs(FIELD, TIE, master_seed=SEED, count=3)


def play(a: str, b: str, strength: dict[str, float], rng: random.Random, tag: str) -> list[Played]:
    """A simulated duplicate pair (logistic, 400-point scale)."""
    p = 1.0 / (1.0 + 10 ** ((strength[b] - strength[a]) / 400))
    return [Played(a, b, float(rng.random() < p), tag), Played(b, a, float(rng.random() >= p), tag)]


def test_a_restart_from_the_stored_results_resumes_the_same_way() -> None:
    """The live ladder (a game at a time, warm fits, choices between) and a ladder rebuilt from the
    stored games (a restart) choose the same next pairs at every step."""
    rng = random.Random(5)
    strength = {f"bot{k}": rng.gauss(0, 200) for k in range(16)}
    field = sorted(strength)
    live, stored = Ladder(SEED), []
    for t in range(80):
        plan = live.next_pairs(field, count=2)
        assert plan == next_pairs(field, stored, master_seed=SEED, count=2), t
        pair = play(plan.choices[0].a, plan.choices[0].b, strength, rng, f"d{t}")
        stored += pair
        live.extend(pair)


def test_the_shortlist_chooses_what_valuing_every_pairing_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the pairings of highest bound are valued in full: with a shortlist of 3 and with none, a
    ladder over 40 simulated entrants chooses the same pairs at every step."""
    rng = random.Random(11)
    strength = {f"bot{k}": rng.gauss(0, 150) for k in range(40)}
    field = sorted(strength)
    stored: list[Played] = []
    for t in range(60):
        monkeypatch.setattr(ladder_module, "_SHORTLIST", 3)
        short = next_pairs(field, stored, master_seed=SEED, count=3)
        monkeypatch.setattr(ladder_module, "_SHORTLIST", 10**9)
        assert short == next_pairs(field, stored, master_seed=SEED, count=3), t
        for c in short.choices:
            stored += play(c.a, c.b, strength, rng, f"d{t}{c.a}")


def test_fair_shares_hold_an_entrant_to_twice_the_median_of_the_day() -> None:
    """On a new day everyone has played nothing: the one undecided pair gets its game, then waits."""
    plan = next_pairs(FIELD, TIE, master_seed=SEED, now=DAY_S, count=3)
    assert [names_of(c) for c in plan.choices] == [{"B", "C"}]
    assert plan.stop is Stop.FAIR_SHARES
    # a field of many entrants all rated level: nobody gets more than twice the median pairs
    rng = random.Random(2)
    field = [f"bot{k}" for k in range(10)]
    games = [g for k in range(30) for g in play(*rng.sample(field, 2), dict.fromkeys(field, 0.0), rng, f"w{k}")]
    ladder = Ladder(SEED, Rules(new_pairs=0))
    ladder.extend(games)
    plan = ladder.next_pairs(field, now=DAY_S, count=40)
    per = {x: sum(x in names_of(c) for c in plan.choices) for x in field}
    median = sorted(per.values())[len(per) // 2 - 1 : len(per) // 2 + 1]
    assert max(per.values()) <= 2 * max(1, sum(median) / 2), per


def test_a_new_entrant_in_a_settled_field_is_placed_on_its_first_day() -> None:
    """A field of ten played until settled on day 0; a new version arrives on day 1. Nobody else needs
    games, so the day's median is 0 and the day's share one pair: the newcomer used to get its 3 new
    pairs and then one pair a day (16 pairs after 14 days, still unsettled). Below the field's median
    pairs in all it catches up: on day 1 it is placed between its true neighbours."""
    rng, strength = random.Random(3), {f"e{k}": k * -150.0 for k in range(10)}
    ladder, field, tag = Ladder(SEED), list(strength), iter(range(10**6))

    def play_day(day: int) -> Plan:
        while (plan := ladder.next_pairs(field, now=day * DAY_S + 2, count=4)).choices:
            for c in plan.choices:
                ladder.extend(Played(g.a, g.b, g.score, g.pair, day * DAY_S + 1)
                              for g in play(c.a, c.b, strength, rng, f"u{next(tag)}"))  # fmt: skip
        return plan

    assert play_day(0).stop is Stop.SETTLED
    strength["new"] = -525.0  # between e3 and e4
    field.append("new")
    play_day(1)
    standings = ladder.standings(field, now=DAY_S)
    new = next(s for s in standings if s.name == "new")
    assert new.pairs >= 10 and [s.name for s in standings][3:6] == ["e3", "new", "e4"], standings


def test_budgets() -> None:
    ten = TIE[:10]  # 10 games
    plan = next_pairs(FIELD, TIE, Budget(total=len(TIE) + 2), master_seed=SEED, count=3)
    assert len(plan.choices) == 1 and plan.stop is Stop.TOTAL_BUDGET
    assert next_pairs(FIELD, ten, Budget(total=10), master_seed=SEED).stop is Stop.TOTAL_BUDGET
    games_of_b = sum("B" in (g.a, g.b) for g in TIE)
    plan = next_pairs(FIELD, TIE, Budget(per_entrant=games_of_b + 2), master_seed=SEED, count=3)
    assert [names_of(c) for c in plan.choices] == [{"B", "C"}] and plan.stop is Stop.ENTRANT_BUDGETS
    today = pairs("X", "Y", 1, 1, at=3 * DAY_S + 10)
    assert next_pairs(["X", "Y"], today, Budget(per_entrant_per_day=4), now=3 * DAY_S + 99,
                      master_seed=SEED).stop is Stop.DAY_BUDGETS  # fmt: skip
    assert next_pairs(["X", "Y"], today, Budget(per_entrant_per_day=4), now=4 * DAY_S, master_seed=SEED).choices


def test_a_game_without_a_winner_counts_for_the_budgets_not_the_fit() -> None:
    """Both sides forfeited (``score`` None): it teaches nothing of strength, so the ladder's fit is the
    same without it, but it was played: it counts for the budgets and as the pair's game."""
    blank = [Played("B", "C", None, "void-0"), Played("C", "B", None, "void-0")]
    ladder, plain = Ladder(SEED), Ladder(SEED)
    ladder.extend(TIE + blank)
    plain.extend(TIE)
    assert all(ladder.elo(x) == plain.elo(x) for x in FIELD) and ladder.games == len(TIE) + 2
    plan = ladder.next_pairs(FIELD, Budget(total=len(TIE) + 4), count=3)
    assert len(plan.choices) == 1 and plan.stop is Stop.TOTAL_BUDGET
    games_of_b = sum("B" in (g.a, g.b) for g in TIE) + 2
    by_b = ladder.next_pairs(FIELD, Budget(per_entrant=games_of_b + 2), count=3)
    assert [names_of(c) for c in by_b.choices] == [{"B", "C"}] and by_b.stop is Stop.ENTRANT_BUDGETS
    pairs_of_b = [next(s.pairs for s in x.standings(FIELD) if s.name == "B") for x in (ladder, plain)]
    assert pairs_of_b[0] == pairs_of_b[1] + 1


def test_two_bots_that_forfeit_every_game_against_each_other_are_not_paired_again() -> None:
    """X and Y forfeit every game (both sides of X v Y: no winner, ``score`` None). Their gap can never
    be decided by playing them, so once their pairing has had a pair without a result it counts as
    resolved: the rest of the field settles and the ladder stops. It used to choose X v Y again and
    again (the one open gap left), more than half of all games, and never settled."""
    chain = pairs("A", "B", *[2] * 6) + pairs("B", "C", *[2] * 6)
    losses = [g for x in ("X", "Y") for o in ("A", "B", "C") for g in pairs(o, x, *[2] * 3, tag=x)]
    void = [Played("X", "Y", None, "void-0"), Played("Y", "X", None, "void-0")]
    field = ["A", "B", "C", "X", "Y"]
    ladder = Ladder(SEED)
    ladder.extend(chain + losses + void)
    plan = ladder.next_pairs(field, count=3)
    assert all(names_of(c) != {"X", "Y"} for c in plan.choices), plan
    # played out, with X and Y forfeiting every game: X v Y gets no pair beyond its first
    stored, rng = list(chain + losses), random.Random(4)
    strength = {"A": 400.0, "B": 0.0, "C": -400.0}
    for t in range(150):
        plan = next_pairs(field, stored, master_seed=SEED)
        if not plan.choices:
            break
        (c,) = plan.choices
        if {c.a, c.b} == {"X", "Y"}:
            stored += [Played(c.a, c.b, None, f"v{t}"), Played(c.b, c.a, None, f"v{t}")]
        elif {c.a, c.b} & {"X", "Y"}:
            stored += pairs(c.b, c.a, 2, tag=f"f{t}") if c.a in "XY" else pairs(c.a, c.b, 2, tag=f"f{t}")
        else:
            stored += play(c.a, c.b, strength, rng, f"d{t}")
    assert plan.stop is Stop.SETTLED, plan
    assert sum({g.a, g.b} == {"X", "Y"} for g in stored) <= 2


def test_pending_pairs_count_as_played() -> None:
    alone = next_pairs(FIELD, TIE, Budget(total=len(TIE) + 2), master_seed=SEED, pending=[("B", "C")])
    assert alone.choices == [] and alone.stop is Stop.TOTAL_BUDGET


def test_too_few_entrants_and_bad_input() -> None:
    assert next_pairs(["A"], [], master_seed=SEED).stop is Stop.TOO_FEW
    with pytest.raises(ValueError, match="distinct"):
        next_pairs(["A", "A"], [], master_seed=SEED)
    with pytest.raises(ValueError, match="per_entrant"):
        Budget(per_entrant=-2)
    with pytest.raises(ValueError, match="two entrants"):
        Played("A", "A", 1.0)
    with pytest.raises(ValueError, match="width"):
        Rules(width=0)
    for bad in ({"fair_share": 0.5}, {"fair_share": math.nan}, {"width": math.inf}, {"z": math.nan}, {"window": 0}):
        with pytest.raises(ValueError, match=f"^ladder rule {next(iter(bad))} must be"):
            Rules(**bad)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from([0, 0.5, 1, 1.5, 2])), max_size=30),
    st.integers(0, 12),
    st.one_of(st.none(), st.integers(0, 30)),
)
def test_choices_respect_the_field_and_the_budgets(results, count, per_entrant) -> None:
    names = [f"e{k}" for k in range(6)]
    games = [g for k, (a, b, x) in enumerate(results) if a != b for g in pairs(names[a], names[b], x, tag=f"{k}:")]
    field = names[:5]
    plan = next_pairs(field, games, Budget(per_entrant=per_entrant), master_seed=SEED, count=count)
    assert len(plan.choices) <= count and (plan.stop is None) == (len(plan.choices) == count)
    played = {x: sum(x in (g.a, g.b) for g in games) for x in names}
    for c in plan.choices:
        assert c.a != c.b and {c.a, c.b} <= set(field)
        for x in (c.a, c.b):
            played[x] += 2
            assert per_entrant is None or played[x] <= per_entrant
