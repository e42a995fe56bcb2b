"""What one publication derives from each stored game, kept for the next (:class:`PublishCache`).

``arena serve`` publishes its league again and again as it grows
(:func:`arena.report.publish.publish_tournament`), and most of a publication's work is per stored game:
reading and parsing it, its games.jsonl row and line, its rating input, its failures, its row of the
static leaderboard's games table; and over the games so far, the rating history's checkpoints and the
duplicate efficiency's bootstrap. A stored game never changes (the store writes a row once; a game played
again after its store was restored from a backup is another storing:
:meth:`arena.tournament.store.Store.stamps`), so the cache keeps what it derived from each game by its
stamp: a publication reads the stamps of the stored games (one query), the games it has not seen, and
forgets those the store no longer holds (then its failure totals are added up again). A blind tournament's
games held back (:mod:`arena.report.held`) stay in the cache; :meth:`PublishCache.hold` leaves them out of
what is published, and its failure totals count each game from when it is shown. The rating history
keeps its checkpoints over the same first games (in the history's order) for the same entrants, and the
duplicate efficiency (the precision section's) its measure while the complete duplicate pairs are the same.

The web (:class:`arena.web.data.WebData`, ``arena web`` and ``arena serve --web``) keeps one as well, read through
its read-only connection (:class:`arena.tournament.store.GamesReader`): its pages' ratings, failures and
forfeits are derived from the games it keeps, and only the games stored since its last read are read.

What is published depends on the store alone: it is the same, byte for byte, with a cache kept across
publications as with a new one (``arena run``'s one publication, the first after ``arena serve`` starts,
or resumes after a crash); tests/test_publish_cache.py compares them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from arena.formats.duplicate import PRECISION_RESAMPLES, Efficiency, complete_pairs, pairs_efficiency
from arena.ratings.fit import Game, HistoryPoint, history_marks, history_point, parse_game, unrated
from arena.report.failures import Failures, of_game
from arena.tournament.result import GameResult, GameRow
from arena.tournament.store import GamesReader

if TYPE_CHECKING:
    from arena.web.render import GameRowsHtml


@dataclass(frozen=True, slots=True)
class StoredGame:
    """One stored game and what a publication derives from it: its games.jsonl ``row`` and ``line``
    (with its newline), its rating input ``game`` (``None``: a game without a winner, not rated) and its
    bots' ``failures`` (:func:`arena.report.failures.of_game`; not to be changed)."""

    result: GameResult
    row: GameRow
    line: str
    game: Game | None
    failures: dict[str, Failures]

    @classmethod
    def of(cls, result: GameResult) -> StoredGame:
        """Derive everything from ``result``."""
        row = result.rating_row()
        return cls(result, row, json.dumps(row, sort_keys=True) + "\n", None if unrated(row) else parse_game(row),
                   of_game(result))


class PublishCache:
    """What the publications of one output folder derived from its stored games, kept for the next
    (see the module docstring). For one publisher at a time (not thread-safe).

    :attr:`rows` is the static leaderboard's games table (:class:`arena.web.render.GameRowsHtml`).
    """

    def __init__(self) -> None:
        self._games: dict[str, tuple[tuple[str, float], StoredGame]] = {}  # game id -> (its stamp, the game)
        self._failures: dict[str, Failures] = {}  # per bot, over the games of _counted
        self._counted: set[str] = set()  # the games whose failures _failures holds
        self._order: list[StoredGame] = []  # the last read's games, in its order
        self._history: tuple[tuple[str, ...], list[Game], list[HistoryPoint]] = ((), [], [])
        self._efficiency: tuple[dict[tuple[str, str], np.ndarray], Efficiency | None] | None = None
        from arena.web.render import GameRowsHtml  # Jinja, imported when a publication is made

        self.rows: GameRowsHtml = GameRowsHtml()

    def read(self, store: GamesReader, order: Iterable[str] = ()) -> list[StoredGame]:
        """Every game stored in ``store`` now (a :class:`arena.tournament.store.Store`, or a read-only
        connection's reader: the web's), in the order of the game ids ``order`` (a schedule's; the web's:
        by stored time), the others after them by id: as :meth:`arena.tournament.store.Store.results`
        orders them. Reads only the games not read before."""
        stamps = store.stamps()
        gone = [gid for gid, (stamp, _) in self._games.items() if stamps.get(gid) != stamp]
        for gid in gone:
            del self._games[gid]
        if gone:  # counts cannot be taken back out of a total: add them up again
            self._failures, self._counted = {}, set()
        for result in store.results_of([gid for gid in stamps if gid not in self._games]):
            self._games[result.game_id] = ((result.match_id, result.stored_at or 0.0), StoredGame.of(result))
        rank = {gid: k for k, gid in enumerate(order)}
        self._order = [self._games[gid][1] for gid in sorted(self._games, key=lambda g: (rank.get(g, len(rank)), g))]
        return list(self._order)

    def hold(self, held: Collection[str]) -> list[StoredGame]:
        """The games of the last :meth:`read` but those of ``held`` (game ids: a blind tournament's games
        held back, :mod:`arena.report.held`), which the publication then leaves out: :meth:`failures`
        counts them no more, until a read and a hold without them. The cache keeps them."""
        if held:
            self._order = [g for g in self._order if g.result.game_id not in held]
        return list(self._order)

    def _count_failures(self) -> None:
        """Make :attr:`_failures` the totals over the games of the last read (and hold): add the new ones; add
        all up again when one counted is no longer among them (gone from the store, or held once more)."""
        shown = {g.result.game_id: g for g in self._order}
        if not self._counted <= shown.keys():
            self._failures, self._counted = {}, set()
        for gid, game in shown.items():
            if gid not in self._counted:
                self._counted.add(gid)
                for name, counts in game.failures.items():
                    self._failures.setdefault(name, Failures()).add(counts)

    def failures(self, names: Iterable[str] = ()) -> dict[str, dict[str, int]]:
        """Each bot's failures over the games of the last :meth:`read` and :meth:`hold` (JSON-ready), as
        :func:`arena.report.failures.tally` gives them in the order it read them: every name of ``names``
        first (zeros when it has no game), then the others as they first appear."""
        self._count_failures()
        bots = dict.fromkeys(names)
        for game in self._order:
            for bot in game.result.sides:
                bots.setdefault(bot)
        return {bot: self._failures.get(bot, Failures()).to_dict() for bot in bots}

    def history(self, games: Sequence[Game], names: Sequence[str]) -> list[HistoryPoint]:
        """:func:`arena.ratings.fit.history` of ``games`` (in the history's order) for the entrants
        ``names``, computing only the checkpoints the last call did not have: those over more games than
        the first ones both calls share, or all for other names."""
        known_names, known_games, known = self._history
        same = 0
        if tuple(names) == known_names:
            limit = min(len(games), len(known_games))
            while same < limit and (games[same] is known_games[same] or games[same] == known_games[same]):
                same += 1
        reuse = {p["games"]: p for p in known if p["games"] <= same}
        points = [reuse.get(n) or history_point(games[:n], names) for n in history_marks(len(games))]
        self._history = (tuple(names), list(games), points)
        return points

    def efficiency(self, games: Sequence[Game]) -> Efficiency | None:
        """The duplicate efficiency of ``games`` a publication shows (:func:`arena.formats.duplicate.efficiency`,
        :data:`arena.formats.duplicate.PRECISION_RESAMPLES`), measured again only when their complete
        duplicate pairs changed: the first game of a pair to be stored leaves them as they were."""
        pairs = complete_pairs(games)
        if self._efficiency is not None and _same_pairs(pairs, self._efficiency[0]):
            return self._efficiency[1]
        measured = pairs_efficiency(pairs, PRECISION_RESAMPLES)
        self._efficiency = (pairs, measured)
        return measured


def _same_pairs(a: dict[tuple[str, str], np.ndarray], b: dict[tuple[str, str], np.ndarray]) -> bool:
    """Whether two :func:`arena.formats.duplicate.complete_pairs` results are the same (pairs in the same order)."""
    return a.keys() == b.keys() and all(np.array_equal(v, b[k]) for k, v in a.items())
