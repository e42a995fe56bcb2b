"""When `arena serve` republishes (arena/tournament/league.py, PUBLISH_SPACING): a publication rates and writes
every stored game, so after every game it would cost the league a time that grows with its size (quadratic
over its life). While games are played, one is due once the time since the last ended is at least
PUBLISH_SPACING times what it took; at rest, or when the service stops, every stored game is published.

In-process League with a simulated runner and a clock that moves only when the test says so (a game or a
publication "takes" a second): the publications' game counts are exact, no time is measured.
"""

from __future__ import annotations

import io
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from arena.config import TournamentConfig, parse_config
from arena.tournament import league as league_module
from arena.tournament.league import PUBLISH_SPACING, League
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, Tournament
from arena.tournament.schedule import ScheduledGame

BOTS = 5  # 10 pairings
GAMES_PER_PAIRING = 4  # 40 games


class Clock:
    """Monotonic seconds that advance only by :meth:`advance` (the league's ``time`` module in these tests)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return time.time()

    def advance(self, seconds: float) -> None:
        self.now += seconds


class TimedRunner:
    """:class:`SimulatedRunner` whose every game takes ``game_s`` seconds of the fake clock."""

    def __init__(self, clock: Clock, game_s: float) -> None:
        self.clock, self.game_s, self.inner = clock, game_s, SimulatedRunner()

    def play(self, game: ScheduledGame) -> GameResult:
        self.clock.advance(self.game_s)
        return self.inner.play(game)


def config(tmp: Path) -> TournamentConfig:
    data = {
        "tournament": {"name": "pub", "players": 2, "games_per_pairing": GAMES_PER_PAIRING, "concurrency": 1,
                       "output": str(tmp / "out"), "master_seed": "00" * 32},
        "bots": [{"name": f"b{k}", "command": ["true"], "cwd": str(tmp)} for k in range(BOTS)],
    }
    return parse_config(data, str(tmp / "league.toml"), tmp)


def serve(tmp: Path, monkeypatch: pytest.MonkeyPatch, game_s: float, stop_after: int | None = None) -> list[int]:
    """Serve the league until every game is published (or ``stop_after`` games are stored: then a stop is
    asked); each publication takes one second. Returns the stored games each publication saw."""
    clock = Clock()
    monkeypatch.setattr(league_module, "time", SimpleNamespace(monotonic=clock.monotonic, time=clock.time))
    seen: list[int] = []
    total = BOTS * (BOTS - 1) // 2 * GAMES_PER_PAIRING

    def publish(t: Tournament) -> None:
        clock.advance(1.0)
        seen.append(t.store.count())
        if seen[-1] == total:
            league.request_stop()

    def stored(_: GameResult, t: Tournament) -> None:
        if t.store.count() == stop_after:
            league.request_stop()

    cfg = config(tmp)
    league = League(str(tmp / "league.toml"), tmp / "out", Console(file=io.StringIO()), publish,
                    lambda _: TimedRunner(clock, game_s))
    league.after_game.append(stored)
    league.open(cfg)
    try:
        league.serve()
    finally:
        league.close()
    return seen


def test_a_league_whose_games_take_no_time_publishes_the_first_game_then_all_at_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert serve(tmp_path, monkeypatch, game_s=0.0) == [1, 40]  # before: after every game, [1, 2, ..., 40]


def test_a_busy_league_publishes_once_the_spacing_since_the_last_publication_has_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one game a second, one second a publication: the next one is due PUBLISH_SPACING seconds after the last ended
    step = int(PUBLISH_SPACING)
    assert serve(tmp_path, monkeypatch, game_s=1.0) == [*range(1, 40, step), 40]


def test_a_stop_while_games_are_played_publishes_every_game_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert serve(tmp_path, monkeypatch, game_s=0.0, stop_after=5) == [1, 5]  # before: [1, 2, 3, 4, 5]
