"""A run loop stopped by Ctrl-C (arena/tournament/runner.py ``run_games``).

Ctrl-C in the run loop: the games in flight finish and are stored.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from arena.config import load_config
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
from arena.tournament.schedule import ScheduledGame

SIMULATED = """
[tournament]
name = "simulated"
players = 4
games_per_pairing = 6
concurrency = 2
master_seed = "{seed}"
output = "out"
[[bots]]
name = "a"
command = ["true"]
[[bots]]
name = "b"
command = ["true"]
[[bots]]
name = "c"
command = ["true"]
[[bots]]
name = "d"
command = ["true"]
"""


def test_games_in_flight_when_the_loop_is_interrupted_are_stored(tmp_path: Path) -> None:
    """Ctrl-C (a KeyboardInterrupt in the run loop's thread, here raised by ``on_result`` for the first
    game) waited for the games in flight (leaving the thread pool waits for them) and threw their results
    away: played, never stored. Now they are stored before the interrupt goes on."""
    cfg = tmp_path / "sim.toml"
    cfg.write_text(SIMULATED.format(seed="7c" * 32))
    t = open_tournament(load_config(cfg))
    release = threading.Event()

    class Held(SimulatedRunner):
        def play(self, game: ScheduledGame) -> GameResult:
            if game.game_id != t.schedule[0].game_id:
                assert release.wait(60)  # in flight until the interrupt
            return super().play(game)

    def on_result(result: GameResult, written: bool) -> None:
        if not release.is_set():
            release.set()
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_games(t.schedule, Held(), t.store, concurrency=3, on_result=on_result)
        assert sorted(t.store.stored_ids()) == sorted(g.game_id for g in t.schedule[:3])
    finally:
        t.store.close()
