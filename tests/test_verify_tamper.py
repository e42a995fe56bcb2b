"""``referee.verify`` against tampered records: real records from the in-process referee, each edited
one way; every edit must FAIL with ``line N: ...`` naming the problem, and the untouched record passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from allfours.v1 import referee_pb2 as pb
from referee.verify import VerifyError, verify_lines
from tests.server_helpers import ROOT, decision, garbage_after, last_legal, play_in_process

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def completed() -> list[str]:
    """A 2-player, 2-game match played to the end (every seat answers with its last legal action)."""
    result, lines = play_in_process([last_legal, last_legal], games=2)
    assert result.status == pb.MATCH_STATUS_COMPLETED
    return lines


@pytest.fixture(scope="module")
def no_show() -> list[str]:
    """Seat 1 never joins: side 1 forfeits as a no-show, side 0 wins."""
    result, lines = play_in_process([last_legal, None], join_ms=300)
    assert result.status == pb.MATCH_STATUS_FORFEITED and result.forfeited_side == 1 and result.winner == 0
    return lines


@pytest.fixture(scope="module")
def protocol_forfeit() -> list[str]:
    """Seat 1 answers 4 times, then sends malformed actions: it forfeits mid-game (protocol_error)."""
    result, lines = play_in_process([last_legal, garbage_after(4)], max_protocol_errors=2)
    assert result.status == pb.MATCH_STATUS_FORFEITED and result.forfeited_side == 1
    assert [s.termination for s in result.seats] == [pb.TERMINATION_OTHER_SEAT_FORFEITED,
                                                     pb.TERMINATION_PROTOCOL_ERROR]
    assert result.games and result.games[-1].forfeited
    return lines


def off_hand_first(req: pb.DecisionRequest) -> list[pb.PlayRequest]:
    """In the play, first a card the seat does not hold (rejected: card_not_in_hand), then its last legal action."""
    out = []
    if req.observation.phase == pb.PHASE_PLAY:
        held = set(req.observation.hand)
        other = next(c for c in ("AS", "KS", "QS", "JS", "TS", "9S", "8S", "7S") if c not in held)
        out.append(decision(req.seq, pb.Action(kind=pb.ACTION_KIND_PLAY, card=other)))
    return [*out, *last_legal(req)]


@pytest.fixture(scope="module")
def rejections() -> list[str]:
    """Seat 1 tries a card it does not hold before each play (rejected, then its legal play)."""
    result, lines = play_in_process([last_legal, off_hand_first], max_illegal=1000)
    assert result.status == pb.MATCH_STATUS_COMPLETED
    assert sum(1 for o in _objs(lines) if o["type"] == "rejected") >= 3
    return lines


def _objs(lines: list[str]) -> list[Obj]:
    return [json.loads(x) for x in lines]


def _first(objs: list[Obj], type_: str, **where: Any) -> Obj:
    return next(o for o in objs if o["type"] == type_ and all(o.get(k) == v for k, v in where.items()))


def _result(objs: list[Obj]) -> Obj:
    return _first(objs, "result")


def _answers(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["type"] == "action" and not o["out_of_turn"]]


# ------------------------------------------------------------------ the edits (each changes objs in place)


def flip_winner(objs: list[Obj]) -> None:
    r = _result(objs)
    r["winner"] = 1 if r["winner"] == 0 else 0


def status_forfeited(objs: list[Obj]) -> None:
    r = _result(objs)
    r["status"] = "forfeited"
    r["forfeited_side"] = 1 - (r["winner"] if r["winner"] is not None else 1)


def status_aborted(objs: list[Obj]) -> None:
    r = _result(objs)
    r["status"], r["winner"] = "aborted", None


def status_completed(objs: list[Obj]) -> None:
    _result(objs)["status"] = "completed"


def delete_result(objs: list[Obj]) -> None:
    objs.remove(_result(objs))


def delete_seed(objs: list[Obj]) -> None:
    objs.remove(_first(objs, "seed"))


def header_games(n: int) -> Callable[[list[Obj]], None]:
    def edit(objs: list[Obj]) -> None:
        _first(objs, "header")["games"] = n
    return edit


def delete_game_2(objs: list[Obj]) -> None:
    objs[:] = [o for o in objs if not (o["type"] in ("game", "deal", "action", "rejected", "game_end")
                                       and o.get("game") == 2)]
    won = [0, 0]
    for o in objs:
        if o["type"] == "game_end" and o["winner"] is not None:
            won[o["winner"]] += 1
    r = _result(objs)
    r["games_won"] = won
    r["winner"] = None if won[0] == won[1] else (0 if won[0] > won[1] else 1)


def record_version(objs: list[Obj]) -> None:
    _first(objs, "header")["record_version"] = 2


def unknown_type(objs: list[Obj]) -> None:
    objs.insert(1, {"type": "comment", "text": "looks harmless"})


def claim_timeout(objs: list[Obj]) -> None:
    # The seats answered with their LAST legal action; "stand" is last in (beg, stand), so it was not
    # the default (first) action a timeout plays.
    _first(objs, "action", action="stand", by="bot")["by"] = "timeout"


def swap_seqs(objs: list[Obj]) -> None:
    a, b = _answers(objs)[3:5]
    a["seq"], b["seq"] = b["seq"], a["seq"]


def repeat_seq(objs: list[Obj]) -> None:
    a, b = _answers(objs)[3:5]
    b["seq"] = a["seq"]


def bad_by(objs: list[Obj]) -> None:
    _first(objs, "action")["by"] = "human"


def change_scores(objs: list[Obj]) -> None:
    _first(objs, "game_end")["scores"][0] += 1


def swap_deck(objs: list[Obj]) -> None:
    d = _first(objs, "deal")["deck"]
    d[0], d[1] = d[1], d[0]


def more_strikes(objs: list[Obj]) -> None:
    _result(objs)["seats"][0]["strikes"] += 1


def more_protocol_errors(objs: list[Obj]) -> None:
    _result(objs)["seats"][1]["protocol_errors"] += 1


def seat_timed_out(objs: list[Obj]) -> None:
    _result(objs)["seats"][0]["termination"] = "timeout"


def flip_forfeited_side(objs: list[Obj]) -> None:
    r = _result(objs)
    r["forfeited_side"] = 1 - r["forfeited_side"]


def no_show_became_normal(objs: list[Obj]) -> None:
    _result(objs)["seats"][1]["termination"] = "normal"


def connected_not_a_boolean(objs: list[Obj]) -> None:
    _result(objs)["seats"][1]["connected_at_end"] = "yes"


def flip_last_game_winner(objs: list[Obj]) -> None:
    end = [o for o in objs if o["type"] == "game_end"][-1]
    end["winner"] = 1 - end["winner"]


def unforfeit_last_game(objs: list[Obj]) -> None:
    [o for o in objs if o["type"] == "game_end"][-1]["forfeited"] = False


def action_wrong_game(objs: list[Obj]) -> None:
    _answers(objs)[0]["game"] = 2


def rejected_card_changed(objs: list[Obj]) -> None:
    """The card of a rejected line becomes another card the seat does not hold: same reason."""
    line = _first(objs, "rejected", reason="card_not_in_hand")
    hands = {o["action"] for o in objs if o["type"] == "action" and o["seat"] == line["seat"]}
    line["action"] = next(c for c in ("2S", "3S", "4S", "5S", "6S", "AS", "KS", "QS")
                          if c != line["action"] and c not in hands and c not in line["message"])


CASES: list[tuple[str, str, Callable[[list[Obj]], None], str]] = [
    # (record, case id, edit, a piece of the expected message)
    ("completed", "winner-flipped", flip_winner, "winner"),
    ("completed", "status-forfeited", status_forfeited, "forfeit"),
    ("completed", "status-aborted", status_aborted, "aborted"),
    ("completed", "result-deleted", delete_result, "result"),
    ("completed", "seed-deleted", delete_seed, "seed"),
    ("completed", "header-more-games", header_games(3), "header says 3 game"),
    ("completed", "header-fewer-games", header_games(1), "header says 1 game"),
    ("completed", "game-deleted-and-result-edited", delete_game_2, "header says 2 game"),
    ("completed", "record-version", record_version, "record_version"),
    ("completed", "unknown-line-type", unknown_type, "unknown line type 'comment'"),
    ("completed", "timeout-not-first-legal", claim_timeout, "timeout"),
    ("completed", "seqs-swapped", swap_seqs, "seq"),
    ("completed", "seq-repeated", repeat_seq, "seq"),
    ("completed", "unknown-by", bad_by, "by"),
    ("completed", "scores-changed", change_scores, "recorded scores"),
    ("completed", "deck-swapped", swap_deck, "differs from deck_for(seed) at position 0"),
    ("completed", "strikes-edited", more_strikes, "strikes"),
    ("completed", "termination-edited", seat_timed_out, "termination"),
    ("completed", "connected-at-end-not-a-boolean", connected_not_a_boolean, "connected_at_end"),
    ("completed", "action-in-wrong-game", action_wrong_game, "game"),
    ("no_show", "winner-flipped", flip_winner, "winner"),
    ("no_show", "forfeited-side-flipped", flip_forfeited_side, "forfeit"),
    ("no_show", "status-completed", status_completed, "completed"),
    ("no_show", "no-show-became-normal", no_show_became_normal, "termination"),
    ("protocol_forfeit", "winner-flipped", flip_winner, "winner"),
    ("protocol_forfeit", "forfeited-game-winner-flipped", flip_last_game_winner, "winner"),
    ("protocol_forfeit", "forfeited-game-unforfeited", unforfeit_last_game, "game 1"),
    ("protocol_forfeit", "status-aborted", status_aborted, "aborted"),
    ("protocol_forfeit", "protocol-errors-edited", more_protocol_errors, "protocol_errors"),
    ("rejections", "rejected-card-changed", rejected_card_changed, "is not the engine's"),
]


@pytest.mark.parametrize(("record", "edit", "expected"), [(r, e, m) for r, _, e, m in CASES],
                         ids=[f"{r}-{i}" for r, i, _, _ in CASES])
def test_tampered_record_fails(request: pytest.FixtureRequest, record: str,
                               edit: Callable[[list[Obj]], None], expected: str) -> None:
    lines: list[str] = request.getfixturevalue(record)
    objs = _objs(lines)
    edit(objs)
    with pytest.raises(VerifyError) as e:
        verify_lines(json.dumps(o) for o in objs)
    msg = str(e.value)
    assert msg.startswith("line "), msg
    assert expected in msg, msg


@pytest.mark.parametrize("record", ["completed", "no_show", "protocol_forfeit", "rejections"])
def test_untampered_record_passes(request: pytest.FixtureRequest, record: str) -> None:
    lines: list[str] = request.getfixturevalue(record)
    assert verify_lines(lines).startswith("OK match ")


def test_cli_says_fail_line_n_and_exits_1(completed: list[str], tmp_path: Path) -> None:
    objs = _objs(completed)
    flip_winner(objs)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    out = subprocess.run([sys.executable, "-m", "referee.verify", str(path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("FAIL line ") and out.stderr.count("\n") == 1, out.stderr
    assert "Traceback" not in out.stderr


def test_seq_0_answers_are_recorded_with_the_request_seq_and_verify() -> None:
    """A seat that answers every request with seq 0: each answer is recorded with the pending request's seq."""

    def seq0(req: pb.DecisionRequest) -> list[pb.PlayRequest]:
        return [decision(0, req.legal_actions[-1])]

    result, lines = play_in_process([seq0, last_legal])
    assert result.status == pb.MATCH_STATUS_COMPLETED
    answers = _answers(_objs(lines))
    assert answers and all(a["seq"] > 0 for a in answers)
    seqs = [a["seq"] for a in answers]
    assert seqs == sorted(set(seqs))
    assert verify_lines(lines).startswith("OK match ")


def test_malformed_field_values_fail_cleanly(completed: list[str]) -> None:
    """A field of the wrong type anywhere gives a VerifyError naming the line, never another exception."""
    objs = _objs(completed)
    firsts: dict[str, int] = {}
    for i, o in enumerate(objs):
        firsts.setdefault(o["type"], i)
    tried = 0
    for t, i in firsts.items():
        for key in objs[i]:
            if key == "type":
                continue
            for bad in ("x", None, [], {}, -1, 1.5, True):
                if objs[i][key] == bad and type(objs[i][key]) is type(bad):
                    continue
                edited = _objs(completed)
                edited[i][key] = bad
                try:
                    verify_lines(json.dumps(o) for o in edited)
                except VerifyError as e:
                    assert str(e).startswith("line "), (t, key, bad, str(e))
                except Exception as e:  # pragma: no cover - the failure we look for
                    raise AssertionError(f"{t}.{key} = {bad!r}: {type(e).__name__}: {e}") from e
                tried += 1
    assert tried > 100


def test_non_utf8_record_fails_with_its_line(tmp_path: Path, completed: list[str]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(("\n".join(completed[:2]) + "\n").encode() + b'{"type": "game", "x": "\xff\xfe"}\n')
    out = subprocess.run([sys.executable, "-m", "referee.verify", str(path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("FAIL line 3: ") and "UTF-8" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_record_writer_defers_formatting_but_keeps_order_and_loses_nothing(tmp_path: Path) -> None:
    """With ``defer``, lines are formatted later, in the order written; reading ``lines`` or closing
    writes what is still queued; the file holds exactly the lines."""
    from referee.record import RecordWriter

    scheduled: list[Any] = []
    w = RecordWriter(tmp_path / "r.jsonl", defer=scheduled.append)
    w.write("a", n=1)
    w.write("b", n=2)
    assert len(scheduled) == 1  # one flush per batch, not per line
    assert w.lines == ['{"type":"a","n":1}', '{"type":"b","n":2}']  # reading flushes
    scheduled.pop()()  # the deferred flush finds nothing left: no duplicates
    w.write("c", n=3)
    scheduled.pop()()
    w.write("d", n=4)
    w.close()
    expected = ['{"type":"a","n":1}', '{"type":"b","n":2}', '{"type":"c","n":3}', '{"type":"d","n":4}']
    assert w.lines == expected
    assert (tmp_path / "r.jsonl").read_text().splitlines() == expected


def test_record_writer_with_flush_after_flushes_a_deal_at_a_time(tmp_path: Path) -> None:
    """With ``flush_after`` (the referee: once a deal), a decision's line asks for no flush; a line
    of a listed type, or MAX_QUEUED_LINES lines, does; the file holds every line, in order."""
    from referee.record import MAX_QUEUED_LINES, RecordWriter

    scheduled: list[Any] = []
    w = RecordWriter(tmp_path / "r.jsonl", defer=scheduled.append, flush_after=frozenset({"deal"}))
    w.write("action", n=1)
    w.write("action", n=2)
    assert scheduled == [] and (tmp_path / "r.jsonl").read_text() == ""
    w.write("deal", n=3)
    w.write("action", n=4)
    assert len(scheduled) == 1  # one flush for the batch
    scheduled.pop()()
    assert (tmp_path / "r.jsonl").read_text().splitlines() == [
        '{"type":"action","n":1}', '{"type":"action","n":2}', '{"type":"deal","n":3}', '{"type":"action","n":4}']
    for n in range(MAX_QUEUED_LINES):
        w.write("action", n=n)
    assert len(scheduled) == 1  # a long deal flushes anyway
    w.close()
    assert len(w.lines) == 4 + MAX_QUEUED_LINES
    assert (tmp_path / "r.jsonl").read_text().splitlines() == w.lines


def test_record_writer_survives_a_failing_file(tmp_path: Path) -> None:
    """Writing the file fails (disk full): no method raises, the lines in memory stay complete, the
    error is reported once and kept in ``file_error``."""
    from referee.record import RecordWriter

    class Failing:
        closed = False

        def write(self, text: str) -> int:
            raise OSError(5, "Input/output error")

        def flush(self) -> None:
            pass

        def close(self) -> None:
            self.closed = True

    errors: list[OSError] = []
    w = RecordWriter(tmp_path / "r.jsonl", on_file_error=errors.append)
    w.write("a", n=1)
    f = Failing()
    w._file = f  # type: ignore[assignment]
    w.write("b", n=2)
    w.write("c", n=3)
    w.close()
    assert w.lines == ['{"type":"a","n":1}', '{"type":"b","n":2}', '{"type":"c","n":3}']
    assert len(errors) == 1 and errors[0].errno == 5 and w.file_error is errors[0] and f.closed
    assert (tmp_path / "r.jsonl").read_text().splitlines() == ['{"type":"a","n":1}']
