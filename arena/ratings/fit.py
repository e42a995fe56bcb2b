"""Batch maximum-likelihood Elo (Bradley–Terry) with a duplicate-pair bootstrap.

The model
---------
Each bot ``i`` has a rating ``r_i`` on the Elo scale. The expected score of ``a`` against ``b`` is the
logistic ``E(a, b) = 1 / (1 + 10 ** ((r_b - r_a) / 400))``. A game's score is 1, 0.5 or 0 for ``a``;
a draw counts as half a win for each side, so the log-likelihood of the games is
``sum(s * log E(a, b) + (1 - s) * log(1 - E(a, b)))``. It depends on the games only through each
*pairing*'s games played and total score (:class:`Pairings`, built in one pass), so the fit works on
those arrays with numpy/scipy: Newton–Raphson on the natural-log strengths ``theta = r * ln(10) / 400``
(the log-likelihood is concave; a step longer than :data:`_SAFE_STEP` is halved until the likelihood
does not fall), with the information matrix factored by LAPACK (``dpotrf``), until no strength moves
by more than :data:`STEP_TOL` (1e-7 nats, 2e-5 Elo).

Anchoring
---------
Only differences are identified. By default the ratings are shifted so that their mean is 1500
(:data:`POOL_MEAN`); with ``anchor=(name, rating)`` the named bot sits at ``rating`` instead.

Degenerate cases (stated, not hidden)
-------------------------------------
Any pairing graph will do (a ladder leaves most pairings unplayed): only the bots linked by games
can be compared. So when the bots fall into separate groups that never met (the weakly connected
``"components"`` of the games graph), one group is rated — the anchor's, else the largest, the first
of equal ones — and every other bot is listed in ``"unrated"`` with why (``"no games"``, or ``"no games
link it to the rated group (A, B, ...)"``) instead of being given a rating the prior would invent. A
bot without games is rated only when it is the only bot (at the anchor).

The maximum exists exactly when the "scored against" graph is strongly connected (Zermelo 1929;
Ford 1957): for every split of the bots into two groups, each group scored something (a win or a
draw) against the other. Within the rated group it does not exist when a bot won or lost every
game. In that case, **and only then**, every bot gets
:data:`PRIOR_DRAWS` = 1 virtual draw against a virtual reference player fixed at the pool's level
(strength 0 before anchoring; it is not reported). That keeps every rating finite (a bot that won
every game sits a finite distance above its opponents: tests/test_arena_ratings.py solves one case by
hand) while barely moving ratings with many games. The output says so: ``"prior": true``. A single
bot rates at the anchor with ``ci`` equal to its rating. The same rule applies to each bootstrap resample separately.

Intervals and likelihood of superiority
---------------------------------------
95% intervals come from a bootstrap over **units**: the games that share a ``"pair"`` id (a
duplicate pair: same deal seed, sides swapped) are one unit; a game without one is its own unit.
Resampling is **stratified by pairing**: the units of each unordered pair of bots are resampled with
replacement among themselves, so every resample keeps the tournament's design (each pairing plays
as many units as it did). For duplicate pairs that is a draw of the pairing's pentanomial counts
(how many pairs gave the first bot 0, ½, 1, 1½, 2 points) from a multinomial with the observed
frequencies; since the fit sees only each pairing's total, the total is drawn directly from its exact
distribution (:func:`resampled_totals`, which also widens each resampled deviation by
``sqrt(N / (N - 1))`` for ``N`` units, the bootstrap's small-sample variance correction). Each
resample is fitted exactly, starting from the full data's strengths and information (chord steps:
the games played, hence the information at the start, are the same). The bootstrap interval is the
2.5th and 97.5th percentile of a bot's anchored rating over the resamples, deterministic given
``seed`` (``numpy.random.default_rng(seed)``), **widened about the estimate by Student's factor**
``t(0.975, nu) / z(0.975)`` (:func:`student_factors`): a spread estimated from few units is itself
uncertain, and the percentiles alone are the normal's quantiles. ``nu`` is the Welch–Satterthwaite
degrees of freedom of the rating's variance, ``(sum_p a_p)**2 / sum_p (a_p**2 / (N_p - 1))`` with
``a_p = g_p**2 N_p s_p**2`` the share of pairing ``p`` (``g_p``: the rating's derivative by the
pairing's total score, from the fit's covariance; ``s_p**2``: the sample variance of its ``N_p``
units' scores): two bots with 5 duplicate pairs get ``t(4)``, 1.42 times wider; a bot with many
pairings, nearly 1. Two bots 100 Elo apart at 5 or 10 duplicate pairs were covered 90-91% of the time
by the percentile interval, 94.5-95% with the widening (800 simulated matches each; the eight-bot round
robin of tests/test_ratings_bootstrap.py stays in 93-97%). LOS's bootstrap differences are widened
the same way. 100 bots and 100,000 games with 1,000 resamples take about a second on one core
(``benchmarks/ratings.py``).

The **normal approximation** uses the observed Fisher information at the maximum (with the prior's
virtual games when the prior is used): ``elo ± 1.96 * sd``, and ``LOS = Phi(diff / sd_diff)``.

A bootstrap cannot estimate a spread from too few units: with one duplicate pair per pairing every
resample *is* the tournament and the interval has no width (``[1637.5, 1637.5]``, LOS 100%). So a
bot's bootstrap interval is trusted only when **each of its pairings has at least**
:data:`BOOTSTRAP_MIN_UNITS` **(5) units** and the interval has a width (at least :data:`MIN_SPREAD`;
all-draw or all-split results give none). Otherwise the bot gets the **wider** of its bootstrap and
normal intervals (the percentile interval, without Student's widening: with one or two units a pairing
it would be unbounded), and ``"ci_note"`` says why the bootstrap alone was not trusted. Why five: a
pairing of ``u`` units has only ``C(2u-1, u)`` distinct resamples — 1 for one unit, 35 for four, 126
for five — so with fewer the percentiles are a handful of repeated values, not a spread. Each bot's
``"ci_method"`` names the interval reported: ``"bootstrap"``, ``"normal"``, or ``"anchor"`` (the
anchored bot, or a lone bot, whose rating is fixed by definition); ``"ci_bootstrap"`` keeps the
bootstrap interval whenever one was computed (Student-widened where trusted, the plain percentiles where
not).

LOS (likelihood of superiority) between neighbours in the ranking is the bootstrap share of
resamples in which the higher-ranked bot's rating is above its neighbour's (a tie counts half) when
both bots' bootstrap is trusted (and the difference varies), else the normal approximation; each
entry's ``"method"`` says which, and ``"los_method"`` summarises (``"bootstrap"``, ``"normal"`` or
``"mixed"``). With ``bootstrap=0`` every interval and LOS is the normal approximation.

Input format (one JSON object a line)::

    {"a": "heuristic", "b": "random", "score": 1, "pair": "t-p0-1-d3"}

``score`` is ``a``'s (1, 0.5 or 0); ``pair`` is optional; other keys are ignored. A line whose
``score`` is ``null`` is a game without a winner (both sides forfeited: games.jsonl's rows of games
neither bot played, :attr:`arena.tournament.result.GameResult.score_a`): it is no evidence of either
bot's strength and is skipped (:func:`read_games`, :func:`games_from_mapping`).

Run ``python -m arena.ratings GAMES.jsonl [--anchor NAME=RATING] [--bootstrap N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

import numpy as np
from scipy.fft import next_fast_len
from scipy.linalg.lapack import dpotrf, dpotrs
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, stdtrit

from arena.ratings.elo import ELO_PER_NAT

#: The pool mean on the Elo scale when no bot is anchored.
POOL_MEAN = 1500.0
#: Virtual draws against the reference player that each bot gets when the MLE does not exist.
PRIOR_DRAWS = 1
#: Default number of bootstrap resamples.
DEFAULT_BOOTSTRAP = 1000
#: Resampling units (duplicate pairs) a pairing needs before the bootstrap is trusted for its bots.
BOOTSTRAP_MIN_UNITS = 5
#: A bootstrap interval narrower than this (Elo) has no spread: it estimates nothing.
MIN_SPREAD = 0.01
#: The standard normal's 97.5% quantile: a 95% interval's half-width in standard deviations.
Z95 = 1.959963984540054

_VALID_SCORES = (0.0, 0.5, 1.0)


@dataclass(frozen=True, slots=True)
class Game:
    """One game for rating: ``score`` is ``a``'s (1 win, 0.5 draw, 0 loss); ``pair`` groups duplicates."""

    a: str
    b: str
    score: float
    pair: str | None = None

    def __post_init__(self) -> None:
        if self.a == self.b:
            raise ValueError(f"a game needs two different bots, got {self.a!r} twice")
        if self.score not in _VALID_SCORES:
            raise ValueError(f"score must be 1, 0.5 or 0, not {self.score!r}")


class BotRating(TypedDict):
    """One rated bot of a :class:`RatingTable`: its Elo, the 95% interval ``ci`` ``[low, high]`` (Elo)
    and how it was made (``ci_method``: ``"bootstrap"``, ``"normal"`` or ``"anchor"``; ``ci_note``:
    why the bootstrap alone was not trusted; ``ci_bootstrap``: the bootstrap's interval whenever one was
    computed), its games and score (see the module docstring)."""

    elo: float
    ci: list[float]
    ci_method: str
    ci_note: NotRequired[str]
    ci_bootstrap: NotRequired[list[float]]
    games: int
    score: float


class _IntervalNotes(TypedDict, total=False):
    """The optional keys of a :class:`BotRating`, in their place between ``ci_method`` and ``games``."""

    ci_note: str
    ci_bootstrap: list[float]


class NeighbourLos(TypedDict):
    """The likelihood (0-1) that ``better`` is better than ``worse``, the bot ranked just below it;
    ``method``: ``"bootstrap"`` or ``"normal"``."""

    better: str
    worse: str
    los: float
    method: str


class PairingScore(TypedDict):
    """One bot's ``games`` against another, its ``score`` and its share ``pct`` (0-1) of the points."""

    games: int
    score: float
    pct: float


class Anchor(TypedDict, total=False):
    """What fixes the scale: the anchored ``bot`` and its ``rating``, or the ``pool_mean`` (no anchor)."""

    bot: str
    rating: float
    pool_mean: float


class Unrated(TypedDict):
    """A bot left out of the ratings, and why (``"no games"``, or no games link it to the rated group)."""

    bot: str
    why: str


class RatingPoint(TypedDict):
    """A bot's Elo and 95% interval ``[low, high]`` at one checkpoint of :func:`history`."""

    elo: float
    ci: list[float]


class HistoryPoint(TypedDict):
    """The ratings after the first ``games`` games (:func:`history`)."""

    games: int
    ratings: dict[str, RatingPoint]


class LastBootstrap(TypedDict):
    """The newest finished background bootstrap beside live ratings: the ``games`` it covers and each
    bot's interval ``ci`` (:class:`arena.ratings.publication.LivePublisher`)."""

    games: int
    ci: dict[str, list[float]]


class RatingTable(TypedDict):
    """What :func:`rate` returns, JSON-ready (ratings.json holds it): ``ratings`` best first,
    ``ranking`` (names, best first), the LOS of each bot over the next, the score ``matrix``, how the
    scale is fixed, whether the prior was used, the groups linked by games (``components``) and the
    ``unrated`` bots, the bootstrap's resamples and seed, and the number of games.

    Publishing adds the rest (:mod:`arena.ratings.publication`): ``publication`` (``"live"``: normal
    intervals at once; ``"final"``: the bootstrap's), ``intervals`` (how they were made, one phrase),
    ``last_bootstrap`` beside live ratings, and ``history`` (:func:`history`) with final ones."""

    ratings: dict[str, BotRating]
    ranking: list[str]
    los: list[NeighbourLos]
    los_method: str
    bootstrap_min_units: int
    matrix: dict[str, dict[str, PairingScore]]
    anchor: Anchor
    prior: bool
    components: list[list[str]]
    unrated: list[Unrated]
    bootstrap: int
    seed: int
    games: int
    publication: NotRequired[Literal["live", "final"]]
    intervals: NotRequired[str]
    last_bootstrap: NotRequired[LastBootstrap]
    history: NotRequired[list[HistoryPoint]]


class GamesFileError(ValueError):
    """A line of a games file is not a valid game; the message names the file and line number."""


def parse_game(obj: object) -> Game:
    """A :class:`Game` from one decoded JSON object ``{"a", "b", "score", "pair"?}``.

    :raises ValueError: naming the offending key and value.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    for key in ("a", "b"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise ValueError(f"{key!r} must be a non-empty string (a bot name), got {obj.get(key)!r}")
    score = obj.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or float(score) not in _VALID_SCORES:
        raise ValueError(f"'score' must be 1, 0.5 or 0 (a's score), got {score!r}")
    pair = obj.get("pair")
    if pair is not None and not isinstance(pair, str | int):
        raise ValueError(f"'pair' must be a string or integer id when present, got {pair!r}")
    return Game(obj["a"], obj["b"], float(score), None if pair is None else str(pair))


def unrated(obj: object) -> bool:
    """Whether a decoded games row is a game without a winner (``"score": null``), not a rating input."""
    return isinstance(obj, Mapping) and "score" in obj and obj["score"] is None


def read_games(lines: Iterable[str], source: str = "<input>") -> list[Game]:
    """Parse JSON lines into games; blank lines and games without a winner (:func:`unrated`) are skipped.

    :raises GamesFileError: ``"<source>:<line>: <what is wrong>"`` for the first bad line.
    """
    games = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not unrated(obj):
                games.append(parse_game(obj))
        except json.JSONDecodeError as e:
            raise GamesFileError(f"{source}:{number}: not valid JSON ({e.msg}): {line.strip()[:80]!r}") from None
        except ValueError as e:
            raise GamesFileError(f"{source}:{number}: {e}") from None
    return games


# --------------------------------------------------------------------------- sufficient statistics


@dataclass(frozen=True, slots=True)
class Pairings:
    """The games reduced to what the fit and the bootstrap need: one entry per pairing.

    A *pairing* is an unordered pair of bots ``i < j`` (indices into ``bots``, sorted names) that met.
    Arrays have one element per pairing, in ``(i, j)`` order: ``i``, ``j`` (int), ``played`` (games)
    and ``scored`` (``i``'s total score, 0.5 a draw). ``outcomes[p]`` counts pairing ``p``'s resampling
    units by outcome, ``(games in the unit, i's score in half points) -> units``: for duplicate pairs
    ``(2, 0) .. (2, 4)`` are fishtest's pentanomial counts (0, ½, 1, 1½, 2 points for ``i``).
    """

    bots: list[str]
    i: np.ndarray
    j: np.ndarray
    played: np.ndarray
    scored: np.ndarray
    outcomes: list[dict[tuple[int, int], int]]

    @property
    def n(self) -> int:
        """Number of bots."""
        return len(self.bots)

    @property
    def units(self) -> np.ndarray:
        """Resampling units per pairing (int array)."""
        return np.array([sum(c.values()) for c in self.outcomes], dtype=np.int64)


def pairings(games: Sequence[Game], names: Iterable[str] = ()) -> Pairings:
    """Reduce ``games`` to :class:`Pairings` (one pass; ``names`` adds bots without games).

    A game's resampling unit is its duplicate pair (``pair``) within its pairing; a game without a
    ``pair`` is a unit of its own. Games that share a ``pair`` but not a pairing are separate units.
    """
    units: dict[tuple[str, str, object], list[int]] = {}
    for k, g in enumerate(games):
        half = round(2 * g.score)
        key = (g.a, g.b, k if g.pair is None else g.pair) if g.a < g.b else (g.b, g.a, k if g.pair is None else g.pair)
        unit = units.get(key)
        if unit is None:
            units[key] = [1, half if g.a < g.b else 2 - half]
        else:
            unit[0] += 1
            unit[1] += half if g.a < g.b else 2 - half
    bots = sorted({x for a, b, _ in units for x in (a, b)} | set(names))
    idx = {b: k for k, b in enumerate(bots)}
    per: dict[tuple[int, int], dict[tuple[int, int], int]] = {}
    for (a, b, _), (played, half) in units.items():
        counts = per.setdefault((idx[a], idx[b]), {})
        counts[(played, half)] = counts.get((played, half), 0) + 1
    keys = sorted(per)
    outcomes = [per[k] for k in keys]
    return Pairings(
        bots,
        np.array([k[0] for k in keys], dtype=np.int64),
        np.array([k[1] for k in keys], dtype=np.int64),
        np.array([sum(g * c for (g, _), c in o.items()) for o in outcomes], dtype=float),
        np.array([sum(h * c for (_, h), c in o.items()) / 2.0 for o in outcomes], dtype=float),
        outcomes,
    )


# --------------------------------------------------------------------------- the fit

#: Newton stops when no strength moved by more than this (natural-log units; 1.7e-5 Elo) in the step
#: just taken, which leaves an error of the order of its square.
STEP_TOL = 1e-7
_MAX_NEWTON = 100


def _strongly_connected(p: Pairings, played: np.ndarray, scored: np.ndarray, weakly: bool) -> bool:
    """True if every bot reaches every other along "scored something against" edges.

    ``weakly``: whether the games graph is connected (then, if every pairing's result is mixed, the
    scored graph is too, and no graph search is needed).
    """
    n = p.n
    if n <= 1:
        return True
    fwd, back = scored > 0, played - scored > 0
    if fwd.all() and back.all():
        return weakly
    edges = np.zeros((n, n), dtype=bool)
    edges[p.i[fwd], p.j[fwd]] = True
    edges[p.j[back], p.i[back]] = True
    return _reaches_all(edges) and _reaches_all(edges.T)


def _reaches_all(edges: np.ndarray) -> bool:
    """Whether bot 0 reaches every bot along ``edges[from, to]`` (breadth first, at most n rounds)."""
    seen = np.zeros(len(edges), dtype=bool)
    seen[0] = True
    frontier = seen.copy()
    while frontier.any():
        step = edges[frontier].any(axis=0) & ~seen
        seen |= step
        frontier = step
    return bool(seen.all())


def _loglik(d: np.ndarray, g: np.ndarray, s: np.ndarray) -> float:
    """Log-likelihood of scores ``s`` of ``g`` games at strength differences ``d``:
    ``s log sig(d) + (g - s) log sig(-d)`` with ``log sig(-d) = log sig(d) - d`` (stable for any ``d``)."""
    log_sig = np.minimum(d, 0.0) - np.log1p(np.exp(-np.abs(d)))
    return float(np.dot(g, log_sig) - np.dot(g - s, d))


@dataclass(frozen=True, slots=True)
class _Problem:
    """One likelihood to maximise: pairing arrays (with the prior's virtual games when ``prior``),
    ``size`` strengths of which ``free`` vary (the others are fixed at 0 by the gauge)."""

    i: np.ndarray
    j: np.ndarray
    g: np.ndarray
    s: np.ndarray
    size: int
    free: slice
    prior: bool

    def information(self, d: np.ndarray) -> np.ndarray:
        """Observed Fisher information of the free strengths at differences ``d`` (a dense square)."""
        prob = expit(d)
        w = self.g * prob * (1.0 - prob)
        size = self.size
        cells = np.concatenate(
            [self.i * size + self.j, self.j * size + self.i, self.i * (size + 1), self.j * (size + 1)]
        )
        info = np.bincount(cells, np.concatenate([-w, -w, w, w]), size * size).reshape(size, size)
        return info[self.free, self.free]


def _problem(p: Pairings, played: np.ndarray, scored: np.ndarray, weakly: bool) -> _Problem:
    """The likelihood of ``played``/``scored``, with the virtual-draw prior only if the MLE does not exist."""
    n = p.n
    if _strongly_connected(p, played, scored, weakly):
        return _Problem(p.i, p.j, played, scored, n, slice(1, n), False)  # gauge: theta_0 = 0
    bots = np.arange(n)  # the virtual reference player n, fixed at theta = 0: one virtual draw per bot
    return _Problem(
        np.concatenate([p.i, bots]),
        np.concatenate([p.j, np.full(n, n)]),
        np.concatenate([played, np.full(n, float(PRIOR_DRAWS))]),
        np.concatenate([scored, np.full(n, PRIOR_DRAWS / 2.0)]),
        n + 1,
        slice(0, n),
        True,
    )


#: Steps that move no strength by more than this (natural-log units, 0.87 Elo) are taken without checking
#: that the log-likelihood rose: that close the quadratic model is accurate; longer steps are halved
#: until the log-likelihood does not fall.
_SAFE_STEP = 5e-3
#: Fixed-information (chord) steps tried before a resample's fit falls back to full Newton steps.
_MAX_CHORD = 30


def _maximise(q: _Problem, theta: np.ndarray, chord: np.ndarray | None = None) -> np.ndarray:
    """The maximum of ``q``'s log-likelihood from ``theta`` (length ``q.size``), by damped Newton steps.

    :param chord: the lower Cholesky factor (:func:`_cholesky`) of the information at ``theta``, used
        for every step instead of recomputing it (the chord method: linear convergence at the rate the
        information changes, which from a warm start is fast) until :data:`_MAX_CHORD` steps, then Newton.
    :returns: the strengths, once a step moved none by more than :data:`STEP_TOL`.
    """
    d = theta[q.i] - theta[q.j]
    base = _loglik(d, q.g, q.s)  # the log-likelihood when last checked (a step below _SAFE_STEP skips it)
    for step_number in range(_MAX_NEWTON + _MAX_CHORD):
        resid = q.s - q.g * expit(d)
        grad = (np.bincount(q.i, resid, q.size) - np.bincount(q.j, resid, q.size))[q.free]
        if not grad.size or np.abs(grad).max() < 1e-12 * (1.0 + q.g.max()):
            break
        factor = chord if chord is not None and step_number < _MAX_CHORD else _cholesky(q.information(d))
        step = dpotrs(factor, grad, lower=True)[0]
        t, size = 1.0, float(np.abs(step).max())
        while True:  # the log-likelihood is concave: halve a long step until it does not fall
            trial = theta.copy()
            trial[q.free] += t * step
            d_trial = trial[q.i] - trial[q.j]
            if size * t <= _SAFE_STEP:  # the quadratic model holds: no need to check
                break
            value = _loglik(d_trial, q.g, q.s)
            if value >= base - 1e-12 * abs(base) or t < 1e-6:
                base = value
                break
            t /= 2.0
        theta, d = trial, d_trial
        if size * t < STEP_TOL:
            break
    return theta


def _cholesky(info: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of a positive-definite information matrix (LAPACK ``dpotrf``).

    :raises numpy.linalg.LinAlgError: if the matrix is not positive definite.
    """
    factor: np.ndarray  # scipy's LAPACK wrappers are untyped
    factor, status = dpotrf(info, lower=True, clean=False)
    if status != 0:
        raise np.linalg.LinAlgError(f"information matrix not positive definite (dpotrf info {status})")
    return factor


@dataclass(frozen=True, slots=True)
class _Fit:
    theta: np.ndarray  # natural-log strengths of the n bots; theta[0] = 0 unless the prior was used
    prior: bool
    covariance: np.ndarray | None  # n x n, of theta (zero row and column for a gauge-fixed bot)
    chord: np.ndarray | None = None  # Cholesky factor of the free information at theta (no prior only)


def _fit(
    p: Pairings,
    played: np.ndarray,
    scored: np.ndarray,
    weakly: bool,
    warm: _Fit | None = None,
    want_covariance: bool = False,
) -> _Fit:
    """Maximum-likelihood strengths, with the virtual-draw prior only if needed.

    :param played: games per pairing; ``scored``: ``i``'s score per pairing (``p.played`` and
        ``p.scored``, or a bootstrap resample's).
    :param weakly: whether the games graph is connected (see :func:`_strongly_connected`).
    :param warm: a fit to start from (the full data's, for a bootstrap resample): its strengths, and its
        information factor for chord steps when the games played are the same and no prior is needed
        (the information depends on the games played and the strengths, not on the scores).
    :param want_covariance: also return the covariance (inverse information) and the information factor.
    """
    n = p.n
    if n == 0:
        return _Fit(np.zeros(0), False, None)
    q = _problem(p, played, scored, weakly)
    theta = np.zeros(q.size)
    chord = None
    if warm is not None:
        theta[:n] = warm.theta - (warm.theta[0] if not q.prior else warm.theta.mean())
        same_games = played is p.played or np.array_equal(played, p.played)
        chord = warm.chord if not q.prior and same_games else None
    theta = _maximise(q, theta, chord)
    if not want_covariance or n <= 1:
        return _Fit(theta[:n], q.prior, None)
    info = q.information(theta[q.i] - theta[q.j])
    cov = np.zeros((n, n))
    cov[q.free, q.free] = np.linalg.inv(info)
    return _Fit(theta[:n], q.prior, cov, None if q.prior else _cholesky(info))


def _anchored(theta: np.ndarray, anchor_index: int | None, anchor_rating: float) -> np.ndarray:
    """Elo from strengths (the last axis is the bots): the anchor bot at its rating, else mean 1500."""
    elo = theta * ELO_PER_NAT
    if elo.shape[-1] == 0:
        return elo
    base = elo[..., anchor_index] if anchor_index is not None else elo.mean(axis=-1)
    return elo + (anchor_rating - base)[..., None] if elo.ndim > 1 else elo + (anchor_rating - base)


def _components(n: int, p: Pairings) -> list[list[int]]:
    """Weakly connected groups of the games graph, each sorted, in order of their first bot."""
    graph = coo_matrix((np.ones(len(p.i)), (p.i, p.j)), shape=(n, n))
    count, labels = connected_components(graph, directed=False)
    groups: list[list[int]] = [[] for _ in range(count)]
    for k, label in enumerate(labels):
        groups[label].append(k)
    return sorted(groups)


# --------------------------------------------------------------------------- the bootstrap


def _sum_distributions(unit: np.ndarray, count: int) -> np.ndarray:
    """Row ``r``: the distribution of the sum of ``count`` independent draws from ``unit[r]`` (a pmf
    over 0, 1, ..., w - 1), i.e. the ``count``-th power of its generating function, by FFT.

    :returns: shape ``(rows, count * (w - 1) + 1)``; rounding leaves values of about 1e-16 where the
        probability is 0: those below 1e-14 of their row's largest are set to 0.
    """
    width = count * (unit.shape[1] - 1) + 1
    size = next_fast_len(width, real=True)
    out = np.fft.irfft(np.fft.rfft(unit, size, axis=1) ** count, size, axis=1)[:, :width]
    out[out < 1e-14 * out.max(axis=1, keepdims=True)] = 0.0
    out /= out.sum(axis=1, keepdims=True)
    return out


@dataclass(frozen=True, slots=True)
class _Inverse:
    """Inverse-CDF sampling of several discrete distributions of one width at once, with a guide table
    (Chen and Asau 1974): ``guide[r, m]`` is at most the first index whose CDF exceeds ``m / width``, so
    a draw starts there and steps forward (rarely more than once)."""

    cdf: np.ndarray  # (rows * width,) row-major, each row ending in exactly 1.0
    guide: np.ndarray  # (rows * width,) flat indices into cdf
    width: int

    @classmethod
    def of(cls, pmf: np.ndarray) -> _Inverse:
        rows, width = pmf.shape
        cdf = np.cumsum(pmf, axis=1)
        cdf /= cdf[:, -1:]  # the last entry is exactly 1.0, so every uniform in [0, 1) lands in its row
        offset = np.arange(rows)[:, None]
        steps = np.arange(width)[None, :] / width
        found = np.searchsorted((cdf + offset).ravel(), (steps + offset).ravel(), side="right")
        guide = np.maximum(found - 1, (offset * width).repeat(width))  # one back: rounding of "+ offset"
        return cls(cdf.ravel(), guide, width)

    def draw(self, u: np.ndarray) -> np.ndarray:
        """Indices drawn with uniforms ``u`` of shape ``(k, rows)`` (``u[:, r]`` for row ``r``)."""
        rows = len(self.cdf) // self.width
        column = np.minimum((u * self.width).astype(np.int64), self.width - 1)
        pos = self.guide[column + (np.arange(rows) * self.width)[None, :]]
        flat_pos, flat_u = pos.ravel(), u.ravel()
        active = np.flatnonzero(self.cdf[flat_pos] <= flat_u)
        while active.size:  # ends: each row's last CDF value is 1.0 > u
            flat_pos[active] += 1
            active = active[self.cdf[flat_pos[active]] <= flat_u[active]]
        return flat_pos.reshape(u.shape) - (np.arange(rows) * self.width)[None, :]


#: Bootstrap draws are made this many (resample, pairing) cells at a time (bounds the memory).
_CHUNK_CELLS = 1 << 22


def resampled_totals(p: Pairings, rng: np.random.Generator, resamples: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``resamples`` bootstrap resamples of every pairing's ``(played, scored)``.

    A resample draws each pairing's units with replacement, as many as it played: its outcome counts
    (the pentanomial, for duplicate pairs) from a multinomial with the observed frequencies. The fit
    sees a resample only through each pairing's total score, so where every unit of a pairing has the
    same number of games, that total is drawn directly from its exact distribution (the units-fold
    convolution of one unit's score distribution, :func:`_sum_distributions`): one uniform per pairing
    and resample instead of one binomial per outcome. Pairings that mix unit sizes (a lone game beside
    duplicate pairs) draw the multinomial itself.

    Small-sample correction: the spread of a mean over ``N`` units resampled from their own empirical
    distribution is too small by the factor ``(N - 1) / N`` in variance, so each resampled total's
    deviation from the observed one (from its expected share, with mixed sizes) is widened by
    ``sqrt(N / (N - 1))`` (and kept within 0 and the games played). With 10 duplicate pairs a pairing
    the plain percentile intervals covered the truth 92-93.5% of the time, the widened ones 94-94.5%
    (the simulation in tests/test_arena_ratings.py).
    """
    groups: dict[tuple[int, int], list[int]] = {}  # (games a unit, units) -> pairings
    mixed: list[int] = []
    for k, outcomes in enumerate(p.outcomes):
        sizes = {g for g, _ in outcomes}
        if len(sizes) == 1:
            groups.setdefault((sizes.pop(), sum(outcomes.values())), []).append(k)
        else:
            mixed.append(k)
    tables = []
    for (g, units), members in groups.items():
        unit = np.zeros((len(members), 2 * g + 1))
        for r, k in enumerate(members):
            for (_, half), c in p.outcomes[k].items():
                unit[r, half] = c / units
        index = np.array(members, dtype=np.int64)
        widen = math.sqrt(units / (units - 1)) if units > 1 else 1.0
        tables.append((index, _Inverse.of(_sum_distributions(unit, units)), p.scored[index], widen))
    chunk = max(1, min(resamples, _CHUNK_CELLS // max(1, len(p.played))))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        scored = np.empty((size, len(p.played)))
        played = np.tile(p.played, (size, 1))
        for index, table, observed, widen in tables:
            drawn = table.draw(rng.random((size, len(index)))) / 2.0
            scored[:, index] = np.clip(observed + (drawn - observed) * widen, 0.0, p.played[index])
        for k in mixed:
            kinds = sorted(p.outcomes[k])
            units = sum(p.outcomes[k].values())
            counts = rng.multinomial(units, np.array([p.outcomes[k][x] for x in kinds]) / units, size=size)
            played[:, k] = counts @ np.array([g for g, _ in kinds], dtype=float)
            drawn = counts @ np.array([h for _, h in kinds], dtype=float) / 2.0
            expected = played[:, k] * p.scored[k] / p.played[k]
            scored[:, k] = np.clip(expected + (drawn - expected) * math.sqrt(units / (units - 1)), 0.0, played[:, k])
        yield from zip(played, scored, strict=True)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@dataclass(frozen=True, slots=True)
class _Normal:
    """The normal approximation: per-bot intervals and the sd of any difference of two bots."""

    ci: list[tuple[float, float]]
    cov: np.ndarray  # n x n, natural-log units

    def los(self, elo: np.ndarray, hi: int, lo: int) -> float:
        var = self.cov[hi, hi] + self.cov[lo, lo] - 2.0 * self.cov[hi, lo]
        sd, diff = math.sqrt(max(0.0, float(var))) * ELO_PER_NAT, float(elo[hi] - elo[lo])
        return _phi(diff / sd) if sd > 0 else (1.0 if diff > 0 else 0.5)


def _contrasts(n: int, anchor_index: int | None) -> np.ndarray:
    """Row ``k``: the anchored rating of bot ``k`` as a linear function of the strengths (before the
    shift), ``e_k - e_anchor`` or ``e_k - mean``."""
    contrast = np.eye(n)
    if anchor_index is not None:
        contrast[:, anchor_index] -= 1.0
    else:
        contrast -= 1.0 / max(n, 1)
    return contrast


def _normal(fit: _Fit, elo: np.ndarray, anchor_index: int | None) -> _Normal:
    """``elo ± 1.96 sd`` per bot, sd of the anchored rating from the fit's covariance."""
    n = len(elo)
    cov = fit.covariance if fit.covariance is not None else np.zeros((n, n))
    contrast = _contrasts(n, anchor_index)
    var = np.einsum("ka,ab,kb->k", contrast, cov, contrast)
    sd = np.sqrt(np.clip(var, 0.0, None)) * ELO_PER_NAT
    return _Normal([(float(e - 1.96 * x), float(e + 1.96 * x)) for e, x in zip(elo, sd, strict=True)], cov)


def bootstrap_samples(
    p: Pairings, fit: _Fit, resamples: int, seed: int, anchor_index: int | None, anchor_rating: float
) -> np.ndarray:
    """Anchored Elo of every bot in each of ``resamples`` bootstrap resamples: shape ``(resamples, n)``.

    Each resample draws every pairing's units with replacement (:func:`resampled_totals`) and is fitted
    exactly, starting from the full data's strengths. Deterministic given ``seed``
    (``numpy.random.default_rng(seed)``).
    """
    weakly = len(_components(p.n, p)) == 1
    out = np.empty((resamples, p.n))
    for b, (played, scored) in enumerate(resampled_totals(p, np.random.default_rng(seed), resamples)):
        out[b] = _fit(p, played, scored, weakly, warm=fit).theta
    return _anchored(out, anchor_index, anchor_rating)


def _unit_variances(p: Pairings) -> tuple[np.ndarray, np.ndarray]:
    """Per pairing: the variance of its total score as the bootstrap estimates it, ``N s**2`` (``s**2``
    the sample variance, ``N - 1`` in the denominator, of its ``N`` units' scores about their expected
    share), and its degrees of freedom ``N - 1`` (0, and no variance, for a pairing of one unit)."""
    var, df = np.zeros(len(p.outcomes)), np.zeros(len(p.outcomes))
    for k, outcomes in enumerate(p.outcomes):
        units = sum(outcomes.values())
        if units > 1:
            share = p.scored[k] / p.played[k]
            squares = sum(c * (half / 2.0 - games * share) ** 2 for (games, half), c in outcomes.items())
            var[k], df[k] = units * squares / (units - 1), units - 1
    return var, df


def student_factors(p: Pairings, cov: np.ndarray | None, contrasts: np.ndarray) -> np.ndarray:
    """Per row of ``contrasts`` (linear functions of the strengths: an anchored rating, a difference):
    ``t(0.975, nu) / z(0.975)``, the widening that turns a bootstrap interval into Student's (module
    docstring). ``nu`` is the Welch–Satterthwaite degrees of freedom of the estimate's variance
    ``sum_p g_p**2 V_p`` (``g_p``: its derivative by pairing ``p``'s total score, from the fit's
    covariance ``cov``; ``V_p``, ``N_p - 1``: :func:`_unit_variances`); 1.0 where nothing varies."""
    rows = len(contrasts)
    if cov is None or not rows:
        return np.ones(rows)
    var, df = _unit_variances(p)
    slope = contrasts @ cov  # d estimate / d total of pairing (i, j) = slope[:, i] - slope[:, j]
    total, fourth = np.zeros(rows), np.zeros(rows)
    chunk = max(1, _CHUNK_CELLS // max(1, rows))
    for start in range(0, len(var), chunk):
        part = slice(start, start + chunk)
        share = (slope[:, p.i[part]] - slope[:, p.j[part]]) ** 2 * var[part]
        total += share.sum(axis=1)
        fourth += (share**2 / np.maximum(df[part], 1.0)).sum(axis=1)
    nu = np.divide(total**2, fourth, out=np.full(rows, np.inf), where=fourth > 0)
    return np.where(np.isfinite(nu), stdtrit(np.where(np.isfinite(nu), nu, 1.0), 0.975) / Z95, 1.0)


def _widenings(p: Pairings, fit: _Fit, anchor_index: int | None,
               neighbours: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Student's factors (:func:`student_factors`) of each bot's anchored rating and of each neighbour
    pair's difference ``(hi, lo)``."""
    gaps = np.zeros((len(neighbours), p.n))  # row x: e_hi - e_lo of neighbour pair x
    gaps[np.arange(len(neighbours)), [hi for hi, _ in neighbours]] = 1.0
    gaps[np.arange(len(neighbours)), [lo for _, lo in neighbours]] = -1.0
    widen = student_factors(p, fit.covariance, np.vstack([_contrasts(p.n, anchor_index), gaps]))
    return widen[: p.n], widen[p.n :]


def _untrusted(
    p: Pairings, bots: Sequence[str], boot_ci: Sequence[tuple[float, float]], fixed: int | None
) -> dict[int, str]:
    """Bots whose bootstrap interval is not trusted -> why (see the module docstring)."""
    units = p.units
    fewest: dict[int, tuple[int, int]] = {}  # bot -> (units, other bot) of its thinnest pairing
    for k in range(len(units)):
        for me, other in ((int(p.i[k]), int(p.j[k])), (int(p.j[k]), int(p.i[k]))):
            if me not in fewest or (int(units[k]), other) < fewest[me]:
                fewest[me] = (int(units[k]), other)
    why: dict[int, str] = {}
    for k in range(len(bots)):
        if k not in fewest:
            why[k] = "no games"
        elif fewest[k][0] < BOOTSTRAP_MIN_UNITS:
            count, other = fewest[k]
            why[k] = (
                f"fewer than {BOOTSTRAP_MIN_UNITS} resampling units (duplicate pairs) against {bots[other]} ({count})"
            )
        elif k != fixed and boot_ci[k][1] - boot_ci[k][0] < MIN_SPREAD:
            why[k] = "the bootstrap spread is zero (every resample gives the same rating)"
    return why


@dataclass(slots=True)
class _Intervals:
    """Per bot: the interval reported, its method, a note when the bootstrap was not trusted and the
    bootstrap's own interval; per neighbour pair in the ranking: the LOS and its method."""

    ci: list[tuple[float, float]]
    method: list[str]
    los: list[float]
    los_methods: list[str]
    neighbours: list[tuple[int, int]]
    normal_ci: list[tuple[float, float]]
    notes: dict[int, str] = field(default_factory=dict)
    boot_ci: list[tuple[float, float]] = field(default_factory=list)

    @classmethod
    def normal(cls, normal: _Normal, elo: np.ndarray, neighbours: list[tuple[int, int]]) -> _Intervals:
        """Everything from the normal approximation."""
        los = [normal.los(elo, hi, lo) for hi, lo in neighbours]
        return cls(list(normal.ci), ["normal"] * len(elo), los, ["normal"] * len(los), neighbours, list(normal.ci))

    def add_bootstrap(self, p: Pairings, samples: np.ndarray, fixed: int | None, elo: np.ndarray,
                      widen: np.ndarray, widen_los: np.ndarray) -> None:
        """Use the bootstrap ``samples`` (resamples x bots, anchored Elo) where they are trusted, widened
        about the estimates ``elo`` by Student's factors (``widen`` per bot, ``widen_los`` per neighbour
        pair: :func:`student_factors`), or the wider of it and the normal interval (module docstring)."""
        lows, highs = np.percentile(samples, [2.5, 97.5], axis=0)
        self.boot_ci = [(float(a), float(b)) for a, b in zip(lows, highs, strict=True)]
        untrusted = _untrusted(p, p.bots, self.boot_ci, fixed)
        self.notes = {k: why for k, why in untrusted.items() if k != fixed}
        for k, (low, high) in enumerate(self.boot_ci):
            if k not in untrusted:  # trusted: Student's interval
                e, f = float(elo[k]), float(widen[k])
                self.boot_ci[k] = self.ci[k] = (e + f * (low - e), e + f * (high - e))
                self.method[k] = "bootstrap"
            elif high - low > self.normal_ci[k][1] - self.normal_ci[k][0]:  # untrusted: the wider of the two
                self.ci[k], self.method[k] = (low, high), "bootstrap"
        for x, (hi, lo) in enumerate(self.neighbours):
            diffs = samples[:, hi] - samples[:, lo]
            if hi not in untrusted and lo not in untrusted and np.ptp(diffs) >= MIN_SPREAD:
                gap = float(elo[hi] - elo[lo])
                diffs = gap + float(widen_los[x]) * (diffs - gap)
                self.los[x] = float(np.mean(np.where(diffs > 0, 1.0, np.where(diffs == 0, 0.5, 0.0))))
                self.los_methods[x] = "bootstrap"


def rate(
    games: Sequence[Game],
    anchor: tuple[str, float] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    names: Iterable[str] = (),
) -> RatingTable:
    """Rate ``games``; returns the JSON-ready result described in the module docstring.

    :param anchor: ``(name, rating)`` to pin one bot; ``None`` puts the pool mean at 1500.
    :param bootstrap: number of resamples for ``ci`` and LOS (0: normal approximation).
    :param seed: seed of the bootstrap's ``numpy.random.default_rng``; the result is a function of the inputs.
    :param names: extra bots to include even with no games (listed in ``"unrated"``, unless alone).
    :returns: the :class:`RatingTable` (see the module docstring: only one group linked by games is
        rated; ``games`` counts every game). Ratings are rounded to 0.01 Elo, LOS and percentages to 4
        decimals; the ranking orders the rounded ratings, equal ones by name.
    :raises ValueError: if the anchor names no rated bot, or ``bootstrap`` is negative.
    """
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, not {bootstrap}")
    every = pairings(games, names)
    components = _components(every.n, every)
    rated, unrated = _rated_group(every, components, anchor)
    p = every if len(rated) == every.n else pairings([g for g in games if g.a in rated], rated)
    bots = p.bots
    anchor_index, anchor_rating = _anchor_of(anchor, bots)
    fit = _fit(p, p.played, p.scored, True, want_covariance=True)
    elo = _anchored(fit.theta, anchor_index, anchor_rating)
    published = [round(float(e), 2) for e in elo]  # ties by name: equal as published, not by rounding noise
    ranking = sorted(range(p.n), key=lambda k: (-published[k], bots[k]))
    fixed = anchor_index if anchor_index is not None else (0 if p.n == 1 else None)  # rating fixed by definition
    neighbours = list(itertools.pairwise(ranking))
    iv = _Intervals.normal(_normal(fit, elo, anchor_index), elo, neighbours)
    if p.n and bootstrap > 0:
        samples = bootstrap_samples(p, fit, bootstrap, seed, anchor_index, anchor_rating)
        iv.add_bootstrap(p, samples, fixed, elo, *_widenings(p, fit, anchor_index, neighbours))
    if fixed is not None:
        iv.ci[fixed], iv.method[fixed] = (float(elo[fixed]), float(elo[fixed])), "anchor"
        iv.notes.pop(fixed, None)
    los, los_methods = iv.los, iv.los_methods
    return {
        "ratings": _entries(p, elo, iv, fixed, ranking),
        "ranking": [bots[k] for k in ranking],
        "los": [
            {"better": bots[hi], "worse": bots[lo], "los": round(x, 4), "method": m}
            for (hi, lo), x, m in zip(neighbours, los, los_methods, strict=True)
        ],
        "los_method": _summary(los_methods, "bootstrap" if bootstrap > 0 else "normal"),
        "bootstrap_min_units": BOOTSTRAP_MIN_UNITS,
        "matrix": _matrix(p, bots),
        "anchor": Anchor(bot=anchor[0], rating=anchor_rating) if anchor else Anchor(pool_mean=POOL_MEAN),
        "prior": fit.prior,
        "components": [[every.bots[k] for k in comp] for comp in components],
        "unrated": unrated,
        "bootstrap": bootstrap,
        "seed": seed,
        "games": len(games),
    }


def _rated_group(
    p: Pairings, components: Sequence[Sequence[int]], anchor: tuple[str, float] | None
) -> tuple[set[str], list[Unrated]]:
    """The bots to rate and the others, reported: ``({names}, [{"bot", "why"}])`` (issue 23).

    Ratings are comparable only within a group linked by games, so one group is rated: the anchor's,
    else the largest (the first of equal ones). A bot without games is rated only when it is the only
    bot. The others get no rating (the prior would invent one): ``why`` is ``"no games"`` or names
    the rated group.
    """
    if anchor is not None and anchor[0] in p.bots:
        main = next(c for c in components if p.bots.index(anchor[0]) in c)
    else:
        main = max(components, key=len, default=[])
        main = main if len(main) > 1 or p.n == 1 else []
    rated = {p.bots[k] for k in main}
    games = np.bincount(p.i, p.played, p.n) + np.bincount(p.j, p.played, p.n)
    group = ", ".join(p.bots[k] for k in main)
    unrated = [
        Unrated(bot=b, why="no games" if games[k] == 0 else f"no games link it to the rated group ({group})")
        for k, b in enumerate(p.bots)
        if b not in rated
    ]
    return rated, unrated


def _anchor_of(anchor: tuple[str, float] | None, bots: Sequence[str]) -> tuple[int | None, float]:
    """The anchored bot's index (``None``: no anchor) and its rating (else the pool mean).
    :raises ValueError: if the anchor names no rated bot."""
    if anchor is None:
        return None, POOL_MEAN
    if anchor[0] not in bots:
        raise ValueError(f"anchor bot {anchor[0]!r} played no game; bots: {bots}")
    return bots.index(anchor[0]), float(anchor[1])


def _entries(p: Pairings, elo: np.ndarray, iv: _Intervals, fixed: int | None,
             ranking: Sequence[int]) -> dict[str, BotRating]:
    """``{name: {"elo", "ci", "ci_method", "ci_note"?, "ci_bootstrap"?, "games", "score"}}``, best first."""
    per_bot_games = np.bincount(p.i, p.played, p.n) + np.bincount(p.j, p.played, p.n)
    per_bot_score = np.bincount(p.i, p.scored, p.n) + np.bincount(p.j, p.played - p.scored, p.n)
    out: dict[str, BotRating] = {}
    for k in ranking:
        notes: _IntervalNotes = {}
        if k in iv.notes:
            notes["ci_note"] = iv.notes[k]
        if iv.boot_ci and k != fixed:
            notes["ci_bootstrap"] = [round(iv.boot_ci[k][0], 2), round(iv.boot_ci[k][1], 2)]
        out[p.bots[k]] = {
            "elo": round(float(elo[k]), 2),
            "ci": [round(iv.ci[k][0], 2), round(iv.ci[k][1], 2)],
            "ci_method": iv.method[k],
            **notes,
            "games": int(per_bot_games[k]),
            "score": float(per_bot_score[k]),
        }
    return out


def _matrix(p: Pairings, bots: Sequence[str]) -> dict[str, dict[str, PairingScore]]:
    """Each bot's games, score and score share against each bot it met."""
    matrix: dict[str, dict[str, PairingScore]] = {a: {} for a in bots}
    for i, j, g, s in zip(p.i.tolist(), p.j.tolist(), p.played.tolist(), p.scored.tolist(), strict=True):
        matrix[bots[i]][bots[j]] = {"games": int(g), "score": s, "pct": round(s / g, 4)}
        matrix[bots[j]][bots[i]] = {"games": int(g), "score": g - s, "pct": round((g - s) / g, 4)}
    return matrix


def _summary(methods: Sequence[str], default: str) -> str:
    """One word for a list of methods: the common one, or ``"mixed"``."""
    kinds = set(methods)
    return default if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def parse_anchor(text: str) -> tuple[str, float]:
    """``"NAME=RATING"`` to ``(name, rating)``. :raises ValueError: if it is not of that form."""
    name, sep, value = text.rpartition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, float(value)
    except ValueError:
        raise ValueError(f"--anchor must be NAME=RATING, e.g. random=1000, not {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.ratings GAMES.jsonl [--anchor NAME=RATING] [--bootstrap N] [--seed S]``.

    Prints the result of :func:`rate` as JSON. Returns 0, 2 on a bad file or argument (with a
    message on stderr naming the line), or 1 without a message when stdout is closed early (a pipe
    into ``head``).
    """
    parser = argparse.ArgumentParser(prog="python -m arena.ratings", description=__doc__.split("\n")[0])
    parser.add_argument("games", help='JSON lines: {"a", "b", "score" (a\'s: 1, 0.5, 0), "pair"?}')
    parser.add_argument("--anchor", help="NAME=RATING: pin one bot (default: pool mean 1500)")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, help="resamples (0: normal approx.)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    args = parser.parse_args(argv)
    try:
        anchor = parse_anchor(args.anchor) if args.anchor else None
        with open(args.games, encoding="utf-8") as f:
            games = read_games(f, args.games)
        result = rate(games, anchor=anchor, bootstrap=args.bootstrap, seed=args.seed)
    except (OSError, ValueError) as e:
        print(f"arena.ratings.fit: error: {e}", file=sys.stderr)
        return 2
    try:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, like other filters
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1
    return 0


def games_from_mapping(rows: Iterable[Mapping[str, object]]) -> list[Game]:
    """Games from already-decoded rows (as in games.jsonl), those without a winner (:func:`unrated`) left
    out. :raises ValueError: on a bad row."""
    return [parse_game(dict(r)) for r in rows if not unrated(r)]


#: Most checkpoints :func:`history` computes (it widens the step to stay within this).
HISTORY_POINTS = 40


def history(
    games: Sequence[Game], every: int = 0, names: Iterable[str] = (), anchor: tuple[str, float] | None = None
) -> list[HistoryPoint]:
    """Each bot's rating and 95% interval after every ``every`` games (in the order given), and after the last.

    The intervals are the normal approximation (``bootstrap=0``: a bootstrap per checkpoint would cost
    a second each at league scale). ``every = 0`` (default) picks the step so there are at most
    :data:`HISTORY_POINTS` checkpoints; a smaller explicit step is widened to that too.

    :returns: ``[{"games": n, "ratings": {bot: {"elo", "ci"}}}]``, ``n`` ascending; empty with no games.
    :raises ValueError: if ``every`` is negative.
    """
    names = list(names)
    return [history_point(games[:n], names, anchor) for n in history_marks(len(games), every)]


def history_marks(count: int, every: int = 0) -> list[int]:
    """The checkpoints of :func:`history` over ``count`` games: after every ``step`` games and after the
    last, ``step`` at least ``every`` and wide enough for at most :data:`HISTORY_POINTS` (none without games).

    :raises ValueError: if ``every`` is negative.
    """
    if every < 0:
        raise ValueError(f"every must be >= 0, not {every}")
    if not count:
        return []
    step = max(every, math.ceil(count / HISTORY_POINTS), 1)
    return [*range(step, count, step), count]


def history_point(
    games: Sequence[Game], names: Iterable[str] = (), anchor: tuple[str, float] | None = None
) -> HistoryPoint:
    """One checkpoint of :func:`history`: the ratings after ``games`` (all of them)."""
    result = rate(games, anchor=anchor, bootstrap=0, names=names)
    return {"games": len(games), "ratings": {b: {"elo": r["elo"], "ci": r["ci"]} for b, r in result["ratings"].items()}}


if __name__ == "__main__":
    sys.exit(main())
