"""arena/competition/reads.py: a competitor's reads a minute, a token bucket each (docs/competition.md,
"Limits"), on a clock the tests move: nothing sleeps."""

from __future__ import annotations

import pytest

from arena.competition import reads
from arena.competition.reads import ReadAllowance, burst, retry_after, wait_line


class Clock:
    """Seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("per_minute", "at_once"), [(1, 1), (4, 1), (7, 1), (8, 2), (120, 30), (1000, 250)])
def test_a_quarter_of_a_minutes_reads_may_come_at_once(per_minute: int, at_once: int) -> None:
    clock = Clock()
    allowance = ReadAllowance(per_minute, clock=clock)
    assert burst(per_minute) == at_once
    assert [allowance.take("eve") for _ in range(at_once)] == [0.0] * at_once
    wait = allowance.take("eve")
    assert wait == pytest.approx(60.0 / per_minute)  # the next one a refill away
    assert allowance.take("eve") == pytest.approx(wait)  # a refused read counts nothing


def test_reads_come_back_evenly_and_competitors_are_apart() -> None:
    clock = Clock()
    allowance = ReadAllowance(120, clock=clock)
    for _ in range(30):
        assert allowance.take("eve") == 0.0
    assert allowance.take("eve") == pytest.approx(0.5)
    assert allowance.take("dan") == 0.0  # another competitor's reads are their own
    clock.now += 0.25
    assert allowance.take("eve") == pytest.approx(0.25)
    clock.now += 0.25
    assert allowance.take("eve") == 0.0
    clock.now += 3600  # an hour idle fills the bucket, no more
    assert [allowance.take("eve") for _ in range(31)].count(0.0) == 30


def test_a_lower_limit_applies_at_once() -> None:
    """A host who lowers reads_per_minute (SIGHUP) does not leave a competitor the old burst."""
    clock = Clock()
    allowance = ReadAllowance(120, clock=clock)
    assert allowance.take("eve") == 0.0  # 29 left of the old 30
    assert allowance.take("eve", per_minute=4) == 0.0  # capped at the new burst (1), that one taken
    assert allowance.take("eve", per_minute=4) == pytest.approx(15.0)


def test_the_allowance_forgets_full_buckets_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reads, "REMEMBERED", 3)
    clock = Clock()
    allowance = ReadAllowance(60, clock=clock)
    for name in ("a", "b", "c"):
        allowance.take(name)
    clock.now += 60  # a, b and c are full again
    allowance.take("d")
    assert set(allowance._buckets) == {"d"}
    for name in ("e", "f"):
        allowance.take(name)
    allowance.take("g")  # none full: remembered all the same (competitors are the host's, so few)
    assert set(allowance._buckets) == {"d", "e", "f", "g"}


def test_the_refusal_is_one_line_with_whole_seconds() -> None:
    assert retry_after(0.01) == 1 and retry_after(14.2) == 15
    assert wait_line(4, 14.2) == ("too many reads: at most 4 a minute (reads_per_minute), 1 at once; "
                                  "try again in 15 s")
