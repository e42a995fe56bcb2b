"""The outcome vocabulary: how a seat's part of a match ended (:class:`Termination`) and how a match
ended (:class:`MatchStatus`), one place for the referee, the arena, the web, :mod:`referee.verify`
and the SDK.

Values are the short lower-case names used in records, games.jsonl, the web's filters and the SDK's
``MatchEnd`` (``"no_show"`` for ``allfours.v1.TERMINATION_NO_SHOW``). Every ``allfours.v1``
``Termination`` / ``MatchStatus`` value has a member (``tests/test_outcome.py`` checks both ways).
The arena knows more than the referee about why a seat failed (its process, its container): those
members are :data:`ARENA_ONLY`; the referee never sends them, and the arena puts them in place of
the referee's :data:`CONSEQUENCES` (what the referee saw of a bot that had already died).

Adding a termination reason: a member here (with its line in docs/arena.md, "Bot failures"), and the
code that decides it (the referee's ``Forfeit`` in referee/match.py, or the arena's cause in
arena/play/game.py, ``_process_causes`` / ``_worker_causes``); a referee reason also needs its proto
value (referee.proto). docs/architecture.md, "A new termination reason", lists the files.
"""

from __future__ import annotations

from enum import StrEnum

from allfours.v1 import referee_pb2 as pb


class Termination(StrEnum):
    """How one seat's part of a match ended (docs/arena.md, "Bot failures"; docs/protocol.md)."""

    #: not set (the match is still running; or a value of a newer referee this build does not know)
    UNSPECIFIED = "unspecified"
    #: played to the end
    NORMAL = "normal"
    #: too many timeouts (max_strikes) or the time bank ran out
    TIMEOUT = "timeout"
    #: too many illegal actions (max_illegal)
    ILLEGAL = "illegal"
    #: disconnected and not back within grace_ms
    DISCONNECT = "disconnect"
    #: too many malformed messages (max_protocol_errors)
    PROTOCOL_ERROR = "protocol_error"
    #: never joined within join_ms
    NO_SHOW = "no_show"
    #: the referee stopped the match (e.g. shutdown); nobody forfeits
    ABORTED = "aborted"
    #: the match ended early because another seat forfeited; this seat did nothing wrong
    OTHER_SEAT_FORFEITED = "other_seat_forfeited"
    # ---- the arena's own (never on the wire)
    #: the bot failed its check before the first game (``--skip-broken``), or a competition's host disqualified it
    #: after its final was written (docs/competition.md): its games are forfeited unplayed
    NOT_STARTED = "not_started"
    #: the bot's worker pool is broken (its workers died again and again): its games are forfeited unplayed
    BROKEN = "broken"
    #: its container was killed at its memory limit
    OOM = "oom"
    #: its container reached its pids limit (processes and threads)
    PIDS = "pids"
    #: its process exited with a failure status (or a signal the arena did not send) during the match
    CRASH = "crash"

    @classmethod
    def from_pb(cls, value: int) -> Termination:
        """The member of an ``allfours.v1.Termination`` value (:attr:`UNSPECIFIED` for one this build
        does not know: a newer referee's)."""
        return _FROM_PB.get(value, cls.UNSPECIFIED)

    @property
    def forfeits(self) -> bool:
        """Whether this seat's own failure forfeits its side's game (not :attr:`NORMAL`,
        :attr:`OTHER_SEAT_FORFEITED`, :attr:`ABORTED` or :attr:`UNSPECIFIED`)."""
        return self not in NOT_A_FORFEIT


class MatchStatus(StrEnum):
    """How a match ended (``allfours.v1.MatchStatus`` without the prefix, lower case). A game the arena
    decides without a match (a broken bot, workers that never came) is :attr:`FORFEITED` too."""

    UNSPECIFIED = "unspecified"
    WAITING = "waiting"
    RUNNING = "running"
    COMPLETED = "completed"
    FORFEITED = "forfeited"
    ABORTED = "aborted"

    @classmethod
    def from_pb(cls, value: int) -> MatchStatus:
        """The member of an ``allfours.v1.MatchStatus`` value (:attr:`UNSPECIFIED` for an unknown one)."""
        return _STATUS_FROM_PB.get(value, cls.UNSPECIFIED)


#: Terminations the arena decides; the referee never sends them (no proto value).
ARENA_ONLY = frozenset(
    {Termination.NOT_STARTED, Termination.BROKEN, Termination.OOM, Termination.PIDS, Termination.CRASH}
)
#: Terminations that are not the seat's own failure.
NOT_A_FORFEIT = frozenset(
    {Termination.NORMAL, Termination.OTHER_SEAT_FORFEITED, Termination.ABORTED, Termination.UNSPECIFIED}
)
#: What the referee sees of a bot whose process or container died: the arena's cause (``oom``,
#: ``pids``, ``crash``) replaces these, whatever the time control made the referee see first.
CONSEQUENCES = frozenset({Termination.TIMEOUT, Termination.DISCONNECT, Termination.NO_SHOW})

_FROM_PB = {
    int(getattr(pb, f"TERMINATION_{t.name}")): t for t in Termination if t not in ARENA_ONLY
}
_STATUS_FROM_PB = {int(getattr(pb, f"MATCH_STATUS_{s.name}")): s for s in MatchStatus}
