"""RandomBot: picks uniformly among the legal actions with the context's seeded RNG.

Run it: ``python -m sdk.run sample_bots.random_bot:RandomBot --referee HOST:PORT --ticket T``.
"""

from __future__ import annotations

from referee.rules import Action
from sdk.bot import Bot, Context


class RandomBot(Bot):
    """Uniform among ``ctx.legal``, drawn from ``ctx.rng`` (so its play is reproducible)."""

    name = "random"
    version = "1"

    def act(self, ctx: Context) -> Action:
        """Any legal action, uniformly at random."""
        return ctx.rng.choice(ctx.legal)
