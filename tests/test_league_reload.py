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
from arena.tournament.league import League
from arena.tournament.result import GameResult
from arena.tournament.runner import SimulatedRunner, Tournament
from tests.configs import INSTANT, bots_toml
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
    league.after_game.append(after)
    league.open(load_config(str(path)))
    try:
        league.serve()
    finally:
        league.close()
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
    league.after_game.append(after)
    league.open(load_config(str(path)))
    assert league.left_out == {"x": "its process exited with status 3 before joining"}
    assert league.ladder is not None and "x" not in league.ladder.active
    try:
        league.serve()
    finally:
        league.close()
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
