"""Live files of running games, and what a spectator may see of them (delayed).

**Writing** (the arena, :class:`LiveLog`): while a game runs, ``<output>/live/<game id>.jsonl``
holds a header line ``{"type": "live", "game_id", "pair_id", "seat_names", "rules", "seed", "blind"}`` and
then one line per *action-like* public event the referee sent on ``Admin.WatchMatch``, in order:
``{"kind": "game_started", "game", "dealer"}``, ``{"kind": "deal_started", "game", "deal",
"dealer"}``, ``{"kind": <stood|begged|gave_one|ran_pack|card_played|card_exposed|called|passed>,
"game", "deal", "seat", "action"}`` and ``{"kind": "game_ended", "game", "scores", "winner",
"forfeited"}``. Lines reach the file a deal at a time: the events of a deal are held in memory and
written (one write) when the next deal starts or the game ends; the header and each
``deal_started`` line go out at once (a spectator is a deal behind anyway, so it sees the same, and
following a game costs one write per deal instead of one per card). The file is removed once the
game is over; files a killed run left are removed when the next run or serve of the folder starts
(:func:`remove_live_files`). It lives in the private output folder (0700): the ``seed`` gives every deck
(``referee.dealing.deck_for``), so spectators can be shown all hands — later.

**Reading** (``arena web``, :func:`spectator_replay`): the events become record lines (the decks
re-derived from the seed) and then viewer frames (:mod:`arena.web.frames`), all hands shown, cut so
that a spectator sees deal ``(g, d)`` only when **every game of its pair** (a duplicate pair's share
every deck; a remote entrant's pair, dealt independently, is held back alike) has either finished or
started at least ``delay`` later deals (default 1: a deal behind). A twin that has not started yet
holds the view back entirely (the two games of a pair are played one after the other, so the first is
watched once its twin caught up; with ``tournament.twins_together`` they run side by side and the view
follows both a deal behind).

**Blind** (``tournament.blind_seats``): a remote entry runs on its author's machine, which can read the
public pages while its game runs, so a page of a blind tournament's running game names no entrant: the
seats are "seat 0", "seat 1", ... (:func:`shown_names`, the referee's blind names) until the game is
stored, when its record and the games list name them. A game is shown blind when the tournament's facts
say ``blind_seats`` (the caller's ``blind``) or its header says ``blind`` (it was created blind). Its id
is hidden too (:func:`shown_id`): a game id holds its pairing's entrant numbers
(``<name>-p<i>-<j>-g<k>``, :mod:`arena.tournament.schedule`), which the stored games tie to names.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from allfours.v1 import referee_pb2 as pb
from referee.dealing import deck_for, parse_seed
from referee.events import Event

#: Folder of the live files, below the output folder.
LIVE_DIR = "live"
#: Deals a spectator stays behind by default.
DEFAULT_DELAY = 1
#: Games of one duplicate pair (arena/tournament/schedule.py).
PAIR_SIZE = 2
#: Largest live file read (a 4-player game to 14 is far below 1 MiB).
MAX_LIVE_BYTES = 8 << 20

#: The key of the ids pages give blind running games (:func:`shown_id`): random, this process's own (a
#: page's link to a running game lasts while the game runs; a key anyone knows would let them test guesses).
_ID_KEY = secrets.token_bytes(32)
#: How a blind running game's id starts on the pages.
BLIND_ID = "running-"

_ACTION_KINDS = ("stood", "begged", "gave_one", "ran_pack", "card_played", "card_exposed", "called", "passed")
#: The kinds :meth:`LiveLog.event` keeps (the replay derives the others: tricks won, points, ...).
LIVE_KINDS = ("game_started", "deal_started", *_ACTION_KINDS, "game_ended")
#: :data:`LIVE_KINDS` as ``allfours.v1.EventKind`` numbers: the arena converts only these events.
LIVE_KINDS_PB = frozenset(pb.EventKind.Value("EVENT_KIND_" + k.upper()) for k in LIVE_KINDS)


class LiveLog:
    """The live file of one running game (see the module docstring: written a deal at a time); a
    context manager that removes the file at the end. Written by one thread (the game's)."""

    def __init__(self, output: Path, game_id: str, pair_id: str, seat_names: Sequence[str], rules: Mapping[str, Any],
                 seed: bytes, blind: bool = False) -> None:
        folder = output / LIVE_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        self.path = folder / f"{game_id}.jsonl"
        fd = os.open(self.path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        self._file = os.fdopen(fd, "w", encoding="utf-8")
        self._held: list[str] = []  # lines of the deal being played, not yet written
        header = {"type": "live", "game_id": game_id, "pair_id": pair_id, "seat_names": list(seat_names),
                  "rules": dict(rules), "seed": seed.hex(), "started_at": round(time.time(), 3), "blind": blind}
        self._write(header, now=True)

    def _write(self, line: Mapping[str, Any], now: bool = False) -> None:
        """Hold ``line``; with ``now``, write every held line and it (one write, flushed)."""
        self._held.append(json.dumps(line, separators=(",", ":")) + "\n")
        if now:
            self._file.write("".join(self._held))
            self._file.flush()
            self._held.clear()

    def event(self, ev: Event) -> None:
        """Append one public event if it is one the replay needs (others are derived); written when
        the next deal starts or the game ends (the module docstring)."""
        k = ev.kind
        if k == "game_started":
            self._write({"kind": k, "game": ev.game, "dealer": ev.dealer})
        elif k == "deal_started":  # the deal before is over: it and this line go out now
            self._write({"kind": k, "game": ev.game, "deal": ev.deal, "dealer": ev.dealer}, now=True)
        elif k in _ACTION_KINDS:
            action = ev.action
            self._write({"kind": k, "game": ev.game, "deal": ev.deal, "seat": ev.seat, "action": str(action)})
        elif k == "game_ended":
            self._write({"kind": k, "game": ev.game, "scores": list(ev.scores), "winner": ev.winner,
                         "forfeited": ev.forfeited}, now=True)

    def close(self) -> None:
        """Close and remove the file (the game is over: its record takes over)."""
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def __enter__(self) -> LiveLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_live_files(output: Path) -> int:
    """Remove the live files in ``<output>/live``: those a killed run left (each holds its game's seed; a
    spectator would take it for a running game). Call it only while no game of ``output`` runs: at the
    start of ``arena run`` or ``arena serve``, holding the folder's lock. Returns how many were removed."""
    removed = 0
    for path in live_files(output).values():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


# ---------------------------------------------------------------------------------- reading


def _read(path: Path) -> list[dict[str, Any]]:
    """The lines of a live file (a torn last line, being written, is skipped); [] if unreadable."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_LIVE_BYTES)
    except OSError:
        return []
    out = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        try:
            o = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(o, dict):
            out.append(o)
    return out if out and out[0].get("type") == "live" else []


def live_files(output: Path) -> dict[str, Path]:
    """game id -> live file, for the files in ``<output>/live`` (names are never built from input)."""
    folder = output / LIVE_DIR
    try:
        entries = list(folder.iterdir())
    except OSError:
        return {}
    return {p.name[: -len(".jsonl")]: p for p in entries if p.name.endswith(".jsonl") and p.is_file()}


def shown_names(head: Mapping[str, Any], blind: bool, own: Collection[str] = ()) -> list[str]:
    """The seat names a page may show of the running game whose live file's header is ``head``: its
    ``seat_names``, or — when the game is blind (``blind``: the tournament's ``blind_seats``, or the
    header's own ``blind``) — "seat K" for each seat whose entrant is not one of ``own`` (a competitor's
    page names the competitor's own entries only)."""
    names = [str(n) for n in head.get("seat_names") or []]
    if not is_blind(head, blind):
        return names
    return [n if n in own else f"seat {k}" for k, n in enumerate(names)]


def is_blind(head: Mapping[str, Any], blind: bool) -> bool:
    """Whether the pages show the running game of header ``head`` blind: ``blind`` (the tournament's
    ``blind_seats``), or the game was created blind (its header's ``blind``)."""
    return blind or head.get("blind") is True


def shown_id(head: Mapping[str, Any], game_id: str, blind: bool) -> str:
    """The id the pages give running game ``game_id`` (header ``head``): itself, or when blind
    (:func:`is_blind`) :data:`BLIND_ID` and 16 hex digits of an HMAC of it under this process's random key,
    which names no pairing and cannot be guessed (the module docstring, Blind)."""
    if not is_blind(head, blind):
        return game_id
    return BLIND_ID + hmac.new(_ID_KEY, game_id.encode("utf-8"), hashlib.sha256).hexdigest()[:16]


def find_running(output: Path, shown: str, blind: bool) -> tuple[str, list[dict[str, Any]]] | None:
    """The running game a page calls ``shown`` (:func:`shown_id`): its game id and live file's lines;
    None if there is none (a blind game is never found by its own id: that would test a guessed pairing)."""
    for gid, path in sorted(live_files(output).items()):
        lines = _read(path)
        if lines and shown_id(lines[0], gid, blind) == shown:
            return gid, lines
    return None


def running_games(
    output: Path, stored: set[str] | None = None, *, blind: bool = False, own: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """The running games: ``[{"game_id", "pair_id", "seat_names", "deal", "game", "started_at"}]``
    (no seed), skipping ids in ``stored`` (a file left behind by a killed run). The ``seat_names`` are
    :func:`shown_names` and the ``game_id`` :func:`shown_id` (``blind``: the tournament's ``blind_seats``;
    a blind game's ``pair_id`` is None); with ``own`` (a competitor's entrants), only the games seating
    one of them, each with ``seats``: the seats they hold. In the order of the ids shown: a blind game's
    place in a list sorted by its own id would tell where its pairing comes in the schedule."""
    out = []
    for gid, path in sorted(live_files(output).items()):
        if stored and gid in stored:
            continue
        lines = _read(path)
        if not lines:
            continue
        head = lines[0]
        deals = [o for o in lines[1:] if o.get("kind") == "deal_started"]
        game = {
            "game_id": shown_id(head, gid, blind),
            "pair_id": None if is_blind(head, blind) else head.get("pair_id"),
            "seat_names": shown_names(head, blind, own or ()),
            "game": deals[-1].get("game") if deals else 0,
            "deal": deals[-1].get("deal") if deals else 0,
            "started_at": head.get("started_at"),
        }
        if own is not None:
            seats = [k for k, name in enumerate(head.get("seat_names") or []) if name in own]
            if not seats:
                continue
            game["seats"] = seats
        out.append(game)
    out.sort(key=lambda g: str(g["game_id"]))
    return out


def progress_mark(output: Path) -> int:
    """A number that changes when a live file grows (for the live-update stream)."""
    total = 0
    for path in live_files(output).values():
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


def record_lines(lines: Sequence[Mapping[str, Any]], seat_names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """A live file's lines as record lines (docs/record.md: header, game, deal with its deck, action,
    game_end) for :func:`arena.web.frames.replay_frames`; the header names the seats ``seat_names``
    (:func:`shown_names`) if given, else as the live file does.

    :raises ValueError: for a header without a valid seed.
    """
    head = lines[0]
    seed = parse_seed(str(head.get("seed", "")))
    names = list(seat_names) if seat_names is not None else head.get("seat_names")
    out: list[dict[str, Any]] = [{"type": "header", "rules": head.get("rules"), "seat_names": names, "games": 1}]
    for o in lines[1:]:
        k = o.get("kind")
        if k == "game_started":
            out.append({"type": "game", "game": o["game"], "dealer": o["dealer"]})
        elif k == "deal_started":
            deck = [str(c) for c in deck_for(seed, int(o["game"]), int(o["deal"]))]
            out.append({"type": "deal", "game": o["game"], "deal": o["deal"], "dealer": o["dealer"], "deck": deck})
        elif k in _ACTION_KINDS:
            out.append({"type": "action", "game": o["game"], "deal": o["deal"], "seat": o["seat"],
                        "action": o["action"], "out_of_turn": k == "card_exposed", "by": "bot"})
        elif k == "game_ended":
            out.append({"type": "game_end", "game": o["game"], "scores": o["scores"], "winner": o["winner"],
                        "forfeited": o.get("forfeited", False)})
    return out


def started_deals(lines: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(game, deal) of each deal started, in order."""
    return [(int(o["game"]), int(o["deal"])) for o in lines[1:] if o.get("kind") == "deal_started"]


def visible_cut(own: Sequence[Mapping[str, Any]], twins: Sequence[Sequence[tuple[int, int]] | None],
                delay: int) -> int:
    """How many record lines (of :func:`record_lines` of ``own``) a spectator may see.

    ``twins`` holds, for each *other* game of the pair, its started deals (running) or ``None``
    (finished). A deal is visible when this game and every running twin have started ``delay`` more
    deals after it; a pair whose twin has not started is hidden entirely (the caller passes ``[[]]``).
    """
    mine = started_deals(own)
    progress = [mine, *[t for t in twins if t is not None]]

    def visible(gd: tuple[int, int]) -> bool:
        return all(gd in deals and deals.index(gd) + delay < len(deals) for deals in progress)

    lines = record_lines(own)
    for n, o in enumerate(lines):
        if o["type"] == "deal" and not visible((int(o["game"]), int(o["deal"]))):
            return n
    return len(lines)
