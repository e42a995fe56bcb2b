"""`python -m arena.audit OUTPUT`: an outsider audits a finished tournament from its public files alone.

One real `arena run` (embedded referee, instant bots, 2 players) is audited as published, then each test
tampers with one thing a dishonest host could change — a record, a games.jsonl line, a result in the
store (republished by a rerun), the revealed seed, a dropped twin — and the audit must fail with one
line naming the game and what is wrong.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from arena.tournament.schedule import pair_seed
from referee.dealing import commitment
from tests.configs import INSTANT, bots_toml

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _arena_run(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.cli", "run", str(config), "--no-progress"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _audit(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena.audit", str(out), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 3-bot round robin (2 games a pairing: one duplicate pair each), its seed revealed."""
    base = tmp_path_factory.mktemp("audit")
    config = base / "cup.toml"
    config.write_text(
        '[tournament]\nname = "cup"\nplayers = 2\ngames_per_pairing = 2\noutput = "out"\n'
        '[tournament.rules]\ntarget = 3\n'
        + bots_toml("a", "b", "c", command=INSTANT, cwd=json.dumps(str(ROOT / "arena"))))
    done = _arena_run(config)
    assert done.returncode == 0, done.stderr
    return base


@pytest.fixture
def out(played: Path, tmp_path: Path) -> Path:
    """A copy of the played tournament (config and output) to tamper with."""
    shutil.copytree(played, tmp_path / "t")
    return tmp_path / "t" / "out"


def _rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / "games.jsonl").read_text().splitlines()]


def _write_rows(out: Path, rows: list[dict[str, object]]) -> None:
    (out / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _fails(out: Path, *extra: str) -> list[str]:
    done = _audit(out, *extra)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    return done.stderr.splitlines()


def test_an_untouched_tournament_passes_and_ties_every_deal_to_the_commitment(out: Path) -> None:
    done = _audit(out)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "OK 6 games, 6 records verified; every deal seed from the committed master seed\n"
    # what it checked, independently: each game's seed is its pair's, from the revealed master seed
    master = bytes.fromhex(json.loads((out / "ratings.json").read_text())["tournament"]["master_seed"])
    assert commitment(master) == json.loads((out / "commitment.json").read_text())["master_seed_sha256"]
    pairings = {"cup-p0-1": 0, "cup-p0-2": 1, "cup-p1-2": 2}
    for row in _rows(out):
        assert row["seed"] == pair_seed(master, pairings[str(row["game_id"])[:8]], 0).hex()


def test_a_changed_card_in_a_record_fails_referee_verify(out: Path) -> None:
    path = out / "records" / "cup-p0-1-g1.jsonl"
    lines = path.read_text().splitlines()
    n = next(k for k, x in enumerate(lines) if json.loads(x)["type"] == "deal")
    deal = json.loads(lines[n])
    deal["deck"][0], deal["deck"][1] = deal["deck"][1], deal["deck"][0]
    lines[n] = json.dumps(deal)
    path.write_text("\n".join(lines) + "\n")
    [line] = _fails(out)
    assert line.startswith("FAIL games.jsonl line 2 (cup-p0-1-g1): its record records/cup-p0-1-g1.jsonl fails "
                           f"referee.verify: line {n + 1}: ")


def test_a_game_dealt_from_another_seed_is_caught_even_when_its_record_is_consistent(out: Path) -> None:
    """The host replaces a game by one it dealt itself (another game's valid record, with games.jsonl
    agreeing): every record verifies on its own, but the seed is not the committed pair's."""
    rows = _rows(out)
    rec = {r["game_id"]: r for r in rows}
    shutil.copy(out / "records" / "cup-p0-2-g0.jsonl", out / "records" / "cup-p0-1-g0.jsonl")
    for key in ("seed", "match_id", "winner", "scores", "score"):
        rows[0][key] = rec["cup-p0-2-g0"][key]
    _write_rows(out, rows)
    lines = _fails(out)
    assert lines[0] == (f"FAIL games.jsonl line 1 (cup-p0-1-g0): deal seed {rec['cup-p0-2-g0']['seed']}, not the "
                        "one the committed master seed gives pair 0 of pairing 0")
    # the copied record also seats the other pairing's bots
    assert any("seat names ['a', 'c'], but games.jsonl says ['a', 'b']" in x for x in lines[1:]), lines


def test_a_result_changed_in_the_store_and_republished_is_caught(out: Path) -> None:
    """The host flips a stored winner and republishes (a rerun plays nothing, publishes the store)."""
    row = _rows(out)[2]
    with sqlite3.connect(out / "arena.sqlite") as db:
        db.execute("UPDATE games SET winner = ?, score0 = score1, score1 = score0 WHERE game_id = ?",
                   (1 - int(str(row["winner"])), row["game_id"]))
    done = _arena_run(out.parent / "cup.toml")
    assert done.returncode == 0, done.stderr
    assert _rows(out)[2]["winner"] == 1 - int(str(row["winner"]))
    [winner, scores] = _fails(out)
    assert winner == (f"FAIL games.jsonl line 3 ({row['game_id']}): its record records/{row['game_id']}.jsonl: "
                      f"winner {row['winner']}, but games.jsonl says {1 - int(str(row['winner']))}")
    assert scores.startswith(f"FAIL games.jsonl line 3 ({row['game_id']}): its record records/"
                             f"{row['game_id']}.jsonl: scores {row['scores']}, but games.jsonl says ")


def test_swapped_sides_in_games_jsonl_are_caught(out: Path) -> None:
    rows = _rows(out)
    rows[1]["a"], rows[1]["b"] = rows[1]["b"], rows[1]["a"]
    _write_rows(out, rows)
    lines = _fails(out)
    assert lines[0] == ("FAIL games.jsonl line 2 (cup-p0-1-g1): sides 'a' v 'b', but the schedule seats 'b' v 'a' "
                        "(entrants 0 and 1, game 1 of their pairing)")


def test_a_revealed_seed_that_is_not_the_committed_one_is_caught(out: Path) -> None:
    ratings = json.loads((out / "ratings.json").read_text())
    other = "11" * 32
    ratings["tournament"]["master_seed"] = other
    (out / "ratings.json").write_text(json.dumps(ratings))
    lines = _fails(out)
    committed = json.loads((out / "commitment.json").read_text())["master_seed_sha256"]
    assert lines[0] == (f"FAIL commitment.json: the revealed master seed hashes to {commitment(bytes.fromhex(other))}, "
                        f"not the committed {committed}")
    assert len(lines) == 7  # and no game's seed comes from it


def test_a_dropped_twin_is_caught_once_the_seed_is_revealed(out: Path) -> None:
    rows = [r for r in _rows(out) if r["game_id"] != "cup-p1-2-g1"]
    _write_rows(out, rows)
    assert _fails(out) == ["FAIL games.jsonl: cup-p1-2-g1 is not published, yet its twin cup-p1-2-g0 is "
                           "(a duplicate pair is two games)"]


def test_a_folder_that_is_no_tournament_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _audit(tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"audit: {tmp_path / 'commitment.json'}: cannot read it: No such file or directory\n"


def _set_tournament(out: Path, **facts: object) -> None:
    ratings = json.loads((out / "ratings.json").read_text())
    ratings["tournament"].update(facts)
    (out / "ratings.json").write_text(json.dumps(ratings))


def test_a_second_game_must_be_dealt_on_its_own_exactly_when_a_side_is_remote(out: Path) -> None:
    """ratings.json lists the remote entrants (none here); were b remote, every second game of its
    pairings would have to come from the pair's second seed, and these come from the pair's seed."""
    assert json.loads((out / "ratings.json").read_text())["tournament"]["remote"] == []
    _set_tournament(out, remote=["b"])
    pairings = {"cup-p0-1": 0, "cup-p1-2": 2}
    seconds = [(n, r) for n, r in enumerate(_rows(out), start=1) if r["game_id"] in ("cup-p0-1-g1", "cup-p1-2-g1")]
    assert _fails(out) == [
        f"FAIL games.jsonl line {n} ({r['game_id']}): deal seed {r['seed']}, not the one the committed master seed "
        f"gives pair 0 of pairing {pairings[str(r['game_id'])[:8]]} (its second game)" for n, r in seconds]


def test_a_league_whose_seed_is_not_revealed_is_audited_with_seed(out: Path) -> None:
    master = json.loads((out / "ratings.json").read_text())["tournament"]["master_seed"]
    _set_tournament(out, master_seed=None)
    done = _audit(out)
    assert (done.returncode, done.stdout) == (0, "OK 6 games, 6 records verified; master seed not revealed: deal "
                                                 "seeds not tied to the commitment (pass --seed once it is)\n")
    done = _audit(out, "--seed", master)
    assert (done.returncode, done.stdout) == (0, "OK 6 games, 6 records verified; every deal seed from the "
                                                 "committed master seed\n")
    assert _fails(out, "--seed", "22" * 32)[0].startswith("FAIL commitment.json: the revealed master seed hashes to ")


def test_a_skipped_pair_is_caught_once_the_seed_is_revealed(out: Path) -> None:
    """A host publishes a pairing's pair 1 without its pair 0 (here: p0-1's only pair renamed pair 1)."""
    rows = _rows(out)
    for r in rows:
        if str(r["game_id"]).startswith("cup-p0-1-"):
            r["game_id"] = str(r["game_id"]).replace("-g0", "-g2").replace("-g1", "-g3")
            r["pair"] = "cup-p0-1-d1"
    _write_rows(out, rows)
    lines = _fails(out)
    assert lines[-1] == ("FAIL games.jsonl: pairing cup-p0-1 publishes pair 1 but not pair(s) 0 (a pairing's "
                         "pairs are played in order)")
    assert "FAIL games.jsonl line 1 (cup-p0-1-g2): first dealer 0, but pair 1 deals first from seat 1" in lines


def test_a_game_without_a_record_passes_only_as_a_forfeit_before_play(out: Path) -> None:
    """A bot failing its check (`--skip-broken`) forfeits its games before they are played: no record,
    its seats `not_started`, the others `other_seat_forfeited`. A played game's record cannot be dropped."""
    rows = _rows(out)
    rows[4].update(record=None, terminations=["not_started", "other_seat_forfeited"])
    rows[5].update(record=None)
    _write_rows(out, rows)
    assert _fails(out) == [f"FAIL games.jsonl line 6 ({rows[5]['game_id']}): no record, yet not a game forfeited "
                           "before it was played (terminations ['normal', 'normal'])"]


def test_a_changed_rating_input_alone_is_caught(out: Path) -> None:
    """`score` is what `python -m arena.ratings` rates: flipped without the winner, the ratings change."""
    rows = _rows(out)
    rows[0]["score"] = 1.0 - float(str(rows[0]["score"]))
    _write_rows(out, rows)
    assert _fails(out) == [f"FAIL games.jsonl line 1 (cup-p0-1-g0): score {rows[0]['score']!r} (the ratings' input), "
                           f"but its winner {rows[0]['winner']!r} makes it {1.0 - float(str(rows[0]['score']))!r}"]


def test_a_game_given_another_clock_is_caught(out: Path) -> None:
    """A host who plays one game with a tighter clock (one bot then times out): its record verifies, the
    time control is its header's, and a tournament has one."""
    path = out / "records" / "cup-p0-2-g1.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    usual = json.dumps(header["time_control"], sort_keys=True)
    header["time_control"]["decision_ms"] = 5
    lines[0] = json.dumps(header)
    path.write_text("\n".join(lines) + "\n")
    assert _audit(path.parent.parent).returncode == 1
    assert _fails(out) == [f"FAIL games.jsonl: cup-p0-2-g1's record has the time control "
                           f"{json.dumps(header['time_control'], sort_keys=True)}, but 5 of the tournament's records "
                           f"have {usual}"]


def test_an_entrant_no_longer_scheduled_may_have_been_remote(out: Path) -> None:
    """A remote entrant removed from the config (or a competitor's retired remote entry) is in neither
    list: its pairings' second games may come from either seed; those of two scheduled local entrants
    only from the pair's."""
    assert sorted(json.loads((out / "ratings.json").read_text())["tournament"]["active"]) == ["a", "b", "c"]
    rows = _rows(out)
    master = bytes.fromhex(json.loads((out / "ratings.json").read_text())["tournament"]["master_seed"])
    own = {"cup-p0-1-g1": pair_seed(master, 0, 0, second=True).hex(),
           "cup-p1-2-g1": pair_seed(master, 2, 0, second=True).hex()}
    for r in rows:
        r["seed"] = own.get(str(r["game_id"]), r["seed"])
    _write_rows(out, rows)
    _set_tournament(out, active=["a", "c"], remote=[])  # b is no longer scheduled
    lines = _fails(out)  # the records still deal from the pair's seed: only those lines, not the seeds
    assert [x for x in lines if "deal seed" in x] == []
    _set_tournament(out, active=["a", "b", "c"])
    assert [x.split(": ")[1] for x in _fails(out) if "deal seed" in x] == [
        f"deal seed {own['cup-p0-1-g1']}, not the one the committed master seed gives pair 0 of pairing 0 (its second "
        "game)", f"deal seed {own['cup-p1-2-g1']}, not the one the committed master seed gives pair 0 of pairing 2 "
        "(its second game)"]


def test_a_blind_tournament_plays_in_its_keyed_order_and_passes_the_audit(tmp_path: Path) -> None:
    """``blind_seats``: the games are played in the order the master seed keys
    (:func:`arena.tournament.schedule.blind_order`, not the public schedule's), which the revealed seed
    derives again, and the published tournament passes the audit (pairs whole, each pairing's in order).
    One game at a time, so the stored order is the play order: at ``concurrency = 2`` two pairs' first
    games run together (a pair's twins never do: run_games) and either may be stored first."""
    from arena.tournament.schedule import blind_order, make_schedule

    config = tmp_path / "blind.toml"
    config.write_text(
        '[tournament]\nname = "cup"\nplayers = 2\ngames_per_pairing = 4\noutput = "out"\nblind_seats = true\n'
        'concurrency = 1\n[tournament.rules]\ntarget = 3\n'
        + bots_toml("a", "b", "c", "d", command=INSTANT, cwd=json.dumps(str(ROOT / "arena"))))
    done = _arena_run(config)
    assert done.returncode == 0, done.stderr
    audited = _audit(tmp_path / "out")
    assert audited.returncode == 0 and audited.stdout.startswith("OK 24 games"), audited.stderr
    seed = bytes.fromhex(json.loads((tmp_path / "out" / "ratings.json").read_text())["tournament"]["master_seed"])
    with sqlite3.connect(tmp_path / "out" / "arena.sqlite") as db:
        played = [r[0] for r in db.execute("SELECT pair_id FROM games ORDER BY stored_at")]
    schedule = make_schedule("cup", ["a", "b", "c", "d"], 4, 2, seed)
    want = list(dict.fromkeys(g.pair_id for g in blind_order(schedule, seed)))
    assert list(dict.fromkeys(played)) == want != list(dict.fromkeys(g.pair_id for g in schedule))
