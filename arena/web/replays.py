"""Finished games' replays kept in memory: a busy host with many visitors of one replay page replays its
record through the engine once, not at every request (5-10 ms of CPU for a 4-player game to 14, 107-199
frames, on one of the server's threads).

A replay is kept under its record's *version* and the ``view`` (:data:`arena.web.frames.ALL` or a seat: a
seat's view is never the all-hands view): the record file's resolved path, device, inode, modification
time (ns) and size, read from the open file. A record that changes (rewritten, or replaced by another
file) has another version and is replayed again; what was kept of the old one ages out. Only stored
games' records come here: a running game's spectator view (:mod:`arena.web.spectate`) is replayed at
every request from its live file, cut where the spectator must stop, and never kept.

Bounded (least recently used out first) by :data:`MAX_REPLAYS` replays and :data:`MAX_KEPT_FRAMES`
frames in all (a frame is about 5.6 KB in memory: some 110 MB at most). A kept :class:`Replay` is
shared by every request that asks for it: its readers must not change it (the pages and the API only
read it).
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from arena.web.data import NotFound, parse_record_text, record_file
from arena.web.frames import Replay, replay_frames

#: Most replays kept at once.
MAX_REPLAYS = 256
#: Most frames kept at once, over every kept replay (a 4-player game to 14 has 100-200).
MAX_KEPT_FRAMES = 20_000


@dataclass(frozen=True)
class RecordVersion:
    """What tells one version of a record file from any other: its resolved ``path``, ``device`` and
    ``inode``, modification time ``mtime_ns`` (ns) and ``size`` (bytes)."""

    path: str
    device: int
    inode: int
    mtime_ns: int
    size: int

    @classmethod
    def of(cls, path: Path, st: os.stat_result) -> RecordVersion:
        """The version of the file at ``path`` whose ``os.fstat`` is ``st``."""
        return cls(str(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


class ReplayCache:
    """Replays of record files, kept by :class:`RecordVersion` and view (see the module docstring).
    Thread-safe: the web answers on a pool of threads (two that miss together both replay; one is kept).

    :param max_replays: most replays kept.
    :param max_frames: most frames kept, over all of them (a replay with more is served, never kept).
    """

    def __init__(self, max_replays: int = MAX_REPLAYS, max_frames: int = MAX_KEPT_FRAMES) -> None:
        self.max_replays = max_replays
        self.max_frames = max_frames
        self._kept: OrderedDict[tuple[RecordVersion, str | int], Replay] = OrderedDict()
        self._frames = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    @property
    def frames(self) -> int:
        """Frames kept now, over every kept replay."""
        with self._lock:
            return self._frames

    def replay(self, inside: Path, path: Path, view: str | int) -> Replay:
        """The replay of the record file ``path`` (which must resolve to a regular file inside the folder
        ``inside``) in ``view``: the kept one of this version of the file, else replayed now and kept
        (unless the file changed while it was read).

        :raises NotFound: outside ``inside``, missing, not a regular file, or not JSON lines of objects.
        :raises arena.web.frames.RecordReplayError: a record that does not replay, or no such seat.
        """
        real = record_file(inside, path)
        try:
            # not blocking: a record swapped for a pipe after record_file's look is refused, not waited on
            with os.fdopen(os.open(real, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
                before = os.fstat(f.fileno())
                if not stat.S_ISREG(before.st_mode):
                    raise NotFound("no such record")
                key = (RecordVersion.of(real, before), view)
                kept = self._get(key)
                if kept is not None:
                    return kept
                text = f.read().decode("utf-8", errors="replace")
                after = os.fstat(f.fileno())
        except OSError:
            raise NotFound("no such record") from None
        replay = replay_frames(parse_record_text(text), view)
        if RecordVersion.of(real, after) == key[0]:  # else written to while read: serve it, keep nothing
            self._keep(key, replay)
        return replay

    def _get(self, key: tuple[RecordVersion, str | int]) -> Replay | None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
            return kept

    def _keep(self, key: tuple[RecordVersion, str | int], replay: Replay) -> None:
        """Keep ``replay``, the least recently used out first until both bounds hold."""
        size = len(replay["frames"])
        if size > self.max_frames or self.max_replays < 1:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._frames -= len(old["frames"])
            while self._kept and (len(self._kept) >= self.max_replays or self._frames + size > self.max_frames):
                _, dropped = self._kept.popitem(last=False)
                self._frames -= len(dropped["frames"])
            self._kept[key] = replay
            self._frames += size
