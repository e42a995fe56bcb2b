"""The match clock's rules, pure: deadlines, time banks, strikes, the lazy deadline timer.

docs/protocol.md, "4. Time, strikes and forfeits". Time is an argument here, never read: every
method takes the instant it rules at (:data:`Instant`, seconds on ``time.monotonic()``'s clock), so
the rules are tested with tables of explicit times (tests/test_clock.py) and :mod:`referee.match`
only reads the clock and acts on the ruling.

- A request asked at ``asked`` is due at ``asked + min(decision_ms, bank left) / 1000``.
- An answer received at ``received`` costs ``received - asked`` from the seat's bank. If that
  empties the bank (``<= 0``) the answer is not played and the seat forfeits (``timeout``);
  otherwise it is played, even past its deadline while the timer has not fired yet (the bank pays).
- The timer firing at ``now`` past the deadline times the seat out: the time is charged, a strike
  counted, and the seat forfeits on an empty bank or its ``max_strikes``-th strike, else the
  first legal action is played for it. Nothing ever gives time or strikes back.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, NewType

from referee.rules.values import maker

#: An instant: seconds on the monotonic clock (``time.monotonic()``).
Instant = NewType("Instant", float)


class Ruling(enum.Enum):
    """What the clock says about an answer or a timeout."""

    #: The answer came while the bank lasted: it is played (if legal), its time charged.
    IN_TIME = "in_time"
    #: Timed out, a strike counted: the first legal action is played for the seat.
    STRIKE = "strike"
    #: The bank is empty (an answer after it ran out is not played): the seat forfeits (``timeout``).
    BANK_EMPTY = "bank_empty"
    #: The ``max_strikes``-th strike: the seat forfeits (``timeout``).
    STRUCK_OUT = "struck_out"


@dataclass(frozen=True, slots=True)
class SeatClock:
    """One seat's time: its bank left (ms; below 0 once overdrawn) and its strikes so far."""

    bank_ms: float
    strikes: int = 0

    @property
    def bank_left_ms(self) -> int:
        """The bank left, whole ms, never below 0 (as the seats and the record see it)."""
        return max(0, round(self.bank_ms))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A ruling, the seat's clock after it (adopt it only when the ruling is acted on: a rejected
    answer costs nothing) and the time it took, ``elapsed`` seconds from asking."""

    ruling: Ruling
    clock: SeatClock
    elapsed: float


# Built for every answer: the frozen values' fast constructors (referee/rules/values.py, docs/architecture.md).
if TYPE_CHECKING:
    _seat_clock, _verdict = SeatClock, Verdict
else:
    _seat_clock, _verdict = maker(SeatClock), maker(Verdict)


@dataclass(frozen=True, slots=True)
class ClockPolicy:
    """The clock rules of one match: ``decision_ms`` a decision, ``bank_ms`` a seat, ``max_strikes``.

    :raises ValueError: when a value is not positive.
    """

    decision_ms: int
    bank_ms: int
    max_strikes: int

    def __post_init__(self) -> None:
        if min(self.decision_ms, self.bank_ms, self.max_strikes) < 1:
            raise ValueError(f"clock limits must be positive: {self}")

    def start(self) -> SeatClock:
        """A seat's clock at the start of the match: a full bank, no strike."""
        return SeatClock(float(self.bank_ms))

    def deadline(self, clock: SeatClock, asked: Instant) -> Instant:
        """When a request asked at ``asked`` times out: the decision limit or the bank left, the sooner."""
        return Instant(asked + min(self.decision_ms, clock.bank_ms) / 1000)

    def answer(self, clock: SeatClock, asked: Instant, received: Instant) -> Verdict:
        """An answer to the request asked at ``asked``, received at ``received``: ``IN_TIME`` or
        ``BANK_EMPTY``; the verdict's clock is charged the elapsed time."""
        elapsed = received - asked
        charged = _seat_clock(clock.bank_ms - elapsed * 1000, clock.strikes)
        return _verdict(Ruling.BANK_EMPTY if charged.bank_ms <= 0 else Ruling.IN_TIME, charged, elapsed)

    def time_out(self, clock: SeatClock, asked: Instant, now: Instant) -> Verdict:
        """The request asked at ``asked`` timed out at ``now``: the time charged and a strike counted;
        ``BANK_EMPTY`` before ``STRUCK_OUT`` before ``STRIKE``."""
        elapsed = now - asked
        after = SeatClock(clock.bank_ms - elapsed * 1000, clock.strikes + 1)
        if after.bank_ms <= 0:
            ruling = Ruling.BANK_EMPTY
        elif after.strikes >= self.max_strikes:
            ruling = Ruling.STRUCK_OUT
        else:
            ruling = Ruling.STRIKE
        return Verdict(ruling, after, elapsed)

    @staticmethod
    def time_left_ms(deadline: Instant, now: Instant) -> int:
        """Whole ms from ``now`` to ``deadline``, never below 0 (``DecisionRequest.time_left_ms``)."""
        return max(0, round((deadline - now) * 1000))

    @staticmethod
    def is_past(deadline: Instant, now: Instant) -> bool:
        """Has ``deadline`` come at ``now``? (A timer that fires earlier waits for it.)"""
        return now >= deadline

    @staticmethod
    def keeps_timer(timer_due: Instant | None, deadline: Instant) -> bool:
        """May the armed timer (due at ``timer_due``, ``None``: none armed) serve a new ``deadline``?

        One lazy timer serves many decisions: it is kept when it fires no later than the deadline
        (firing early, it re-arms for the pending deadline), and moved only for a sooner one. So a
        match of quick decisions sets about one timer per decision limit, not one per decision.
        """
        return timer_due is not None and timer_due <= deadline
