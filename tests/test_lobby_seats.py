"""The lobby's seat wait (arena/lobby/seats.py) on explicit times: a table of moments, each with what the
lobby holds and the forfeits expected; nothing sleeps and no clock is read. And the run loop
(arena/tournament/runner.py ``run_games``) with a starter whose remote bot never comes (:class:`Absent`): a
served league returns with its games pending, a run that ends gives up on it once only they are left."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.config import load_config
from arena.lobby.seats import LOCAL_WORKER_START_S, LobbyBot, SeatWait
from arena.tournament.result import GameResult, Unplayed, forfeit_result
from arena.tournament.runner import (
    WAITING_KEY,
    Absent,
    SimulatedRunner,
    Start,
    open_tournament,
    run_games,
    waiting_facts,
)
from arena.tournament.schedule import ScheduledGame
from referee.outcome import Termination
from tests.configs import bots_toml


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


def absent(seats: int = 2, no_show_s: float = 10) -> LobbyBot:
    return LobbyBot(connected=0, seats=seats, no_show_s=no_show_s, absent=True)


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
    "a remote bot none of whose workers came has no clock; once one came, its leaving starts one": [
        Moment(0, {"a": absent()}, {}),
        Moment(1000, {"a": absent(), "b": remote(2)}, {}),
        Moment(1000, {"a": remote(2)}, {}),
        Moment(1001, {"a": remote(0)}, {}),
        Moment(1010, {"a": remote(0)}, {}),
        Moment(1011, {"a": remote(0)}, {"a": NO_SHOW_10}),
    ],
    "a bot no longer waited for as absent (a run that ends gave up) gets no_show_s from then": [
        Moment(0, {"a": absent()}, {}),
        Moment(500, {"a": remote(0)}, {}),
        Moment(509.9, {"a": remote(0)}, {}),
        Moment(510, {"a": remote(0)}, {"a": NO_SHOW_10}),
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


class NeverComes:
    """A :class:`arena.tournament.runner.Starter` whose remote bot ``ghost`` never has a worker: its games are
    :class:`Absent` until :meth:`give_up`, then forfeited (no_show) at once; the others are simulated."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        self.gave_up: list[list[str]] = []

    def start(self, game: ScheduledGame) -> Start:
        if "ghost" not in game.sides:
            return lambda: SimulatedRunner().play(game)
        if not self.gave_up:
            return Absent(("ghost",))
        return forfeit_result(game, {"ghost": Unplayed(Termination.NO_SHOW, "no_show: never came")})

    def give_up(self, bots: Collection[str]) -> str:
        self.gave_up.append(sorted(bots))
        return "given up on " + ", ".join(bots)

    def waiting(self) -> frozenset[str]:
        return frozenset() if self.gave_up else frozenset({"ghost"})


def test_the_run_loop_passes_over_a_remote_bot_that_never_came(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(f'[tournament]\nname = "late"\nplayers = 2\ngames_per_pairing = 2\n'
                                     f'master_seed = "{"5c" * 32}"\noutput = "out"\n' + bots_toml("a", "b", "ghost"))
    t = open_tournament(load_config(tmp_path / "t.toml"))
    try:
        starter, notes, stored = NeverComes(), [], []

        def on_result(r: GameResult, written: bool) -> None:
            stored.append(r)

        # a served league: the others are played, the ghost's stay pending (one line said), nothing given up
        assert run_games(t.schedule, starter, t.store, 2, on_result, continuous=True, on_note=notes.append) == 2
        assert {r.sides for r in stored} == {("a", "b"), ("b", "a")} and starter.gave_up == []
        assert [g for g in t.store.pending(t.schedule) if "ghost" not in g.sides] == []
        assert len(notes) == 1 and "'ghost' wait for their first worker" in notes[0], notes
        assert waiting_facts(t.store.get_meta(WAITING_KEY)) == ["ghost"]  # what the web's pages say
        # a run that ends: once only the ghost's games are left, it gives up on it (its line said), they forfeit
        notes.clear()
        assert run_games(t.store.pending(t.schedule), starter, t.store, 2, on_result, on_note=notes.append) == 4
        # said once, at the look that gave up (not also "passed over": nothing else is left); the forfeit warned of
        assert starter.gave_up == [["ghost"]] and notes == [
            "given up on ghost", "no worker of remote bot(s) 'ghost' connected in time: their games are forfeited "
            "(no_show)"], notes
        ghost = [r for r in stored if "ghost" in r.sides]
        assert len(ghost) == 4 and all(Termination.NO_SHOW in r.terminations for r in ghost)
        assert t.store.pending(t.schedule) == []
        assert waiting_facts(t.store.get_meta(WAITING_KEY)) == []  # given up on: no longer passed over
    finally:
        t.store.close()


class TwoNeverCome(NeverComes):
    """Neither remote bot's worker ever comes (a served league's look at them)."""

    def waiting(self) -> frozenset[str]:
        return frozenset({"ghost", "idle"})


def test_the_waiting_list_names_only_bots_with_games_left_and_a_new_run_starts_it_afresh(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(f'[tournament]\nname = "late"\nplayers = 2\ngames_per_pairing = 2\n'
                                     f'master_seed = "{"5c" * 32}"\noutput = "out"\n' + bots_toml("a", "b", "ghost"))
    config = load_config(tmp_path / "t.toml")
    t = open_tournament(config)
    try:
        # 'idle' has no game in this run (a remote bot whose games are all played): its games do not wait
        t.store.set_meta(WAITING_KEY, '["stale"]')
        games = [g for g in t.schedule if "ghost" not in g.sides]
        assert run_games(t.schedule, TwoNeverCome(), t.store, 2, lambda r, w: None, continuous=True) == len(games)
        assert waiting_facts(t.store.get_meta(WAITING_KEY)) == ["ghost"]
    finally:
        t.store.close()
    # a restart with no game to play (the list is written by a run loop only): the former list is not shown
    t = open_tournament(config)
    try:
        assert waiting_facts(t.store.get_meta(WAITING_KEY)) == []
    finally:
        t.store.close()


def test_the_published_files_mark_a_remote_bot_whose_games_wait_for_its_workers(tmp_path: Path) -> None:
    """The live pages and /api mark a remote bot whose games wait for its first worker; ratings.json and
    leaderboard.html did not say so, and a served league left with only such games, no game stored since its
    last publication, did not publish again when the list changed. Now both files carry it
    (``tournament.waiting``; the board's marker and its #waiting line), republished once the list moves."""
    import io
    import json

    from rich.console import Console

    from arena.report.publish import publish_tournament
    from arena.tournament.league import League

    path, out = tmp_path / "t.toml", tmp_path / "out"
    path.write_text(f'[tournament]\nname = "late"\nplayers = 2\ngames_per_pairing = 2\nmaster_seed = "{"5c" * 32}"\n'
                    'output = "out"\n' + bots_toml("a", "b", "ghost"))
    t = open_tournament(load_config(path))
    try:  # played before (the ghost's worker came then): all but the ghost's pairing with b
        assert run_games([g for g in t.schedule if set(g.sides) != {"ghost", "b"}], SimulatedRunner(), t.store) == 4
    finally:
        t.store.close()
    league = League(str(path), out, Console(file=io.StringIO()),
                    lambda t: publish_tournament(t, out, 0, None, reveal=False), lambda _: NeverComes())
    opened, first = threading.Event(), list[object]()

    def serve() -> None:  # as arena serve does, in one thread (the store's)
        try:
            league.open(load_config(path))
            assert league.tournament is not None
            league.publish(league.tournament)  # once open: nobody waits yet
            first.append(told())
            opened.set()
            league.serve()
        finally:
            league.close()

    def told() -> object:
        return json.loads((out / "ratings.json").read_text())["tournament"].get("waiting")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert opened.wait(60)
        deadline = time.monotonic() + 60
        while told() != ["ghost"] and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        league.request_stop()
        thread.join(60)
    assert first == [None] and told() == ["ghost"]
    board = (out / "leaderboard.html").read_text()
    assert '<td class="l bot">ghost <span class="waiting">waiting for its workers</span></td>' in board
    assert '<p class="meta" id="waiting">' in board and '<span class="bot">ghost</span>' in board
