"""The arena's live files (arena/report/live.py): written a deal at a time, so following a game costs a
write per deal, not per card, and a spectator (a deal behind) sees exactly what it saw before."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.report import live
from arena.report.live import LiveLog
from referee.events import Event
from referee.rules.cards import Card, parse_cards

ROOT = Path(__file__).resolve().parent.parent
SEATS = ("a", "b", "c", "d")
RULES = {"players": 4, "target": 14}
SEED = bytes(range(32))


def kinds(path: Path) -> list[str]:
    """The kinds of the lines a reader finds in the live file now (``live`` for the header)."""
    return [o.get("kind", o.get("type")) for o in live._read(path)]


def card(text: str) -> Card:
    return parse_cards(text)[0]


def test_a_deal_reaches_the_file_when_the_next_one_starts(tmp_path: Path) -> None:
    with LiveLog(tmp_path, "g1", "p1", SEATS, RULES, SEED) as log:
        assert kinds(log.path) == ["live"]  # listed as a running game at once
        log.event(Event("game_started", 1, dealer=0))
        log.event(Event("deal_started", 1, 1, dealer=0))
        assert kinds(log.path) == ["live", "game_started", "deal_started"]  # the deal being played is known
        log.event(Event("begged", 1, 1, seat=1))
        log.event(Event("card_played", 1, 1, seat=1, card=card("9H")))
        assert kinds(log.path) == ["live", "game_started", "deal_started"]  # held until the deal is over
        log.event(Event("deal_started", 1, 2, dealer=1))
        assert kinds(log.path)[3:] == ["begged", "card_played", "deal_started"]
        log.event(Event("card_played", 1, 2, seat=2, card=card("TD")))
        log.event(Event("game_ended", 1, scores=(14, 3), winner=0))
        assert kinds(log.path)[-2:] == ["card_played", "game_ended"]  # the end is written at once
        assert live.running_games(tmp_path)[0]["deal"] == 2
    assert not log.path.exists()


def test_a_spectator_a_deal_behind_sees_every_finished_deal_whole(tmp_path: Path) -> None:
    """With the default delay a spectator sees deal 1 once deal 2 has started, all of it."""
    with LiveLog(tmp_path, "g1", "p1", SEATS, RULES, SEED) as log:
        log.event(Event("game_started", 1, dealer=0))
        log.event(Event("deal_started", 1, 1, dealer=0))
        log.event(Event("stood", 1, 1, seat=1))
        log.event(Event("card_played", 1, 1, seat=1, card=card("9H")))
        log.event(Event("deal_started", 1, 2, dealer=1))
        log.event(Event("card_played", 1, 2, seat=2, card=card("TD")))
        own = live._read(log.path)
        shown = live.record_lines(own)[: live.visible_cut(own, [], live.DEFAULT_DELAY)]
        assert [o["type"] for o in shown] == ["header", "game", "deal", "action", "action"]
        assert [o["action"] for o in shown if o["type"] == "action"] == ["stand", "9H"]



#: A fixed master seed, so every run deals the same games: with a fresh one a pair's first deal (dealt alike
#: in both of its games) can score the target's 7 points, and then no game reaches a second deal and no look
#: can see two (the likely cause of one red CI, 2026-12-06, whose three last looks each held deal 1 alone).
TOURNAMENT = """
[tournament]
name = "live"
players = 2
games_per_pairing = 2
concurrency = 2
output = "out"
master_seed = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"

[tournament.rules]
target = 7

[tournament.time_control]
decision_ms = 2000
join_ms = 10000
"""
SLOW_BOT = """
[[bots]]
name = "slow{k}"
command = ["{{python}}", "-m", "arena.testing.instant_bot", "--mode", "slow", "--delay-ms", "25"]
cwd = "{root}"
"""


def run_and_watch(
    tmp_path: Path, *flags: str, blind: bool = False, heads: list[dict[str, object]] | None = None
) -> tuple[list[list[str]], subprocess.CompletedProcess[str]]:
    """Run a real `arena run` (two games of bots answering in 25 ms; ``blind``: ``blind_seats = true``)
    while looking at the live files every 20 ms; returns the kinds of lines (:func:`kinds`) of every look at
    one, and the finished run. ``heads`` gets the header line of each look."""
    cfg = tmp_path / "live.toml"
    tournament = TOURNAMENT.replace("[tournament.rules]", f"blind_seats = {str(blind).lower()}\n\n[tournament.rules]")
    cfg.write_text(tournament + "".join(SLOW_BOT.format(k=k, root=ROOT) for k in range(2)))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "run", str(cfg), "--no-progress", "--bootstrap", "50",
                             *flags], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[list[str]] = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        looks = [live._read(p) for p in live.live_files(out).values()]
        seen += [[o.get("kind", o.get("type")) for o in look] for look in looks]
        if heads is not None:
            heads += [look[0] for look in looks if look]
        time.sleep(0.02)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stdout + stderr
    assert [json.loads(x)["terminations"] for x in (out / "games.jsonl").read_text().splitlines()] == [
        ["normal", "normal"]] * 2
    return seen, subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("blind", [False, True])
def test_arena_run_live_writes_running_games_for_spectators(tmp_path: Path, blind: bool) -> None:
    """A blind tournament's live files say ``blind`` (the pages then name no entrant of a running game)
    and so do its stored facts (``blind_seats``: what ``arena web`` reads)."""
    heads: list[dict[str, object]] = []
    seen, _ = run_and_watch(tmp_path, "--live", blind=blind, heads=heads)
    assert heads and {h["blind"] for h in heads} == {blind}
    assert json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["blind_seats"] is blind
    assert any(look.count("deal_started") >= 2 for look in seen), seen[-3:]  # a game followed deal by deal
    assert all(look[0] == "live" for look in seen if look)
    assert list((tmp_path / "out" / live.LIVE_DIR).iterdir()) == []  # each removed when its game ended


@pytest.mark.slow
def test_without_live_the_arena_waits_for_results_alone(tmp_path: Path) -> None:
    seen, _ = run_and_watch(tmp_path)
    assert seen == [] and not (tmp_path / "out" / live.LIVE_DIR).exists()


def test_serve_writes_live_files_unless_told_not_to() -> None:
    from arena.cli.parser import parser as _parser

    assert _parser().parse_args(["serve", "league.toml"]).live is True
    assert _parser().parse_args(["serve", "league.toml", "--no-live"]).live is False
    assert _parser().parse_args(["run", "cup.toml"]).live is False
    assert _parser().parse_args(["run", "cup.toml", "--live"]).live is True


def test_the_kinds_the_arena_skips_are_the_ones_the_live_file_drops(tmp_path: Path) -> None:
    """The arena converts only events of :data:`live.LIVE_KINDS_PB`; every other kind would be dropped."""
    from referee.events import EVENT_KINDS

    assert set(live.LIVE_KINDS) <= set(EVENT_KINDS) and len(live.LIVE_KINDS_PB) == len(live.LIVE_KINDS)
    with LiveLog(tmp_path, "g1", "p1", SEATS, RULES, SEED) as log:
        for kind in sorted(set(EVENT_KINDS) - set(live.LIVE_KINDS)):
            log.event(Event(kind, 1, 1, seat=0, side=0, scores=(0, 0), dealer=0))
        log.event(Event("game_ended", 1, scores=(14, 3), winner=0))
        assert kinds(log.path) == ["live", "game_ended"]


def test_a_game_created_blind_is_listed_blind_whatever_the_caller_says(tmp_path: Path) -> None:
    """The arena marks the live file of a blind game (``blind``: its match was created blind), so its
    running-games entry names no entrant even where the tournament's facts are not read (or not stored
    yet), nor its pairing (its id and pair id hidden); a competitor's own entrants keep their names, with
    the seats they hold. A blind game is found by its shown id only."""
    blind4 = ["seat 0", "seat 1", "seat 2", "seat 3"]
    s1, s2 = live.shown_id({"blind": True}, "g1", False), live.shown_id({}, "g2", True)
    assert s1.startswith(live.BLIND_ID) and len({s1, s2, "g1", "g2"}) == 4
    with LiveLog(tmp_path, "g1", "p1", SEATS, RULES, SEED, blind=True), \
            LiveLog(tmp_path, "g2", "p2", SEATS, RULES, SEED):
        listed = {g["game_id"]: (g["pair_id"], g["seat_names"]) for g in live.running_games(tmp_path)}
        assert listed == {s1: (None, blind4), "g2": ("p2", list(SEATS))}
        told = {g["game_id"]: (g["pair_id"], g["seat_names"]) for g in live.running_games(tmp_path, blind=True)}
        assert told == {s1: (None, blind4), s2: (None, blind4)}
        mine = live.running_games(tmp_path, blind=True, own={"c"})
        assert [(g["game_id"], g["seat_names"], g["seats"]) for g in mine] == sorted([
            (s1, ["seat 0", "seat 1", "c", "seat 3"], [2]), (s2, ["seat 0", "seat 1", "c", "seat 3"], [2])])
        assert live.running_games(tmp_path, own={"nobody"}) == []
        found = {k: live.find_running(tmp_path, k, False) for k in (s1, s2, "g1", "g2")}
        assert {k: f[0] if f else None for k, f in found.items()} == {s1: "g1", s2: None, "g1": None, "g2": "g2"}
        assert live.find_running(tmp_path, "g2", True) is None and live.find_running(tmp_path, s2, True) is not None
