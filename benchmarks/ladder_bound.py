"""What any ladder can reach on ``benchmarks/ladder.py``'s field: an oracle design that knows the truth (issue 23).

    python benchmarks/ladder_bound.py [--entrants 200] [--seeds 1 2 3 4 5] [--reach-share 0.6]
                                      [--windows 4 32] [--batch 10] [--middling-sd 150]
                                      [--no-ladder] [--expected-only]

The ladder must choose its pairs from its own fitted ratings; an **oracle** chooses them from the true
strengths, so no ladder can do much better than it on the same field, model and fit. This study asks
how few games the oracle needs to reach the full round robin's Spearman, against the floor's 25%, and
scores the real ladder's design the same way.

The field, the games and the fit are ``benchmarks/ladder.py``'s (:func:`ladder.make_field`,
:meth:`ladder.Field.play`: duplicate pairs with a deal luck of N(0, 1) nats; :func:`ladder.score`:
:func:`arena.ratings.fit.rate`, Spearman against the truth). For each seed the full round robin is
played exactly as ``benchmarks/ladder.py`` plays it (same RNG draws), so the target Spearman is the
same number; the designs' games then continue on that field's RNG.

Designs (each a sequence of duplicate pairs, up to ``--reach-share`` of the round robin's pairs):

- ``greedy_kendall`` (the oracle): expected discordance. With the true differences ``D_ij`` and the
  design's Fisher information (a Laplacian: each duplicate pair of ``i`` and ``j`` adds the exact
  information ``c(D_ij)`` of one pair about the difference, deal luck included, :func:`pair_information`;
  0.413 for an even pair), the estimates' covariance is ``S = L^+`` and the expected number of
  discordant pairs is ``F = sum_{i<j} Phi(-|D_ij| / sqrt(V_ij))``, ``V_ij = S_ii + S_jj - 2 S_ij``
  (covariance included: direct games between neighbours count). One more pair of ``a`` and ``b``
  lowers ``F`` at first order by ``c_ab * (M_aa + M_bb - 2 M_ab)``, ``M = S L_g S``, ``L_g`` the
  Laplacian of ``g_ij = dF/dV_ij``; the greedy takes the ``--batch`` best pairs (distinct entrants)
  at a time and updates ``S`` (Sherman-Morrison). It starts from a chain of the true ranking (one pair
  per neighbour gap: the cheapest connected design).
- ``greedy_spearman``: the same with each pair's discordance weighted by ``R_i + R_j``,
  ``R_i = sum_j Phi(-z_ij)`` the expected rank error of ``i``: the first-order change of
  ``sum_i R_i**2``, which is what Spearman counts.
- ``window_w``: every entrant plays each of its ``w`` next entrants in the true ranking once a round,
  round after round (the parametric family "within ±w true ranks, k pairs each", k growing).
- ``ladder`` (unless ``--no-ladder``): the pairs :class:`arena.formats.ladder.Ladder` chooses, 4 at a
  time, its games played on the field as it goes (expected figures only: its pairs depend on its results).

Figures per design:

- ``expected_spearman_at_25pct``: the mean Spearman of estimates drawn from ``N(theta, S)`` (the normal
  approximation of the fit; 300 draws, the same for every design) after a quarter of the round robin's
  pairs; ``expected_reach_share``: the fewest pairs (in hundreds), as a share of the round robin's,
  at which it reaches the round robin's own expected Spearman (``null``: not within ``--reach-share``).
  These are free of the games' luck: the way to compare designs. ``F_pred_at_25pct``: ``F`` there.
- Unless ``--expected-only``, the design's games are played: ``pairs``/``games``/``share``, when its
  Spearman first reached the round robin's (checked every 100 pairs, as ``benchmarks/ladder.py``
  checks the ladder's; ``null``: not within ``--reach-share``), and ``spearman_at_25pct``. This is the
  benchmark's own measure, and it is noisy: the round robin's Spearman is one draw (sd about 0.0005)
  and a first crossing of a trajectory favours a design whose Spearman wanders (``window_4`` on seed 1,
  played four times at a quarter: Spearman 0.88 on average, sd 0.09; yet one play crossed at 32%).

Output: one JSON object, per seed the round robin's played and expected Spearman and each design's figures.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit, ndtr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ladder import CHECK_EVERY, Field, make_field, round_robin_order, run_fixed, score  # noqa: E402

from arena.formats.ladder import Ladder, Played  # noqa: E402
from arena.ratings.elo import ELO_PER_NAT  # noqa: E402
from arena.ratings.fit import Game  # noqa: E402

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(40)  # E over the deal luck L ~ N(0, 1)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def pair_information(d: np.ndarray) -> np.ndarray:
    """The Fisher information (per nat squared) of one duplicate pair about its difference ``d`` (nats,
    any shape): the exact model of :meth:`ladder.Field.play`, the pair's two results ``(x1, x2)`` (``a``
    won game one, game two) having ``P = E_L[f(x1, d + L) f(x2, d - L)]``, ``f(1, t) = sigmoid(t)``."""
    d = np.asarray(d, dtype=float)[..., None]
    p1, p2 = expit(d + _NODES), expit(d - _NODES)
    s1, s2 = p1 * (1 - p1), p2 * (1 - p2)
    info = np.zeros(d.shape[:-1])
    for x1 in (0, 1):
        for x2 in (0, 1):
            f1, f2 = (p1 if x1 else 1 - p1), (p2 if x2 else 1 - p2)
            g1, g2 = (s1 if x1 else -s1), (s2 if x2 else -s2)
            prob = (f1 * f2) @ _WEIGHTS
            slope = (g1 * f2 + f1 * g2) @ _WEIGHTS
            info += slope**2 / np.maximum(prob, 1e-300)
    return info


class Design:
    """A design's information and covariance given the truth (module docstring, ``greedy``)."""

    def __init__(self, theta: np.ndarray, spearman: bool = False):
        n = len(theta)
        self.spearman = spearman
        self.diff = np.abs(theta[:, None] - theta[None, :])
        self.info = pair_information(theta[:, None] - theta[None, :])
        np.fill_diagonal(self.info, 0.0)
        self.cov = np.linalg.inv(np.eye(n) * 1e-9 + np.ones((n, n)) / n)  # no games: replaced on the first add
        self.laplacian = np.zeros((n, n))
        self._dirty = True

    def add(self, a: int, b: int, pairs: float = 1.0) -> None:
        """Count ``pairs`` duplicate pairs of ``a`` and ``b`` (the covariance is refreshed lazily)."""
        c = self.info[a, b] * pairs
        self.laplacian[[a, b], [a, b]] += c
        self.laplacian[a, b] -= c
        self.laplacian[b, a] -= c
        if not self._dirty:
            x = self.cov[:, a] - self.cov[:, b]
            self.cov -= np.outer(x, x) * (c / (1.0 + c * (x[a] - x[b])))

    def refresh(self) -> None:
        """The covariance ``L^+`` from scratch (pseudo-inverse through ``L + J / n``)."""
        n = len(self.diff)
        self.cov = np.linalg.inv(self.laplacian + np.ones((n, n)) / n) - np.ones((n, n)) / n
        self._dirty = False

    def variance(self) -> np.ndarray:
        """``V_ij``: the variance of every estimated difference (nats squared)."""
        s = np.diag(self.cov)
        return np.maximum(s[:, None] + s[None, :] - 2 * self.cov, 1e-12)

    def discordance(self) -> float:
        """The expected number of discordant pairs, ``F``."""
        z = self.diff / np.sqrt(self.variance())
        return float(np.triu(ndtr(-z), 1).sum())

    def gains(self) -> np.ndarray:
        """Per pairing, the first-order fall of ``F`` from one more duplicate pair of it."""
        v = self.variance()
        z = self.diff / np.sqrt(v)
        g = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi) * self.diff / (2 * v**1.5)
        if self.spearman:
            wrong = ndtr(-z)
            np.fill_diagonal(wrong, 0.0)
            reach = wrong.sum(1)
            g *= reach[:, None] + reach[None, :]
        np.fill_diagonal(g, 0.0)
        m = self.cov @ (np.diag(g.sum(1)) - g) @ self.cov
        dm = np.diag(m)
        return self.info * (dm[:, None] + dm[None, :] - 2 * m)


def greedy_pairs(theta: np.ndarray, total: int, batch: int, spearman: bool = False) -> Iterator[tuple[int, int]]:
    """The oracle's sequence of ``total`` duplicate pairs (module docstring): a chain of the true
    ranking, then ``batch`` best pairs of distinct entrants at a time."""
    design, order = Design(theta, spearman), np.argsort(-theta)
    for a, b in itertools.pairwise(order):
        design.add(int(a), int(b))
        yield int(a), int(b)
    made = len(order) - 1
    while made < total:
        design.refresh()
        gain = np.triu(design.gains(), 1)
        flat = np.argsort(-gain, axis=None)
        used: set[int] = set()
        for k in flat[: 50 * batch]:
            a, b = divmod(int(k), len(theta))
            if a in used or b in used:
                continue
            used |= {a, b}
            design.add(a, b)
            yield a, b
            made += 1
            if made >= total or len(used) >= 2 * batch:
                break


def ladder_pairs(field: Field, total: int, batch: int) -> list[tuple[int, int]]:
    """The pairs :class:`arena.formats.ladder.Ladder` chooses (``batch`` at a time, its default rules) while
    its games are played on ``field``, up to ``total`` (fewer if it stops)."""
    ladder, index, out = Ladder(field.rng.bytes(32)), {n: k for k, n in enumerate(field.names)}, []
    while len(out) < total:
        plan = ladder.next_pairs(field.names, count=min(batch, total - len(out)))
        if not plan.choices:
            break
        for c in plan.choices:
            a, b = index[c.a], index[c.b]
            ladder.extend(Played(g.a, g.b, g.score, g.pair) for g in field.play(a, b, f"l{len(out)}"))
            out.append((a, b))
    return out


def window_pairs(theta: np.ndarray, w: int, total: int) -> Iterator[tuple[int, int]]:
    """Rounds of every entrant against each of its ``w`` next entrants in the true ranking."""
    order = [int(x) for x in np.argsort(-theta)]
    made = 0
    while True:
        for s in range(1, w + 1):
            for k in range(len(order) - s):
                yield order[k], order[k + s]
                made += 1
                if made >= total:
                    return


def covariance(theta: np.ndarray, pairs: Sequence[tuple[int, int]]) -> Design:
    """The design of ``pairs`` (their Fisher information and covariance given the truth)."""
    design = Design(theta)
    for a, b in pairs:
        design.add(a, b)
    design.refresh()
    return design


def predicted(theta: np.ndarray, pairs: Sequence[tuple[int, int]]) -> float:
    """``F``, the expected discordant pairs of a design (module docstring)."""
    return covariance(theta, pairs).discordance()


def expected_spearman(theta: np.ndarray, pairs: Sequence[tuple[int, int]], draws: int = 300) -> float:
    """The mean Spearman of ``draws`` estimates ``N(theta, S)`` against ``theta`` (``S`` the design's
    covariance; the normal approximation of the fit, same draws for every design: common random numbers)."""
    values, vectors = np.linalg.eigh(covariance(theta, pairs).cov)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    n, rng = len(theta), np.random.default_rng(0)
    truth = np.argsort(np.argsort(theta))
    noise = rng.normal(size=(n, draws))
    ranks = np.argsort(np.argsort(theta[:, None] + root @ noise, axis=0), axis=0)
    return float(np.mean(1.0 - 6.0 * np.sum((ranks - truth[:, None]) ** 2, axis=0) / (n * (n * n - 1))))


def expected_reach(theta: np.ndarray, pairs: Sequence[tuple[int, int]], target: float, every: int) -> int | None:
    """The fewest pairs (a multiple of ``every``) of ``pairs`` whose :func:`expected_spearman` reaches
    ``target`` (bisection: it grows with the pairs); None if all of them do not."""
    if expected_spearman(theta, pairs) < target:
        return None
    lo, hi = 0, len(pairs) // every  # expected_spearman(hi * every) >= target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if expected_spearman(theta, pairs[: mid * every]) >= target else (mid, hi)
    return hi * every


def expected(
    theta: np.ndarray, pairs: Sequence[tuple[int, int]], quarter: int, target: float, every: int
) -> dict[str, Any]:
    """A design's normal-approximation figures: expected Spearman and ``F`` after ``quarter`` pairs, and
    the share of the round robin's ``4 * quarter`` pairs after which its expected Spearman reaches ``target``."""
    at = expected_reach(theta, pairs, target, every)
    return {
        "expected_spearman_at_25pct": round(expected_spearman(theta, pairs[:quarter]), 4),
        "F_pred_at_25pct": round(predicted(theta, pairs[:quarter]), 1),
        "expected_reach_share": None if at is None else round(at / (4 * quarter), 4),
    }


def first_reach(
    field: Field, pairs: Iterator[tuple[int, int]], target: float, every: int, quarter: int
) -> dict[str, Any]:
    """Play ``pairs`` in order; the pairs at which the Spearman first reached ``target`` (checked every
    ``every`` pairs) and the Spearman after ``quarter`` pairs."""
    games: list[Game] = []
    out: dict[str, Any] = {"pairs": None, "games": None, "spearman_at_25pct": None}
    for t, (a, b) in enumerate(pairs, start=1):
        games += field.play(a, b, f"o{t}")
        if t == quarter:
            out["spearman_at_25pct"] = score(field, games)["spearman"]
        if out["pairs"] is None and t % every == 0 and score(field, games)["spearman"] >= target:
            out["pairs"], out["games"] = t, len(games)
        if out["pairs"] is not None and out["spearman_at_25pct"] is not None:
            break
    return out


def one_seed(
    entrants: int,
    seed: int,
    reach_share: float,
    windows: Sequence[int],
    batch: int,
    middling_sd: float,
    with_ladder: bool = True,
    simulate: bool = True,
) -> dict[str, Any]:
    """The round robin as ``benchmarks/ladder.py`` plays it, then each design on the same field."""
    field = make_field(entrants, seed, middling_sd)
    order = round_robin_order(entrants, field.rng)
    full = score(field, run_fixed(field, order))
    full_pairs = len(order)
    cap, quarter = int(reach_share * full_pairs), full_pairs // 4
    every = max(1, min(CHECK_EVERY, full_pairs // 100))
    theta = field.elo / ELO_PER_NAT
    rr_expected = expected_spearman(theta, order)
    out: dict[str, Any] = {
        "seed": seed,
        "round_robin_full": full,
        "round_robin_expected_spearman": round(rr_expected, 4),
        "round_robin_F_pred": round(predicted(theta, order), 1),
    }
    designs = {
        "greedy_spearman": list(greedy_pairs(theta, cap, batch, spearman=True)),
        "greedy_kendall": list(greedy_pairs(theta, cap, batch)),
    }
    designs |= {f"window_{w}": list(window_pairs(theta, w, cap)) for w in windows}
    for name, pairs in designs.items():
        out[name] = expected(theta, pairs, quarter, rr_expected, every)
        if simulate:
            reached = first_reach(field, iter(pairs), full["spearman"], every, quarter)
            reached["share"] = None if reached["games"] is None else round(reached["games"] / full["games"], 4)
            out[name] |= reached
        print(f"seed {seed} {name}: {json.dumps(out[name])}", file=sys.stderr, flush=True)
    if with_ladder:  # last: its games draw on the field's RNG as it goes
        out["ladder"] = expected(theta, ladder_pairs(field, cap, batch=4), quarter, rr_expected, every)
        print(f"seed {seed} ladder: {json.dumps(out['ladder'])}", file=sys.stderr, flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study and print its JSON; returns 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entrants", type=int, default=200)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--reach-share", type=float, default=0.6, help="most of the full round robin a design plays")
    p.add_argument("--windows", type=int, nargs="*", default=[4, 32], help="w of the window designs")
    p.add_argument("--batch", type=int, default=10, help="pairs the greedy oracle adds per refresh")
    p.add_argument("--middling-sd", type=float, default=150.0, help="Elo spread of the middling 80%%")
    p.add_argument("--no-ladder", action="store_true", help="skip the real ladder's design")
    p.add_argument("--expected-only", action="store_true", help="skip playing the designs' games (first reach)")
    args = p.parse_args(argv)
    runs = [
        one_seed(
            args.entrants,
            s,
            args.reach_share,
            args.windows,
            args.batch,
            args.middling_sd,
            not args.no_ladder,
            not args.expected_only,
        )
        for s in args.seeds
    ]
    print(json.dumps({"entrants": args.entrants, "middling_sd": args.middling_sd, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
