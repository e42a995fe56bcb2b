"""Is version 2 better? The generalized SPRT on duplicate-pair (pentanomial) counts, as fishtest does it.

The question
------------
Two bots, ``a`` (the candidate, "new") and ``b`` (the baseline, "old"), play duplicate pairs: both
games of a pair use the same deal seed with the sides swapped. A pair gives ``a`` 0, ½, 1, 1½ or 2
points; the **pentanomial** counts how many pairs gave each. Let ``s`` be ``a``'s expected score per
game. The test is ``H0: elo = elo0`` against ``H1: elo = elo1`` and stops as soon as the evidence is
strong enough either way: false positives at most ``alpha`` (at ``elo0``), false negatives at most
``beta`` (at ``elo1``).

The statistic (fishtest's ``LLRcalc``: Michel Van den Bergh, "support_MLE_multinomial.pdf" and
"normalized_elo_practical.pdf")
-----------------------------------------------------------------------------------------------
The pentanomial is treated as a sample from an unknown distribution on the five pair scores
``a_k = k / 4`` (per game: 0, ¼, ½, ¾, 1). Zero counts are replaced by 1e-3 (fishtest's
regularisation) and ``p`` is the empirical distribution. Under each hypothesis the distribution is the
maximum-likelihood one (closest to ``p`` in Kullback–Leibler terms) that satisfies it, and

    LLR = N * sum_k p_k * (log q1_k - log q0_k)      (N = pairs)

- ``model = "logistic"``: the hypothesis fixes the expected score ``s = 1 / (1 + 10 ** (-elo / 400))``.
  The constrained maximum is ``q_k = p_k / (1 + x (a_k - s))``, ``x`` the root of
  ``sum_k p_k (a_k - s) / (1 + x (a_k - s)) = 0`` (found by Brent's method in the interval where every
  ``q_k`` is positive).
- ``model = "normalized"``: the hypothesis fixes the normalized Elo, i.e. the t-value
  ``(mu - 1/2) / sigma`` of the pair score; ``nelo`` maps to ``t = nelo / (800 / ln 10) * sqrt(2)``
  (a pair is two games). The constrained maximum is found by iterating the same form with
  ``a_k - 1/2 - t sigma (1 + ((mu - a_k) / sigma) ** 2) / 2`` in place of ``a_k - s`` until the
  probabilities move less than 1e-9.

Bounds: ``lower = ln(beta / (1 - alpha))``, ``upper = ln((1 - beta) / alpha)`` (Wald). Decision:
``H1`` when ``LLR >= upper``, ``H0`` when ``LLR <= lower``, else ``continue``. (fishtest also corrects the
bounds for the overshoot of batched updates; we update after every pair, so there is none to correct.)

Known answer (fishtest's own unit test): counts ``[10789, 19328, 33806, 19402, 10543]`` with logistic
``elo0 = -3``, ``elo1 = 1`` give LLR 2.131.

The Elo estimate
----------------
``elo = -400 log10(1 / mu - 1)`` from the mean score per game ``mu`` of the pairs (regularised as
above), and a 95% interval from ``mu ± 1.96 sd / sqrt(N)`` with ``sd`` the spread of the pair score, so
the deal luck the two games of a pair share is not counted as noise (fishtest's ``get_elo`` on the
pentanomial). With ``model = "normalized"`` the estimate is also given as normalized Elo
``(mu - 1/2) / sd_game * 800 / ln 10`` (``sd_game = sqrt(2) * sd``). This is the fixed-sample estimate:
unlike fishtest's ``SPRT_elo`` it is not corrected for the bias of stopping early.

Run ``python -m arena.formats.sprt GAMES.jsonl --a NEW --b OLD --elo0 0 --elo1 5 [--alpha 0.05 --beta 0.05]
[--model logistic|normalized] [--json]`` (games as in ``games.jsonl``: ``{"a", "b", "score", "pair"}``;
only complete duplicate pairs of ``a`` against ``b`` count), or ``--pentanomial N0 N1 N2 N3 N4`` instead
of a games file.
"""

from __future__ import annotations

import argparse
import enum
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import brentq

from arena.ratings.elo import elo_of_score, expected_score
from arena.ratings.fit import Game, read_games

#: What a zero count becomes before the fit (fishtest's regularisation).
ZERO_COUNT = 1e-3
#: Normalized Elo per unit of t-value (800 / ln 10).
NELO_PER_T = 800.0 / math.log(10.0)
#: The pair scores per game of the five pentanomial outcomes.
PAIR_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
MODELS = ("logistic", "normalized")


class Decision(enum.StrEnum):
    """The outcome of the test so far."""

    H0 = "H0"  # not stronger by elo1: stop, reject the candidate
    H1 = "H1"  # stronger by elo1: stop, accept the candidate
    CONTINUE = "continue"


def _distribution(counts: Sequence[float]) -> tuple[float, np.ndarray]:
    """``(N, p)``: the number of pairs and the regularised empirical distribution of the five outcomes.

    :raises ValueError: unless ``counts`` are five non-negative numbers.
    """
    c = np.array(counts, dtype=float)
    if c.shape != (5,) or (c < 0).any() or not np.isfinite(c).all():
        raise ValueError(f"a pentanomial is five non-negative counts, got {list(counts)!r}")
    c[c == 0] = ZERO_COUNT
    return float(c.sum()), c / c.sum()


def _tilted(p: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The distribution ``p_k / (1 + x shift_k)`` with ``sum_k p_k shift_k / (1 + x shift_k) = 0``.

    That is the maximum of ``sum p log q`` subject to ``sum q shift = 0``. ``x`` lies where every
    denominator is positive, ``(-1 / max(shift), -1 / min(shift))``, and is found by Brent's method.
    :raises ValueError: if ``shift`` does not change sign (the constraint cannot be met).
    """
    lo, hi = float(shift.min()), float(shift.max())
    if not lo < 0 < hi:
        raise ValueError("the hypothesis lies outside the range of the pair scores")

    def constraint(x: float) -> float:
        return float(np.sum(p * shift / (1.0 + x * shift)))

    eps = 1e-9
    x = float(brentq(constraint, -1.0 / hi + eps, -1.0 / lo - eps, xtol=1e-15, rtol=1e-15, maxiter=500))
    return p / (1.0 + x * shift)


def _mle_score(p: np.ndarray, s: float) -> np.ndarray:
    """The maximum-likelihood distribution with expected pair score ``s`` (logistic model)."""
    return _tilted(p, PAIR_SCORES - s)


def _mle_t_value(p: np.ndarray, t: float) -> np.ndarray:
    """The maximum-likelihood distribution with t-value ``(mu - 1/2) / sigma = t`` (normalized model).

    Fixed-point iteration from the uniform distribution (at most 50 rounds; it converges in a few).
    """
    q = np.full(5, 0.2)
    for _ in range(50):
        mu = float(q @ PAIR_SCORES)
        sigma = math.sqrt(float(q @ (PAIR_SCORES - mu) ** 2))
        shift = PAIR_SCORES - 0.5 - t * sigma * (1.0 + ((mu - PAIR_SCORES) / sigma) ** 2) / 2.0
        new = _tilted(p, shift)
        done = np.abs(new - q).max() < 1e-9
        q = new
        if done:
            break
    return q


def llr(counts: Sequence[float], elo0: float, elo1: float, model: str = "logistic") -> float:
    """The generalized log-likelihood ratio of ``H1: elo1`` against ``H0: elo0`` for pentanomial ``counts``.

    :param model: ``"logistic"`` (Elo bounds are logistic Elo) or ``"normalized"`` (normalized Elo).
    :raises ValueError: for an unknown model or counts that are not a pentanomial.
    """
    n, p = _distribution(counts)
    if model == "logistic":
        q0, q1 = (_mle_score(p, expected_score(e)) for e in (elo0, elo1))
    elif model == "normalized":
        q0, q1 = (_mle_t_value(p, e / NELO_PER_T * math.sqrt(2.0)) for e in (elo0, elo1))
    else:
        raise ValueError(f"model must be one of {MODELS}, not {model!r}")
    return n * float(p @ (np.log(q1) - np.log(q0)))


def bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's stopping bounds ``(ln(beta / (1 - alpha)), ln((1 - beta) / alpha))``.

    :raises ValueError: unless ``0 < alpha, beta`` and ``alpha + beta < 1``.
    """
    if not (0 < alpha < 1 and 0 < beta < 1 and alpha + beta < 1):
        raise ValueError(f"alpha and beta must be in (0, 1) with alpha + beta < 1, got {alpha}, {beta}")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


#: How close to 0 or 1 a score is taken when an Elo is computed from it (as fishtest clamps it): the Elo of
#: an interval's end beyond the score range is about +-4800, which means "not bounded on this side".
_SCORE_CLAMP = 1e-12
#: An Elo at least this far from 0 is such an end (:func:`elo_text` shows it as ``-inf``/``+inf``).
BEYOND_ELO = 4000.0


def _elo(score: float) -> float:
    score = min(max(score, _SCORE_CLAMP), 1 - _SCORE_CLAMP)
    return elo_of_score(score)


def elo_text(elo: float) -> str:
    """``elo`` to one decimal for people, or ``-inf``/``+inf`` for an interval end (or a score of every
    pair won or lost) beyond the score range, whose clamped Elo (about +-4800) is no measure of anything."""
    if abs(elo) >= BEYOND_ELO:
        return "+inf" if elo > 0 else "-inf"
    return f"{elo:.1f}"


@dataclass(frozen=True, slots=True)
class SprtResult:
    """The state of one test. ``elo_ci`` is the 95% interval; ``nelo``/``nelo_ci`` are normalized Elo."""

    pentanomial: list[int]
    pairs: int
    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str
    llr: float
    lower: float
    upper: float
    decision: Decision
    elo: float
    elo_ci: tuple[float, float]
    nelo: float
    nelo_ci: tuple[float, float]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready."""
        out = asdict(self)
        out["decision"] = str(self.decision)
        return out


def sprt(
    counts: Sequence[int], elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05, model: str = "logistic"
) -> SprtResult:
    """Run the test on pentanomial ``counts`` (pairs that gave the candidate 0, ½, 1, 1½, 2 points).

    :raises ValueError: for ``elo0 >= elo1``, bad ``alpha``/``beta``, an unknown model or bad counts.
    """
    if not elo0 < elo1:
        raise ValueError(f"elo0 must be below elo1, got {elo0} and {elo1}")
    lower, upper = bounds(alpha, beta)
    value = llr(counts, elo0, elo1, model)
    decision = Decision.H1 if value >= upper else Decision.H0 if value <= lower else Decision.CONTINUE
    n, p = _distribution(counts)
    mu = float(p @ PAIR_SCORES)
    sd = math.sqrt(float(p @ (PAIR_SCORES - mu) ** 2))
    half = 1.959963984540054 * sd / math.sqrt(n)
    sd_game = math.sqrt(2.0) * sd
    nelo = (mu - 0.5) / sd_game * NELO_PER_T if sd_game > 0 else 0.0
    nelo_half = half / sd_game * NELO_PER_T if sd_game > 0 else 0.0
    return SprtResult(
        pentanomial=[int(c) for c in counts],
        pairs=int(sum(counts)),
        elo0=elo0,
        elo1=elo1,
        alpha=alpha,
        beta=beta,
        model=model,
        llr=value,
        lower=lower,
        upper=upper,
        decision=decision,
        elo=_elo(mu),
        elo_ci=(_elo(mu - half), _elo(mu + half)),
        nelo=nelo,
        nelo_ci=(nelo - nelo_half, nelo + nelo_half),
    )


def pentanomial(games: Sequence[Game], a: str, b: str) -> tuple[list[int], int]:
    """The pentanomial of ``a`` against ``b``: complete duplicate pairs by ``a``'s points (0, ½, 1, 1½, 2).

    :returns: ``(counts, left_out)``: ``left_out`` counts the games of ``a`` against ``b`` that are not in
        a complete pair (no ``pair`` id, or a pair with other than two games).
    """
    pairs: dict[str, list[float]] = {}
    left_out = 0
    for g in games:
        if {g.a, g.b} != {a, b}:
            continue
        if g.pair is None:
            left_out += 1
            continue
        pairs.setdefault(g.pair, []).append(g.score if g.a == a else 1.0 - g.score)
    counts = [0] * 5
    for scores in pairs.values():
        if len(scores) != 2:
            left_out += len(scores)
            continue
        counts[round(2 * sum(scores))] += 1
    return counts, left_out


def report(r: SprtResult, a: str = "a", b: str = "b") -> str:
    """A few lines for people."""
    unit = "normalized Elo" if r.model == "normalized" else "logistic Elo"
    lines = [
        f"SPRT {a} vs {b}: H0 elo={r.elo0:g}  H1 elo={r.elo1:g} ({unit})  alpha={r.alpha:g}  beta={r.beta:g}",
        f"pairs: {r.pairs}  pentanomial (pairs giving {a} 0, 1/2, 1, 3/2, 2 points): {r.pentanomial}",
        f"LLR: {r.llr:.3f}  bounds: [{r.lower:.3f}, {r.upper:.3f}]",
        f"decision: {r.decision}"
        + {"H1": f" ({a} is stronger by {r.elo1:g})", "H0": f" ({a} is not stronger by {r.elo1:g})"}.get(
            str(r.decision), " (play more pairs)"
        ),
        f"Elo: {elo_text(r.elo)} [{elo_text(r.elo_ci[0])}, {elo_text(r.elo_ci[1])}] (95%, logistic, not corrected"
        " for the early stop)",
    ]
    if r.model == "normalized":
        lines.append(f"normalized Elo: {r.nelo:.1f} [{r.nelo_ci[0]:.1f}, {r.nelo_ci[1]:.1f}] (95%)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring). Returns 0, or 2 with a one-line error on stderr."""
    parser = argparse.ArgumentParser(prog="python -m arena.formats.sprt", description=__doc__.split("\n")[0])
    parser.add_argument("games", nargs="?", help="games.jsonl (omit with --pentanomial)")
    parser.add_argument("--a", help="the candidate (new) bot")
    parser.add_argument("--b", help="the baseline (old) bot")
    parser.add_argument("--pentanomial", type=int, nargs=5, metavar="N", help="counts instead of a games file")
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=5.0)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--model", choices=MODELS, default="logistic")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    try:
        left_out = 0
        if args.pentanomial is not None:
            counts = args.pentanomial
        elif args.games and args.a and args.b:
            with open(args.games, encoding="utf-8") as f:
                counts, left_out = pentanomial(read_games(f, args.games), args.a, args.b)
            if not sum(counts):
                raise ValueError(f"{args.games}: no complete duplicate pair of {args.a!r} against {args.b!r}")
        else:
            raise ValueError("give GAMES.jsonl with --a NEW --b OLD, or --pentanomial N0 N1 N2 N3 N4")
        result = sprt(counts, args.elo0, args.elo1, args.alpha, args.beta, args.model)
    except (OSError, ValueError) as e:
        print(f"arena.formats.sprt: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**result.to_dict(), "a": args.a, "b": args.b, "left_out_games": left_out}, indent=2))
    else:
        print(report(result, args.a or "a", args.b or "b"))
        if left_out:
            print(f"left out: {left_out} games not in a complete duplicate pair")
    return 0


# --------------------------------------------------------------------------- the tournament format


@dataclass(frozen=True, slots=True)
class SprtSettings:
    """``[tournament.sprt]`` of a ``format = "sprt"`` tournament (docs/tournament-config.md).

    ``candidate`` and ``baseline`` name the tournament's two bots; the test is on the candidate's
    pentanomial; ``games_per_pairing`` is the game limit.
    """

    candidate: str
    baseline: str
    elo0: float = 0.0
    elo1: float = 5.0
    alpha: float = 0.05
    beta: float = 0.05
    model: str = "logistic"

    def __post_init__(self) -> None:
        if self.candidate == self.baseline:
            raise ValueError("candidate and baseline must be different bots")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, not {self.model!r}")
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 must be below elo1, got {self.elo0} and {self.elo1}")
        bounds(self.alpha, self.beta)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return asdict(self)


class SequentialTest:
    """The test fed one complete pair at a time, in schedule order: it stops at the first pair after which
    the LLR crosses a bound and then ignores further pairs, so the decision depends only on the pairs, not
    on when they finished (a resumed or concurrent run that played past the decision reports the same
    decision at the same pair)."""

    def __init__(self, settings: SprtSettings):
        self.settings = settings
        self.counts = [0] * 5
        self.position = 0  # pairs of the schedule order taken: fed, or skipped (:meth:`skip`)
        self.stopped_at: int | None = None  # the pair of the schedule order (from 1) after which a bound was crossed
        self._result: SprtResult | None = None

    @property
    def pairs(self) -> int:
        """Complete pairs counted (up to the decision)."""
        return sum(self.counts)

    @property
    def skipped(self) -> int:
        """Pairs of the order passed over (:meth:`skip`) up to the decision."""
        return self.position - self.pairs

    @property
    def decided(self) -> bool:
        return self.stopped_at is not None

    def feed(self, points: float) -> Decision:
        """Count a pair that gave the candidate ``points`` (0, 0.5, 1, 1.5 or 2); returns the decision.

        :raises ValueError: for points that are not a pair's.
        """
        if self.decided:
            return self.result.decision
        if points * 2 not in (0, 1, 2, 3, 4):
            raise ValueError(f"a pair gives 0, 0.5, 1, 1.5 or 2 points, not {points!r}")
        self.counts[int(points * 2)] += 1
        self.position += 1
        self._result = None
        if self.result.decision is not Decision.CONTINUE:
            self.stopped_at = self.position
        return self.result.decision

    def skip(self) -> None:
        """Pass over the next pair of the order without counting it: a game of it had no winner (both
        sides forfeited), so the pair is no evidence either way."""
        if not self.decided:
            self.position += 1

    @property
    def result(self) -> SprtResult:
        """The test on the pairs counted."""
        if self._result is None:
            s = self.settings
            self._result = sprt(self.counts, s.elo0, s.elo1, s.alpha, s.beta, s.model)
        return self._result

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the result, the settings' bots, ``stopped_at_pair`` (the pair of the schedule
        order, from 1, at which the test decided; None while undecided) and ``skipped_pairs`` (pairs
        of the order passed over, a game of them without a winner; the counted pairs are the
        pentanomial's sum)."""
        return {
            **self.result.to_dict(),
            "candidate": self.settings.candidate,
            "baseline": self.settings.baseline,
            "stopped_at_pair": self.stopped_at,
            "skipped_pairs": self.skipped,
        }


def candidate_points(games: Sequence[Game], s: SprtSettings) -> dict[str, list[float]]:
    """The candidate's score in each game of each duplicate pair id of the two bots."""
    scores: dict[str, list[float]] = {}
    for g in games:
        if g.pair is not None and {g.a, g.b} == {s.candidate, s.baseline}:
            scores.setdefault(g.pair, []).append(g.score if g.a == s.candidate else 1.0 - g.score)
    return scores


def run_in_order(test: SequentialTest, scores: Mapping[str, Sequence[float]], pair_order: Sequence[str],
                 void: Mapping[str, int] | None = None) -> int:
    """Feed ``test`` the complete pairs of ``pair_order`` (pair ids in schedule order) from where it
    stands, up to the first pair not yet complete or the decision. ``void``: per pair id, its games
    without a winner (both sides forfeited: not in ``scores``); a pair complete with one is skipped
    (:meth:`SequentialTest.skip`). Returns the pairs fed now."""
    fed, void = 0, void or {}
    for pair in pair_order[test.position :]:
        played, blank = len(scores.get(pair, ())), void.get(pair, 0)
        if test.decided or played + blank != 2:
            break
        if blank:
            test.skip()
            continue
        test.feed(sum(scores[pair]))
        fed += 1
    return fed


if __name__ == "__main__":
    sys.exit(main())
