"""Whether a game's lobby seats can be filled, decided on the time given (no clock is read here).

Before a game with lobby seats starts, each of its lobby bots must have enough workers connected
(one per seat it holds). A bot short of workers is waited for: from the first moment it was seen
short, it has ``wait_s`` seconds (the config's ``no_show_s``; a local worker pool at least
:data:`LOCAL_WORKER_START_S`, the time its processes need to start and dial in) before its seats
are forfeited as ``no_show``. A bot seen with enough workers again starts a fresh wait the next time
it is short. A bot whose workers are broken (a local pool that keeps dying) forfeits at once.

A remote bot none of whose workers has connected yet (``absent``: its competitor enrolled it and has not
started them) has no clock: its games are passed over, not forfeited, until its first worker comes (the
run loop, :func:`arena.tournament.runner.run_games`, decides how long a run that ends waits for it). Once
a worker of it came, it is waited for as any other bot: a worker that leaves starts the ``no_show_s`` clock.

:class:`SeatWait` keeps, per bot, since when it has been short; :meth:`SeatWait.check` takes the time
``now`` (seconds on any monotonic clock) and what the lobby holds, and says which bots forfeit and
why (an empty mapping: every bot has its workers, or is still within its wait).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from arena.tournament.result import Unplayed
from referee.outcome import Termination

#: Least time, seconds, a local worker pool gets to connect before its games are forfeited as no-show.
LOCAL_WORKER_START_S = 30


@dataclass(frozen=True)
class LobbyBot:
    """One lobby bot of a game as the lobby sees it now.

    ``connected``: its workers connected to the lobby; ``seats``: the game's seats it holds;
    ``no_show_s``: the config's wait for a bot's workers (seconds); ``local_pool``: its workers are
    processes this arena starts (``mode = "worker"``: they get at least :data:`LOCAL_WORKER_START_S`);
    ``broken``: why its workers are broken (a one-line reason), or None; ``absent``: a remote bot none of whose
    workers has connected yet, waited for without a clock (see the module docstring).
    """

    connected: int
    seats: int
    no_show_s: float
    local_pool: bool = False
    broken: str | None = None
    absent: bool = False

    @property
    def wait_s(self) -> float:
        """Seconds this bot may stay short of workers before its seats are forfeited."""
        return max(self.no_show_s, LOCAL_WORKER_START_S) if self.local_pool else self.no_show_s


@dataclass
class SeatWait:
    """Per lobby bot, since when (seconds, the caller's clock) it has had too few workers."""

    short_since: dict[str, float] = field(default_factory=dict)

    def check(self, now: float, bots: Mapping[str, LobbyBot]) -> dict[str, Unplayed]:
        """The bots of one game that forfeit at time ``now``, each with its reason (``"broken: …"`` or
        ``"no_show: too few workers connected for N s"``); empty when the game may go on (reserve
        its workers, or wait for them). Remembers when each bot was first seen short; an ``absent`` bot is
        not counted short (its clock starts when it is first seen short and not absent)."""
        failed: dict[str, Unplayed] = {}
        for name, bot in bots.items():
            if bot.broken:
                failed[name] = Unplayed(Termination.BROKEN, f"broken: {bot.broken}")
            elif bot.absent:
                self.short_since.pop(name, None)
            elif bot.connected < bot.seats:
                since = self.short_since.setdefault(name, now)
                if now - since >= bot.wait_s:
                    why = f"no_show: too few workers connected for {bot.wait_s} s"
                    failed[name] = Unplayed(Termination.NO_SHOW, why)
            else:
                self.short_since.pop(name, None)
        return failed
