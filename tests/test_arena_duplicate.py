"""arena/formats/duplicate.py: the duplicate efficiency and the games a precision needs, against
hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.formats.duplicate import complete_pairs, efficiency, games_for_half_width, games_needed
from arena.ratings.fit import Game


def pair(k: int, first: float, second: float, a: str = "A", b: str = "B") -> list[Game]:
    """Pair ``k``: ``a``'s score in game one (a on side 0) and in game two (sides swapped)."""
    return [Game(a, b, first, f"d{k}"), Game(b, a, 1.0 - second, f"d{k}")]


def test_variances_by_hand() -> None:
    """Four pairs with A's scores (1,0), (1,0), (1,1), (0,0): game scores 1,0,1,0,1,1,0,0 (mean 1/2,
    sum of squares 2, 7 degrees of freedom: 2/7); pair means 1/2, 1/2, 1, 0 (sum of squares 1/2, 3 df:
    1/6, times 2 per game: 1/3); ratio (2/7) / (1/3) = 6/7."""
    games = [g for k, (s1, s2) in enumerate([(1, 0), (1, 0), (1, 1), (0, 0)]) for g in pair(k, s1, s2)]
    e = efficiency(games, resamples=50)
    assert e is not None
    assert (e.pairs, e.games, e.pairings, e.score) == (4, 8, 1, 0.5)
    assert e.var_game == pytest.approx(2 / 7) and e.var_paired == pytest.approx(1 / 3)
    assert e.ratio == pytest.approx(6 / 7)


def test_deal_luck_cancels_in_pairs() -> None:
    """When the deal decides every game (the side with the good cards wins both), every pair splits
    1-1: no variance left with pairing, all of it without."""
    games = [g for k in range(10) for g in pair(k, 1.0, 0.0)]
    e = efficiency(games, resamples=20)
    assert e is not None and e.var_paired == 0 and e.ratio == math.inf and e.var_game > 0.25


def test_incomplete_and_unpaired_games_are_left_out() -> None:
    games = [*pair(0, 1, 0), *pair(1, 1, 1), Game("A", "B", 1.0, "d2"), Game("A", "B", 0.0)]
    assert complete_pairs(games)[("A", "B")].tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert efficiency(games[:2]) is None  # one pair: nothing to measure


def test_pairings_are_pooled_around_their_own_means() -> None:
    """Two pairings with very different scores: pooling around each pairing's mean keeps the gap
    between them out of the variances (the same as measuring each alone, weighted by df)."""
    strong = [g for k, s in enumerate([(1, 1), (1, 0), (1, 1), (1, 1)]) for g in pair(k, *s, a="A", b="B")]
    weak = [g for k, s in enumerate([(0, 0), (0, 1), (0, 0), (0, 0)]) for g in pair(k, *s, a="A", b="C")]
    both = efficiency(strong + weak, resamples=20)
    alone = efficiency(strong, resamples=20)
    assert both is not None and alone is not None
    assert both.var_game == pytest.approx(alone.var_game) and both.var_paired == pytest.approx(alone.var_paired)


def test_games_for_half_width() -> None:
    """At 50% one Elo is ln10/1600 of score; var 1/4 a game: (1.96 * 0.5 / (20 ln10 / 1600))**2 games."""
    expected = (1.959963984540054 * 0.5 / (20 * math.log(10) / 1600)) ** 2
    assert games_for_half_width(0.5, 0.25) == pytest.approx(expected)
    assert round(expected) == 1159
    assert games_for_half_width(0.5, 0.25, 10) == pytest.approx(4 * expected)
    with pytest.raises(ValueError):
        games_for_half_width(1.0, 0.25)


def test_games_needed_scales_the_widest_interval() -> None:
    ratings = {
        "games": 400,
        "ratings": {
            "A": {"elo": 1600, "ci": [1560.0, 1640.0], "ci_method": "bootstrap"},
            "B": {"elo": 1400, "ci": [1370.0, 1430.0], "ci_method": "bootstrap"},
            "C": {"elo": 1000, "ci": [1000.0, 1000.0], "ci_method": "anchor"},
        },
    }
    p = games_needed(ratings)
    assert p is not None and p.half_width == 40 and p.games_needed == 1600  # 400 * (40 / 20) ** 2
    assert games_needed({"games": 0, "ratings": {}}) is None


def test_ratio_interval_covers_the_estimate() -> None:
    rng = np.random.default_rng(1)
    games = []
    for k in range(200):
        luck = rng.uniform(-0.4, 0.4)
        games += pair(k, float(rng.random() < 0.5 + luck), float(rng.random() < 0.5 - luck))
    e = efficiency(games, resamples=300)
    assert e is not None and e.ratio > 1 and e.ratio_ci[0] < e.ratio < e.ratio_ci[1]
