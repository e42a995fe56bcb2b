"""The Python SDK for All Fours bots (docs/sdk.md).

A bot is a class with one required method, ``act(ctx) -> action``::

    from sdk import Bot, Context

    class MyBot(Bot):
        def act(self, ctx: Context):
            return ctx.rng.choice(ctx.legal)

Run it locally against other bots (``python -m sdk.local mymod:MyBot sample_bots.random_bot:RandomBot``)
or against a referee (``python -m sdk.run mymod:MyBot --referee HOST:PORT --ticket T``).
"""

from sdk.bot import (
    Bot,
    BotLike,
    Choice,
    Context,
    DealEnd,
    Event,
    GameEnd,
    IllegalChoice,
    MatchEnd,
    MatchInfo,
    decision_rng,
    load_bot,
    resolve_choice,
)

__all__ = [
    "Bot", "BotLike", "Choice", "Context", "DealEnd", "Event", "GameEnd", "IllegalChoice", "MatchEnd",
    "MatchInfo", "decision_rng", "load_bot", "resolve_choice",
]
