"""A blind tournament's publication holds back a stored game whose pair's twin is still to be played
(arena/report/held.py; docs/tournament-config.md, "Blind seats"). The two games of a pair seat the same two
entrants: the first was published (games.jsonl, the ratings and each bot's game count, failures, ``played``,
the web's games list and ``/api/games``, a competitor's ``/me``) while its twin played, so the public knew whom
the running twin seats. It is now shown once its twin is stored, or once the twin is no longer to be played
(an entrant dropped, the seed revealed); a tournament not blind shows it at once, as before.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from arena.competition.games import my_games
from arena.config import TournamentConfig, parse_config
from arena.report.cache import PublishCache
from arena.report.held import Holding
from arena.report.publish import publish_tournament
from arena.tournament.league import League
from arena.tournament.result import GameResult, Unplayed, forfeit_result
from arena.tournament.runner import SimulatedRunner, Tournament, open_tournament, pending_games, run_games
from arena.tournament.schedule import ScheduledGame
from arena.tournament.store import GamesReader, Lone
from arena.web.app import create_app
from referee.outcome import Termination
from tests.league_helpers import serve_until_stopped

FACTS: dict[str, Any] = {"blind_seats": True, "games_per_pairing": 4, "active": ["a", "b", "c"], "master_seed": None}
FIRST = Lone("t-p0-1-g0", "t-p0-1-d0", ("a", "b"))


@pytest.mark.parametrize(
    ("case", "facts", "game", "held"),
    [
        ("blind, its twin still to play", {}, FIRST, True),
        ("not blind", {"blind_seats": False}, FIRST, False),
        ("blind_seats not said (a store of an older arena)", {"blind_seats": None}, FIRST, False),
        ("an entrant no longer scheduled (retired, dropped)", {"active": ["a", "c"]}, FIRST, False),
        ("the active entrants not said: each counts as scheduled", {"active": None}, FIRST, True),
        ("a pair the schedule still holds", {}, Lone("t-p0-1-g3", "t-p0-1-d1", ("b", "a")), True),
        ("a pair past games_per_pairing (lowered)", {"games_per_pairing": 2},
         Lone("t-p0-1-g3", "t-p0-1-d1", ("b", "a")), False),
        ("the master seed revealed: the tournament is over", {"master_seed": "00" * 32}, FIRST, False),
        ("a ladder: its twin is played first", {"format": "ladder"}, FIRST, True),
        ("a ladder has no schedule: any pair number", {"format": "ladder", "games_per_pairing": None},
         Lone("t-p0-1-g15", "t-p0-1-d7", ("b", "a")), True),
        ("a ladder, an entrant no longer active", {"format": "ladder", "active": ["a"]}, FIRST, False),
        ("a remote entrant's pair (two independent games, one pair id)", {"remote": ["b"]},
         Lone("t-p0-1-g1", "t-p0-1-d0", ("b", "a")), True),
        ("not a pair id of a schedule", {}, Lone("x", "x", ("a", "b")), False),
    ],
)
def test_which_games_are_held(case: str, facts: dict[str, Any], game: Lone, held: bool) -> None:
    holding = Holding.of({k: v for k, v in {**FACTS, **facts}.items() if v is not None or k == "master_seed"})
    assert holding.held([game]) == (frozenset([game.game_id]) if held else frozenset()), case


def config(tmp: Path, bots: list[str], blind: bool = True) -> TournamentConfig:
    data = {
        "tournament": {"name": "t", "players": 2, "games_per_pairing": 4, "concurrency": 1,
                       "output": str(tmp / "store"), "master_seed": "11" * 32, "blind_seats": blind},
        "bots": [{"name": b, "command": ["true"], "cwd": str(tmp)} for b in bots],
    }
    return parse_config(data, str(tmp / "t.toml"), tmp)


def store(t: Tournament, games: list[ScheduledGame]) -> None:
    """Store ``games``: simulated, but side 0 of a game 1 of its pairing forfeits (a failure counted)."""
    for g in games:
        broken = {g.sides[0]: Unplayed(Termination.BROKEN, "broken")}
        t.store.record(forfeit_result(g, broken) if g.game_id.endswith("-g1") else SimulatedRunner().play(g))


class Published:
    """Publishes ``t`` with a cache kept across publications and with a new one; they must agree."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.cache = tmp, PublishCache()

    def __call__(self, t: Tournament) -> dict[str, Any]:
        publish_tournament(t, self.tmp / "kept", 0, None, reveal=False, cache=self.cache)
        publish_tournament(t, self.tmp / "fresh", 0, None, reveal=False)
        for name in ("games.jsonl", "ratings.json", "leaderboard.html"):
            assert (self.tmp / "kept" / name).read_bytes() == (self.tmp / "fresh" / name).read_bytes(), name
        ratings = json.loads((self.tmp / "kept" / "ratings.json").read_text())
        lines = (self.tmp / "kept" / "games.jsonl").read_text().splitlines()
        return {"ids": sorted(json.loads(x)["game_id"] for x in lines), "played": ratings["tournament"]["played"],
                "games": {b: r["games"] for b, r in ratings["ratings"].items() if r["games"]},
                "broken": {b: f["forfeits"] for b, f in ratings["tournament"]["failures"].items()}}


@pytest.mark.parametrize("blind", [True, False])
def test_a_game_is_published_once_its_twin_is_stored(tmp_path: Path, blind: bool) -> None:
    t = open_tournament(config(tmp_path, ["a", "b", "c"], blind))
    pub = Published(tmp_path)
    first, twin = (g for g in t.schedule if g.pair_id == "t-p0-1-d0")
    store(t, [twin])  # b (side 0 of the pair's second game) forfeits: a failure of b's
    half = pub(t)
    shown = [] if blind else [twin.game_id]
    rated = {"a": 1, "b": 1} if shown else {}
    assert half == {"ids": shown, "played": len(shown), "games": rated, "broken": {"a": 0, "b": len(shown), "c": 0}}
    assert [g.game_id for g in my_games(tmp_path / "kept", {"a"}, 2)] == shown  # a competitor's /me
    store(t, [first])
    assert pub(t) == {"ids": [first.game_id, twin.game_id], "played": 2, "games": {"a": 2, "b": 2},
                      "broken": {"a": 0, "b": 1, "c": 0}}
    t.store.close()


def test_a_held_game_is_released_when_its_twin_will_not_be_played(tmp_path: Path) -> None:
    """An entrant dropped (a version retired, a bot removed) plays its pairs' twins no more: their first
    games are published; added again, its twins are to be played once more: held again. The kept cache's
    failure totals follow (the files are the same as a new cache's)."""
    t = open_tournament(config(tmp_path, ["a", "b", "c"]))
    pub = Published(tmp_path)
    done = [g for g in t.schedule if g.pair_id == "t-p0-1-d0"]
    twin = next(g for g in t.schedule if g.game_id == "t-p1-2-g1")  # b v c's pair 0, c on side 0: c forfeits
    store(t, [*done, twin])
    assert pub(t)["ids"] == sorted(g.game_id for g in done)
    t.store.close()
    t = open_tournament(config(tmp_path, ["a", "b"]))  # c dropped
    assert pub(t) == {"ids": sorted([*(g.game_id for g in done), twin.game_id]), "played": 3,
                      "games": {"a": 2, "b": 3, "c": 1}, "broken": {"a": 0, "b": 1, "c": 1}}
    t.store.close()
    t = open_tournament(config(tmp_path, ["a", "b", "c"]))  # c back: its twin is to be played again
    assert pub(t)["broken"] == {"a": 0, "b": 1, "c": 0}
    t.store.close()


def test_the_web_shows_no_held_game(tmp_path: Path) -> None:
    """The web (arena web, arena serve --web) reads the store itself: its games list, ``/api/games``, a
    game's page and the ratings leave a held game out, as if not stored, until it is released."""
    t = open_tournament(config(tmp_path, ["a", "b", "c"]))
    run_games(pending_games(t)[:4], SimulatedRunner(), t.store)
    lone = pending_games(t)[5]  # the second game of the third pair, stored without the first
    store(t, [lone])
    stored = sorted(r.game_id for r in t.store.results())
    web = TestClient(create_app(tmp_path / "store", bootstrap=0))
    listed = web.get("/api/games", params={"per_page": 200}).json()
    shown = [x for x in stored if x != lone.game_id]
    assert (listed["total"], sorted(g["game_id"] for g in listed["games"])) == (4, shown)
    assert web.get(f"/api/games/{lone.game_id}").status_code == 404
    assert web.get(f"/games/{lone.game_id}").status_code == 404
    ratings = web.get("/api/ratings").json()
    assert ratings["tournament"]["played"] == 4 and sum(r["games"] for r in ratings["ratings"].values()) == 8
    assert web.get("/api/games", params={"bot": lone.sides[0]}).json()["total"] == sum(
        1 for r in t.store.results() if lone.sides[0] in r.sides and r.game_id != lone.game_id)
    run_games(pending_games(t)[:1], SimulatedRunner(), t.store)  # the twin: both shown
    listed = web.get("/api/games", params={"per_page": 200}).json()
    assert listed["total"] == 6 and web.get(f"/api/games/{lone.game_id}").status_code == 200
    assert web.get("/api/ratings").json()["tournament"]["played"] == 6
    t.store.close()


def test_a_served_blind_league_publishes_whole_pairs_only(tmp_path: Path) -> None:
    """`arena serve` in process (simulated games, two at a time, a publication after each): each publication
    holds the games of the pairs not whole yet, and the league at rest has published every game."""
    path = tmp_path / "t.toml"
    path.write_text('[tournament]\nname = "t"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 2\n'
                    f'output = "store"\nmaster_seed = "{"11" * 32}"\nblind_seats = true\n'
                    + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in "abcd"))
    seen: list[tuple[int, int]] = []  # (games stored, games published) after each game

    def after(result: GameResult, t: Tournament) -> None:
        rows = [json.loads(x) for x in (tmp_path / "pub" / "games.jsonl").read_text().splitlines()]
        pairs = [r.pair_id for r in t.store.results()]
        assert sorted(r["game_id"] for r in rows) == sorted(
            r.game_id for r in t.store.results() if pairs.count(r.pair_id) == 2)
        seen.append((t.store.count(), len(rows)))
        if not pending_games(t):
            league.request_stop()

    league = League(str(path), tmp_path / "store", Console(file=io.StringIO()),
                    lambda t: publish_tournament(t, tmp_path / "pub", 0, None, reveal=False),
                    lambda _: SimulatedRunner(), publish_spacing=0)
    serve_until_stopped(league, path, after)
    assert seen[-1] == (24, 24) and any(stored > shown for stored, shown in seen)


def test_the_web_finds_the_held_games_once_a_game_is_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which games are held back is found by a query over every stored game (the lone games): the web
    keeps its answer with its last read of the store, so it asks again only once a game was stored, not
    for each request of a blind tournament's pages."""
    t = open_tournament(config(tmp_path, ["a", "b", "c"]))
    run_games(pending_games(t)[:3], SimulatedRunner(), t.store)  # the third a pair's first game: held
    asked: list[int] = []
    lone_games = GamesReader.lone_games
    monkeypatch.setattr(GamesReader, "lone_games", lambda self: asked.append(1) or lone_games(self))
    web = TestClient(create_app(tmp_path / "store", bootstrap=0))
    for _ in range(3):
        assert web.get("/api/games").json()["total"] == 2
        assert web.get("/api/ratings").json()["tournament"]["played"] == 2
    assert len(asked) == 1
    run_games(pending_games(t)[:1], SimulatedRunner(), t.store)  # its twin
    assert web.get("/api/games").json()["total"] == 4 and len(asked) == 2
    t.store.close()
