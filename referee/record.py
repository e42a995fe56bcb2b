"""The match record: JSON lines, one object per line, each with a ``"type"`` (docs/record.md).

Line types, in the order they are written::

    header     protocol, engine_version, shuffle, match_id, rules, seat_names, games,
               seed_commitment, time_control, first_dealer (seat or null = by the cut)
    game       game (1-based), dealer (its first dealer), how ("cut", "given" or "continued")
    deal       game, deal (1-based), dealer, deck (52 card strings, top first)
    action     game, deal, seat, seq, action (notation: stand beg give run pass, "call TH" or a card),
               ms (time taken), by ("bot" or "timeout"), out_of_turn (a play that exposed the card)
    rejected   game, deal, seat, seq, action, reason (engine code or "protocol_error"), message, ms
    game_end   game, scores [side 0, side 1], winner (side), points [{deal, side, kind, value}],
               forfeited, deals
    result     status, winner, forfeited_side, games_won, seats [{seat, name, bot_name, bot_version,
               termination, detail, strikes, illegal, protocol_errors, bank_left_ms, bot_counts,
               connected_at_end (bool; absent in a record written before it: unknown)}]
    seed       seed (64 hex digits: the revealed match seed)

``python -m referee.verify RECORD`` replays a record (:mod:`referee.verify`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO, TypeAlias

#: Bumped when the record format changes; written in the header as ``record_version``.
RECORD_VERSION = 1

#: What a record line's field may hold: what ``json`` writes as JSON (a line read back is checked
#: field by field, :mod:`referee.verify`).
JsonValue: TypeAlias = bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"] | None


#: The most lines a :class:`RecordWriter` with ``flush_after`` queues before it flushes anyway.
MAX_QUEUED_LINES = 64

#: Compact JSON, as ``json.dumps(obj, separators=(",", ":"))`` gives, without building an encoder per line.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


class RecordError(ValueError):
    """A record that cannot be read: names the line number and the problem."""


class RecordWriter:
    """Collects a match's record lines in memory (and optionally appends them to a file).

    :param path: a file to write the lines to as they come (created or truncated, mode 0600), or ``None``.
    :param defer: how to run the formatting and file write later, e.g. ``loop.call_soon``; ``None``
        writes each line at once. The referee defers them so that formatting JSON and writing the
        file happen after the next DecisionRequest is on its way (off the decision's critical path,
        benchmarks/referee.py). Order is kept: lines are written in the order :meth:`write` was
        called, and :attr:`lines`, :meth:`flush` and :meth:`close` write everything queued first.
    :param on_file_error: called once with the ``OSError`` if writing the file fails (a full or
        failing disk). The file is then closed and left as it is; the lines in memory stay complete
        (GetRecord serves those), and no method raises for it.
    :param flush_after: with ``defer``, format and write only after a line of one of these types
        (or :data:`MAX_QUEUED_LINES` lines) rather than after every line: the referee flushes once a
        deal (``deal``, ``game_end``, ``result``), so a decision's line costs a dict, not a JSON
        encoding and a file write (benchmarks/referee.py; docs/architecture.md, The referee's speed).
        ``None`` (default): a flush is deferred as soon as a line is queued.
    :raises OSError: if ``path`` cannot be opened.
    """

    def __init__(self, path: Path | None = None,
                 defer: Callable[[Callable[[], None]], object] | None = None,
                 on_file_error: Callable[[OSError], None] | None = None,
                 flush_after: frozenset[str] | None = None) -> None:
        self._lines: list[str] = []
        self._queue: list[dict[str, JsonValue]] = []
        self._defer = defer
        self._flush_after = flush_after
        #: A deferred flush is on its way (no second one is asked for until it has run).
        self._flush_deferred = False
        self._on_file_error = on_file_error
        #: The error that stopped the file copy, if one did.
        self.file_error: OSError | None = None
        self._file = _open_private(path) if path is not None else None

    @property
    def lines(self) -> list[str]:
        """Every line so far (queued ones are written first)."""
        if self._queue:
            self.flush()
        return self._lines

    def write(self, type_: str, **fields: JsonValue) -> None:
        """Add one line ``{"type": type_, **fields}`` (compact JSON, keys in the given order)."""
        self._queue.append({"type": type_, **fields})
        if self._defer is None:
            self.flush()
        elif not self._flush_deferred and (self._flush_after is None or type_ in self._flush_after
                                           or len(self._queue) >= MAX_QUEUED_LINES):
            self._flush_deferred = True
            self._defer(self.flush)

    def flush(self) -> None:
        """Format the queued lines and append them (to the file too, flushed to the OS)."""
        self._flush_deferred = False
        queue, self._queue = self._queue, []
        if not queue:
            return
        lines = list(map(_ENCODE, queue))
        self._lines.extend(lines)
        if self._file is not None:
            try:
                self._file.write("".join(line + "\n" for line in lines))
                self._file.flush()
            except OSError as e:
                self._file_failed(e)

    def _file_failed(self, error: OSError) -> None:
        """Stop the file copy after ``error``: close the file (ignoring a second error) and report."""
        self.file_error = error
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):  # a second error adds nothing
                f.close()
        if self._on_file_error is not None:
            self._on_file_error(error)

    def close(self) -> None:
        """Write what is queued and close the file, if any. Lines stay available in :attr:`lines`.

        The writer then lets go of ``on_file_error`` (often a bound method of its owner): no
        reference cycle keeps a finished match in memory until the cyclic collector runs (rarely,
        once ``tune_gc`` has set it up; benchmarks/soak.py).
        """
        self.flush()
        if self._file is not None:
            f, self._file = self._file, None
            try:
                f.close()
            except OSError as e:
                self._file_failed(e)
        self._on_file_error = None


def _open_private(path: Path) -> TextIO:
    """Open ``path`` for writing (created or truncated) with permissions 0600: the record holds every
    deck order of a running match, which no other local user may read. :raises OSError:"""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
        return os.fdopen(fd, "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def read_record(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, object]]]:
    """Parse record lines into ``(line number, object)``; blank lines are skipped.

    :raises RecordError: naming the line for text that is not a JSON object with a ``type``.
    """
    for n, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise RecordError(f"line {n}: not JSON: {e}") from None
        if not isinstance(obj, dict) or "type" not in obj:
            raise RecordError(f"line {n}: expected a JSON object with a \"type\", got {text[:80]!r}")
        yield n, obj
