"""The per-game bot logs (``OUTPUT/logs/<game id>/seat<k>.log``, each capped at ``bot_log_bytes``) are
kept for the newest ``tournament.bot_logs_kept_games`` stored games only (docs/tournament-config.md):
a per-game bot writes a new log every game, so a league of many games, or a bot that fills its log
every game, would otherwise fill the host's disk.

Only folders of *stored* games are removed, so no log of a game in flight (or of one a resumed run
plays again) is touched. The first call in a process sweeps every stored game beyond the window (a
lowered setting, or games stored by an older arena); each later call, made after a game is stored,
removes the few that the new games pushed out.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from arena.tournament.store import Store

#: Games pushed out of the window per call after the first: more than the games stored between two calls.
PUSHED_OUT = 16


def game_log_folder(logs: Path, game_id: str) -> Path | None:
    """``logs/<game_id>``, the folder of one game's seat logs, or None for an id that would name another
    folder (empty, ``.``, ``..``, a path, a NUL, or the bot check's and the workers' folders) or a link."""
    if game_id in ("", ".", "..", "check", "workers") or "/" in game_id or "\0" in game_id:
        return None
    folder = logs / game_id
    return None if folder.is_symlink() else folder


@dataclass
class GameLogs:
    """The window of kept per-game logs (``OUTPUT/logs``, beside the store) for ``keep`` games (0: all kept)."""

    keep: int
    swept: bool = False

    @classmethod
    def following(cls, current: GameLogs | None, keep: int) -> GameLogs:
        """``current`` while its window is ``keep`` games, else a new one (which sweeps again: a reload
        may lower the setting)."""
        return current if current is not None and current.keep == keep else cls(keep)

    def after_store(self, store: Store) -> int:
        """Remove the log folders of stored games beyond the newest :attr:`keep`; returns how many were
        removed. A folder already gone is no error; the first call looks at every stored game."""
        if self.keep <= 0:
            return 0
        ids = store.beyond_newest(self.keep, -1 if not self.swept else PUSHED_OUT)
        self.swept = True
        logs, removed = store.path.parent / "logs", 0
        for game_id in ids:
            folder = game_log_folder(logs, game_id)
            if folder is not None and folder.is_dir():
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        return removed
