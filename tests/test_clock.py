"""The match clock's rules (referee/clock.py; docs/protocol.md, 4. Time, strikes and forfeits) as
tables of explicit times: no test here sleeps or reads the clock.

Every case starts from a seat's clock (bank left in ms, strikes), a request asked at ``asked`` and
an event at ``at`` (seconds on the monotonic clock), under ``decision_ms`` 2000, ``bank_ms`` 10000,
``max_strikes`` 3 unless it says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from referee.clock import ClockPolicy, Instant, Ruling, SeatClock, Verdict

POLICY = ClockPolicy(decision_ms=2000, bank_ms=10_000, max_strikes=3)


def t(seconds: float) -> Instant:
    return Instant(seconds)


@dataclass(frozen=True)
class Case:
    """A seat with ``bank_ms`` left and ``strikes``, asked at ``asked``, the event at ``at``: the
    expected ruling, bank left after it (ms) and strikes after it."""

    name: str
    bank_ms: float
    strikes: int
    asked: float
    at: float
    ruling: Ruling
    bank_after: float
    strikes_after: int


# ------------------------------------------------------------------ deadlines


@pytest.mark.parametrize(("bank_ms", "asked", "deadline"), [
    (10_000, 100.0, 102.0),   # a full bank: the decision limit
    (2000, 100.0, 102.0),     # bank equal to the limit
    (1200, 100.0, 101.2),     # less bank than the limit: the bank left is the deadline
    (0.5, 100.0, 100.0005),   # almost nothing left
])
def test_the_deadline_is_the_decision_limit_or_the_bank_left_the_sooner(bank_ms: float, asked: float,
                                                                         deadline: float) -> None:
    assert POLICY.deadline(SeatClock(bank_ms), t(asked)) == pytest.approx(deadline)


def test_a_seat_starts_with_a_full_bank_and_no_strike() -> None:
    assert POLICY.start() == SeatClock(10_000.0, 0)
    assert POLICY.start().bank_left_ms == 10_000


# ------------------------------------------------------------------ answers

ANSWERS = [
    Case("in time: its time is charged", 10_000, 0, 100.0, 100.25, Ruling.IN_TIME, 9750, 0),
    Case("at once: nothing charged", 10_000, 0, 100.0, 100.0, Ruling.IN_TIME, 10_000, 0),
    Case("late, inside the grace: past the decision limit but the timer has not fired, the bank pays",
         10_000, 0, 100.0, 102.5, Ruling.IN_TIME, 7500, 0),
    Case("in time after strikes: the strikes stay", 10_000, 2, 100.0, 100.5, Ruling.IN_TIME, 9500, 2),
    Case("the last ms of the bank: played", 1000, 0, 100.0, 100.999, Ruling.IN_TIME, 1, 0),
    Case("exactly when the bank runs out: not played", 1000, 0, 100.0, 101.0, Ruling.BANK_EMPTY, 0, 0),
    Case("after the bank ran out: not played", 5000, 1, 100.0, 106.0, Ruling.BANK_EMPTY, -1000, 1),
]


def check(v: Verdict, case: Case) -> None:
    """The verdict ``v`` is the one ``case`` expects: ruling, bank and strikes after, time taken."""
    assert v.ruling is case.ruling
    assert v.clock.bank_ms == pytest.approx(case.bank_after, abs=1e-6)
    assert v.clock.strikes == case.strikes_after
    assert v.elapsed == pytest.approx(case.at - case.asked)


@pytest.mark.parametrize("case", ANSWERS, ids=[c.name for c in ANSWERS])
def test_an_answer(case: Case) -> None:
    check(POLICY.answer(SeatClock(case.bank_ms, case.strikes), t(case.asked), t(case.at)), case)


def test_a_ruling_changes_no_clock_until_the_match_adopts_it() -> None:
    """A rejected (illegal) answer costs nothing: the seat's clock is the verdict's only once adopted."""
    clock = SeatClock(10_000.0, 1)
    v = POLICY.answer(clock, t(100.0), t(101.0))
    assert clock == SeatClock(10_000.0, 1) and v.clock == SeatClock(9000.0, 1)


# ------------------------------------------------------------------ timeouts

TIMEOUTS = [
    Case("first strike: the default is played", 10_000, 0, 100.0, 102.0, Ruling.STRIKE, 8000, 1),
    Case("second strike", 8000, 1, 100.0, 102.0, Ruling.STRIKE, 6000, 2),
    Case("third strike forfeits", 6000, 2, 100.0, 102.0, Ruling.STRUCK_OUT, 4000, 3),
    Case("the timer fired late: the whole wait is charged", 10_000, 0, 100.0, 102.3, Ruling.STRIKE, 7700, 1),
    Case("the bank runs out at its deadline", 1200, 0, 100.0, 101.2, Ruling.BANK_EMPTY, 0, 1),
    Case("an empty bank on the third strike: the bank is named", 1000, 2, 100.0, 101.0, Ruling.BANK_EMPTY, 0, 3),
]


@pytest.mark.parametrize("case", TIMEOUTS, ids=[c.name for c in TIMEOUTS])
def test_a_timeout(case: Case) -> None:
    check(POLICY.time_out(SeatClock(case.bank_ms, case.strikes), t(case.asked), t(case.at)), case)


def test_one_strike_allowed_forfeits_at_the_first_timeout() -> None:
    v = ClockPolicy(decision_ms=2000, bank_ms=10_000, max_strikes=1).time_out(SeatClock(10_000.0), t(0.0), t(2.0))
    assert v.ruling is Ruling.STRUCK_OUT


def test_a_match_of_answers_and_timeouts_gives_nothing_back() -> None:
    """A seat times out, answers in time twice, times out twice more: the third strike forfeits,
    whatever came in between; the bank only goes down."""
    clock, events = POLICY.start(), [("timeout", 0.0, 2.0), ("answer", 10.0, 10.5), ("answer", 20.0, 20.1),
                                      ("timeout", 30.0, 32.0), ("timeout", 40.0, 42.0)]
    rulings, banks = [], []
    for kind, asked, at in events:
        v = (POLICY.time_out if kind == "timeout" else POLICY.answer)(clock, t(asked), t(at))
        clock = v.clock
        rulings.append(v.ruling)
        banks.append(clock.bank_left_ms)
    assert rulings == [Ruling.STRIKE, Ruling.IN_TIME, Ruling.IN_TIME, Ruling.STRIKE, Ruling.STRUCK_OUT]
    assert banks == [8000, 7500, 7400, 5400, 3400]


# ------------------------------------------------------------------ what the seats are told


@pytest.mark.parametrize(("deadline", "now", "left_ms"), [
    (102.0, 100.0, 2000), (102.0, 101.9996, 0), (102.0, 101.9994, 1), (102.0, 102.0, 0), (102.0, 103.0, 0),
])
def test_time_left_is_whole_ms_never_below_zero(deadline: float, now: float, left_ms: int) -> None:
    assert ClockPolicy.time_left_ms(t(deadline), t(now)) == left_ms


@pytest.mark.parametrize(("bank_ms", "shown"), [(9750.4, 9750), (0.6, 1), (0.0, 0), (-1000.0, 0)])
def test_the_bank_left_is_whole_ms_never_below_zero(bank_ms: float, shown: int) -> None:
    assert SeatClock(bank_ms).bank_left_ms == shown


# ------------------------------------------------------------------ the one lazy deadline timer


@pytest.mark.parametrize(("timer_due", "deadline", "kept"), [
    (None, 102.0, False),    # no timer armed: arm one
    (102.0, 102.0, True),    # due at the deadline
    (102.0, 102.1, True),    # a quick answer, the next request's deadline later: the timer stays (fires early, re-arms)
    (104.0, 101.2, False),   # a sooner deadline (a seat short of bank after another's long limit): moved
])
def test_the_timer_is_kept_unless_a_deadline_comes_sooner(timer_due: float | None, deadline: float,
                                                          kept: bool) -> None:
    due = None if timer_due is None else t(timer_due)
    assert ClockPolicy.keeps_timer(due, t(deadline)) is kept


@pytest.mark.parametrize(("deadline", "fired", "past"), [
    (102.0, 101.9, False),   # fired early for an earlier request's deadline: re-arm, no timeout
    (102.0, 102.0, True),    # at the deadline: time out
    (102.0, 102.4, True),    # late (a busy loop): time out
])
def test_the_timer_times_out_only_past_the_deadline(deadline: float, fired: float, past: bool) -> None:
    assert ClockPolicy.is_past(t(deadline), t(fired)) is past


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ClockPolicy(decision_ms=0, bank_ms=1, max_strikes=1)
