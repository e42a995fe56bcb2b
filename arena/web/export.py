"""Static copies of the replay viewer, linked from the static ``leaderboard.html`` (offline publishing).

:func:`write_static_replays` writes ``<output>/replays/<game id>.html`` for each game with a record
— the viewer page with its frames (all hands) inline, and each seat's view (``<game id>.seat<K>.html``,
linked from it), ``app.css`` and ``viewer.js`` beside them — so the leaderboard and every replay open
from the file system (``file://``), without a server. A page is written again only when its game's
record changed (``replays/pages.json`` keeps the match and the record's size each page shows); pages
of games the store does not hold are removed. As on the live site, a game is exported only when both
games of its pair are stored (a duplicate pair's share every deal; a remote entrant's pair, two
independently dealt games, waits alike).
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.report.live import PAIR_SIZE
from arena.tournament.result import public_reason
from arena.web.data import NotFound, read_record_file
from arena.web.frames import ALL, RecordReplayError, replay_frames
from arena.web.render import HERE, templates

if TYPE_CHECKING:
    from jinja2 import Template

    from arena.tournament.result import GameRow

#: Folder of the static viewer pages, below the output folder.
REPLAYS_DIR = "replays"
#: The pages' index in that folder: game id -> ``{"match_id", "bytes"}``, the match and record size its pages show.
PAGES_INDEX = "pages.json"
_ASSETS = ("app.css", "viewer.js")
#: A page's file name: ``<game id>.html`` (all hands) or ``<game id>.seat<K>.html``; group 1 is the game id.
_PAGE = re.compile(r"(.*?)(?:\.seat\d+)?\.html(?:\.tmp)?")


class _Unreadable(Exception):
    """A record that gives no page; the message says why (one line)."""


def write_static_replays(
    output: Path, games: Sequence[GameRow], warn: Callable[[str], None] | None = None
) -> dict[str, str]:
    """Write the viewer pages of ``games`` (games.jsonl rows) that are missing or out of date; returns game
    id -> page path relative to ``output`` for every game that has one.

    A game's pages are written again when its record changed (another match: a game played again once
    its store was restored from before it; or another size: a record cut short), per :data:`PAGES_INDEX`.
    Pages of a game not exported (the store does not hold it, or not yet its twin) are removed. A record
    that cannot be read or replayed gets no page — a page made from the intact record of the same match
    stays — and ``warn`` gets one line naming the game and why (``python -m referee.verify`` says more).

    :raises OSError: if the folder cannot be written.
    """
    folder = output / REPLAYS_DIR
    pairs = Counter(str(g.get("pair")) for g in games)
    todo = [g for g in games if g.get("record") and pairs[str(g.get("pair"))] >= PAIR_SIZE]
    if not todo and not folder.is_dir():
        return {}
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in _ASSETS:
        shutil.copyfile(HERE / "static" / name, folder / name)
    page = templates().get_template("viewer.html")
    index = _read_index(folder)
    kept: dict[str, Any] = {}
    for g in todo:
        gid = str(g["game_id"])
        old = index.get(gid) if (folder / f"{gid}.html").is_file() else None
        try:
            key = {"match_id": str(g.get("match_id")), "bytes": _record_size(output, g)}
            if key != old:
                _write_pages(folder, gid, _render(output, g, page))
            kept[gid] = key
        except _Unreadable as e:
            same = isinstance(old, Mapping) and old.get("match_id") == str(g.get("match_id"))
            if same:
                kept[gid] = old
            if warn is not None:
                warn(f"game {gid}: its record {g['record']} cannot be read ({e}); "
                     + ("its replay page shows the record as it was" if same else "no replay page"))
    _remove_other_pages(folder, kept)
    _write(folder / PAGES_INDEX, json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return {gid: f"{REPLAYS_DIR}/{gid}.html" for gid in kept}


def _record_size(output: Path, game: GameRow) -> int:
    """The size of ``game``'s record file in bytes. :raises _Unreadable: it is not there."""
    try:
        return (output / str(game["record"])).stat().st_size
    except FileNotFoundError:
        raise _Unreadable("no such file") from None
    except OSError as e:
        raise _Unreadable(e.strerror or str(e)) from None


def _render(output: Path, game: GameRow, page: Template) -> dict[str | int, str]:
    """The pages of ``game``'s record: view (:data:`ALL` or a seat) -> HTML, its reasons without a bot's last
    output (:func:`arena.tournament.result.public_reason`: the pages are public, the output its author's).

    :raises _Unreadable: the record cannot be read, is cut short (no seed line last) or does not replay.
    """
    try:
        lines = read_record_file(output / "records", output / str(game["record"]))
        if not lines or lines[-1].get("type") != "seed":  # docs/record.md: always the last line
            raise _Unreadable("it ends before its seed line: cut short")
        views: list[str | int] = [ALL, *range(replay_frames(lines, ALL)["players"])]
        game = {**game, "reasons": [public_reason(r) for r in game["reasons"]]}
        return {v: page.render(replay=replay_frames(lines, v), game=game, view=v, static_copy=True, asset_base="")
                for v in views}
    except (NotFound, RecordReplayError) as e:
        raise _Unreadable(str(e)) from None
    except OSError as e:
        raise _Unreadable(e.strerror or str(e)) from None


def _write_pages(folder: Path, gid: str, pages: Mapping[str | int, str]) -> None:
    """Write a game's pages, the all-hands page last (it marks them done)."""
    for v, html in sorted(pages.items(), key=lambda p: p[0] == ALL):
        _write(folder / (f"{gid}.html" if v == ALL else f"{gid}.seat{v}.html"), html)


def _remove_other_pages(folder: Path, kept: Mapping[str, object]) -> None:
    """Remove every page (and half-written page) in ``folder`` of a game not in ``kept``."""
    for path in folder.iterdir():
        m = _PAGE.fullmatch(path.name)
        if m is not None and (m.group(1) not in kept or path.name.endswith(".tmp")):
            path.unlink(missing_ok=True)


def _read_index(folder: Path) -> dict[str, Any]:
    """:data:`PAGES_INDEX` (empty when missing or unreadable: every page is then written again)."""
    try:
        index = json.loads((folder / PAGES_INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return index if isinstance(index, dict) else {}


def _write(target: Path, html: str) -> None:
    """Write ``html`` to ``target`` at once (a reader never sees half a page)."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
