"""The generalized SPRT of arena/formats/sprt.py: fishtest's known answer, the constrained maxima against an
independent optimiser, the decisions on simulated matches, and the command line."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from arena.formats.sprt import BEYOND_ELO, PAIR_SCORES, Decision, bounds, llr, pentanomial, report, sprt
from arena.ratings.elo import expected_score as logistic_score
from arena.ratings.fit import Game


def test_fishtest_known_answer() -> None:
    """fishtest's stat_util unit test: logistic [-3, 1] on this pentanomial gives LLR 2.131."""
    r = sprt([10789, 19328, 33806, 19402, 10543], -3, 1)
    assert round(r.llr, 3) == 2.131
    assert (round(r.lower, 3), round(r.upper, 3)) == (-2.944, 2.944)
    assert r.decision is Decision.CONTINUE and r.pairs == 93868


def constrained_max(p: np.ndarray, constraint) -> float:
    """max sum p log q over distributions q meeting ``constraint(q) == 0``, by SLSQP (independent check).

    SLSQP is started from the uniform distribution and from ``p`` itself; the best point that meets
    both constraints to 1e-9 counts (from one start alone, a pentanomial with nearly every pair in
    one bin, e.g. 351 draws, stopped short of the maximum or at the iteration limit)."""
    found = []
    for start in (np.full(5, 0.2), p):
        result = minimize(
            lambda q: -float(p @ np.log(q)),
            start,
            method="SLSQP",
            bounds=[(1e-12, 1)] * 5,
            constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}, {"type": "eq", "fun": constraint}],
            options={"ftol": 1e-14, "maxiter": 500},
        )
        if abs(result.x.sum() - 1) < 1e-9 and abs(constraint(result.x)) < 1e-9:
            found.append(-float(result.fun))
    assert found, "SLSQP met the constraints from no start"
    return max(found)


pentanomials = st.lists(st.integers(0, 400), min_size=5, max_size=5).filter(lambda c: sum(c) >= 20)


@settings(max_examples=25, deadline=None)
@given(pentanomials, st.floats(-30, 20), st.floats(1, 20))
def test_logistic_llr_is_the_ratio_of_constrained_maxima(counts: list[int], elo0: float, width: float) -> None:
    c = np.array(counts, dtype=float)
    c[c == 0] = 1e-3
    p = c / c.sum()
    scores = [logistic_score(e) for e in (elo0, elo0 + width)]
    maxima = [constrained_max(p, lambda q, s=s: q @ PAIR_SCORES - s) for s in scores]
    assert llr(counts, elo0, elo0 + width) == pytest.approx(c.sum() * (maxima[1] - maxima[0]), abs=1e-4)


@settings(max_examples=15, deadline=None)
@given(pentanomials, st.floats(-10, 10), st.floats(1, 10))
@example(counts=[0, 0, 351, 0, 0], nelo0=0.0, width=2.0)  # a CI run: one start stopped short of the maximum
@example(counts=[0, 0, 20, 0, 0], nelo0=0.0, width=1.0)  # the same run: one start hit the iteration limit
def test_normalized_llr_is_the_ratio_of_constrained_maxima(counts: list[int], nelo0: float, width: float) -> None:
    c = np.array(counts, dtype=float)
    c[c == 0] = 1e-3
    p = c / c.sum()

    def t_value(q: np.ndarray, t: float) -> float:
        mu = q @ PAIR_SCORES
        return (mu - 0.5) - t * math.sqrt(max(q @ (PAIR_SCORES - mu) ** 2, 1e-300))

    nt = math.sqrt(2) * math.log(10) / 800
    maxima = [constrained_max(p, lambda q, t=e * nt: t_value(q, t)) for e in (nelo0, nelo0 + width)]
    got = llr(counts, nelo0, nelo0 + width, "normalized")
    assert got == pytest.approx(c.sum() * (maxima[1] - maxima[0]), abs=1e-3)


def simulate(elo: float, elo0: float, elo1: float, seed: int, max_pairs: int = 200_000) -> tuple[Decision, int]:
    """Pairs with deal luck (the deal moves game one's chance by e and game two's by -e) until decided."""
    rng = random.Random(seed)
    s = logistic_score(elo)
    counts = [0] * 5
    for n in range(1, max_pairs + 1):
        e = rng.uniform(-1, 1) * min(s, 1 - s) * 0.8
        counts[(rng.random() < s + e) + (rng.random() < s - e)] += 1  # 0, 1 or 2 wins: no draws here
        if n % 50 == 0:
            r = sprt([counts[0], 0, counts[1], 0, counts[2]], elo0, elo1)
            if r.decision is not Decision.CONTINUE:
                return r.decision, n
    return Decision.CONTINUE, max_pairs


def test_decisions_on_simulated_matches() -> None:
    """[0, 20]: a candidate 40 Elo stronger passes, one 20 weaker fails, in every one of 10 runs each."""
    assert [simulate(40, 0, 20, seed)[0] for seed in range(10)] == [Decision.H1] * 10
    assert [simulate(-20, 0, 20, seed)[0] for seed in range(10)] == [Decision.H0] * 10


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="elo0 must be below elo1"):
        sprt([1, 2, 3, 4, 5], 5, 0)
    with pytest.raises(ValueError, match="alpha and beta"):
        bounds(0.6, 0.5)
    with pytest.raises(ValueError, match="five non-negative counts"):
        llr([1, 2, 3], 0, 5)
    with pytest.raises(ValueError, match="model must be"):
        llr([1, 2, 3, 4, 5], 0, 5, "bayes")


def test_pentanomial_from_games() -> None:
    games = [
        Game("new", "old", 1.0, "d0"),
        Game("old", "new", 0.0, "d0"),  # new 2 points
        Game("new", "old", 0.5, "d1"),
        Game("old", "new", 1.0, "d1"),  # new 1/2
        Game("old", "new", 0.5, "d2"),
        Game("new", "old", 1.0, "d2"),  # new 1 1/2
        Game("new", "old", 1.0, "d3"),  # half a pair: left out
        Game("new", "old", 1.0),  # no pair: left out
        Game("new", "third", 1.0, "d9"),
        Game("third", "new", 1.0, "d9"),  # another pairing
    ]
    assert pentanomial(games, "new", "old") == ([0, 1, 0, 1, 1], 2)
    assert pentanomial(games, "old", "new") == ([1, 1, 0, 1, 0], 2)


def test_cli(tmp_path) -> None:
    f = tmp_path / "games.jsonl"
    rows = []
    for k in range(40):
        first, second = (1.0, 0.0) if k % 4 else (1.0, 1.0)  # new wins 1-1 or 2-0
        rows += [
            {"a": "new", "b": "old", "score": first, "pair": f"d{k}"},
            {"a": "old", "b": "new", "score": 1 - second, "pair": f"d{k}"},
        ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cmd = [sys.executable, "-m", "arena.formats.sprt", str(f), "--a", "new", "--b", "old",
           "--elo0", "0", "--elo1", "50"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "pentanomial (pairs giving new 0, 1/2, 1, 3/2, 2 points): [0, 0, 30, 0, 10]" in out
    assert "decision: H1" in out and "LLR: " in out and "bounds: [-2.944, 2.944]" in out
    data = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=True).stdout)
    assert data["decision"] == "H1" and data["llr"] == pytest.approx(llr([0, 0, 30, 0, 10], 0, 50))
    assert data["elo_ci"][0] < data["elo"] < data["elo_ci"][1]
    bad = subprocess.run([*cmd[:4], "--a", "nobody", "--b", "old"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no complete duplicate pair" in bad.stderr
    known = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena.formats.sprt",
            "--pentanomial",
            "10789",
            "19328",
            "33806",
            "19402",
            "10543",
            "--elo0",
            "-3",
            "--elo1",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "LLR: 2.131" in known.stdout


def test_an_interval_end_beyond_the_score_range_reads_inf() -> None:
    """An end of the Elo interval past a score of 1 (or 0) is the clamped score's Elo, about 4800: the
    terminal and the board printed "Elo 240.8 [128.9, 4799.9]". They say ``+inf`` (``-inf``) there now;
    the JSON keeps the clamped number (as fishtest does)."""
    from arena.ratings.fit import Game
    from arena.ratings.publication import final_ratings
    from arena.web.render import leaderboard_html

    won = sprt([0, 0, 0, 1, 9], 0, 50)
    assert won.elo < BEYOND_ELO < won.elo_ci[1]
    text = report(won, "new", "old")
    assert f"Elo: {won.elo:.1f} [{won.elo_ci[0]:.1f}, +inf]" in text and "4799" not in text
    lost = sprt([9, 1, 0, 0, 0], -50, 0)
    assert f"[-inf, {lost.elo_ci[1]:.1f}]" in report(lost) and "4799" not in report(lost)
    games = [Game("new", "old", 1.0, "d0"), Game("old", "new", 0.0, "d0"), Game("new", "old", 0.0, "d1"),
             Game("old", "new", 1.0, "d1")]
    facts = {"name": "t", "players": 2, "bots": {},
             "sprt": {**won.to_dict(), "candidate": "new", "baseline": "old", "stopped_at_pair": 10,
                      "skipped_pairs": 0}}
    board = leaderboard_html(final_ratings(games, ["new", "old"], bootstrap=0), facts, [])
    assert f"Elo {won.elo:.1f} [{won.elo_ci[0]:.1f}, +inf] (95%)" in board and "4799" not in board
