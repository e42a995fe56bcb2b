"""The ladder against a round robin, random pairing and OpenSkill matchmaking on a simulated field (issue 23).

    python benchmarks/ladder.py [--entrants 200] [--pairs-per-entrant 10] [--seeds 1 2 3 4 5]
                                [--scale 1000] [--reach-share 0.6] [--middling-sd 150] [--batch 4]

The field: ``--entrants`` entrants with known strengths, like a real field: 5% strong (Elo N(400, 80)),
80% middling (N(0, 150); ``--middling-sd``) and 15% broken (N(-700, 100): they lose nearly every
game). A duplicate pair of ``a`` and ``b`` is two games on one deal with the sides swapped: the deal
favours side 0 by a luck of N(0, 1) nats, so ``a`` wins game one with probability ``sigmoid(d + luck)``
and game two (on the other side) with ``sigmoid(d - luck)``, ``d`` the true difference in nats
(``benchmarks/ratings.py``'s model; without the luck it is ``arena.tournament.runner.SimulatedRunner``'s
logistic model).

Schedules, each at the same budget of ``entrants * pairs-per-entrant`` duplicate pairs (2,000 pairs,
4,000 games for 200 entrants):

- ``ladder``: :class:`arena.formats.ladder.Ladder` with its default rules, choosing ``--batch`` (4)
  pairs at a time (as for four idle workers: one fit per four pairs);
- ``round_robin``: the round robin's rounds (circle method, entrants in a seeded order: every entrant
  plays once a round), cut at the budget; ``round_robin_full``: all ``N (N - 1) / 2`` pairings, one
  duplicate pair each;
- ``random``: uniformly random pairings;
- ``openskill``: Weng-Lin (the ``openskill`` package's Plackett-Luce model, its defaults) with
  matchmaking: the entrant with the fewest games meets the opponent of best match quality
  ``sqrt(2 beta^2 / c^2) exp(-(mu_a - mu_b)^2 / (2 c^2))``, ``c^2 = 2 beta^2 + sigma_a^2 + sigma_b^2``
  (ties by the seeded RNG), rated after each game.

Every schedule's games are rated the same way, by :func:`arena.ratings.fit.rate` (``bootstrap=0``; an
unrated entrant counts at the bottom), and compared with the truth: ``spearman`` (rank correlation) and
``top10_precision`` (share of the true top 10 in the rated top 10); ``openskill`` also reports its own
``mu``'s (``spearman_mu``). ``ladder_games_to_full_rr_spearman``: the games after which the ladder's
Spearman (checked every 100 pairs, or a hundredth of the round robin, up to ``--reach-share`` of the
full round robin's games) first reached the full round robin's. One trajectory against one round
robin's draw: luck moves it by about ten points of share; ``benchmarks/ladder_bound.py`` compares
designs free of that luck, and what an oracle that knows the strengths reaches (docs/arena.md).

Scale (``--scale`` entrants, a field filled with 5 random pairs per entrant): ``choose_ms`` (median of
100 choices of the next pair, fit done), ``fit_after_game_ms`` (median time to count one more pair and
refit, warm) against ``live_publication_ms`` (``arena.ratings.publication.live_ratings`` on the same games, best
of 2): the time the league spends on ratings after each game today. Prints one JSON object.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.formats.ladder import Choice, Ladder, Played  # noqa: E402
from arena.ratings.elo import ELO_PER_NAT  # noqa: E402
from arena.ratings.fit import Game, rate  # noqa: E402
from arena.ratings.publication import live_ratings  # noqa: E402

CHECK_EVERY = 100  # most pairs between the ladder's Spearman checks (a hundredth of the round robin if fewer)


@dataclass(frozen=True, slots=True)
class Field:
    """Entrant names and true strengths (Elo), and the RNG that plays their games."""

    names: list[str]
    elo: np.ndarray
    rng: np.random.Generator

    def play(self, a: int, b: int, tag: str) -> list[Game]:
        """One duplicate pair of ``a`` and ``b`` (see the module docstring): two games, ``a`` on side 0 first."""
        d, luck = (self.elo[a] - self.elo[b]) / ELO_PER_NAT, self.rng.normal()
        first = self.rng.random() < expit(d + luck)
        second = self.rng.random() < expit(d - luck)  # a wins the second game (on side 1)
        x, y = self.names[a], self.names[b]
        return [Game(x, y, float(first), tag), Game(y, x, float(not second), tag)]


def make_field(entrants: int, seed: int, middling_sd: float = 150.0) -> Field:
    """A field like a real one (module docstring); names in a seeded order unrelated to strength."""
    rng = np.random.default_rng(seed)
    strong, broken = max(1, round(0.05 * entrants)), max(1, round(0.15 * entrants))
    elo = np.concatenate(
        [
            rng.normal(400, 80, strong),
            rng.normal(0, middling_sd, entrants - strong - broken),
            rng.normal(-700, 100, broken),
        ]
    )
    rng.shuffle(elo)
    return Field([f"bot{k:04d}" for k in range(entrants)], elo, rng)


def score(field: Field, games: Sequence[Game]) -> dict[str, Any]:
    """``games``, ``spearman`` and ``top10_precision`` of the ratings of ``games`` against the truth."""
    result = rate(games, bootstrap=0, names=field.names)
    floor = min((r["elo"] for r in result["ratings"].values()), default=0.0) - 1.0
    elo = np.array([result["ratings"].get(n, {"elo": floor})["elo"] for n in field.names])
    return {
        "games": len(games),
        "spearman": round(float(spearmanr(elo, field.elo).statistic), 4),
        "top10_precision": top10(elo, field.elo),
    }


def top10(rated: np.ndarray, truth: np.ndarray) -> float:
    """Share of the true top 10 among the rated top 10."""
    k = min(10, len(truth))
    return len(set(np.argsort(-rated)[:k]) & set(np.argsort(-truth)[:k])) / k


def round_robin_order(n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Every pairing once, round by round (circle method; a bye with an odd field), entrants shuffled."""
    order = [int(x) for x in rng.permutation(n)] + ([-1] if n % 2 else [])
    m, out = len(order), []
    for _ in range(m - 1):
        out += [(order[k], order[m - 1 - k]) for k in range(m // 2) if -1 not in (order[k], order[m - 1 - k])]
        order = [order[0], order[-1], *order[1:-1]]
    return out


def run_ladder(field: Field, budget: int, reach: float, cap: int, batch: int) -> tuple[dict[str, Any], int | None]:
    """The ladder's figures at ``budget`` pairs, and the games after which its Spearman first reached
    ``reach`` (checked every :data:`CHECK_EVERY` pairs, up to ``cap`` pairs; None if not by then).
    The ladder chooses ``batch`` pairs at a time (as for that many idle workers)."""
    ladder, games, at_budget, reached = Ladder(field.rng.bytes(32)), [], None, None
    every = max(1, min(CHECK_EVERY, len(field.names) * (len(field.names) - 1) // 200))
    index = {n: k for k, n in enumerate(field.names)}
    queue: list[Choice] = []
    for t in range(1, max(budget, cap) + 1):
        queue = queue or ladder.next_pairs(field.names, count=batch).choices[::-1]
        choice = queue.pop()
        pair = field.play(index[choice.a], index[choice.b], f"d{t}")
        games += pair
        ladder.extend(Played(g.a, g.b, g.score, g.pair) for g in pair)
        if t == budget:
            at_budget = score(field, games)
        if reached is None and t % every == 0 and score(field, games)["spearman"] >= reach:
            reached = len(games)
        if at_budget is not None and (reached is not None or t >= cap):
            break
    assert at_budget is not None
    return at_budget, reached


def run_fixed(field: Field, pairs: Sequence[tuple[int, int]]) -> list[Game]:
    """The games of a fixed list of pairings, one duplicate pair each."""
    return [g for t, (a, b) in enumerate(pairs) for g in field.play(a, b, f"d{t}")]


def run_openskill(field: Field, budget: int) -> dict[str, Any]:
    """Weng-Lin ratings with match-quality matchmaking (module docstring) for ``budget`` pairs."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    n = len(field.names)
    players = [model.rating(name=x) for x in field.names]
    played, games = np.zeros(n), []
    beta2 = model.beta**2
    for t in range(budget):
        mu = np.array([p.mu for p in players])
        var = np.array([p.sigma**2 for p in players])
        least = np.flatnonzero(played == played.min())
        a = int(field.rng.choice(least))
        c2 = 2 * beta2 + var[a] + var
        quality = np.sqrt(2 * beta2 / c2) * np.exp(-((mu[a] - mu) ** 2) / (2 * c2))
        quality[a] = -1.0
        b = int(field.rng.choice(np.flatnonzero(quality == quality.max())))
        for g in field.play(a, b, f"d{t}"):
            x, y = index_of(field, g.a), index_of(field, g.b)
            [[players[x]], [players[y]]] = model.rate([[players[x]], [players[y]]], ranks=[1 - g.score, g.score])
            games.append(g)
        played[[a, b]] += 2
    out = score(field, games)
    mu = np.array([p.mu for p in players])
    return {
        **out,
        "spearman_bt": out["spearman"],
        "spearman": round(float(spearmanr(mu, field.elo).statistic), 4),
        "top10_precision": top10(mu, field.elo),
        "top10_precision_bt": out["top10_precision"],
    }


def index_of(field: Field, name: str) -> int:
    """The index of entrant ``name`` (names are ``bot%04d``)."""
    return int(name[3:])


def one_seed(
    entrants: int, pairs_per_entrant: int, seed: int, reach_share: float, middling_sd: float, batch: int
) -> dict[str, Any]:
    """Every schedule on one field (``seed``); see the module docstring."""
    budget = entrants * pairs_per_entrant
    full_pairs = entrants * (entrants - 1) // 2
    field = make_field(entrants, seed, middling_sd)
    order = round_robin_order(entrants, field.rng)
    full = score(field, run_fixed(field, order))
    out: dict[str, Any] = {"seed": seed, "round_robin_full": full}
    out["round_robin"] = score(field, run_fixed(field, order[:budget]))
    picks = [tuple(int(x) for x in field.rng.choice(entrants, 2, replace=False)) for _ in range(budget)]
    out["random"] = score(field, run_fixed(field, picks))
    out["openskill"] = run_openskill(field, budget)
    out["ladder"], reached = run_ladder(field, budget, full["spearman"], int(reach_share * full_pairs), batch)
    out["ladder_games_to_full_rr_spearman"] = reached
    out["ladder_share_of_full_rr"] = None if reached is None else round(reached / full["games"], 4)
    print(f"seed {seed}: {json.dumps(out)}", file=sys.stderr, flush=True)
    return out


def timed_ms(fn: Callable[[], object]) -> float:
    """Wall milliseconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000.0


def scale(entrants: int, seed: int = 7) -> dict[str, Any]:
    """Choice and fit times among ``entrants`` (module docstring)."""
    field = make_field(entrants, seed)
    games = run_fixed(
        field, [tuple(int(x) for x in field.rng.choice(entrants, 2, replace=False)) for _ in range(5 * entrants)]
    )
    ladder = Ladder(field.rng.bytes(32))
    ladder.extend(Played(g.a, g.b, g.score, g.pair) for g in games)
    ladder.fit()
    choose, fit = [], []
    for t in range(100):
        choose.append(timed_ms(lambda: ladder.next_pairs(field.names)))
        if t < 30:
            c = ladder.next_pairs(field.names).choices[0]
            pair = field.play(index_of(field, c.a), index_of(field, c.b), f"s{t}")
            games += pair

            def update(pair: list[Game] = pair) -> None:
                ladder.extend(Played(g.a, g.b, g.score, g.pair) for g in pair)
                ladder.fit()

            fit.append(timed_ms(update))
    live = min(timed_ms(lambda: live_ratings(games, names=field.names)) for _ in range(2))
    fit_ms = statistics.median(fit)
    return {
        "entrants": entrants,
        "games": len(games),
        "choose_ms": round(statistics.median(choose), 2),
        "choose_ms_max": round(max(choose), 2),
        "fit_after_game_ms": round(fit_ms, 2),
        "live_publication_ms": round(live, 1),
        "fit_over_live": round(fit_ms / live, 4),
    }


def summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per schedule and figure, ``[min, max]`` over the seeds."""
    out: dict[str, Any] = {}
    for kind in ("ladder", "round_robin", "random", "openskill", "round_robin_full"):
        out[kind] = {key: [min(r[kind][key] for r in runs), max(r[kind][key] for r in runs)] for key in runs[0][kind]}
    shares = [r["ladder_share_of_full_rr"] for r in runs]
    out["ladder_share_of_full_rr"] = None if None in shares else [min(shares), max(shares)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its JSON; returns 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entrants", type=int, default=200)
    p.add_argument("--pairs-per-entrant", type=int, default=10)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--scale", type=int, default=1000, help="entrants for the timings (0: skip)")
    p.add_argument("--reach-share", type=float, default=0.6, help="most of the full round robin the ladder plays")
    p.add_argument("--middling-sd", type=float, default=150.0, help="Elo spread of the middling 80%%")
    p.add_argument("--batch", type=int, default=4, help="pairs the ladder chooses at a time")
    args = p.parse_args(argv)
    runs = [
        one_seed(args.entrants, args.pairs_per_entrant, s, args.reach_share, args.middling_sd, args.batch)
        for s in args.seeds
    ]
    out: dict[str, Any] = {
        "entrants": args.entrants,
        "pairs_per_entrant": args.pairs_per_entrant,
        "middling_sd": args.middling_sd,
        "batch": args.batch,
        "budget_pairs": args.entrants * args.pairs_per_entrant,
        "seeds": args.seeds,
        "summary": summary(runs),
        "runs": runs,
    }
    s = out["summary"]
    out["floors"] = {
        "ladder_spearman_at_least_0.90": s["ladder"]["spearman"][0] >= 0.90,
        "ladder_above_random_every_seed": all(r["ladder"]["spearman"] > r["random"]["spearman"] for r in runs),
        "ladder_reaches_full_rr_within_25pct": s["ladder_share_of_full_rr"] is not None
        and s["ladder_share_of_full_rr"][1] <= 0.25,
    }
    if args.scale:
        out["scale"] = scale(args.scale)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
