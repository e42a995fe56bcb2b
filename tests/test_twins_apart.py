"""A duplicate pair's two games never run at once unless the config says the bots are trusted
(arena/tournament/runner.py, ``run_games``: "Twins apart"; ``tournament.twins_together``).

Each bot plays in both games of a pair, which deal the same cards with the sides swapped: two of its
processes at once could pass the other side's hand between them by the load they make. The runner
below records which games are in flight whenever one starts; the first game to start waits until a
second has started (or 20 s passed), so the test sees which game the run loop chose for the second
slot without timing anything."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arena.config import ConfigError, load_config
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
from arena.tournament.schedule import ScheduledGame, make_schedule, pair_games
from arena.tournament.store import Store
from tests.configs import INSTANT, bots_toml
from tests.server_helpers import ROOT


class Recording(SimulatedRunner):
    """A simulated game that notes the games in flight when it starts; the first holds its slot until
    a second game has started, so two are in flight together whenever the run loop allows it."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.in_flight: dict[str, ScheduledGame] = {}
        self.together: list[tuple[str, str]] = []  # (a game, a game in flight when it started)
        self.second = threading.Event()

    def play(self, game: ScheduledGame) -> GameResult:
        with self.lock:
            self.together += [(game.game_id, other) for other in self.in_flight]
            self.in_flight[game.game_id] = game
            if len(self.in_flight) >= 2:
                self.second.set()
        self.second.wait(20)
        try:
            return super().play(game)
        finally:
            with self.lock:
                del self.in_flight[game.game_id]


def _pairs(games: list[ScheduledGame]) -> dict[str, str]:
    return {g.game_id: g.pair_id for g in games}


def test_a_pairs_second_game_waits_and_another_pair_takes_the_slot(tmp_path: Path) -> None:
    schedule = make_schedule("t", ["a", "b", "c"], 2, 4, bytes(32))  # 3 pairings x 2 pairs, in pair order
    runner = Recording()
    with Store(tmp_path / "s.sqlite") as store:
        assert run_games(schedule, runner, store, concurrency=2) == len(schedule)
        assert store.count() == len(schedule)
    pair_of = _pairs(schedule)
    assert runner.together, "two games never ran at once: the slot was left idle"
    assert runner.together[0] == (schedule[2].game_id, schedule[0].game_id)  # the next pair's first game
    twins_at_once = [(a, b) for a, b in runner.together if pair_of[a] == pair_of[b]]
    assert twins_at_once == []


def test_twins_together_lets_a_trusted_pair_run_at_once(tmp_path: Path) -> None:
    schedule = make_schedule("t", ["a", "b"], 2, 2, bytes(32))
    runner = Recording()
    with Store(tmp_path / "s.sqlite") as store:
        run_games(schedule, runner, store, concurrency=2, twins_together=True)
    assert runner.together == [(schedule[1].game_id, schedule[0].game_id)]


def test_a_pair_dealt_from_two_seeds_is_not_held_apart(tmp_path: Path) -> None:
    """A pairing with a remote entrant deals its pair's second game from a seed of its own: the two
    games share no cards, so they may run at once."""
    games = pair_games("t", (0, "a"), (1, "remote"), 0, 2, bytes(32), independent=True)
    assert games[0].seed != games[1].seed
    runner = Recording()
    with Store(tmp_path / "s.sqlite") as store:
        run_games(games, runner, store, concurrency=2)
    assert runner.together == [(games[1].game_id, games[0].game_id)]


def _config(tmp_path: Path, line: str) -> Path:
    p = tmp_path / "t.toml"
    p.write_text(f'[tournament]\nname = "t"\nplayers = 2\nconcurrency = 2\n{line}\n' + bots_toml("a", "b"))
    return p


def test_the_config_key(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path, "")).twins_together is False
    cfg = load_config(_config(tmp_path, "twins_together = true"))
    assert cfg.twins_together is True
    with pytest.raises(ConfigError, match=r"tournament\.twins_together"):
        load_config(_config(tmp_path, 'twins_together = "yes"'))
    # how the twins are scheduled is not what the games are: a finished tournament may change it
    assert cfg.fingerprint() == load_config(_config(tmp_path, "")).fingerprint()
    t = open_tournament(cfg)
    t.store.close()


def test_arena_run_plays_each_pair_s_second_game_after_its_first_is_stored(tmp_path: Path) -> None:
    """A real ``arena run`` (bot processes, the embedded referee, concurrency 2): every stored game of a
    pair began after its twin was stored (a game starts at ``stored_at - duration_s`` at the latest)."""
    config = tmp_path / "cup.toml"
    config.write_text(
        '[tournament]\nname = "cup"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 2\noutput = "out"\n'
        '[tournament.rules]\ntarget = 3\n'
        + bots_toml("a", "b", "c", command=INSTANT, cwd=json.dumps(str(ROOT / "arena"))))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(config), "--no-progress", "--bootstrap", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    db = sqlite3.connect(tmp_path / "out" / "arena.sqlite")
    rows = db.execute("SELECT pair_id, game_id, stored_at, duration_s FROM games ORDER BY stored_at").fetchall()
    assert len(rows) == 12
    first_stored: dict[str, float] = {}
    for pair_id, game_id, stored_at, duration_s in rows:
        if pair_id in first_stored:
            assert stored_at - duration_s >= first_stored[pair_id], (game_id, "ran beside its twin")
        else:
            first_stored[pair_id] = stored_at
    assert len(first_stored) == 6
