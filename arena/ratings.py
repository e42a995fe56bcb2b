"""Batch maximum-likelihood Elo (Bradley–Terry) with a duplicate-pair bootstrap.

The model
---------
Each bot ``i`` has a rating ``r_i`` on the Elo scale. The expected score of ``a`` against ``b`` is the
logistic ``E(a, b) = 1 / (1 + 10 ** ((r_b - r_a) / 400))``. A game's score is 1, 0.5 or 0 for ``a``;
a draw counts as half a win for each side, so the log-likelihood of the games is
``sum(s * log E(a, b) + (1 - s) * log(1 - E(a, b)))``. The ratings are its maximum, found by
Newton–Raphson on the natural-log strengths ``theta = r * ln(10) / 400`` (the log-likelihood is
concave; every Newton step is damped by halving until the likelihood does not fall), solved with a
pure-Python Gaussian elimination: no numpy.

Anchoring
---------
Only differences are identified. By default the ratings are shifted so that their mean is 1500
(:data:`POOL_MEAN`); with ``anchor=(name, rating)`` the named bot sits at ``rating`` instead.

Degenerate cases (stated, not hidden)
-------------------------------------
The maximum exists exactly when the "scored against" graph is strongly connected (Zermelo 1929;
Ford 1957): for every split of the bots into two groups, each group scored something (a win or a
draw) against the other. It does not exist when a bot won or lost every game, or when the bots fall
into separate groups that never met. In those cases, **and only then**, every bot gets
:data:`PRIOR_DRAWS` = 1 virtual draw against a virtual reference player fixed at the pool's level
(strength 0 before anchoring; it is not reported). That keeps every rating finite (a bot that won
every game sits a finite distance above its opponents: tests/test_arena_ratings.py solves one case by
hand) while barely moving ratings with many games. The output says so: ``"prior": true`` and the
``"components"`` of the games graph (weakly connected groups; ratings across two groups are not
comparable, only the prior ties them). A single bot (or no games) rates at the anchor with ``ci`` equal
to its rating. The same rule applies to each bootstrap resample separately.

Intervals and likelihood of superiority
---------------------------------------
95% intervals come from a bootstrap over **units**: the games that share a ``"pair"`` id (a
duplicate pair: same deal seed, sides swapped) are one unit; a game without one is its own unit.
Resampling is **stratified by pairing**: the units of each unordered pair of bots are resampled with
replacement among themselves, so every resample keeps the tournament's design (each pairing plays
as many units as it did). The bootstrap interval is the 2.5th and 97.5th percentile of a bot's
anchored rating over the resamples. The bootstrap is deterministic given ``seed``
(``random.Random(seed)``).

The **normal approximation** uses the observed Fisher information at the maximum (with the prior's
virtual games when the prior is used): ``elo ± 1.96 * sd``, and ``LOS = Phi(diff / sd_diff)``.

A bootstrap cannot estimate a spread from too few units: with one duplicate pair per pairing every
resample *is* the tournament and the interval has no width (``[1637.5, 1637.5]``, LOS 100%). So a
bot's bootstrap interval is trusted only when **each of its pairings has at least**
:data:`BOOTSTRAP_MIN_UNITS` **(5) units** and the interval has a width (at least :data:`MIN_SPREAD`;
all-draw or all-split results give none). Otherwise the bot gets the **wider** of its bootstrap and
normal intervals, and ``"ci_note"`` says why the bootstrap alone was not trusted. Why five: a
pairing of ``u`` units has only ``C(2u-1, u)`` distinct resamples — 1 for one unit, 35 for four, 126
for five — so with fewer the percentiles are a handful of repeated values, not a spread. Each bot's
``"ci_method"`` names the interval reported: ``"bootstrap"``, ``"normal"``, or ``"anchor"`` (the
anchored bot, or a lone bot, whose rating is fixed by definition); ``"ci_bootstrap"`` keeps the
bootstrap interval whenever one was computed.

LOS (likelihood of superiority) between neighbours in the ranking is the bootstrap share of
resamples in which the higher-ranked bot's rating is above its neighbour's (a tie counts half) when
both bots' bootstrap is trusted (and the difference varies), else the normal approximation; each
entry's ``"method"`` says which, and ``"los_method"`` summarises (``"bootstrap"``, ``"normal"`` or
``"mixed"``). With ``bootstrap=0`` every interval and LOS is the normal approximation.

Input format (one JSON object a line)::

    {"a": "heuristic", "b": "random", "score": 1, "pair": "t-p0-1-d3"}

``score`` is ``a``'s (1, 0.5 or 0); ``pair`` is optional; other keys are ignored.

Run ``python -m arena.ratings GAMES.jsonl [--anchor NAME=RATING] [--bootstrap N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The pool mean on the Elo scale when no bot is anchored.
POOL_MEAN = 1500.0
#: Virtual draws against the reference player that each bot gets when the MLE does not exist.
PRIOR_DRAWS = 1
#: Elo points per unit of natural-log strength: 400 / ln(10).
ELO_PER_NAT = 400.0 / math.log(10.0)
#: Default number of bootstrap resamples.
DEFAULT_BOOTSTRAP = 1000
#: Resampling units (duplicate pairs) a pairing needs before the bootstrap is trusted for its bots.
BOOTSTRAP_MIN_UNITS = 5
#: A bootstrap interval narrower than this (Elo) has no spread: it estimates nothing.
MIN_SPREAD = 0.01

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


class GamesFileError(ValueError):
    """A line of a games file is not a valid game; the message names the file and line number."""


def parse_game(obj: Any) -> Game:
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


def read_games(lines: Iterable[str], source: str = "<input>") -> list[Game]:
    """Parse JSON lines into games; blank lines are skipped.

    :raises GamesFileError: ``"<source>:<line>: <what is wrong>"`` for the first bad line.
    """
    games = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            games.append(parse_game(json.loads(line)))
        except json.JSONDecodeError as e:
            raise GamesFileError(f"{source}:{number}: not valid JSON ({e.msg}): {line.strip()[:80]!r}") from None
        except ValueError as e:
            raise GamesFileError(f"{source}:{number}: {e}") from None
    return games


# --------------------------------------------------------------------------- the fit


@dataclass(frozen=True, slots=True)
class _Counts:
    """Sufficient statistics: per unordered index pair (i < j), games played and i's total score."""

    n: int
    played: dict[tuple[int, int], float]
    scored: dict[tuple[int, int], float]


def _counts(n: int, games: Iterable[tuple[int, int, float]]) -> _Counts:
    played: dict[tuple[int, int], float] = {}
    scored: dict[tuple[int, int], float] = {}
    for i, j, s in games:
        if i > j:
            i, j, s = j, i, 1.0 - s
        played[(i, j)] = played.get((i, j), 0.0) + 1.0
        scored[(i, j)] = scored.get((i, j), 0.0) + s
    return _Counts(n, played, scored)


def _strongly_connected(c: _Counts) -> bool:
    """True if every bot can reach every other along "scored something against" edges."""
    if c.n <= 1:
        return True
    out: list[set[int]] = [set() for _ in range(c.n)]
    back: list[set[int]] = [set() for _ in range(c.n)]
    for (i, j), g in c.played.items():
        s = c.scored[(i, j)]
        if s > 0:  # i scored against j
            out[i].add(j)
            back[j].add(i)
        if g - s > 0:  # j scored against i
            out[j].add(i)
            back[i].add(j)

    def reach(adj: list[set[int]]) -> int:
        seen, todo = {0}, [0]
        while todo:
            for k in adj[todo.pop()]:
                if k not in seen:
                    seen.add(k)
                    todo.append(k)
        return len(seen)

    return reach(out) == c.n and reach(back) == c.n


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Solve ``matrix @ x = rhs`` by Gaussian elimination with partial pivoting (small, dense)."""
    m = len(rhs)
    a = [[*row[:], rhs[k]] for k, row in enumerate(matrix)]
    for col in range(m):
        piv = max(range(col, m), key=lambda r: abs(a[r][col]))
        if abs(a[piv][col]) < 1e-300:
            raise ZeroDivisionError("singular information matrix")
        a[col], a[piv] = a[piv], a[col]
        for r in range(col + 1, m):
            f = a[r][col] / a[col][col]
            if f:
                for k in range(col, m + 1):
                    a[r][k] -= f * a[col][k]
    x = [0.0] * m
    for r in range(m - 1, -1, -1):
        x[r] = (a[r][m] - sum(a[r][k] * x[k] for k in range(r + 1, m))) / a[r][r]
    return x


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _loglik(theta: list[float], terms: list[tuple[int, int, float, float]]) -> float:
    total = 0.0
    for i, j, g, s in terms:
        d = theta[i] - theta[j]
        # s*log(sig(d)) + (g-s)*log(sig(-d)), computed stably
        total += -s * math.log1p(math.exp(-d)) if d > -30 else s * (d - math.log1p(math.exp(d)))
        total += -(g - s) * math.log1p(math.exp(d)) if d < 30 else (g - s) * (-d - math.log1p(math.exp(-d)))
    return total


@dataclass(frozen=True, slots=True)
class _Fit:
    theta: list[float]  # natural-log strengths of the real bots (gauge: see _fit)
    prior: bool
    covariance: list[list[float]] | None  # of theta over the free parameters, full n x n (gauge row 0)


def _fit(c: _Counts, want_covariance: bool = False) -> _Fit:
    """Maximum-likelihood strengths (Newton–Raphson), with the virtual-draw prior only if needed."""
    n = c.n
    if n == 0:
        return _Fit([], False, None)
    terms = [(i, j, g, c.scored[(i, j)]) for (i, j), g in c.played.items()]
    prior = not _strongly_connected(c)
    if prior:
        ref = n  # the virtual reference player, fixed at theta = 0
        terms += [(k, ref, float(PRIOR_DRAWS), PRIOR_DRAWS / 2.0) for k in range(n)]
        size, free = n + 1, list(range(n))
    else:
        size, free = n, list(range(1, n))  # gauge: theta_0 = 0
    theta = [0.0] * size
    index = {p: k for k, p in enumerate(free)}
    hess: list[list[float]] = [[0.0] * len(free) for _ in free]
    for _ in range(200):
        grad = [0.0] * size
        info = [[0.0] * len(free) for _ in free]
        for i, j, g, s in terms:
            p = _sigmoid(theta[i] - theta[j])
            grad[i] += s - g * p
            grad[j] -= s - g * p
            w = g * p * (1.0 - p)
            for x, y, sign in ((i, i, 1.0), (j, j, 1.0), (i, j, -1.0), (j, i, -1.0)):
                if x in index and y in index:
                    info[index[x]][index[y]] += sign * w
        hess = info
        gfree = [grad[p] for p in free]
        if not free or max(abs(v) for v in gfree) < 1e-10:
            break
        step = _solve(info, gfree)
        base = _loglik(theta, terms)
        t = 1.0
        while True:
            trial = theta[:]
            for k, p in enumerate(free):
                trial[p] += t * step[k]
            if _loglik(trial, terms) >= base - 1e-12 or t < 1e-6:
                theta = trial
                break
            t /= 2.0
        if max(abs(v) for v in step) * t < 1e-13:
            break
    cov = None
    if want_covariance and free:
        inv = [_solve(hess, [1.0 if r == k else 0.0 for r in range(len(free))]) for k in range(len(free))]
        cov = [[0.0] * n for _ in range(n)]
        for a_, pa in enumerate(free):
            for b_, pb in enumerate(free):
                if pa < n and pb < n:
                    cov[pa][pb] = inv[a_][b_]
    return _Fit(theta[:n], prior, cov)


def _anchored(theta: Sequence[float], anchor_index: int | None, anchor_rating: float) -> list[float]:
    elo = [t * ELO_PER_NAT for t in theta]
    if not elo:
        return []
    shift = anchor_rating - (elo[anchor_index] if anchor_index is not None else sum(elo) / len(elo))
    return [e + shift for e in elo]


def _components(n: int, c: _Counts) -> list[list[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in c.played:
        parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for k in range(n):
        groups.setdefault(find(k), []).append(k)
    return sorted(groups.values())


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (q in [0, 1]) of an ascending list."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def rate(
    games: Sequence[Game],
    anchor: tuple[str, float] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    names: Iterable[str] = (),
) -> dict[str, Any]:
    """Rate ``games``; returns the JSON-ready result described in the module docstring.

    :param anchor: ``(name, rating)`` to pin one bot; ``None`` puts the pool mean at 1500.
    :param bootstrap: number of resamples for ``ci`` and LOS (0: normal approximation).
    :param seed: seed of the bootstrap's ``random.Random``; the result is a function of the inputs.
    :param names: extra bots to include even with no games (they rate at the pool level, via the prior).
    :returns: ``{"ratings": {name: {"elo", "ci": [lo, hi], "ci_method", "ci_note"?, "ci_bootstrap"?,
        "games", "score"}}, "ranking": [names best first], "los": [{"better", "worse", "los", "method"}],
        "los_method", "bootstrap_min_units", "matrix": {a: {b: {"games", "score", "pct"}}}, "anchor",
        "prior", "components", "bootstrap", "seed", "games"}`` (see the module docstring). Ratings are
        rounded to 0.01 Elo, LOS and percentages to 4 decimals.
    :raises ValueError: if the anchor names no rated bot, or ``bootstrap`` is negative.
    """
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, not {bootstrap}")
    bots = sorted({g.a for g in games} | {g.b for g in games} | set(names))
    idx = {b: k for k, b in enumerate(bots)}
    n = len(bots)
    anchor_index = None
    anchor_rating = POOL_MEAN
    if anchor is not None:
        if anchor[0] not in idx:
            raise ValueError(f"anchor bot {anchor[0]!r} played no game; bots: {bots}")
        anchor_index, anchor_rating = idx[anchor[0]], float(anchor[1])

    coded = [(idx[g.a], idx[g.b], g.score) for g in games]
    counts = _counts(n, coded)
    fit = _fit(counts, want_covariance=True)
    elo = _anchored(fit.theta, anchor_index, anchor_rating)

    played = [0] * n
    scored = [0.0] * n
    for i, j, s in coded:
        played[i] += 1
        played[j] += 1
        scored[i] += s
        scored[j] += 1.0 - s

    ranking = sorted(range(n), key=lambda k: (-elo[k], bots[k]))
    fixed = anchor_index if anchor_index is not None else (0 if n == 1 else None)  # rating fixed by definition

    # the normal approximation: always computed (the fallback of a bootstrap that cannot estimate the spread)
    cov = fit.covariance or [[0.0] * n for _ in range(n)]

    def sd_of(vec: list[float]) -> float:
        return math.sqrt(max(0.0, sum(vec[a] * vec[b] * cov[a][b] for a in range(n) for b in range(n)))) * ELO_PER_NAT

    normal_ci: list[tuple[float, float]] = []
    for k in range(n):
        vec = [0.0] * n
        vec[k] += 1.0
        if anchor_index is not None:
            vec[anchor_index] -= 1.0
        else:
            vec = [v - 1.0 / n for v in vec]
        sd = sd_of(vec)
        normal_ci.append((elo[k] - 1.96 * sd, elo[k] + 1.96 * sd))

    def normal_los(hi: int, lo: int) -> float:
        vec = [0.0] * n
        vec[hi], vec[lo] = 1.0, -1.0
        sd, diff = sd_of(vec), elo[hi] - elo[lo]
        return _phi(diff / sd) if sd > 0 else (1.0 if diff > 0 else 0.5)

    ci = list(normal_ci)
    method = ["normal"] * n
    notes: dict[int, str] = {}
    boot_ci: list[tuple[float, float]] = []
    los = [normal_los(hi, lo) for hi, lo in itertools.pairwise(ranking)]
    los_methods = ["normal"] * len(los)
    if n and bootstrap > 0:
        # units: duplicate pairs (or single games), stratified by their unordered pair of bots
        units: dict[str, list[tuple[int, int, float]]] = {}
        for k, (g, code) in enumerate(zip(games, coded, strict=True)):
            units.setdefault(g.pair if g.pair is not None else f"\x00game{k}", []).append(code)
        strata: dict[tuple[int, ...], list[list[tuple[int, int, float]]]] = {}
        for unit in units.values():
            key = tuple(sorted({x for i, j, _ in unit for x in (i, j)}))
            strata.setdefault(key, []).append(unit)
        ordered_strata = [strata[k] for k in sorted(strata)]
        rng = random.Random(seed)
        samples: list[list[float]] = []
        for _ in range(bootstrap):
            sample: list[tuple[int, int, float]] = []
            for group in ordered_strata:
                for _ in range(len(group)):
                    sample.extend(group[rng.randrange(len(group))])
            samples.append(_anchored(_fit(_counts(n, sample)).theta, anchor_index, anchor_rating))
        for k in range(n):
            column = sorted(s[k] for s in samples)
            boot_ci.append((_percentile(column, 0.025), _percentile(column, 0.975)))
        # can the bootstrap estimate bot k's spread? Enough units in each of its pairings, and a spread
        trusted = [True] * n
        for k in range(n):
            mine = sorted((len(group), key) for key, group in strata.items() if k in key)
            if not mine:
                why = "no games"
            elif mine[0][0] < BOOTSTRAP_MIN_UNITS:
                count, key = mine[0]
                others = ", ".join(bots[x] for x in key if x != k)
                why = (
                    f"fewer than {BOOTSTRAP_MIN_UNITS} resampling units (duplicate pairs) against {others} "
                    f"({count})"
                )
            elif k != fixed and boot_ci[k][1] - boot_ci[k][0] < MIN_SPREAD:
                why = "the bootstrap spread is zero (every resample gives the same rating)"
            else:
                continue
            trusted[k] = False
            if k != fixed:
                notes[k] = why
        for k in range(n):
            if trusted[k]:
                ci[k], method[k] = boot_ci[k], "bootstrap"
            elif boot_ci[k][1] - boot_ci[k][0] > normal_ci[k][1] - normal_ci[k][0]:
                ci[k], method[k] = boot_ci[k], "bootstrap"  # the wider of the two
        for x, (hi, lo) in enumerate(itertools.pairwise(ranking)):
            diffs = [s[hi] - s[lo] for s in samples]
            if trusted[hi] and trusted[lo] and max(diffs) - min(diffs) >= MIN_SPREAD:
                los[x] = sum(1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in diffs) / bootstrap
                los_methods[x] = "bootstrap"
    if fixed is not None:
        ci[fixed], method[fixed] = (elo[fixed], elo[fixed]), "anchor"
        notes.pop(fixed, None)

    matrix: dict[str, dict[str, dict[str, float]]] = {a: {} for a in bots}
    for (i, j), played_ij in sorted(counts.played.items()):
        s = counts.scored[(i, j)]
        matrix[bots[i]][bots[j]] = {"games": int(played_ij), "score": s, "pct": round(s / played_ij, 4)}
        matrix[bots[j]][bots[i]] = {
            "games": int(played_ij),
            "score": played_ij - s,
            "pct": round((played_ij - s) / played_ij, 4),
        }

    def entry(k: int) -> dict[str, Any]:
        out: dict[str, Any] = {"elo": round(elo[k], 2), "ci": [round(ci[k][0], 2), round(ci[k][1], 2)],
                               "ci_method": method[k]}
        if k in notes:
            out["ci_note"] = notes[k]
        if boot_ci and k != fixed:
            out["ci_bootstrap"] = [round(boot_ci[k][0], 2), round(boot_ci[k][1], 2)]
        out["games"], out["score"] = played[k], scored[k]
        return out

    return {
        "ratings": {bots[k]: entry(k) for k in ranking},
        "ranking": [bots[k] for k in ranking],
        "los": [
            {"better": bots[hi], "worse": bots[lo], "los": round(p, 4), "method": m}
            for (hi, lo), p, m in zip(itertools.pairwise(ranking), los, los_methods, strict=True)
        ],
        "los_method": _summary(los_methods, "bootstrap" if bootstrap > 0 else "normal"),
        "bootstrap_min_units": BOOTSTRAP_MIN_UNITS,
        "matrix": matrix,
        "anchor": {"bot": anchor[0], "rating": anchor_rating} if anchor else {"pool_mean": POOL_MEAN},
        "prior": fit.prior,
        "components": [[bots[k] for k in comp] for comp in _components(n, counts)],
        "bootstrap": bootstrap,
        "seed": seed,
        "games": len(games),
    }


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
        print(f"arena.ratings: error: {e}", file=sys.stderr)
        return 2
    try:
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, like other filters
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1
    return 0


def games_from_mapping(rows: Iterable[Mapping[str, Any]]) -> list[Game]:
    """Games from already-decoded rows (as in games.jsonl). :raises ValueError: on a bad row."""
    return [parse_game(dict(r)) for r in rows]


if __name__ == "__main__":
    sys.exit(main())
