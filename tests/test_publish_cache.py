"""A publication with a kept :class:`arena.report.cache.PublishCache` (``arena serve``'s: it reads and renders only
the games stored since the last) writes the same files, byte for byte, as one that recomputes everything (a new
cache: ``arena run``, and ``arena serve`` after a start or a crash): while a league grows game by game, out of
schedule order (so the rating history's first games change), with failures and unrated games, when an entrant
joins (other names: the history again), and when the store changes under the cache (restored from a backup:
games gone, a game stored again with the same match id). Each publication of the kept cache goes to one output
folder and a fresh one's to another; the files are compared after each.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from arena.config import TournamentConfig, parse_config
from arena.ratings.fit import Game, RatingTable, games_from_mapping
from arena.ratings.publication import final_ratings
from arena.report.cache import PublishCache, StoredGame
from arena.report.failures import tally
from arena.report.publish import publish_tournament
from arena.tournament.result import Failures, GameResult, Unplayed, forfeit_result
from arena.tournament.runner import DB_NAME, SimulatedRunner, Tournament, open_tournament
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import Store
from arena.web.data import WebData
from arena.web.render import GameRowsHtml, forfeits_by_bot
from referee.outcome import Termination

#: The files a publication writes that are compared.
FILES = ("games.jsonl", "ratings.json", "ratings.csv", "leaderboard.html")


def league(tmp: Path, bots: list[str]) -> Tournament:
    """A 2-player league of ``bots`` (4 games a pairing) stored in ``tmp/store``."""
    data = {
        "tournament": {"name": "cache", "players": 2, "games_per_pairing": 4, "concurrency": 1,
                       "output": str(tmp / "store"), "master_seed": "00" * 32},
        "bots": [{"name": b, "command": ["true"], "cwd": str(tmp)} for b in bots],
    }
    config: TournamentConfig = parse_config(data, str(tmp / "league.toml"), tmp)
    return open_tournament(config)


def result_of(game: ScheduledGame, k: int) -> GameResult:
    """The ``k``-th game's result: mostly simulated; some with a timeout counted (a referee's game), a bot
    that did not start, or both sides forfeiting (no winner: not rated)."""
    played = SimulatedRunner(strengths={"b0": 200}).play(game)
    if k % 7 == 3:
        return replace(played, referee="127.0.0.1:1", winner=1,
                       terminations=(Termination.TIMEOUT, Termination.OTHER_SEAT_FORFEITED),
                       failures=(Failures(timeouts=3, exceptions=1), Failures()))
    if k % 11 == 5:
        return forfeit_result(game, {game.sides[0]: Unplayed(Termination.NOT_STARTED, "failed its check")})
    if k % 13 == 6:
        return forfeit_result(game, {s: Unplayed(Termination.BROKEN, "broken") for s in game.sides})
    return played


class Publications:
    """Publishes one league twice after each change: with a kept cache and with a new one."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.cache, self.count = tmp, PublishCache(), 0

    def check(self, t: Tournament, final: bool = True) -> None:
        """Publish ``t`` both ways (``final``: ratings with a bootstrap and the history; else none) and
        compare the files."""
        bootstrap = 20 if final else 0
        kept, fresh = self.tmp / "kept", self.tmp / "fresh"
        publish_tournament(t, kept, bootstrap, None, reveal=False, cache=self.cache)
        publish_tournament(t, fresh, bootstrap, None, reveal=False)
        for name in FILES:
            assert (kept / name).read_bytes() == (fresh / name).read_bytes(), (name, self.count)
        self.count += 1


def test_a_growing_league_publishes_the_same_files_with_a_kept_cache(tmp_path: Path) -> None:
    t = league(tmp_path, [f"b{k}" for k in range(4)])
    pubs = Publications(tmp_path)
    games = list(t.schedule)
    random.Random(1).shuffle(games)  # stored out of schedule order: the history's first games change
    for k, game in enumerate(games):
        t.store.record(result_of(game, k))
        if k % 3 == 0 or k == len(games) - 1:
            pubs.check(t, final=k % 2 == 0)
    t.store.close()

    # an entrant joins (a league that grows): new names, new games in the schedule
    t = league(tmp_path, [f"b{k}" for k in range(5)])
    pubs.check(t)
    for k, game in enumerate(t.store.pending(t.schedule)):
        t.store.record(result_of(game, k))
        if k % 4 == 0:
            pubs.check(t)
    pubs.check(t)
    assert pubs.count > 10
    t.store.close()


def test_a_store_changed_under_the_cache_is_read_again(tmp_path: Path) -> None:
    """The store restored from a backup (a crash, then the file of an hour before) while the cache lives on
    (the same process reopening it): games it held are gone, and one is stored again with the same match id
    (a simulated game's is a function of its seed) but another time and duration: the kept cache must not
    publish its old copies, nor count the failures of the games gone."""
    t = league(tmp_path, [f"b{k}" for k in range(4)])
    pubs = Publications(tmp_path)
    for k, game in enumerate(t.schedule):
        t.store.record(result_of(game, k))
    pubs.check(t)
    t.store.close()

    db = sqlite3.connect(tmp_path / "store" / DB_NAME)
    with db:
        gone = [r[0] for r in db.execute("SELECT game_id FROM games ORDER BY game_id DESC LIMIT 8")]
        db.execute(f"DELETE FROM games WHERE game_id IN ({','.join('?' * len(gone))})", gone)
    db.close()
    t = league(tmp_path, [f"b{k}" for k in range(4)])
    pubs.check(t)  # the games gone, their failures with them

    by_id = {g.game_id: k for k, g in enumerate(t.schedule)}
    for game in t.store.pending(t.schedule)[:3]:  # played again: the same match id, another duration
        t.store.record(replace(result_of(game, by_id[game.game_id]), duration_s=12.5))
    pubs.check(t)
    db = sqlite3.connect(tmp_path / "store" / DB_NAME)
    with db:  # and once more, the same game replaced by another storing of the same match
        gid, mid = db.execute("SELECT game_id, match_id FROM games ORDER BY stored_at DESC LIMIT 1").fetchone()
        db.execute("UPDATE games SET duration_s = 99.0, stored_at = stored_at + 1 WHERE game_id = ?", (gid,))
    db.close()
    pubs.check(t)
    assert any(f'"match_id": "{mid}"' in line and '"duration_s": 99.0' in line
               for line in (tmp_path / "kept" / "games.jsonl").read_text().splitlines())
    t.store.close()


def test_kept_leaderboard_rows_follow_their_links() -> None:
    """A game's row of the static leaderboard is kept while it shows the same: once its replay page is
    written (its pair's twin stored) the row links it, as a row rendered anew does."""
    row = {"game_id": "g1", "a": "x<y", "b": "z", "scores": [14, 3], "first_dealer": 0, "reasons": ["done & dusted"],
           "record": "records/g1.jsonl"}
    rows = GameRowsHtml()
    before = rows.render([row], {})  # type: ignore[list-item]  # the columns the row shows
    after = rows.render([row], {"g1": "replays/g1.html"})  # type: ignore[list-item]
    assert "replay" not in before and 'href="replays/g1.html"' in after and "x&lt;y" in after
    assert after == GameRowsHtml().render([row], {"g1": "replays/g1.html"})  # type: ignore[list-item]


class Pages:
    """The web's ratings (:meth:`arena.web.data.WebData.ratings`, ``/api/ratings``) and forfeits (the board's) of
    one league, from a :class:`WebData` kept across the league's growth (its cache kept) and from a new one
    each time (everything read again), and counted: the fits and the stored games read."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        import arena.web.data

        self.folder, self.count = folder, 0
        self.kept = WebData(folder, bootstrap=20)
        self.stamps: dict[str, tuple[str, float]] = {}  # of the games stored at the last check
        self.fits: list[int] = []  # the games of each fit
        self.read: list[str] = []  # the game ids of each stored game read

        def fit(games: Sequence[Game], *args: Any, **kwargs: Any) -> RatingTable:
            self.fits.append(len(games))
            return final_ratings(games, *args, **kwargs)

        def of(result: GameResult) -> StoredGame:
            self.read.append(result.game_id)
            return make(result)

        make = StoredGame.of
        monkeypatch.setattr(arena.web.data, "final_ratings", fit)
        monkeypatch.setattr(StoredGame, "of", staticmethod(of))

    def check(self) -> None:
        """After a change of the store: the kept WebData's pages as a new one's and as computed from the store
        without a cache (the bootstrap's seed and the games' order included: by stored time); the kept one
        fits once and reads only the games it has not read (in another storing), and neither fits nor reads
        while nothing changes."""
        with Store(self.folder / DB_NAME) as store:
            stamps = store.stamps()
            results = sorted(store.results(), key=lambda r: (r.stored_at or 0.0, r.game_id))
        fits, read = len(self.fits), len(self.read)
        kept = self.kept.ratings()
        stored = len(self.kept.stored())
        assert len(self.fits) == fits + 1, self.count
        assert sorted(self.read[read:]) == sorted(g for g, s in stamps.items() if self.stamps.get(g) != s)
        self.stamps = stamps
        fresh = WebData(self.folder, bootstrap=20)
        assert kept == fresh.ratings() and self.kept.forfeits() == fresh.forfeits()
        names = kept["tournament"]["entrants"]
        rows = [r.rating_row() for r in results]
        expected = final_ratings(games_from_mapping(rows), names, bootstrap=20)
        assert {k: v for k, v in kept.items() if k != "tournament"} == expected, self.count
        assert kept["tournament"]["failures"] == {n: f.to_dict() for n, f in tally(results, names).items()}
        assert self.kept.forfeits() == forfeits_by_bot(rows)
        fits, read = len(self.fits), len(self.read)
        for _ in range(2):  # nothing stored since: nothing fitted, nothing read
            assert self.kept.ratings() == kept and len(self.kept.stored()) == stored
        assert (len(self.fits), len(self.read)) == (fits, read)
        self.count += 1


def test_the_webs_pages_are_the_same_with_its_kept_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The web (``arena web``, ``arena serve --web``) fitted its ratings and read every stored game again after
    each game stored (and derived every game's row again for each board): it keeps a PublishCache as a
    league's publications do. Its pages are the same as a new one's and as the store's games say, while the
    league grows out of schedule order, an entrant joins and the store changes under it; each new game is
    read once, one fit after each change, none while nothing changes."""
    t = league(tmp_path, [f"b{k}" for k in range(4)])
    pages = Pages(tmp_path / "store", monkeypatch)
    pages.check()  # no game yet
    games = list(t.schedule)
    random.Random(2).shuffle(games)
    for k, game in enumerate(games[:30]):
        t.store.record(result_of(game, k))
        if k % 3 == 0:
            pages.check()
    t.store.close()

    t = league(tmp_path, [f"b{k}" for k in range(5)])  # an entrant joins: new names
    for k, game in enumerate(t.store.pending(t.schedule)[:12]):
        t.store.record(result_of(game, k))
        if k % 4 == 0:
            pages.check()
    db = sqlite3.connect(tmp_path / "store" / DB_NAME)
    with db:  # restored from a backup: games gone, and one stored again (same match id, another time)
        gone = [r[0] for r in db.execute("SELECT game_id FROM games ORDER BY stored_at DESC LIMIT 5")]
        db.execute(f"DELETE FROM games WHERE game_id IN ({','.join('?' * len(gone))})", gone)
        db.execute("UPDATE games SET duration_s = 99.0, stored_at = stored_at + 1000 WHERE game_id = ?",
                   (games[0].game_id,))
    db.close()
    pages.check()
    assert pages.count > 10
    t.store.close()
