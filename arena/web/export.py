"""Static copies of the replay viewer, linked from the static ``leaderboard.html`` (offline publishing).

:func:`write_static_replays` writes ``<output>/replays/<game id>.html`` for each game with a record
— the viewer page with its frames (all hands) inline, and each seat's view (``<game id>.seat<K>.html``,
linked from it), ``app.css`` and ``viewer.js`` beside them — so
the leaderboard and every replay open from the file system (``file://``), without a server. A page
is written once (records do not change). As on the live site, a game is exported only when both
games of its pair are stored (a duplicate pair's share every deal; a remote entrant's pair, two
independently dealt games, waits alike).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arena.report.live import PAIR_SIZE
from arena.web.data import NotFound, read_record_file
from arena.web.frames import ALL, RecordReplayError, replay_frames
from arena.web.render import HERE, templates

if TYPE_CHECKING:
    from arena.tournament.result import GameRow

#: Folder of the static viewer pages, below the output folder.
REPLAYS_DIR = "replays"
_ASSETS = ("app.css", "viewer.js")


def write_static_replays(output: Path, games: Sequence[GameRow]) -> dict[str, str]:
    """Write the missing viewer pages of ``games`` (games.jsonl rows); returns game id -> page path
    relative to ``output`` for every game that has one. A record that cannot be read or replayed is
    skipped (``python -m referee.verify`` says why).

    :raises OSError: if the folder cannot be written.
    """
    folder = output / REPLAYS_DIR
    pairs = Counter(str(g.get("pair")) for g in games)
    todo = [g for g in games if g.get("record") and pairs[str(g.get("pair"))] >= PAIR_SIZE]
    if not todo:
        return {}
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in _ASSETS:
        shutil.copyfile(HERE / "static" / name, folder / name)
    page = templates().get_template("viewer.html")
    out: dict[str, str] = {}
    for g in todo:
        gid = str(g["game_id"])
        target = folder / f"{gid}.html"
        if not target.exists():
            try:
                lines = read_record_file(output / "records", output / str(g["record"]))
                views = [ALL, *range(replay_frames(lines, ALL)["players"])]
                pages = {v: page.render(replay=replay_frames(lines, v), game=g, view=v, static_copy=True,
                                        asset_base="") for v in views}
            except (NotFound, RecordReplayError, OSError):
                continue
            for v, html in sorted(pages.items(), key=lambda p: p[0] == ALL):  # the all-hands page last:
                _write(folder / (f"{gid}.html" if v == ALL else f"{gid}.seat{v}.html"), html)  # it marks done
        out[gid] = f"{REPLAYS_DIR}/{gid}.html"
    return out


def _write(target: Path, html: str) -> None:
    """Write ``html`` to ``target`` at once (a reader never sees half a page)."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
