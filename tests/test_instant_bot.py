"""arena.testing.instant_bot measures the arena's own cost (benchmarks/arena.py), so it may spend nothing a
game does not need: it keeps the messages it receives only when ``--log`` asks for them."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from arena.testing.instant_bot import EXIT_MATCH_END, Behaviour, _answer, main, play
from tests.server_helpers import RefereeProc, start_referee


@pytest.fixture(scope="module")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefereeProc]:
    yield from start_referee(tmp_path_factory.mktemp("records"))


def test_messages_are_kept_only_for_the_log(referee: RefereeProc, tmp_path: Path) -> None:
    created = referee.create(players=2)
    quiet = Behaviour()
    codes: list[int] = []
    seat1 = threading.Thread(target=lambda: codes.append(play(referee.address, created.tickets[1], quiet)))
    seat1.start()
    log = tmp_path / "seat0.jsonl"
    codes.append(main(["--referee", referee.address, "--ticket", created.tickets[0], "--log", str(log)]))
    seat1.join(60)
    assert codes == [EXIT_MATCH_END, EXIT_MATCH_END]
    assert quiet.log == []  # no JSON made of a message nobody reads
    lines = log.read_text().splitlines()
    assert '"welcome"' in lines[0] and '"matchEnd"' in lines[-1]


@pytest.mark.parametrize("variable", ["ALLFOURS_TLS_CA", "ALLFOURS_REFEREE_TLS_CA"])
def test_a_worker_given_a_tls_ca_that_is_missing_or_not_pem_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str) -> None:
    """As a worker it read ``$ALLFOURS_TLS_CA`` itself: a missing file was a FileNotFoundError traceback, a file
    without a certificate gRPC's handshake error at its first call, and a bad ``$ALLFOURS_REFEREE_TLS_CA`` a
    PemError traceback. Now one line naming the variable, the file and the problem, exit 2, no lobby dialled."""
    monkeypatch.setenv("ALLFOURS_LOBBY", "127.0.0.1:1")
    monkeypatch.delenv("ALLFOURS_TLS_CA", raising=False)
    monkeypatch.delenv("ALLFOURS_REFEREE_TLS_CA", raising=False)
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    missing = tmp_path / "missing.pem"
    for ca, problem in ((missing, f"cannot read {variable} {missing}: No such file or directory"),
                        (not_pem, f"{variable} {not_pem} is not a PEM certificate")):
        monkeypatch.setenv(variable, str(ca))
        assert main([]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"instant_bot: {problem}") and len(err.strip().splitlines()) == 1, err


def test_duplicate_mode_sends_its_extra_answers_before_the_answer_that_may_end_the_match() -> None:
    """The e2e test of duplicate answers failed once in CI: the instant bot wrote its second copy of the
    match's last answer after the referee had ended the stream, and grpc.aio then reported INTERNAL
    instead of the MatchEnd it had received (grpc/grpc#36066). The extras now go while this seat's own
    request is pending (the match waits for it): the previous answer again and a stale seq, then the
    answer, last."""
    req = pb.DecisionRequest(seq=7, legal_actions=[pb.Action(kind=pb.ACTION_KIND_PLAY, card="AS")])
    previous = pb.PlayRequest(decision=pb.Decision(seq=5, action=pb.Action(kind=pb.ACTION_KIND_PLAY, card="KD")))
    b = Behaviour(mode="duplicate")
    sent = _answer(b, req, random.Random(0), previous, due=True)
    assert [(m.decision.seq, m.decision.action.card) for m in sent] == [(5, "KD"), (5, "AS"), (7, "AS")]
    first = _answer(b, req, random.Random(0), None, due=True)  # nothing earlier to repeat
    assert [(m.decision.seq, m.decision.action.card) for m in first] == [(7, "AS")]
