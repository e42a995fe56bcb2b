"""``python -m referee.replay`` input checking: malformed input exits 2 with one line; extra keys warn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.replay import ReplayInputError, replay
from referee.rules import RuleSet, new_game
from tests.server_helpers import ROOT

SCENARIO = ROOT / "tests" / "scenarios" / "31-must-follow-suit-error.json"


def run_replay(path: Path | str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "referee.replay", str(path)], cwd=ROOT, capture_output=True,
                          input=stdin, timeout=60)


def scenario() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCENARIO.read_text())
    return data


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d.__setitem__("actions", {"seat": 0}), "actions must be a list"),
    (lambda d: d.__setitem__("rules", [4]), "rules must be an object"),
    (lambda d: d.__setitem__("rules", None), "rules must be an object"),
    (lambda d: d.__setitem__("scores", [14, 14]), "both sides"),
    (lambda d: d.__setitem__("scores", [True, 0]), "scores"),
    (lambda d: d.__setitem__("rules", {"players": 4.0}), "players"),
])
def test_malformed_input(edit: Any, expected: str) -> None:
    data = scenario()
    edit(data)
    with pytest.raises(ReplayInputError) as e:
        replay(data)
    assert expected in str(e.value)


def test_malformed_input_on_the_command_line(tmp_path: Path) -> None:
    data = scenario()
    data["rules"] = [4]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    out = run_replay(path)
    assert out.returncode == 2 and out.stdout == b""
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "rules must be an object" in err and "Traceback" not in err


def test_new_game_refuses_both_sides_at_the_target() -> None:
    with pytest.raises(ValueError, match="both sides"):
        new_game(RuleSet(), 0, (14, 20))
    assert new_game(RuleSet(), 0, (14, 3)).winner == 0  # one side there: a game already won


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_non_utf8_input_is_one_line_exit_2(tmp_path: Path, how: str) -> None:
    raw = b'{"note": "\xff\xfe"}'
    path = tmp_path / "in.json"
    path.write_bytes(raw)
    out = run_replay(path) if how == "file" else run_replay("-", stdin=raw)
    assert out.returncode == 2 and out.stdout == b""
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "UTF-8" in err and "Traceback" not in err


def test_unknown_top_level_keys_warn_but_replay(tmp_path: Path) -> None:
    data = scenario()
    data["source"] = "somewhere"
    data["Rules"] = {}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    out = run_replay(path)
    assert out.returncode == 0
    assert json.loads(out.stdout)["error"] is not None  # this scenario ends in a rejected play
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "warning" in err and "'Rules'" in err and "'source'" in err
    # expect and note are part of the format: no warning.
    assert run_replay(SCENARIO).stderr == b""


def test_card_notation_is_case_insensitive_and_takes_10() -> None:
    data = scenario()
    base = replay(data)
    for a in data["actions"]:
        if "card" in a:
            a["card"] = a["card"].lower().replace("t", "10")
    data["decks"] = [[c.lower() for c in d] for d in data["decks"]]
    assert replay(data) == base


def test_deal_in_ones_also_runs_the_pack_one_card_at_a_time() -> None:
    """docs/formats.md: with deal_in "ones", running the pack deals one card at a time to each seat in turn."""
    from referee.rules import CANONICAL_DECK

    deck = [str(c) for c in CANONICAL_DECK]  # 2C 3C … AC 2D … : kick AC (clubs), the run's kick 8D
    out = replay({"rules": {"players": 2, "deal_in": "ones"}, "dealer": 0, "decks": [deck],
                  "actions": [{"seat": 1, "do": "beg"}, {"seat": 0, "do": "run"}]})
    assert out["error"] is None
    d = out["deals"][0]
    assert d["kicks"] == ["AC", "8D"]
    assert d["hands"]["1"] == [deck[i] for i in (0, 2, 4, 6, 8, 10, 13, 15, 17)]
    assert d["hands"]["0"] == [deck[i] for i in (1, 3, 5, 7, 9, 11, 14, 16, 18)]


@pytest.mark.parametrize(("entry", "expected"), [
    ({"seat": 1, "do": "fold"}, "actions[2]: unknown action 'fold'"),
    ({"seat": 1, "do": "play", "card": "1H"}, "actions[2]: not a card: '1H'"),
    ({"seat": 1, "do": "stand", "card": "KS"}, "actions[2]: action 'stand' takes no card, got card 'KS'"),
    ({"seat": "1", "do": "beg"}, "actions[2]: seat must be a seat number, not '1'"),
    ("beg", "actions[2]: not an object"),
    ({"seat": 1, "do": "play", "card": "1H" * 30_000},
     "actions[2]: not a card: '1H1H1H1H1H1H1H1H1H1H1H1... (60000 chars)"),
])
def test_an_action_that_cannot_be_read_is_a_rejected_action(tmp_path: Path, entry: object, expected: str) -> None:
    """issue 9, item 14: an unreadable action is ``error`` at its index with reason ``bad_action``
    (exit 0), and the state before it is still reported; the bot's text is quoted short."""
    data = scenario()
    before = replay({**data, "actions": data["actions"][:2]})
    data["actions"] = [*data["actions"][:2], entry, *data["actions"][2:]]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    out = run_replay(path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["error"]["index"] == 2 and got["error"]["reason"] == "bad_action"
    assert got["error"]["message"].startswith(expected), got["error"]["message"]
    assert len(got["error"]["message"]) < 200
    assert {k: v for k, v in got.items() if k != "error"} == {k: v for k, v in before.items() if k != "error"}
    assert before["next"] is not None  # the state so far is a game in progress
