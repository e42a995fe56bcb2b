"""A reload of `arena serve`'s config never leaves a duplicate pair half played (arena/tournament/league.py).

A reload (SIGHUP; a competition's every accepted submission) lets the games in flight finish, then takes
the new config. When that config drops an entrant (a competitor's version retired by a newer one, a bot the
host removed), a pair of its whose first game was stored and second not yet started stayed half played for
ever: one game of a duplicate pair counted, its deal luck not cancelled by the twin. The league now plays
the second game of every begun pair before it takes the new config.

In-process League with simulated games, one at a time, over a real config file.

A bot a reload adds (or any, at the start) is checked before it plays, as `arena run` checks every bot
(it must start and join a practice match); one that fails is left out, with one line that says why, and
plays no game until a reload finds it mended: end to end with `arena serve` and real processes, and
in-process for a ladder.
"""

from __future__ import annotations

import dataclasses
import html
import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from arena.config import load_config
from arena.report.publish import publish_tournament
from arena.tournament.league import BROKEN_IN_A_ROW, WHY_CHARS, League, public_why
from arena.tournament.result import GameResult, Unplayed, forfeit_result
from arena.tournament.runner import SimulatedRunner, Tournament
from arena.tournament.schedule import ScheduledGame
from referee.outcome import Termination
from tests.configs import INSTANT, bots_toml
from tests.league_helpers import serve_until_stopped
from tests.test_metrics import scrape

ROOT = Path(__file__).resolve().parent.parent


def config_text(bots: list[str]) -> str:
    head = ('[tournament]\nname = "rl"\nplayers = 2\ngames_per_pairing = 4\nconcurrency = 1\n'
            'output = "out"\nmaster_seed = "' + "00" * 32 + '"\n')
    return head + "".join(f'\n[[bots]]\nname = "{b}"\ncommand = ["true"]\n' for b in bots)


def test_a_reload_that_drops_an_entrant_finishes_its_begun_pair_first(tmp_path: Path) -> None:
    path = tmp_path / "league.toml"
    path.write_text(config_text(["a", "b", "c"]))
    stored: list[GameResult] = []

    def after(result: GameResult, t: Tournament) -> None:
        stored.append(result)
        if len(stored) == 1:  # the first game of a's first pair is stored: a is dropped
            path.write_text(config_text(["b", "c"]))
            league.request_reload()
        elif len(t.entrants) == 2 and not t.store.pending(t.schedule):
            league.request_stop()

    league = League(str(path), tmp_path / "out", Console(file=io.StringIO()), lambda t: None,
                    lambda _: SimulatedRunner(), publish_spacing=0)
    serve_until_stopped(league, path, after)
    first = stored[0]
    assert "a" in first.sides
    twins = [r for r in stored if r.pair_id == first.pair_id]
    assert len(twins) == 2 and twins[1].sides == twins[0].sides[::-1], [(r.game_id, r.sides) for r in stored]
    # nothing else of a was played after the reload; b and c played their whole pairing
    assert [r for r in stored[2:] if "a" in r.sides] == []
    assert sum(1 for r in stored if set(r.sides) == {"b", "c"}) == 4


class CheckedRunner(SimulatedRunner):
    """Simulated games, and the check of :meth:`arena.play.game.GrpcGameRunner.check_bots`: the bots
    named in ``broken`` fail it; ``checked`` lists every bot checked, in order."""

    def __init__(self, broken: set[str], checked: list[str]):
        super().__init__()
        self.broken, self.checked = broken, checked

    def check_bots(self, names: list[str]) -> dict[str, str]:
        self.checked.extend(names)
        return {n: "its process exited with status 3 before joining" for n in names if n in self.broken}


def test_a_served_ladder_leaves_a_broken_entrant_out_until_a_reload_finds_it_mended(tmp_path: Path) -> None:
    """The ladder chose a new entrant first, across the field: a broken one had every pair of its
    forfeited. Served, it is left out of the ladder's choices and board from the start; a reload checks
    it again (and only it: the bots that passed are not checked twice), and once it passes it plays."""
    path = tmp_path / "ladder.toml"
    path.write_text('[tournament]\nname = "lc"\nplayers = 2\nformat = "ladder"\nconcurrency = 2\n'
                    'output = "out"\nmaster_seed = "' + "00" * 32 + '"\n[tournament.ladder]\ntotal = 40\n'
                    + bots_toml("a", "b", "c", "x"))
    broken, checked, stored = {"x"}, list[str](), list[GameResult]()
    out = io.StringIO()

    def after(result: GameResult, t: Tournament) -> None:
        stored.append(result)
        if len(stored) == 6:  # x mended
            broken.clear()
            league.request_reload()
        elif len(stored) == 20:
            league.request_stop()

    league = League(str(path), tmp_path / "out", Console(file=out, width=400), lambda t: None,
                    lambda _: CheckedRunner(broken, checked), publish_spacing=0)
    def opened(league: League) -> None:
        assert league.left_out == {"x": "failed its check: its process exited with status 3 before joining"}
        assert league.ladder is not None and "x" not in league.ladder.active

    serve_until_stopped(league, path, after, opened)
    assert sorted(checked) == ["a", "b", "c", "x", "x"]  # x again at the reload, the others once
    assert all("x" not in r.sides for r in stored[:6]), [r.sides for r in stored]
    assert sum("x" in r.sides for r in stored[6:]) >= 2  # mended: it plays
    assert league.left_out == {}
    lines = out.getvalue().splitlines()
    said = [line for line in lines if "'x'" in line]
    assert len(said) == 2 and "failed its check: its process exited with status 3" in said[0], lines
    assert "left out" in said[0] and "passed its check" in said[1], said


SERVED_HEAD = """[tournament]
name = "checked"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
[tournament.time_control]
join_ms = 20000
grace_ms = 1000
"""


@pytest.mark.slow
def test_a_bot_added_on_sighup_is_checked_and_left_out_when_broken(tmp_path: Path) -> None:
    """`arena run` checks every bot before its first game (a practice match must start); `arena serve`
    checked none, so a bot added on SIGHUP whose command exits at once was forfeited game by game, each
    a win for its opponent and a rating for a bot that never played. Now a reload checks the new bots
    the same way: the broken one is left out (one line says why, a gauge shows it), plays no game, and
    the good one added with it plays its pairs."""
    cfg = tmp_path / "league.toml"
    good = {"command": INSTANT, "sandbox": '"none"', "cwd": f'"{ROOT}"'}
    cfg.write_text(SERVED_HEAD + bots_toml("one", "two", **good))
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0",
                             "--metrics-port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        url = line.split()[1]
        assert len(_stored(tmp_path, 2, proc)) == 2
        cfg.write_text(SERVED_HEAD + bots_toml("one", "two", "good", **good)
                       + bots_toml("bad", command='["{python}", "-c", "raise SystemExit(3)"]', sandbox='"none"'))
        proc.send_signal(signal.SIGHUP)
        games = _stored(tmp_path, 6, proc, lambda rows: sum("good" in (g["a"], g["b"]) for g in rows) >= 4)
        samples = scrape(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0 and "Traceback" not in out, out
    games = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    assert [g["game_id"] for g in games if "bad" in (g["a"], g["b"])] == [], out  # no game, so no forfeit
    assert sum("good" in (g["a"], g["b"]) for g in games) == 4 and all(g["record"] for g in games), games
    said = [x for x in out.splitlines() if "'bad'" in x]
    assert len(said) == 1 and "failed its check" in said[0] and "exited with status 3" in said[0], out
    assert "left out" in said[0], said
    assert samples.get(("allfours_arena_bots_left_out", (("bot", "bad"),))) == 1, samples
    assert ("allfours_arena_bots_left_out", (("bot", "good"),)) not in samples
    assert not [k for k in samples if k[0] == "allfours_arena_forfeits_total" and ("bot", "bad") in k[1]], samples


def _stored(tmp: Path, n: int, proc: subprocess.Popen[str],
            enough: Callable[[list[dict[str, Any]]], bool] = lambda _: True) -> list[dict[str, Any]]:
    """The rows of games.jsonl once there are at least ``n`` and ``enough`` of them (the publication
    after each stored game writes it)."""
    path = tmp / "out" / "games.jsonl"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            games = [json.loads(x) for x in path.read_text().splitlines()]
        except (OSError, json.JSONDecodeError):  # not yet written, or caught mid-write
            games = []
        if len(games) >= n and enough(games):
            return games
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} games stored (or not those awaited) after 180 s")


#: A check's failure as a hostile bot may make it: its last output with a token it printed, a path in the
#: arena's output folder, a terminal escape, a newline and a screenful more.
TOKEN = "tok_" + "A9" * 20


def hostile_why(output: Path) -> str:
    return (f"its process exited with status 3 before joining: \x1b[31m{TOKEN} "
            f"{output.resolve()}/logs/check/bot3/seat0.log\nnext line {'x ' * 2000} (last output: my hand 7H JD)")


def test_the_bots_left_out_are_published_with_a_bounded_reason_in_ratings_json_the_web_and_the_terminal(
    tmp_path: Path,
) -> None:
    """A bot left out was said once on the console and shown by a gauge, but the board (ratings.json, the
    web's leaderboard, the terminal's tables) did not say which bots the league does not play, nor why.
    Now each lists them with the one line, made public: one line, capped, no path in the output folder,
    no token it printed, no escape."""
    from starlette.testclient import TestClient

    from arena.web.app import create_app

    path = tmp_path / "league.toml"
    path.write_text(config_text(["a", "b", "x"]))
    out_dir, shown = tmp_path / "out", io.StringIO()

    class Hostile(CheckedRunner):
        def check_bots(self, names: list[str]) -> dict[str, str]:
            return {n: hostile_why(out_dir) for n in names if n == "x"}

    board = Console(file=shown, width=400)
    league = League(str(path), out_dir, Console(file=io.StringIO(), width=400),
                    lambda t: publish_tournament(t, out_dir, 0, board, reveal=False),
                    lambda _: Hostile(set(), []), publish_spacing=0)
    league.open(load_config(str(path)))
    league.after_game.append(lambda r, t: league.request_stop() if len(t.store.stored_ids()) == 4 else None)
    try:
        league.serve()
    finally:
        league.close()
    told = json.loads((out_dir / "ratings.json").read_text())["tournament"]["left_out"]
    assert [row["bot"] for row in told] == ["x"], told
    why = told[0]["why"]
    assert why.startswith("failed its check: its process exited with status 3 before joining"), why
    assert public_why("exited with status 3 (last output: my hand 7H JD)", out_dir) == "exited with status 3"
    assert len(why) <= WHY_CHARS and why.endswith("…"), why
    assert TOKEN not in why and str(out_dir.resolve()) not in why and "<output>" in why, why
    assert "\x1b" not in why and "\n" not in why and "next line" in why, why
    assert why == league.left_out["x"]
    assert "left out" in shown.getvalue() and why[:60] in shown.getvalue(), shown.getvalue()
    client = TestClient(create_app(out_dir, bootstrap=0))
    assert client.get("/api/ratings").json()["tournament"]["left_out"] == told
    page = client.get("/").text
    assert 'id="left-out"' in page and html.escape(why[:60]) in page, page
    assert TOKEN not in page and str(out_dir.resolve()) not in page


def test_ratings_json_lists_no_bot_left_out_once_a_reload_finds_it_mended(tmp_path: Path) -> None:
    path = tmp_path / "league.toml"
    path.write_text(config_text(["a", "b", "x"]))
    broken, out_dir = {"x"}, tmp_path / "out"

    def after(result: GameResult, t: Tournament) -> None:
        if len(t.store.stored_ids()) == 2:
            broken.clear()
            league.request_reload()
        elif "x" in result.sides:
            league.request_stop()

    league = League(str(path), out_dir, Console(file=io.StringIO()),
                    lambda t: publish_tournament(t, out_dir, 0, None, reveal=False),
                    lambda _: CheckedRunner(broken, []), publish_spacing=0)
    def opened(league: League) -> None:
        assert league.tournament is not None
        assert json.loads(league.tournament.store.get_meta("left_out") or "[]")[0]["bot"] == "x"

    serve_until_stopped(league, path, after, opened)
    assert "left_out" not in json.loads((out_dir / "ratings.json").read_text())["tournament"]


class BreakingRunner(CheckedRunner):
    """Passes every check; then ``x``'s games go as ``fates`` says, one a game of x in turn: a
    :class:`Termination` its side forfeits with (``crash``: its process died), ``None`` a game it plays."""

    def __init__(self, fates: list[Termination | None]):
        super().__init__(set(), [])
        self.fates = fates
        self.played: list[Termination | None] = []

    def play(self, game: ScheduledGame) -> GameResult:
        if "x" not in game.sides or not self.fates:
            return super().play(game)
        fate = self.fates.pop(0)
        self.played.append(fate)
        if fate is None:  # played to the end
            return dataclasses.replace(super().play(game), terminations=(Termination.NORMAL, Termination.NORMAL))
        return forfeit_result(game, {"x": Unplayed(fate, f"crash: process exited with status 1 before the match "
                                                         f"ended (last output: my hand 7H JD {TOKEN})")})


def served_breaker(tmp_path: Path, fates: list[Termination | None], x: str = "") -> tuple[League, BreakingRunner, str]:
    """A league of a, b, x (8 games of x; ``x``: more of x's table) served until every game is stored or x
    is left out and the rest are stored: the league, its runner and what it said."""
    path = tmp_path / "league.toml"
    path.write_text(config_text(["a", "b"]) + '\n[[bots]]\nname = "x"\n' + (x or 'command = ["true"]\n'))
    runner, said = BreakingRunner(fates), io.StringIO()

    def after(result: GameResult, t: Tournament) -> None:
        rest = [g for g in t.store.pending(t.schedule) if "x" not in g.sides or "x" not in league.left_out]
        if not rest:
            league.request_stop()

    league = League(str(path), tmp_path / "out", Console(file=said, width=400), lambda t: None,
                    lambda _: runner, publish_spacing=0)
    serve_until_stopped(league, path, after)
    return league, runner, said.getvalue()


def test_a_bot_that_passed_its_check_and_breaks_is_left_out_after_games_in_a_row(tmp_path: Path) -> None:
    """A bot that passed its check and then broke (its command gone, its process dying at once) lost
    every remaining game of its one by one, each a forfeit, for as long as the league ran. Now after
    BROKEN_IN_A_ROW games in a row it failed for its own fault it is left out, with a line that says so."""
    fates = [Termination.CRASH, Termination.NO_SHOW, Termination.CRASH] + [Termination.CRASH] * 5
    league, runner, said = served_breaker(tmp_path, fates)
    assert BROKEN_IN_A_ROW == 3 and len(runner.played) == 3, runner.played  # the other 5 games not played
    why = league.left_out["x"]
    assert why.startswith("left out after 3 games in a row it failed to start or crashed: side "), why
    assert "crash: process exited with status 1" in why and "last output" not in why and "7H" not in why, why
    lines = [line for line in said.splitlines() if "'x'" in line]
    assert len(lines) == 1 and "left out after 3 games" in lines[0] and "reload" in lines[0], said


def test_a_remote_bot_that_misses_games_in_a_row_is_not_left_out(tmp_path: Path) -> None:
    """A remote bot's workers may connect at any time (its owner's machine restarted): it forfeits each game
    it misses (no_show), as before, and is not left out until a reload."""
    league, runner, _ = served_breaker(tmp_path, [Termination.NO_SHOW] * 8, x="remote = true\n")
    assert league.left_out == {} and len(runner.played) == 8, runner.played


def test_a_game_the_bot_plays_starts_its_count_again(tmp_path: Path) -> None:
    """Two failures, a game played, two failures, a loss by an illegal action: never three in a row for
    its own fault (breaking, not losing), so it is never left out and plays all of its games."""
    fates = [Termination.CRASH, Termination.CRASH, None, Termination.NO_SHOW, Termination.CRASH, Termination.ILLEGAL,
             Termination.CRASH, Termination.CRASH]
    league, runner, _ = served_breaker(tmp_path, fates)
    assert league.left_out == {} and len(runner.played) == 8, runner.played


#: A bot that passes its check and dies at every later start: each start takes the next number (a file
#: made with O_EXCL, so concurrent starts never share one); the check's two seats are starts 0 and 1.
DIES_AFTER_ITS_CHECK = """import os, runpy, sys
here, k = os.path.dirname(os.path.abspath(__file__)), 0
while True:
    try:
        os.close(os.open(os.path.join(here, f"start-{k}"), os.O_CREAT | os.O_EXCL))
        break
    except FileExistsError:
        k += 1
if k >= 2:
    print("dying at start", k, flush=True)
    sys.exit(3)
sys.argv = sys.argv[:1]
runpy.run_module("arena.testing.instant_bot", run_name="__main__")
"""


@pytest.mark.slow
def test_served_a_bot_that_passes_its_check_and_then_dies_is_left_out_after_three_games(tmp_path: Path) -> None:
    """End to end with real processes: `arena serve` checks the bot (it joins the practice match), then
    every process of it exits at once. It lost each of its games one by one, a forfeit each, for as long as
    the league ran; now it is left out after BROKEN_IN_A_ROW of them, one line says so, the gauge is 1 and
    ratings.json names it with the line; the other bots' games are all played."""
    (tmp_path / "bot").mkdir()
    script = tmp_path / "bot" / "bot.py"
    script.write_text(DIES_AFTER_ITS_CHECK)
    cfg = tmp_path / "league.toml"
    good = {"command": INSTANT, "sandbox": '"none"', "cwd": f'"{ROOT}"'}
    cfg.write_text(SERVED_HEAD.replace("games_per_pairing = 2", "games_per_pairing = 4").replace(
        "join_ms = 20000", "join_ms = 5000") + bots_toml("one", "two", **good)
        + bots_toml("bad", command=f'["{{python}}", "{script}"]', sandbox='"none"', cwd=f'"{ROOT}"'))
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "serve", str(cfg), "--bootstrap", "0",
                             "--metrics-port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT)
    ratings = tmp_path / "out" / "ratings.json"
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("metrics: http://127.0.0.1:"), line
        url = line.split()[1]
        _stored(tmp_path, 4, proc, lambda rows: sum({g["a"], g["b"]} == {"one", "two"} for g in rows) == 4
                and ratings.exists() and "left_out" in json.loads(ratings.read_text())["tournament"])
        samples = scrape(url)
        told = json.loads(ratings.read_text())["tournament"]["left_out"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0 and "Traceback" not in out, out
    games = [json.loads(x) for x in (tmp_path / "out" / "games.jsonl").read_text().splitlines()]
    bad = [g for g in games if "bad" in (g["a"], g["b"])]
    assert BROKEN_IN_A_ROW <= len(bad) <= BROKEN_IN_A_ROW + 1 < 8, [g["reasons"] for g in bad]  # 1 more: in flight
    assert all((g["a"], g["b"]).index("bad") != g["winner"] for g in bad), bad  # each a forfeit of bad's
    assert all({"crash", "no_show"} & set(g["terminations"]) for g in bad), [g["terminations"] for g in bad]
    said = [x for x in out.splitlines() if "'bad'" in x]
    assert len(said) == 1 and "left out after 3 games in a row it failed to start or crashed: " in said[0], out
    assert "exited with status 3" in said[0] and "dying at start" not in said[0], said  # not its last output
    assert [row["bot"] for row in told] == ["bad"] and told[0]["why"].startswith("left out after 3 games"), told
    assert samples.get(("allfours_arena_bots_left_out", (("bot", "bad"),))) == 1, samples
