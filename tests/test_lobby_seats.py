"""The lobby's seat wait (arena/lobby/seats.py) on explicit times: a table of moments, each with what the
lobby holds and the forfeits expected; nothing sleeps and no clock is read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from arena.lobby.seats import LOCAL_WORKER_START_S, LobbyBot, SeatWait


@dataclass(frozen=True)
class Moment:
    """At ``now`` seconds the lobby holds ``bots``; ``forfeits`` is what :meth:`SeatWait.check` says."""

    now: float
    bots: dict[str, LobbyBot]
    forfeits: dict[str, str]


def remote(connected: int, seats: int = 2, no_show_s: float = 10) -> LobbyBot:
    return LobbyBot(connected=connected, seats=seats, no_show_s=no_show_s)


def pool(connected: int, seats: int = 2, no_show_s: float = 10) -> LobbyBot:
    return LobbyBot(connected=connected, seats=seats, no_show_s=no_show_s, local_pool=True)


NO_SHOW_10 = "no_show: too few workers connected for 10 s"

CASES: dict[str, list[Moment]] = {
    "enough workers: nothing forfeits, however late": [
        Moment(0, {"a": remote(2)}, {}),
        Moment(1000, {"a": remote(3)}, {}),
    ],
    "short the whole wait: the wait expires at exactly no_show_s": [
        Moment(100, {"a": remote(1)}, {}),
        Moment(109.9, {"a": remote(1)}, {}),
        Moment(110, {"a": remote(1)}, {"a": NO_SHOW_10}),
        Moment(500, {"a": remote(0)}, {"a": NO_SHOW_10}),
    ],
    "a worker returns in time: no forfeit, and the next shortage waits afresh": [
        Moment(0, {"a": remote(1)}, {}),
        Moment(9, {"a": remote(2)}, {}),
        Moment(15, {"a": remote(1)}, {}),
        Moment(24, {"a": remote(1)}, {}),
        Moment(25, {"a": remote(1)}, {"a": NO_SHOW_10}),
    ],
    "one worker more but still short: the wait goes on": [
        Moment(0, {"a": remote(0)}, {}),
        Moment(6, {"a": remote(1)}, {}),
        Moment(10, {"a": remote(1)}, {"a": NO_SHOW_10}),
    ],
    "a local pool gets its processes' start time, whatever no_show_s says": [
        Moment(0, {"p": pool(0, no_show_s=5)}, {}),
        Moment(LOCAL_WORKER_START_S - 0.5, {"p": pool(0, no_show_s=5)}, {}),
        Moment(LOCAL_WORKER_START_S, {"p": pool(1, no_show_s=5)},
               {"p": f"no_show: too few workers connected for {LOCAL_WORKER_START_S} s"}),
    ],
    "a local pool with a longer no_show_s waits that long": [
        Moment(0, {"p": pool(0, no_show_s=45)}, {}),
        Moment(44, {"p": pool(0, no_show_s=45)}, {}),
        Moment(45, {"p": pool(0, no_show_s=45)}, {"p": "no_show: too few workers connected for 45 s"}),
    ],
    "a broken bot forfeits at once, even with its workers connected": [
        Moment(0, {"a": LobbyBot(2, 2, 10, broken="3 deaths in a row")}, {"a": "broken: 3 deaths in a row"}),
    ],
    "each bot waits on its own clock; only the late one forfeits": [
        Moment(0, {"a": remote(1), "b": remote(2)}, {}),
        Moment(5, {"a": remote(1), "b": remote(1)}, {}),
        Moment(10, {"a": remote(1), "b": remote(1)}, {"a": NO_SHOW_10}),
        Moment(15, {"a": remote(2), "b": remote(1)}, {"b": NO_SHOW_10}),
    ],
    "a bot holding both seats of a side needs two workers": [
        Moment(0, {"a": remote(1, seats=2, no_show_s=0)}, {"a": "no_show: too few workers connected for 0 s"}),
        Moment(0, {"b": remote(1, seats=1, no_show_s=0)}, {}),
    ],
}


@pytest.mark.parametrize("case", list(CASES))
def test_seat_wait(case: str) -> None:
    wait = SeatWait()
    for m in CASES[case]:
        got = wait.check(m.now, m.bots)
        assert {bot: u.why for bot, u in got.items()} == m.forfeits, (case, m.now)
        assert all(u.why.startswith(f"{u.termination}: ") for u in got.values()), got


def test_the_wait_is_a_property_of_the_bot() -> None:
    assert remote(0, no_show_s=7).wait_s == 7
    assert pool(0, no_show_s=7).wait_s == LOCAL_WORKER_START_S
    assert pool(0, no_show_s=LOCAL_WORKER_START_S + 1).wait_s == LOCAL_WORKER_START_S + 1
