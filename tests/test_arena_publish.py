"""Publishing (arena/report/publish.py): the output files, self-contained HTML, and the terminal table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rich.console import Console

from arena.ratings.fit import Game, games_from_mapping, rate
from arena.report.cache import StoredGame
from arena.report.publish import write_outputs
from arena.report.terminal import progress_bar, ratings_table
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner
from arena.tournament.schedule import make_schedule
from arena.tournament.store import games_rows
from arena.web.render import leaderboard_html


def results() -> list[GameResult]:
    games = make_schedule("pub", ["strong", "weak", "<b>odd</b>"], 4, 4, bytes(32))
    runner = SimulatedRunner(strengths={"strong": 300})
    out = [runner.play(g) for g in games]
    # one bot failure, with a record path
    first = out[0]
    out[0] = GameResult(
        first.game_id,
        first.match_id,
        first.pair_id,
        first.sides,
        (0, 0),
        1,
        ("seat 0 (strong) crashed: exit status 1",),
        "records/m1.json",
        first.seed_hex,
        first.first_dealer,
    )
    return out


def test_outputs(tmp_path: Path) -> None:
    res = results()
    ratings = rate(games_from_mapping(r.rating_row() for r in res), bootstrap=50)
    facts = {
        "name": "pub",
        "bots": {"strong": "1", "weak": "2", "<b>odd</b>": "3"},
        "commitment": "c0ffee",
        "master_seed": None,
        "scheduled": 12,
        "played": 12,
        "players": 4,
    }
    paths = write_outputs(tmp_path, [StoredGame.of(r) for r in res], ratings, facts)

    rows = [json.loads(x) for x in paths["games"].read_text().splitlines()]
    assert len(rows) == 12 and rows[0]["reasons"] == ["seat 0 (strong) crashed: exit status 1"]
    assert (
        rows[0]["score"] == 0.0
        and rows[0]["pair"] == "pub-p0-1-d0"
        and rows[0]["record"] == "records/m1.json"
    )
    assert rate(games_from_mapping(rows), bootstrap=50) == ratings  # games.jsonl is the ratings input

    saved = json.loads(paths["ratings_json"].read_text())
    assert saved["ratings"] == ratings["ratings"] and saved["tournament"]["commitment"] == "c0ffee"

    table = list(csv.DictReader(paths["ratings_csv"].open()))
    assert [r["bot"] for r in table] == ratings["ranking"]
    assert table[0]["rank"] == "1" and float(table[0]["elo"]) == ratings["ratings"][table[0]["bot"]]["elo"]

    page = paths["leaderboard"].read_text()
    assert "<svg" in page and "<style>" in page
    for external in ("<script", "<link", "src=", "@import", "url("):
        assert external not in page
    assert "&lt;b&gt;odd&lt;/b&gt;" in page and "<b>odd</b>" not in page
    assert 'href="records/m1.json"' in page and "crashed: exit status 1" in page
    for r in res:
        assert r.game_id in page
    assert page.count("<circle") == 3  # one point with error bars per bot


def test_leaderboard_reveals_seed_only_when_given() -> None:
    ratings = rate([], names=["a"], bootstrap=0)
    assert "(revealed when every game is played)" in leaderboard_html(ratings, {"master_seed": None}, [])
    assert "ab" * 32 in leaderboard_html(ratings, {"master_seed": "ab" * 32}, [])


def test_terminal_table_and_progress() -> None:
    ratings = rate(games_from_mapping(r.rating_row() for r in results()), bootstrap=0)
    console = Console(record=True, width=120)
    console.print(ratings_table(ratings, {"name": "pub", "bots": {"strong": "1"}}))
    text = console.export_text()
    assert "strong" in text and "95% interval" in text and "LOS next" in text
    console = Console(record=True, width=120, force_terminal=False)
    with progress_bar(10, 4, console) as advance:
        for _ in range(6):
            advance()
    assert "10/10" in console.export_text()


def test_equal_ratings_share_a_rank(tmp_path: Path) -> None:
    """Two broken bots lose every game to the others and split their own: equal ratings, so one rank in
    ratings.csv, the terminal table and the leaderboard ("1, 2, 2"), not 2 and 3 by name."""
    games = [Game("top", x, 1.0) for x in ("crash", "hang") for _ in range(3)]
    games += [Game("crash", "hang", 1.0), Game("crash", "hang", 0.0), Game("top", "crash", 0.0)]
    games += [Game("top", "hang", 0.0)]
    ratings = rate(games, bootstrap=0)
    assert ratings["ratings"]["crash"]["elo"] == ratings["ratings"]["hang"]["elo"]
    assert ratings["ranking"] == ["top", "crash", "hang"]
    facts = {"name": "tie", "bots": {}, "commitment": "c0ffee", "master_seed": None, "scheduled": 10,
             "played": 10, "players": 2}
    paths = write_outputs(tmp_path, [], ratings, facts)
    assert [(r["rank"], r["bot"]) for r in csv.DictReader(paths["ratings_csv"].open())] == [
        ("1", "top"), ("2", "crash"), ("2", "hang")]
    console = Console(width=200, record=True)
    console.print(ratings_table(ratings))
    cells = [[c.strip() for c in line.split("│")[1:3]] for line in console.export_text().splitlines() if "│" in line]
    assert cells == [["1", "top"], ["2", "crash"], ["2", "hang"]], cells
    board = paths["leaderboard"].read_text()
    for bot in ("crash", "hang"):
        assert f'<tr><td>2</td><td class="l bot">{bot}</td>' in board


def test_record_links_are_url_encoded(tmp_path: Path) -> None:
    """A tournament named `cup#1?x%` (allowed: no slashes) has game ids that need URL encoding."""
    games = make_schedule("cup#1?x%&", ["a", "b"], 2, 2, bytes(32))
    res = [SimulatedRunner().play(g) for g in games]
    res = [GameResult(r.game_id, r.match_id, r.pair_id, r.sides, r.scores, r.winner, r.reasons,
                      f"records/{r.game_id}.jsonl", r.seed_hex, r.first_dealer) for r in res]
    page = leaderboard_html(rate(games_from_mapping(r.rating_row() for r in res), bootstrap=0), {}, games_rows(res))
    assert 'href="records/cup%231%3Fx%25%26-p0-1-g0.jsonl"' in page
    assert "cup#1?x%&amp;-p0-1-g0" in page  # the text stays readable (HTML-escaped)
    assert 'href="records/cup#1' not in page


def small_sample_ratings() -> dict:
    """games_per_pairing = 2: one duplicate pair per pairing, so every interval is a normal approximation."""
    res = [SimulatedRunner(strengths={"strong": 300}).play(g) for g in make_schedule("s", ["strong", "weak"], 2, 2,
                                                                                    bytes(32))]
    return rate(games_from_mapping(r.rating_row() for r in res), bootstrap=50)


def test_interval_method_is_shown(tmp_path: Path) -> None:
    ratings = small_sample_ratings()
    assert {r["ci_method"] for r in ratings["ratings"].values()} == {"normal"}
    page = leaderboard_html(ratings, {}, [])
    assert "where marked *, the wider of that and the normal approximation" in page
    assert "weak: normal, fewer than 5 resampling units (duplicate pairs) against strong (1)" in page
    console = Console(record=True, width=120)
    console.print(ratings_table(ratings, {"name": "s"}))
    text = console.export_text()
    assert "]* " in text and "* the bootstrap cannot estimate the spread from fewer than 5" in text
    paths = write_outputs(tmp_path, [], ratings, {"name": "s"})
    assert {r["ci_method"] for r in csv.DictReader(paths["ratings_csv"].open())} == {"normal"}


def test_terminal_table_does_not_wrap_intervals_in_a_narrow_pipe() -> None:
    ratings = rate(games_from_mapping(r.rating_row() for r in results()), bootstrap=0)
    console = Console(record=True, width=80, force_terminal=False)
    console.print(ratings_table(ratings, {"name": "pub", "bots": {"strong": "1"}}))
    lines = console.export_text().splitlines()
    for name, r in ratings["ratings"].items():
        interval = f"[{r['ci'][0]:.0f}, {r['ci'][1]:.0f}]"
        assert any(interval in line and name[:3] in line for line in lines), (interval, lines)


def test_cli_console_is_wide_when_not_a_terminal(monkeypatch) -> None:
    import io

    from arena.cli.commands import make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(io.StringIO()).width == 120
    monkeypatch.setenv("COLUMNS", "90")
    assert make_console(io.StringIO()).width == 90


def test_leaderboard_history_precision_and_sprt_sections() -> None:
    """The rating history chart (one line and band per bot), the precision lines and an SPRT verdict,
    with every bot name escaped."""
    from arena.formats.duplicate import PRECISION_RESAMPLES, efficiency, precision_facts
    from arena.ratings.fit import history

    games = games_from_mapping(games_rows(results()))
    ratings = {**rate(games, bootstrap=0), "history": history(games, every=6)}
    facts = {
        "name": "pub",
        "precision": precision_facts(ratings, efficiency(games, PRECISION_RESAMPLES)),
        "sprt": {
            "candidate": "<b>odd</b>",
            "baseline": "weak",
            "elo0": 0,
            "elo1": 5,
            "model": "logistic",
            "alpha": 0.05,
            "beta": 0.05,
            "decision": "H1",
            "stopped_at_pair": 8,
            "skipped_pairs": 1,
            "llr": 3.1,
            "lower": -2.944,
            "upper": 2.944,
            "pentanomial": [0, 1, 2, 3, 1],
            "elo": 40.0,
            "elo_ci": [10.0, 70.0],
        },
    }
    page = leaderboard_html(ratings, facts, games_rows(results()))
    assert "<h2>Rating history</h2>" in page and page.count("<polyline") == 3 and page.count("<polygon") == 3
    assert "Ratings after every 6 games" in page
    assert "Widest 95% interval now: ±" in page and "Duplicate pairs in this tournament (6 pairs)" in page
    assert "is &lt;b&gt;odd&lt;/b&gt; stronger than weak?" in page
    assert "decided <b>H1</b> at pair 8 of the schedule after 7 duplicate pairs counted (1 skipped" in page
    assert "<b>odd</b>" not in page.replace("decided <b>H1</b>", "")


def test_ratings_csv_starts_no_cell_with_a_formula(tmp_path: Path) -> None:
    """A spreadsheet opening ratings.csv runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
    formula (CSV injection: ``=cmd|' /C calc'!A0``); a bot's name or version was written as it is. Such a
    text cell starts with ``'`` (read as text); the numbers stay numbers."""
    names = ["=cmd|' /C calc'!A0", "+1+1", "-2-2", "plain"]
    res = [SimulatedRunner().play(g) for g in make_schedule("csv", names, 2, 2, bytes(32))]
    ratings = rate(games_from_mapping(r.rating_row() for r in res), bootstrap=0)
    facts = {"name": "csv", "bots": dict(zip(names, ["@SUM(1+1)", "1", "\tx", "2"], strict=True)),
             "commitment": "c0ffee", "master_seed": None, "scheduled": len(res), "played": len(res), "players": 2}
    paths = write_outputs(tmp_path, [StoredGame.of(r) for r in res], ratings, facts)
    table = {r["bot"]: r for r in csv.DictReader(paths["ratings_csv"].open())}
    assert sorted(table) == sorted(["'=cmd|' /C calc'!A0", "'+1+1", "'-2-2", "plain"])
    assert table["'=cmd|' /C calc'!A0"]["version"] == "'@SUM(1+1)" and table["'-2-2"]["version"] == "'\tx"
    assert table["plain"]["version"] == "2" and float(table["plain"]["elo"]) == ratings["ratings"]["plain"]["elo"]


def test_ratings_json_is_strict_json(tmp_path: Path) -> None:
    """A league's first games can pair with no variance (every pair split alike): the duplicate efficiency
    ratio was written as ``Infinity`` and its interval as ``NaN``, which JSON does not have (a browser's
    JSON.parse, jq and the web's own JSON answers refuse the file). A value that is not a finite number is
    written as null."""
    res = results()
    ratings = rate(games_from_mapping(r.rating_row() for r in res), bootstrap=0)
    facts = {"name": "pub", "bots": {}, "commitment": "c0ffee", "master_seed": None, "scheduled": 12, "played": 12,
             "players": 4, "precision": {"efficiency": {"ratio": float("inf"), "ratio_ci": [float("nan")] * 2}}}
    paths = write_outputs(tmp_path, [StoredGame.of(r) for r in res], ratings, facts)

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    saved = json.loads(paths["ratings_json"].read_text(), parse_constant=refuse)
    assert saved["tournament"]["precision"]["efficiency"] == {"ratio": None, "ratio_ci": [None, None]}
    assert saved["ratings"] == ratings["ratings"]


def test_the_terminal_table_lists_disqualified_entrants_below_the_ranked_rows_unranked() -> None:
    """`arena run`'s terminal table did not list a competition's disqualified entrants at all (the board lists
    them apart, "disqualified: REASON"): now each is a row below the ranked ones, with no rank and no figures,
    its reason shown as written (the host's text is no rich markup)."""
    ratings = rate(games_from_mapping(r.rating_row() for r in results()), bootstrap=0)
    why = "disqualified: colluding [b]entries[/b] & a second account"
    facts = {"name": "pub", "bots": {"strong": "1", "mal@3": "3"}, "disqualified": [{"bot": "mal@3", "why": why}]}
    console = Console(record=True, width=120, force_terminal=False)
    console.print(ratings_table(ratings, facts))
    lines = console.export_text().splitlines()
    rule = next(k for k, line in enumerate(lines) if line.startswith("├"))  # the ranked rows end here
    above, below = ([[c.strip() for c in line.split("│")[1:-1]] for line in part if "│" in line]
                    for part in (lines[:rule], lines[rule:]))
    assert [r[1] for r in above if r[0].isdigit()] == list(ratings["ratings"])
    assert "mal@3" not in "\n".join(lines[:rule])
    column = [" ".join(cell for cell in col if cell) for col in zip(*below, strict=True)]  # a long reason wraps
    assert column[:3] == ["", f"mal@3  {why}", "3"] and not any(column[3:]), column
