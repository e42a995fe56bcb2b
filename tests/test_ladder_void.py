"""A disqualified entrant's games are void in a ladder's own fit (docs/competition.md, "Disqualifying a
competitor"; arena/formats/ladder.py, "Void games").

Before, a ladder left a disqualified entrant out of its choices and standings, but its fit still counted the
games already played against it: a house bot that beat the cheater twelve times kept the rating, the pairs
(so it was no longer a new entrant) and the budgets those games gave it, on the served ladder's board, in
every publication and on the web, and the ladder chose the next pairs from that fit. Now the served ladder
fits without them (``LadderRun.bar``) and a board written before the disqualification is refitted by its
readers, as the published ratings have always left those games out; undone, they count again.
"""

from __future__ import annotations

import io
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arena.config import load_config
from arena.formats.ladder import Budget, Ladder, Played, Rules
from arena.tournament.result import GameResult
from arena.tournament.runner import Tournament

SEED = bytes(32)
HOUSE = ("one", "two", "three")
ENTRANT = "malbot@1"  # a competitor's entry, as the league names it
REASON = "colluding entries"
CHEATER_PAIRS = 6  # duplicate pairs "one" won against the entrant before it was disqualified
LADDER = ('[tournament]\nname = "void"\nplayers = 2\nformat = "ladder"\nconcurrency = 2\noutput = "out"\n'
          'master_seed = "' + "00" * 32 + '"\n[tournament.ladder]\ntotal = 60\nwidth = 150\n')


def _config(folder: Path) -> Path:
    cfg = folder / "ladder.toml"
    cfg.write_text(LADDER + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in (*HOUSE, ENTRANT)))
    return cfg


def _play(t: Tournament, pairings: list[tuple[str, str, int]]) -> None:
    """Store the duplicate pairs ``(a, b, pairs)`` as a ladder numbers them, the entrant always losing."""
    from arena.tournament.runner import SimulatedRunner, run_games
    from arena.tournament.schedule import pair_games

    numbers = {e.label: e.number for e in t.store.entrants()}
    games = []
    for a, b, pairs in pairings:
        (i, x), (j, y) = sorted(((numbers[a], a), (numbers[b], b)))
        games += [g for k in range(pairs) for g in pair_games(t.config.name, (i, x), (j, y), k, 2, t.master_seed)]
    run_games(games, SimulatedRunner({ENTRANT: -4000.0, "one": 200.0}), t.store)


def _fit_without_entrant(results: list[GameResult], rules: Rules) -> Ladder:
    """The ladder's fit of ``results`` as though the entrant's games had never been played (the reference)."""
    ladder = Ladder(SEED, rules)
    ladder.extend(Played(r.sides[0], r.sides[1], r.score_a, r.pair_id, r.stored_at or 0.0) for r in results
                  if ENTRANT not in r.sides)
    return ladder


def test_void_games_move_no_rating_no_count_and_count_again_when_undone() -> None:
    """A beats B in six duplicate pairs; C and D split one. Voiding B refits A as though those games were never
    played (bit-identical to a ladder without them): no rating, no pairs (a new entrant again, placed first),
    no games today; the total budget still counts them. Voiding nobody gives the first numbers back."""
    games = [g for k in range(CHEATER_PAIRS)
             for g in (Played("A", "B", 1.0, f"p{k}", 100.0), Played("B", "A", 0.0, f"p{k}", 100.0))]
    games += [Played("C", "D", 1.0, "q", 100.0), Played("D", "C", 1.0, "q", 100.0)]
    ladder, clean = Ladder(SEED), Ladder(SEED)
    ladder.extend(games)
    clean.extend(g for g in games if "B" not in (g.a, g.b))
    field = ["A", "C", "D"]
    before = ladder.standings(field, 100.0)
    assert ladder.elo("A") > 200 and before[0].name == "A" and before[0].pairs == CHEATER_PAIRS, before
    ladder.void(["B"])
    assert ladder.standings(field, 100.0) == clean.standings(field, 100.0)
    a = {s.name: s for s in ladder.standings(field, 100.0)}["A"]
    assert (a.elo, a.pairs, a.games_today, a.new) == (0.0, 0, 0, True), a
    plan = ladder.next_pairs(field, Budget(), 100.0, 2)
    assert plan == clean.next_pairs(field, Budget(), 100.0, 2) and plan.choices[0].a == "A", plan
    per_entrant = Budget(per_entrant=4, per_entrant_per_day=4)  # A spent 12 games on B: refunded
    assert [c.a for c in ladder.next_pairs(field, per_entrant, 100.0, 1).choices] == ["A"]
    assert ladder.next_pairs(field, Budget(total=15), 100.0, 1).choices == []  # 14 played: no pair left
    ladder.void([])
    assert ladder.standings(field, 100.0) == before


def test_a_served_ladder_fits_and_chooses_without_a_disqualified_entrants_games(tmp_path: Path) -> None:
    """"one" beat the entrant six pairs running before it was disqualified. The served ladder (a competition's
    league, ``League.barred``) ranks the house bots on the games among them alone, and its first pairs are the
    ones a ladder that never saw the entrant's games chooses: "one" is a new entrant again."""
    from rich.console import Console

    from arena.formats.ladder import next_pairs
    from arena.tournament.league import League
    from arena.tournament.runner import LADDER_KEY, SimulatedRunner, open_tournament
    from tests.league_helpers import serve_until_stopped

    cfg, out = _config(tmp_path), tmp_path / "out"
    config = load_config(str(cfg))
    assert config.ladder is not None
    rules, budget = config.ladder.rules, config.ladder.budget
    t = open_tournament(config, out)
    try:
        _play(t, [("one", ENTRANT, CHEATER_PAIRS)])
    finally:
        t.store.close()
    league = League(str(cfg), out, Console(file=io.StringIO()), lambda t: None, lambda _: SimulatedRunner(),
                    publish_spacing=0)
    league.barred = lambda: {ENTRANT: REASON}
    field: list[str] = []
    boards: list[tuple[dict[str, Any], list[GameResult]]] = []

    def after(result: GameResult, t: Tournament) -> None:
        boards.append((json.loads(t.store.get_meta(LADDER_KEY) or "{}"), t.store.results()))
        if len(boards) == 4:
            league.request_stop()

    serve_until_stopped(league, cfg, after, lambda lg: field.extend(x for x in lg.ladder.active if x != ENTRANT)
                        if lg.ladder else None)
    assert sorted(field) == sorted(HOUSE)
    first = next_pairs(field, [], budget, time.time(), master_seed=SEED, rules=rules, count=2)
    assert [(c["a"], c["b"], c["reason"]) for c in boards[0][0]["plan"]] == [
        (c.a, c.b, c.reason.value) for c in first.choices]
    for board, results in boards:
        expected = _fit_without_entrant(results, rules).standings(field, time.time())
        assert board["standings"] == [asdict(s) for s in expected]
        assert board["voided"] == [ENTRANT] and board["games"] == len(results)
    one = {s["name"]: s for s in boards[0][0]["standings"]}["one"]
    assert one["pairs"] <= 1 and one["new"], one


def test_a_board_written_before_a_disqualification_is_refitted_wherever_it_is_shown(tmp_path: Path) -> None:
    """A ladder's board kept in the store from before the disqualification (a league stopped then, or not yet
    reloaded) ranked "one" on its wins over the entrant. Every publication (ratings.json, leaderboard.html) and
    page (the web's facts, /api/ratings) now shows the standings refitted without those games; undone, the
    entrant's games count again and the entrant is ranked again."""
    from arena.competition.book import CompetitionBook
    from arena.formats.ladder_run import LadderRun
    from arena.report.publish import publish_tournament
    from arena.tournament.runner import LADDER_KEY, open_tournament
    from arena.web.data import WebData

    out = tmp_path / "out"
    config = load_config(str(_config(tmp_path)))
    assert config.ladder is not None
    t = open_tournament(config, out)
    try:
        _play(t, [("one", ENTRANT, CHEATER_PAIRS), ("one", "two", 2), ("two", "three", 2)])
        run, now = LadderRun(t), time.time()
        run.next_games(2, now)
        stale = run.board(now)  # as the league wrote it before the disqualification
        t.store.set_meta(LADDER_KEY, json.dumps(stale))
        field = [s["name"] for s in stale["standings"] if s["name"] != ENTRANT]
        results = t.store.results()
        expected = [asdict(s) for s in _fit_without_entrant(results, config.ladder.rules).standings(field, now)]
        stale_one = {s["name"]: s for s in stale["standings"]}["one"]
        assert stale_one["pairs"] == CHEATER_PAIRS + 2 and stale_one != {s["name"]: s for s in expected}["one"]
        with CompetitionBook(out) as book:
            book.add_competitor("mal")
            book.add_submission("mal", "malbot", "1", "python", "bot:Bot")
            book.disqualify("mal", REASON, "host")
        publish_tournament(t, out, 0, None, reveal=False)
        web = WebData(out, bootstrap=0)
        shown = {"ratings.json": json.loads((out / "ratings.json").read_text())["tournament"],
                 "the web": web.facts(), "/api/ratings": web.ratings()["tournament"]}
        for where, facts in shown.items():
            assert facts["ladder"]["standings"] == expected, where
            assert facts["ladder"]["voided"] == [ENTRANT], where
        row = next(s for s in expected if s["name"] == "one")
        page = (out / "leaderboard.html").read_text().split('<table id="ladder">')[1].split("</table>")[0]
        assert ENTRANT not in page
        assert (f'<td class="l bot">one</td><td>{row["elo"]:.0f}</td><td>{row["sd"]:.0f}</td>'
                f'<td class="pairs">{row["pairs"]}</td>') in page, page
        with CompetitionBook(out) as book:
            assert book.undo_disqualification("mal")
        publish_tournament(t, out, 0, None, reveal=False)
    finally:
        t.store.close()
    for where, facts in {"ratings.json": json.loads((out / "ratings.json").read_text())["tournament"],
                         "the web": WebData(out, bootstrap=0).facts()}.items():
        assert facts["ladder"]["standings"] == stale["standings"], where  # every game counts again
        assert facts["ladder"]["voided"] == [], where


def test_a_refitted_boards_last_pairs_show_the_refits_figures(tmp_path: Path) -> None:
    """The last pairs of a board written before the disqualification kept the gap, sd and undecided they were chosen
    with, from a fit that counted the entrant's games, beside standings refitted without them: the public board
    contradicted itself. Every publication and page now shows each pair's figures by
    the refit (the pair's gap is the refitted ratings' difference), and keeps why it was chosen."""
    from arena.competition.book import CompetitionBook
    from arena.formats.ladder_run import LadderRun
    from arena.report.publish import publish_tournament
    from arena.tournament.runner import LADDER_KEY, open_tournament
    from arena.web.data import WebData

    out = tmp_path / "out"
    config = load_config(str(_config(tmp_path)))
    assert config.ladder is not None
    t = open_tournament(config, out)
    try:
        _play(t, [("one", ENTRANT, CHEATER_PAIRS), ("one", "two", 3), ("two", "three", 3), ("one", "three", 3)])
        run, now = LadderRun(t), time.time()
        run.next_games(4, now)
        stale = run.board(now)
        t.store.set_meta(LADDER_KEY, json.dumps(stale))
        house = [c for c in stale["plan"] if ENTRANT not in (c["a"], c["b"])]
        assert house, stale["plan"]
        clean = _fit_without_entrant(t.store.results(), config.ladder.rules)
        with CompetitionBook(out) as book:
            book.add_competitor("mal")
            book.add_submission("mal", "malbot", "1", "python", "bot:Bot")
            book.disqualify("mal", REASON, "host")
        publish_tournament(t, out, 0, None, reveal=False)
    finally:
        t.store.close()
    web = WebData(out, bootstrap=0)
    shown = {"ratings.json": json.loads((out / "ratings.json").read_text())["tournament"], "the web": web.facts(),
             "/api/ratings": web.ratings()["tournament"]}
    for where, facts in shown.items():
        plan = facts["ladder"]["plan"]
        assert [(c["a"], c["b"], c["reason"]) for c in plan] == [(c["a"], c["b"], c["reason"]) for c in house], where
        for c in plan:
            assert abs(c["gap"] - (clean.elo(c["a"]) - clean.elo(c["b"]))) < 0.02, (where, c)
    for c, stale_c in zip(shown["the web"]["ladder"]["plan"], house, strict=True):
        fresh = asdict(clean.gap(c["a"], c["b"]))
        assert {k: c[k] for k in fresh} == fresh and fresh != {k: stale_c[k] for k in fresh}, (c, stale_c)
    page = (out / "leaderboard.html").read_text().split('<table id="ladder-plan">')[1].split("</table>")[0]
    c = shown["ratings.json"]["ladder"]["plan"][0]
    assert f'<td>{c["gap"]:.0f}</td><td>{c["gap_sd"]:.0f}</td>' in page, page


def _refit_as_written(folder: Path, in_flight: int) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """A ladder's board whose plan (four pairs) was made with the pairs of an earlier plan of ``in_flight`` pairs
    in flight (started, not stored; none for 0), and its refit from the games and the void entrants it was written
    with; and the games in flight."""
    from arena.formats.ladder_run import LadderRun, refitted_board
    from arena.tournament.runner import open_tournament

    t = open_tournament(load_config(str(_config(folder))), folder / "out")
    try:
        _play(t, [("one", ENTRANT, CHEATER_PAIRS), ("one", "two", 3), ("two", "three", 3), ("one", "three", 3)])
        run, now = LadderRun(t), time.time()
        flying = run.next_games(in_flight, now) if in_flight else []
        run.next_games(4, now, in_flight=flying)
        board = run.board(now)
        return board, refitted_board(board, t.store.results(), t.master_seed, board["voided"], now), flying
    finally:
        t.store.close()


def test_a_boards_refit_with_nothing_changed_gives_its_pairs_figures_back(tmp_path: Path) -> None:
    """A plan's pairs are chosen one after another, each counting those before it as played (their sd and undecided
    are smaller for it); a refit that gave each pair its figures as though no pair were chosen showed a refitted
    board's pairs in another measure than an unrefitted one's (and one pair twice in a plan with one sd). Refitting a
    board from the games and the void entrants it was written with changes none of its figures."""
    board, again, _ = _refit_as_written(tmp_path, 0)  # nothing in flight: the plan counts no pending pair
    assert len(board["plan"]) > 1, board["plan"]
    assert again["plan"] == board["plan"] and again["standings"] == board["standings"]


def test_a_refit_counts_the_pairs_in_flight_when_the_plan_was_made(tmp_path: Path) -> None:
    """The scheduler chooses with the pairs in flight (started, not stored) counted as played, which makes their
    entrants' sd and the undecided of a pair seating them smaller; the refit counted only the plan's own pairs, so
    a refitted board showed a pair as less decided than the scheduler acted on (and than the same board before the
    refit). The board keeps the pairs in flight (``pending``) and the refit counts them as the plan did: refitting
    a board from the games and void entrants it was written with changes none of its figures."""
    board, again, flying = _refit_as_written(tmp_path, 2)
    assert board["plan"] and again["plan"] == board["plan"], (again["plan"], board["plan"])  # first version: larger
    in_flight = {tuple(sorted(p)) for p in board["pending"]}
    assert len(board["pending"]) == 2 and in_flight == {tuple(sorted(g.sides)) for g in flying}, board["pending"]


def test_a_board_without_the_barred_names_none_of_their_pairs_in_flight() -> None:
    """The board's ``pending`` (pairs in flight when its plan was made) is public like its plan: a disqualified
    entrant's pair leaves it as it leaves the plan (arena/report/disqualified.py, ``ladder_without``)."""
    from arena.report.disqualified import ladder_without

    board = {"standings": [], "plan": [], "reasons": [], "pending": [["one", ENTRANT], ["two", "three"]]}
    assert ladder_without(board, {ENTRANT: REASON})["pending"] == [["two", "three"]]
