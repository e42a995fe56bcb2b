"""Bot failures per bot: what went wrong besides losing, so a host sees it (terminal, leaderboard, JSON).

Per seat of each game the game runner stores ``extra["failures"]``: a list (seat order) of
:class:`Failures` as dicts, from the referee's :class:`SeatResult` (``strikes`` → ``timeouts``,
``illegal`` + ``protocol_errors`` → ``rejections``), the counts the bot's SDK reported
(``bot_counts``: ``exceptions`` raised in its ``act`` and ``fallbacks``: moves the SDK sent in place
of its answer) and the arena's own view of the process (``crashes``: it could not start, or exited
with a non-zero status or a signal the arena did not send). ``forfeits`` count games: a bot forfeits
a game when a seat of its side forfeited (the referee's termination other than ``normal`` and
``other_seat_forfeited``, or ``not_started`` when it failed its check). :func:`tally` adds them up per bot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from arena.tournament.store import GameResult
from referee.rules.seats import side_of

_SINGULAR = {
    "forfeits": "forfeit",
    "exceptions": "exception",
    "fallbacks": "fallback",
    "rejections": "rejection",
    "timeouts": "timeout",
    "crashes": "crash",
}
#: Seat terminations that are not the seat's own failure.
NOT_A_FORFEIT = ("normal", "other_seat_forfeited", "")


@dataclass(slots=True)
class Failures:
    """Counts of one seat in one game, or of one bot over a tournament (all ``int``, default 0)."""

    forfeits: int = 0
    exceptions: int = 0
    fallbacks: int = 0
    rejections: int = 0
    timeouts: int = 0
    crashes: int = 0

    def add(self, other: Failures | Mapping[str, Any]) -> None:
        """Add ``other`` (a :class:`Failures` or its dict; unknown keys ignored) to these counts."""
        data = asdict(other) if isinstance(other, Failures) else other
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + int(data.get(f.name, 0) or 0))

    def to_dict(self) -> dict[str, int]:
        """JSON-ready."""
        return asdict(self)

    def summary(self) -> str:
        """The non-zero counts, e.g. ``"2 forfeits, 14 exceptions, 14 fallbacks"``; ``""`` when none."""
        counts = [(f.name, getattr(self, f.name)) for f in fields(self)]
        return ", ".join(f"{n} {name if n != 1 else _SINGULAR[name]}" for name, n in counts if n)


def of_game(result: GameResult) -> dict[str, Failures]:
    """Bot name -> its counts in one game (seat ``k`` plays for side ``k % 2``)."""
    out = {name: Failures() for name in result.sides}
    for seat, counts in enumerate(result.extra.get("failures", [])):
        out[result.sides[side_of(seat)]].add(counts)
    terminations = result.extra.get("terminations", [])
    for side, name in enumerate(result.sides):
        if any(t not in NOT_A_FORFEIT for t in terminations[side::2]):
            out[name].forfeits += 1
    return out


def tally(results: Iterable[GameResult], names: Iterable[str] = ()) -> dict[str, Failures]:
    """Bot name -> its counts over ``results`` (every name in ``names`` present, zeros if none)."""
    out = {name: Failures() for name in names}
    for result in results:
        for name, counts in of_game(result).items():
            out.setdefault(name, Failures()).add(counts)
    return out
