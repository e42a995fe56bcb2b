"""A bot that writes the seat names it is told (``MatchInfo.seat_names``, from the referee's Welcome) to
stderr, then plays the first legal action: the arena's ``tournament.blind_seats`` test reads them from its
logs. Run it with ``python -m sdk.run tests.bots.namer:NamerBot``."""

from __future__ import annotations

import json
import sys

from sdk import Bot, Context
from sdk.bot import MatchInfo


class NamerBot(Bot):
    """Says ``seat_names: [...]`` on stderr when a match starts."""

    def on_welcome(self, info: MatchInfo) -> None:
        print("seat_names: " + json.dumps(list(info.seat_names)), file=sys.stderr, flush=True)

    def act(self, ctx: Context) -> object:
        return ctx.legal[0]
