"""``referee create-match``: a bot author seats their own bots on a running referee by hand (docs/sdk.md).

End to end with real processes over real sockets: a ``referee serve`` process, the command, and two
``sdk.run`` bots given its tickets play the match to its end; each bad input is one line and the
documented exit status (2: a refused token or request, 1: no referee there).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from allfours.v1 import referee_pb2 as pb
from tests.server_helpers import TOKEN, RefereeProc, start_referee

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def referee(tmp_path: Path) -> Iterator[RefereeProc]:
    yield from start_referee(tmp_path / "records")


def create(*args: str, token: str | None = TOKEN) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ALLFOURS_ADMIN_TOKEN"}
    if token is not None:
        env["ALLFOURS_ADMIN_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "referee.cli", "create-match", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_its_tickets_seat_two_bots_that_play_the_match_to_its_end(referee: RefereeProc) -> None:
    made = create("--referee", referee.address, "alice", "bob", "--target", "3", "--json")
    assert made.returncode == 0, made.stderr
    match = json.loads(made.stdout)
    assert match["seats"] == ["alice", "bob"] and len(match["tickets"]) == 2 and len(match["seed_commitment"]) == 64
    bots = [subprocess.Popen([sys.executable, "-m", "sdk.run", "sample_bots.random_bot:RandomBot", "--referee",
                              referee.address, f"--ticket={t}"], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True) for t in match["tickets"]]
    result, _ = referee.result(match["match_id"])
    outs = [b.communicate(timeout=60)[0] for b in bots]
    assert [b.returncode for b in bots] == [0, 0], outs
    assert result.status == pb.MATCH_STATUS_COMPLETED and len(result.games) == 1, result
    assert max(result.games[0].scores) >= 3 and not result.games[0].forfeited, result


def test_lines_name_each_seats_ticket(referee: RefereeProc) -> None:
    made = create("--referee", referee.address, "n", "e", "s", "w", "--seed", "ab" * 32)
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert lines[0].startswith("match ") and "seed sha256 " in lines[0] and len(lines) == 5
    assert [x.split(":")[0] for x in lines[1:]] == ["seat 0 n", "seat 1 e", "seat 2 s", "seat 3 w"]
    assert all(x.split(": ", 1)[1].startswith("--ticket=") for x in lines[1:])


def test_bad_input_is_one_line(referee: RefereeProc) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    cases = [
        (create("--referee", referee.address, "a", "b", token=None), 2, "admin token in $ALLFOURS_ADMIN_TOKEN"),
        (create("--referee", referee.address, "a", "b", "c"), 2, "give 2 or 4 seat names, not 3"),
        (create("--referee", referee.address, "a", "b", "--seed", "xyz"), 2, "--seed must be 64 hex digits"),
        (create("--referee", referee.address, "a", "b", token="wrong"), 2, "UNAUTHENTICATED"),
        (create("--referee", referee.address, "a", "b", "--target", "0"), 2, "INVALID_ARGUMENT"),
        (create("--referee", closed, "a", "b"), 1, f"{closed}: UNAVAILABLE"),
    ]
    for done, status, words in cases:
        lines = done.stderr.strip().splitlines()
        assert (done.returncode, len(lines)) == (status, 1) and words in lines[0], (done.returncode, done.stderr)
        assert done.stdout == "" and TOKEN not in done.stderr
