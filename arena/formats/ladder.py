"""The ladder: choose the next duplicate pair by what it teaches, so a large field is ranked without a
full round robin (issue 23).

A round robin of ``N`` entrants needs ``N (N - 1) / 2`` pairings; the ladder plays only the duplicate
pairs (two games on the same deal, sides swapped: the unit of the arena) that most reduce the doubt
about the ranking, and says why it chose each. The choice is a pure function of the master seed, the
stored games, the field, the budget and the day: a restart that rebuilds the ladder from the stored
results chooses the same next pair.

The ladder's own fit
--------------------
To choose it needs a rating and an uncertainty for every entrant after every game, including new
entrants without games. It fits Bradley–Terry strengths ``theta`` (natural-log units, Elo =
``theta * 400 / ln 10``) by maximum a posteriori with a Gaussian prior ``N(0, prior_sd)`` on each
(:attr:`Rules.prior_sd`, 400 Elo): the log-posterior is concave and has a maximum on any pairing graph.
Newton steps from zero solve with the sparse information (the games' weighted Laplacian plus the
prior's precision) by Jacobi-preconditioned conjugate gradients: milliseconds for a thousand
entrants. Adding a game only updates its pairing's counts (O(1)); the fit runs once before the next
choice, always from zero and in a canonical order (entrants by label), so the same stored games give
bit-identical numbers however they arrived: a restart chooses exactly as the live ladder would have.
Each entrant's variance is the inverse of its information plus the first correction for its
opponents' own uncertainty, ``var_i = 1/H_ii + sum_j H_ij**2 / (H_ii**2 H_jj)``; the variance of a
pairing's difference subtracts the first covariance term, ``var_a + var_b - 2 w_ab / (H_aa H_bb)``
(``w_ab`` the information of their own games): an approximation, on the safe side (an isolated
pair's is twice the exact one). This fit serves the choice only: the published ratings stay
:func:`arena.ratings.fit.rate`'s (which reports an entrant linked to nobody instead of rating it).

The rule (:meth:`Ladder.next_pairs`)
------------------------------------
1. **New entrants first.** An entrant with fewer than :attr:`Rules.new_pairs` duplicate pairs plays
   across the field: its ``k``-th pair goes to the opponent nearest the quantile ``q_k`` of the
   ranking (0.5, 0.25, 0.75, 0.125, ...: the base-2 van der Corput sequence), preferring opponents it
   has not met. Reason :attr:`Reason.NEW_ENTRANT`.
2. **Then the pair that most lowers the expected rank error** among ranking neighbours (each entrant
   with the :attr:`Rules.window` (32) next entrants below it). An entrant's rank error is about its
   rating's sd times how **crowded** the ranking is around it: ``rho_i = sum_j phi(d_ij / s_ij) / s_ij``
   over its window neighbours (entrants per nat at the scale of the doubt, ``s_ij**2 = var_i + var_j``,
   ``d_ij`` the strength difference). Spearman's correlation counts the squared rank error, about
   ``rho_i**2 var_i``, and a duplicate pair of information ``w`` (``w = 2 p (1 - p)`` at expected
   score ``p``) lowers it by about ``rho_i**2 var_i**2 w``. So ``urgency_i = rho_i**2 var_i**2`` and
   ``value = w * (urgency_a + urgency_b) / (1 + pairs)``, ``pairs`` the duplicate pairs the two have
   already played (opponents vary, as they would for an oracle: ``benchmarks/ladder_bound.py``). A
   **resolved** pairing (below) has no value and is never chosen, however crowded: a settled far pair
   gets nothing. Reason :attr:`Reason.CLOSEST_UNDECIDED`, or :attr:`Reason.WIDEST_INTERVAL` when one
   of the two has one of the widest tenth of intervals, wider than the median (in a field of equal
   intervals none is the widest).
3. **Ties** (equal values, as in a field of new entrants with no games) go by a hash of the master
   seed and the entrants' labels (HMAC-SHA256), never by the order of a dict or of the results.
4. Choosing several pairs at once (idle workers), each chosen pair counts as played for the budgets,
   shares and pair counts of the next choice, and shrinks its entrants' variances by one pair's
   information; so do the ``pending`` pairs (chosen earlier, not yet stored).

Budgets and fair shares
-----------------------
:class:`Budget` caps games (a duplicate pair is two) per entrant per day, per entrant in all, and in
total; an entrant out of budget is not chosen. **Fair shares**: an entrant past its new pairs plays
at most ``fair_share`` (2) times the median of the field's pairs today (at least one pair), so no
entrant soaks up the games of a day, unless it is **catching up**: it has played fewer pairs in all than
the field's median (a new version in a settled field, where nobody else plays and the day's median is
0, is placed on its first day rather than at one pair a day). Days are UTC days of :attr:`Played.at`
and of ``now``.

Void games
----------
:meth:`Ladder.void` voids every game of the entrants it names (a competition's disqualified ones, as chess
and esports ladders void a cheater's games): nobody's strength, variance, pairs, per-entrant or per-day
games count them, as though they were never played, so the next choice is made from the refit; only the
total budget still counts them (they were played). Voiding nobody again counts them all again.

The settled rule
----------------
A **neighbour gap** (two entrants next to each other in the ranking) is resolved when its difference
is at least :attr:`Rules.z` (1.96) standard deviations, or when its 95% interval is narrower than
``±width`` Elo (:attr:`Rules.width`: the two are as close as anyone needs to know), or when the two
have played and none of their games had a winner (both sides forfeited each: more of them would teach
nothing, and two broken bots would soak up the games). When every gap of
the field is resolved and no entrant is new, the ladder stops choosing: :attr:`Stop.SETTLED`. Every
other way it can stop has its own :class:`Stop` (a budget spent, the undecided pairs waiting for
fair shares, too few entrants).

Scale: ``benchmarks/ladder.py`` measures the choice among 1,000 entrants and the fit after a game.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import erfc, expit

from arena.ratings.elo import ELO_PER_NAT

#: Seconds in a (UTC) day: the unit of the per-day budgets and fair shares.
DAY_S = 86400
_LABEL = b"allfours/arena/v1/ladder"
_NEWTON_TOL = 1e-9
_MAX_NEWTON = 100
_CROWDING_POWER = 2.0  # rank error squared (Spearman) grows with crowding squared
_SHORTLIST = 256  # candidate pairings valued in full per choice (the rest only if one of them might win)
_MAX_STEP = 2.0  # nats: a longer Newton step (from far away, e.g. a bot that lost every game) is shortened


class Reason(StrEnum):
    """Why a pair was chosen (the board shows the value)."""

    NEW_ENTRANT = "new entrant across the field"
    CLOSEST_UNDECIDED = "closest undecided pair"
    WIDEST_INTERVAL = "widest interval"


class Stop(StrEnum):
    """Why the ladder chose fewer pairs than asked (the board shows the value)."""

    SETTLED = "settled: every neighbour gap is resolved"
    TOTAL_BUDGET = "the total budget is spent"
    ENTRANT_BUDGETS = "the entrants of the undecided pairs have spent their budgets"
    DAY_BUDGETS = "the entrants of the undecided pairs have spent today's budgets: play resumes tomorrow"
    FAIR_SHARES = "the undecided pairs wait for fair shares (their entrants played twice the median today)"
    TOO_FEW = "fewer than two entrants"


@dataclass(frozen=True, slots=True)
class Budget:
    """Games (a duplicate pair is two) the ladder may choose; ``None``: no limit.

    :raises ValueError: on a negative limit.
    """

    per_entrant_per_day: int | None = None
    per_entrant: int | None = None
    total: int | None = None

    def __post_init__(self) -> None:
        for name in ("per_entrant_per_day", "per_entrant", "total"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"budget {name} must be >= 0 games or None, not {value}")


@dataclass(frozen=True, slots=True)
class Rules:
    """The ladder's parameters (see the module docstring).

    ``new_pairs``: duplicate pairs a new entrant plays across the field; ``fair_share``: most pairs a
    day as a multiple of the field's median; ``window``: ranking neighbours below each entrant that are
    candidates; ``z``: standard deviations that resolve a neighbour gap; ``width``: Elo half-width of a
    difference's 95% interval that resolves it too (``None``: only ``z``); ``prior_sd``: Elo sd of the
    fit's prior.

    :raises ValueError: on a parameter out of range.
    """

    new_pairs: int = 3
    fair_share: float = 2.0
    window: int = 32
    z: float = 1.96
    width: float | None = None
    prior_sd: float = 400.0

    def __post_init__(self) -> None:
        limits = (("new_pairs", 0, True), ("window", 1, True), ("fair_share", 1, True), ("z", 0, False),
                  ("width", 0, False), ("prior_sd", 0, False))  # fmt: skip
        for name, lo, inclusive in limits:
            value = getattr(self, name)
            if value is None and name == "width":
                continue
            if not math.isfinite(value) or value < lo or (value == lo and not inclusive):
                sign = ">=" if inclusive else ">"
                none = " or None" if name == "width" else ""
                raise ValueError(f"ladder rule {name} must be a finite number {sign} {lo}{none}, not {value}")


@dataclass(frozen=True, slots=True)
class Settings:
    """A ladder tournament's ``[tournament.ladder]`` table: its :class:`Budget` and :class:`Rules`."""

    budget: Budget
    rules: Rules

    def to_dict(self) -> dict[str, float | int | None]:
        """JSON-ready: the budget's three limits (games) and the rules' ``width``, ``new_pairs``, ``fair_share``."""
        b, r = self.budget, self.rules
        return {
            "per_entrant_per_day": b.per_entrant_per_day,
            "per_entrant": b.per_entrant,
            "total": b.total,
            "width": r.width,
            "new_pairs": r.new_pairs,
            "fair_share": r.fair_share,
        }


@dataclass(frozen=True, slots=True)
class Played:
    """One stored game: ``a`` and ``b`` (side 0 and side 1), ``score`` (``a``'s: 1, 0.5 or 0; ``None``
    for a game without a winner, both sides forfeited: it counts for the budgets and the pair, not for
    the fit), the duplicate ``pair`` id (its two games are one pair; ``None``: the game is a unit of its
    own) and ``at`` (when it was stored, Unix seconds: its UTC day counts for the per-day budget).

    :raises ValueError: on equal entrants or a score that is not 1, 0.5, 0 or None.
    """

    a: str
    b: str
    score: float | None
    pair: str | None = None
    at: float = 0.0

    def __post_init__(self) -> None:
        if self.a == self.b or self.score not in (0.0, 0.5, 1.0, None):
            raise ValueError(f"a game needs two entrants and a score of 1, 0.5, 0 or None, got {self}")


@dataclass(frozen=True, slots=True)
class Choice:
    """A duplicate pair to play: entrants ``a`` and ``b``, why, and the ladder's view of the pairing:
    ``gap`` (Elo, ``a`` minus ``b``), ``gap_sd`` (Elo) and ``undecided`` (``2 Phi(-|gap| / gap_sd)``)."""

    a: str
    b: str
    reason: Reason
    gap: float
    gap_sd: float
    undecided: float


@dataclass(frozen=True, slots=True)
class Gap:
    """The ladder's view of a pairing ``a``-``b`` by its fit: ``gap`` (Elo, ``a`` minus ``b``), ``gap_sd`` (Elo)
    and ``undecided`` (``2 Phi(-|gap| / gap_sd)``), as a :class:`Choice` gives them."""

    gap: float
    gap_sd: float
    undecided: float


@dataclass(frozen=True, slots=True)
class Plan:
    """The pairs chosen (best first) and, when fewer than asked, why (``stop``; ``None``: as many as asked)."""

    choices: list[Choice]
    stop: Stop | None


@dataclass(frozen=True, slots=True)
class Standing:
    """One entrant as the ladder sees it: ``elo`` (its fit, pool mean 0), ``sd`` (Elo), duplicate
    ``pairs`` played, ``games_today``, ``new`` (still in its first pairs), ``settled`` (both its
    neighbour gaps resolved)."""

    name: str
    elo: float
    sd: float
    pairs: int
    games_today: int
    new: bool
    settled: bool


def van_der_corput(k: int) -> float:
    """The ``k``-th (0-based) point of the base-2 van der Corput sequence from 1: 0.5, 0.25, 0.75, 0.125, ..."""
    n, q, out = k + 1, 0.5, 0.0
    while n:
        out += q * (n & 1)
        n, q = n >> 1, q / 2
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 values (wrapping arithmetic): a well-spread tie-break key."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return x


class Ladder:
    """The ladder's state: the stored games reduced to pairings, and the fit; :meth:`add` a game,
    :meth:`next_pairs` to choose. Not thread-safe (the arena's main thread owns it)."""

    def __init__(self, master_seed: bytes, rules: Rules | None = None):
        self.master_seed, self.rules = master_seed, rules or Rules()
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._hash: list[int] = []
        self._row: dict[tuple[int, int], int] = {}  # (i, j), i < j -> pairing row
        self._pi: list[int] = []
        self._pj: list[int] = []
        self._games: list[float] = []  # games with a winner (or a draw): the fit's
        self._counted: list[float] = []  # every game, for the budgets
        self._score: list[float] = []  # i's score
        self._pairs: list[int] = []  # duplicate pairs (units) per pairing
        self._units: set[tuple[int, str]] = set()
        self._days: dict[int, dict[int, int]] = {}  # day -> pairing row -> games
        self._played = 0  # games
        self._void: frozenset[str] = frozenset()  # entrants whose games count for the total budget alone (void)
        self._kept: np.ndarray = np.zeros(0, dtype=bool)  # per pairing row: neither entrant void (at the fit)
        self._theta: np.ndarray = np.zeros(0)
        self._var: np.ndarray = np.zeros(0)
        self._diag: np.ndarray = np.zeros(0)  # per entrant: its information (with the prior's)
        self._fit = _Arrays.of(self, np.zeros(0))
        self._field: tuple[tuple[str, ...], np.ndarray] = ((), np.zeros(0, dtype=np.int64))
        self._fitted = True

    # ------------------------------------------------------------------ state

    def entrant(self, name: str) -> int:
        """The index of ``name``, adding it (with no games) if it is new."""
        k = self._index.get(name)
        if k is None:
            k = self._index[name] = len(self.names)
            self.names.append(name)
            digest = hmac.new(self.master_seed, _LABEL + name.encode(), hashlib.sha256).digest()
            self._hash.append(int.from_bytes(digest[:8], "big"))
            self._fitted = False
        return k

    def add(self, game: Played) -> None:
        """Count one stored game (O(1); the fit waits for the next choice). A game without a winner
        (``score`` None) counts for the budgets and its pair, not for the fit: it says nothing of strength."""
        a, b = self.entrant(game.a), self.entrant(game.b)
        i, j = (a, b) if a < b else (b, a)
        row = self._row.get((i, j))
        if row is None:
            row = self._row[(i, j)] = len(self._pi)
            self._pi.append(i)
            self._pj.append(j)
            self._games.append(0.0)
            self._counted.append(0.0)
            self._score.append(0.0)
            self._pairs.append(0)
        self._counted[row] += 1.0
        if game.score is not None:
            self._games[row] += 1.0
            self._score[row] += game.score if a < b else 1.0 - game.score
        unit = (row, game.pair if game.pair is not None else f"\0{self._played}")
        if unit not in self._units:
            self._units.add(unit)
            self._pairs[row] += 1
        day = self._days.setdefault(int(game.at // DAY_S), {})
        day[row] = day.get(row, 0) + 1
        self._played += 1
        self._fitted = False

    def extend(self, games: Iterable[Played]) -> None:
        """:meth:`add` each of ``games``."""
        for g in games:
            self.add(g)

    def void(self, names: Iterable[str]) -> None:
        """Void every game an entrant of ``names`` sat in (a disqualified one's), in place of those voided
        before (none: every game counts again): as though never played for the fit (nobody's strength or
        variance moves by them) and for every count of an entrant (its pairs, so whether it is new, its
        per-entrant and per-day budgets, its fair share); they still count for the total budget (the games
        were played). The next choice refits; the same stored games and ``names`` give the same numbers."""
        void = frozenset(names)
        if void != self._void:
            self._void, self._fitted = void, False

    @property
    def games(self) -> int:
        """Games counted (the void ones too: the total budget's)."""
        return self._played

    # ------------------------------------------------------------------ the fit

    def fit(self) -> None:
        """Fit the strengths and variances (see the module docstring); a no-op when nothing changed.

        The fit runs in a canonical order (entrants by label, pairings by their labels) from zero, so the
        same stored games give bit-identical numbers whatever order they were added in (a restart)."""
        if self._fitted:
            return
        n, lam = len(self.names), (ELO_PER_NAT / self.rules.prior_sd) ** 2
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(np.array(self.names, dtype=str), kind="stable")] = np.arange(n)
        ri, rj = rank[np.array(self._pi, dtype=np.int64)], rank[np.array(self._pj, dtype=np.int64)]
        void = np.array([name in self._void for name in self.names], dtype=bool)
        self._kept = ~(void[np.array(self._pi, dtype=np.int64)] | void[np.array(self._pj, dtype=np.int64)])
        g, s = np.array(self._games) * self._kept, np.array(self._score) * self._kept
        a, b, s = np.minimum(ri, rj), np.maximum(ri, rj), np.where(ri < rj, s, g - s)
        order = np.lexsort((b, a))
        a, b, g, s = a[order], b[order], g[order], s[order]
        theta = _map_strengths(a, b, g, s, n, lam)
        w = g * expit(theta[a] - theta[b]) * expit(theta[b] - theta[a])
        diag = np.bincount(a, w, n) + np.bincount(b, w, n) + lam
        spill = np.bincount(a, w**2 / diag[b], n) + np.bincount(b, w**2 / diag[a], n)
        self._theta, self._diag, self._var = theta[rank], diag[rank], (1.0 / diag + spill / diag**2)[rank]
        row_w = np.empty(len(w))
        row_w[order] = w
        self._fit = _Arrays.of(self, row_w)
        self._fitted = True

    def elo(self, name: str) -> float:
        """``name``'s strength by the ladder's fit, in Elo around the pool mean 0."""
        self.fit()
        return float(self._theta[self._index[name]] * ELO_PER_NAT)

    # ------------------------------------------------------------------ the choice

    def next_pairs(
        self,
        field: Sequence[str],
        budget: Budget | None = None,
        now: float = 0.0,
        count: int = 1,
        pending: Iterable[tuple[str, str]] = (),
    ) -> Plan:
        """Choose up to ``count`` duplicate pairs among ``field`` (the entrants that may play now).

        :param now: Unix seconds: today's UTC day for the per-day budget and fair shares.
        :param pending: pairs ``(a, b)`` chosen earlier and not yet stored: counted as played.
        :returns: the :class:`Plan`; see the module docstring for the rule.
        :raises ValueError: if ``field`` names an entrant twice or ``count`` is negative.
        """
        if len(set(field)) != len(field) or count < 0:
            raise ValueError(f"need distinct entrants and count >= 0, got {list(field)}, {count}")
        view = _View(self, self._indices(field), budget or Budget(), int(now // DAY_S))
        for a, b in pending:
            view.take(self.entrant(a), self.entrant(b))
        choices: list[Choice] = []
        while len(choices) < count:
            choice = view.choose()
            if isinstance(choice, Stop):
                return Plan(choices, choice)
            choices.append(choice)
        return Plan(choices, None)

    def gap(self, a: str, b: str) -> Gap:
        """The pairing ``a``-``b`` by the fit now (a name without games is entered), with no pair counted as chosen."""
        return self.gaps([(a, b)])[0]

    def gaps(self, pairs: Sequence[tuple[str, str]], pending: Iterable[tuple[str, str]] = ()) -> list[Gap]:
        """Each pairing of ``pairs`` (a plan's, in its order) by the fit now (a name without games is entered), the
        ``pending`` pairs (in flight when the plan was made) counted as played and the pairs before it as chosen, as
        :meth:`next_pairs` gave them: a past plan's figures refitted (after :meth:`void`, for the board)."""
        if not pairs:
            return []
        index = [(self.entrant(a), self.entrant(b)) for a, b in pairs]
        flying = [(self.entrant(a), self.entrant(b)) for a, b in pending]
        view = _View(self, np.array(sorted({k for pair in index for k in pair}), dtype=np.int64), Budget(), 0)
        for ia, ib in flying:
            view.take(ia, ib)
        out: list[Gap] = []
        for ia, ib in index:
            out.append(view.gap(ia, ib))
            view.take(ia, ib)
        return out

    def _indices(self, field: Sequence[str]) -> np.ndarray:
        """The entrant indices of ``field`` (entering new names), kept for the next call with the same field."""
        key = tuple(field)
        if key != self._field[0]:
            self._field = (key, np.array([self.entrant(x) for x in field], dtype=np.int64))
        return self._field[1]

    def standings(self, field: Sequence[str], now: float = 0.0) -> list[Standing]:
        """Each entrant of ``field`` as the ladder sees it, best first (for the board)."""
        view = _View(self, self._indices(field), Budget(), int(now // DAY_S))
        order, settled = view.ranking(), view.settled_entrants()
        return [
            Standing(
                self.names[k],
                round(float(view.theta[k] * ELO_PER_NAT), 2),
                round(float(math.sqrt(view.var[k]) * ELO_PER_NAT), 2),
                int(view.pairs[k]),
                int(view.today[k]),
                bool(view.new[k]),
                bool(settled[k]),
            )
            for k in order
        ]


def _map_strengths(a: np.ndarray, b: np.ndarray, g: np.ndarray, s: np.ndarray, n: int, lam: float) -> np.ndarray:
    """The maximum a posteriori strengths (nats) of ``n`` entrants from pairings ``a < b`` with ``g`` games
    and ``a``'s score ``s``, a Gaussian prior of precision ``lam`` on each: Newton from zero, each step
    solved by :func:`_conjugate_gradients` on the sparse information (loosely while the gradient is large:
    inexact Newton); a step longer than
    :data:`_MAX_STEP` is shortened (far from the maximum, e.g. a bot that lost every game)."""
    theta, diagonal = np.zeros(n), np.arange(n)
    rows, cols = np.concatenate([a, b, diagonal]), np.concatenate([b, a, diagonal])
    info = csr_matrix((np.arange(1.0, len(rows) + 1), (rows, cols)), (n, n))
    place = info.data.astype(np.int64) - 1  # where each (row, col) landed: the pattern is built once
    for _ in range(_MAX_NEWTON):
        p = expit(theta[a] - theta[b])
        resid, w = s - g * p, g * p * (1.0 - p)
        grad = np.bincount(a, resid, n) - np.bincount(b, resid, n) - lam * theta
        diag = np.bincount(a, w, n) + np.bincount(b, w, n) + lam
        info.data = np.concatenate([-w, -w, diag])[place]
        step = _conjugate_gradients(info, grad, diag, rtol=min(0.1, max(1e-10, float(np.abs(grad).max()))))
        size = float(np.abs(step).max(initial=0.0))
        theta += step * min(1.0, _MAX_STEP / size) if size else 0.0
        if size < _NEWTON_TOL:
            break
    return theta


def _conjugate_gradients(matrix: csr_matrix, rhs: np.ndarray, diag: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """``x`` with ``matrix @ x = rhs`` (symmetric positive definite) by conjugate gradients, Jacobi
    preconditioned (``diag``), to a residual of ``rtol`` times ``|rhs|``."""
    x: np.ndarray = rhs / diag
    r = rhs - matrix @ x
    z = r / diag
    direction, rz, stop = z.copy(), float(r @ z), (rtol * float(np.linalg.norm(rhs))) ** 2
    for _ in range(10 * len(rhs) + 100):
        if float(r @ r) <= stop or rz == 0.0:
            break
        image = matrix @ direction
        alpha = rz / float(direction @ image)
        x += alpha * direction
        r -= alpha * image
        z = r / diag
        rz, previous = float(r @ z), rz
        direction = z + (rz / previous) * direction
    return x


@dataclass(frozen=True, slots=True)
class _Arrays:
    """What every choice reads, built once per fit: per entrant its seeded ``hash``, duplicate ``pairs``
    and ``games`` (every game, for the budgets); per pairing, sorted by ``key = i * n + j``: ``keys``,
    ``row_pairs``, ``row_w`` (the information of its games at the fit) and ``row_void`` (it has games and
    none of them had a winner: both sides forfeited every one). A pairing with a void entrant
    (:meth:`Ladder.void`) counts no pair and no game here."""

    hash: np.ndarray
    pairs: np.ndarray
    games: np.ndarray
    keys: np.ndarray
    row_pairs: np.ndarray
    row_w: np.ndarray
    row_void: np.ndarray

    @classmethod
    def of(cls, ladder: Ladder, row_w: np.ndarray) -> _Arrays:
        n = len(ladder.names)
        i, j = np.array(ladder._pi, dtype=np.int64), np.array(ladder._pj, dtype=np.int64)
        kept = ladder._kept
        units, games = np.array(ladder._pairs, dtype=np.int64) * kept, np.array(ladder._counted) * kept
        void = (games > 0) & (np.array(ladder._games) == 0)
        by_key = np.argsort(i * n + j)
        return cls(
            np.array(ladder._hash, dtype=np.uint64),
            np.bincount(i, units, n).astype(np.int64) + np.bincount(j, units, n).astype(np.int64),
            np.bincount(i, games, n) + np.bincount(j, games, n),
            (i * n + j)[by_key],
            units[by_key],
            row_w[by_key],
            void[by_key],
        )


class _View:
    """One call's working copy: the fit, the counts with the pending and chosen pairs, and the rule."""

    def __init__(self, ladder: Ladder, field: np.ndarray, budget: Budget, day: int):
        ladder.fit()
        self.ladder, self.rules, self.budget = ladder, ladder.rules, budget
        fit = ladder._fit
        n = len(ladder.names)
        self.field = field
        self.theta, self.var, self.diag, self.hash = ladder._theta, ladder._var.copy(), ladder._diag, fit.hash
        self.pairs, self.games = fit.pairs.copy(), fit.games.copy()
        rows = ladder._days.get(day, {})
        row = np.fromiter(rows, dtype=np.int64, count=len(rows))
        count = np.fromiter(rows.values(), dtype=np.float64, count=len(rows)) * ladder._kept[row]
        pi, pj = np.array(ladder._pi, dtype=np.int64)[row], np.array(ladder._pj, dtype=np.int64)[row]
        self.today = np.bincount(pi, count, n) + np.bincount(pj, count, n)
        self.played = ladder._played
        self.keys, self.row_pairs, self.row_w, self.row_void = fit.keys, fit.row_pairs, fit.row_w, fit.row_void
        self.taken: dict[int, int] = {}  # pairing key -> pairs chosen or pending in this call
        self.new = self.pairs < self.rules.new_pairs
        self._ranking = self.field[np.lexsort((self.hash[self.field], -self.theta[self.field]))]
        self._crowding: np.ndarray | None = None

    def pairing(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For pairings ``a[k]``-``b[k]``: ``(pairs played or taken, variance of the difference (nats),
        void)``, void: the two have games and none had a winner (:meth:`resolved`).

        The variance is ``var_a + var_b - 2 cov`` with the covariance's first term ``w_ab / (H_aa H_bb)``
        (``w_ab`` the information of their games): two entrants who met know their difference better
        than their levels."""
        n = len(self.theta)
        key = np.minimum(a, b) * n + np.maximum(a, b)
        pos = np.minimum(np.searchsorted(self.keys, key), max(len(self.keys) - 1, 0))
        found = self.keys[pos] == key if len(self.keys) else np.zeros(len(key), dtype=bool)
        met = np.where(found, self.row_pairs[pos] if len(self.keys) else 0, 0)
        w = np.where(found, self.row_w[pos] if len(self.keys) else 0.0, 0.0)
        void = np.where(found, self.row_void[pos] if len(self.keys) else False, False)
        for k, c in self.taken.items():
            met = met + c * (key == k)
        v = self.var[a] + self.var[b] - 2.0 * w / (self.diag[a] * self.diag[b])
        return met, np.maximum(v, 1e-12), void

    def take(self, a: int, b: int) -> None:
        """Count a chosen (or pending) pair: budgets, shares, pair counts and one pair's information."""
        for k in (a, b):
            self.pairs[k] += 1
            self.games[k] += 2
            self.today[k] += 2
        key = min(a, b) * len(self.theta) + max(a, b)
        self.taken[key] = self.taken.get(key, 0) + 1
        self.played += 2
        p = float(expit(self.theta[a] - self.theta[b]))
        for k in (a, b):
            self.var[k] = 1.0 / (1.0 / self.var[k] + 2.0 * p * (1.0 - p))
        self.new = self.pairs < self.rules.new_pairs

    def ranking(self) -> np.ndarray:
        """The field's entrant indices, strongest first (ties by the seeded hash)."""
        return self._ranking

    def eligible(self) -> np.ndarray:
        """Per entrant (all, bool): in the field, with a pair's games left in every budget and its share
        (new, or below its share of the day, or catching up: below the field's median pairs in all)."""
        b, ok = self.budget, np.zeros(len(self.theta), dtype=bool)
        ok[self.field] = True
        if b.per_entrant is not None:
            ok &= self.games + 2 <= b.per_entrant
        if b.per_entrant_per_day is not None:
            ok &= self.today + 2 <= b.per_entrant_per_day
        if not len(self.field):
            return ok
        share = max(math.ceil(self.rules.fair_share * float(np.median(self.today[self.field] / 2))), 1)
        behind = self.pairs < float(np.median(self.pairs[self.field]))
        return ok & (self.new | (self.today / 2 < share) | behind)

    def resolved(self, d: np.ndarray, v: np.ndarray, void: np.ndarray) -> np.ndarray:
        """Whether gaps ``d`` with variances ``v`` (nats) are resolved (see the module docstring); a
        ``void`` pairing (games, none with a winner) is: playing it again would teach nothing."""
        sd = np.sqrt(v)
        out: np.ndarray = (np.abs(d) >= self.rules.z * sd) | void
        if self.rules.width is not None:
            out |= 1.959963984540054 * sd * ELO_PER_NAT <= self.rules.width
        return out

    def settled_entrants(self) -> np.ndarray:
        """Per entrant (all, bool): not new and both its neighbour gaps in the field's ranking resolved."""
        order = self.ranking()
        gaps = self.resolved(self.theta[order[:-1]] - self.theta[order[1:]], *self.pairing(order[:-1], order[1:])[1:])
        ok = np.ones(len(order), dtype=bool)
        ok[:-1] &= gaps
        ok[1:] &= gaps
        out = np.zeros(len(self.theta), dtype=bool)
        out[order] = ok & ~self.new[order]
        return out

    def choose(self) -> Choice | Stop:
        """The next pair, counted as taken; or why there is none."""
        if len(self.field) < 2:
            return Stop.TOO_FEW
        if self.budget.total is not None and self.played + 2 > self.budget.total:
            return Stop.TOTAL_BUDGET
        if not self.new[self.field].any() and self.settled_entrants()[self.field].all():
            return Stop.SETTLED
        ok = self.eligible()
        choice = self._new_entrant(ok) or self._most_informative(ok)
        if isinstance(choice, Choice):
            self.take(self.ladder._index[choice.a], self.ladder._index[choice.b])
        return choice

    def gap(self, a: int, b: int) -> Gap:
        """Entrants ``a`` and ``b``'s :class:`Gap` by this view (its pairs taken counted in the variances)."""
        d, v = float(self.theta[a] - self.theta[b]), float(self.pairing(np.array([a]), np.array([b]))[1][0])
        return Gap(round(d * ELO_PER_NAT, 2), round(math.sqrt(v) * ELO_PER_NAT, 2),
                   round(float(erfc(abs(d) / math.sqrt(2 * v))), 4))

    def _choice(self, a: int, b: int, reason: Reason) -> Choice:
        g = self.gap(a, b)
        return Choice(self.ladder.names[a], self.ladder.names[b], reason, g.gap, g.gap_sd, g.undecided)

    def _new_entrant(self, ok: np.ndarray) -> Choice | None:
        """The new entrant with the fewest pairs (ties by hash) against the opponent nearest its next
        quantile of the ranking, preferring one it has not met; None if no new entrant can play."""
        f = self.field
        new = f[self.new[f] & ok[f]]
        if not len(new):
            return None
        me = int(new[np.lexsort((self.hash[new], self.pairs[new]))[0]])
        order = self.ranking()
        rank = np.flatnonzero(ok[order] & (order != me))
        if not len(rank):
            return None
        target = van_der_corput(int(self.pairs[me])) * (len(order) - 1)
        others = order[rank]
        met = self.pairing(np.full(len(others), me), others)[0]
        best = np.lexsort((self.hash[others] ^ self.hash[me], np.abs(rank - target), met))[0]
        return self._choice(me, int(others[best]), Reason.NEW_ENTRANT)

    def _most_informative(self, ok: np.ndarray) -> Choice | Stop:
        """The candidate neighbour pairing of highest value (module docstring, rule 2), or why none.

        The value without the pairs already played and the resolved rule, ``w * (urgency_a + urgency_b)``,
        bounds it from above and needs no look-up of the pairing; so only the :data:`_SHORTLIST` pairings
        of highest bound are valued in full, and all of them only when the best of those does not beat
        every bound left out (the same choice, a fraction of the work among 1,000 entrants)."""
        order = self.ranking()
        live = order[ok[order] & ~self.new[order]]
        if len(live) < 2:
            return self._why_none(ok)
        a, b = _neighbours(live, self.rules.window)
        d = self.theta[a] - self.theta[b]
        p = expit(d)
        urgency = self.crowding() ** _CROWDING_POWER * self.var**2
        bound = 2.0 * p * (1.0 - p) * (urgency[a] + urgency[b])
        pick = np.arange(len(a))
        if len(a) > _SHORTLIST:
            cut = np.argpartition(-bound, _SHORTLIST)
            pick = cut[:_SHORTLIST]
        met, v, void = self.pairing(a[pick], b[pick])
        value = np.where(self.resolved(d[pick], v, void), 0.0, bound[pick] / (1 + met))
        if len(pick) < len(a) and value.max() <= bound[cut[_SHORTLIST]]:
            pick = np.arange(len(a))
            met, v, void = self.pairing(a, b)
            value = np.where(self.resolved(d, v, void), 0.0, bound / (1 + met))
        top = pick[value == value.max()]
        lo, hi = np.minimum(a[top], b[top]), np.maximum(a[top], b[top])
        best = int(top[np.argmin(_mix(self.hash[lo] ^ (self.hash[hi] << np.uint64(1))))])
        if value.max() <= 0:
            return self._why_none(ok)
        widest, var = max(self.var[a[best]], self.var[b[best]]), self.var[self.field]
        wide = widest >= np.quantile(var, 0.9) and widest > np.median(var)  # equal intervals: none is widest
        reason = Reason.WIDEST_INTERVAL if wide else Reason.CLOSEST_UNDECIDED
        return self._choice(int(a[best]), int(b[best]), reason)

    def crowding(self) -> np.ndarray:
        """Per entrant (all; 0 outside the field): how crowded the ranking is around it, in entrants per
        nat at the scale of the doubt, ``rho_i = sum_j phi(d_ij / s_ij) / s_ij`` over its :attr:`Rules.window`
        ranking neighbours either side, ``s_ij**2 = var_i + var_j`` (the fit's variances, before this call's
        choices). An entrant's expected rank error is about ``rho_i`` times its rating's sd."""
        if self._crowding is None:
            order, n = self.ranking(), len(self.theta)
            a, b = _neighbours(order, self.rules.window)
            s2 = self.ladder._var[a] + self.ladder._var[b]
            near = np.exp(-0.5 * (self.theta[a] - self.theta[b]) ** 2 / s2) / np.sqrt(2.0 * np.pi * s2)
            self._crowding = np.bincount(a, near, n) + np.bincount(b, near, n)
        return self._crowding

    def _why_none(self, ok: np.ndarray) -> Stop:
        """Why no pair can be chosen now: what holds back the entrants of the unresolved neighbour gaps."""
        order = self.ranking()
        d = self.theta[order[:-1]] - self.theta[order[1:]]
        open_gaps = ~self.resolved(d, *self.pairing(order[:-1], order[1:])[1:])
        if not open_gaps.any():
            return Stop.SETTLED
        held = np.unique(np.concatenate([order[:-1][open_gaps], order[1:][open_gaps]]))
        held = held[~ok[held]]
        b = self.budget
        spent = np.zeros(len(self.theta), dtype=bool) if b.per_entrant is None else self.games + 2 > b.per_entrant
        today = np.zeros(len(self.theta), dtype=bool)
        if b.per_entrant_per_day is not None:
            today = self.today + 2 > b.per_entrant_per_day
        if len(held) and spent[held].all():
            return Stop.ENTRANT_BUDGETS
        if len(held) and (spent | today)[held].all():
            return Stop.DAY_BUDGETS
        return Stop.FAIR_SHARES


def _neighbours(order: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pairing of an entrant of ``order`` with each of its ``window`` next entrants: ``(a, b)``."""
    reach = range(1, min(window, len(order) - 1) + 1)
    if not reach:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([order[:-s] for s in reach]), np.concatenate([order[s:] for s in reach])


def next_pairs(
    field: Sequence[str],
    results: Iterable[Played],
    budget: Budget | None = None,
    now: float = 0.0,
    *,
    master_seed: bytes,
    rules: Rules | None = None,
    count: int = 1,
    pending: Iterable[tuple[str, str]] = (),
) -> Plan:
    """The ladder's choice from the stored ``results`` alone (what a restart computes): a
    :class:`Ladder` built from them, then :meth:`Ladder.next_pairs`. See the module docstring."""
    ladder = Ladder(master_seed, rules)
    ladder.extend(results)
    return ladder.next_pairs(field, budget, now, count, pending)
