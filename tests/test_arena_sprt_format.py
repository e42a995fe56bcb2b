"""The ``format = "sprt"`` tournament: config checks, the early stop in the run loop, and `arena run` end to
end (simulated games: the format's logic, not the referee, is under test here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.config import ConfigError, load_config, parse_config
from arena.formats.sprt import Decision, SequentialTest
from arena.formats.sprt_run import SprtRun
from arena.tournament.result import Unplayed, forfeit_result
from arena.tournament.runner import SimulatedRunner, open_tournament, run_games
from referee.outcome import Termination

CONFIG = """
[tournament]
name = "v2"
players = 2
games_per_pairing = {limit}
master_seed = "{seed}"
format = "sprt"
concurrency = {concurrency}
output = "out"

[tournament.sprt]
candidate = "new"
baseline = "old"
elo0 = 0
elo1 = {elo1}

[[bots]]
name = "old"
command = ["python", "-m", "sample_bots.random_bot"]

[[bots]]
name = "new"
command = ["python", "-m", "sample_bots.random_bot"]
"""


def config_text(limit: int = 2000, elo1: float = 200, concurrency: int = 1) -> str:
    return CONFIG.format(limit=limit, seed="cd" * 32, elo1=elo1, concurrency=concurrency)


def test_sprt_settings_parse(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text())
    c = load_config(tmp_path / "t.toml")
    assert c.sprt is not None and (c.sprt.candidate, c.sprt.baseline, c.sprt.elo0, c.sprt.elo1) == (
        "new",
        "old",
        0,
        200,
    )
    assert (c.sprt.alpha, c.sprt.beta, c.sprt.model) == (0.05, 0.05, "logistic")
    assert c.identity()["sprt"]["elo1"] == 200  # a different test is a different tournament


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        (('candidate = "new"', 'candidate = "newer"'), "tournament.sprt.candidate", "must name one of the bots"),
        (("elo1 = 200", "elo1 = -5"), "tournament.sprt", "elo0 must be below elo1"),
        (("elo1 = 200", 'elo1 = 200\nmodel = "bayes"'), "tournament.sprt", "model must be one of"),
        (("elo1 = 200", "elo1 = 200\nalpah = 0.1"), "tournament.sprt.alpah", "did you mean 'alpha'"),
        (('format = "sprt"', 'format = "swiss"'), "tournament.format", "must be one of"),
        (('format = "sprt"', 'format = "round_robin"'), "tournament.sprt", 'only for format = "sprt"'),
        (
            ('[[bots]]\nname = "new"', '[[bots]]\nname = "third"\ncommand = ["x"]\n\n[[bots]]\nname = "new"'),
            "bots",
            "exactly two bots",
        ),
    ],
)
def test_bad_sprt_configs_name_the_key(tmp_path: Path, change: tuple[str, str], key: str, problem: str) -> None:
    text = config_text()
    assert change[0] in text
    (tmp_path / "t.toml").write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "t.toml")
    assert any(one.key == key and problem in one.problem for one in e.value.errors), str(e.value)


def play(tmp_path: Path, strengths: dict[str, float], concurrency: int = 1, limit: int = 2000) -> tuple:
    import tomllib

    config = parse_config(tomllib.loads(config_text(limit=limit, concurrency=concurrency)), base=tmp_path)
    t = open_tournament(config)
    test = SprtRun(config, t.schedule, [])
    stop = __import__("threading").Event()

    def on_result(result, written) -> None:  # type: ignore[no-untyped-def]
        if written and test.add(result):
            stop.set()

    run_games(t.schedule, SimulatedRunner(strengths), t.store, concurrency, on_result, stop)
    played = t.store.count()
    again = SprtRun(config, t.schedule, t.store.results())  # what a rerun (or the publication) computes
    t.store.close()
    return test, again, played


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_stronger_candidate_passes_early(tmp_path: Path, concurrency: int) -> None:
    test, again, played = play(tmp_path, {"new": 300.0}, concurrency)
    assert test.test.decided and test.test.result.decision is Decision.H1
    pairs = test.test.stopped_at
    assert pairs is not None and 2 * pairs <= played <= 2 * pairs + concurrency + 1 < 2000  # stopped early
    assert again.test.stopped_at == pairs and again.test.result == test.test.result  # same pair, same answer


def test_an_equal_candidate_fails(tmp_path: Path) -> None:
    test, _, played = play(tmp_path, {})
    assert test.test.result.decision is Decision.H0 and played < 2000


def test_the_game_limit_ends_an_undecided_test(tmp_path: Path) -> None:
    test, _, played = play(tmp_path, {"new": 100.0}, limit=6)
    assert played == 6 and not test.test.decided and test.test.pairs == 3


def test_a_pair_with_a_game_neither_side_played_is_skipped(tmp_path: Path) -> None:
    """Pair 1's second game is forfeited by both sides (both bots broken): no winner, no evidence. The
    test skips that pair and goes on with pair 2 (it used to count the game as a draw, a pair of 1.5 or
    0.5 points), and a rerun from the stored games computes the same."""
    import tomllib

    config = parse_config(tomllib.loads(config_text(limit=40)), base=tmp_path)
    t = open_tournament(config)
    simulated = SimulatedRunner({"new": 100.0})
    void = t.schedule[3]  # the second game of pair 1

    class Runner:
        def play(self, game):  # type: ignore[no-untyped-def]
            if game is void:
                return forfeit_result(game, {b: Unplayed(Termination.BROKEN, "3 deaths") for b in game.sides})
            return simulated.play(game)

    test = SprtRun(config, t.schedule, [])
    run_games(t.schedule, Runner(), t.store, 1, lambda r, ok: ok and test.add(r))
    results = {r.game_id: r for r in t.store.results()}
    assert results[void.game_id].winner is None
    counted = SequentialTest(config.sprt)
    for k in (0, *range(2, 20)):
        first, second = (results[g.game_id] for g in t.schedule[2 * k : 2 * k + 2])
        counted.feed(sum(1.0 - r.score_a if r.sides[0] == "old" else r.score_a for r in (first, second)))
    assert test.test.counts == counted.counts and counted.stopped_at is not None
    assert test.test.pairs >= 2 and test.test.position == test.test.pairs + 1  # past pair 1, which it skipped
    # the decision is reported at its pair of the schedule (the skipped pair 1 included), not the count
    assert test.test.to_dict()["stopped_at_pair"] == counted.stopped_at + 1 == test.test.position
    assert test.test.to_dict()["skipped_pairs"] == 1 and sum(test.test.to_dict()["pentanomial"]) == counted.pairs
    again = SprtRun(config, t.schedule, t.store.results())
    assert again.test.counts == counted.counts and again.test.result == test.test.result
    t.store.close()


def test_arena_run_stops_early_and_a_rerun_plays_nothing(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(config_text())
    cmd = [
        sys.executable,
        "-m",
        "arena.cli",
        "run",
        str(tmp_path / "t.toml"),
        "--simulate",
        "0",
        "--no-progress",
        "--bootstrap",
        "50",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "SPRT new vs old [0, 200] (logistic): decided H0 at pair" in first.stdout
    data = json.loads((tmp_path / "out" / "ratings.json").read_text())
    sprt = data["tournament"]["sprt"]
    assert sprt["decision"] == "H0" and sprt["candidate"] == "new" and sprt["stopped_at_pair"] >= 1
    assert data["tournament"]["played"] < 2000 and data["tournament"]["master_seed"]  # decided: seed revealed
    assert "SPRT" in (tmp_path / "out" / "leaderboard.html").read_text()
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and f"{data['tournament']['played']} already played" in second.stdout
    assert (
        json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["played"]
        == data["tournament"]["played"]
    )
