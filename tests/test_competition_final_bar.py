"""A final already written, then a disqualification (docs/competition.md, "Disqualifying a competitor"): the final
is an ordinary `arena run` of ``OUTPUT/final/final.toml``, which did not read the competition's book, so a
disqualified competitor's CONTAINER entry (played by the arena itself, no token to revoke) still played the final
and was rated on its board. The final's run now reads the book's disqualifications at each look for games to
start (the one reader the league's publications use, :func:`arena.report.disqualified.read_barred`, which knows
the final's folder belongs to the competition beside it): a disqualified finalist's games not yet started are
forfeited with a line naming the disqualification, its undo lets it play those again, and the final's board lists
it as the league's does. Each test writes a real final from a real book (``final_run_args``, as `arena competition
final` does), runs the host's commands and the final's `arena run` as real CLI processes (``--simulate 0``: the
games are decided without bots, the bar is the run's, not the runner's), and reads the final's store and board."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_competition_disqualify import REASON, arena, write_config
from tests.test_competition_final_tokens import _final

FINALISTS = ("ann", "cal", "mal")


def _written_final(tmp_path: Path) -> tuple[Path, Path]:
    """A frozen competition whose three competitors each have an accepted container entry (``<name>bot@1``; the
    image is never started: the games are simulated) and its final written: the league's config and the final's."""
    from arena.competition.book import CompetitionBook
    from arena.competition.final import freeze

    cfg = write_config(tmp_path)
    with CompetitionBook(tmp_path / "out") as book:
        for name in FINALISTS:
            book.add_competitor(name)
            sub = book.add_submission(name, f"{name}bot", "1", "python", "random_bot:RandomBot")
            book.set_status(sub.id, "accepted", image=f"allfours-final-bar/{name}bot:1")
        freeze(book)
    return cfg, _final(cfg)


def _play(final: Path) -> str:
    """Play the final (``final``: its config) to its end as `arena run` does, games simulated; its stdout."""
    run = arena("run", str(final), "--simulate", "0", "--bootstrap", "20", "--no-progress", timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run.stdout


def _games(final: Path) -> list[tuple[tuple[str, str], str | None, list[str]]]:
    """Each stored game of the final: its sides, the side that won (its label, None for none) and its reasons."""
    with contextlib.closing(sqlite3.connect(f"file:{final.parent / 'arena.sqlite'}?mode=ro", uri=True)) as con:
        rows = con.execute("SELECT side0, side1, winner, reasons FROM games").fetchall()
    return [((a, b), None if w is None else (a, b)[int(w)], json.loads(r)) for a, b, w, r in rows]


def test_a_disqualified_container_finalist_forfeits_the_final_and_its_board_lists_it(tmp_path: Path) -> None:
    """Disqualified after the final was written, mal's container entry played every game of it and was rated
    (malbot@1 won some; the board listed it): now each of its games is forfeited with the disqualification's
    line, the others are played, and the final's board lists it disqualified and rates the others only."""
    cfg, final = _written_final(tmp_path)
    gone = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
    assert gone.returncode == 0, gone.stderr
    said = _play(final)
    games = _games(final)
    theirs = [g for g in games if "malbot@1" in g[0]]
    assert theirs and len(games) > len(theirs)
    for sides, won, reasons in theirs:  # before: played, and won by malbot@1 as often as by the other side
        side = sides.index("malbot@1")
        assert won == sides[1 - side], (sides, won, reasons)
        assert reasons == [f"side {side} (malbot@1) forfeited: disqualified by the host: {REASON}"], reasons
    assert not [r for s, _, r in games if "malbot@1" not in s and "forfeited" in str(r)]  # ann's and cal's: played
    assert f"forfeited: disqualified by the host: {REASON}" in said
    board = json.loads((final.parent / "ratings.json").read_text())
    assert sorted(board["ratings"]) == ["annbot@1", "calbot@1"]
    assert board["tournament"]["disqualified"] == [{"bot": "malbot@1", "why": f"disqualified: {REASON}"}]
    assert "the final already written lists malbot@1: its games not yet started are forfeited" in gone.stderr


def test_an_undone_disqualification_lets_the_finalist_play_the_final(tmp_path: Path) -> None:
    """The bar is the book's as it stands at each look, not as the final was written: mal disqualified and then
    reinstated before the final is played plays all its games, and the board rates it."""
    cfg, final = _written_final(tmp_path)
    for args in (("--reason", REASON), ("--undo",)):
        assert arena("competitor", "disqualify", str(cfg), "mal", *args).returncode == 0
    _play(final)
    games = _games(final)
    assert [g for g in games if "malbot@1" in g[0]] and not [r for _, _, r in games if "forfeited" in str(r)]
    board = json.loads((final.parent / "ratings.json").read_text())
    assert sorted(board["ratings"]) == ["annbot@1", "calbot@1", "malbot@1"]
    assert "disqualified" not in board["tournament"]


def test_a_disqualification_after_the_final_is_over_says_its_games_stand(tmp_path: Path) -> None:
    """The disqualify said of a final already played to its end that the entry "forfeits its games" (none was
    left to forfeit): it now says the games stand as played and the final's board, published again, lists it."""
    cfg, final = _written_final(tmp_path)
    _play(final)
    gone = arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON)
    assert gone.returncode == 0, gone.stderr
    assert "forfeits" not in gone.stderr and "forfeited" not in gone.stderr, gone.stderr
    assert "the final, played to its end, lists malbot@1: its games stand as played" in gone.stderr, gone.stderr
    _play(final)  # nothing left to play: its board is published again
    board = json.loads((final.parent / "ratings.json").read_text())
    assert board["tournament"]["disqualified"] == [{"bot": "malbot@1", "why": f"disqualified: {REASON}"}]
    assert sorted(board["ratings"]) == ["annbot@1", "calbot@1"]


def test_a_league_folder_named_final_reads_its_own_book(tmp_path: Path) -> None:
    """A competition's own output folder named ``final`` (its config ``final.toml`` in it) inside another
    competition's folder is no final: it reads its own book, not the parent's."""
    from arena.competition.book import CompetitionBook, read_disqualified

    with CompetitionBook(tmp_path):  # another competition's output in the parent folder, nobody disqualified
        pass
    league = tmp_path / "final"
    league.mkdir()
    (league / "final.toml").write_text("# this league's own config, kept in its output folder\n")
    with CompetitionBook(league) as book:
        book.add_competitor("mal")
        sub = book.add_submission("mal", "malbot", "1", "python", "random_bot:RandomBot")
        book.set_status(sub.id, "accepted", image="x/malbot:1")
        book.disqualify("mal", "cheating", "host")
    assert read_disqualified(league) == {"malbot@1": "cheating"}


def test_an_undone_disqualification_leaves_no_forfeit_of_the_bar_in_the_finals_ratings(tmp_path: Path) -> None:
    """The games the bar forfeited while a finalist was disqualified were never played: after the undo they are
    not rated (its board neither counts them as its losses nor as its opponents' wins)."""
    cfg, final = _written_final(tmp_path)
    assert arena("competitor", "disqualify", str(cfg), "mal", "--reason", REASON).returncode == 0
    _play(final)  # every game of malbot@1 forfeited: "disqualified by the host"
    assert arena("competitor", "disqualify", str(cfg), "mal", "--undo").returncode == 0
    _play(final)  # nothing left to play: its board is published again
    barred = [g for g in _games(final) if "disqualified by the host" in str(g[2])]
    assert barred
    board = json.loads((final.parent / "ratings.json").read_text())
    assert "disqualified" not in board["tournament"]
    mal = board["ratings"].get("malbot@1")
    assert mal is None or not mal.get("games"), mal  # rated on games it never played, lost by the bar


#: Holds the book given in argv[1] with an exclusive lock (as a stuck host command could) until its stdin closes.
HOLD = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute('PRAGMA locking_mode=EXCLUSIVE')
db.execute('BEGIN EXCLUSIVE')
db.execute('CREATE TABLE IF NOT EXISTS z(a)')
print('held', flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def _book_held(book: Path) -> Iterator[None]:
    """The competition's book ``book`` locked by another process for the span of the block."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(book)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_a_busy_book_costs_each_look_of_the_finals_run_a_short_wait_and_one_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At each look for games to start the final's run asks the book with a wait of ``BAR_WAIT_S`` (not sqlite's 30
    s, which a locked book cost every look); a busy book keeps the last answer, with one note however many looks."""
    import arena.report.disqualified as disqualified
    from arena.cli.commands import BAR_WAIT_S, _book_bar
    from arena.competition.book import CompetitionBook

    with CompetitionBook(tmp_path):
        pass
    (tmp_path / "final").mkdir()
    (tmp_path / "final" / "final.toml").write_text("# the final's config\n")
    waits: list[float] = []
    real = disqualified.read_barred

    def read_barred(output: Path, wait_s: float = 30.0) -> dict[str, str]:
        waits.append(wait_s)
        return real(output, wait_s)

    monkeypatch.setattr(disqualified, "read_barred", read_barred)
    notes: list[str] = []
    with _book_held(tmp_path / "competition.sqlite"):
        bar = _book_bar(tmp_path / "final", lambda line, *_: notes.append(line))
        assert bar() == {} and bar() == {}
    assert waits == [BAR_WAIT_S, BAR_WAIT_S] and BAR_WAIT_S <= 1.0
    assert len(notes) == 1 and "could not be read" in notes[0], notes


def test_a_final_run_while_the_book_is_busy_stores_its_games_and_says_its_board_waits(tmp_path: Path) -> None:
    """The book locked by another process for the whole run: every game is played and stored, the board is not
    published (a board without the host's disqualifications could rate a disqualified finalist) and the run says so
    in one line naming the book's trouble; once the book is free the same command publishes it."""
    cfg, final = _written_final(tmp_path)
    with _book_held(cfg.parent / "out" / "competition.sqlite"):
        run = arena("run", str(final), "--simulate", "0", "--bootstrap", "20", "--no-progress", timeout=600)
    assert run.returncode == 1, run.stderr
    line = [x for x in run.stderr.splitlines() if "is not published" in x]
    assert len(line) == 1 and "competition's book could not be read (database is locked)" in line[0], run.stderr
    assert "Traceback" not in run.stderr and not (final.parent / "ratings.json").exists()
    played = _games(final)
    again = _play(final)
    assert played and _games(final) == played, again  # all were played and stored: none left to play
    assert (final.parent / "ratings.json").is_file(), again
