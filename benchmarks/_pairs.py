"""Shared by benchmarks/strength.py, benchmarks/strength_ceiling.py and benchmarks/search_trials.py: the
options of a run of the search bot's duplicate pairs, and their check.

- ``--pairs``: how many pairs a row plays; ``--ms``: the search's work per decision (milliseconds at
  ``NODES_PER_MS``); ``--players``: table sizes (2, 4); ``--seed``: the label the pairs' match seeds
  are made from (``strength`` by default, so every script plays the same decks); ``--first-pair``:
  the number of the first pair, so runs on disjoint ranges (one a core) add up to one run.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from sample_bots.search import DEFAULT_MS


def add_pair_options(p: argparse.ArgumentParser, pairs: int, players: list[int]) -> None:
    """Add the options above to ``p``, with ``pairs`` and ``players`` as their defaults."""
    p.add_argument("--pairs", type=int, default=pairs)
    p.add_argument("--ms", type=int, default=DEFAULT_MS, help=f"search work per decision (default {DEFAULT_MS})")
    p.add_argument("--players", type=int, nargs="+", default=players, choices=(2, 4))
    p.add_argument("--seed", default="strength", help="label the pairs' match seeds are made from")
    p.add_argument("--first-pair", type=int, default=0, help="number of the first pair (default 0)")


def parse_pair_options(p: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv`` with ``p``; a usage error (status 2, one line) for ``--pairs`` or ``--ms`` below 1
    or ``--first-pair`` below 0."""
    args = p.parse_args(argv)
    if args.pairs < 1 or args.ms < 1 or args.first_pair < 0:
        p.error("--pairs and --ms must be at least 1, --first-pair at least 0")
    return args
