"""The Python SDK for All Fours bots (docs/sdk.md).

A bot is a class with one required method, ``act(ctx) -> action``::

    from sdk import Bot, Context

    class MyBot(Bot):
        def act(self, ctx: Context):
            return ctx.rng.choice(ctx.legal)

Run it locally against other bots (``python -m sdk.local mymod:MyBot sample_bots.random_bot:RandomBot``)
or against a referee (``python -m sdk.run mymod:MyBot --referee HOST:PORT --ticket T``).
"""

import os

# gRPC's C core logs INFO lines (``Got goaway …`` when a server sheds a connection) into the bot's
# output; a bot process shows warnings and errors only, unless its user set GRPC_VERBOSITY. Set before
# grpc is imported (it reads the variable once); the arena's bot and worker processes inherit it.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

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
