"""Serving an in-process :class:`arena.tournament.league.League` in a test (tests/test_league_reload.py,
tests/test_blind_held.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from arena.config import load_config
from arena.tournament.league import AfterGame, League


def serve_until_stopped(league: League, path: Path, after: AfterGame,
                        opened: Callable[[League], None] = lambda _: None) -> None:
    """Open ``league`` on the config file at ``path``, call ``opened`` (the test's look before play), and
    serve it until ``after`` (called after each stored game) stops it; then close it, whatever was raised."""
    league.after_game.append(after)
    league.open(load_config(str(path)))
    try:
        opened(league)
        league.serve()
    finally:
        league.close()
