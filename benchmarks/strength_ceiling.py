"""What the search bot loses by not seeing the other hands: the same bot given the true deal, per phase.

    python benchmarks/strength_ceiling.py [--pairs 60] [--ms 200] [--players 4] [--sees none pre play all partner hands]

A study, not a bot: ``SeeingSearchBot`` is ``SearchBot`` except that in the phases it "sees" it values
every action on the **true deal** (every hand and the undealt stock, read from the referee's state as
the local table makes each observation) instead of on deals sampled from what its seat knows. The
rows play duplicate pairs against the heuristic bot on the same decks as ``benchmarks/strength.py``
(the same ``--seed`` and pair numbers), so each row's pair scores compare pair for pair with the
honest bot's (``--sees none``). ``--sees``:

- ``none``: the bot as it is (the baseline of the same run);
- ``pre``: the true deal for beg or stand and give one or run the pack (it knows what a run deals);
- ``play``: the true deal for every card and call (double dummy, every hand open);
- ``all``: both;
- ``partner``: in play, the partner's true hand only (the opponents' hands still sampled from what the
  seat knows, 48 deals as usual): what the partner's cards are worth to know, the most a signalling
  convention between the two seats of a side could tell (at two players there is no partner: the
  same as ``none``);
- ``hands``: before play, every seat's true hand but not the order of the undealt pack (the stock's
  cards shuffled anew for each of the usual 48 deals): the part of ``pre`` that reading the other
  hands could win, the rest of ``pre`` being what a run of the pack will deal, which nobody can know.

The difference between a row and ``none`` bounds what better inference (reading the hidden cards from
what the seat has seen) could add in that phase with the bot's own evaluation; the evaluation itself is
unchanged (playouts before play and in the first trick at four, exact search later). Prints one JSON
object: per row ``players``, ``sees``, ``ms``, ``elo``, ``ci_low``, ``ci_high``, ``pairs``, ``score``
and ``pair_scores`` (progress to stderr every 10 pairs).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _pairs import add_pair_options, parse_pair_options  # noqa: E402

import sdk.local_table as local_table  # noqa: E402
from referee.rules import Observation, Phase, State  # noqa: E402
from sample_bots.heuristic import HeuristicBot  # noqa: E402
from sample_bots.search import DEFAULT_MS, SearchBot  # noqa: E402
from sample_bots.search.fast import card_id, mask_of  # noqa: E402
from sample_bots.search.infer import Deal, Knowledge  # noqa: E402
from sdk.bot import Context  # noqa: E402
from sdk.spar import spar  # noqa: E402


@dataclass(frozen=True, slots=True)
class Sight:
    """What a ``--sees`` choice shows in ``phases``: the true ``deal`` (every hand and the stock in its
    order), the ``partner``'s true hand only, or every true hand but the stock shuffled (``hands``)."""

    phases: frozenset[Phase]
    shows: str = "deal"


_PLAY = frozenset({Phase.PLAY, Phase.CALL})
_BEFORE = frozenset({Phase.BEG, Phase.DEALER})
#: What each ``--sees`` choice shows (the module docstring).
SEES: dict[str, Sight] = {
    "none": Sight(frozenset()),
    "pre": Sight(_BEFORE),
    "play": Sight(_PLAY),
    "all": Sight(_BEFORE | _PLAY),
    "partner": Sight(_PLAY, shows="partner"),
    "hands": Sight(_BEFORE, shows="hands"),
}


class Oracle:
    """The referee's state at the decision being made (``state``: ``None`` outside :func:`watching`)."""

    def __init__(self) -> None:
        self.state: State | None = None

    def true_deal(self) -> Deal:
        """Every seat's hand now and the undealt stock in dealing order (top first).

        :raises RuntimeError: outside :func:`watching` (no state to read).
        """
        if self.state is None:
            raise RuntimeError("the oracle reads the state only inside watching(oracle)")
        st = self.state
        return Deal([mask_of(h) for h in st.hands], [card_id(c) for c in st.deck[st.pos:]])


@contextmanager
def watching(oracle: Oracle) -> Iterator[Oracle]:
    """Within the block, every observation the local table makes (``sdk.local_table.observe``) first
    records its state in ``oracle``; the table's own function is put back on exit."""
    observe = local_table.observe

    def recording(state: State, seat: int) -> Observation:
        oracle.state = state
        return observe(state, seat)

    local_table.observe = recording  # type: ignore[assignment]
    try:
        yield oracle
    finally:
        local_table.observe = observe  # type: ignore[assignment]
        oracle.state = None


class SeeingSearchBot(SearchBot):
    """``SearchBot`` valuing its actions on the true deal in ``sight.phases`` (one deal: it is the only
    one); with ``sight.shows`` "partner" on deals sampled with the partner's true hand in place, with
    "hands" on the true hands and the stock's cards in a new random order each deal."""

    name = "search-seeing"

    def __init__(self, oracle: Oracle, sight: Sight, ms: int = DEFAULT_MS) -> None:
        super().__init__(ms=ms)
        self.oracle = oracle
        self.sight = sight
        self._honest_samples = self.samples
        self._sees = False

    def act(self, ctx: Context):  # type: ignore[no-untyped-def]
        """``SearchBot.act``, seeing what ``sight`` shows when ``ctx.phase`` is one of its phases."""
        self._sees = ctx.phase in self.sight.phases
        self.samples = 1 if self._sees and self.sight.shows == "deal" else self._honest_samples
        return super().act(ctx)

    def _sample(self, know: Knowledge, rng: random.Random) -> Deal:
        if not self._sees or (self.sight.shows == "partner" and know.players != 4):
            return super()._sample(know, rng)
        deal = self.oracle.true_deal()
        if self.sight.shows == "deal":
            return deal
        if self.sight.shows == "hands":
            stock = list(deal.stock)
            rng.shuffle(stock)
            return Deal(deal.hands, stock)
        partner = (know.seat + 2) % 4
        hands = list(know.hands)
        hands[partner] = deal.hands[partner]
        return super()._sample(dataclasses.replace(know, hands=tuple(hands), unseen=know.unseen & ~deal.hands[partner]),
                               rng)


def row(players: int, sees: str, ms: int, pairs: int, first: int, seed: str) -> dict[str, object]:
    """One row: ``pairs`` duplicate pairs of the bot seeing in ``SEES[sees]`` against the heuristic bot."""
    oracle = Oracle()

    def progress(k: int, result) -> None:  # type: ignore[no-untyped-def]
        if (k + 1 - first) % 10 == 0:
            print(json.dumps({"players": players, "sees": sees, **result.summary(), "partial": True}),
                  file=sys.stderr, flush=True)

    with watching(oracle):
        result = spar(lambda: SeeingSearchBot(oracle, SEES[sees], ms), HeuristicBot, players, pairs,
                      f"{seed}/heuristic", progress=progress, first=first)
    summary = result.summary()
    return {"players": players, "sees": sees, "ms": ms, "first_pair": first,
            **{k: summary[k] for k in ("elo", "ci_low", "ci_high", "pairs", "score")},
            "pair_scores": result.scores}


def main(argv: list[str] | None = None) -> int:
    """Run the rows and print the JSON; returns 0."""
    p = argparse.ArgumentParser(prog="benchmarks/strength_ceiling.py", description=__doc__.split("\n\n")[0])
    add_pair_options(p, pairs=60, players=[4])
    p.add_argument("--sees", nargs="+", default=list(SEES), choices=list(SEES))
    args = parse_pair_options(p, argv)
    cpu = time.process_time()
    rows = [row(players, sees, args.ms, args.pairs, args.first_pair, args.seed)
            for players in args.players for sees in args.sees]
    print(json.dumps({"rows": rows, "cpu_s": round(time.process_time() - cpu, 1)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
