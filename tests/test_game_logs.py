"""Per-game bot logs are kept for the newest ``tournament.bot_logs_kept_games`` stored games
(arena/tournament/game_logs.py): a per-game bot writes a new ``logs/<game id>/`` every game, so a long
league's logs (or a bot filling its 1 MiB log every game) would otherwise fill the host's disk.
Only stored games' folders go; the lobby workers' and the bot check's folders, and a game in flight,
stay. Played by the simulated runner and by `arena run` with real bot processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from arena.config import load_config
from arena.tournament.game_logs import GameLogs
from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
from tests.configs import INSTANT, bots_toml

ROOT = Path(__file__).resolve().parent.parent


def config_text(keep: int | None, games: int = 6, command: str = '["true"]', unsandboxed: bool = False) -> str:
    kept = "" if keep is None else f"bot_logs_kept_games = {keep}\n"
    bots = bots_toml("a", "b", command=command, sandbox='"none"') if unsandboxed else bots_toml("a", "b")
    return (f'[tournament]\nname = "logs"\nplayers = 2\ngames_per_pairing = {games}\nmaster_seed = "{"3a" * 32}"\n'
            f'output = "out"\n{kept}' + bots)


def with_logs(out: Path, game_ids: list[str]) -> None:
    for gid in game_ids:
        (out / "logs" / gid).mkdir(parents=True, exist_ok=True)
        (out / "logs" / gid / "seat0.log").write_text("hello\n")


def test_the_newest_stored_games_keep_their_logs_and_older_ones_go(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text(keep=2, games=6))
    config = load_config(tmp_path / "t.toml")
    t = open_tournament(config)
    out = config.output
    try:
        first, rest = t.schedule[:4], t.schedule[4:]
        run_games(first, SimulatedRunner(), t.store, 1)
        with_logs(out, [g.game_id for g in t.schedule])  # the last two are not stored: as if in flight
        for other in ("check/bot0", "workers/a"):
            (out / "logs" / other).mkdir(parents=True)
        logs = GameLogs(config.bot_logs_kept_games)
        assert logs.after_store(t.store) == 2  # the sweep: 4 stored, the newest 2 kept
        kept = {p.name for p in (out / "logs").iterdir()}
        assert kept == {"check", "workers", *(g.game_id for g in first[2:]), *(g.game_id for g in rest)}
        for g in rest:  # each game stored, then the window moves on by one
            run_games([g], SimulatedRunner(), t.store, 1)
            assert logs.after_store(t.store) == 1
        assert {p.name for p in (out / "logs").iterdir()} == {"check", "workers", *(g.game_id for g in rest)}
        assert (out / "logs" / "check" / "bot0").is_dir() and (out / "logs" / "workers" / "a").is_dir()
    finally:
        t.store.close()


def test_zero_keeps_every_games_logs(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text(keep=0, games=4))
    config = load_config(tmp_path / "t.toml")
    t = open_tournament(config)
    try:
        run_games(t.schedule, SimulatedRunner(), t.store, 1)
        with_logs(config.output, [g.game_id for g in t.schedule])
        assert GameLogs(config.bot_logs_kept_games).after_store(t.store) == 0
        assert len(list((config.output / "logs").iterdir())) == 4
    finally:
        t.store.close()


def test_the_default_keeps_2000_games_and_a_bad_value_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text(keep=None))
    assert load_config(tmp_path / "t.toml").bot_logs_kept_games == 2000
    (tmp_path / "t.toml").write_text(config_text(keep=-1))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(tmp_path / "t.toml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "tournament.bot_logs_kept_games: must be >= 0 (got -1)" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_arena_run_of_real_bots_keeps_the_logs_of_its_newest_games(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text(keep=2, games=6, command=INSTANT, unsandboxed=True))
    done = subprocess.run([sys.executable, "-m", "arena.cli", "run", str(tmp_path / "t.toml"), "--no-progress",
                           "--bootstrap", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = tmp_path / "out"
    with sqlite3.connect(out / "arena.sqlite") as db:
        newest = {r[0] for r in db.execute("SELECT game_id FROM games ORDER BY stored_at DESC, game_id DESC LIMIT 2")}
    games = {p.name for p in (out / "logs").iterdir() if p.name not in ("check", "workers")}
    assert games == newest and len(games) == 2, (games, newest)
    assert all((out / "logs" / g / "seat0.log").is_file() for g in games)


def test_a_served_league_keeps_the_logs_of_its_newest_games(tmp_path: Path) -> None:
    """`arena serve`'s league (arena/tournament/league.py) applies the window after each stored game:
    its runner writes a log folder per game, and once every game is played only the newest stay."""
    import io

    from rich.console import Console

    from arena.tournament.league import League
    from arena.tournament.result import GameResult
    from arena.tournament.schedule import ScheduledGame

    (tmp_path / "t.toml").write_text(config_text(keep=3, games=10))
    config = load_config(tmp_path / "t.toml")
    out = config.output

    class LoggingRunner(SimulatedRunner):
        def play(self, game: ScheduledGame) -> GameResult:
            with_logs(out, [game.game_id])
            return super().play(game)

    def publish(t: object) -> None:
        if league.tournament is not None and league.tournament.store.count() == 10:
            league.request_stop()

    league = League(str(tmp_path / "t.toml"), out, Console(file=io.StringIO()), publish, lambda _: LoggingRunner())
    league.open(config)
    try:
        league.serve()
        newest = set(league.tournament.store.beyond_newest(0, 3)) if league.tournament else set()
    finally:
        league.close()
    assert len(newest) == 3 and {p.name for p in (out / "logs").iterdir()} == newest
