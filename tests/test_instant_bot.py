"""arena.testing.instant_bot measures the arena's own cost (benchmarks/arena.py), so it may spend nothing a
game does not need: it keeps the messages it receives only when ``--log`` asks for them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.testing.instant_bot import EXIT_MATCH_END, Behaviour, main, play
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
