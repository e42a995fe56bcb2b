"""The Elo scale, in one place: a side ``d`` Elo stronger expects the score share
``1 / (1 + 10 ** (-d / ELO_SCALE))`` per game (the logistic model every part of the arena uses: the
fit, the SPRT, the duplicate study's precision and the simulated runner). No numpy here, so modules a
bot imports stay light."""

from __future__ import annotations

import math

#: Elo points for a factor of 10 in the odds of winning.
ELO_SCALE = 400.0
#: Elo points per unit of natural-log strength: ``ELO_SCALE / ln(10)``.
ELO_PER_NAT = ELO_SCALE / math.log(10.0)


def expected_score(elo: float) -> float:
    """Expected score per game (0 to 1) of a side ``elo`` Elo points stronger (negative: weaker)."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / ELO_SCALE))


def elo_of_score(score: float) -> float:
    """The Elo difference that expects ``score`` per game (the inverse of :func:`expected_score`).

    :raises ValueError: unless ``0 < score < 1``.
    """
    return ELO_SCALE * math.log10(score / (1.0 - score))  # an even score is +0.0, never -0.0


def score_per_elo(score: float) -> float:
    """The slope of :func:`expected_score` where it expects ``score``: score share per Elo point."""
    return score * (1 - score) * math.log(10) / ELO_SCALE
