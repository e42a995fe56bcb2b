"""The search bot: Perfect Information Monte Carlo with exact search of sampled deals (docs/search-bot.md).

``SearchBot`` (200 ms of work a decision by default), ``QuickSearchBot`` (50 ms) and ``DemoSearchBot``
(13 ms, the README demo's level)::

    python -m sdk.local sample_bots.search:SearchBot sample_bots.heuristic:HeuristicBot --games 4
    python -m sdk.run sample_bots.search:SearchBot --referee HOST:PORT --ticket=T
"""

from .bot import DEFAULT_MS, NODES_PER_MS, DemoSearchBot, QuickSearchBot, SearchBot

__all__ = ["DEFAULT_MS", "NODES_PER_MS", "DemoSearchBot", "QuickSearchBot", "SearchBot"]
