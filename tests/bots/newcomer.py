"""A newcomer's bot: ``return max(ctx.legal_cards)`` — cards do not order, so ``act`` raises every
time it is asked (and outside the play phase there are no legal cards): the SDK plays its fallback
move each time. Run it with ``python -m sdk.run tests.bots.newcomer:MaxCardBot``."""

from __future__ import annotations

from sdk import Bot, Context


class MaxCardBot(Bot):
    """Raises in every ``act``."""

    def act(self, ctx: Context) -> object:
        return max(ctx.legal_cards)
