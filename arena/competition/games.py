"""A competitor's games and seat logs, read from the league's published files (the one place that
decides which games, seats and logs are a competitor's: the gRPC service and the web view both ask it).

A game is the competitor's when one of its sides is one of their entrants (``name@version``); their
seats are the seats of that side (:func:`referee.rules.seats.side_of`); a seat log is
``OUTPUT/logs/GAME_ID/seatK.log`` (:mod:`arena.play.game`), given only for their own seats
(:class:`NotYours` otherwise, whatever the game or seat named).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.tournament.game_logs import game_log_folder
from referee.rules.seats import side_of

#: Most bytes of a seat log handed out (its end).
LOG_BYTES = 512 * 1024


class NotYours(LookupError):
    """A game or seat that is not the competitor's (or does not exist); ``str(e)`` is one line."""


@dataclass(frozen=True, slots=True)
class MyGame:
    """One of a competitor's games: ``game_id``, the two sides' entrants ``a`` and ``b``, the game points
    ``scores`` of each side, ``winner`` (0, 1 or None), ``seats``: the competitor's seats in it, and
    ``recorded``: whether it has a match record (a replay; not a game forfeited before it was played)."""

    game_id: str
    a: str
    b: str
    scores: tuple[int, int]
    winner: int | None
    seats: tuple[int, ...]
    recorded: bool = True


@dataclass(frozen=True, slots=True)
class _Row:
    """What :func:`my_games` needs of one games.jsonl line (:class:`MyGame` without the seats)."""

    game_id: str
    a: str
    b: str
    scores: tuple[int, int]
    winner: int | None
    recorded: bool


#: Parsed games.jsonl files: path -> (its version: device, inode, size, mtime and ctime in ns; its rows). A publication
#: replaces the file (a new inode), so between two publications every call reads the rows parsed once:
#: a competitor asking again and again (ListGames, /me, a seat log) cost a parse of every stored game a
#: call in arena serve's process, beside the embedded referee. At most :data:`_CACHED_FILES` files.
_CACHE: dict[Path, tuple[tuple[int, ...], tuple[_Row, ...]]] = {}
_CACHED_FILES = 4
_CACHE_LOCK = threading.Lock()


def _rows(path: Path) -> tuple[_Row, ...]:
    """The rows of the games file ``path`` (empty when there is none), parsed once a version of the file."""
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            with _CACHE_LOCK:
                hit = _CACHE.get(path)
            if hit is not None and hit[0] == key:
                return hit[1]
            data = f.read().decode("utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return ()
    rows = tuple(_row(json.loads(line)) for line in data.splitlines())
    with _CACHE_LOCK:
        _CACHE.pop(path, None)
        while len(_CACHE) >= _CACHED_FILES:
            del _CACHE[next(iter(_CACHE))]  # the file parsed longest ago
        _CACHE[path] = (key, rows)
    return rows


def _row(row: Any) -> _Row:
    """One parsed games.jsonl line (the arena's own JSON: arena.tournament.result) as a :class:`_Row`."""
    scores = row.get("scores") or [0, 0]
    winner = row.get("winner")
    return _Row(str(row["game_id"]), str(row["a"]), str(row["b"]), (int(scores[0]), int(scores[1])),
                None if winner is None else int(winner), bool(row.get("record")))


def my_games(output: Path, entrants: Collection[str], players: int) -> list[MyGame]:
    """The games in ``OUTPUT/games.jsonl`` in which one of ``entrants`` played, oldest first (the file
    parsed once a publication: :func:`_rows`)."""
    if not entrants:
        return []
    out = []
    for r in _rows(output / "games.jsonl"):
        sides = (r.a, r.b)
        seats = tuple(k for k in range(players) if sides[side_of(k)] in entrants)
        if seats:
            out.append(MyGame(r.game_id, r.a, r.b, r.scores, r.winner, seats, r.recorded))
    return out


def hidden_versions(ranked: Sequence[str], owners: Mapping[str, str]) -> set[str]:
    """The entrants a board leaves out by default: every competitor's versions but the best-rated
    (``ranked``: the entrants best first; ``owners``: entrant -> competitor; entrants of no competitor,
    the house bots, always show)."""
    seen: set[str] = set()
    hidden = set()
    for name in ranked:
        owner = owners.get(name)
        if owner is None:
            continue
        if owner in seen:
            hidden.add(name)
        seen.add(owner)
    return hidden


def log_path(output: Path, game_id: str, seat: int) -> Path | None:
    """The log file of ``seat`` in the stored game ``game_id`` (any tournament name: ids come from
    games.jsonl, never a path of the caller's), or None when there is none (a game decided without
    its bots running, say) or it is a link."""
    folder = game_log_folder(output / "logs", game_id)
    path = None if folder is None else folder / f"seat{seat}.log"
    return path if path is not None and path.is_file() and not path.is_symlink() else None


def seat_log(output: Path, entrants: Collection[str], players: int, game_id: str, seat: int) -> bytes:
    """The end (at most :data:`LOG_BYTES`) of the log of ``seat`` in ``game_id``, if that seat was one of
    ``entrants``' (the game is looked up in games.jsonl: what the caller names builds no path).
    :raises NotYours: another's seat, an unknown game, or no log (one line)."""
    if not 0 <= seat < players:
        raise NotYours(f"no seat {seat} of a game {game_id!r}")
    game = next((g for g in my_games(output, entrants, players) if g.game_id == game_id), None)
    if game is None or seat not in game.seats:
        raise NotYours(f"seat {seat} of game {game_id} is not yours")
    path = log_path(output, game_id, seat)
    if path is None:
        raise NotYours(f"seat {seat} of game {game_id} has no log")
    with path.open("rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - LOG_BYTES))
        return f.read()
