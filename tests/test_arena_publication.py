"""Live and final publication (arena/ratings/publication.py): the live result is the normal approximation, marked so;
the background refresher bootstraps the newest games asked for and never blocks the caller."""

from __future__ import annotations

import threading

import pytest

from arena.ratings import publication
from arena.ratings.fit import Game, rate
from arena.ratings.publication import BootstrapRefresher, LivePublisher, final_ratings, live_ratings


def games(n: int) -> list[Game]:
    """n duplicate pairs of three bots in turn (mixed results: the MLE exists)."""
    out = []
    bots = [("A", "B"), ("B", "C"), ("A", "C")]
    for k in range(n):
        a, b = bots[k % 3]
        out += [Game(a, b, float(k % 4 != 0), f"d{k}"), Game(b, a, float(k % 3 == 0), f"d{k}")]
    return out


def test_live_is_the_normal_approximation_and_says_so() -> None:
    g = games(30)
    result = live_ratings(g, names=["D"])
    assert result["publication"] == "live" and result["intervals"] == "normal approximation"
    assert {r["ci_method"] for r in result["ratings"].values()} <= {"normal"}
    assert result["ratings"] == rate(g, bootstrap=0, names=["D"])["ratings"]


def test_final_is_the_bootstrap() -> None:
    g = games(60)
    result = final_ratings(g, bootstrap=100, seed=4)
    assert result["publication"] == "final" and result["intervals"] == "bootstrap"
    assert result["ratings"] == rate(g, bootstrap=100, seed=4)["ratings"]
    assert "bootstrap" in {r["ci_method"] for r in result["ratings"].values()}


def test_refresher_serves_the_newest_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """While one bootstrap runs, three more requests arrive: only the newest is computed next."""
    started, release = threading.Event(), threading.Event()
    seen: list[int] = []
    real = publication.final_ratings

    def slow(g, names, anchor, bootstrap, seed):  # type: ignore[no-untyped-def]
        seen.append(len(g))
        started.set()
        release.wait(10)
        return real(g, names, anchor, bootstrap, seed)

    monkeypatch.setattr(publication, "final_ratings", slow)
    refresher = BootstrapRefresher(bootstrap=20)
    try:
        refresher.submit(games(10))
        assert started.wait(10)
        for n in (11, 12, 13):
            refresher.submit(games(n))  # returns at once: the first is still running
        assert refresher.latest() is None
        release.set()
        assert refresher.wait_idle(30)
        assert seen == [20, 26]  # games(10) is 20 games, games(13) is 26; 11 and 12 were dropped
        done = refresher.latest()
        assert done is not None and done.games == 26 and done.ratings["publication"] == "final"
    finally:
        release.set()
        refresher.close()
    with pytest.raises(RuntimeError, match="closed"):
        refresher.submit(games(1))


def test_refresher_keeps_a_failure_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    refresher = BootstrapRefresher(bootstrap=10)
    try:
        refresher.submit(games(5), anchor=("nobody", 1000.0))  # rate() refuses an unknown anchor
        assert refresher.wait_idle(30)
        assert isinstance(refresher.error, ValueError) and refresher.latest() is None
        refresher.submit(games(5))
        assert refresher.wait_idle(30)
        latest = refresher.latest()
        assert latest is not None and latest.games == 10
    finally:
        refresher.close()


def test_live_publisher_publishes_at_once_then_the_bootstrap() -> None:
    """First call: the live result (no bootstrap yet); once the refresh of the same games is done (and
    on_done has fired), the bootstrap itself; with one more game, live again with the last intervals."""
    refreshed = threading.Event()
    publisher = LivePublisher(bootstrap=50, on_done=lambda done: refreshed.set())
    try:
        g = games(30)
        first = publisher.ratings(g)
        assert first["publication"] == "live" and "last_bootstrap" not in first
        assert refreshed.wait(60) and publisher.refresher.wait_idle(60)
        second = publisher.ratings(g)
        assert second["publication"] == "final" and second["ratings"] == rate(g, bootstrap=50)["ratings"]
        more = g + games(31)[-2:]
        third = publisher.ratings(more)
        assert third["publication"] == "live" and third["last_bootstrap"]["games"] == len(g)
        assert third["last_bootstrap"]["ci"] == {b: r["ci"] for b, r in second["ratings"].items()}
    finally:
        publisher.close()


def test_a_new_entrant_without_games_is_published_before_its_first_game() -> None:
    """The finished bootstrap covers these games but not this field: a bot entered since (SIGHUP), with no
    game yet, is listed as unrated at once; the cached bootstrap (matched by the number of games alone)
    used to be served without it until the next game was stored."""
    publisher = LivePublisher(bootstrap=20)
    try:
        g = games(12)
        publisher.ratings(g, names=["A", "B", "C"])
        assert publisher.refresher.wait_idle(60)
        assert publisher.ratings(g, names=["A", "B", "C"])["publication"] == "final"
        grown = publisher.ratings(g, names=["A", "B", "C", "newcomer"])
        assert {"bot": "newcomer", "why": "no games"} in grown["unrated"]
        assert publisher.refresher.wait_idle(60)
        again = publisher.ratings(g, names=["A", "B", "C", "newcomer"])
        assert again["publication"] == "final" and {"bot": "newcomer", "why": "no games"} in again["unrated"]
    finally:
        publisher.close()


def test_the_leaderboard_marks_live_intervals() -> None:
    from arena.web.render import leaderboard_html

    g = games(12)
    page = leaderboard_html(live_ratings(g), {"name": "league"}, [])
    assert "normal approximation (live: bootstrap intervals follow in the background)" in page
    later = {**live_ratings(g), "last_bootstrap": {"games": 20, "ci": {}}}
    assert "the last bootstrap covered 20 games" in leaderboard_html(later, {"name": "league"}, [])
    assert "(live" not in leaderboard_html(final_ratings(g, bootstrap=20), {"name": "league"}, [])


LEAGUE = """
[tournament]
name = "league"
players = 2
games_per_pairing = 12
master_seed = "%s"
output = "out"
[[bots]]
name = "a"
command = ["x"]
[[bots]]
name = "b"
command = ["x"]
[[bots]]
name = "c"
command = ["x"]
""" % ("ef" * 32)


def test_the_rating_history_of_a_schedule_is_in_its_order(tmp_path) -> None:
    """The games of a schedule are counted in its order however they were played (here last scheduled
    first), so a run interrupted and resumed publishes the history an uninterrupted one does
    (tests/test_arena_store.py); a ladder's, which has none, in the order stored (tests/test_arena_ladder.py)."""
    import json
    import tomllib

    from arena.config import parse_config
    from arena.ratings.fit import games_from_mapping
    from arena.report.publish import publish_tournament
    from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
    from arena.tournament.store import games_rows

    t = open_tournament(parse_config(tomllib.loads(LEAGUE), base=tmp_path))
    run_games(t.schedule[::-1], SimulatedRunner({"a": 200}), t.store, 1)
    try:
        publish_tournament(t, tmp_path / "out", 0, None)
        history = json.loads((tmp_path / "out" / "ratings.json").read_text())["history"]
        in_order = t.store.results(order=[g.game_id for g in t.schedule])
        assert [r.game_id for r in in_order] == [g.game_id for g in t.schedule]
        for point in (history[0], history[12], history[-1]):
            first = games_from_mapping(games_rows(in_order[: point["games"]]))
            assert point["ratings"] == {b: {"elo": r["elo"], "ci": r["ci"]}
                                        for b, r in rate(first, bootstrap=0)["ratings"].items()}, point["games"]
    finally:
        t.store.close()


def test_publish_tournament_with_a_live_publisher(tmp_path) -> None:
    """The seam for a league: the first publication is live (no history), the one after the background
    bootstrap caught up is the bootstrap (with the history), both written to ratings.json."""
    import json
    import tomllib

    from arena.config import parse_config
    from arena.report.publish import publish_tournament
    from arena.tournament.runner import SimulatedRunner, open_tournament, run_games

    t = open_tournament(parse_config(tomllib.loads(LEAGUE), base=tmp_path))
    run_games(t.schedule, SimulatedRunner({"a": 200}), t.store)
    publisher = LivePublisher(bootstrap=50)
    try:
        first = publish_tournament(t, tmp_path / "out", 50, None, reveal=False, publisher=publisher)
        written = json.loads((tmp_path / "out" / "ratings.json").read_text())
        assert first["publication"] == written["publication"] == "live" and "history" not in written
        assert publisher.refresher.wait_idle(60)
        second = publish_tournament(t, tmp_path / "out", 50, None, reveal=False, publisher=publisher)
        written = json.loads((tmp_path / "out" / "ratings.json").read_text())
        assert second["publication"] == written["publication"] == "final" and written["bootstrap"] == 50
        assert written["history"][-1]["games"] == 36
    finally:
        publisher.close()
        t.store.close()
