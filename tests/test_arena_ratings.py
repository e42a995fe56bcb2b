"""Ratings against known answers computed by hand (arena/ratings/fit.py).

Known answers: in the logistic 400-scale model an expected score p between two bots means a rating
difference of 400*log10(p/(1-p)); 75% -> 400*log10(3) = 190.85, 90% -> 400*log10(9) = 381.70.
Three bots with A-B 75%, B-C 75%, A-C 90% fit that model exactly, so the MLE reproduces it.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from arena.ratings.fit import Game, GamesFileError, history, parse_anchor, rate, read_games

ROOT = Path(__file__).resolve().parents[1]

D75 = 400 * math.log10(3)  # 190.848...


def series(a: str, b: str, points: float, n: int, pair_prefix: str | None = None) -> list[Game]:
    """n games of a v b in which a scores `points` in total (whole wins, then at most one draw)."""
    wins, rest = int(points), points - int(points)
    out = []
    for k in range(n):
        s = 1.0 if k < wins else (0.5 if k == wins and rest else 0.0)
        out.append(Game(a, b, s, None if pair_prefix is None else f"{pair_prefix}{k // 2}"))
    return out


THREE = series("A", "B", 22.5, 30) + series("B", "C", 22.5, 30) + series("A", "C", 27, 30)


def elos(result: dict) -> dict[str, float]:
    return {k: v["elo"] for k, v in result["ratings"].items()}


@pytest.mark.parametrize("bootstrap", [0, 50])
def test_three_bots_known_answer(bootstrap: int) -> None:
    r = elos(rate(THREE, bootstrap=bootstrap))
    assert r["A"] == pytest.approx(1500 + D75, abs=0.01)
    assert r["B"] == pytest.approx(1500, abs=0.01)
    assert r["C"] == pytest.approx(1500 - D75, abs=0.01)
    assert round(D75, 2) == 190.85


def test_two_bots_75_percent() -> None:
    result = rate(series("X", "Y", 15, 20), bootstrap=0)
    r = elos(result)
    assert r["X"] == pytest.approx(1595.42, abs=0.01)
    assert r["Y"] == pytest.approx(1404.58, abs=0.01)
    assert result["prior"] is False
    assert result["ratings"]["X"]["games"] == 20 and result["ratings"]["X"]["score"] == 15


def test_anchor_shifts_everything() -> None:
    r = elos(rate(THREE, anchor=("C", 1000.0), bootstrap=0))
    assert r["C"] == pytest.approx(1000, abs=0.01)
    assert r["B"] == pytest.approx(1000 + D75, abs=0.01)
    assert r["A"] == pytest.approx(1000 + 2 * D75, abs=0.01)


def test_anchor_must_name_a_bot() -> None:
    with pytest.raises(ValueError, match="nobody"):
        rate(THREE, anchor=("nobody", 1.0), bootstrap=0)


def test_equal_results_give_equal_ratings() -> None:
    games = series("A", "B", 5, 10) + series("B", "C", 5, 10) + series("C", "A", 5, 10)
    assert elos(rate(games, bootstrap=0)) == {"A": 1500.0, "B": 1500.0, "C": 1500.0}


def test_draws_count_half() -> None:
    # 10 draws and 5 wins of 20: same as 10 wins of 20
    games = [Game("A", "B", 0.5)] * 10 + [Game("A", "B", 1.0)] * 5 + [Game("A", "B", 0.0)] * 5
    assert elos(rate(games, bootstrap=0)) == {"A": 1500.0, "B": 1500.0}


def test_a_perfect_score_uses_the_documented_prior() -> None:
    """A beats B in all n games: the MLE is infinite, so each bot gets one virtual draw against a
    reference at strength 0. By symmetry theta_A = -theta_B = t, and dL/dt_A = 0 reads
    n * (1 - sig(2t)) + (0.5 - sig(t)) = 0, solved here by bisection."""
    n = 5

    def sig(x: float) -> float:
        return 1 / (1 + math.exp(-x))

    lo, hi = 0.0, 20.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * (1 - sig(2 * mid)) + (0.5 - sig(mid)) > 0 else (lo, mid)
    expected = lo * 400 / math.log(10)
    result = rate([Game("A", "B", 1.0)] * n, bootstrap=0)
    assert result["prior"] is True
    assert result["ratings"]["A"]["elo"] == pytest.approx(1500 + expected, abs=0.01)
    assert result["ratings"]["B"]["elo"] == pytest.approx(1500 - expected, abs=0.01)


def test_no_prior_when_the_mle_exists() -> None:
    assert rate(THREE, bootstrap=0)["prior"] is False


def test_disconnected_components_are_reported_not_rated() -> None:
    """Two groups that never met: ratings across them would be the prior's invention (issue 23), so
    only the first of equal groups is rated and the other is listed with why."""
    games = series("A", "B", 15, 20) + series("C", "D", 10, 20)
    result = rate(games, bootstrap=0)
    assert result["components"] == [["A", "B"], ["C", "D"]]
    assert set(result["ratings"]) == {"A", "B"} and result["ranking"] == ["A", "B"]
    assert result["prior"] is False
    assert elos(result) == pytest.approx(elos(rate(series("A", "B", 15, 20), bootstrap=0)), abs=0.01)
    why = "no games link it to the rated group (A, B)"
    assert result["unrated"] == [{"bot": "C", "why": why}, {"bot": "D", "why": why}]
    assert "C" not in result["matrix"] and all(e["better"] in "AB" for e in result["los"])


def test_the_largest_group_is_rated_and_a_smaller_one_reported() -> None:
    games = THREE + series("D", "E", 10, 20)
    result = rate(games, bootstrap=50)
    assert set(result["ratings"]) == {"A", "B", "C"}
    assert elos(result) == pytest.approx(elos(rate(THREE, bootstrap=50)), abs=0.01)
    assert [u["bot"] for u in result["unrated"]] == ["D", "E"]
    assert result["games"] == len(games)


def test_the_anchor_chooses_the_rated_group() -> None:
    result = rate(THREE + series("D", "E", 15, 20), anchor=("E", 1000.0), bootstrap=0)
    assert elos(result) == pytest.approx({"D": 1000 + D75, "E": 1000.0}, abs=0.01)
    assert [u["bot"] for u in result["unrated"]] == ["A", "B", "C"]


def test_an_entrant_without_games_is_reported_and_does_not_move_the_others() -> None:
    """A new entrant with no games yet used to rate at the pool mean, and to force the virtual-draw
    prior on every other bot (the games graph was no longer connected)."""
    result = rate(THREE, names=["D"], bootstrap=0)
    assert "D" not in result["ratings"] and result["unrated"] == [{"bot": "D", "why": "no games"}]
    assert result["prior"] is False
    assert elos(result) == pytest.approx({"A": 1500 + D75, "B": 1500.0, "C": 1500 - D75}, abs=0.01)


def test_an_incomplete_pairing_graph_is_rated() -> None:
    """A ladder leaves most pairings unplayed: a chain A-B-C-D at 75% each (no other pairing) is a tree,
    so the maximum likelihood fits each edge exactly: neighbours D75 apart."""
    games = series("A", "B", 15, 20, "ab") + series("B", "C", 15, 20, "bc") + series("C", "D", 15, 20, "cd")
    result = rate(games, bootstrap=100)
    r = elos(result)
    assert result["prior"] is False and result["unrated"] == []
    assert r["A"] - r["B"] == pytest.approx(D75, abs=0.01) and r["C"] - r["D"] == pytest.approx(D75, abs=0.01)
    assert sum(r.values()) / 4 == pytest.approx(1500, abs=0.01)
    assert all(v["ci"][0] < v["elo"] < v["ci"][1] for v in result["ratings"].values())
    assert "C" not in result["matrix"]["A"]


def test_single_bot_and_no_games() -> None:
    result = rate([], names=["solo"], bootstrap=10)
    assert result["ratings"] == {
        "solo": {"elo": 1500.0, "ci": [1500.0, 1500.0], "ci_method": "anchor", "games": 0, "score": 0.0}
    }
    assert rate([], bootstrap=10)["ratings"] == {}
    nobody = rate([], names=["x", "y"], bootstrap=10)
    assert nobody["ratings"] == {}
    assert nobody["unrated"] == [{"bot": "x", "why": "no games"}, {"bot": "y", "why": "no games"}]


def test_matrix() -> None:
    m = rate(THREE, bootstrap=0)["matrix"]
    assert m["A"]["C"] == {"games": 30, "score": 27.0, "pct": 0.9}
    assert m["C"]["A"] == {"games": 30, "score": 3.0, "pct": 0.1}
    assert m["B"]["A"]["score"] == 7.5
    assert "C" not in m["C"]


def test_bootstrap_resamples_duplicate_pairs_together() -> None:
    """Each duplicate pair splits 1-1 (the side with the good cards wins both times): resampling
    pairs always gives 50%, so the interval has no width; resampling single games does."""
    games = []
    for k in range(20):
        games += [Game("A", "B", 1.0, f"d{k}"), Game("B", "A", 1.0, f"d{k}")]
    paired = rate(games, bootstrap=200, seed=1)["ratings"]["A"]
    assert paired["ci_bootstrap"] == [1500.0, 1500.0]
    # ... which is no estimate of the spread: the normal approximation is reported instead, and said so
    assert paired["ci_method"] == "normal" and "spread" in paired["ci_note"]
    assert paired["ci"] == rate(games, bootstrap=0)["ratings"]["A"]["ci"] and paired["ci"][1] > 1550
    unpaired = rate([Game(g.a, g.b, g.score) for g in games], bootstrap=200, seed=1)["ratings"]["A"]["ci"]
    assert unpaired[0] < 1480 and unpaired[1] > 1520


def test_bootstrap_is_deterministic_and_covers_the_estimate() -> None:
    one = rate(THREE, bootstrap=100, seed=7)
    assert one == rate(THREE, bootstrap=100, seed=7)
    assert one != rate(THREE, bootstrap=100, seed=8)
    for v in one["ratings"].values():
        assert v["ci"][0] < v["elo"] < v["ci"][1]


def test_normal_interval_known_answer() -> None:
    """Two bots, 75% of 48: Fisher information of theta_diff is n p (1-p) = 9, so the sd of the
    difference is 1/3 nat; each rating (half the difference from the mean) has sd 1/6 nat."""
    r = rate(series("X", "Y", 36, 48), bootstrap=0)["ratings"]["X"]
    half = 1.96 * (1 / 6) * 400 / math.log(10)
    assert r["ci"][0] == pytest.approx(r["elo"] - half, abs=0.01)
    assert r["ci"][1] == pytest.approx(r["elo"] + half, abs=0.01)


def test_los_between_neighbours() -> None:
    result = rate(THREE, bootstrap=0)
    assert result["los_method"] == "normal"
    assert [(e["better"], e["worse"]) for e in result["los"]] == [("A", "B"), ("B", "C")]
    # normal approximation, two bots at 75% of 48: diff/sd = ln 3 / (1/3)
    two = rate(series("X", "Y", 36, 48), bootstrap=0)["los"][0]["los"]
    assert two == pytest.approx(0.5 * (1 + math.erf(3 * math.log(3) / math.sqrt(2))), abs=1e-4)
    even = rate(series("X", "Y", 10, 20) + series("Y", "Z", 19, 20), bootstrap=300, seed=3)
    assert even["los_method"] == "bootstrap"
    by_pair = {(e["better"], e["worse"]): e["los"] for e in even["los"]}
    assert by_pair.get(("X", "Y"), by_pair.get(("Y", "X"))) == pytest.approx(0.5, abs=0.15)
    assert by_pair[("Y", "Z")] > 0.99


game_strategy = st.builds(
    Game,
    st.sampled_from(["p", "q", "r"]),
    st.sampled_from(["s", "t"]),
    st.sampled_from([0.0, 0.5, 1.0]),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(game_strategy, min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_ratings_do_not_depend_on_game_order(games: list[Game], rnd) -> None:
    shuffled = games[:]
    rnd.shuffle(shuffled)
    a, b = elos(rate(games, bootstrap=0)), elos(rate(shuffled, bootstrap=0))
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=0.02)


@settings(max_examples=40, deadline=None)
@given(st.lists(game_strategy, min_size=1, max_size=25), st.lists(st.booleans(), min_size=25, max_size=25))
def test_swapping_sides_and_score_changes_nothing(games: list[Game], flips: list[bool]) -> None:
    swapped = [Game(g.b, g.a, 1.0 - g.score) if f else g for g, f in zip(games, flips, strict=False)]
    a, b = elos(rate(games, bootstrap=0)), elos(rate(swapped, bootstrap=0))
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=0.02)


# ------------------------------------------------------------------ against an independent fit


def independent_fit(games: list[Game], bots: list[str], prior: bool) -> dict[str, float]:
    """Bradley–Terry by scipy.optimize (BFGS on the negative log-likelihood, game by game), the pool
    mean at 1500; with ``prior``, each bot's one virtual draw against a reference fixed at 0 (the
    documented prior), else the first bot's strength fixed at 0 (the gauge)."""
    index = {b: k for k, b in enumerate(bots)}

    def negative_loglik(free: np.ndarray) -> float:
        theta = free if prior else np.concatenate([[0.0], free])
        total = 0.0
        for g in games:
            d = theta[index[g.a]] - theta[index[g.b]]
            total += g.score * np.logaddexp(0.0, -d) + (1 - g.score) * np.logaddexp(0.0, d)
        if prior:
            total += float(np.sum(0.5 * np.logaddexp(0.0, -theta) + 0.5 * np.logaddexp(0.0, theta)))
        return float(total)

    found = minimize(negative_loglik, np.zeros(len(bots) - (0 if prior else 1)), method="BFGS", options={"gtol": 1e-10})
    theta = found.x if prior else np.concatenate([[0.0], found.x])
    elo = theta * 400 / math.log(10)
    return {b: float(e - elo.mean() + 1500) for b, e in zip(bots, elo, strict=True)}


def mle_exists(games: list[Game], bots: list[str]) -> bool:
    """Zermelo/Ford's condition by brute force: every split of ``bots`` in two scored against the other both ways."""
    for size in range(1, len(bots)):
        for group in itertools.combinations(bots, size):
            inside = set(group)
            scored_out = any((g.a in inside) != (g.b in inside) and (g.score if g.a in inside else 1 - g.score) > 0
                             for g in games)
            scored_in = any((g.a in inside) != (g.b in inside) and (g.score if g.b in inside else 1 - g.score) > 0
                            for g in games)
            if not (scored_out and scored_in):
                return False
    return True


any_game = st.tuples(st.integers(0, 4), st.integers(1, 4), st.sampled_from([0.0, 0.5, 1.0])).map(
    lambda t: Game(f"b{t[0]}", f"b{(t[0] + t[1]) % 5}", t[2])
)


@settings(max_examples=60, deadline=None)
@given(st.lists(any_game, min_size=1, max_size=30))
def test_the_fit_is_bradley_terry_maximum_likelihood(games: list[Game]) -> None:
    """On any small table (any pairing graph, draws, a bot that won everything, groups that never met):
    the rated group's ratings are an independent optimiser's maximum, with the prior exactly when the
    maximum does not exist, and the pool mean is 1500."""
    result = rate(games, bootstrap=0)
    rated = sorted(result["ratings"])
    if len(rated) < 2:
        return
    inside = [g for g in games if g.a in result["ratings"]]
    assert result["prior"] == (not mle_exists(inside, rated))
    expected = independent_fit(inside, rated, result["prior"])
    assert elos(result) == pytest.approx(expected, abs=0.02)
    assert sum(elos(result).values()) / len(rated) == pytest.approx(1500, abs=0.01)


@settings(max_examples=30, deadline=None)
@given(st.lists(any_game, min_size=1, max_size=30), st.permutations(["q", "x", "a", "m", "c"]))
def test_relabelling_the_bots_relabels_the_ratings(games: list[Game], labels: list[str]) -> None:
    """Names carry no weight: renaming the bots renames their ratings, intervals and scores, nothing else
    (but for which of two equally large groups that never met is rated: the first by name, as documented)."""
    rename = {f"b{k}": label for k, label in enumerate(labels)}
    result = rate(games, bootstrap=0)
    sizes = [len(c) for c in result["components"]]
    assume(sizes.count(max(sizes)) == 1)
    before = result["ratings"]
    after = rate([Game(rename[g.a], rename[g.b], g.score) for g in games], bootstrap=0)["ratings"]
    assert {rename[b] for b in before} == set(after)
    for bot, r in before.items():
        assert after[rename[bot]]["elo"] == pytest.approx(r["elo"], abs=0.02)
        assert after[rename[bot]]["ci"] == pytest.approx(r["ci"], abs=0.02)
        assert after[rename[bot]]["score"] == r["score"]


def test_tied_bots_are_ranked_by_name_not_by_rounding_noise() -> None:
    """A clone (the same results against everyone, one win and one loss against its original) ties
    with its original to the last digit published; bots of equal published rating are ranked by name.
    The ranking used to sort on the unrounded fit, so rounding noise (1e-13 Elo) decided, e.g. ``zz``
    before ``n3``, both 1515.33."""
    rng = random.Random(5)
    for _ in range(300):
        names = ["n0", "n1", "n2", "n3"]
        games = [Game(*rng.sample(names, 2), rng.choice([0.0, 0.5, 1.0])) for _ in range(30)]
        original, clone = rng.choice(names), rng.choice(["zz", "c1", "a7"])
        games += [Game(clone if g.a == original else g.a, clone if g.b == original else g.b, g.score)
                  for g in games if original in (g.a, g.b)]
        games += [Game(original, clone, 1.0), Game(original, clone, 0.0)]
        result = rate(games, bootstrap=0)
        if original not in result["ratings"]:
            continue
        assert result["ratings"][original]["elo"] == result["ratings"][clone]["elo"]
        published = elos(result)
        assert result["ranking"] == sorted(published, key=lambda b: (-published[b], b))
        assert list(result["ratings"]) == result["ranking"]


def test_read_games_names_the_bad_line() -> None:
    lines = ['{"a": "x", "b": "y", "score": 1}', "", '{"a": "x", "b": "y", "score": 2}']
    with pytest.raises(GamesFileError, match=r"f\.jsonl:3: 'score' must be 1, 0.5 or 0"):
        read_games(lines, "f.jsonl")
    with pytest.raises(GamesFileError, match=r"f\.jsonl:1: not valid JSON"):
        read_games(["{nope"], "f.jsonl")
    with pytest.raises(GamesFileError, match=r":1: 'b' must be a non-empty string"):
        read_games(['{"a": "x", "score": 1}'], "f.jsonl")
    with pytest.raises(ValueError, match="NAME=RATING"):
        parse_anchor("1500")


def test_cli(tmp_path) -> None:
    f = tmp_path / "games.jsonl"
    f.write_text("".join(json.dumps({"a": g.a, "b": g.b, "score": g.score}) + "\n" for g in THREE))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena.ratings.fit",
            str(f),
            "--anchor",
            "B=2000",
            "--bootstrap",
            "20",
            "--seed",
            "5",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["ratings"]["A"]["elo"] == pytest.approx(2000 + D75, abs=0.01)
    assert data["ratings"]["B"]["ci"] == [2000.0, 2000.0] and data["ratings"]["B"]["ci_method"] == "anchor"
    assert data["ratings"]["C"]["games"] == 60
    f.write_text('{"a": "x", "b": "y", "score": 1}\n{"a": "x", "b": "x", "score": 1}\n')
    bad = subprocess.run([sys.executable, "-m", "arena.ratings.fit", str(f)], capture_output=True, text=True)
    assert bad.returncode == 2
    assert f"{f}:2:" in bad.stderr and "two different bots" in bad.stderr


# ------------------------------------------------------------------ intervals from few resampling units


def width(ci: list[float]) -> float:
    return ci[1] - ci[0]


def test_one_game_gets_a_real_interval_not_a_point() -> None:
    """One game has one resampling unit: every resample is that game, so the bootstrap has no spread.
    The normal approximation (Fisher information, here with the prior) is reported, and said so."""
    result = rate([Game("A", "B", 1.0)], bootstrap=200)
    for name in ("A", "B"):
        r = result["ratings"][name]
        assert r["ci_method"] == "normal" and width(r["ci"]) > 300, r
        assert "fewer than 5" in r["ci_note"], r
        assert r["ci"] == rate([Game("A", "B", 1.0)], bootstrap=0)["ratings"][name]["ci"]
    assert result["los"] == [{"better": "A", "worse": "B", "los": result["los"][0]["los"], "method": "normal"}]
    assert 0.5 < result["los"][0]["los"] < 0.95  # not "100%" from one game
    assert result["los_method"] == "normal" and result["bootstrap_min_units"] == 5


def test_one_duplicate_pair_per_pairing() -> None:
    """games_per_pairing = 2: one duplicate pair per pairing, the review's [1637.5, 1637.5] case."""
    games = [
        Game("heuristic", "random", 1.0, "p0-1-d0"), Game("random", "heuristic", 0.0, "p0-1-d0"),
        Game("heuristic", "instant", 1.0, "p0-2-d0"), Game("instant", "heuristic", 1.0, "p0-2-d0"),
        Game("random", "instant", 1.0, "p1-2-d0"), Game("instant", "random", 0.5, "p1-2-d0"),
    ]
    result = rate(games, bootstrap=300, seed=2)
    for r in result["ratings"].values():
        assert r["ci_bootstrap"][0] == r["ci_bootstrap"][1]  # what used to be reported
        assert r["ci_method"] == "normal" and width(r["ci"]) > 100 and r["ci"][0] < r["elo"] < r["ci"][1]
    assert all(e["method"] == "normal" and e["los"] < 0.99 for e in result["los"])


def test_all_draws_have_no_bootstrap_spread() -> None:
    games = [Game("A", "B", 0.5, f"d{k // 2}") for k in range(20)]
    result = rate(games, bootstrap=100)
    for r in result["ratings"].values():
        assert r["elo"] == 1500.0 and r["ci_method"] == "normal" and "spread" in r["ci_note"]
        assert r["ci"][0] < 1450 and r["ci"][1] > 1550
    assert result["los"][0]["los"] == 0.5 and result["los"][0]["method"] == "normal"


def test_bootstrap_is_used_from_five_units_per_pairing() -> None:
    """5 duplicate pairs that differ: the bootstrap interval, no note. 4 pairs: the wider of the two."""
    outcomes = [(1.0, 1.0), (1.0, 0.0), (1.0, 1.0), (0.0, 0.0), (1.0, 0.0)]

    def pairs(k: int) -> list[Game]:
        return [g for d, (s1, s2) in enumerate(outcomes[:k]) for g in (Game("X", "Y", s1, f"d{d}"),
                                                                       Game("Y", "X", s2, f"d{d}"))]

    five = rate(pairs(5), bootstrap=300, seed=1)["ratings"]["X"]
    assert five["ci_method"] == "bootstrap" and "ci_note" not in five and five["ci"] == five["ci_bootstrap"]
    four = rate(pairs(4), bootstrap=300, seed=1)["ratings"]["X"]
    normal = rate(pairs(4), bootstrap=0)["ratings"]["X"]["ci"]
    assert "fewer than 5" in four["ci_note"] and "(4)" in four["ci_note"]
    assert width(four["ci"]) == max(width(four["ci_bootstrap"]), width(normal))
    assert four["ci"] == (four["ci_bootstrap"] if four["ci_method"] == "bootstrap" else normal)


def test_normal_approximation_everywhere_with_bootstrap_zero() -> None:
    result = rate(THREE, bootstrap=0)
    assert {r["ci_method"] for r in result["ratings"].values()} == {"normal"}
    assert all("ci_note" not in r and "ci_bootstrap" not in r for r in result["ratings"].values())


def test_cli_output_into_a_closed_pipe_is_quiet(tmp_path) -> None:
    """`python -m arena.ratings games.jsonl | head -0`: no BrokenPipeError traceback."""
    f = tmp_path / "games.jsonl"
    f.write_text("".join(json.dumps({"a": g.a, "b": g.b, "score": g.score}) + "\n" for g in THREE))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run([sys.executable, "-m", "arena.ratings.fit", str(f), "--bootstrap", "5"],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert done.stderr == "" and done.returncode == 1


def test_history_checkpoints() -> None:
    """Ratings after every N games: the last checkpoint is the rating of all games (normal approximation)."""
    games = THREE * 3
    points = history(games, every=30)
    assert [p["games"] for p in points] == [30, 60, 90, 120, 150, 180, 210, 240, 270]
    final = rate(games, bootstrap=0)["ratings"]
    assert points[-1]["ratings"] == {b: {"elo": r["elo"], "ci": r["ci"]} for b, r in final.items()}
    assert set(points[0]["ratings"]) == {"A", "B"}  # C has not played in the first 30 games
    assert len(history(games * 20)) <= 40 and history(games * 20)[-1]["games"] == 270 * 20
    assert history([]) == []


#: Where code may live that computes with the Elo scale's 400 (issue 20, item 6: one place).
ELO_SCALE_HOME = "arena/ratings/elo.py"


def elo_scale_sites(root: Path) -> list[str]:
    """``path:line expression`` for every arithmetic with the number 400 in the product code and the
    benchmarks outside :data:`ELO_SCALE_HOME` (docstrings may show the formula; code imports the scale)."""
    found = []
    for package in ("referee", "sdk", "arena", "sample_bots", "benchmarks"):
        for path in sorted((root / package).rglob("*.py")):
            if path.name.endswith("_pb2.py") or "node_modules" in path.parts:
                continue
            if path.relative_to(root).as_posix() == ELO_SCALE_HOME:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.BinOp) and any(
                    isinstance(x, ast.Constant) and type(x.value) in (int, float) and x.value == 400
                    for x in (node.left, node.right)
                ):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_elo_scale_is_written_once() -> None:
    found = elo_scale_sites(ROOT)
    assert not found, f"the Elo scale typed again (import it from {ELO_SCALE_HOME}):\n" + "\n".join(found)


def test_the_elo_scale_check_sees_a_second_scale(tmp_path: Path) -> None:
    (tmp_path / "arena").mkdir()
    (tmp_path / "arena" / "m.py").write_text("import math\nNATS = math.log(10.0) / 400.0\n")
    assert elo_scale_sites(tmp_path) == [f"{Path('arena', 'm.py').as_posix()}:2 math.log(10.0) / 400.0"]
