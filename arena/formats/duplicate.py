"""How much the duplicate format saves, and how many games a given precision needs.

Duplicate pairs
---------------
Both games of a duplicate pair use the same deal seed with the sides swapped, so each bot plays the
other's cards (docs/arena.md, Schedule). Luck of the deal that favours a seat then favours each bot
once, and cancels in the pair's total. This module measures that on any set of games that carry
``pair`` ids (games.jsonl rows, :class:`arena.ratings.fit.Game`):

- ``var_game``: the variance of one game's score (1, ½ or 0 for the first bot of its pairing) around
  its pairing's mean: the noise per game if games were dealt independently (the games of a pair,
  taken one at a time, are exactly independently dealt games in distribution);
- ``var_paired``: the variance per game of the duplicate estimate, ``2 * Var(pair mean)`` (a pair's two
  games count as two games), from the pair means around their pairing's mean;
- ``ratio = var_game / var_paired``: how many times more games independent dealing needs for the same
  interval width (the width of a mean's interval goes as ``sqrt(variance / games)``).

Both variances pool every pairing (squared deviations from the pairing's own mean, divided by the
degrees of freedom: games minus pairings, and pairs minus pairings). The 95% interval of ``ratio`` is
a bootstrap over pairs within each pairing (1,000 resamples, ``numpy.random.default_rng(seed)``): the
2.5th and 97.5th percentiles of the resampled ratios, less their mean's distance from ``ratio`` (with
few pairs a pairing, resampling shrinks the spread between pairs by ``(n - 1) / n`` and so biases the
resampled ratios upwards: 7% at 10 pairs a pairing in ``benchmarks/ratings.py``'s league).

Games for a precision
---------------------
An Elo difference ``d`` is a score share ``s = 1 / (1 + 10 ** (-d / 400))``; near it one Elo point is
``ds = s (1 - s) ln 10 / 400`` of score. A 95% interval of ``±h`` Elo on one pairing thus needs
``games = (1.96 * sd / (h * s (1 - s) ln 10 / 400)) ** 2`` games, with ``sd**2`` the variance per game
(``var_paired`` with duplicate pairs, ``var_game`` without): :func:`games_for_half_width`. For a
whole pool, :func:`games_needed` scales the games already played: interval width goes as
``1 / sqrt(games)``, so ``±h`` needs ``games * (current half-width / h) ** 2``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import numpy as np

from arena.ratings.elo import score_per_elo
from arena.ratings.fit import Game, RatingTable

Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Measured duplicate efficiency (see the module docstring). ``score``: the mean score of the
    first-named bot of each pairing (names sorted), over all games."""

    pairs: int
    pairings: int
    games: int
    score: float
    var_game: float
    var_paired: float
    ratio: float
    ratio_ci: tuple[float, float]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the fields, floats rounded to 4 decimals, ``ratio_ci`` as ``[low, high]``."""
        out = asdict(self)
        for k in ("score", "var_game", "var_paired", "ratio"):
            out[k] = round(out[k], 4)
        out["ratio_ci"] = [round(x, 4) for x in self.ratio_ci]
        return out


def complete_pairs(games: Sequence[Game]) -> dict[tuple[str, str], np.ndarray]:
    """Per pairing (names sorted), the complete duplicate pairs: an array ``(pairs, 2)`` of the first
    bot's score in each game of the pair. Games without a pair id, and pairs without exactly two games
    of the same two bots, are left out."""
    pairs: dict[tuple[tuple[str, str], str], list[float]] = {}
    for g in games:
        if g.pair is None:
            continue
        key = (g.a, g.b) if g.a < g.b else (g.b, g.a)
        pairs.setdefault((key, g.pair), []).append(g.score if g.a == key[0] else 1.0 - g.score)
    by_pairing: dict[tuple[str, str], list[list[float]]] = {}
    for (key, _), scores in pairs.items():
        if len(scores) == 2:
            by_pairing.setdefault(key, []).append(scores)
    return {k: np.array(v) for k, v in sorted(by_pairing.items())}


def _variances(
    first: np.ndarray, second: np.ndarray, starts: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(var_game, var_paired)`` pooled over pairings, for each row of ``first``/``second`` (the first
    bot's score in game one and two of each pair, shape ``(rows, pairs)``, pairs grouped by pairing:
    pairing ``k`` holds ``sizes[k]`` pairs from column ``starts[k]``). Arrays of length ``rows``."""

    def within(values: np.ndarray, squares: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Squared deviations from each block's mean, summed over blocks (sum x^2 - (sum x)^2 / n)."""
        sums = np.add.reduceat(values, starts, axis=1)
        return np.asarray((np.add.reduceat(squares, starts, axis=1) - sums**2 / count).sum(axis=1))

    game_ss = within(first + second, first**2 + second**2, 2 * sizes)
    means = (first + second) / 2.0
    pair_ss = within(means, means**2, sizes)
    return game_ss / (2 * sizes - 1).sum(), 2.0 * pair_ss / (sizes - 1).sum()


def efficiency(games: Sequence[Game], resamples: int = 1000, seed: int = 0) -> Efficiency | None:
    """Measure the duplicate efficiency of ``games`` (see the module docstring).

    :returns: ``None`` when no pairing has two complete pairs (nothing to measure), else the
        :class:`Efficiency`.
    """
    return pairs_efficiency(complete_pairs(games), resamples, seed)


def pairs_efficiency(
    by_pairing: Mapping[tuple[str, str], np.ndarray], resamples: int = 1000, seed: int = 0
) -> Efficiency | None:
    """:func:`efficiency` of the complete duplicate pairs ``by_pairing`` (:func:`complete_pairs`: all it
    depends on, so a caller that keeps them can tell when it would be the same)."""
    blocks = [b for b in by_pairing.values() if len(b) >= 2]
    if not blocks:
        return None
    sizes = np.array([len(b) for b in blocks])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pairs = np.concatenate(blocks)
    var_game, var_paired = (float(v[0]) for v in _variances(pairs[None, :, 0], pairs[None, :, 1], starts, sizes))
    rng = np.random.default_rng(seed)
    ratios = []
    for start in range(0, resamples, 100):  # 100 resamples at a time: pairs drawn within their pairing
        rows = min(100, resamples - start)
        pick = starts.repeat(sizes) + (rng.random((rows, len(pairs))) * sizes.repeat(sizes)).astype(np.int64)
        g, p = _variances(pairs[pick, 0], pairs[pick, 1], starts, sizes)
        ratios.extend((g[p > 0] / p[p > 0]).tolist())
    ratio = var_game / var_paired if var_paired > 0 else math.inf
    low = high = math.nan
    if ratios and math.isfinite(ratio):  # percentiles less the bootstrap's own bias (see the module docstring)
        bias = float(np.mean(ratios)) - ratio
        low, high = (float(q) - bias for q in np.percentile(ratios, [2.5, 97.5]))
    return Efficiency(
        pairs=len(pairs),
        pairings=len(blocks),
        games=2 * len(pairs),
        score=float(pairs.mean()),
        var_game=var_game,
        var_paired=var_paired,
        ratio=ratio,
        ratio_ci=(float(low), float(high)),
    )


def games_for_half_width(score: float, var_per_game: float, half_width_elo: float = 20.0) -> float:
    """Games one pairing needs for a 95% interval of ``±half_width_elo`` at score share ``score``.

    :raises ValueError: unless ``0 < score < 1`` and ``half_width_elo > 0``.
    """
    if not 0 < score < 1 or half_width_elo <= 0:
        raise ValueError(f"need 0 < score < 1 and a positive half-width, got {score}, {half_width_elo}")
    return (Z95 * math.sqrt(var_per_game) / (half_width_elo * score_per_elo(score))) ** 2


@dataclass(frozen=True, slots=True)
class Precision:
    """The precision a pool's ratings have now: the widest 95% half-width (Elo) of any bot's interval
    (the anchored bot aside), the games played, and the games the pool would need for ``±target``."""

    half_width: float
    games: int
    target: float
    games_needed: int

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the fields, ``half_width`` to 0.1 Elo."""
        return {**asdict(self), "half_width": round(self.half_width, 1)}


def games_needed(ratings: RatingTable, target: float = 20.0) -> Precision | None:
    """Scale the games played to the games needed for every interval to be ``±target`` Elo or better.

    :param ratings: an :func:`arena.ratings.fit.rate` result.
    :returns: ``None`` with no games or no interval that has a width.
    """
    widths = [
        (r["ci"][1] - r["ci"][0]) / 2
        for r in ratings.get("ratings", {}).values()
        if r.get("ci_method") != "anchor" and r["ci"][1] > r["ci"][0]
    ]
    games = int(ratings.get("games", 0))
    if not widths or not games:
        return None
    half = max(widths)
    return Precision(half_width=half, games=games, target=target, games_needed=math.ceil(games * (half / target) ** 2))


#: The committed output of ``python benchmarks/duplicate.py --write`` (real games of the sample bots).
STUDY_FILE = Path(__file__).with_name("duplicate_study.json")


class StudyMatchup(TypedDict):
    """One matchup of the study: ``players`` at the table, ``matchup`` (``first-second`` bot names), the
    ``ratio`` and ``ratio_ci`` the leaderboard quotes and the rest of :meth:`Efficiency.to_dict`, and
    the games one pairing needs for ±20 Elo with and without duplicate pairs (``{"duplicate": n,
    "independent": n}``, when the score share is strictly between 0 and 1)."""

    players: int
    matchup: str
    ratio: float
    ratio_ci: list[float]
    games_for_20_elo: NotRequired[dict[str, int]]


class DuplicateStudy(TypedDict):
    """:data:`STUDY_FILE`: ``pairs_per_matchup``, the ``results`` one :class:`StudyMatchup` each, and
    ``cpu_s`` (CPU seconds the study took)."""

    pairs_per_matchup: int
    results: list[StudyMatchup]
    cpu_s: NotRequired[float]


def study() -> DuplicateStudy | None:
    """The sample-bot study (:data:`STUDY_FILE`, committed as ``benchmarks/duplicate.py --write`` wrote it),
    or None if it is missing or unreadable."""
    try:
        data = json.loads(STUDY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cast(DuplicateStudy, data) if isinstance(data, dict) else None


class PrecisionFacts(TypedDict):
    """:func:`precision_facts`: the widest interval ``now`` (:meth:`Precision.to_dict`, None without
    games), the ``efficiency`` of this tournament's duplicate pairs (:meth:`Efficiency.to_dict`, None
    without complete pairs) and the leaderboard's ``lines``."""

    now: dict[str, object] | None
    efficiency: dict[str, object] | None
    lines: list[str]


#: Resamples of the duplicate efficiency a publication measures on its games (:func:`precision_facts`).
PRECISION_RESAMPLES = 200


def precision_facts(ratings: RatingTable, here: Efficiency | None, target: float = 20.0) -> PrecisionFacts:
    """What the leaderboard says about precision: the widest interval now and the games for ``±target``
    (:func:`games_needed`), the duplicate efficiency measured on the games, ``here`` (:func:`efficiency`
    with :data:`PRECISION_RESAMPLES`) and on the sample bots (:func:`study`), as JSON-ready values and
    ``lines`` of text."""
    lines = []
    now = games_needed(ratings, target)
    if now is not None:
        lines.append(
            f"Widest 95% interval now: ±{now.half_width:.0f} Elo after {now.games} games; "
            f"±{target:g} Elo for every bot needs about {now.games_needed} games in all (width goes as 1/√games)."
        )
    if here is not None and math.isfinite(here.ratio):
        lines.append(
            f"Duplicate pairs in this tournament ({here.pairs} pairs): variance per game {here.var_paired:.3f} "
            f"paired against {here.var_game:.3f} unpaired, so independently dealt games would need "
            f"{here.ratio:.2f}× as many games [{here.ratio_ci[0]:.2f}, {here.ratio_ci[1]:.2f}] for the same width."
        )
    measured = study()
    if measured:
        parts = [
            f"{r['players']} players, {r['matchup']}: {r['ratio']:.2f}× [{lo:.2f}, {hi:.2f}]"
            for r in measured.get("results", [])
            for lo, hi in [r["ratio_ci"]]
        ]
        lines.append(
            f"Measured on {measured.get('pairs_per_matchup')} duplicate pairs of the sample bots per matchup "
            "(games independent dealing needs per duplicate game): " + "; ".join(parts) + "."
        )
    return {
        "now": now.to_dict() if now else None,
        "efficiency": here.to_dict() if here else None,
        "lines": lines,
    }
