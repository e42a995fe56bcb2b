"""Bot failures per bot: what went wrong besides losing, so a host sees it (terminal, leaderboard, JSON).

Per seat of each game the game runner stores :attr:`GameResult.failures`: a tuple (seat order) of
:class:`arena.tournament.result.Failures`, from the referee's :class:`SeatResult` (``strikes`` → ``timeouts``,
``illegal`` + ``protocol_errors`` → ``rejections``), the counts the bot's SDK reported
(``bot_counts``: ``exceptions`` raised in its ``act`` and ``fallbacks``: moves the SDK sent in place
of its answer) and the arena's own view of the process (``crashes``: it could not start, or exited
with a non-zero status or a signal the arena did not send). ``forfeits`` count games: a bot forfeits
a game when a seat of its side forfeited (:attr:`referee.outcome.Termination.forfeits`: the referee's
termination other than ``normal`` and ``other_seat_forfeited``, or the arena's own, e.g. ``not_started``
when it failed its check, ``oom``, ``crash``). :func:`tally` adds them up per bot.
"""

from __future__ import annotations

from collections.abc import Iterable

from arena.tournament.result import Failures, GameResult
from referee.rules.seats import side_of

__all__ = ["Failures", "of_game", "tally"]


def of_game(result: GameResult) -> dict[str, Failures]:
    """Bot name -> its counts in one game (seat ``k`` plays for side ``k % 2``)."""
    out = {name: Failures() for name in result.sides}
    for seat, counts in enumerate(result.failures):
        out[result.sides[side_of(seat)]].add(counts)
    for side, name in enumerate(result.sides):
        if any(t.forfeits for t in result.terminations[side::2]):
            out[name].forfeits += 1
    return out


def tally(results: Iterable[GameResult], names: Iterable[str] = ()) -> dict[str, Failures]:
    """Bot name -> its counts over ``results`` (every name in ``names`` present, zeros if none)."""
    out = {name: Failures() for name in names}
    for result in results:
        for name, counts in of_game(result).items():
            out.setdefault(name, Failures()).add(counts)
    return out
