"""Trials of other ways to decide, against the search bot as it is, on the same decks as strength.py.

    python benchmarks/search_trials.py --trial ismcts [--pairs 60] [--ms 200] [--players 4] [--first-pair 0]

Kept so that the trials in docs/search-bot.md ("Measured strength") can be re-run from main. Until the
thirty-first session none of them was part of the bot; since then the bot has, at a table of four, the guarded
prior, the beg margin and the exact search from 16 cards (``stack`` with a guard), so every trial is a variation
of that bot, and a row
measured before it is re-run on the bot of its day by adding ``plain``'s changes. ``--trial``:

- ``none``: ``SearchBot`` as it is (the baseline; pair for pair the same as ``strength.py``);
- ``plain``: the bot until the thirty-first session (:class:`PlainBot`): exact search at four from 20 cards, a beg
  whenever the dealer's worse answer beats standing, the card with the best mean (the first on a tie);
- ``twins``: the prior with a twin rule (:class:`TwinBot`), in both table sizes: it samples on whenever the
  heuristic bot's card has a twin (another card near the best that every deal so far valued alike), so the order
  of the legal cards never decides between them (the thirty-first session's trial);
- ``ismcts``: every card chosen by single-observer Information Set MCTS (:class:`IsmctsBot`);
- ``beg-margin:M``: beg only when the worse of give one and run the pack beats stand by more than
  ``M`` (a negative ``M`` begs more readily);
- ``give-margin:M``: as the dealer, give one when it is at least run the pack minus ``M`` (a positive
  ``M`` gives more readily);
- ``ties:EPS``: every card as the search chooses it, except that the heuristic bot's card is played
  when the search values it within ``EPS`` of the best (``ties:0``: only on exact ties) — the fifth
  session's trial of a prior among cards the open-handed search cannot tell apart.
- ``trick``: at a table of four, a deal too large for the exact search (more than 20 cards in the hands:
  the first trick, and the first four after a run of the pack, when hands hold nine cards) values each
  card by best play of every seat, every hand open, to the end of the trick in progress and a playout
  from there (:func:`trick_search`), instead of a playout straight after the card — the sixteenth
  session's trial (head to head every deal is searched exactly: the trial is the bot itself there).
- ``signal`` or ``signal:EPS``: a partner signal at a table of four, the side's own agreed convention
  (:class:`SignalBot`, the seventeenth session's trial). The signaller, among the cards the search values
  within ``EPS`` of the best (0, the default: exact ties only), plays the first whose rank is odd when it
  holds a trump from the jack up (jack, queen, king or ace of trumps), even when it holds none
  (:func:`signal_fact`, :func:`says`); with no such card among them, the search's own card. The partner
  reads every card the signaller played this deal: a sampled deal in which the signaller, holding the
  sampled hand (its cards now and those it played since), could have played a legal card saying its
  fact but played one saying the opposite is kept with chance ``SIGNAL_MISS`` (:func:`signal_weight`;
  rejection sampling, ``SIGNAL_TRIES`` draws at most). Head to head there is no partner: the trial is
  the bot itself there.
- ``view`` or ``view:K``: at a table of four, on each sampled deal, after the seat's candidate card the
  other seats still to play to the trick in progress (partner included) each choose their card by a small
  PIMC of their own (:class:`ViewBot`, the twenty-first session's trial): ``K`` deals (``VIEW_DEALS`` by
  default) consistent with what THAT seat sees (its own hand on the sampled deal, every card played, the
  voids shown, the trick; the cards it cannot see dealt anew to the other hands and the stock by
  ``infer.sample_deal``), each of its cards valued by the bot's evaluator from its side's view (exact
  search of all its cards within ``VIEW_CAP`` nodes a deal when at most ``VIEW_EXACT_CARDS`` cards are
  left in the hands, else playouts), the
  best mean played (:func:`seen_choice`). The rest of the deal from the end of that trick is valued as
  the bot does (exact when small, else a playout). Every inner node and sample is counted in the
  decision's budget. Head to head the trial is the bot itself.
- ``exact:N``: at a table of four the exact search starts when at most ``N`` cards are left in the hands
  (:class:`ExactBot`; the bot's ``EXACT_CARDS_FOUR`` is 20), playouts before: the twenty-ninth session's
  trial of searching exactly later, not earlier (every trial that searched more of the deal exactly, A, F,
  K and ``trick``, measured a little weaker). Head to head the trial is the bot itself.
- ``stack`` or ``stack:EPS``: ``exact:16``, ``ties:EPS`` (0.01 by default; a negative ``EPS``: never the
  heuristic bot's card) and ``beg-margin:0.06`` together (:class:`StackBot`), the thirtieth session's trial:
  each measured a little above the bot on some decks, none beyond its noise (the bot's prior without its guard).

Prints one JSON object: per row ``players``, ``trial``, ``ms``, ``first_pair``, ``elo``, ``ci_low``,
``ci_high``, ``pairs``, ``score`` and ``pair_scores`` (against the heuristic bot, duplicate pairs);
"paired" figures in the docs are the mean of the pair-for-pair difference from ``--trial none``.
Each row also says where the points came from (``sdk.spar.Tally``): ``deals`` played,
``points_per_deal`` (per kind of point: kick, one, high, low, jack, hang_jack, game, and all;
``[trial's side, heuristic's side]``) and ``choices`` (begged, stood, gave_one, ran_pack: ``[trial,
heuristic]`` counts); ``decision_cpu_ms_p50``, ``decision_cpu_ms_p99``: the CPU of every decision the
trial's bot was asked (``sdk.spar``'s, as ``strength.py`` reports them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _pairs import add_pair_options, parse_pair_options  # noqa: E402

from referee.rules import BEG, GIVE_ONE, RUN_PACK, STAND, Action, Observation, Play  # noqa: E402
from sample_bots.heuristic import HeuristicBot  # noqa: E402
from sample_bots.search import SearchBot  # noqa: E402
from sample_bots.search import bot as search  # noqa: E402
from sample_bots.search.fast import (  # noqa: E402
    Budget,
    DealValue,
    OutOfNodes,
    Position,
    card_id,
    cards_in,
    dealt_facts,
    distinct_moves,
    hanged_jack_points,
    legal_mask,
    playout,
    solve,
)
from sample_bots.search.infer import Deal, Knowledge, _read_trick, sample_deal  # noqa: E402
from sdk.bot import Context  # noqa: E402
from sdk.spar import spar  # noqa: E402

#: UCB1's exploration constant, on values scaled to the deal's range (0 .. 1).
EXPLORATION = 0.7


@dataclass(slots=True)
class Node:
    """A node of the information-set tree: the card that led to it is its key in the parent's
    ``children``; ``visits``, ``total`` (summed scaled value for the side that played the card) and
    ``available`` (iterations in which the card was legal: UCB1's count for the parent)."""

    children: dict[int, Node] = field(default_factory=dict)
    visits: int = 0
    total: float = 0.0
    available: int = 0


class IsmctsBot(SearchBot):
    """``SearchBot`` whose cards are chosen by single-observer ISMCTS (Cowling, Powley and Whitehouse,
    2012): one tree over what the seat has seen; each iteration samples a deal, descends by UCB1
    among the cards legal on that deal, adds one node, finishes the deal with ``playout_card`` and
    backs the value up (the opponents' nodes score its negation). Spends the whole node budget;
    plays the most visited card. Beg, give or run and calls stay ``SearchBot``'s."""

    name = "search-ismcts"

    def _play(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        moves = [a for a in legal if isinstance(a, Play)]
        root = Node()
        scale: tuple[float, float] | None = None
        while scale is None or s.budget.left > 0:
            pos, value = search._position(s, self._sample(s.know, rng))
            s.budget.left -= search.SAMPLE_COST
            s.budget.used += search.SAMPLE_COST
            if scale is None:
                flat = [v for row in value.table for v in row]
                scale = (min(flat), max(max(flat) - min(flat), 0.02))
            path = _descend(root, pos, s.side, rng, s.budget)
            reward = (playout(pos, value, s.budget) - scale[0]) / scale[1]
            for node, mine in path:
                node.visits += 1
                node.total += reward if mine else -reward
        visits = [root.children[search.card_id(a.card)].visits if search.card_id(a.card) in root.children else -1
                  for a in moves]
        return moves[max(range(len(moves)), key=lambda i: (visits[i], -i))]


def _descend(root: Node, pos: Position, side: int, rng: random.Random,
             budget: search.Budget) -> list[tuple[Node, bool]]:
    """Play down the tree on one sampled deal (``pos`` changes in place) until a card not tried yet is
    added; the nodes passed, each with whether ``side`` played its card."""
    node, path = root, []
    while any(pos.hands):
        budget.left -= 1
        budget.used += 1
        legal = cards_in(pos.legal())
        mine = (pos.to_act & 1) == side
        for card in legal:
            if card in node.children:
                node.children[card].available += 1
        untried = [c for c in legal if c not in node.children]
        if untried:
            card = untried[int(rng.random() * len(untried))]
            node.children[card] = child = Node(available=1)
            pos.play(card)
            path.append((child, mine))
            return path
        card = max(legal, key=lambda c: _ucb(node.children[c]))
        pos.play(card)
        node = node.children[card]
        path.append((node, mine))
    return path


def _ucb(node: Node) -> float:
    return node.total / node.visits + EXPLORATION * math.sqrt(math.log(node.available) / node.visits)


class MarginBot(SearchBot):
    """``SearchBot`` with margins on the choices before play (the module docstring's ``beg-margin`` and
    ``give-margin``)."""

    name = "search-margin"

    def __init__(self, ms: int, beg_margin: float = 0.0, give_margin: float = 0.0) -> None:
        super().__init__(ms=ms)
        self.beg_margin = beg_margin
        self.give_margin = give_margin

    def _beg(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        stand, give, run = self._before_play_means(s, rng)
        return BEG if min(give, run) > stand + self.beg_margin else STAND

    def _dealer(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        _, give, run = self._before_play_means(s, rng)
        return GIVE_ONE if give >= run - self.give_margin else RUN_PACK


class TieBot(SearchBot):
    """``SearchBot`` that plays the heuristic bot's card whenever the search values it within ``eps``
    of the best (the module docstring's ``ties``): a prior among cards the open-handed search cannot
    tell apart."""

    name = "search-ties"

    def __init__(self, ms: int, eps: float) -> None:
        super().__init__(ms=ms)
        self.eps = eps
        self.heuristic = HeuristicBot()
        self.ctx: Context | None = None

    def act(self, ctx: Context) -> Action:
        self.ctx = ctx
        return super().act(ctx)

    def _play(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        moves, means = self._card_means(s, legal, rng)
        best = search._best(means)
        assert self.ctx is not None
        theirs = self.heuristic.act(self.ctx)
        if theirs in moves and means[best] - means[moves.index(theirs)] <= self.eps:
            return theirs
        return moves[best]


class ExactBot(SearchBot):
    """``SearchBot`` whose exact search at a table of four starts at ``cards`` cards left in the hands
    instead of ``EXACT_CARDS_FOUR`` (the module docstring's ``exact``). The bot reads that threshold from
    its module, so it is set for the span of each decision and put back (one bot decides at a time)."""

    name = "search-exact"

    def __init__(self, ms: int, cards: int) -> None:
        super().__init__(ms=ms)
        self.cards = cards

    def act(self, ctx: Context) -> Action:
        with exact_from(self.cards):
            return super().act(ctx)


@contextlib.contextmanager
def exact_from(cards: int) -> Iterator[None]:
    """The bot's ``EXACT_CARDS_FOUR`` set to ``cards`` for the span of the block, then put back."""
    saved = search.EXACT_CARDS_FOUR
    search.EXACT_CARDS_FOUR = cards
    try:
        yield
    finally:
        search.EXACT_CARDS_FOUR = saved


class StackBot(TieBot):
    """``SearchBot`` with the three changes that measured best, none beyond its noise alone, together (the
    module docstring's ``stack``): the exact search at a table of four from ``cards`` cards (``exact:N``),
    the heuristic bot's card within ``eps`` of the search's best (``ties:EPS``), and beg only when the
    worse of give one and run the pack beats stand by more than ``beg_margin`` (``beg-margin:M``)."""

    name = "search-stack"

    def __init__(self, ms: int, cards: int = 16, eps: float = 0.01, beg_margin: float = 0.06) -> None:
        super().__init__(ms, eps)
        self.cards = cards
        self.beg_margin = beg_margin

    def act(self, ctx: Context) -> Action:
        with exact_from(self.cards):
            return super().act(ctx)

    def _beg(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        stand, give, run = self._before_play_means(s, rng)
        return BEG if min(give, run) > stand + self.beg_margin else STAND


def trick_search(pos: Position, value: search.DealValue, budget: search.Budget, alpha: float = -1.0,
                 beta: float = 2.0) -> float:
    """The value to ``value.side`` of ``pos`` (changed and restored) with best play by every seat, every hand
    open, to the end of the trick in progress, then :func:`playout` of the rest (alpha-beta over
    ``distinct_moves``; a node a card tried, plus the playouts' cards)."""
    if not pos.trick:
        return playout(pos.copy(), value, budget)
    budget.used += 1
    budget.left -= 1
    maximise = (pos.to_act & 1) == value.side
    best = -1.0 if maximise else 2.0
    for card in distinct_moves(pos, pos.legal()):
        undo = pos.play(card)
        v = trick_search(pos, value, budget, alpha, beta)
        pos.unplay(card, undo)
        if maximise and v > best:
            best, alpha = v, max(alpha, v)
        elif not maximise and v < best:
            best, beta = v, min(beta, v)
        if alpha >= beta:
            break
    return best


class PlainBot(SearchBot):
    """``SearchBot`` as it was until the thirty-first session (the module docstring's ``plain``): the exact
    search at a table of four from 20 cards, a beg whenever the dealer's worse answer beats standing, and
    the card with the best mean (the first on a tie), without the heuristic bot's card as a prior."""

    name = "search-plain"

    def act(self, ctx: Context) -> Action:
        with exact_from(20):
            return super().act(ctx)

    def _beg(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        stand, give, run = self._before_play_means(s, rng)
        return BEG if min(give, run) > stand else STAND

    def _play(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        moves, means = self._card_means(s, legal, rng)
        return moves[search._best(means)]


class TwinBot(SearchBot):
    """``SearchBot`` whose prior samples on whenever the heuristic bot's card has a twin (the module docstring's
    ``twins``): another card within ``PRIOR_MARGIN`` of the best that every deal so far valued exactly as it,
    so the order of the legal cards never decides between them (the bot samples on only while its best card
    is such a twin and not the heuristic bot's card itself). Head to head the bot has no prior; this trial
    has it there too."""

    name = "search-twins"

    def _play(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        rows: list[list[float]] = []
        moves, _ = self._card_means(s, legal, rng, rows)
        values = self._card_values(s, [card_id(a.card) for a in moves], rng)
        return moves[self._with_prior(s, moves, rows, lambda: self._value_one(s, rng, values))]

    def _with_prior(self, s: search._Setting, moves: list[Play], rows: list[list[float]],
                    more: Callable[[], list[float]]) -> int:
        theirs = self.prior.act(s.ctx)
        h = moves.index(theirs) if theirs in moves else -1
        means = search._column_means(rows)
        best = search._best(means)
        if h < 0 or means[best] - means[h] > search.PRIOR_MARGIN:
            return best
        while has_twin(h, rows) and len(rows) < search.PRIOR_EXTRA * self.samples and s.budget.left > 0:
            rows.append(more())
        means = search._column_means(rows)
        best = search._best(means)
        if h == best or means[best] - means[h] > search.PRIOR_MARGIN:
            return best
        dominated = any(r[h] < r[best] for r in rows) and not any(r[h] > r[best] for r in rows)
        return best if dominated else h


def has_twin(card: int, rows: list[list[float]]) -> bool:
    """Whether another card is within ``PRIOR_MARGIN`` of the best mean of ``rows`` (one row a sampled deal,
    one column a card) and valued exactly as ``card`` (a column) on every deal."""
    means = search._column_means(rows)
    top = max(means)
    return any(j != card and top - means[j] <= search.PRIOR_MARGIN and all(r[j] == r[card] for r in rows)
               for j in range(len(means)))


class TrickBot(SearchBot):
    """``SearchBot`` whose cards, at a table of four in a deal too large to search exactly, are valued by
    :func:`trick_search` (the module docstring's ``trick``)."""

    name = "search-trick"

    def _card_values(self, s: search._Setting, ids: list[int],
                     rng: random.Random) -> Callable[[Deal], list[float]]:
        def values(deal: search.Deal) -> list[float]:
            pos, value = search._position(s, deal)
            if pos.players != 4 or search._small(pos):
                return search._after_each(s, (pos, value), ids)
            out = []
            for m in ids:
                p = pos.copy()
                p.play(m)
                out.append(trick_search(p, value, s.budget))
            return out

        return values


#: The signal's fact: a trump of these ranks (rank - 2 within the suit: jack, queen, king, ace).
SIGNAL_RANKS = 0b1111 << 9
#: The chance a sampled deal is kept when the partner's card there contradicts the convention (it could
#: have said its fact with a legal card but did not: no such card was among its ties). Measured on the
#: trial's own games without the reading (4 players, 200 ms, pairs 200-204, not those of the docs' rows):
#: given a legal card saying its fact, the signaller played one in 65% of 526 choices (on pairs 202-204:
#: 72% of 200 without a high trump, 62% of 97 with one), so a contradicting card is about half as likely
#: as an agreeing one.
SIGNAL_MISS = 0.5
#: Most deals drawn for one sample; past them, the first of those with the greatest weight.
SIGNAL_TRIES = 12


def signal_fact(hand: int, trump: int) -> bool:
    """What the signal says of ``hand`` (a card mask): whether it holds a trump from the jack up."""
    return bool(hand >> (trump * 13) & SIGNAL_RANKS)


def says(card: int) -> bool:
    """What playing ``card`` says under the convention: an odd rank (3, 5, 7, 9, jack, king) says yes."""
    return bool(card % 13 & 1)


def signal_weight(k: Knowledge, obs: Observation, deal: Deal, miss: float = SIGNAL_MISS) -> float:
    """How well ``deal`` agrees with the partner's signals this deal, read by ``k.seat`` from what it sees:
    ``miss`` to the power of the partner's cards that said the opposite of the sampled hand's fact while a
    legal card saying it was in that hand (1.0 head to head, or without such cards)."""
    if k.players != 4:
        return 1.0
    partner = (k.seat + 2) % 4
    plays: list[tuple[list[int], int]] = []  # (the trick before the partner's card, its card)
    tricks = [(t.leader, t.cards) for t in obs.tricks]
    if obs.trick:
        tricks.append((obs.trick_leader, obs.trick))
    for leader, cards in tricks:
        ids = [card_id(c) for c in cards]
        at = (partner - leader) % 4
        if at < len(ids):
            plays.append((ids[:at], ids[at]))
    hand = deal.hands[partner]
    weight = 1.0
    for before, card in reversed(plays):  # the hand it held: its cards now and every one played since
        hand |= 1 << card
        fact = signal_fact(hand, k.trump)
        if says(card) != fact:
            legal = legal_mask(hand, before, k.trump, obs.rules.undertrump_ban, obs.rules.void_may_discard)
            if any(says(c) == fact for c in cards_in(legal)):
                weight *= miss
    return weight


class SignalBot(SearchBot):
    """``SearchBot`` with the partner signal of the module docstring (``signal``): it signals its fact on
    the cards the search cannot tell apart and reads its partner's signals in its samples."""

    name = "search-signal"

    def __init__(self, ms: int, eps: float = 0.0) -> None:
        super().__init__(ms=ms)
        self.eps = eps
        self.obs: Observation | None = None
        #: Card choices at four where a card saying the seat's fact was legal, and those that said it.
        self.could = self.said = 0

    def act(self, ctx: Context) -> Action:
        self.obs = ctx.observation
        return super().act(ctx)

    def _play(self, s: search._Setting, legal: tuple[Action, ...], rng: random.Random) -> Action:
        moves, means = self._card_means(s, legal, rng)
        best = search._best(means)
        if s.know.players != 4:
            return moves[best]
        fact = signal_fact(s.know.hands[s.know.seat], s.know.trump)
        ids = [card_id(a.card) for a in moves]
        choice = next((i for i in range(len(moves)) if means[i] >= means[best] - self.eps and says(ids[i]) == fact),
                      best)
        if any(says(c) == fact for c in ids):
            self.could += 1
            self.said += says(ids[choice]) == fact
        return moves[choice]

    def _sample(self, know: Knowledge, rng: random.Random) -> Deal:
        assert self.obs is not None
        kept, most = None, -1.0
        for _ in range(SIGNAL_TRIES):
            deal = super()._sample(know, rng)
            weight = signal_weight(know, self.obs, deal)
            if weight >= 1.0 or rng.random() < weight:
                return deal
            if weight > most:
                kept, most = deal, weight
        assert kept is not None
        return kept


#: Deals each other seat's own choice in the trick in progress is valued on (``view:K`` sets it).
VIEW_DEALS = 4
#: Such a deal with at most this many cards left in the hands (three each) is searched exactly, within
#: ``VIEW_CAP`` nodes for all that seat's cards together; a larger one, or one past the cap, by a playout
#: each (a deal of 16-20 cards nearly always passes the cap: the nodes would be spent for nothing).
VIEW_EXACT_CARDS = 12
VIEW_CAP = 1000

#: What a seat chooses, keyed by what it sees on a sampled deal: (seat, its hand, the trick so far).
Choices = dict[tuple[int, int, tuple[int, ...]], int]


def seen_choice(s: search._Setting, deal: Deal, pos: Position, deals: int, rng: random.Random,
                choices: Choices, values: dict[tuple[int, int, int, int], DealValue]) -> int:
    """The card the seat to act in ``pos`` (a trick in progress on the sampled ``deal``) plays when it
    chooses by what IT sees: a PIMC of ``deals`` deals of the cards it cannot see (the other hands of
    ``pos`` and ``deal.stock``, dealt anew by ``infer.sample_deal`` with the hand sizes, the exposed cards
    of seats other than the bot's and every void shown, the trick's own included), each of its cards
    (``distinct_moves`` on ``pos``) valued for its side by an exact search within ``VIEW_CAP`` nodes when
    at most ``VIEW_EXACT_CARDS`` cards are left in the hands, else a playout; the best mean (the first on
    a tie). Every node and sample is charged to ``s.budget``. ``choices`` keeps the choice for what the
    seat sees (it depends on nothing else); ``values`` the deal values built so far."""
    t = pos.to_act
    moves = distinct_moves(pos, pos.legal())
    if len(moves) == 1:
        return moves[0]
    key = (t, pos.hands[t], tuple(pos.trick))
    if key in choices:
        return choices[key]
    k = s.know
    n = k.players
    voids = list(k.voids)
    played = list(k.played)
    _read_trick(pos.leader, pos.trick, k.trump, n, s.obs, played, voids)
    fixed = [0] * n  # the other seats' exposed cards still in their hands, and the chooser's own hand
    unseen = 0
    for x in range(n):
        if x == t:
            fixed[x] = pos.hands[x]
            continue
        if x != k.seat:
            fixed[x] = k.hands[x] & pos.hands[x]
        unseen |= pos.hands[x] & ~fixed[x]
    for c in deal.stock:
        unseen |= 1 << c
    view = Knowledge(t, n, k.trump, tuple(fixed), tuple(bin(h).count("1") for h in pos.hands), tuple(played),
                     tuple(voids), unseen, len(deal.stock))
    rules = s.obs.rules
    totals = [0.0] * len(moves)
    for _ in range(deals):
        hands = sample_deal(view, rng).hands
        s.budget.left -= search.SAMPLE_COST
        s.budget.used += search.SAMPLE_COST
        high, low, jack_side, total = dealt_facts([hands[x] | played[x] for x in range(n)], k.trump)
        facts = (t & 1, high, low, jack_side)
        if facts not in values:
            values[facts] = DealValue.build(t & 1, s.obs.scores, rules.target, high, low, jack_side,
                                            hanged_jack_points(rules))
        q = Position(n, k.trump, hands, pos.leader, list(pos.trick), list(pos.taken), pos.jack_taker, total,
                     pos.undertrump_ban, pos.void_may_discard)
        after = []
        for m in moves:
            p = q.copy()
            p.play(m)
            after.append(p)
        for i, v in enumerate(_values_within(after, values[facts], s.budget)):
            totals[i] += v
    best = moves[max(range(len(moves)), key=lambda i: (totals[i], -i))]
    choices[key] = best
    return best


def _values_within(positions: list[Position], value: DealValue, budget: Budget) -> list[float]:
    """``search._evaluate_all`` for a seat's own choice: exact values of every position when each holds
    at most ``VIEW_EXACT_CARDS`` cards in the hands and together they take at most ``VIEW_CAP`` nodes,
    else a playout each."""
    if all(sum(bin(h).count("1") for h in p.hands) <= VIEW_EXACT_CARDS for p in positions):
        cap = Budget(min(VIEW_CAP, max(budget.left, 1)))
        table: dict[tuple[int, ...], tuple[float, float]] = {}
        try:
            return [solve(p.copy(), value, cap, table=table) for p in positions]
        except OutOfNodes:
            pass
        finally:
            budget.left -= cap.used
            budget.used += cap.used
    return [playout(p.copy(), value, budget) for p in positions]


class ViewBot(SearchBot):
    """``SearchBot`` in whose sampled deals at a table of four the other seats still to play to the trick
    in progress choose by what they see (:func:`seen_choice`; the module docstring's ``view``)."""

    name = "search-view"

    def __init__(self, ms: int, deals: int = VIEW_DEALS) -> None:
        super().__init__(ms=ms)
        self.deals = deals

    def _card_values(self, s: search._Setting, ids: list[int],
                     rng: random.Random) -> Callable[[Deal], list[float]]:
        if s.know.players != 4:
            return super()._card_values(s, ids, rng)
        choices: Choices = {}
        values: dict[tuple[int, int, int, int], DealValue] = {}

        def after_each(deal: Deal) -> list[float]:
            pos, value = search._position(s, deal)
            items: list[float | tuple[Position, DealValue]] = []
            for m in ids:
                p = pos.copy()
                p.play(m)
                while p.trick:
                    p.play(seen_choice(s, deal, p, self.deals, rng, choices, values))
                items.append((p, value))
            return search._evaluate_all(items, s.budget)

        return after_each


def make(trial: str, ms: int) -> Callable[[], SearchBot]:
    """A factory of the trial's bot.

    :raises ValueError: for an unknown trial or a margin that is not a number.
    """
    name, _, arg = trial.partition(":")
    if name == "none" and not arg:
        return lambda: SearchBot(ms=ms)
    if name == "ismcts" and not arg:
        return lambda: IsmctsBot(ms=ms)
    if name in ("beg-margin", "give-margin") and arg:
        margin = float(arg)
        key = "beg_margin" if name == "beg-margin" else "give_margin"
        return lambda: MarginBot(ms, **{key: margin})
    if name == "trick" and not arg:
        return lambda: TrickBot(ms=ms)
    if name == "signal":
        eps = float(arg) if arg else 0.0
        return lambda: SignalBot(ms, eps)
    if name == "view":
        deals = int(arg) if arg else VIEW_DEALS
        if deals < 1:
            raise ValueError(f"view:K needs K of at least 1, not {deals}")
        return lambda: ViewBot(ms, deals)
    if name == "exact" and arg:
        cards = int(arg)
        if not 0 <= cards <= 24:
            raise ValueError(f"exact:N needs N from 0 to 24 cards, not {cards}")
        return lambda: ExactBot(ms, cards)
    if name == "twins" and not arg:
        return lambda: TwinBot(ms=ms)
    if name == "plain" and not arg:
        return lambda: PlainBot(ms=ms)
    if name == "stack":
        eps = float(arg) if arg else 0.01
        return lambda: StackBot(ms, eps=eps)
    if name == "ties" and arg:
        eps = float(arg)
        return lambda: TieBot(ms, eps)
    raise ValueError(f"unknown trial {trial!r}: none, plain, twins, ismcts, beg-margin:M, give-margin:M, ties:EPS,"
                     " trick, signal[:EPS], view[:K], exact:N or stack[:EPS]")


def main(argv: list[str] | None = None) -> int:
    """Run the rows and print the JSON; returns 0."""
    p = argparse.ArgumentParser(prog="benchmarks/search_trials.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--trial", nargs="+", default=["none", "ismcts"])
    add_pair_options(p, pairs=60, players=[4])
    args = parse_pair_options(p, argv)
    try:
        factories = {trial: make(trial, args.ms) for trial in args.trial}
    except ValueError as e:
        p.error(str(e))
    cpu = time.process_time()
    rows = []
    for players in args.players:
        for trial, factory in factories.items():
            result = spar(factory, HeuristicBot, players, args.pairs, f"{args.seed}/heuristic", first=args.first_pair)
            summary = result.summary()
            rows.append({"players": players, "trial": trial, "ms": args.ms, "first_pair": args.first_pair,
                         **{k: summary[k] for k in ("elo", "ci_low", "ci_high", "pairs", "score")},
                         "pair_scores": result.scores,
                         **{k: summary[k] for k in ("deals", "points_per_deal", "choices",
                                                     "decision_cpu_ms_p50", "decision_cpu_ms_p99")}})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"rows": rows, "cpu_s": round(time.process_time() - cpu, 1)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
