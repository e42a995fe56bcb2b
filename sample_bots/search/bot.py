"""SearchBot: Perfect Information Monte Carlo over deals consistent with what the seat has seen.

For every decision with more than one legal action (docs/search-bot.md has the whole method):

1. **Sample** a deal of the unseen cards consistent with the observation
   (``sample_bots.search.infer``: hand sizes, exposed and kicked cards, voids shown in play).
2. **Evaluate** each legal action on that deal with every hand open (``sample_bots.search.fast``):
   an exact alpha-beta search of the rest of the deal when it is small enough (a node cap per
   sample), else a quick open-handed playout. The value is the seat's side's chance of winning the
   game after the deal's count (High, Low, Jack or Hang Jack, Game, in order, stopping at the target),
   so a point near the target weighs more than one at the start.
3. Repeat until the **work budget** is spent (``ms`` times ``NODES_PER_MS`` search nodes) or
   ``samples`` deals are done, and play the action with the best mean.

Beg or stand, give one or run the pack are decided the same way on sampled deals that include the
undealt stock, so a run of the pack is dealt out in each sample, each way valued by a playout (many
samples matter more there than exact values); the dealer's answer to a beg is taken to be the one
worse for the beggar on average over the samples. A call is valued by playing
the called card, a pass by letting its holder choose.

Determinism: the budget counts search nodes, not milliseconds, and every random draw comes from
``ctx.rng`` (seeded by the match seed, seat and decision) mixed with the bot's ``seed``; so the same
match seed, ``seed`` and ``ms`` give the same actions on any machine at any load. ``ms`` is converted
at ``NODES_PER_MS`` (the CPU rate measured on the project's machine): a decision costs at most about
``ms`` of CPU on one core there.
The one exception: when the referee's clock (``ctx.time_left_ms``) is below eight budgets, the budget
shrinks to an eighth of what is left (a bot must not lose on time, even on a machine so loaded that
it gets an eighth of a core).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from referee.rules import (
    BEG,
    GIVE_ONE,
    PASS,
    RUN_PACK,
    STAND,
    Action,
    Call,
    Observation,
    Phase,
    Play,
)
from sdk.bot import Bot, Context

try:
    from sample_bots.heuristic import HeuristicBot
except ImportError:  # a container image (`arena bots build sample_bots`) holds the sample bots at its top level
    from heuristic import HeuristicBot  # type: ignore[no-redef,import-not-found]

from .fast import (
    JACK_OFFSET,
    POINTS,
    Budget,
    DealValue,
    OutOfNodes,
    Position,
    card_id,
    dealt_facts,
    hanged_jack_points,
    playout,
    solve,
    trick_winner_index,
    win_probability,
)
from .infer import Deal, Knowledge, knowledge, sample_deal

#: Default time per decision (milliseconds of work at NODES_PER_MS). Twice this, with twice the
#: samples, measured no stronger (docs/search-bot.md).
DEFAULT_MS = 200
#: Search nodes per millisecond of CPU on the project's machine (measured in play: 330-345; see
#: docs/search-bot.md): ``ms`` is about the CPU milliseconds a decision costs on one core at most.
NODES_PER_MS = 300
#: What sampling one deal and setting it up costs, in nodes (measured: about a third of a millisecond).
SAMPLE_COST = 35
#: Default most deals sampled per decision (a late position is solved this often in a few ms).
DEFAULT_SAMPLES = 48
#: The demo level stops sampling when this many deals in a row gave every action the same value.
INDIFFERENT_SAMPLES = 8
#: Deals with at most this many cards left in the hands are searched exactly (four each at a table of
#: four, nine each head to head) ...
EXACT_CARDS_FOUR = 16
EXACT_CARDS = 18
#: ... within this many nodes per sampled deal; past it, that sample is valued by playouts.
SOLVE_CAP = 4000
#: At a table of four, beg only when the dealer's worse answer (give one or run the pack) beats standing
#: by more than this chance of winning the game: a beg hands the dealer the choice (measured:
#: docs/search-bot.md; head to head the margin and the prior below measured weaker, so neither applies).
BEG_MARGIN = 0.06
#: At a table of four, the heuristic bot's card is played when the search values it within this chance of
#: the game of its best card (a prior among cards the open-handed search cannot tell apart) ...
PRIOR_MARGIN = 0.01
#: ... unless some sampled deal valued it below the best card and none above it. While every deal so far
#: valued the two alike, sampling goes on, up to this many times ``samples`` deals within the budget.
PRIOR_EXTRA = 4


@dataclass(frozen=True, slots=True)
class _Setting:
    """What every evaluation of one decision shares: the decision's context (its observation and side), the
    seat's knowledge and the budget."""

    ctx: Context
    know: Knowledge
    budget: Budget

    @property
    def obs(self) -> Observation:
        """What the seat sees (``ctx.observation``)."""
        return self.ctx.observation

    @property
    def side(self) -> int:
        """The seat's side (``ctx.side``: 0 or 1)."""
        return self.ctx.side


def _check_level(ms: object, samples: object, seed: object, indifferent: object) -> None:
    """:raises ValueError: one line naming the first parameter that is not a whole number in range."""
    for name, value, least in (("ms", ms, 1), ("samples", samples, 1), ("seed", seed, None),
                               ("indifferent", indifferent, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or (least is not None and value < least):
            at_least = "" if least is None else f" of at least {least}"
            raise ValueError(f"SearchBot: {name} must be a whole number{at_least}, not {value!r}")


class SearchBot(Bot):
    """Perfect Information Monte Carlo search (module docstring).

    :param ms: work per decision in milliseconds (converted to ``ms * NODES_PER_MS`` search nodes).
    :param samples: most deals sampled per decision.
    :param seed: mixed into every decision's random draws (the same seed: the same play).
    :param indifferent: stop sampling after this many deals in a row on which every action had the same
        value (0: never). It saves CPU where nearly every decision spends its whole budget (the demo
        level), but the deals after them may still split the actions: it measured weaker at 50-400 ms.
    :raises ValueError: unless ``ms`` and ``samples`` are whole numbers of at least 1, ``seed`` a whole
        number and ``indifferent`` one of at least 0 (``True``, ``2.5``, ``nan`` or ``"5"`` are not).
    """

    name = "search"
    version = "1"

    def __init__(self, ms: int = DEFAULT_MS, samples: int = DEFAULT_SAMPLES, seed: int = 0,
                 indifferent: int = 0) -> None:
        _check_level(ms, samples, seed, indifferent)
        self.ms = ms
        self.samples = samples
        self.seed = seed
        self.indifferent = indifferent
        #: Search nodes and sampled deals of the last decision searched (for benchmarks and tests).
        self.last_nodes = 0
        self.last_samples = 0
        self.prior = HeuristicBot()

    def act(self, ctx: Context) -> Action:
        """The action with the best mean value over sampled deals; always one of ``ctx.legal``."""
        legal = ctx.legal
        if len(legal) == 1:
            return legal[0]
        ms = self.ms
        if 0 < ctx.time_left_ms < 8 * ms:
            ms = max(1, ctx.time_left_ms // 8)
        rng = random.Random(f"{self.seed}/{ctx.rng.getrandbits(64)}")
        obs = ctx.observation
        setting = _Setting(ctx, knowledge(obs), Budget(ms * NODES_PER_MS))
        choose = {Phase.PLAY: self._play, Phase.CALL: self._call, Phase.BEG: self._beg,
                  Phase.DEALER: self._dealer}[obs.phase]
        action = choose(setting, legal, rng)
        self.last_nodes = setting.budget.used
        return action if action in legal else legal[0]

    # ------------------------------------------------------------------------- sampling loop

    def _means(self, s: _Setting, rng: random.Random, count: int,
               values: Callable[[Deal], list[float]], rows: list[list[float]] | None = None) -> list[float]:
        """The mean over sampled deals of ``values(deal)`` (``count`` numbers a deal), sampling until
        the budget is spent or ``self.samples`` deals are done (at least one), or, with
        ``self.indifferent``, when that many first deals gave every action the same value (the
        choice seems not to matter: the deal's points decided whatever is played). Each deal's values
        are appended to ``rows`` when it is given."""
        totals = [0.0] * count
        done = 0
        indifferent = True
        while done < self.samples and (done == 0 or s.budget.left > 0):
            deal_values = self._value_one(s, rng, values)
            if rows is not None:
                rows.append(deal_values)
            for i, v in enumerate(deal_values):
                totals[i] += v
            done += 1
            indifferent = indifferent and max(deal_values) == min(deal_values)
            if indifferent and done == self.indifferent:
                break
        self.last_samples = done
        return [t / done for t in totals]

    def _value_one(self, s: _Setting, rng: random.Random, values: Callable[[Deal], list[float]]) -> list[float]:
        """``values`` of one more sampled deal, its sampling charged to the budget (``SAMPLE_COST``)."""
        deal_values = values(self._sample(s.know, rng))
        s.budget.left -= SAMPLE_COST
        s.budget.used += SAMPLE_COST
        return deal_values

    def _sample(self, know: Knowledge, rng: random.Random) -> Deal:
        """The next deal to value: one consistent with ``know`` (``infer.sample_deal``). The one place a
        deal comes from, so a study may hand the bot the true deal instead
        (``benchmarks/strength_ceiling.py``: how much stronger the bot would be if it saw every card)."""
        return sample_deal(know, rng)

    # ------------------------------------------------------------------------- play and call

    def _play(self, s: _Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        rows: list[list[float]] = []
        moves, means = self._card_means(s, legal, rng, rows)
        if s.know.players != 4:  # head to head the best mean (the prior measured weaker there with the margin)
            return moves[_best(means)]
        values = self._card_values(s, [card_id(a.card) for a in moves], rng)
        return moves[self._with_prior(s, moves, rows, lambda: self._value_one(s, rng, values))]

    def _card_means(self, s: _Setting, legal: tuple[Action, ...], rng: random.Random,
                    rows: list[list[float]] | None = None) -> tuple[list[Play], list[float]]:
        """The cards the seat may play (``legal``'s plays, in order) and each one's mean value over
        sampled deals (each deal's values appended to ``rows`` when given): what ``_play`` chooses from
        (a benchmark may choose otherwise from the same)."""
        moves = [a for a in legal if isinstance(a, Play)]
        values = self._card_values(s, [card_id(a.card) for a in moves], rng)
        return moves, self._means(s, rng, len(moves), values, rows)

    def _card_values(self, s: _Setting, ids: list[int], rng: random.Random) -> Callable[[Deal], list[float]]:
        """How one sampled deal values each card of ``ids`` (card ids: the seat's legal cards): the deal
        after it, searched (``_after_each``; ``rng`` is for a benchmark's evaluator that draws)."""
        return lambda deal: _after_each(s, _position(s, deal), ids)

    def _with_prior(self, s: _Setting, moves: list[Play], rows: list[list[float]],
                    more: Callable[[], list[float]]) -> int:
        """The index in ``moves`` of the card to play, from ``rows`` (each sampled deal's value of every
        card): the best mean (the first on a tie), or the heuristic bot's card when its mean is within
        ``PRIOR_MARGIN`` of the best and no deal valued it below the best card without another valuing it
        above (the search cannot tell them apart, and a card that is sometimes worse and never better is
        weakly dominated). While every deal so far valued the heuristic bot's card exactly as the best,
        ``more()`` values another deal (appended to ``rows``), up to ``PRIOR_EXTRA * samples`` deals within
        the budget: a weakly forced card shows only on the deals where the card that matters lies in an
        opponent's hand rather than the stock. Not after the sampling stop (``indifferent``): its deals
        valued every card alike, and the level is for CPU it does not have."""
        theirs = self.prior.act(s.ctx)
        h = moves.index(theirs) if theirs in moves else -1
        means = _column_means(rows)
        best = _best(means)
        if h < 0 or h == best or means[best] - means[h] > PRIOR_MARGIN:
            return best
        stopped = self.indifferent and all(max(r) == min(r) for r in rows)  # the sampling stop: it does not matter
        while (not stopped and all(r[h] == r[best] for r in rows) and len(rows) < PRIOR_EXTRA * self.samples
               and s.budget.left > 0):
            rows.append(more())
        self.last_samples = len(rows)
        means = _column_means(rows)
        best = _best(means)
        if h == best or means[best] - means[h] > PRIOR_MARGIN:
            return best
        dominated = any(r[h] < r[best] for r in rows) and not any(r[h] > r[best] for r in rows)
        return best if dominated else h

    def _call(self, s: _Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        calls = [a for a in legal if isinstance(a, Call)]
        ids = [card_id(a.card) for a in calls]

        def values(deal: Deal) -> list[float]:
            pos, value = _position(s, deal)
            items: list[float | tuple[Position, DealValue]] = []
            for card in ids:  # called: the holder must play it
                p = pos.copy()
                p.play(card)
                items.append((p, value))
            return _evaluate_all([*items, (pos, value)], s.budget)  # passed: the holder chooses

        means = self._means(s, rng, len(calls) + 1, values)
        best = _best(means)
        return calls[best] if best < len(calls) else PASS

    # ------------------------------------------------------------------------- beg, give, run

    def _beg(self, s: _Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        stand, give, run = self._before_play_means(s, rng)
        margin = BEG_MARGIN if s.know.players == 4 else 0.0
        return BEG if min(give, run) > stand + margin else STAND

    def _dealer(self, s: _Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        _, give, run = self._before_play_means(s, rng)
        return GIVE_ONE if give >= run else RUN_PACK

    def _before_play_means(self, s: _Setting, rng: random.Random) -> list[float]:
        """``[stand, give one, run the pack]``: each way's mean value to the seat's side over sampled
        deals (``_before_play``), what ``_beg`` and ``_dealer`` choose from."""
        return self._means(s, rng, 3, lambda deal: _before_play(s, deal))


class QuickSearchBot(SearchBot):
    """The search bot's fast level: 50 ms of work a decision."""

    name = "search-quick"

    def __init__(self, ms: int = 50, samples: int = DEFAULT_SAMPLES, seed: int = 0) -> None:
        super().__init__(ms=ms, samples=samples, seed=seed)


class DemoSearchBot(SearchBot):
    """The level of the README demo (examples/demo.toml): 13 ms of work a decision, sampling stopped
    after ``INDIFFERENT_SAMPLES`` deals that do not tell the actions apart."""

    name = "search-demo"

    def __init__(self, ms: int = 13, samples: int = DEFAULT_SAMPLES, seed: int = 0,
                 indifferent: int = INDIFFERENT_SAMPLES) -> None:
        super().__init__(ms=ms, samples=samples, seed=seed, indifferent=indifferent)


def _column_means(rows: list[list[float]]) -> list[float]:
    """The mean of each column of ``rows`` (one row a sampled deal, one column an action)."""
    return [sum(r[i] for r in rows) / len(rows) for i in range(len(rows[0]))]


def _best(means: list[float]) -> int:
    """The index of the greatest mean (the first on a tie)."""
    return max(range(len(means)), key=lambda i: (means[i], -i))


# --------------------------------------------------------------------------- one sampled deal


def _position(s: _Setting, deal: Deal) -> tuple[Position, DealValue]:
    """The deal in play as the search's :class:`Position`, and what its end is worth to the seat's side."""
    obs, k = s.obs, s.know
    n = k.players
    taken = [0, 0]
    jack_taker = -1
    jack = k.trump * 13 + JACK_OFFSET
    for t in obs.tricks:
        cards = [card_id(c) for c in t.cards]
        side = (t.leader + trick_winner_index(cards, k.trump)) % n & 1
        taken[side] += sum(POINTS[c] for c in cards)
        if jack in cards:
            jack_taker = side
    dealt = [deal.hands[i] | k.played[i] for i in range(n)]
    high, low, jack_side, total = dealt_facts(dealt, k.trump)
    rules = obs.rules
    pos = Position(n, k.trump, list(deal.hands), obs.trick_leader, [card_id(c) for c in obs.trick], taken,
                   jack_taker, total, rules.undertrump_ban, rules.void_may_discard)
    value = DealValue.build(s.side, obs.scores, rules.target, high, low, jack_side,
                            hanged_jack_points(rules))
    return pos, value


def _after_each(s: _Setting, start: tuple[Position, DealValue], moves: list[int]) -> list[float]:
    """The value of the deal after each card in ``moves`` is played by the seat to act."""
    pos, value = start
    items: list[float | tuple[Position, DealValue]] = []
    for m in moves:
        p = pos.copy()
        p.play(m)
        items.append((p, value))
    return _evaluate_all(items, s.budget)


def _evaluate_all(items: list[float | tuple[Position, DealValue]], budget: Budget, exact: bool = True) -> list[float]:
    """The values of the alternatives of one sampled deal: a number is already a value, a position is
    searched. All positions get the same evaluator, so one evaluator's bias cannot pick the action:
    an exact search (one node cap for them all, a transposition table per deal) when ``exact`` and
    every one is small, else (or when the cap is hit) a playout each."""
    positions = [x for x in items if not isinstance(x, float)]
    solved: list[float] | None = None
    if exact and all(_small(p) for p, _ in positions):
        cap = Budget(min(SOLVE_CAP, max(budget.left, 1)))
        tables: dict[int, dict[tuple[int, ...], tuple[float, float]]] = {}
        try:
            solved = [solve(p.copy(), v, cap, table=tables.setdefault(id(v), {})) for p, v in positions]
        except OutOfNodes:
            pass
        finally:
            budget.left -= cap.used
            budget.used += cap.used
    if solved is None:
        solved = [playout(p.copy(), v, budget) for p, v in positions]
    values = iter(solved)
    return [x if isinstance(x, float) else next(values) for x in items]


def _small(pos: Position) -> bool:
    """Whether the deal is small enough to search exactly: at most ``EXACT_CARDS_FOUR`` cards in the
    hands at a table of four, ``EXACT_CARDS`` head to head."""
    return sum(bin(h).count("1") for h in pos.hands) <= (EXACT_CARDS_FOUR if pos.players == 4 else EXACT_CARDS)


def _before_play(s: _Setting, deal: Deal) -> list[float]:
    """``[stand, give one, run the pack]``: the value to the seat's side of each way the deal may go
    on from the beg (docs/rules.md, The deal 3-4), on one sampled deal."""
    obs, k = s.obs, s.know
    n = k.players
    beggar_side = (obs.dealer + 1) % n & 1
    stand = _fresh_deal(s, deal.hands, k.trump, obs.scores)
    scores = list(obs.scores)
    scores[beggar_side] += 1
    give: float | tuple[Position, DealValue]
    if scores[beggar_side] >= obs.rules.target:
        give = 1.0 if beggar_side == s.side else 0.0
    else:
        give = _fresh_deal(s, deal.hands, k.trump, (scores[0], scores[1]))
    # Playouts only: a whole deal (and a run of the pack) is too large to solve on many samples, and
    # the choice before play needs many samples more than exact values.
    return _evaluate_all([stand, give, _run_pack(s, deal)], s.budget, exact=False)


def _fresh_deal(s: _Setting, hands: list[int], trump: int, scores: tuple[int, int]) -> tuple[Position, DealValue]:
    """A deal about to be played from its first lead, with these hands, trump and scores, and its value."""
    rules = s.obs.rules
    high, low, jack_side, total = dealt_facts(hands, trump)
    leader = (s.obs.dealer + 1) % s.know.players
    pos = Position(s.know.players, trump, list(hands), leader, [], [0, 0], -1, total, rules.undertrump_ban,
                   rules.void_may_discard)
    value = DealValue.build(s.side, scores, rules.target, high, low, jack_side,
                            hanged_jack_points(rules))
    return pos, value


_KICK_POINTS = {12: 1, 9: 3}  # ace, jack (rank - 2); a six scores rules.kicked_six_points


def _run_pack(s: _Setting, deal: Deal) -> float | tuple[Position, DealValue]:
    """Run the pack on the sampled stock (docs/rules.md, The deal 4): 3 more cards each and a new kick
    until the kick's suit differs from the begged one. The deal then played, or the value when a kick
    ends the game or the pack runs dry (valued by the scores alone)."""
    obs, k = s.obs, s.know
    n, rules = k.players, obs.rules
    hands = list(deal.hands)
    scores = list(obs.scores)
    dealer_side = obs.dealer & 1
    at = 0
    while True:
        if len(deal.stock) - at < 3 * n + 1:
            mine, theirs = scores[s.side], scores[1 - s.side]
            return win_probability(rules.target - mine, rules.target - theirs)
        for i in range(n):
            for c in deal.stock[at + 3 * i:at + 3 * i + 3]:
                hands[(obs.dealer + 1 + i) % n] |= 1 << c
        at += 3 * n
        kick = deal.stock[at]
        at += 1
        points = rules.kicked_six_points if kick % 13 == 4 else _KICK_POINTS.get(kick % 13, 0)
        scores[dealer_side] += points
        if scores[dealer_side] >= rules.target:
            return 1.0 if dealer_side == s.side else 0.0
        if kick // 13 != k.trump:
            return _fresh_deal(s, hands, kick // 13, (scores[0], scores[1]))

