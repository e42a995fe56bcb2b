"""A running game for spectators: all hands, delayed (the rule is in :mod:`arena.report.live`)."""

from __future__ import annotations

from urllib.parse import quote

from arena.report import live
from arena.web.data import NotFound, WebData
from arena.web.frames import Replay, replay_frames


class SpectatorReplay(Replay):
    """A running game's :class:`Replay` so far, ``running`` (true), the ``delay_deals`` spectators are
    kept behind, ``hidden_from`` (the first step not shown: ``"game G deal D"``, None when all is shown)
    and the ``game_id``."""

    running: bool
    delay_deals: int
    hidden_from: str | None
    game_id: str


def _not_running(game_id: str) -> NotFound:
    """The 404 of a game that is not running, with the link a finished one would have (URL-encoded)."""
    return NotFound(f"no running game {game_id!r} (a finished game's replay is at /games/{quote(game_id, safe='')})")


def spectator_replay(data: WebData, shown: str, delay: int) -> SpectatorReplay:
    """The viewer data of the running game a page calls ``shown`` (its id, or a blind game's
    :func:`arena.report.live.shown_id`) up to what a spectator may see now, plus ``{"running": true,
    "hidden_from": "game G deal D" | None, "delay_deals": delay, "game_id": shown}``; the seats named
    "seat 0", "seat 1", ... when the tournament is blind (:func:`arena.report.live.shown_names`).

    :raises NotFound: when no game of that id is running (finished games are at ``/games/{id}``).
    """
    blind = data.blind()
    found = live.find_running(data.output, shown, blind)
    if found is None:
        raise NotFound(f"no running game {shown!r}") if shown.startswith(live.BLIND_ID) else _not_running(shown)
    game_id, own = found
    if data.stored_ids([game_id]):
        raise _not_running(shown) if shown == game_id else NotFound(f"no running game {shown!r}")
    files = live.live_files(data.output)
    pair = own[0].get("pair_id")
    stored = data.pair_games(str(pair)) if pair is not None else set()  # its pair's finished games
    twins: list[list[tuple[int, int]] | None] = [None for _ in stored]
    for gid, other in files.items():
        if gid != game_id and gid not in stored:
            lines = live._read(other)
            if lines and lines[0].get("pair_id") == pair:
                twins.append(live.started_deals(lines))
    while len(twins) < live.PAIR_SIZE - 1:
        twins.append([])  # a twin not started yet: it will deal the same decks (a duplicate pair's)
    lines = live.record_lines(own, live.shown_names(own[0], blind))
    cut = live.visible_cut(own, twins, delay)
    replay = replay_frames(lines[: max(cut, 1)])
    nxt = lines[cut] if cut < len(lines) else None
    return {
        **replay,
        "running": True,
        "delay_deals": delay,
        "hidden_from": None if nxt is None else f"game {nxt['game']} deal {nxt['deal']}",
        "game_id": shown,
    }
